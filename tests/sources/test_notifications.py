"""Notified permission syncs with the in-memory connector: a targeted sync applies what it
re-read, never advances a sync time, fails closed when the source cannot answer and touches
only its own source's documents; the scheduler gathers notices into one prompt sync ahead of
content work. The clock is the test's: ticks are driven by hand and nothing sleeps.

Each security property comes with its reverse proof: a deliberately leaky variant that the
same assertion catches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.errors import SourceError
from clearance.model import Sensitivity
from clearance.secrets import Secret
from clearance.sources import notifications, registry
from clearance.sources.base import (
    Access,
    Connector,
    ItemPermissions,
    Notice,
    Notifiable,
    PermissionPage,
    SourceContext,
    SourceDocument,
)
from clearance.sources.memory import TOKEN_HEADER, MemoryConnector
from clearance.sources.notifications import NoticeQueue, NotificationReceiver
from clearance.sources.scheduler import Scheduler
from clearance.sources.service import source_status
from clearance.sources.state import StateTable
from clearance.sources.sync import NOT_ANSWERED, READ_AT_KEY, SourceSync, SyncReport
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

from .conftest import T0, Clock

SLA_S = 60.0
SECRET = "s3cret-shared-with-the-source"


@dataclass
class Drive:
    """An index with two memory sources (``drive`` and ``site``) and the test's clock."""

    app: Clearance
    clock: Clock
    drive: MemoryConnector
    site: MemoryConnector

    def sync(self, name: str = "drive") -> list[SyncReport]:
        connector = self.drive if name == "drive" else self.site
        reports = SourceSync(self.app, self.app.settings.sources[name], connector).run()
        assert all(r.ok for r in reports), [r.error for r in reports]
        return reports

    def targeted(self, *doc_ids: str, engine: type[SourceSync] = SourceSync) -> SyncReport:
        return engine(self.app, self.app.settings.sources["drive"], self.drive).targeted(doc_ids)

    def found(self, user: str) -> set[str]:
        return {h.document.doc_id for h in self.app.search(user, "minutes").hits}


def doc(doc_id: str, *principals: str) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        version="1",
        title=doc_id,
        uri=f"https://drive.test/{doc_id}",
        access=Access.of(*principals),
        text=f"Board minutes of {doc_id}.",
        sensitivity=Sensitivity.INTERNAL,
    )


@pytest.fixture
def drive(tmp_path: Path) -> Iterator[Drive]:
    settings = make_settings(
        tmp_path,
        {
            "corpora": {
                "board": {"revocation_sla": f"{SLA_S:g}s"},
                "www": {"revocation_sla": f"{SLA_S:g}s"},
            },
            "sources": {
                "drive": {
                    "kind": "memory",
                    "corpus": "board",
                    "permission_interval": "20s",
                    "content_interval": "30s",
                },
                "site": {"kind": "memory", "corpus": "www"},
            },
        },
    )
    clock = Clock()
    app = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None, clock=clock)
    users = [{"id": u, "active": True, "attributes": {}} for u in ("alice", "bob")]
    app.sync_directory_data(json.dumps({"users": users, "groups": []}), "directory.json")
    source = MemoryConnector("drive", secret=Secret(SECRET))
    for name in ("drive:a", "drive:b"):
        source.put(doc(name, "user:alice", "user:bob"))
    try:
        yield Drive(app, clock, source, MemoryConnector("site"))
    finally:
        app.close()


def test_the_memory_connector_has_both_capabilities() -> None:
    assert isinstance(MemoryConnector(), ItemPermissions)
    assert isinstance(MemoryConnector(), Notifiable)


# --------------------------------------------------------------------------- the engine


def test_a_targeted_sync_applies_a_revocation_and_reads_only_the_named_items(
    drive: Drive,
) -> None:
    drive.sync()
    assert drive.found("alice") == {"drive:a", "drive:b"}
    for name in ("drive:a", "drive:b"):
        drive.drive.access[name] = Access.of("user:bob")

    report = drive.targeted("drive:a")

    assert report.ok and report.kind == "notified"
    assert drive.drive.item_reads == [["drive:a"]]
    assert report.counts["revoked"] == 1 and report.counts["changed"] == 1
    assert drive.found("alice") == {"drive:b"}  # b waits for its own notice or the full sync
    assert drive.found("bob") == {"drive:a", "drive:b"}
    assert report.to_dict()["kind"] == "notified"


def served_past_the_sla_on_notified_syncs_alone(
    drive: Drive, engine: type[SourceSync] = SourceSync
) -> bool:
    """A full sync at T0, then only targeted syncs until past the SLA: does alice still
    find anything? (A partial read says nothing about the other items.)"""
    drive.sync()
    for _ in range(4):
        drive.clock.advance(SLA_S / 3)
        assert drive.targeted("drive:a", engine=engine).ok
    return bool(drive.found("alice"))


