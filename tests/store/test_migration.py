"""Opening a schema-1 index (full-text search in an FTS5 table) migrates it to schema 2 (a
term dictionary and per-chunk term frequencies) once, in one transaction.

The schema-1 file is written here with the old DDL and plain SQL, as the previous release
left it, so the test does not depend on any code that writes schema 2.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearance.analysis import index_terms
from clearance.errors import StoreError
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

# The schema of release 1 (store/sqlite.py, SCHEMA_VERSION = 1), verbatim.
SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    key INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL UNIQUE,
    source_system TEXT NOT NULL,
    corpus TEXT NOT NULL,
    title TEXT NOT NULL,
    uri TEXT NOT NULL,
    owner TEXT,
    sensitivity INTEGER NOT NULL,
    created_at REAL,
    updated_at REAL,
    review_at REAL,
    expires_at REAL,
    ai_allowed INTEGER NOT NULL,
    personal_data INTEGER NOT NULL,
    origin TEXT NOT NULL,
    origin_chain TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    version INTEGER NOT NULL,
    path TEXT,
    format TEXT NOT NULL,
    extra TEXT NOT NULL,
    ingested_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_corpus ON documents (corpus);
CREATE TABLE IF NOT EXISTS doc_acl (
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    principal TEXT NOT NULL,
    PRIMARY KEY (doc_key, principal)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_acl_principal ON doc_acl (principal, doc_key);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    locator TEXT NOT NULL,
    sensitivity INTEGER NOT NULL,
    origin TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_key);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
    terms, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS vectors (
    chunk INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS corpus_sync (
    corpus TEXT PRIMARY KEY,
    last_acl_sync REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    entity TEXT NOT NULL,
    period TEXT NOT NULL,
    metric TEXT NOT NULL,
    channel TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    raw TEXT NOT NULL,
    locator TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_lookup ON facts (metric, entity, period);
CREATE INDEX IF NOT EXISTS facts_doc ON facts (doc_key);
"""

EMBEDDER = HashingEmbedder(dim=16)
# doc id → (title, ACL, chunk texts)
DOCUMENTS: dict[str, tuple[str, list[str], list[str]]] = {
    "wiki:report": (
        "Quarterly forecasts",
        ["group:finance"],
        ["Revenue forecasting for the Tokyo office improved.", "Costs were flat."],
    ),
    "wiki:tokyo": ("東京支社", ["everyone"], ["東京の売上高は前年比で増加しました。"]),
    "wiki:milano": (
        "Società di Milano",
        ["everyone"],
        ["La città è più attiva; l'attività è cresciuta del 5%."],
    ),
    "wiki:secret": ("Board minutes", ["group:board"], ["Revenue targets for Milano."]),
}
FINANCE = SearchFilter(
    principals=frozenset({"group:finance", "everyone"}),
    max_sensitivity=Sensitivity.RESTRICTED,
    require_ai_allowed=False,
)


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        yield db


def write_schema_1(path: Path, *, version: Any = 1) -> None:
    """A release-1 index holding DOCUMENTS, written with plain SQL."""
    with connect(path) as db:
        db.executescript(SCHEMA_1)
        db.execute("BEGIN")
        db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (json.dumps(version),))
        db.execute("INSERT INTO meta VALUES ('generation', '7')")
        for n, (doc_id, (title, acl, texts)) in enumerate(DOCUMENTS.items()):
            cur = db.execute(
                "INSERT INTO documents (doc_id, source_system, corpus, title, uri, owner, "
                "sensitivity, created_at, updated_at, review_at, expires_at, ai_allowed, "
                "personal_data, origin, origin_chain, content_hash, version, path, format, "
                "extra, ingested_at) VALUES (?, 'wiki', 'wiki', ?, ?, NULL, 1, NULL, NULL, NULL, "
                "NULL, 1, 0, 'human', '[]', ?, 1, NULL, 'md', '{}', 1700000000.0)",
                (doc_id, title, f"https://example.test/{n}", f"hash-{n}"),
            )
            doc_key = cur.lastrowid
            db.executemany("INSERT INTO doc_acl VALUES (?, ?)", [(doc_key, p) for p in acl])
            for i, text in enumerate(texts):
                cur = db.execute(
                    "INSERT INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, "
                    "origin) VALUES (?, ?, ?, ?, ?, 1, 'human')",
                    (f"{doc_id}#{i}", doc_key, i, text, f"section={i + 1}"),
                )
                chunk = cur.lastrowid
                db.execute(
                    "INSERT INTO chunks_fts (rowid, terms) VALUES (?, ?)",
                    (chunk, index_terms(f"{title}\n{text}")),
                )
                vector = EMBEDDER.embed([text])[0].astype(np.float32)
                db.execute("INSERT INTO vectors VALUES (?, ?)", (chunk, vector.tobytes()))
        db.execute("COMMIT")


