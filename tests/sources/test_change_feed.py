"""Notices that name no items, resolved through the source's change feed, and subscriptions
kept alive by the scheduler.

A Graph or Drive notification says only "something changed". With a :class:`ChangeFeed`
the engine re-reads just the items the feed names since the position the last full
permission sync took before it began reading — not every item — and falls back to a full
permission sync when it has no position or the source no longer accepts it (410)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.errors import ConfigError, SourceError
from clearance.model import Sensitivity
from clearance.sources import registry
from clearance.sources.base import (
    Access,
    SourceContext,
    SourceDocument,
    Subscription,
)
from clearance.sources.memory import MemoryConnector
from clearance.sources.scheduler import Scheduler
from clearance.sources.service import SUBSCRIPTION_KEY, notified_sync, stored_subscription
from clearance.sources.state import StateTable
from clearance.sources.sync import FEED_KEY, SourceSync
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

from .conftest import Clock

URL = "https://clearance.example.com/v1/sources/drive/notifications"
ITEMS = 30


class FeedSource(MemoryConnector):
    """The memory connector with a change feed (a log of items whose access changed) and
    subscriptions that last ``lifetime``."""

    def __init__(self, clock: Clock) -> None:
        super().__init__("drive")
        self.clock = clock
        self.log: list[str] = []
        self.expired_below = 0  # positions older than this are refused with 410
        self.feed_reads = 0
        self.subscribed: list[tuple[str, str | None]] = []
        self.lifetime = timedelta(hours=4)
        self.refuse_subscription = False

    def revoke(self, doc_id: str, access: Access) -> None:
        self.access[doc_id] = access
        self.log.append(doc_id)

    def changed_since(self, cursor: str | None) -> tuple[frozenset[str], str]:
        self.feed_reads += 1
        end = str(len(self.log))
        if cursor is None:
            return frozenset(), end
        if int(cursor) < self.expired_below:
            raise SourceError("the change feed's position expired", status=410)
        return frozenset(self.log[int(cursor) :]), end

    def subscribe(self, url: str, current: Subscription | None) -> Subscription:
        if self.refuse_subscription:
            raise SourceError("subscriptions refused")
        self.subscribed.append((url, None if current is None else current.id))
        return Subscription(
            f"sub-{len(self.subscribed)}", self.clock.now + self.lifetime, {"resource": "r1"}
        )


def _document(n: int) -> SourceDocument:
    return SourceDocument(
        doc_id=f"drive:item-{n:02}",
        version="1",
        title=f"item {n}",
        uri=f"https://drive.test/{n}",
        access=Access.of("user:alice"),
        text=f"Launch checklist number {n} for the spring release.",
        sensitivity=Sensitivity.INTERNAL,
    )


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Clearance, Clock, FeedSource]]:
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {"revocation_sla": "1h"}},
            "sources": {"drive": {"kind": "memory", "corpus": "docs", "notification_url": URL}},
        },
    )
    clock = Clock()
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None, clock=clock)
    users = [{"id": u, "active": True, "attributes": {}} for u in ("alice", "bob")]
    engine.sync_directory_data(json.dumps({"users": users, "groups": []}), "directory.json")
    source = FeedSource(clock)
    for n in range(ITEMS):
        source.put(_document(n))
    try:
        yield engine, clock, source
    finally:
        engine.close()


def _sync(engine: Clearance, source: FeedSource) -> SourceSync:
    return SourceSync(engine, engine.settings.sources["drive"], source)


def _reads(source: FeedSource) -> list[str]:
    return [d for call in source.item_reads for d in call]


def test_a_notice_naming_nothing_rereads_only_what_the_feed_names(
    world: tuple[Clearance, Clock, FeedSource],
) -> None:
    engine, clock, source = world
    for report in _sync(engine, source).run():
        assert report.ok, report.error
    assert StateTable(engine.store).get("drive").stats[FEED_KEY] == "0"
    synced = engine.store.last_acl_syncs()["docs"]
    assert engine.search("alice", "checklist number 7").hits

    source.revoke("drive:item-07", Access.of("user:bob"))
    clock.advance(30)
    report = _sync(engine, source).from_feed()
    assert report.ok and report.kind == "notified", report.error
    assert _reads(source) == ["drive:item-07"]  # one item read, not thirty
    hits = engine.search("alice", "checklist number 7").hits
    assert "drive:item-07" not in {h.document.doc_id for h in hits}
    assert engine.store.last_acl_syncs()["docs"] == synced  # a partial read advances nothing
    assert StateTable(engine.store).get("drive").stats[FEED_KEY] == "1"

    second = _sync(engine, source).from_feed()  # nothing new since
    assert second.ok and _reads(source) == ["drive:item-07"]


def test_the_feed_position_is_taken_before_the_full_sync_reads(
    world: tuple[Clearance, Clock, FeedSource],
) -> None:
    """A change made while a full sync is reading is after the position it keeps: the next
    notice reads it, although the full sync may have read the item before the change."""
    engine, _, source = world
    original = source.permission_changes

    def listing_with_a_change_in_the_middle(cursor: str | None) -> Iterator[Any]:
        pages = list(original(cursor))
        source.revoke("drive:item-03", Access.of("user:bob"))
        yield from pages

    source.permission_changes = listing_with_a_change_in_the_middle  # type: ignore[method-assign]
    for report in _sync(engine, source).run():
        assert report.ok, report.error
    assert "drive:item-03" in {h.document.doc_id for h in engine.search("alice", "number 3").hits}
    source.permission_changes = original  # type: ignore[method-assign]
    assert _sync(engine, source).from_feed().ok
    assert "drive:item-03" not in {
        h.document.doc_id for h in engine.search("alice", "number 3").hits
    }


def test_no_position_or_an_expired_one_falls_back_to_a_full_permission_sync(
    world: tuple[Clearance, Clock, FeedSource],
) -> None:
    engine, _, source = world
    assert _sync(engine, source).content().ok
    first = _sync(engine, source).from_feed()  # no position kept yet
    assert first.ok and first.kind == "permissions"
    source.revoke("drive:item-05", Access.of("user:bob"))
    source.expired_below = 5
    fallback = _sync(engine, source).from_feed()
    assert fallback.ok and fallback.kind == "permissions", fallback.error
    assert _reads(source) == []  # the re-listing read everything, not single items
    hits = engine.search("alice", "checklist number 5").hits
    assert "drive:item-05" not in {h.document.doc_id for h in hits}


def test_a_feed_that_cannot_be_read_fails_the_notified_sync_and_keeps_the_position(
    world: tuple[Clearance, Clock, FeedSource],
) -> None:
    engine, _, source = world
    for report in _sync(engine, source).run():
        assert report.ok
    source.fail = True

    def down(cursor: str | None) -> tuple[frozenset[str], str]:
        raise SourceError("the source is not answering")

    source.changed_since = down  # type: ignore[method-assign]
    report = _sync(engine, source).from_feed()
    assert not report.ok and report.kind == "notified"
    assert report.error == "the source is not answering"
    assert StateTable(engine.store).get("drive").stats[FEED_KEY] == "0"


def test_notified_sync_with_no_items_goes_through_the_feed(
    world: tuple[Clearance, Clock, FeedSource], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, _, source = world
    monkeypatch.setitem(registry._KINDS._factories, "memory", lambda _: source)
    for report in _sync(engine, source).run():
        assert report.ok
    source.revoke("drive:item-09", Access.of("user:bob"))
    report = notified_sync(engine, "drive", None)
    assert report.kind == "notified" and report.ok and _reads(source) == ["drive:item-09"]


def test_reverse_proof_a_feed_that_misses_an_item_leaves_the_revoked_reader_in(
    world: tuple[Clearance, Clock, FeedSource],
) -> None:
    """The feed is trusted to name every changed item: the same check that passes above
    catches a feed that leaves one out (which is why a connector must name descendants of
    a changed folder, and the scheduled re-listing stays the safety net)."""
    engine, _, source = world
    for report in _sync(engine, source).run():
        assert report.ok
    source.access["drive:item-07"] = Access.of("user:bob")  # changed, but not in the feed
    assert _sync(engine, source).from_feed().ok
    assert "drive:item-07" in {
        h.document.doc_id for h in engine.search("alice", "checklist number 7").hits
    }


# ---------------------------------------------------------------------- subscriptions


@pytest.fixture
def scheduled(
    world: tuple[Clearance, Clock, FeedSource], monkeypatch: pytest.MonkeyPatch
) -> tuple[Clearance, Clock, FeedSource, Scheduler]:
    engine, clock, source = world

    def build(context: SourceContext) -> FeedSource:
        return source

    monkeypatch.setitem(registry._KINDS._factories, "memory", build)
    return engine, clock, source, Scheduler(engine)


def test_the_scheduler_subscribes_and_renews_with_a_quarter_of_the_lifetime_left(
    scheduled: tuple[Clearance, Clock, FeedSource, Scheduler],
) -> None:
    engine, clock, source, scheduler = scheduled
    scheduler.tick()
    assert source.subscribed == [(URL, None)]
    stored = stored_subscription(engine, "drive")
    assert stored is not None and stored[0].id == "sub-1"
    assert stored[0].state == {"resource": "r1"}

    clock.advance(timedelta(hours=2, minutes=59).total_seconds())
    scheduler.tick()
    assert len(source.subscribed) == 1  # more than a quarter of four hours left
    clock.advance(120)
    scheduler.tick()
    assert source.subscribed[-1] == (URL, "sub-1")  # renewed, handing over the current one
    stored = stored_subscription(engine, "drive")
    assert stored is not None and stored[0].id == "sub-2"


def test_a_failed_subscription_is_retried_later_and_the_syncs_go_on(
    scheduled: tuple[Clearance, Clock, FeedSource, Scheduler],
) -> None:
    engine, clock, source, scheduler = scheduled
    source.refuse_subscription = True
    reports = scheduler.tick()
    assert {r.kind for r in reports} == {"content", "permissions"}
    assert all(r.ok for r in reports)
    assert stored_subscription(engine, "drive") is None
    source.refuse_subscription = False
    clock.advance(60)
    scheduler.tick()
    assert source.subscribed == []  # not before the retry interval
    clock.advance(300)
    scheduler.tick()
    assert source.subscribed == [(URL, None)]


def test_a_subscription_state_that_cannot_be_read_means_subscribe_again(
    scheduled: tuple[Clearance, Clock, FeedSource, Scheduler],
) -> None:
    engine, _, source, scheduler = scheduled
    StateTable(engine.store).update("drive", stats={SUBSCRIPTION_KEY: {"id": 3}})
    scheduler.tick()
    assert source.subscribed == [(URL, None)]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://clearance.example.com/v1/sources/drive/notifications", "https://"),
        ("https://clearance.example.com/v1/sources/other/notifications", "must end in"),
        ("https://clearance.example.com/v1/sources/drive/notifications?x=1", "must end in"),
    ],
)
def test_notification_url_is_validated(tmp_path: Path, url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        make_settings(
            tmp_path,
            {
                "corpora": {"docs": {}},
                "sources": {"drive": {"kind": "memory", "corpus": "docs", "notification_url": url}},
            },
        )
    assert "sources.drive.notification_url" in caught.value.message


def test_a_loopback_http_notification_url_is_accepted(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8080/v1/sources/drive/notifications"
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {}},
            "sources": {"drive": {"kind": "memory", "corpus": "docs", "notification_url": url}},
        },
    )
    assert settings.sources["drive"].notification_url == url
