"""MCP refuses text that is not valid Unicode over its transports as its tools do in-process:
a tool call whose arguments hold a lone surrogate (``"\\ud800 rollback key"``, a JSON
escape) is answered, with the request's id, by a tool error naming the argument in the
engine's words, and the server answers the next message as usual.

The SDK's JSON parser refuses such a message before any tool runs: over stdio it was
dropped without an answer, over streamable HTTP it was a 400 quoting the parser
(``Parse error: unexpected end of hex escape at line 1 column 112``). Here a real
``clearance mcp --user ann`` is spoken to over stdio and a real ``clearance mcp --http``
over loopback with a bearer token, in raw JSON-RPC, since the SDK's client cannot send a
lone surrogate at all. The reverse proofs run the same assertions against the SDK's own
handling, the re-reading taken out, and catch the silent drop and the 400.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.server import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from api.conftest import create_token
from api.test_mcp import QUERY, assert_only_ann_may_read, payload, serving_mcp, talk
from api.test_shared_limits import mcp_process
from clearance.api import mcp_server
from clearance.api.mcp_server import create_server, fixed_user, serve_stdio
from clearance.app import Clearance
from clearance.config import load_settings

SURROGATE = "\ud800 rollback key"
INTERNALS = ("hex escape", "Parse error", "Union", "pydantic", "Traceback", "internal")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, tool: str, **arguments: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def line(message: dict[str, Any]) -> str:
    """One message as a client writes it: a lone surrogate becomes the escape ``\\ud800``."""
    return json.dumps(message, ensure_ascii=True) + "\n"


#: A bad question, a bad assistant, a bad argument name, a notification that may not be
#: answered, a bad tool name, then a good search: every request is answered, the last one
#: normally.
CONVERSATION: list[dict[str, Any]] = [
    INITIALIZE,
    INITIALIZED,
    call(1, "ask", question=SURROGATE),
    call(2, "search", query=QUERY, assistant="\udc00"),
    call(5, "search", query=QUERY, **{"\udc00": "x"}),
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"note": SURROGATE}},
    call(3, "search\ud800", query=QUERY),
    call(4, "search", query=QUERY),
]
REQUESTS = {0, 1, 2, 3, 4, 5}


def tool_error(answer: dict[str, Any] | None) -> dict[str, Any]:
    """The ``{"error", "message"}`` of a tool error answered over JSON-RPC."""
    assert answer is not None, "no answer: the message was dropped"
    assert "result" in answer, answer
    result = answer["result"]
    assert result["isError"] is True
    body: dict[str, Any] = json.loads(result["content"][0]["text"])
    return body


def assert_refused(answer: dict[str, Any] | None, field: str, code: str, char: str) -> None:
    """A tool error naming ``field`` in the engine's words, and nothing of a library's."""
    assert tool_error(answer) == {
        "error": code,
        "message": f"the {field} is not valid Unicode: character 1 is a lone surrogate (U+{char})",
    }
    assert not any(word in json.dumps(answer) for word in INTERNALS)


def assert_conversation(answers: dict[Any, dict[str, Any]]) -> None:
    assert_refused(answers.get(1), "question", "bad_question", "D800")
    assert_refused(answers.get(2), "assistant", "invalid_request", "DC00")
    assert_refused(answers.get(5), "name of an argument", "invalid_request", "DC00")
    assert answers[3]["error"] == {
        "code": types.INVALID_PARAMS,
        "message": "the params.name is not valid Unicode: character 7 is a lone surrogate (U+D800)",
    }
    assert not answers[4]["result"]["isError"]
    assert_only_ann_may_read(json.loads(answers[4]["result"]["content"][0]["text"]))
    assert set(answers) == REQUESTS  # the notification is not answered


# --------------------------------------------------------------------------- stdio


def stdio_exchange(
    project: Path, messages: list[dict[str, Any]]
) -> tuple[dict[Any, dict[str, Any]], str]:
    """``messages`` to a real ``clearance mcp --user ann``: its answers by id, and its log."""
    command = [sys.executable, "-m", "clearance.cli.main", "--config", str(project)]
    running = subprocess.Popen(
        [*command, "mcp", "--user", "ann"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert running.stdin is not None and running.stdout is not None
    answers: dict[Any, dict[str, Any]] = {}
    try:
        for message in messages:
            running.stdin.write(line(message))
        running.stdin.flush()
        deadline = time.monotonic() + 60
        while set(answers) != REQUESTS and time.monotonic() < deadline:
            readable, _, _ = select.select([running.stdout], [], [], 0.5)
            if readable:
                text = running.stdout.readline()
                assert text, "the server stopped serving"
                answer = json.loads(text)
                answers[answer.get("id")] = answer
    finally:
        running.stdin.close()
        running.wait(30)
        running.stdout.close()
        assert running.stderr is not None
        with running.stderr:
            log = running.stderr.read()
    assert running.returncode == 0, log
    return answers, log


def test_stdio_answers_each_request_naming_the_argument_and_serves_on(project: Path) -> None:
    answers, log = stdio_exchange(project, CONVERSATION)

    assert_conversation(answers)
    # A notification may not be answered: the operator's log says what was not read.
    assert "the params.note is not valid Unicode" in log


class Stdin:
    """stdin for :func:`serve_stdio` in-process: ``lines``, then open until every request
    is answered (at most ``patience`` seconds), as a client waits for its answers."""

    def __init__(self, lines: list[str], answered: anyio.Event, patience: float) -> None:
        self.lines = lines
        self.answered = answered
        self.patience = patience

    async def __aiter__(self) -> Any:
        for text in self.lines:
            yield text
        with anyio.move_on_after(self.patience):
            await self.answered.wait()


class Stdout:
    def __init__(self, answered: anyio.Event) -> None:
        self.answers: dict[Any, dict[str, Any]] = {}
        self.answered = answered

    async def write(self, text: str) -> None:
        answer = json.loads(text)
        self.answers[answer.get("id")] = answer
        if set(self.answers) >= REQUESTS:
            self.answered.set()

    async def flush(self) -> None:
        pass


def in_process_exchange(server: Server[Any], patience: float) -> dict[Any, dict[str, Any]]:
    async def main() -> dict[Any, dict[str, Any]]:
        answered = anyio.Event()
        stdin = Stdin([line(message) for message in CONVERSATION], answered, patience)
        stdout = Stdout(answered)
        await serve_stdio(server, cast(Any, stdin), cast(Any, stdout))
        return stdout.answers

    return anyio.run(main)


def test_reverse_proof_without_rereading_the_sdk_drops_the_message(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Clearance.open(load_settings(project))
    try:
        server = create_server(engine, fixed_user("ann"))
        assert_conversation(in_process_exchange(server, patience=30))

        async def as_the_sdk(item: Exception, write_stream: Any) -> Exception:
            return item  # what the SDK's stdio transport does: a message it cannot parse

        monkeypatch.setattr(mcp_server, "_reread", as_the_sdk)
        answers = in_process_exchange(server, patience=2)
    finally:
        engine.close()

    assert set(answers) == {0, 4}  # the good ones only: the rest went unanswered
    with pytest.raises(AssertionError, match="dropped"):
        assert_conversation(answers)


# --------------------------------------------------------------------------- streamable HTTP

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, token: str, message: dict[str, Any], **headers: str) -> httpx.Response:
    body = line(message).encode("ascii")
    headers = {**HEADERS, "Authorization": f"Bearer {token}", **headers}
    return httpx.post(url, content=body, headers=headers, timeout=30)


def http_exchange(url: str, token: str) -> dict[Any, dict[str, Any]]:
    """The conversation over streamable HTTP, one POST a message (stateless)."""
    answers: dict[Any, dict[str, Any]] = {}
    for message in CONVERSATION:
        response = post(url, token, message)
        if response.status_code != 202:  # a notification is accepted, not answered
            answer = response.json()
            answers[answer.get("id")] = answer
    return answers


@pytest.fixture
def token(project: Path) -> str:
    return create_token(project, "ann")["token"]


def test_http_answers_each_request_naming_the_argument_and_serves_on(
    project: Path, token: str
) -> None:
    with mcp_process(project) as url:
        answers = http_exchange(url, token)
        unsigned = httpx.post(url, content=line(call(6, "ask", question=SURROGATE)))
        by_version = post(
            url, token, call(7, "ask", question=SURROGATE), **{"MCP-Protocol-Version": "2025-06-18"}
        )

    # Over HTTP a notification the SDK cannot read is answered too, as the SDK answers one.
    assert answers.pop(None) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": types.INVALID_PARAMS,
            "message": "the params.note is not valid Unicode: "
            "character 1 is a lone surrogate (U+D800)",
        },
    }
    assert_conversation(answers)
    assert unsigned.status_code == 401  # no token, no tool: the gate comes first
    assert by_version.status_code == 200
    assert_refused(by_version.json(), "question", "bad_question", "D800")


def test_http_in_the_2026_protocol_the_tool_answers_the_same(project: Path, token: str) -> None:
    """That protocol's transport reads JSON with Python's ``json``: the tool refuses."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }
    message = call(8, "ask", question=SURROGATE)
    message["params"]["_meta"] = envelope
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask"}

    with mcp_process(project) as url:
        response = post(url, token, message, **headers)

    assert response.status_code == 200, response.text
    assert_refused(response.json(), "question", "bad_question", "D800")


