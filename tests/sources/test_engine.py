"""The sync engine with the in-memory connector: sharing modes that cannot be represented,
groups from the source, and fetches only for changed versions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clearance.app import Clearance
from clearance.config import CorpusSettings
from clearance.model import Sensitivity
from clearance.sources.base import Access, SourceDocument
from clearance.sources.memory import MemoryConnector
from clearance.sources.sync import SourceSync, resolve_access
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Clearance]:
    settings = make_settings(
        tmp_path,
        {
            "corpora": {
                "board": {"max_sensitivity": "CONFIDENTIAL"},
                "www": {"max_sensitivity": "PUBLIC"},
            },
            "sources": {
                "drive": {"kind": "memory", "corpus": "board"},
                "site": {"kind": "memory", "corpus": "www"},
            },
        },
    )
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None)
    directory = {
        "users": [{"id": "alice", "active": True, "attributes": {}}],
        "groups": [],
    }
    engine.sync_directory_data(json.dumps(directory), "directory.json")
    try:
        yield engine
    finally:
        engine.close()


def doc(
    doc_id: str, access: Access, version: str = "1", text: str = "Board minutes."
) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        version=version,
        title=doc_id,
        uri=f"https://x.test/{doc_id}",
        access=access,
        text=text,
        sensitivity=Sensitivity.PUBLIC,
    )


def sync(app: Clearance, name: str, connector: MemoryConnector) -> None:
    reports = SourceSync(app, app.settings.sources[name], connector).run()
    assert all(r.ok for r in reports), [r.error for r in reports]


def test_an_anyone_with_link_file_in_a_confidential_corpus_is_visible_to_nobody(
    app: Clearance,
) -> None:
    drive = MemoryConnector("drive")
    drive.put(doc("gdrive:minutes", Access(frozenset(), anyone_with_link=True)))
    sync(app, "drive", drive)

    document = app.store.get_document("gdrive:minutes")
    assert document is not None and document.acl == frozenset()
    assert app.search("alice", "minutes").hits == []
    assert any(
        "anyone who has the link" in w for w in app.explain("alice", "gdrive:minutes")["warnings"]
    )


def test_reverse_proof_the_same_link_in_a_public_corpus_reaches_everyone(app: Clearance) -> None:
    site = MemoryConnector("site")
    site.put(doc("web:minutes", Access(frozenset(), anyone_with_link=True)))
    sync(app, "site", site)
    assert [h.document.doc_id for h in app.search("alice", "minutes").hits] == ["web:minutes"]


def test_resolving_access_never_widens() -> None:
    confidential = CorpusSettings("c", max_sensitivity=Sensitivity.CONFIDENTIAL)
    assert resolve_access(Access.nobody("odd principal type"), confidential) == (
        frozenset(),
        "odd principal type",
    )
    assert resolve_access(Access.of("group:a"), confidential) == (frozenset({"group:a"}), None)
    with pytest.raises(ValueError, match="bad principal"):
        Access.of("domain:example.com")


def test_a_user_removed_from_a_group_upstream_loses_access_after_the_next_sync(
    app: Clearance,
) -> None:
    drive = MemoryConnector("drive")
    drive.group_members = {"board-readers": frozenset({"user:alice"})}
    drive.put(doc("gdrive:minutes", Access.of("group:board-readers")))
    sync(app, "drive", drive)
    assert [h.document.doc_id for h in app.search("alice", "minutes").hits] == ["gdrive:minutes"]

    drive.group_members = {"board-readers": frozenset()}
    sync(app, "drive", drive)
    assert app.search("alice", "minutes").hits == []

    drive.group_members = {}
    sync(app, "drive", drive)
    assert "board-readers" not in app.directory.groups  # the source's group is gone too


def test_only_changed_versions_are_fetched(app: Clearance) -> None:
    drive = MemoryConnector("drive")
    drive.put(doc("gdrive:minutes", Access.of("user:alice")))
    sync(app, "drive", drive)
    drive.access["gdrive:minutes"] = Access.of("user:bob")
    sync(app, "drive", drive)
    assert drive.fetched == 1
    document = app.store.get_document("gdrive:minutes")
    assert document is not None and document.acl == {"user:bob"}
    drive.put(doc("gdrive:minutes", Access.of("user:bob"), version="2", text="New minutes."))
    sync(app, "drive", drive)
    assert drive.fetched == 2
