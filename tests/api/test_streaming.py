"""``POST /v1/ask`` as server-sent events, the per-request deadline and provider failures,
against a real uvicorn server on loopback — and, where the model matters, a real
chat-completions server on loopback (``[llm] provider = "openai"``).

The invariant: whatever is streamed has passed the same checks as the JSON answer. Only the
checked answer's sentences are sent, and they add up to the final event's ``answer`` exactly.
Its reverse proof: a stream of the model's raw text, which carries an invented number, must
be rejected by the same assertion.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import Live, create_token, free_port, serving, wait_until_serving
from clearance.answer.routes.narrative import INFERRED_LABEL
from clearance.api.streaming import sentence_pieces
from clearance.app import Clearance
from clearance.config import AnswerSettings, load_settings
from llm.chat_server import ChatServer

SSE = {"Accept": "text/event-stream"}
DEGRADED = AnswerSettings().degraded_message
QUESTION = "Hotels limits"
# The model invents a figure (999 is in no source) beside a sentence it may say.
MODEL_TEXT = "Hotels are allowed up to 999 EUR a night. [S1] Book trains in Tokyo. [S1]"

Event = tuple[str, dict[str, Any]]


def events_of(body: str) -> list[Event]:
    """The ``(event, data)`` pairs of a server-sent-events body; ``data`` is JSON."""
    out: list[Event] = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) == {"event", "data"}, block
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def assert_only_checked_text_streamed(events: list[Event], model_text: str) -> None:
    """Sentences, then one final answer; the sentences are exactly the checked answer, and
    no number the checks removed from the model's text is in any event."""
    names = [name for name, _ in events]
    assert names[-1] == "answer" and set(names[:-1]) <= {"sentence"}, names
    final = events[-1][1]
    texts = [data["text"] for _, data in events[:-1]]
    assert [data["index"] for _, data in events[:-1]] == list(range(len(texts)))
    assert "".join(texts) == final["answer"]
    streamed = "".join(texts)
    for number in re.findall(r"\d+", model_text):
        if number not in final["answer"]:
            assert number not in streamed, f"{number} was streamed but failed the checks"


def sse(client: httpx.Client, token: str, body: dict[str, Any]) -> httpx.Response:
    return client.post("/v1/ask", json=body, headers={**SSE, "Authorization": f"Bearer {token}"})


def assert_degraded(response: httpx.Response, *, stream: bool) -> None:
    """503 and the one error shape with the fixed degraded text — as the only event."""
    assert response.status_code == 503, response.text
    error = {"error": "degraded", "message": DEGRADED}
    if stream:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert events_of(response.text) == [("error", error)]
    else:
        assert response.headers["content-type"] == "application/json"
        assert response.json() == error


def traces(config: Path) -> list[dict[str, Any]]:
    engine = Clearance.open(load_settings(config))
    try:
        return engine.trace_log().entries()
    finally:
        engine.close()


