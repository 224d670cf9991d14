"""What the Graph, Google Drive and Confluence connector tests share: an index over one source
with a clock the test moves, a sync through the engine that keeps every report, search as a
user, and the deliberately broken connector methods their reverse proofs swap in."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from clearance.app import Clearance
from clearance.errors import SourceError
from clearance.sources.base import Access, Connector
from clearance.sources.sync import SourceSync, SyncReport
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

from .conftest import Clock


class SyncedSource:
    """A source synced through the engine into a real index. A subclass names the source
    (``source``) and builds its connector; ``app``, ``waits`` (the connector's back-off
    sleeps) and ``reports`` are its fields."""

    source: ClassVar[str]
    app: Clearance
    clock: Clock
    waits: list[float]
    reports: list[SyncReport]

    def connector(self) -> Connector:
        raise NotImplementedError

    def sync(self, *, content: bool = True, permissions: bool = True) -> list[SyncReport]:
        connector = self.connector()
        try:
            engine = SourceSync(self.app, self.app.settings.sources[self.source], connector)
            reports = engine.run(content=content, permissions=permissions)
        finally:
            connector.close()
        self.reports.extend(reports)
        return reports

    def synced(self, **kwargs: bool) -> None:
        reports = self.sync(**kwargs)
        assert all(r.ok for r in reports), [r.error for r in reports]

    def found(self, who: str, word: str) -> set[str]:
        """Documents whose hits for ``who`` contain ``word``."""
        hits = self.app.search(who, word).hits
        return {h.document.doc_id for h in hits if word.lower() in h.chunk.text.lower()}


@contextmanager
def indexed_app(
    tmp_path: Path,
    source: str,
    config: dict[str, Any],
    *,
    people: Iterable[str],
    staff_group: bool,
    sensitivity: str = "CONFIDENTIAL",
    sla: str = "1h",
) -> Iterator[tuple[Clearance, Clock]]:
    """An app whose one corpus ``docs`` (revocation SLA ``sla``) is fed by ``source``, and
    whose directory knows ``people`` — all members of ``group:all-staff`` if ``staff_group``."""
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {"revocation_sla": sla, "max_sensitivity": sensitivity}},
            "sources": {source: {"corpus": "docs", **config}},
        },
    )
    clock = Clock()
    app = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None, clock=clock)
    users = list(people)
    directory: dict[str, Any] = {
        "users": [{"id": u, "active": True, "attributes": {}} for u in users]
    }
    if staff_group:
        directory["groups"] = [{"id": "all-staff", "members": [f"user:{u}" for u in users]}]
    app.sync_directory_data(json.dumps(directory), "directory.json")
    try:
        yield app, clock
    finally:
        app.close()


def acl_state(app: Clearance) -> tuple[dict[str, frozenset[str]], datetime]:
    """Every document's ACL and the ``docs`` corpus's ACL-sync time: what a permission sync
    that fails halfway must leave as it found them."""
    acls = {d.doc_id: frozenset(d.acl) for d in app.store.list_documents()}
    return acls, app.store.last_acl_syncs()["docs"]


def remember_first_answers(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
    """Break ``cls.name`` so that it answers each argument as it first did: a connector that
    keeps permissions or group members it has already read."""
    original: Callable[[Any, str], Any] = getattr(cls, name)
    remembered: dict[str, Any] = {}

    def stale(self: Any, key: str) -> Any:
        if key not in remembered:
            remembered[key] = original(self, key)
        return remembered[key]

    monkeypatch.setattr(cls, name, stale)


def shrug_off_source_errors(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
    """Break ``cls.name`` so that permissions it cannot read become access for nobody instead
    of failing the sync."""
    original: Callable[[Any, str], Access | None] = getattr(cls, name)

    def shrugging(self: Any, key: str) -> Access | None:
        try:
            return original(self, key)
        except SourceError:
            return Access.nobody("could not read")

    monkeypatch.setattr(cls, name, shrugging)