class Passing:
    """The SDK's own handling: the body goes to the MCP app as it came."""

    def __init__(self, app: ASGIApp, path: str = "") -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def test_reverse_proof_without_the_gate_http_answers_400_quoting_the_parser(
    project: Path, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Clearance.open(load_settings(project))
    try:
        monkeypatch.setattr(mcp_server, "UnicodeGate", Passing)
        with serving_mcp(engine) as url:
            response = post(url, token, call(1, "ask", question=SURROGATE))
    finally:
        engine.close()

    assert response.status_code == 400
    assert "hex escape" in response.text  # the parser's own words
    with pytest.raises(AssertionError):
        assert_refused(response.json(), "question", "bad_question", "D800")


# --------------------------------------------------------------------------- in-process


def test_in_process_the_tools_refuse_every_argument_the_same_way(project: Path) -> None:
    engine = Clearance.open(load_settings(project))
    seen: dict[str, types.CallToolResult] = {}

    async def body(client: Any) -> None:
        seen["assistant"] = await client.call_tool(
            "search", {"query": QUERY, "assistant": "\udc00"}
        )
        seen["question"] = await client.call_tool("ask", {"question": SURROGATE})

    try:
        talk(create_server(engine, fixed_user("ann")), body)
    finally:
        engine.close()

    for field, code, char in (
        ("assistant", "invalid_request", "DC00"),
        ("question", "bad_question", "D800"),
    ):
        assert seen[field].is_error
        assert payload(seen[field]) == {
            "error": code,
            "message": f"the {field} is not valid Unicode: character 1 is a lone surrogate (U+{char})",
        }


def test_a_message_without_a_lone_surrogate_is_the_sdks(project: Path, token: str) -> None:
    """Invalid JSON and a message the SDK refuses for another reason keep its answers."""
    with mcp_process(project) as url:
        garbage = httpx.post(
            url, content=b"{not json", headers={**HEADERS, "Authorization": f"Bearer {token}"}
        )
        listed = post(url, token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == types.PARSE_ERROR
    assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["search", "ask"]
