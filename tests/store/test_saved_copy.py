"""The embedded store's saved search copy (``<index>.saved/``) is a cache, never a source.

Reopened from its saved copy, a store answers exactly as one rebuilt from the file: after
writes by another process, after a revocation, with a copy of another store or a damaged
one beside it. A deleted document leaves nothing in the saved files (reverse proof: a copy
saved with its dead rows is caught by the same check).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import factories
from clearance.config import settings_from_dict
from clearance.model import Sensitivity
from clearance.store import saved as saved_module
from clearance.store.backends import open_store
from clearance.store.base import SearchFilter
from clearance.store.memory import ContentIndex
from clearance.store.saved import saved_path
from clearance.store.sqlite import SQLiteStore

DIM = 16
WORDS = ("leave", "travel", "revenue", "forecast", "laptop", "badge", "pay", "holiday")


def entries(
    seed: int, count: int, start: int = 0
) -> list[tuple[Any, list[Any], list[list[float]]]]:
    rng = np.random.default_rng(seed)
    out = []
    for n in range(start, start + count):
        principal = "group:staff" if n % 3 else f"group:team-{n % 7}"
        doc = factories.document(f"doc:{n:04d}", corpus="ops", acl={principal})
        chunks, vectors = [], []
        for i in range(2):
            text = " ".join(rng.choice(WORDS, size=6)) + f" item{n}x{i}"
            chunks.append(factories.chunk(doc, text, ordinal=i))
            vector = rng.standard_normal(DIM)
            vectors.append([float(x) for x in vector / np.linalg.norm(vector)])
        out.append((doc, chunks, vectors))
    return out


def filled(path: Path, *, saved_copy: bool = True, count: int = 60) -> SQLiteStore:
    store = SQLiteStore(path, saved_copy=saved_copy)
    for doc, chunks, vectors in entries(1, count):
        store.upsert(doc, chunks, vectors)
    return store


def saved(path: Path, count: int = 60) -> None:
    """A store filled, searched (its copy built, vectors too) and closed: saved."""
    store = filled(path, count=count)
    answers(store)
    store.close()
    assert (saved_path(path) / "vectors.npy").exists()


CALLERS = [
    SearchFilter(
        principals=frozenset(p),
        corpora={"ops": Sensitivity.INTERNAL},
        max_sensitivity=Sensitivity.INTERNAL,
    )
    for p in (
        {"group:staff"},
        {"group:team-3"},
        {"group:staff", "group:team-1", "group:team-5"},
    )
]
QUERIES = ["leave travel", "revenue forecast pay", "badge item7x1", "holiday"]


def answers(store: SQLiteStore) -> list[Any]:
    rng = np.random.default_rng(99)
    out = []
    for flt in CALLERS:
        for query in QUERIES:
            vector = rng.standard_normal(DIM)
            vector = [float(x) for x in vector / np.linalg.norm(vector)]
            found = store.retrieve(query, vector, flt, 8)
            out.append((found.lexical, found.vector))
    return out


def reference(path: Path) -> list[Any]:
    """What a store rebuilt from the file alone answers."""
    store = SQLiteStore(path, saved_copy=False)
    try:
        return answers(store)
    finally:
        store.close()


@pytest.fixture
def no_rebuild(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts full rebuilds of the search copy."""
    calls: list[int] = []
    real = ContentIndex.build.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ContentIndex], *args: Any) -> ContentIndex:
        calls.append(1)
        return real(cls, *args)

    monkeypatch.setattr(ContentIndex, "build", classmethod(counting))
    return calls


def test_a_reopened_store_maps_its_saved_copy_and_answers_as_a_rebuilt_one(
    tmp_path: Path, no_rebuild: list[int]
) -> None:
    path = tmp_path / "index.db"
    store = filled(path)
    before = answers(store)
    store.close()
    assert (saved_path(path) / "header.json").exists()
    no_rebuild.clear()

    reopened = SQLiteStore(path, saved_copy=True)
    assert answers(reopened) == before == reference(path)
    reopened.close()
    assert no_rebuild == [1]  # only reference() rebuilt: the reopened store did not


