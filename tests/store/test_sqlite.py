"""What the embedded store leaves in its SQLite file: rows purged and rolled back, term ids
kept, schema versions refused, and a writer's term dictionary after a rollback.

What every store must do through its interface (round-trips, replace, delete, search,
filters, reopening) is tested once for every backend in tests/conformance/."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from clearance.errors import StoreError
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Document, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from factories import chunks as make_chunks

JST = timezone(timedelta(hours=9))
EVERYONE = frozenset({"everyone"})
embedder = HashingEmbedder(dim=32)


def make_doc(doc_id: str = "files:a.md", **changes: object) -> Document:
    doc = Document(
        doc_id=doc_id,
        source_system="files",
        corpus="wiki",
        title="Quarterly report",
        uri="https://example.test/a",
        owner="alice",
        acl=frozenset({"group:finance", "user:bob"}),
        sensitivity=Sensitivity.INTERNAL,
        created_at=datetime(2024, 1, 2, 9, 30, tzinfo=JST),
        updated_at=datetime(2024, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        review_at=datetime(2025, 1, 1, tzinfo=UTC),
        expires_at=datetime(2099, 12, 31, 23, 59, tzinfo=UTC),
        ai_allowed=True,
        personal_data=True,
        origin="human",
        origin_chain=("email", "human"),
        content_hash="hash-1",
        version=3,
        path="/docs/a.md",
        format="md",
        extra={"meta_hash": "m1", "nested": {"n": [1, 2]}},
    )
    return dataclasses.replace(doc, **changes)  # type: ignore[arg-type]


def vectors(texts: list[str]) -> list[np.ndarray]:
    return list(embedder.embed(texts))


def everyone_filter(**changes: object) -> SearchFilter:
    flt = SearchFilter(
        principals=frozenset({"everyone", "group:finance", "user:bob"}),
        max_sensitivity=Sensitivity.RESTRICTED,
        require_ai_allowed=False,
    )
    return dataclasses.replace(flt, **changes)  # type: ignore[arg-type]


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A second, independent connection to the file (autocommit), closed afterwards."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        yield db


def table_counts(path: Path) -> dict[str, int]:
    """Row counts read through a second, independent connection to the file."""
    with connect(path) as db:
        return {
            t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("documents", "doc_acl", "chunks", "chunk_terms", "vectors")
        }


def term_dictionary(path: Path) -> dict[str, int]:
    with connect(path) as db:
        return dict(db.execute("SELECT term, id FROM terms").fetchall())


def unindexed(path: Path) -> list[tuple[str, int]]:
    """Chunks without a term row, and term rows without a chunk: both must never exist."""
    with connect(path) as db:
        return db.execute(
            "SELECT 'chunk', id FROM chunks WHERE id NOT IN (SELECT chunk FROM chunk_terms) "
            "UNION ALL "
            "SELECT 'chunk_terms', chunk FROM chunk_terms WHERE chunk NOT IN (SELECT id FROM chunks)"
        ).fetchall()


TEXTS = ["Revenue grew in the third quarter.", "Costs fell in Tokyo.", "東京の売上高"]


def test_delete_purges_every_row_and_keeps_the_term_ids(store: SQLiteStore) -> None:
    """What a delete leaves in the file (what it leaves visible is the conformance suite's):
    no row of the document in any table, and term ids are never reused."""
    keep, gone = make_doc("files:keep"), make_doc("files:gone")
    store.upsert(keep, make_chunks(keep, ["kept text"]), vectors(["kept text"]))
    store.upsert(gone, make_chunks(gone, TEXTS), vectors(TEXTS))
    assert table_counts(store.path) == {
        "documents": 2,
        "doc_acl": 4,
        "chunks": 4,
        "chunk_terms": 4,
        "vectors": 4,
    }
    dictionary = term_dictionary(store.path)
    assert {"revenu", "tokyo", "東京", "売上"} <= set(dictionary)

    assert store.delete("files:gone") is True

    assert table_counts(store.path) == {
        "documents": 1,
        "doc_acl": 2,
        "chunks": 1,
        "chunk_terms": 1,
        "vectors": 1,
    }
    assert unindexed(store.path) == []
    assert term_dictionary(store.path) == dictionary


def test_a_replace_leaves_only_the_new_versions_rows(store: SQLiteStore) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))
    new = make_doc(content_hash="hash-2", version=4, acl=EVERYONE)
    store.upsert(new, make_chunks(new, ["Only one chunk now about margins"]), [None])

    assert table_counts(store.path) == {
        "documents": 1,
        "doc_acl": 1,
        "chunks": 1,
        "chunk_terms": 1,
        "vectors": 0,
    }
    assert unindexed(store.path) == []


FIRST_VERSION_ROWS = {"documents": 1, "doc_acl": 2, "chunks": 3, "chunk_terms": 3, "vectors": 3}


def test_a_replace_failing_inside_the_transaction_rolls_back_every_row(
    store: SQLiteStore,
) -> None:
    """The old rows are deleted first inside the transaction; a later insert failing
    (a duplicate chunk id violates a UNIQUE constraint) must bring them all back, and the
    error names the failed write."""
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))
    new = make_doc(content_hash="hash-2", version=4)
    first, second = make_chunks(new, ["replacement one", "replacement two"])
    duplicate = dataclasses.replace(second, chunk_id=first.chunk_id)

    with pytest.raises(StoreError, match=r"write to .* failed: UNIQUE constraint"):
        store.upsert(new, [first, duplicate])

    assert table_counts(store.path) == FIRST_VERSION_ROWS
    assert unindexed(store.path) == []


def test_an_index_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    SQLiteStore(path).close()
    with connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")

    with pytest.raises(StoreError, match=r"index schema 99 is not supported \(expected 2\)"):
        SQLiteStore(path)


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_bytes(b"this is not sqlite" * 100)

    with pytest.raises(StoreError, match="cannot open index"):
        SQLiteStore(path)


def test_a_rolled_back_upsert_leaves_no_term_rows_and_resets_the_vocabulary(
    store: SQLiteStore,
) -> None:
    """The writer caches the term dictionary. A write that fails after adding terms takes
    them back, and SQLite hands their ids to the next new terms: a writer still holding the
    rolled-back ids would file "zebra" under the id of "quokka"."""
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))
    dictionary = term_dictionary(store.path)
    with connect(store.path) as db:
        db.execute(
            "CREATE TRIGGER fail_term_rows BEFORE INSERT ON chunk_terms "
            "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    zebra = make_doc("files:zebra")

    with pytest.raises(StoreError, match="disk on fire"):
        store.upsert(zebra, make_chunks(zebra, ["zebra crossings"]))

    assert term_dictionary(store.path) == dictionary  # the new terms went with the write
    assert unindexed(store.path) == []
    assert store.get_document("files:zebra") is None
    with connect(store.path) as db:
        db.execute("DROP TRIGGER fail_term_rows")
    quokka = make_doc("files:quokka")
    store.upsert(quokka, make_chunks(quokka, ["quokka sightings"]))
    store.upsert(zebra, make_chunks(zebra, ["zebra crossings"]))

    assert [c for c, _ in store.lexical_search("zebra", everyone_filter(), 5)] == ["files:zebra#0"]
    assert [c for c, _ in store.lexical_search("quokka", everyone_filter(), 5)] == [
        "files:quokka#0"
    ]
    assert [c for c, _ in store.lexical_search("crossing", everyone_filter(), 5)] == [
        "files:zebra#0"
    ]
    assert unindexed(store.path) == []
    assert set(term_dictionary(store.path)) == set(dictionary) | {
        "zebra",
        "cross",
        "quokka",
        "sight",
    }
