"""Streams end: MCP's ``GET /mcp`` and answers as server-sent events are bounded by
``[server] stream_idle_timeout`` and ``streams_per_user``, on real servers on loopback.

The finding: ``GET /mcp`` with a valid token opened a stream (stateless mode) that never
ended; 800 of them held 815 file descriptors. The invariants: a stream that carries nothing
is closed after the idle timeout (keep-alive comments do not count), and one user holds at
most ``streams_per_user`` at once. The reverse proofs run the same assertions against the
MCP app without its bounds, and must see them fail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from api.conftest import create_token, serving_app
from api.test_limits import reset_allowances
from clearance.answer.result import AnswerResult
from clearance.api.app import create_app
from clearance.api.auth import ApiTokenAuthenticator
from clearance.api.mcp_server import MCP_PATH, BearerGate, create_http_app
from clearance.api.streams import StreamGuard
from clearance.api.tokens import TokenStore
from clearance.app import Clearance
from clearance.config import load_settings

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture(autouse=True)
def fresh_allowances(project: Path) -> Iterator[None]:
    reset_allowances(project)
    yield
    reset_allowances(project)


@pytest.fixture(scope="module")
def tokens(project: Path) -> dict[str, str]:
    return {user: create_token(project, user)["token"] for user in ("ann", "root")}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **STREAM}


@contextmanager
def mcp_server(
    project: Path, *, idle_s: float, per_user: int, bounded: bool = True
) -> Iterator[str]:
    """The MCP HTTP app under uvicorn; ``bounded=False`` takes its stream bounds away."""
    settings = load_settings(project)
    server = replace(settings.server, stream_idle_timeout_s=idle_s, streams_per_user=per_user)
    engine = Clearance.open(replace(settings, server=server))
    try:
        app = create_http_app(engine, [ApiTokenAuthenticator(TokenStore(engine.store))])
        if not bounded:  # the finding's server: the gate without a stream guard
            for middleware in app.user_middleware:
                if middleware.cls is BearerGate:
                    middleware.kwargs["streams"] = None
        with serving_app(app, MCP_PATH) as url:
            yield url
    finally:
        engine.close()


def seconds_until_closed(url: str, headers: dict[str, str], patience_s: float) -> float | None:
    """How long a ``GET`` stream stayed open (``None``: still open after ``patience_s``)."""
    start = time.monotonic()
    timeout = httpx.Timeout(5.0, read=patience_s)
    try:
        with httpx.stream("GET", url, headers=headers, timeout=timeout) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for _ in response.iter_raw():
                if time.monotonic() - start > patience_s:
                    return None
    except httpx.ReadTimeout:
        return None
    return time.monotonic() - start


# --------------------------------------------------------------------------- idle timeout


def test_an_idle_mcp_stream_is_closed_after_the_idle_timeout(
    project: Path, tokens: dict[str, str]
) -> None:
    with mcp_server(project, idle_s=0.5, per_user=4) as url:
        lasted = seconds_until_closed(url, bearer(tokens["ann"]), patience_s=5.0)

    assert lasted is not None and 0.4 <= lasted < 3.0


def test_reverse_proof_an_unbounded_mcp_stream_is_caught(
    project: Path, tokens: dict[str, str]
) -> None:
    with mcp_server(project, idle_s=0.5, per_user=4, bounded=False) as url:
        lasted = seconds_until_closed(url, bearer(tokens["ann"]), patience_s=2.0)

    assert lasted is None  # the finding: still open
    with pytest.raises(AssertionError):
        assert lasted is not None and 0.4 <= lasted < 3.0


def test_keepalive_comments_do_not_keep_a_stream_open() -> None:
    """sse-starlette pings every 15 s; here an app pings every 50 ms and sends no event."""

    async def pinging(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:
            await send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
            await anyio.sleep(0.05)

    guard = StreamGuard(per_user=1, idle_timeout_s=0.3)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def main() -> float:
        start = time.monotonic()
        with anyio.fail_after(5):
            await guard.run(pinging, {"type": "http"}, None, send)  # type: ignore[arg-type]
        return time.monotonic() - start

    lasted = anyio.run(main)
    assert 0.25 <= lasted < 2.0
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_a_client_that_reads_nothing_is_cut_off_after_the_idle_timeout() -> None:
    """A write the client never takes (a full socket buffer) is no activity."""

    async def one_event(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"event: answer\n\n", "more_body": False})

    guard = StreamGuard(per_user=1, idle_timeout_s=0.3)
    stuck = anyio.Event()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            await stuck.wait()  # the client reads nothing

    async def main() -> float:
        start = time.monotonic()
        with anyio.fail_after(5):
            await guard.run(one_event, {"type": "http"}, None, send)  # type: ignore[arg-type]
        return time.monotonic() - start

    assert 0.25 <= anyio.run(main) < 3.0


# --------------------------------------------------------------------------- per-user cap


def hold_streams(url: str, token: str, n: int, stack: ExitStack) -> list[int]:
    """Open ``n`` ``GET`` streams (held until ``stack`` closes); their statuses."""
    statuses = []
    for _ in range(n):
        client = stack.enter_context(httpx.Client(timeout=httpx.Timeout(5.0, read=30.0)))
        response = stack.enter_context(client.stream("GET", url, headers=bearer(token)))
        statuses.append(response.status_code)
    return statuses


def test_one_user_holds_at_most_streams_per_user_and_others_are_unaffected(
    project: Path, tokens: dict[str, str]
) -> None:
    """The finding as reported, scaled down: 40 streams opened by one user. Two are held, the
    rest refused with 429 in the one error shape; another user still gets a stream; and a
    slot is given back when a stream ends."""
    with mcp_server(project, idle_s=30.0, per_user=2) as url, ExitStack() as stack:
        ann = hold_streams(url, tokens["ann"], 40, stack)
        refused = httpx.get(url, headers=bearer(tokens["ann"]))
        root = hold_streams(url, tokens["root"], 1, stack)

    assert ann.count(200) == 2 and ann.count(429) == 38
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_streams"
    assert set(refused.json()) == {"error", "message"} and refused.headers["retry-after"]
    assert root == [200]


def test_reverse_proof_without_a_cap_every_stream_stays_open(
    project: Path, tokens: dict[str, str]
) -> None:
    with (
        mcp_server(project, idle_s=30.0, per_user=2, bounded=False) as url,
        ExitStack() as stack,
    ):
        ann = hold_streams(url, tokens["ann"], 10, stack)

    assert ann == [200] * 10
    with pytest.raises(AssertionError):
        assert ann.count(200) == 2


def test_a_slot_is_given_back_when_its_stream_ends(project: Path, tokens: dict[str, str]) -> None:
    with mcp_server(project, idle_s=0.3, per_user=1) as url:
        first = seconds_until_closed(url, bearer(tokens["ann"]), patience_s=5.0)
        second = seconds_until_closed(url, bearer(tokens["ann"]), patience_s=5.0)

    assert first is not None and second is not None


# --------------------------------------------------------------------------- answer streams


def test_answer_streams_are_capped_per_user_from_before_the_ask(
    project: Path, tokens: dict[str, str]
) -> None:
    """Two streaming asks of ann are held inside a slow ask; her third stream is refused
    with 429 as one ``error`` event, before any ask runs, while root's is answered."""
    settings = load_settings(project)
    server = replace(settings.server, streams_per_user=2, stream_idle_timeout_s=5.0)
    engine = Clearance.open(replace(settings, server=server))
    release = threading.Event()
    entered = threading.Semaphore(0)
    real_ask = engine.ask

    def slow_ask(question: str, user_id: str, **kwargs: Any) -> AnswerResult:
        if user_id == "ann":
            entered.release()
            release.wait(10)
        return real_ask(question, user_id, **kwargs)

    engine.ask = slow_ask  # type: ignore[method-assign]
    results: list[httpx.Response] = []
    try:
        with serving_app(create_app(replace(settings, server=server), clearance=engine)) as url:

            def ask(token: str) -> httpx.Response:
                body = {"question": "Hotels limits"}
                return httpx.post(f"{url}/v1/ask", json=body, headers=bearer(token), timeout=30)

            held = [
                threading.Thread(target=lambda: results.append(ask(tokens["ann"])))
                for _ in range(2)
            ]
            for thread in held:
                thread.start()
            assert entered.acquire(timeout=10) and entered.acquire(timeout=10)
            third = ask(tokens["ann"])
            root = ask(tokens["root"])
            release.set()
            for thread in held:
                thread.join(30)
            after = ask(tokens["ann"])
    finally:
        release.set()
        engine.close()

    assert third.status_code == 429 and third.headers["retry-after"]
    assert third.text.startswith("event: error\n") and '"too_many_streams"' in third.text
    assert root.status_code == 200 and "event: answer" in root.text
    assert [r.status_code for r in results] == [200, 200]
    assert after.status_code == 200  # the slots were given back