def test_writes_by_another_process_since_the_copy_was_saved_are_applied(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    saved(path)
    other = SQLiteStore(path)  # another process's writer, no saved copy of its own
    for doc, chunks, vectors in entries(2, 5, start=500):
        other.upsert(doc, chunks, vectors)
    other.delete("doc:0004")
    other.close()

    reopened = SQLiteStore(path, saved_copy=True)
    got = answers(reopened)
    ids = {c for lexical, vector in got for c, _ in [*lexical, *vector]}
    reopened.close()
    assert got == reference(path)
    assert not {c for c in ids if c.startswith("doc:0004#")}


def test_a_revocation_after_the_copy_was_saved_governs_the_reopened_store(tmp_path: Path) -> None:
    """Permissions are never saved: the team loses its documents, and the reopened
    store's caller of that team gets none of them."""
    path = tmp_path / "index.db"
    saved(path)
    writer = SQLiteStore(path)
    for doc in writer.list_documents("ops"):
        if doc.acl == frozenset({"group:team-3"}):
            writer.set_acl(doc.doc_id, frozenset({"group:nobody"}))
    writer.close()

    reopened = SQLiteStore(path, saved_copy=True)
    team = CALLERS[1]
    found = reopened.retrieve("leave travel revenue forecast", [1.0] + [0.0] * (DIM - 1), team, 50)
    reopened.close()
    assert found.lexical == [] and found.vector == []


def test_a_copy_of_another_store_or_a_damaged_one_is_ignored(
    tmp_path: Path, no_rebuild: list[int]
) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    saved(first)
    saved(second, count=20)
    shutil.rmtree(saved_path(second))
    shutil.copytree(saved_path(first), saved_path(second))  # a.db's copy beside b.db
    no_rebuild.clear()
    reopened = SQLiteStore(second, saved_copy=True)
    assert answers(reopened) == reference(second)
    reopened.close()
    assert len(no_rebuild) == 2  # the reopened store rebuilt, as did reference()

    (saved_path(first) / "postings.npy").write_bytes(b"not an array")
    reopened = SQLiteStore(first, saved_copy=True)
    assert answers(reopened) == reference(first)
    reopened.close()


def saved_contents(path: Path) -> tuple[bytes, np.ndarray, int]:
    folder = saved_path(path)
    vectors = np.load(folder / "vectors.npy")
    postings = np.load(folder / "postings.npy")
    return (folder / "chunk_ids.bin").read_bytes(), vectors, int(postings.size)


def test_a_deleted_document_leaves_nothing_in_the_saved_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.db"
    store = filled(path)
    answers(store)  # vectors loaded, so they are saved
    gone = next(d for d in store.list_documents("ops") if d.doc_id == "doc:0007")
    gone_vectors = [v for doc, _, vs in entries(1, 60) if doc.doc_id == gone.doc_id for v in vs]
    store.delete(gone.doc_id)
    answers(store)  # the copy in memory patched: the document's rows are dead, not gone
    store.close()

    def holds_the_deleted(path: Path) -> bool:
        ids, vectors, _ = saved_contents(path)
        near = [
            np.abs(vectors - np.asarray(v, dtype=np.float32)).max(axis=1).min()
            for v in gone_vectors
        ]
        return b"doc:0007#" in ids or min(near) < 1e-6

    assert not holds_the_deleted(path)

    # Reverse proof: a copy saved with its dead rows keeps the deleted document's ids and
    # vectors, and the same check catches it.
    monkeypatch.setattr(saved_module, "_without_dead", _with_dead)
    store = SQLiteStore(path, saved_copy=True)
    answers(store)
    store._content = _as_dead_kept(store._content, gone_vectors)  # type: ignore[arg-type]
    store.close()
    assert holds_the_deleted(path)


def _with_dead(content: ContentIndex) -> dict[str, Any]:
    """The careless saver: every row as it is in memory, dead ones too."""
    out: dict[str, Any] = {
        "keys": content.keys,
        "doc_keys": content.doc_keys,
        "sensitivity": content.sensitivity,
        "lengths": content.lengths,
        "live": content.live,
        "offsets": content.offsets,
        "postings": content.postings,
        "frequencies": content.frequencies,
        "chunk_ids": content.chunk_ids,
    }
    if content.vectors is not None:
        out["vector_positions"] = content.vectors.positions
        out["vectors"] = content.vectors.matrix
    return out


def _as_dead_kept(content: ContentIndex, gone: list[list[float]]) -> ContentIndex:
    """The copy as a careless saver would keep it: the deleted chunks as dead rows, with
    their ids and vectors (a later generation, so that it is saved again)."""
    from clearance.store.memory import VectorRows

    assert content.vectors is not None
    n = len(content.chunk_ids)
    matrix = np.vstack([np.asarray(content.vectors.matrix), np.asarray(gone, dtype=np.float32)])
    positions = np.concatenate([content.vectors.positions, np.arange(n, n + len(gone))])
    return ContentIndex.restored(
        content.generation + 1,
        content.log_seq,
        keys=np.concatenate([content.keys, -np.arange(1, len(gone) + 1)]),
        doc_keys=np.concatenate([content.doc_keys, np.zeros(len(gone), np.int64)]),
        sensitivity=np.concatenate([content.sensitivity, np.zeros(len(gone), np.int8)]),
        lengths=np.concatenate([content.lengths, np.ones(len(gone), np.int64)]),
        live=np.concatenate([content.live, np.zeros(len(gone), np.bool_)]),
        offsets=content.offsets,
        postings=content.postings,
        frequencies=content.frequencies,
        chunk_ids=[*content.chunk_ids, *(f"doc:0007#{i}" for i in range(len(gone)))],
        vectors=VectorRows(positions, matrix),
    )


def test_saved_copy_false_writes_nothing_beside_the_file(tmp_path: Path) -> None:
    settings = settings_from_dict(
        {"store": {"path": str(tmp_path / "index.db"), "saved_copy": False}}
    )
    store = open_store(settings)
    for doc, chunks, vectors in entries(1, 5):
        store.upsert(doc, chunks, vectors)
    store.close()
    assert not saved_path(tmp_path / "index.db").exists()
    on = settings_from_dict({"store": {"path": str(tmp_path / "on.db")}})
    store = open_store(on)
    for doc, chunks, vectors in entries(1, 5):
        store.upsert(doc, chunks, vectors)
    store.retrieve("leave", None, CALLERS[0], 5)
    store.close()
    assert saved_path(tmp_path / "on.db").exists()


def test_a_file_written_before_gets_its_copy_on_first_close(
    tmp_path: Path, no_rebuild: list[int]
) -> None:
    """A file no saved-copy store ever wrote has no store id: the first store to save
    gives it one (without waiting for any writer), and the next opening maps the copy."""
    path = tmp_path / "index.db"
    filled(path, saved_copy=False).close()
    store = SQLiteStore(path, saved_copy=True)
    before = answers(store)
    store.close()
    no_rebuild.clear()
    reopened = SQLiteStore(path, saved_copy=True)
    assert answers(reopened) == before
    reopened.close()
    assert no_rebuild == []