def tables(path: Path) -> set[str]:
    with connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def term_rows(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with connect(path) as db:
        return (
            db.execute("SELECT * FROM terms ORDER BY id").fetchall(),
            db.execute("SELECT * FROM chunk_terms ORDER BY chunk").fetchall(),
        )


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [c for c, _ in hits]


def test_a_schema_1_index_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    write_schema_1(path)
    assert "chunks_fts" in tables(path)

    with SQLiteStore(path) as store:
        assert store.get_meta("schema_version") == 2
        assert store.get_meta("generation") is None
        assert "chunks_fts" not in tables(path)
        assert {"terms", "chunk_terms"} <= tables(path)
        with connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM chunk_terms").fetchone() == (5,)
        # English is stemmed on both sides ("forecasts", "forecasting" → "forecast")
        assert ids(store.lexical_search("forecast", FINANCE, 5)) == [
            "wiki:report#0",
            "wiki:report#1",
        ]
        assert ids(store.lexical_search("forecasting revenues", FINANCE, 1)) == ["wiki:report#0"]
        # Japanese by character bigrams
        assert ids(store.lexical_search("売上高", FINANCE, 5)) == ["wiki:tokyo#0"]
        # accents folded: an accent-free query finds the Italian text (and its title)
        assert ids(store.lexical_search("citta attivita", FINANCE, 5)) == ["wiki:milano#0"]
        assert ids(store.lexical_search("societa", FINANCE, 5)) == ["wiki:milano#0"]
        # the filter still applies: the board's "Revenue … Milano" chunk stays hidden
        assert "wiki:secret#0" not in ids(store.lexical_search("revenue milano", FINANCE, 10))
        board = SearchFilter(principals=frozenset({"group:board"}), require_ai_allowed=False)
        assert ids(store.lexical_search("revenue milano", board, 10)) == ["wiki:secret#0"]
        # the vectors came through untouched
        query = EMBEDDER.embed(["Costs were flat."])[0]
        assert ids(store.vector_search(query, FINANCE, 1)) == ["wiki:report#1"]
        assert store.stats().chunks == 5


def test_a_migrated_index_is_not_migrated_again(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    write_schema_1(path)
    with SQLiteStore(path) as store:
        migrated = term_rows(path)
        generations = store.get_meta("content_generation"), store.get_meta("access_generation")
        results = store.lexical_search("revenue", FINANCE, 10)

    with SQLiteStore(path) as again:
        assert term_rows(path) == migrated
        assert (again.get_meta("content_generation"), again.get_meta("access_generation")) == (
            generations
        )
        assert again.get_meta("schema_version") == 2
        assert again.lexical_search("revenue", FINANCE, 10) == results


def test_a_failed_migration_leaves_the_schema_1_index_as_it_was(tmp_path: Path) -> None:
    """Opening, migration included, is one transaction: if writing the term rows fails, the
    FTS5 table, the schema version and the old generation key are all still there, and not
    even the tables of schema 2 were created."""
    path = tmp_path / "index.db"
    write_schema_1(path)
    with connect(path) as db:  # a term table that refuses rows, created before the store
        db.execute("CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)")
        db.execute(
            "CREATE TRIGGER refuse_terms BEFORE INSERT ON terms "
            "BEGIN SELECT RAISE(ABORT, 'no terms today'); END"
        )

    with pytest.raises(StoreError, match="no terms today"):
        SQLiteStore(path)

    assert "chunks_fts" in tables(path)
    with connect(path) as db:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        assert (meta["schema_version"], meta["generation"]) == ("1", "7")
        assert db.execute("SELECT COUNT(*) FROM terms").fetchone() == (0,)
        assert "chunk_terms" not in tables(path)
        db.execute("DROP TRIGGER refuse_terms")
    with SQLiteStore(path) as store:  # with the obstacle gone, the next open migrates
        assert store.get_meta("schema_version") == 2
        assert ids(store.lexical_search("売上高", FINANCE, 5)) == ["wiki:tokyo#0"]


def everything(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The schema (tables, indexes, triggers) and the meta rows."""
    with connect(path) as db:
        return (
            db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
            db.execute("SELECT key, value FROM meta ORDER BY key").fetchall(),
        )


def test_an_index_of_an_unknown_schema_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    """A file written by a newer release: no migration, and nothing created in it."""
    path = tmp_path / "index.db"
    write_schema_1(path, version=99)
    before = everything(path)

    with pytest.raises(StoreError, match=r"index schema 99 is not supported \(expected 2\)"):
        SQLiteStore(path)

    assert everything(path) == before
    assert "chunks_fts" in tables(path)
    assert ("schema_version", "99") in before[1]
