"""The revocation SLA counts from the moment a permission sync began reading, not from when it
finished: a revocation made at the source just after an item was read is only seen by the
next sync, so a slow sync stamped at its end would stretch the window by its own length.

Every connector goes through the engine's stamp, so the engine is tested here with a slow
source; ``acl sync`` stamps the export's read time (``--read-at``, else the file's
modification time)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clearance.app import Clearance
from clearance.errors import DirectoryError
from clearance.model import Sensitivity
from clearance.sources.base import Access, PermissionChange, PermissionPage, SourceDocument
from clearance.sources.memory import MemoryConnector
from clearance.sources.service import source_summary
from clearance.sources.sync import SourceSync, SyncReport
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

from .conftest import Clock

SLA_S = 120
CALL_S = 3.0  # each permission read takes this long at the source
ITEMS = 45  # 45 reads of 3 s: a sync of 135 s, longer than the SLA


class SlowSource(MemoryConnector):
    """A source whose permission reads each take ``CALL_S`` on the engine's clock; the target
    item is read first, and alice's access to it is revoked at the source right after."""

    def __init__(self, clock: Clock) -> None:
        super().__init__("drive")
        self.clock = clock
        self.revoked_at: datetime | None = None

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        for n, (doc_id, access) in enumerate(sorted(self.access.items())):
            self.clock.advance(CALL_S)
            yield PermissionPage(
                [PermissionChange(doc_id, access)], cursor=None, snapshot=True, last=n == ITEMS - 1
            )
            if doc_id == "drive:a-target":
                self.revoked_at = self.clock.now
                self.access[doc_id] = Access.of("user:bob")


class StampedAtEnd(SourceSync):
    """The leaky engine: stamps the corpus when the sync finished writing."""

    def _apply(
        self,
        report: SyncReport,
        changes: Mapping[str, PermissionChange],
        cursor: str | None,
        snapshot: bool,
        read_began: datetime,
    ) -> None:
        super()._apply(report, changes, cursor, snapshot, self.runtime.clock())


def _document(doc_id: str, access: Access) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        version="1",
        title=doc_id,
        uri=f"https://drive.test/{doc_id}",
        access=access,
        text=f"Quarterly bonus pool notes for {doc_id}.",
        sensitivity=Sensitivity.INTERNAL,
    )


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[Clearance, Clock]]:
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {"revocation_sla": f"{SLA_S}s"}},
            "sources": {"drive": {"kind": "memory", "corpus": "docs"}},
        },
    )
    clock = Clock()
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None, clock=clock)
    users = [{"id": u, "active": True, "attributes": {}} for u in ("alice", "bob")]
    engine.sync_directory_data(json.dumps({"users": users, "groups": []}), "directory.json")
    try:
        yield engine, clock
    finally:
        engine.close()


def alice_reads_after_the_sla(engine: Clearance, clock: Clock, sync: type[SourceSync]) -> bool:
    """Sync a slow source whose target is revoked for alice right after it was read; then,
    one second past the SLA measured from that revocation, can alice still find it?"""
    source = SlowSource(clock)
    source.put(_document("drive:a-target", Access.of("user:alice")))
    for n in range(1, ITEMS):
        source.put(_document(f"drive:other-{n:02}", Access.of("user:bob")))
    settings = engine.settings.sources["drive"]
    (content,) = sync(engine, settings, source).run(permissions=False)
    assert content.ok, content.error
    began = clock.now
    report = sync(engine, settings, source).permissions()
    assert report.ok, report.error
    assert source.revoked_at is not None and clock.now - began >= timedelta(seconds=ITEMS * CALL_S)
    clock.now = source.revoked_at + timedelta(seconds=SLA_S + 1)
    hits = engine.search("alice", "bonus pool").hits
    return any(h.document.doc_id == "drive:a-target" for h in hits)