def test_a_targeted_sync_never_advances_the_corpus_or_source_time(drive: Drive) -> None:
    assert not served_past_the_sla_on_notified_syncs_alone(drive)
    assert drive.app.store.last_acl_syncs()["board"] == T0
    assert StateTable(drive.app.store).get("drive").permission_synced_at == T0
    report = drive.targeted("drive:a")
    assert not report.corpus_sync_advanced and not report.cursor_advanced
    assert source_status(drive.app)[0]["corpus_failing_closed"]


class StampsTheCorpus(SourceSync):
    """Leaky: a targeted sync that counts as a fresh sync of the whole corpus."""

    def _targeted(self, report: SyncReport, reader: ItemPermissions, named: list[str]) -> None:
        super()._targeted(report, reader, named)
        self.runtime.store.record_acl_sync(self.corpus.name, self.runtime.clock())


def test_reverse_proof_a_targeted_sync_that_stamps_the_corpus_is_caught(drive: Drive) -> None:
    assert served_past_the_sla_on_notified_syncs_alone(drive, StampsTheCorpus)


def alice_reads_a_after_a_failed_targeted_sync(
    drive: Drive, engine: type[SourceSync] = SourceSync
) -> bool:
    drive.sync()
    drive.drive.access["drive:a"] = Access.of("user:bob")  # revoked at the source …
    drive.drive.fail = True  # … which then cannot be read
    report = drive.targeted("drive:a", engine=engine)
    assert not report.ok and "not answering" in (report.error or "")
    return "drive:a" in drive.found("alice")


def test_a_source_error_during_a_targeted_sync_leaves_the_item_visible_to_nobody(
    drive: Drive,
) -> None:
    assert not alice_reads_a_after_a_failed_targeted_sync(drive)
    assert drive.found("bob") == {"drive:b"}  # a: nobody; b was not named, so untouched
    (row, _) = source_status(drive.app)
    assert row["state"] == "failing" and "notified sync" in row["last_error"]
    (example,) = row["visible_to_nobody_examples"]
    assert example["doc_id"] == "drive:a" and "could not be read" in example["reason"]
    assert any("could not be read" in w for w in drive.app.explain("bob", "drive:a")["warnings"])

    drive.drive.fail = False  # the next read puts the source's answer back
    assert drive.targeted("drive:a").ok
    assert drive.found("bob") == {"drive:a", "drive:b"} and drive.found("alice") == {"drive:b"}


class KeepsTheOldAcl(SourceSync):
    """Leaky: a targeted sync that gives up on a source error and keeps the old ACL."""

    def _targeted(self, report: SyncReport, reader: ItemPermissions, named: list[str]) -> None:
        list(reader.permissions_of(named))
        super()._targeted(report, reader, named)


def test_reverse_proof_keeping_the_old_acl_on_error_is_caught(drive: Drive) -> None:
    assert alice_reads_a_after_a_failed_targeted_sync(drive, KeepsTheOldAcl)


def test_an_item_the_source_no_longer_answers_for_is_visible_to_nobody(drive: Drive) -> None:
    drive.sync()
    del drive.drive.documents["drive:a"]  # gone at the source; the content sync removes it
    report = drive.targeted("drive:a")
    assert report.ok and report.counts["blocked"] == 1
    assert drive.found("alice") == {"drive:b"}
    stored = drive.app.store.get_document("drive:a")
    assert stored is not None and stored.acl == frozenset()
    assert NOT_ANSWERED in json.dumps(source_status(drive.app)[0]["visible_to_nobody_examples"])


def site_document_after_drive_names_it(drive: Drive, engine: type[SourceSync]) -> frozenset[str]:
    """``drive`` is notified about a document ``site`` owns (and says nobody may read it)."""
    drive.site.put(doc("web:minutes", "user:alice"))
    drive.sync("site")
    drive.drive.put(doc("web:minutes", "user:bob"))
    drive.targeted("web:minutes", engine=engine)
    stored = drive.app.store.get_document("web:minutes")
    assert stored is not None
    return stored.acl


def test_a_targeted_sync_changes_only_its_own_sources_documents(drive: Drive) -> None:
    assert site_document_after_drive_names_it(drive, SourceSync) == {"user:alice"}
    assert drive.drive.item_reads == []  # not even read: it is not this source's


class IgnoresOwnership(SourceSync):
    """Leaky: a targeted sync that writes whatever document the notice names."""

    def owned(self) -> dict[str, Any]:
        return {d.doc_id: d for d in self.runtime.store.list_documents()}


