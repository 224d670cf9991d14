"""The HTTP plumbing every connector shares, against a real server on loopback: bounded
retries on 429 and 5xx, Retry-After honoured, paging with loop detection, the concurrency
limit, and errors that never quote a query string or a credential."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources.http import BearerAuth, SourceClient, retry_after_seconds
from loopback_server import RecordedRequest, Reply, ScriptedServer, closed_url, json_reply


@pytest.fixture
def server() -> Iterator[ScriptedServer[RecordedRequest]]:
    with ScriptedServer(RecordedRequest, lambda r: json_reply({"ok": True})) as srv:
        yield srv


def client(
    server: ScriptedServer[RecordedRequest], **kwargs: Any
) -> tuple[SourceClient, list[float]]:
    waits: list[float] = []
    made = SourceClient(
        server.url_for(""), source="test", sleep=waits.append, random=lambda: 1.0, **kwargs
    )
    return made, waits


def test_a_429_is_retried_after_the_time_the_server_asked_for(
    server: ScriptedServer[RecordedRequest],
) -> None:
    server.reply_with(Reply(status=429, headers=(("Retry-After", "7"),)), times=2)
    made, waits = client(server)
    with made:
        assert made.get_json("/items") == {"ok": True}
    assert waits == [7.0, 7.0]
    assert server.request_count == 3
    assert made.retries == 2


def test_5xx_backoff_is_exponential_capped_and_bounded(
    server: ScriptedServer[RecordedRequest],
) -> None:
    server.reply_with(Reply(status=503))
    made, waits = client(server, max_retries=4, backoff_s=1.0, max_backoff_s=5.0)
    with made, pytest.raises(SourceError, match=r"failed \(HTTP 503\) after 5 attempts"):
        made.get_json("/items")
    assert waits == [1.0, 2.0, 4.0, 5.0]
    assert server.request_count == 5


def test_backoff_is_jittered(server: ScriptedServer[RecordedRequest]) -> None:
    server.reply_with(Reply(status=500), times=1)
    waits: list[float] = []
    with SourceClient(
        server.url_for(""), source="test", sleep=waits.append, random=lambda: 0.25, backoff_s=2.0
    ) as made:
        made.get_json("/items")
    assert waits == [0.5]


def test_a_retry_after_longer_than_the_limit_fails_instead_of_stalling(
    server: ScriptedServer[RecordedRequest],
) -> None:
    server.reply_with(Reply(status=429, headers=(("Retry-After", "3600"),)))
    made, waits = client(server, max_retry_after_s=60)
    with made, pytest.raises(SourceError, match="asked to wait 3600s"):
        made.get_json("/items")
    assert waits == []


def test_other_client_errors_are_not_retried_and_never_quote_the_query(
    server: ScriptedServer[RecordedRequest],
) -> None:
    server.reply_with(Reply(status=403))
    made, _ = client(server, auth=BearerAuth(Secret("s3cret-token")))
    with made, pytest.raises(SourceError) as caught:
        made.get_json("/items", params={"key": "hidden-query-value"})
    assert server.request_count == 1
    assert "HTTP 403" in caught.value.message and "/items" in caught.value.message
    assert "hidden-query-value" not in caught.value.message
    assert "s3cret-token" not in caught.value.message
    assert server.requests[0].headers["authorization"] == "Bearer s3cret-token"


def test_an_unreachable_source_fails_after_bounded_retries() -> None:
    waits: list[float] = []
    with (
        SourceClient(
            closed_url(), source="gone", sleep=waits.append, random=lambda: 0.0, max_retries=2
        ) as made,
        pytest.raises(SourceError, match=r"ConnectError.*after 3 attempts"),
    ):
        made.get_json("/items")
    assert len(waits) == 2


def test_paging_follows_next_links_and_refuses_a_loop(
    server: ScriptedServer[RecordedRequest],
) -> None:
    def pages(request: RecordedRequest) -> Reply:
        page = int(request.path.rsplit("page=", 1)[-1]) if "page=" in request.path else 0
        following = server.url_for(f"/items?page={page + 1}") if page < 2 else None
        return json_reply({"value": [page], "@odata.nextLink": following})

    server.respond_with(pages)
    made, _ = client(server)

    def next_link(body: Any) -> tuple[str, None] | None:
        link = body.get("@odata.nextLink")
        return None if link is None else (link, None)

    with made:
        assert [b["value"] for b in made.pages("/items", next_link)] == [[0], [1], [2]]
        server.reply_json({"value": [9], "@odata.nextLink": server.url_for("/items")})
        with pytest.raises(SourceError, match="loops"):
            list(made.pages(server.url_for("/items"), next_link))


def test_no_more_requests_are_in_flight_than_the_limit(
    server: ScriptedServer[RecordedRequest],
) -> None:
    lock = threading.Lock()
    state = {"now": 0, "most": 0}
    release = threading.Event()

    def slow(request: RecordedRequest) -> Reply:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            if state["most"] >= 2:
                release.set()
        release.wait(2)
        with lock:
            state["now"] -= 1
        return json_reply({"ok": True})

    server.respond_with(slow)
    made, _ = client(server, max_concurrency=2)
    with made:
        results = made.map(lambda i: made.get_json(f"/item/{i}"), range(8))
    assert len(results) == 8
    assert state["most"] == 2  # the limit was reached, and never passed


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds("Wed, 01 Jan 2025 12:00:30 GMT", now) == 30.0
    assert retry_after_seconds("Wed, 01 Jan 2025 11:00:00 GMT", now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None
