"""Searches run over in-memory copies; a change committed by *any* writer must still be seen
by the very next search.

The writers here are a plain ``sqlite3`` connection (as an operator's SQL shell or another
process would be) and a second ``SQLiteStore`` on the same file. Triggers bump the write
generations the reader checks; the reverse proof drops them and shows the same checks then
see stale results, so the triggers are what keeps searches fresh.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clearance.llm.embedding import HashingEmbedder
from clearance.model import Document, Sensitivity
from clearance.store import sqlite as sqlite_module
from clearance.store.base import SearchFilter
from clearance.store.memory import AccessIndex, ContentIndex
from clearance.store.sqlite import SQLiteStore
from factories import chunk, chunks, document
from store.rawsql import index_by_hand, raw

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)
QUERY = "revenue"
QUERY_VECTOR = EMBEDDER.embed([QUERY])[0]
ANN = SearchFilter(principals=frozenset({"user:ann", "everyone"}), now=NOW)
BEFORE = {"wiki:open#0", "wiki:ann#0"}
TRIGGERS = {
    f"{table}_{event}_bumps_{generation}"
    for generation, tables in {
        "content_generation": ("chunks", "chunk_terms", "vectors"),
        "access_generation": ("documents", "doc_acl"),
    }.items()
    for table in tables
    for event in ("insert", "update", "delete")
}


def make_doc(doc_id: str, acl: frozenset[str]) -> Document:
    return document(
        doc_id, corpus="wiki", acl=acl, sensitivity=Sensitivity.PUBLIC, content_hash=doc_id
    )


def put(store: SQLiteStore, doc_id: str, acl: frozenset[str], *texts: str) -> None:
    doc = make_doc(doc_id, acl)
    store.upsert(doc, chunks(doc, texts, locator="section={i}"), list(EMBEDDER.embed(list(texts))))


@pytest.fixture
def index(store: SQLiteStore) -> SQLiteStore:
    """Every chunk says "revenue", so each search returns every chunk the caller may read."""
    put(store, "wiki:open", frozenset({"everyone"}), "Revenue forecast for Tokyo")
    put(store, "wiki:ann", frozenset({"user:ann"}), "Revenue margin in Milano")
    put(store, "wiki:bo", frozenset({"user:bo"}), "Revenue plan for Osaka")
    return store


def insert_chunk(db: sqlite3.Connection, doc_id: str, chunk_id: str, text: str) -> None:
    """Index a chunk by hand, as the store would: row, term frequencies and vector."""
    key, title, sensitivity = db.execute(
        "SELECT key, title, sensitivity FROM documents WHERE doc_id = ?", (doc_id,)
    ).fetchone()
    db.execute("BEGIN IMMEDIATE")
    cur = db.execute(
        "INSERT INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, origin) "
        "VALUES (?, ?, 99, ?, 'section=99', ?, 'human')",
        (chunk_id, key, text, sensitivity),
    )
    index_by_hand(db, int(cur.lastrowid or 0), text, EMBEDDER.embed([text])[0], title)
    db.execute("COMMIT")


def visible(store: SQLiteStore, how: str) -> set[str]:
    """What ANN's search returns (k covers every chunk, so: every chunk ANN may read)."""
    if how == "lexical":
        return {c for c, _ in store.lexical_search(QUERY, ANN, 50)}
    if how == "vector":
        return {c for c, _ in store.vector_search(QUERY_VECTOR, ANN, 50)}
    both = store.retrieve(QUERY, QUERY_VECTOR, ANN, 50)
    lexical, vector = {c for c, _ in both.lexical}, {c for c, _ in both.vector}
    assert lexical == vector
    return lexical


Change = Callable[[sqlite3.Connection], object]
ONLY_OPEN = {"wiki:open#0"}
CHANGES: dict[str, tuple[Change, set[str]]] = {
    "revoke the ACL row": (
        lambda db: db.execute("DELETE FROM doc_acl WHERE principal = 'user:ann'"),
        ONLY_OPEN,
    ),
    "raise the document's sensitivity": (
        lambda db: db.execute("UPDATE documents SET sensitivity = 3 WHERE doc_id = 'wiki:ann'"),
        ONLY_OPEN,
    ),
    "raise the chunk's sensitivity": (
        lambda db: db.execute("UPDATE chunks SET sensitivity = 3 WHERE chunk_id = 'wiki:ann#0'"),
        ONLY_OPEN,
    ),
    "let the document expire": (
        lambda db: db.execute(
            "UPDATE documents SET expires_at = ? WHERE doc_id = 'wiki:ann'", (NOW.timestamp(),)
        ),
        ONLY_OPEN,
    ),
    "withdraw AI use": (
        lambda db: db.execute("UPDATE documents SET ai_allowed = 0 WHERE doc_id = 'wiki:ann'"),
        ONLY_OPEN,
    ),
    "delete the document": (
        lambda db: db.execute("DELETE FROM documents WHERE doc_id = 'wiki:ann'"),
        ONLY_OPEN,
    ),
    "delete the chunk": (
        lambda db: db.execute("DELETE FROM chunks WHERE chunk_id = 'wiki:ann#0'"),
        ONLY_OPEN,
    ),
    "grant an ACL row": (
        lambda db: db.execute(
            "INSERT INTO doc_acl (doc_key, principal) "
            "SELECT key, 'user:ann' FROM documents WHERE doc_id = 'wiki:bo'"
        ),
        {*BEFORE, "wiki:bo#0"},
    ),
    "insert a chunk": (
        lambda db: insert_chunk(db, "wiki:open", "wiki:open#new", "Revenue outlook, raised"),
        {*BEFORE, "wiki:open#new"},
    ),
}
SEARCHES = ("lexical", "vector", "retrieve")