def test_reverse_proof_a_targeted_sync_that_ignores_ownership_is_caught(drive: Drive) -> None:
    assert site_document_after_drive_names_it(drive, IgnoresOwnership) == {"user:bob"}


class Overwrites(SourceSync):
    """Leaky: a full permission sync blind to what a notified sync read after it began."""

    def owned(self) -> dict[str, Any]:
        return {
            doc_id: replace(d, extra={k: v for k, v in d.extra.items() if k != READ_AT_KEY})
            for doc_id, d in super().owned().items()
        }


def alice_reads_a_after_a_notice_during_a_full_sync(
    drive: Drive, full: type[SourceSync] = SourceSync
) -> bool:
    """A full sync reads ``a`` (alice may read it), then — while it reads the rest — ``a``
    is revoked and a notified sync applies that; then the full sync applies what it read."""
    drive.sync()
    listing = drive.drive.permission_changes

    def slow_listing(cursor: str | None) -> Iterator[PermissionPage]:
        (page,) = listing(cursor)  # read before the revocation
        drive.clock.advance(30)
        drive.drive.access["drive:a"] = Access.of("user:bob")
        assert drive.targeted("drive:a").ok
        drive.clock.advance(30)
        yield page

    drive.drive.permission_changes = slow_listing  # type: ignore[method-assign]
    report = full(drive.app, drive.app.settings.sources["drive"], drive.drive).permissions()
    assert report.ok and report.corpus_sync_advanced
    return "drive:a" in drive.found("alice")


def test_a_full_sync_never_undoes_a_notified_sync_that_read_after_it_began(
    drive: Drive,
) -> None:
    assert not alice_reads_a_after_a_notice_during_a_full_sync(drive)


def test_reverse_proof_a_full_sync_that_overwrites_fresher_reads_is_caught(
    drive: Drive,
) -> None:
    assert alice_reads_a_after_a_notice_during_a_full_sync(drive, Overwrites)


def test_a_connector_without_item_permissions_gets_a_full_permission_sync(
    drive: Drive,
) -> None:
    class Listing:
        """Only the Connector methods: no permissions_of."""

        def __init__(self, inner: MemoryConnector) -> None:
            self.content_changes = inner.content_changes
            self.fetch = inner.fetch
            self.permission_changes = inner.permission_changes
            self.groups = inner.groups
            self.close = inner.close

    drive.sync()
    drive.drive.access["drive:b"] = Access.of("user:bob")
    drive.clock.advance(5)
    listing = Listing(drive.drive)
    assert not isinstance(listing, ItemPermissions)
    report = SourceSync(drive.app, drive.app.settings.sources["drive"], listing).targeted(
        ["drive:a"]
    )
    assert report.ok and report.kind == "permissions" and report.corpus_sync_advanced
    assert drive.found("alice") == {"drive:a"}  # b's revocation came with the full listing


def test_a_refused_notice_cannot_name_changes() -> None:
    with pytest.raises(ValueError, match="cannot name changes"):
        Notice(status=401, doc_ids=frozenset({"drive:a"}))
    with pytest.raises(ValueError, match="cannot name changes"):
        Notice(status=400, doc_ids=None)
    assert not Notice.refuse(401, "no").changes and not Notice.reply("token").changes


# --------------------------------------------------------------------------- the scheduler


def notice(*doc_ids: str, content: bool = False) -> Notice:
    return Notice.changed(doc_ids, content=content)


@pytest.fixture
def scheduler(drive: Drive, monkeypatch: pytest.MonkeyPatch) -> Scheduler:
    """A scheduler whose ``memory`` sources are the fixture's connectors, after its first
    tick (every sync due at once) has run."""

    def build(context: SourceContext) -> Connector:
        return drive.drive if context.source.name == "drive" else drive.site

    monkeypatch.setitem(registry._KINDS._factories, "memory", build)
    ticking = Scheduler(drive.app, sources=["drive"])
    assert all(r.ok for r in ticking.tick())
    return ticking


def kinds(reports: list[SyncReport]) -> list[str]:
    return [r.kind for r in reports]


def test_notices_gather_for_a_second_into_one_targeted_sync(
    drive: Drive, scheduler: Scheduler
) -> None:
    drive.drive.access["drive:a"] = Access.of("user:bob")
    assert scheduler.notify("drive", notice("drive:a"))
    assert scheduler.next_due() == T0 + timedelta(seconds=1)  # not the 20 s interval
    drive.clock.advance(0.5)
    assert scheduler.notify("drive", notice("drive:b"))
    assert scheduler.tick() == [] and drive.found("alice") == {"drive:a", "drive:b"}

    drive.clock.advance(0.5)
    reports = scheduler.tick()

    assert kinds(reports) == ["notified"] and reports[0].ok
    assert drive.drive.item_reads == [["drive:a", "drive:b"]]
    assert drive.found("alice") == {"drive:b"}
    assert scheduler.tick() == []  # taken once
    assert drive.app.store.last_acl_syncs()["board"] == T0


