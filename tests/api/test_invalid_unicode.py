"""Text that is not valid Unicode is refused the same way at every door: a 422-class error
naming the field (``the question is not valid Unicode: character 1 is a lone surrogate
(U+D800)``), never a 500 and never a library's own message.

A lone UTF-16 surrogate reaches the server as a JSON escape (``"\\ud800 rollback key"``)
and the CLI as an undecodable argument byte (Python hands it over as ``\\udcff``). Over a
real server on loopback: ``/v1/ask``, its event stream, ``/v1/search`` and the UI's ask
form; the MCP tools; the CLI. With embeddings on, the tokenizer used to fail on it with
``MiniLM tokenizer failed: TextEncodeInput must be Union[...]``, sent to the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import Live
from api.test_mcp import payload, talk
from api.test_ui import signed_in
from clearance.api.mcp_server import create_server, fixed_user
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.errors import EmbeddingError
from clearance.llm.embedding import MiniLMEmbedder
from clitools import cli

SURROGATE = "\ud800 rollback key"
INTERNALS = ("Union", "TextEncodeInput", "tokenizer", "Traceback", "internal")


def raw_json(field: str, value: str = SURROGATE) -> bytes:
    """A JSON body carrying ``value`` as an escape, as a client sends it."""
    return json.dumps({field: value}, ensure_ascii=True).encode("ascii")


def assert_refused(response: httpx.Response, field: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == "bad_question"
    assert body["message"] == (
        f"the {field} is not valid Unicode: character 1 is a lone surrogate (U+D800)"
    )
    assert not any(word in body["message"] for word in INTERNALS)
    return body


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as c:
        yield c


def test_ask_and_search_refuse_a_lone_surrogate_naming_the_field(
    live: Live, client: httpx.Client
) -> None:
    headers = {**live.auth("ann"), "Content-Type": "application/json"}

    assert_refused(
        client.post("/v1/ask", content=raw_json("question"), headers=headers), "question"
    )
    assert_refused(client.post("/v1/search", content=raw_json("query"), headers=headers), "query")


def test_the_answer_stream_refuses_it_the_same_way(live: Live, client: httpx.Client) -> None:
    headers = {
        **live.auth("ann"),
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
    }

    response = client.post("/v1/ask", content=raw_json("question"), headers=headers)

    assert response.status_code == 422, response.text
    assert "event: error" in response.text
    data = json.loads(response.text.split("data: ", 1)[1].splitlines()[0])
    assert data["error"] == "bad_question" and "question is not valid Unicode" in data["message"]


def test_a_lone_surrogate_in_the_assistant_is_a_plain_refusal(
    live: Live, client: httpx.Client
) -> None:
    body = json.dumps({"query": "hotels", "assistant": "\udc00"}, ensure_ascii=True)
    headers = {**live.auth("ann"), "Content-Type": "application/json"}

    response = client.post("/v1/search", content=body, headers=headers)

    assert response.status_code == 404, response.text
    assert response.json()["error"] == "not_found"


def test_the_ui_form_cannot_carry_one_and_shows_no_internals(live: Live) -> None:
    browser = signed_in(live, "ann")
    try:
        home = browser.get("/")
        csrf = home.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = f"question=%ED%A0%80+rollback+key&assistant=&csrf={csrf}".encode()
        # A browser percent-encodes UTF-8; a surrogate's own bytes are the closest a form can
        # carry, and they decode to U+FFFD: the question is then plain text and answered.
        answer = browser.client.post(
            "/ask", content=form, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert answer.status_code in (200, 422)
        assert not any(word in answer.text for word in ("TextEncodeInput", "Traceback", "Union"))
    finally:
        browser.close()


def test_mcp_tools_refuse_it_naming_the_argument(project: Path) -> None:
    engine = Clearance.open(load_settings(project))
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        seen["ask"] = await client.call_tool("ask", {"question": SURROGATE})
        seen["search"] = await client.call_tool("search", {"query": SURROGATE})

    try:
        talk(create_server(engine, fixed_user("ann")), body)
    finally:
        engine.close()

    for tool, field in (("ask", "question"), ("search", "query")):
        assert seen[tool].is_error
        error = payload(seen[tool])
        assert error["error"] == "bad_question"
        assert error["message"].startswith(f"the {field} is not valid Unicode")


@pytest.mark.parametrize(("command", "field"), [("ask", "question"), ("search", "query")])
def test_the_cli_refuses_an_undecodable_argument_with_exit_2(
    project: Path, command: str, field: str
) -> None:
    argument = b"\xff rollback key".decode("utf-8", "surrogateescape")

    rc, out, err = cli("--config", project, command, argument, "--user", "ann")

    assert rc == 2, (out, err)
    assert err.strip() == (
        f"error: the {field} is not valid Unicode: character 1 is a lone surrogate (U+DCFF)"
    )


def test_an_embedding_failure_names_no_library_internals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = MiniLMEmbedder()

    with pytest.raises(EmbeddingError) as raised:
        embedder.embed([SURROGATE])

    assert raised.value.message == "the embedding model could not read the text"
    assert "MiniLM tokenizer failed" in caplog.text  # the detail stays in the server log