def assert_next_search_sees(store: SQLiteStore, how: str, change: Change, after: set[str]) -> None:
    assert visible(store, how) == BEFORE  # builds (or refreshes) the in-memory copies
    with raw(store.path) as db:
        change(db)
    assert visible(store, how) == after


@pytest.mark.parametrize("how", SEARCHES)
@pytest.mark.parametrize("name", CHANGES)
def test_the_next_search_sees_a_change_committed_by_another_connection(
    index: SQLiteStore, name: str, how: str
) -> None:
    change, after = CHANGES[name]
    assert_next_search_sees(index, how, change, after)


def drop_generation_triggers(path: Path) -> None:
    with raw(path) as db:
        found = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert found == set(sqlite_module._TRIGGERS)  # every trigger the store installs
        assert found >= TRIGGERS  # and the reverse proof drops exactly the generation ones
        for name in sorted(TRIGGERS):
            db.execute(f"DROP TRIGGER {name}")


@pytest.mark.parametrize("how", SEARCHES)
@pytest.mark.parametrize("name", CHANGES)
def test_reverse_proof_without_the_triggers_the_search_is_stale(
    index: SQLiteStore, name: str, how: str
) -> None:
    change, after = CHANGES[name]
    drop_generation_triggers(index.path)

    with pytest.raises(AssertionError):
        assert_next_search_sees(index, how, change, after)
    assert visible(index, how) == BEFORE  # what the stale copy serves


def test_changes_made_through_a_second_store_are_seen(index: SQLiteStore) -> None:
    assert visible(index, "retrieve") == BEFORE
    with SQLiteStore(index.path) as other:
        other.set_acl("wiki:ann", frozenset({"user:bo"}))
        assert visible(index, "retrieve") == {"wiki:open#0"}
        other.set_acls({"wiki:bo": frozenset({"user:ann"})})
        assert visible(index, "retrieve") == {"wiki:open#0", "wiki:bo#0"}
        put(other, "wiki:new", frozenset({"everyone"}), "Revenue news", "More revenue")
        assert visible(index, "retrieve") == {
            "wiki:open#0",
            "wiki:bo#0",
            "wiki:new#0",
            "wiki:new#1",
        }
        other.delete("wiki:open")
        assert visible(index, "retrieve") == {"wiki:bo#0", "wiki:new#0", "wiki:new#1"}


def test_terms_added_by_another_writer_join_this_writers_vocabulary(index: SQLiteStore) -> None:
    """The writer caches the term dictionary; a term another connection added meanwhile
    must be reused, not inserted again (a UNIQUE violation) or given a second id."""
    with raw(index.path) as db:
        insert_chunk(db, "wiki:open", "wiki:open#zebra", "Zebra crossings")
    put(index, "wiki:zebra", frozenset({"everyone"}), "A zebra, and a quokka")

    hits = {c for c, _ in index.lexical_search("zebra", ANN, 10)}
    assert hits == {"wiki:open#zebra", "wiki:zebra#0"}
    assert {c for c, _ in index.lexical_search("quokka", ANN, 10)} == {"wiki:zebra#0"}
    with raw(index.path) as db:
        assert db.execute("SELECT COUNT(*) FROM terms WHERE term = 'zebra'").fetchone() == (1,)


def test_a_chunk_without_term_rows_keeps_its_own_vector(index: SQLiteStore) -> None:
    """Only a writer bypassing the store can leave a chunk without term rows. It matches
    no term, but it stays a chunk: its vector must not slide onto its neighbour (here a
    chunk bo may read would be scored with the vector of ann's chunk, which bo may not)."""
    texts = {
        "wiki:open#0": "Revenue forecast for Tokyo",
        "wiki:ann#0": "Revenue margin in Milano",
        "wiki:bo#0": "Revenue plan for Osaka",
    }
    bo = SearchFilter(principals=frozenset({"user:bo", "everyone"}), now=NOW)
    anns = EMBEDDER.embed([texts["wiki:ann#0"]])[0]
    assert visible(index, "retrieve") == BEFORE
    with raw(index.path) as db:
        db.execute(
            "DELETE FROM chunk_terms WHERE chunk = "
            "(SELECT id FROM chunks WHERE chunk_id = 'wiki:ann#0')"
        )

    got = dict(index.vector_search(anns, bo, 10))

    expected = {
        cid: float(EMBEDDER.embed([texts[cid]])[0] @ anns) for cid in ("wiki:open#0", "wiki:bo#0")
    }
    assert got == pytest.approx(expected, abs=1e-6)
    assert [c for c, _ in index.vector_search(anns, ANN, 1)] == ["wiki:ann#0"]
    assert {c for c, _ in index.lexical_search("milano", ANN, 10)} == set()
    assert {c for c, _ in index.lexical_search("revenue", ANN, 10)} == ONLY_OPEN