def test_a_revocation_after_an_item_was_read_takes_effect_within_the_sla(
    app: tuple[Clearance, Clock],
) -> None:
    engine, clock = app
    began = clock.now
    assert not alice_reads_after_the_sla(engine, clock, SourceSync)
    # the corpus and the source carry the moment reading began, not the end of the sync
    assert engine.store.last_acl_syncs()["docs"] == began
    (state,) = source_summary(engine)
    assert state["last_permission_sync"] == began.isoformat()


def test_reverse_proof_a_sync_stamped_at_its_end_serves_a_revoked_user_past_the_sla(
    app: tuple[Clearance, Clock],
) -> None:
    engine, clock = app
    assert alice_reads_after_the_sla(engine, clock, StampedAtEnd)


# ---------------------------------------------------------------------- acl sync


@pytest.fixture
def hand_app(tmp_path: Path) -> Iterator[tuple[Clearance, Clock]]:
    settings = make_settings(tmp_path, {"corpora": {"hr": {"revocation_sla": "15m"}}})
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None, clock=clock)
    engine.sync_directory_data(
        json.dumps({"users": [{"id": "alice", "active": True, "attributes": {}}], "groups": []}),
        "directory.json",
    )
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pay.md").write_text("# Pay bands\n\nBand C tops out at 91,000.\n")
    (folder / "_meta.json").write_text(
        json.dumps({"corpus": "hr", "acl": ["user:alice"], "sensitivity": "INTERNAL"})
    )
    report = engine.ingest([folder])
    assert not report.failed, report.failed
    try:
        yield engine, clock
    finally:
        engine.close()


def _acl_file(tmp_path: Path, written: datetime) -> Path:
    path = tmp_path / "acls.jsonl"
    doc_id = "files:pay.md"
    path.write_text(json.dumps({"doc_id": doc_id, "acl": ["user:alice"]}) + "\n")
    os.utime(path, (written.timestamp(), written.timestamp()))
    return path


def test_an_acl_file_counts_as_read_when_it_was_written(
    hand_app: tuple[Clearance, Clock], tmp_path: Path
) -> None:
    engine, clock = hand_app
    written = clock.now - timedelta(minutes=10)
    report = engine.sync_acls(_acl_file(tmp_path, written), "hr")
    assert report.synced_at == written.isoformat()
    assert engine.store.last_acl_syncs()["hr"] == written


def test_acl_sync_read_at_stamps_the_export_and_refuses_the_future(
    hand_app: tuple[Clearance, Clock], tmp_path: Path
) -> None:
    engine, clock = hand_app
    path = _acl_file(tmp_path, clock.now)
    began = clock.now - timedelta(minutes=12)
    report = engine.sync_acls(path, "hr", read_at=began.isoformat())
    assert engine.store.last_acl_syncs()["hr"] == began
    assert report.synced_at == began.isoformat()
    later = (clock.now + timedelta(minutes=1)).isoformat()
    with pytest.raises(DirectoryError, match="in the future"):
        engine.sync_acls(path, "hr", read_at=later)
    with pytest.raises(DirectoryError, match="no time zone"):
        engine.sync_acls(path, "hr", read_at="2025-03-01T09:00:00")
    with pytest.raises(DirectoryError, match="not an ISO 8601 time"):
        engine.sync_acls(path, "hr", read_at="yesterday")
    assert engine.store.last_acl_syncs()["hr"] == began  # refused syncs changed nothing


def test_an_old_export_past_the_sla_fails_closed(
    hand_app: tuple[Clearance, Clock], tmp_path: Path
) -> None:
    """An export read 20 minutes ago is already past a 15-minute SLA: applying it does not
    make the corpus fresh."""
    engine, clock = hand_app
    path = _acl_file(tmp_path, clock.now)
    engine.sync_acls(path, "hr", read_at=(clock.now - timedelta(minutes=20)).isoformat())
    assert engine.search("alice", "pay bands").hits == []
    engine.sync_acls(path, "hr", read_at=(clock.now - timedelta(minutes=1)).isoformat())
    assert [h.document.doc_id for h in engine.search("alice", "pay bands").hits] == ["files:pay.md"]