def wait_for_trace(config: Path, before: int, timeout_s: float = 20) -> dict[str, Any]:
    """The newest trace once there are more than ``before``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = traces(config)
        if len(found) > before:
            return found[0]
        assert time.monotonic() < deadline, "no trace was written"
        time.sleep(0.1)


# --------------------------------------------------------------------------- splitting


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("A. [S1] B! [S2]", ["A. [S1] ", "B! [S2]"]),
        ("economy [S1] Next one [S2]", ["economy [S1] ", "Next one [S2]"]),
        ("Up to 6.5 EUR. [S1][S2]  Done.", ["Up to 6.5 EUR. [S1][S2]  ", "Done."]),
        ("東京。[S1]大阪！次", ["東京。[S1]", "大阪！", "次"]),
        ("(Note: “T” is past its date.) Next.", ["(Note: “T” is past its date.) ", "Next."]),
        ("one line\nno stop", ["one line\nno stop"]),
        ("See e.g. Dr. No. [S1] Next.", ["See e.g. Dr. No. [S1] ", "Next."]),
        ("- a: 1 [S1]\n- b: 2 [S2]", ["- a: 1 [S1]\n", "- b: 2 [S2]"]),
        ("", []),
    ],
)
def test_sentence_pieces_keep_markers_and_add_up_to_the_text(text: str, pieces: list[str]) -> None:
    assert sentence_pieces(text) == pieces
    assert "".join(sentence_pieces(text)) == text


# --------------------------------------------------------------------------- the extractive model


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as c:
        yield c


def test_the_stream_is_the_checked_sentences_then_the_json_answer(
    live: Live, client: httpx.Client
) -> None:
    plain = client.post("/v1/ask", json={"question": QUESTION}, headers=live.auth("ann"))
    streamed = sse(client, live.tokens["ann"], {"question": QUESTION})

    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert streamed.headers["cache-control"] == "no-store"
    events = events_of(streamed.text)
    assert_only_checked_text_streamed(events, "")
    assert len(events) >= 2  # at least one sentence
    final = events[-1][1]
    assert final["status"] == "answered" and final["citations"]
    assert {**final, "trace_id": ""} == {**plain.json(), "trace_id": ""}
    assert final["trace_id"] and final["trace_id"] != plain.json()["trace_id"]


@pytest.mark.parametrize(
    ("user", "body", "status"),
    [
        ("bob", {"question": QUESTION}, "account_disabled"),
        ("ann", {"question": QUESTION, "assistant": "nope"}, "unknown_assistant"),
        ("ann", {"question": "What is the weather on Mars?"}, "no_authorized_source"),
    ],
)
def test_a_refusal_streams_nothing_but_the_final_event(
    live: Live, client: httpx.Client, user: str, body: dict[str, Any], status: str
) -> None:
    plain = client.post("/v1/ask", json=body, headers=live.auth(user)).json()
    events = events_of(sse(client, live.tokens[user], body).text)

    assert [name for name, _ in events] == ["answer"]
    assert events[0][1]["status"] == status
    assert {**events[0][1], "trace_id": ""} == {**plain, "trace_id": ""}


def test_without_the_event_stream_accept_the_answer_is_json(
    live: Live, client: httpx.Client
) -> None:
    for accept in ("application/json", "*/*", "text/event-stream;q=0"):
        response = client.post(
            "/v1/ask", json={"question": QUESTION}, headers={**live.auth("ann"), "Accept": accept}
        )
        assert response.headers["content-type"] == "application/json", accept


def test_errors_of_a_streamed_ask_are_one_error_event_with_the_real_status(
    live: Live, client: httpx.Client
) -> None:
    unauthenticated = client.post("/v1/ask", json={"question": QUESTION}, headers=SSE)
    too_long = sse(client, live.tokens["ann"], {"question": "x" * 100_000})

    # Refused before the ask (sign-in, body validation): the JSON error, as on every route.
    assert unauthenticated.status_code == 401
    assert set(unauthenticated.json()) == {"error", "message"}
    # Refused by the ask: the same status, and the error shape as the only event.
    assert too_long.status_code == 422
    [(name, error)] = events_of(too_long.text)
    assert name == "error" and set(error) == {"error", "message"}
    assert error["error"] == "bad_question"


# --------------------------------------------------------------------------- a real model server


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with ChatServer(answer=MODEL_TEXT) as server:
        yield server


def model_config(project: Path, chat: ChatServer, name: str, request_timeout: str) -> Path:
    """The module project with the model on loopback, no judge, and a deadline."""
    text = project.read_text(encoding="utf-8")
    assert 'rate_limit = "off"' in text, "conftest's CONFIG no longer has a [server] table"
    text = text.replace(
        'rate_limit = "off"', f'rate_limit = "off"\nrequest_timeout = "{request_timeout}"'
    )
    text += (
        f'\n[llm]\nprovider = "openai"\nbase_url = "{chat.base_url}"\nmodel = "m"\n'
        'timeout_s = "6s"\nmax_retries = 0\n\n[rerank]\nprovider = "none"\n'
    )
    config = project.parent / name
    config.write_text(text, encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def modelled(project: Path, chat: ChatServer) -> Iterator[Live]:
    config = model_config(project, chat, "modelled.toml", "2s")
    with serving(config) as url:
        server = Live(url, config)
        server.tokens["ann"] = create_token(config, "ann")["token"]
        yield server


@pytest.fixture
def model_client(modelled: Live, chat: ChatServer) -> Iterator[httpx.Client]:
    chat.answer_with(MODEL_TEXT)
    with httpx.Client(base_url=modelled.url, timeout=30) as c:
        yield c
    chat.answer_with(MODEL_TEXT)


def test_only_checked_text_is_ever_streamed(
    modelled: Live, chat: ChatServer, model_client: httpx.Client
) -> None:
    plain = model_client.post("/v1/ask", json={"question": QUESTION}, headers=modelled.auth("ann"))
    events = events_of(sse(model_client, modelled.tokens["ann"], {"question": QUESTION}).text)

    assert_only_checked_text_streamed(events, MODEL_TEXT)
    final = events[-1][1]
    assert final["status"] == "answered" and "Tokyo" in final["answer"]
    assert "999" not in final["answer"]  # the checks removed the invented figure …
    assert {**final, "trace_id": ""} == {**plain.json(), "trace_id": ""}


def test_reverse_proof_a_stream_of_raw_model_text_is_rejected() -> None:
    final = {"answer": "Book trains in Tokyo. [S1]", "status": "answered"}
    raw = [("sentence", {"index": i, "text": t}) for i, t in enumerate(MODEL_TEXT.split(" "))]

    with pytest.raises(AssertionError):
        assert_only_checked_text_streamed([*raw, ("answer", final)], MODEL_TEXT)


# A sentence the sources state, one the model marks as inferred, and an uncited one with
# a number in no source.
INFERRING = (
    "Book trains in Tokyo. [S1] [inferred] Travellers probably prefer trains. [S1] "
    "Hotels may cost 999 EUR a night."
)


def test_inferences_are_streamed_only_after_the_checked_sentences(
    project: Path, chat: ChatServer
) -> None:
    """``[answer] inferred = "label"``: the labelled block comes from the same final answer
    and arrives after every sourced sentence; the invented 999 is never sent."""
    config = model_config(project, chat, "labelled.toml", "10s")
    config.write_text(
        config.read_text(encoding="utf-8") + '\n[answer]\ninferred = "label"\n', encoding="utf-8"
    )
    token = create_token(config, "ann")["token"]
    chat.answer_with(INFERRING)
    try:
        with serving(config) as url, httpx.Client(base_url=url, timeout=30) as client:
            events = events_of(sse(client, token, {"question": QUESTION}).text)
    finally:
        chat.answer_with(MODEL_TEXT)

    assert_only_checked_text_streamed(events, INFERRING)
    final = events[-1][1]
    assert "inferred_shown:1" in final["flags"] and "999" not in final["answer"]
    assert_inferences_streamed_last([data["text"] for _, data in events[:-1]])


def assert_inferences_streamed_last(texts: list[str]) -> None:
    at = next(i for i, text in enumerate(texts) if INFERRED_LABEL in text)
    assert "Book trains in Tokyo. [S1]" in "".join(texts[:at])
    assert "Travellers" not in "".join(texts[:at])
    assert "".join(texts[at:]) == f"{INFERRED_LABEL}\n- Travellers probably prefer trains. [S1]"


def test_reverse_proof_inferences_streamed_first_are_rejected() -> None:
    block = f"{INFERRED_LABEL}\n- Travellers probably prefer trains. [S1]\n\n"
    with pytest.raises(AssertionError):
        assert_inferences_streamed_last(sentence_pieces(block + "Book trains in Tokyo. [S1]"))
    unlabelled = "Travellers probably prefer trains. [S1] Book trains in Tokyo. [S1]\n\n"
    with pytest.raises(AssertionError):
        assert_inferences_streamed_last(sentence_pieces(unlabelled + block))


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_hanging_past_the_deadline_is_503_and_the_ask_is_still_traced(
    modelled: Live, chat: ChatServer, model_client: httpx.Client, stream: bool
) -> None:
    before = len(traces(modelled.config))
    chat.hang(30)
    headers = {**modelled.auth("ann"), **(SSE if stream else {})}

    started = time.monotonic()
    response = model_client.post("/v1/ask", json={"question": QUESTION}, headers=headers)
    elapsed = time.monotonic() - started

    assert_degraded(response, stream=stream)
    assert 2 <= elapsed < 5  # the 2 s deadline, well before the model's own 6 s timeout
    record = wait_for_trace(modelled.config, before)  # the abandoned ask finishes and traces
    assert record["status"] == "degraded" and record["reason"] == "provider_error"


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_model_is_503_with_the_fixed_text(
    modelled: Live, chat: ChatServer, model_client: httpx.Client, stream: bool
) -> None:
    before = len(traces(modelled.config))
    chat.fail(500)
    headers = {**modelled.auth("ann"), **(SSE if stream else {})}

    response = model_client.post("/v1/ask", json={"question": QUESTION}, headers=headers)

    assert_degraded(response, stream=stream)
    assert "127.0.0.1" not in response.text  # never the provider's details
    assert wait_for_trace(modelled.config, before)["reason"] == "provider_error"


# --------------------------------------------------------------------------- disconnecting


def test_a_client_leaving_mid_stream_is_no_crash_and_the_ask_is_traced(
    project: Path, chat: ChatServer
) -> None:
    chat.answer_with("Book trains in Tokyo. [S1] Trains are the travel policy. [S1] Done. [S1]")
    config = model_config(project, chat, "disconnect.toml", "10s")
    token = create_token(config, "ann")["token"]
    before = len(traces(config))
    port = free_port()
    command = [sys.executable, "-m", "clearance.cli.main", "--config", str(config), "serve"]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process)
        headers = {**SSE, "Authorization": f"Bearer {token}"}
        with (
            httpx.Client(base_url=url, timeout=30) as client,
            client.stream("POST", "/v1/ask", json={"question": QUESTION}, headers=headers) as r,
        ):
            assert r.status_code == 200
            first = next(r.iter_lines())  # read the first event's first line, then hang up
        assert first == "event: sentence"
        record = wait_for_trace(config, before)
        time.sleep(0.5)  # let the server notice the closed connection
        assert process.poll() is None, "the server died"
    finally:
        process.terminate()
        out, err = process.communicate(timeout=15)
    assert record["status"] == "answered"
    for crash in ("Traceback", "ERROR", "Exception in ASGI application"):
        assert crash not in err and crash not in out, err