def test_an_orphaned_vector_is_never_served_as_another_chunks(index: SQLiteStore) -> None:
    """A connection without foreign keys (the sqlite3 default) deletes ann's chunk (a
    trigger removes its vector all the same) and inserts a vector for a chunk that does not
    exist. That vector belongs to no chunk and must score none."""
    anns = EMBEDDER.embed(["Revenue margin in Milano"])[0]
    everyone = SearchFilter(principals=frozenset({"user:bo", "user:ann", "everyone"}), now=NOW)
    ((top, score),) = index.vector_search(anns, everyone, 1)
    assert top == "wiki:ann#0"
    assert score == pytest.approx(1.0)
    with closing(sqlite3.connect(index.path, isolation_level=None)) as db:
        db.execute("DELETE FROM chunks WHERE chunk_id = 'wiki:ann#0'")
        assert db.execute("SELECT COUNT(*) FROM vectors").fetchone() == (2,)  # removed too
        db.execute("INSERT INTO vectors (chunk, vec) VALUES (999, ?)", (anns.tobytes(),))

    got = dict(index.vector_search(anns, everyone, 10))

    texts = {"wiki:open#0": "Revenue forecast for Tokyo", "wiki:bo#0": "Revenue plan for Osaka"}
    expected = {cid: float(EMBEDDER.embed([text])[0] @ anns) for cid, text in texts.items()}
    assert got == pytest.approx(expected, abs=1e-6)


# --------------------------------------------------------------------------- what is rebuilt


def warm(store: SQLiteStore) -> tuple[ContentIndex, AccessIndex]:
    """Build both copies, with the vectors loaded, and return them."""
    assert visible(store, "retrieve") == BEFORE
    content, access = store._content, store._access
    assert content is not None and content.vectors is not None
    assert access is not None
    return content, access


def test_an_acl_change_rebuilds_the_access_copy_and_keeps_the_content_copy(
    index: SQLiteStore,
) -> None:
    content, access = warm(index)
    vectors = content.vectors

    with raw(index.path) as db:
        CHANGES["revoke the ACL row"][0](db)
    assert visible(index, "retrieve") == ONLY_OPEN

    assert index._content is content  # the inverted index is not rebuilt for an ACL change
    assert index._content is not None and index._content.vectors is vectors
    assert index._access is not access


def test_a_content_change_rebuilds_the_content_copy_and_keeps_the_access_copy(
    index: SQLiteStore,
) -> None:
    content, access = warm(index)

    with raw(index.path) as db:
        CHANGES["raise the chunk's sensitivity"][0](db)
    assert visible(index, "retrieve") == ONLY_OPEN

    assert index._content is not content
    assert index._access is access


def test_writes_that_change_nothing_searchable_rebuild_nothing(index: SQLiteStore) -> None:
    content, access = warm(index)

    index.set_meta("directory", {"version": 7})
    index.record_acl_sync("wiki", NOW)
    assert visible(index, "retrieve") == BEFORE

    assert index._content is content
    assert index._access is access


def test_an_upsert_rebuilds_both_copies(index: SQLiteStore) -> None:
    content, access = warm(index)

    doc = dataclasses.replace(make_doc("wiki:ann", frozenset({"user:ann"})), title="Renamed")
    index.upsert(doc, [chunk(doc, "Revenue", locator="s", origin="h")])
    assert visible(index, "lexical") == BEFORE

    assert index._content is not content
    assert index._access is not access


# --------------------------------------------------------------------------- writers that bypass the store


def test_a_document_deleted_by_a_writer_without_foreign_keys_disappears(
    index: SQLiteStore,
) -> None:
    assert visible(index, "lexical") == BEFORE
    with closing(sqlite3.connect(index.path, isolation_level=None)) as db:
        db.execute("DELETE FROM documents WHERE doc_id = 'wiki:bo'")  # ACL rows and chunk stay
        db.execute("DELETE FROM documents WHERE doc_id = 'wiki:ann'")

    assert visible(index, "lexical") == ONLY_OPEN


def test_a_copy_built_inside_a_rolled_back_transaction_is_never_served(
    index: SQLiteStore,
) -> None:
    eve = SearchFilter(principals=frozenset({"user:eve"}), now=NOW)
    with pytest.raises(RuntimeError), index.transaction() as db:
        db.execute(
            "INSERT INTO doc_acl (doc_key, principal) "
            "SELECT key, 'user:eve' FROM documents WHERE doc_id = 'wiki:ann'"
        )
        assert {c for c, _ in index.lexical_search(QUERY, eve, 10)} == {"wiki:ann#0"}
        raise RuntimeError("abandoned")
    with raw(index.path) as db:  # one unrelated row: the access generation moves by one
        db.execute("UPDATE documents SET title = 'Renamed' WHERE doc_id = 'wiki:open'")

    assert index.lexical_search(QUERY, eve, 10) == []
