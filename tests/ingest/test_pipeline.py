"""Ingestion through ``Clearance.ingest`` on real files into a real SQLite index."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearance.app import Clearance
from clearance.config import Settings
from clearance.ingest.pipeline import IngestReport
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore


class CountingEmbedder:
    """The hashing fake, recording every text it was asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=32)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def meta(path: Path, data: dict[str, Any]) -> Path:
    """Write a sidecar for ``path``."""
    return write(path.with_name(path.name + ".meta.json"), json.dumps(data))


def statuses(report: IngestReport) -> dict[str, str]:
    return {r.source: r.status for r in report.results}


def ingested_at(store: SQLiteStore, doc_id: str) -> float:
    with sqlite3.connect(store.path) as db:
        row = db.execute("SELECT ingested_at FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
    return float(row[0])


def vector_rows(store: SQLiteStore) -> list[tuple[str, bytes]]:
    with sqlite3.connect(store.path) as db:
        return db.execute(
            "SELECT c.chunk_id, v.vec FROM vectors v JOIN chunks c ON c.id = v.chunk ORDER BY 1"
        ).fetchall()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A small folder of real files, readable by everyone unless a test says otherwise."""
    root = tmp_path / "docs"
    write(root / "_meta.json", json.dumps({"acl": ["everyone"], "corpus": "wiki"}))
    write(
        root / "travel.md",
        "# Travel policy\n\nBook trains in Tokyo.\n\n## Limits\n\nHotels up to 200 EUR.\n",
    )
    write(root / "notes" / "plain.txt", "Plain text about the cafeteria menu.\nSecond line.\n")
    write(root / "notes" / "sales.csv", "region,revenue\nEMEA,100\nAPAC,200\n")
    write(
        root / "intranet.html",
        "<html><head><title>Intranet</title></head><body><h1>Welcome</h1>"
        "<p>Parking rules for visitors.</p><script>secret()</script></body></html>",
    )
    return root


@pytest.fixture
def make_app(settings: Settings, store: SQLiteStore) -> Callable[..., Clearance]:
    def factory(embedder: Any = None, app_settings: Settings | None = None) -> Clearance:
        return Clearance(app_settings or settings, store, embedder=embedder)

    return factory


# --------------------------------------------------------------------------- formats and ids


def test_a_folder_of_real_files_is_ingested_with_default_doc_ids(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    report = make_app().ingest([docs])

    assert statuses(report) == {
        "intranet.html": "added",
        "notes/plain.txt": "added",
        "notes/sales.csv": "added",
        "travel.md": "added",
    }
    assert report.failed == []
    by_id = {d.doc_id: d for d in store.list_documents()}
    assert set(by_id) == {
        "files:intranet.html",
        "files:notes/plain.txt",
        "files:notes/sales.csv",
        "files:travel.md",
    }
    assert {d: by_id[d].format for d in by_id} == {
        "files:intranet.html": "html",
        "files:notes/plain.txt": "txt",
        "files:notes/sales.csv": "csv",
        "files:travel.md": "md",
    }
    travel = by_id["files:travel.md"]
    assert travel.title == "Travel policy"  # from the heading
    assert by_id["files:notes/plain.txt"].title == "plain"  # from the file name
    assert by_id["files:intranet.html"].title == "Intranet"
    assert travel.corpus == "wiki" and travel.acl == frozenset({"everyone"})
    assert travel.source_system == "files" and travel.version == 1
    assert travel.sensitivity is Sensitivity.INTERNAL
    assert travel.path == str(docs / "travel.md")
    assert [c.locator for c in store.get_chunks("files:travel.md")] == [
        "section=Travel policy",
        "section=Travel policy > Limits",
    ]
    html_text = " ".join(c.text for c in store.get_chunks("files:intranet.html"))
    assert "Parking rules" in html_text and "secret()" not in html_text
    assert store.get_chunks("files:notes/sales.csv")[0].text.startswith("region | revenue")
    assert report.to_dict()["chunks"] == store.stats().chunks


def test_a_file_passed_directly_is_named_by_its_file_name_and_source_system(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    meta(docs / "notes" / "plain.txt", {"source_system": "share"})

    report = make_app().ingest([docs / "notes" / "plain.txt"])

    assert statuses(report) == {"plain.txt": "added"}
    doc = store.get_document("share:plain.txt")
    assert doc is not None and doc.source_system == "share"
    # docs/_meta.json lies above the ingested file's folder: it does not apply
    assert doc.acl == frozenset()


def test_a_configured_root_lets_its_meta_json_apply_to_files_below_it(
    docs: Path, settings_factory: Any, store: SQLiteStore
) -> None:
    app = Clearance(settings_factory({"ingest": {"roots": [str(docs)]}}), store, embedder=None)

    app.ingest([docs / "notes" / "plain.txt"])

    doc = store.get_document("files:plain.txt")
    assert doc is not None and doc.acl == frozenset({"everyone"})


def test_corpus_option_applies_only_where_metadata_names_none(
    tmp_path: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    a = write(tmp_path / "in" / "a.txt", "alpha text")
    b = write(tmp_path / "in" / "b.txt", "beta text")
    meta(b, {"corpus": "hr"})

    make_app().ingest([tmp_path / "in"], corpus="ops")

    assert store.get_document("files:a.txt").corpus == "ops"  # type: ignore[union-attr]
    assert store.get_document("files:b.txt").corpus == "hr"  # type: ignore[union-attr]
    assert a.exists()


def test_ingest_records_an_acl_sync_for_each_corpus_written(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    assert store.last_acl_syncs() == {}
    make_app().ingest([docs])
    assert set(store.last_acl_syncs()) == {"wiki"}


def test_a_page_of_front_matter_only_does_not_hold_its_corpus_back(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    """A handbook's collection pages hold front matter and no text. Failing them kept the
    corpus's sync time from advancing, so the whole handbook failed closed for everyone:
    they are skipped, saying why, and the corpus syncs."""
    write(docs / "patterns.md", "---\nlayout: collection\ntitle: Patterns\n---\n")
    report = make_app().ingest([docs])
    assert statuses(report)["patterns.md"] == "skipped"
    assert report.failed == []
    assert set(store.last_acl_syncs()) == {"wiki"}
    assert store.get_document("files:patterns.md") is None


def test_a_new_file_that_fails_does_not_hold_its_corpus_back(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    """One unreadable new file left nothing in the index whose ACL could go stale: it is
    reported, and the rest of its corpus (a quarter's filings beside it) syncs and serves."""
    write(docs / "broken.pdf", b"%PDF-1.4\nnot a pdf at all")
    report = make_app().ingest([docs])
    assert statuses(report)["broken.pdf"] == "failed"
    assert set(store.last_acl_syncs()) == {"wiki"}
    assert not any(w.startswith("corpus ") for w in report.warnings)


def check_an_indexed_file_that_fails_holds_its_corpus_back(
    docs: Path, settings: Settings, store: SQLiteStore
) -> None:
    now = [datetime(2026, 3, 2, 9, 0, tzinfo=UTC)]
    app = Clearance(settings, store, embedder=None, clock=lambda: now[0])
    app.ingest([docs])
    synced = store.last_acl_syncs()["wiki"]
    # travel.md's ACL is narrowed at the source, and the file can no longer be read: its old
    # version stays indexed under the old ACL, so the corpus's ACLs were not all re-read.
    write(docs / "travel.md", "# Travel policy\n\nHotels up to 200 €.\n".encode("cp1252"))
    write(docs / "travel.md.meta.json", json.dumps({"acl": ["group:legal"]}))
    now[0] += timedelta(minutes=10)
    report = app.ingest([docs])
    assert statuses(report)["travel.md"] == "failed"
    assert store.get_document("files:travel.md") is not None
    assert store.last_acl_syncs()["wiki"] == synced
    assert any("because a file failed" in w for w in report.warnings)


def test_an_indexed_file_that_fails_holds_its_corpus_back(
    docs: Path, settings: Settings, store: SQLiteStore
) -> None:
    check_an_indexed_file_that_fails_holds_its_corpus_back(docs, settings, store)


def test_reverse_proof_a_failed_file_never_holding_its_corpus_back_is_caught(
    docs: Path, settings: Settings, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Clearance, "_held_back", lambda self, job, result: set())
    with pytest.raises(AssertionError):
        check_an_indexed_file_that_fails_holds_its_corpus_back(docs, settings, store)


def test_a_file_emptied_since_its_last_ingest_leaves_the_index(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    """The text indexed before is no longer in the file: it is removed, not served."""
    make_app().ingest([docs])
    assert store.get_document("files:travel.md") is not None
    write(docs / "travel.md", "---\ntitle: Travel policy\n---\n")
    report = make_app().ingest([docs])
    result = next(r for r in report.results if r.source == "travel.md")
    assert result.status == "skipped" and "removed" in str(result.error)
    assert store.get_document("files:travel.md") is None
    with sqlite3.connect(store.path) as db:
        left = db.execute("SELECT count(*) FROM chunks WHERE chunk_id LIKE 'files:travel.md%'")
        assert left.fetchone() == (0,)


def test_a_manifest_text_entry_is_ingested_without_a_file(
    tmp_path: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    manifest = write(
        tmp_path / "m.jsonl",
        json.dumps({"text": "Inline HR policy.", "doc_id": "hr:p1", "acl": ["group:hr"]}) + "\n",
    )

    report = make_app().ingest([], manifest=manifest)

    assert statuses(report) == {"m.jsonl:1": "added"}
    doc = store.get_document("hr:p1")
    assert doc is not None and doc.format == "txt" and doc.path is None
    assert doc.title == "hr:p1" and doc.uri == "m.jsonl:1"
    assert [c.text for c in store.get_chunks("hr:p1")] == ["Inline HR policy."]


# --------------------------------------------------------------------------- visibility


def test_a_document_without_acl_is_stored_for_nobody_and_reported(
    tmp_path: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    file = write(tmp_path / "open" / "orphan.md", "Nobody can read this orphan.")

    report = make_app().ingest([file])

    result = report.results[0]
    assert result.status == "added"
    assert result.warnings == ("no ACL: the document is visible to nobody",)
    assert report.to_dict()["results"][0]["warnings"] == list(result.warnings)
    doc = store.get_document("files:orphan.md")
    assert doc is not None and doc.acl == frozenset()


def above_ceiling_warnings(app: Clearance, folder: Path) -> list[str]:
    write(folder / "_meta.json", json.dumps({"corpus": "hb", "acl": ["group:staff"]}))
    write(folder / f"{folder.name}-leave.md", "25 days of leave a year.")  # INTERNAL: no label
    public = {"corpus": "hb", "acl": ["group:staff"], "sensitivity": "PUBLIC"}
    write(folder / "public" / "_meta.json", json.dumps(public))
    write(folder / "public" / f"{folder.name}-notice.md", "The office opens at 9.")
    report = app.ingest([folder])
    assert {r.status for r in report.results} == {"added"}, [r.error for r in report.results]
    return [w for r in report.results for w in r.warnings]


def test_a_document_above_its_corpus_ceiling_is_reported_as_visible_to_nobody(
    tmp_path: Path, settings_factory: Any, store: SQLiteStore
) -> None:
    """A corpus configured with max_sensitivity PUBLIC over pages that carry no label (so
    INTERNAL) served nothing to anyone, and ingest said nothing: search answered "no
    results" and only explain told why. The ingest now says so per file, and only for the
    page above the ceiling. With the ceiling at INTERNAL the same pages give no warning."""
    low = settings_factory({"corpora": {"hb": {"max_sensitivity": "PUBLIC"}}})
    assert above_ceiling_warnings(Clearance(low, store), tmp_path / "low") == [
        "INTERNAL is above corpus hb's max_sensitivity PUBLIC: the document is visible to nobody"
    ]
    internal = settings_factory({"corpora": {"hb": {"max_sensitivity": "INTERNAL"}}})
    assert above_ceiling_warnings(Clearance(internal, store), tmp_path / "internal") == []


def test_the_run_says_once_how_to_fix_missing_acls_and_origins(
    tmp_path: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    """A new user's first folder: the files without readers warn, and the run ends with the
    fix. The folder's files are the organisation's own (origin "human", as a filesystem
    source's are), so they need no origin; an export from a chat platform that names none
    is untrusted, and the run says how to change that. Reverse proof: the chat export's
    warning is the one the local files gave before they were taken as the organisation's."""
    first = write(tmp_path / "open" / "a.md", "Vacation is 20 days.")
    write(tmp_path / "open" / "b.md", "Sabbaticals come every three years.")
    owned = write(tmp_path / "own" / "c.md", "Our own note.")
    meta(owned, {"acl": ["everyone"], "origin": "human"})
    manifest = write(
        tmp_path / "m.jsonl",
        json.dumps(
            {"text": "Lunch is at noon.", "doc_id": "slack:c1", "source_system": "slack"}
            | {"acl": ["everyone"]}
        )
        + "\n",
    )

    report = make_app().ingest([first.parent, owned.parent], manifest=manifest)

    assert sorted(statuses(report).values()) == ["added"] * 4
    assert report.warnings == [
        '2 document(s) have no ACL and are visible to nobody: name who may read them with "acl" '
        "in a _meta.json beside them, a <file>.meta.json sidecar or the manifest "
        "(docs/metadata.md)",
        "1 document(s) from source system 'slack' name no origin and count as untrusted "
        "(marked so in citations, kept apart in prompts): if they are your organisation's "
        'own, set "origin": "human" in their metadata or [trust.source_origins] slack = '
        '"human"',
    ]
    origins = {d: store.get_document(d) for d in ("files:a.md", "files:c.md", "slack:c1")}
    assert {d: doc.origin for d, doc in origins.items() if doc is not None} == {
        "files:a.md": "human",
        "files:c.md": "human",
        "slack:c1": "unknown",
    }


def test_a_run_with_readers_and_origins_has_nothing_to_fix(
    tmp_path: Path, make_app: Callable[..., Clearance]
) -> None:
    owned = write(tmp_path / "own" / "c.md", "Our own note.")
    meta(owned, {"acl": ["everyone"], "origin": "human"})
    assert make_app().ingest([owned.parent]).warnings == []


# --------------------------------------------------------------------------- re-ingest


def test_reingesting_unchanged_files_touches_nothing(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    embedder = CountingEmbedder()
    app = make_app(embedder)
    app.ingest([docs])
    before = {d.doc_id: (d, ingested_at(store, d.doc_id)) for d in store.list_documents()}
    vectors = vector_rows(store)
    embedded = len(embedder.texts)

    report = app.ingest([docs])

    assert set(statuses(report).values()) == {"unchanged"}
    assert len(embedder.texts) == embedded
    assert vector_rows(store) == vectors
    for doc_id, (doc, at) in before.items():
        assert store.get_document(doc_id) == doc
        assert ingested_at(store, doc_id) == at


def test_changed_content_is_updated_with_a_new_version_and_old_chunks_gone(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    app = make_app(CountingEmbedder())
    app.ingest([docs])
    old = store.get_document("files:travel.md")
    write(docs / "travel.md", "# Travel policy\n\nAll travel is by bicycle now.\n")

    report = app.ingest([docs])

    assert statuses(report)["travel.md"] == "updated"
    assert statuses(report)["notes/plain.txt"] == "unchanged"
    new = store.get_document("files:travel.md")
    assert old is not None and new is not None
    assert new.version == old.version + 1 == 2
    assert new.content_hash != old.content_hash
    texts = [c.text for c in store.get_chunks("files:travel.md")]
    assert texts == ["Travel policy\nAll travel is by bicycle now."]
    assert set(store.vectors_by_text("files:travel.md")) == set(texts)
    assert store.lexical_search("hotels", _everyone(), 5) == []  # the old text is gone


def test_a_metadata_only_change_reuses_vectors(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    embedder = CountingEmbedder()
    app = make_app(embedder)
    app.ingest([docs])
    before = store.get_document("files:travel.md")
    vectors = store.vectors_by_text("files:travel.md")
    embedded = len(embedder.texts)
    meta(docs / "travel.md", {"title": "Renamed", "acl": ["group:staff"]})

    report = app.ingest([docs])

    assert statuses(report)["travel.md"] == "metadata"
    assert len(embedder.texts) == embedded  # nothing re-embedded
    after = store.get_document("files:travel.md")
    assert before is not None and after is not None
    assert after.version == before.version  # content unchanged
    assert (after.title, after.acl) == ("Renamed", frozenset({"group:staff"}))
    reused = store.vectors_by_text("files:travel.md")
    assert reused.keys() == vectors.keys()
    for text, vec in vectors.items():
        np.testing.assert_array_equal(reused[text], vec)


def test_changing_chunking_settings_rechunks_unchanged_files(
    docs: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    Clearance(settings_factory(), store, embedder=None).ingest([docs / "travel.md"])
    small = settings_factory({"ingest": {"chunk_size": 20, "chunk_overlap": 0}})

    report = Clearance(small, store, embedder=None).ingest([docs / "travel.md"])

    assert statuses(report) == {"travel.md": "metadata"}
    assert len(store.get_chunks("files:travel.md")) > 2


# --------------------------------------------------------------------------- removal


def test_a_deleted_manifest_entry_purges_the_document(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    app = make_app(CountingEmbedder())
    lines: list[dict[str, Any]] = [
        {"path": "docs/travel.md"},
        {"text": "Inline note.", "doc_id": "hr:p1", "acl": ["everyone"]},
    ]
    added = app.ingest([], manifest=write(docs.parent / "add.jsonl", _jsonl(lines)))
    assert statuses(added) == {"add.jsonl:1": "added", "add.jsonl:2": "added"}
    assert store.stats().vectors == 3
    removal: list[dict[str, Any]] = [
        {"path": "docs/travel.md", "deleted": True},
        {"doc_id": "hr:p1", "deleted": True},
    ]
    manifest = write(docs.parent / "del.jsonl", _jsonl(removal))

    report = app.ingest([], manifest=manifest)

    assert statuses(report) == {"del.jsonl:1": "deleted", "del.jsonl:2": "deleted"}
    assert [r.doc_id for r in report.results] == ["files:docs/travel.md", "hr:p1"]
    assert store.list_documents() == []
    assert (store.stats().chunks, store.stats().vectors) == (0, 0)
    again = app.ingest([], manifest=manifest)
    assert statuses(again) == {"del.jsonl:1": "absent", "del.jsonl:2": "absent"}


def _jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_remove_purges_a_document_with_chunks_and_vectors(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    app = make_app(CountingEmbedder())
    app.ingest([docs])
    total = store.stats()

    assert app.remove("files:travel.md") is True

    after = store.stats()
    assert after.documents == total.documents - 1
    assert after.chunks == total.chunks - 2
    assert after.vectors == total.vectors - 2
    assert not any(cid.startswith("files:travel.md#") for cid, _ in vector_rows(store))
    assert app.remove("files:travel.md") is False


# --------------------------------------------------------------------------- bad input


def test_bad_files_fail_one_by_one_while_the_rest_is_ingested(
    docs: Path, tmp_path: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    rng = np.random.default_rng(7)
    corrupt = write(docs / "scan.pdf", b"%PDF-1.4\n" + rng.bytes(2048))
    empty = write(docs / "empty.md", "")
    blank = write(docs / "blank.txt", "  \n\t\n")
    latin1 = write(docs / "latin1.txt", "caf\xe9".encode("latin-1"))
    odd = write(tmp_path / "loose" / "data.json", '{"a": 1}')
    bad_meta = write(docs / "typo.md", "Has a sidecar with a typo.")
    meta(bad_meta, {"acls": ["everyone"]})

    report = make_app(CountingEmbedder()).ingest([docs, odd, tmp_path / "missing.md"])

    results = {r.source: r for r in report.results}
    assert {s: r.status for s, r in results.items() if r.status == "failed"} == {
        "scan.pdf": "failed",
        "latin1.txt": "failed",
        "data.json": "failed",
        "typo.md": "failed",
        str(tmp_path / "missing.md"): "failed",
    }
    assert "scan.pdf: corrupt or unreadable PDF file" in str(results["scan.pdf"].error)
    # a file with no text holds nothing to serve: skipped, saying why, not failed
    assert (results["empty.md"].status, results["empty.md"].error) == (
        "skipped",
        "empty.md: empty document (no extractable text)",
    )
    assert results["blank.txt"].status == "skipped"
    assert "empty document" in str(results["blank.txt"].error)
    assert "latin1.txt" in str(results["latin1.txt"].error)
    assert "data.json: unsupported file type '.json'" in str(results["data.json"].error)
    assert "unknown key 'acls'" in str(results["typo.md"].error)
    assert "typo.md.meta.json" in str(results["typo.md"].error)
    assert results[str(tmp_path / "missing.md")].error == "no such file or directory"
    # the good files are in, nothing of the bad ones
    assert {d.doc_id for d in store.list_documents()} == {
        "files:intranet.html",
        "files:notes/plain.txt",
        "files:notes/sales.csv",
        "files:travel.md",
    }
    assert report.to_dict()["ok"] is False
    assert report.counts == {"added": 4, "failed": 5, "skipped": 2}
    for path in (corrupt, empty, blank, latin1):
        assert path.exists()


def test_unsupported_files_found_while_walking_are_skipped(
    docs: Path, make_app: Callable[..., Clearance], store: SQLiteStore
) -> None:
    write(docs / "image.png", b"\x89PNG\r\n\x1a\n")
    write(docs / "notes" / "archive.zip", b"PK\x03\x04")
    write(docs / ".hidden" / "secret.md", "hidden folder content")
    write(docs / ".dotfile.md", "hidden file content")

    report = make_app().ingest([docs])

    skipped = {r.source: r.error for r in report.results if r.status == "skipped"}
    assert skipped == {
        "image.png": "unsupported file type",
        "notes/archive.zip": "unsupported file type",
    }
    assert report.to_dict()["ok"] is True
    assert not any("hidden" in d.doc_id or "dotfile" in d.doc_id for d in store.list_documents())
    assert len(store.list_documents()) == 4


# --------------------------------------------------------------------------- sensitivity


def test_restricted_chunks_get_no_vector_by_default(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    rules = {"sensitivity": {"restricted_keywords": ["board only"]}}
    root = tmp_path / "in"
    write(root / "_meta.json", json.dumps({"acl": ["everyone"]}))
    write(root / "minutes.md", "Board only: the merger plan.")
    write(root / "menu.md", "Lunch menu for Friday.")
    write(root / "hr.md", "Salary bands.")
    meta(root / "hr.md", {"sensitivity": "RESTRICTED"})
    embedder = CountingEmbedder()

    Clearance(settings_factory(rules), store, embedder=embedder).ingest([root])

    assert store.get_document("files:minutes.md").sensitivity is Sensitivity.RESTRICTED  # type: ignore[union-attr]
    assert store.get_chunks("files:minutes.md")[0].sensitivity is Sensitivity.RESTRICTED
    assert [cid for cid, _ in vector_rows(store)] == ["files:menu.md#0"]
    assert embedder.texts == ["Lunch menu for Friday."]  # restricted text never embedded


def test_persist_restricted_embeds_restricted_chunks_too(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    data = {
        "sensitivity": {"restricted_keywords": ["board only"]},
        "embedding": {"persist_restricted": True},
    }
    root = tmp_path / "in"
    write(root / "_meta.json", json.dumps({"acl": ["everyone"]}))
    write(root / "minutes.md", "Board only: the merger plan.")
    write(root / "menu.md", "Lunch menu for Friday.")

    Clearance(settings_factory(data), store, embedder=CountingEmbedder()).ingest([root])

    assert [cid for cid, _ in vector_rows(store)] == ["files:menu.md#0", "files:minutes.md#0"]


def test_filename_patterns_classify_real_files(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    data = {"sensitivity": {"restricted_filename_patterns": ["*minutes*"]}}
    root = tmp_path / "in"
    write(root / "2024-Board-Minutes.md", "Ordinary words.")
    write(root / "agenda.md", "Ordinary words.")

    Clearance(settings_factory(data), store, embedder=None).ingest([root])

    levels = {d.doc_id: d.sensitivity for d in store.list_documents()}
    assert levels == {
        "files:2024-Board-Minutes.md": Sensitivity.RESTRICTED,
        "files:agenda.md": Sensitivity.INTERNAL,
    }


def _everyone() -> SearchFilter:
    return SearchFilter(principals=frozenset({"everyone"}), max_sensitivity=Sensitivity.RESTRICTED)


@pytest.mark.parametrize(
    ("corpus", "table"), [("x\ry", '[corpora."x\\ry"]'), ("legal", "[corpora.legal]")]
)
def test_an_unconfigured_corpus_is_refused_in_one_line_naming_the_table_to_add(
    tmp_path: Path,
    make_app: Callable[..., Clearance],
    settings_factory: Any,
    corpus: str,
    table: str,
) -> None:
    entry = {"text": "A note.", "doc_id": "n:1", "acl": ["everyone"], "corpus": corpus}
    manifest = write(tmp_path / "m.jsonl", json.dumps(entry) + "\n")
    strict = settings_factory(
        {"ingest": {"allow_unconfigured_corpora": False}, "corpora": {"hr": {}}}
    )

    [result] = make_app(app_settings=strict).ingest([], manifest=manifest).results

    assert result.status == "failed" and result.error is not None
    assert table in result.error
    assert "\n" not in result.error and "\r" not in result.error
