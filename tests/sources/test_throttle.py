"""Throttling within the SLA: a source's ``Retry-After`` is honoured as long as waiting can
still produce a fresh corpus, reported in the sync's report, and refused at once beyond that
— against a real server on loopback, through the sync engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clearance.app import Clearance
from clearance.model import Sensitivity
from clearance.sources.base import (
    Access,
    ContentPage,
    ItemRef,
    PermissionChange,
    PermissionPage,
    SourceDocument,
)
from clearance.sources.http import SourceClient, throttle_budget
from clearance.sources.sync import SourceSync
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings
from loopback_server import RecordedRequest, Reply, ScriptedServer, json_reply

SLA_S = 900  # 15 minutes
INTERVAL_S = 60


class OneFileSource:
    """One item whose ACL is read from ``GET /acl`` on the scripted server."""

    def __init__(self, client: SourceClient) -> None:
        self.client = client

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        self.client.get_json("/list")
        yield ContentPage([ItemRef("web:plan", "1")], cursor=None, snapshot=True)

    def fetch(self, item: ItemRef) -> SourceDocument:
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title="Plan",
            uri="https://src.test/plan",
            access=Access.of("user:alice"),
            text="The rollout plan starts in May.",
            sensitivity=Sensitivity.INTERNAL,
        )

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        acl = self.client.get_json("/acl")["acl"]
        yield PermissionPage([PermissionChange("web:plan", Access.of(*acl))], None, True)

    def groups(self) -> None:
        return None

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def server() -> Iterator[ScriptedServer[RecordedRequest]]:
    with ScriptedServer(
        RecordedRequest, lambda r: json_reply({"acl": ["user:alice"], "items": []})
    ) as srv:
        yield srv


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Clearance]:
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {"revocation_sla": f"{SLA_S}s"}},
            "sources": {
                "site": {
                    "kind": "memory",
                    "corpus": "docs",
                    "permission_interval": f"{INTERVAL_S}s",
                }
            },
        },
    )
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None)
    users = [{"id": "alice", "active": True, "attributes": {}}]
    engine.sync_directory_data(json.dumps({"users": users, "groups": []}), "directory.json")
    try:
        yield engine
    finally:
        engine.close()


def _sync(
    app: Clearance, server: ScriptedServer[RecordedRequest], *, content: bool = False
) -> tuple[SourceSync, list[float]]:
    waits: list[float] = []
    client = SourceClient(server.url_for(""), source="site", sleep=waits.append)
    return SourceSync(app, app.settings.sources["site"], OneFileSource(client)), waits


def test_a_long_retry_after_inside_the_sla_is_waited_for_and_reported(
    app: Clearance, server: ScriptedServer[RecordedRequest]
) -> None:
    sync, waits = _sync(app, server)
    sync.content()
    server.reply_with(Reply(status=429, headers=(("Retry-After", "300"),)), times=1)
    report = sync.permissions()
    assert report.ok, report.error
    assert waits == [300.0]  # longer than the client's own 120 s limit outside a sync
    assert report.counts["throttled"] == 1
    assert "the source throttled 1 request(s): waited 300s in all" in report.warnings[0]
    assert report.corpus_sync_advanced


def test_a_retry_after_past_the_sla_fails_the_permission_sync_at_once(
    app: Clearance, server: ScriptedServer[RecordedRequest]
) -> None:
    sync, waits = _sync(app, server)
    sync.content()
    server.reply_with(Reply(status=429, headers=(("Retry-After", "3600"),)), times=1)
    report = sync.permissions()
    assert not report.ok and waits == []
    assert report.error is not None
    assert "asked to wait 3600s (Retry-After)" in report.error
    assert "the permissions sync's throttling budget (the revocation SLA)" in report.error


def test_content_work_waits_at_most_one_permission_interval(
    app: Clearance, server: ScriptedServer[RecordedRequest]
) -> None:
    """Content and permission work share the source's quota: a content sync that would wait
    past the next permission sync gives way instead."""
    sync, waits = _sync(app, server)
    server.reply_with(Reply(status=429, headers=(("Retry-After", "300"),)), times=1)
    report = sync.content()
    assert not report.ok and waits == []
    assert report.error is not None and "60s left" in report.error
    server.reply_with(Reply(status=429, headers=(("Retry-After", "30"),)), times=1)
    assert sync.content().ok and waits == [30.0]


def test_the_budget_counts_waits_even_when_the_clock_does_not_move() -> None:
    budget = throttle_budget("budget-test")
    budget.begin("permissions", 100.0)
    budget.record(70.0)
    remaining = budget.remaining()
    assert remaining is not None and remaining <= 30.0
    assert budget.end() == (1, 70.0, 70.0)
    assert budget.remaining() is None  # outside a sync the client's own limit applies