def test_notified_work_runs_ahead_of_due_content_work(drive: Drive, scheduler: Scheduler) -> None:
    drive.clock.advance(29.5)
    scheduler.notify("drive", notice("drive:a"))
    drive.clock.advance(1)  # the content sync (every 30 s) and the notice are both due
    assert kinds(scheduler.tick()) == ["notified", "content", "permissions"]


def test_a_notice_that_says_content_changed_makes_the_content_sync_due(
    drive: Drive, scheduler: Scheduler
) -> None:
    drive.drive.put(doc("drive:a", "user:bob"))
    scheduler.notify("drive", notice("drive:a", content=True))
    drive.clock.advance(1)
    assert kinds(scheduler.tick()) == ["notified", "content"]
    assert drive.found("alice") == {"drive:b"}


def test_a_notice_that_does_not_say_what_changed_runs_a_full_permission_sync(
    drive: Drive, scheduler: Scheduler
) -> None:
    drive.drive.access["drive:b"] = Access.of("user:bob")
    scheduler.notify("drive", notice("drive:a"))
    scheduler.notify("drive", Notice.unknown_changes())
    drive.clock.advance(1)
    (report,) = scheduler.tick()
    assert report.kind == "permissions" and report.ok and report.corpus_sync_advanced
    assert drive.drive.item_reads == [] and drive.found("alice") == {"drive:a"}


def test_too_many_pending_items_become_one_full_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notifications, "MAX_PENDING_ITEMS", 3)
    queue = NoticeQueue()
    queue.add("drive", notice("a", "b"), T0)
    queue.add("drive", notice("c", "d"), T0)
    queue.add("drive", notice("e"), T0)
    ((name, pending),) = queue.take_due(T0 + timedelta(seconds=1))
    assert name == "drive" and pending.full and not pending.doc_ids


def test_a_notice_for_a_source_the_scheduler_does_not_run_is_not_taken(
    drive: Drive, scheduler: Scheduler
) -> None:
    assert not scheduler.notify("site", notice("web:minutes"))
    assert not scheduler.notify("elsewhere", notice("x"))
    assert scheduler.notices.next_due() is None


def test_a_failing_notified_sync_is_reported_and_the_scheduled_sync_still_runs(
    drive: Drive, scheduler: Scheduler
) -> None:
    drive.drive.fail = True
    scheduler.notify("drive", notice("drive:a"))
    drive.clock.advance(1)
    (report,) = scheduler.tick()
    assert not report.ok and report.kind == "notified"
    drive.drive.fail = False
    drive.clock.advance(20)
    assert kinds(scheduler.tick()) == ["permissions"]
    assert source_status(drive.app)[0]["state"] == "ok"
    assert drive.found("alice") == {"drive:a", "drive:b"}  # the full sync read a again


# --------------------------------------------------------------------------- the receiver


class Quiet:
    """A connector that takes no notifications (only the Connector methods)."""

    def content_changes(self, cursor: str | None) -> Iterator[Any]:
        return iter(())

    def fetch(self, item: Any) -> Any:
        raise SourceError("nothing to fetch")

    def permission_changes(self, cursor: str | None) -> Iterator[Any]:
        return iter(())

    def groups(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_the_receiver_answers_none_for_unknown_and_silent_sources_and_forwards_the_rest(
    drive: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(context: SourceContext) -> Connector:
        return drive.drive if context.source.name == "drive" else Quiet()

    monkeypatch.setitem(registry._KINDS._factories, "memory", build)
    receiver = NotificationReceiver(drive.app)
    forwarded: list[tuple[str, Notice]] = []
    body = json.dumps({"changed": ["drive:a"]}).encode()
    token = {TOKEN_HEADER: SECRET}
    assert receiver.receive("site", token, {}, body) is None
    assert receiver.receive("nowhere", token, {}, body) is None

    waiting = receiver.receive("drive", token, {}, body)
    assert waiting is not None and waiting.status == 503  # no scheduler attached yet

    receiver.attach(lambda name, n: forwarded.append((name, n)) is None)
    accepted = receiver.receive("drive", token, {}, body)
    refused = receiver.receive("drive", {TOKEN_HEADER: "guess"}, {}, body)
    assert accepted == Notice.changed(["drive:a"])
    assert refused is not None and refused.status == 401 and SECRET not in refused.body
    assert forwarded == [("drive", Notice.changed(["drive:a"]))]
    receiver.close()
