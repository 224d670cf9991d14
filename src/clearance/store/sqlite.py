"""The embedded default store: one SQLite file holds everything.

Documents, ACL rows, chunks, an FTS5 full-text index over analysed terms
(:mod:`clearance.retrieval.analysis`), float32 vectors, metadata and sync state live in one
file opened in WAL mode. Vector search is exact (numpy) over an in-memory matrix that is
reloaded when the file's write generation changes.

The permission filter is compiled into SQL (``_allowed``): the lexical query joins the FTS
match against the allowed documents *inside* the query, and the vector search masks the
matrix with the same allowed set before ranking. Both therefore return the top-k of the
allowed set, never a filtered top-k of everything.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from clearance.errors import StoreError
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.retrieval.analysis import fts_query, index_terms
from clearance.store.base import SearchFilter, StoreStats, Vector

__all__ = ["SQLiteStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
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
-- facts: numbers from tables (clearance.ingest.facts). A fact has no ACL or sensitivity of
-- its own: it is visible exactly where its document is (query_facts joins _allowed).
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
-- end facts
"""

_DOC_COLUMNS = (
    "doc_id, source_system, corpus, title, uri, owner, sensitivity, created_at, updated_at, "
    "review_at, expires_at, ai_allowed, personal_data, origin, origin_chain, content_hash, "
    "version, path, format, extra"
)


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


class _VectorIndex:
    """An in-memory copy of all vectors for exact search under a mask."""

    def __init__(self, generation: int, rows: list[tuple[int, int, int, bytes]], dim: int) -> None:
        self.generation = generation
        self.dim = dim
        n = len(rows)
        self.chunk_keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.doc_keys = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
        self.sensitivity = np.fromiter((r[2] for r in rows), dtype=np.int8, count=n)
        self.matrix = np.empty((n, dim), dtype=np.float32)
        for i, r in enumerate(rows):
            self.matrix[i] = np.frombuffer(r[3], dtype=np.float32)


class SQLiteStore:
    """The embedded :class:`~clearance.store.base.Store` implementation."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
            found = self._meta_raw("schema_version")
            if found is None:
                self._db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (json.dumps(SCHEMA_VERSION),)
                )
            elif json.loads(found) != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: index schema {found} is not supported (expected {SCHEMA_VERSION})"
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open index {self.path}: {exc}") from exc
        self._lock = threading.RLock()
        self._vectors: _VectorIndex | None = None

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, content: bool = False) -> Iterator[sqlite3.Connection]:
        """One write transaction; everything inside commits together or not at all.

        ``content=True`` marks a change to chunks or vectors: it bumps the write generation
        so in-memory vector indexes (in this and other processes) reload."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield self._db
                if content:
                    self._db.execute(
                        "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT (key) "
                        "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
                    )
                self._db.execute("COMMIT")
            except BaseException as exc:
                self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"write to {self.path} failed: {exc}") from exc
                raise

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection for read-only queries on tables other modules own (e.g. the FAQ).

        Unlike :meth:`transaction` it takes no write lock on the file and never touches the
        write generation. Write through :meth:`transaction` only."""
        with self._lock:
            yield self._db

    def _meta_raw(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def get_meta(self, key: str) -> Any:
        raw = self._meta_raw(key)
        return None if raw is None else json.loads(raw)

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )

    def _generation(self) -> int:
        raw = self._meta_raw("generation")
        return 0 if raw is None else int(raw)

    # ------------------------------------------------------------------ writes

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        if vectors is not None and len(vectors) != len(chunks):
            raise StoreError(f"{document.doc_id}: {len(chunks)} chunks but {len(vectors)} vectors")
        for chunk in chunks:
            if chunk.doc_id != document.doc_id:
                raise StoreError(f"chunk {chunk.chunk_id} does not belong to {document.doc_id}")
            if chunk.sensitivity < document.sensitivity:
                raise StoreError(f"chunk {chunk.chunk_id} is less sensitive than its document")
        # --- facts: each must belong to this document (see query_facts)
        for fact in facts:
            if fact.doc_id != document.doc_id:
                raise StoreError(f"a fact at {fact.locator} does not belong to {document.doc_id}")
        # --- end facts
        # One index holds one vector space: a row of another width would break every later
        # vector search, so it is refused here, naming the document.
        dims = {np.asarray(v).size for v in vectors or () if v is not None}
        if len(dims) > 1:
            raise StoreError(f"{document.doc_id}: vectors of different dimensions {sorted(dims)}")
        with self.transaction(content=True) as db:
            self._delete_in(db, document.doc_id)
            row = db.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
            if dims and row is not None and row[0] // 4 not in dims:
                raise StoreError(
                    f"{document.doc_id}: {dims.pop()}-dimensional vectors, "
                    f"the index holds {row[0] // 4}-dimensional ones"
                )
            cur = db.execute(
                f"INSERT INTO documents ({_DOC_COLUMNS}, ingested_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document.doc_id,
                    document.source_system,
                    document.corpus,
                    document.title,
                    document.uri,
                    document.owner,
                    int(document.sensitivity),
                    _epoch(document.created_at),
                    _epoch(document.updated_at),
                    _epoch(document.review_at),
                    _epoch(document.expires_at),
                    int(document.ai_allowed),
                    int(document.personal_data),
                    document.origin,
                    json.dumps(list(document.origin_chain)),
                    document.content_hash,
                    document.version,
                    document.path,
                    document.format,
                    json.dumps(dict(document.extra), sort_keys=True),
                    time.time(),
                ),
            )
            doc_key = cur.lastrowid
            db.executemany(
                "INSERT INTO doc_acl (doc_key, principal) VALUES (?, ?)",
                [(doc_key, p) for p in sorted(document.acl)],
            )
            for i, chunk in enumerate(chunks):
                cur = db.execute(
                    "INSERT INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, "
                    "origin) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        chunk.chunk_id,
                        doc_key,
                        chunk.ordinal,
                        chunk.text,
                        chunk.locator,
                        int(chunk.sensitivity),
                        chunk.origin,
                    ),
                )
                key = cur.lastrowid
                db.execute(
                    "INSERT INTO chunks_fts (rowid, terms) VALUES (?, ?)",
                    (key, index_terms(f"{document.title}\n{chunk.text}")),
                )
                if vectors is not None and vectors[i] is not None:
                    vec = np.ascontiguousarray(vectors[i], dtype=np.float32)
                    db.execute(
                        "INSERT INTO vectors (chunk, vec) VALUES (?, ?)", (key, vec.tobytes())
                    )
            # --- facts: replaced with the document (the old ones went by ON DELETE CASCADE)
            db.executemany(
                "INSERT INTO facts (doc_key, entity, period, metric, channel, value, unit, raw, "
                "locator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        doc_key,
                        f.entity,
                        f.period,
                        f.metric,
                        f.channel,
                        float(f.value),
                        f.unit,
                        f.raw,
                        f.locator,
                    )
                    for f in facts
                ],
            )
            # --- end facts

    @staticmethod
    def _delete_in(db: sqlite3.Connection, doc_id: str) -> bool:
        row = db.execute("SELECT key FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        if row is None:
            return False
        db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_key = ?)",
            (row[0],),
        )
        db.execute("DELETE FROM documents WHERE key = ?", (row[0],))
        return True

    def delete(self, doc_id: str) -> bool:
        with self.transaction(content=True) as db:
            return self._delete_in(db, doc_id)

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        with self.transaction() as db:
            return self._set_acl_in(db, doc_id, acl)

    @staticmethod
    def _set_acl_in(db: sqlite3.Connection, doc_id: str, acl: frozenset[str]) -> bool:
        row = db.execute("SELECT key FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        if row is None:
            return False
        db.execute("DELETE FROM doc_acl WHERE doc_key = ?", (row[0],))
        db.executemany(
            "INSERT INTO doc_acl (doc_key, principal) VALUES (?, ?)",
            [(row[0], p) for p in sorted(acl)],
        )
        return True

    def set_acls(
        self, acls: Mapping[str, frozenset[str]], *, synced: tuple[str, datetime] | None = None
    ) -> list[str]:
        """Replace many ACLs in one transaction, optionally recording ``(corpus, time)`` as
        that corpus's successful ACL sync in the same transaction. Returns unknown doc ids."""
        missing: list[str] = []
        with self.transaction() as db:
            for doc_id, acl in acls.items():
                if not self._set_acl_in(db, doc_id, acl):
                    missing.append(doc_id)
            if synced is not None:
                self._record_sync_in(db, *synced)
        return missing

    @staticmethod
    def _record_sync_in(db: sqlite3.Connection, corpus: str, at: datetime) -> None:
        db.execute(
            "INSERT INTO corpus_sync VALUES (?, ?) ON CONFLICT (corpus) "
            "DO UPDATE SET last_acl_sync = excluded.last_acl_sync",
            (corpus, at.timestamp()),
        )

    def record_acl_sync(self, corpus: str, at: datetime) -> None:
        with self.transaction() as db:
            self._record_sync_in(db, corpus, at)

    def last_acl_syncs(self) -> dict[str, datetime]:
        rows = self._db.execute("SELECT corpus, last_acl_sync FROM corpus_sync").fetchall()
        return {str(c): datetime.fromtimestamp(t, UTC) for c, t in rows}

    # ------------------------------------------------------------------ reads

    def _document(self, row: Sequence[Any], acl: frozenset[str]) -> Document:
        return Document(
            doc_id=row[0],
            source_system=row[1],
            corpus=row[2],
            title=row[3],
            uri=row[4],
            owner=row[5],
            acl=acl,
            sensitivity=Sensitivity(row[6]),
            created_at=_dt(row[7]),
            updated_at=_dt(row[8]),
            review_at=_dt(row[9]),
            expires_at=_dt(row[10]),
            ai_allowed=bool(row[11]),
            personal_data=bool(row[12]),
            origin=row[13],
            origin_chain=tuple(json.loads(row[14])),
            content_hash=row[15],
            version=row[16],
            path=row[17],
            format=row[18],
            extra=json.loads(row[19]),
        )

    def _acls(self, doc_keys: Sequence[int]) -> dict[int, frozenset[str]]:
        out: dict[int, set[str]] = {k: set() for k in doc_keys}
        rows = self._db.execute(
            "SELECT doc_key, principal FROM doc_acl WHERE doc_key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(doc_keys)),),
        ).fetchall()
        for key, principal in rows:
            out[key].add(principal)
        return {k: frozenset(v) for k, v in out.items()}

    def _documents_where(self, where: str, params: Sequence[Any]) -> list[Document]:
        rows = self._db.execute(
            f"SELECT key, {_DOC_COLUMNS} FROM documents {where}", tuple(params)
        ).fetchall()
        acls = self._acls([r[0] for r in rows])
        return [self._document(r[1:], acls[r[0]]) for r in rows]

    def get_document(self, doc_id: str) -> Document | None:
        docs = self._documents_where("WHERE doc_id = ?", (doc_id,))
        return docs[0] if docs else None

    def list_documents(self, corpus: str | None = None) -> list[Document]:
        if corpus is None:
            return self._documents_where("ORDER BY doc_id", ())
        return self._documents_where("WHERE corpus = ? ORDER BY doc_id", (corpus,))

    def vectors_by_text(self, doc_id: str) -> dict[str, Vector]:
        """A document's stored vectors keyed by chunk text, to reuse when only metadata changed."""
        rows = self._db.execute(
            "SELECT c.text, v.vec FROM vectors v JOIN chunks c ON c.id = v.chunk "
            "JOIN documents d ON d.key = c.doc_key WHERE d.doc_id = ?",
            (doc_id,),
        ).fetchall()
        return {str(t): np.frombuffer(b, dtype=np.float32).copy() for t, b in rows}

    def corpora(self) -> list[str]:
        """Every corpus that holds at least one document."""
        return [
            str(r[0]) for r in self._db.execute("SELECT DISTINCT corpus FROM documents ORDER BY 1")
        ]

    def content_hash(self, doc_id: str) -> str | None:
        row = self._db.execute(
            "SELECT content_hash FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    @staticmethod
    def _chunk(row: Sequence[Any]) -> Chunk:
        return Chunk(
            chunk_id=row[0],
            doc_id=row[1],
            ordinal=row[2],
            text=row[3],
            locator=row[4],
            sensitivity=Sensitivity(row[5]),
            origin=row[6],
        )

    _CHUNK_SELECT = (
        "SELECT c.chunk_id, d.doc_id, c.ordinal, c.text, c.locator, c.sensitivity, c.origin "
        "FROM chunks c JOIN documents d ON d.key = c.doc_key"
    )

    def get_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._db.execute(
            f"{self._CHUNK_SELECT} WHERE d.doc_id = ? ORDER BY c.ordinal", (doc_id,)
        ).fetchall()
        return [self._chunk(r) for r in rows]

    def hits(self, chunk_ids: Sequence[str]) -> list[tuple[Chunk, Document]]:
        rows = self._db.execute(
            f"{self._CHUNK_SELECT} WHERE c.chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(chunk_ids)),),
        ).fetchall()
        chunks = {r[0]: self._chunk(r) for r in rows}
        docs = {
            d.doc_id: d
            for d in self._documents_where(
                "WHERE doc_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted({c.doc_id for c in chunks.values()})),),
            )
        }
        return [(chunks[c], docs[chunks[c].doc_id]) for c in chunk_ids if c in chunks]

    # ------------------------------------------------------------------ filtered search

    @staticmethod
    def _allowed(flt: SearchFilter) -> tuple[str, list[Any]]:
        """SQL yielding ``(doc_key, ceiling)`` for every document the filter admits.

        The ACL test is driven from the ``doc_acl (principal, doc_key)`` index (an ``IN``
        over the principal set), so a user who may read little costs little; a correlated
        ``EXISTS`` per document was measured 4–40× slower."""
        params: list[Any] = []
        if flt.corpora is None:
            sql = "SELECT d.key AS doc_key, ? AS ceiling FROM documents d"
            params.append(int(flt.max_sensitivity))
            ceiling = "?"
            ceiling_params: list[Any] = [int(flt.max_sensitivity)]
        else:
            ceilings = {c: min(int(s), int(flt.max_sensitivity)) for c, s in flt.corpora.items()}
            sql = (
                "SELECT d.key AS doc_key, cj.value AS ceiling FROM documents d "
                "JOIN json_each(?) cj ON cj.key = d.corpus"
            )
            params.append(json.dumps(ceilings))
            ceiling, ceiling_params = "cj.value", []
        sql += (
            " WHERE d.key IN (SELECT a.doc_key FROM doc_acl a"
            " WHERE a.principal IN (SELECT value FROM json_each(?)))"
            f" AND d.sensitivity <= {ceiling}"
            " AND (d.expires_at IS NULL OR d.expires_at > ?)"
        )
        params += [json.dumps(sorted(flt.principals)), *ceiling_params, flt.now.timestamp()]
        if flt.require_ai_allowed:
            sql += " AND d.ai_allowed = 1"
        if flt.doc_ids is not None:
            sql += " AND d.doc_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(flt.doc_ids)))
        if flt.exclude_doc_ids:
            sql += " AND d.doc_id NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(flt.exclude_doc_ids)))
        return sql, params

    def allowed_doc_ids(self, flt: SearchFilter) -> set[str]:
        """Every document id the filter admits (for tests, counts and operators)."""
        sql, params = self._allowed(flt)
        rows = self._db.execute(
            f"SELECT doc_id FROM documents WHERE key IN (SELECT doc_key FROM ({sql}))", params
        ).fetchall()
        return {str(r[0]) for r in rows}

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        match = fts_query(query)
        if match is None or k <= 0 or not flt.principals:
            return []
        allowed, params = self._allowed(flt)
        sql = (
            f"WITH allowed AS MATERIALIZED ({allowed}) "
            "SELECT c.chunk_id, bm25(chunks_fts) AS score FROM chunks_fts "
            "JOIN chunks c ON c.id = chunks_fts.rowid "
            "JOIN allowed a ON a.doc_key = c.doc_key "
            "WHERE chunks_fts MATCH ? AND c.sensitivity <= a.ceiling "
            "ORDER BY score, c.id LIMIT ?"
        )
        try:
            rows = self._db.execute(sql, [*params, match, k]).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"lexical search failed: {exc}") from exc
        return [(str(cid), -float(score)) for cid, score in rows]

    def _vector_index(self) -> _VectorIndex | None:
        generation = self._generation()
        with self._lock:
            if self._vectors is not None and self._vectors.generation == generation:
                return self._vectors
            rows = self._db.execute(
                "SELECT c.id, c.doc_key, c.sensitivity, v.vec FROM vectors v "
                "JOIN chunks c ON c.id = v.chunk ORDER BY c.id"
            ).fetchall()
            if not rows:
                self._vectors = None
                return None
            dim = len(rows[0][3]) // 4
            self._vectors = _VectorIndex(generation, rows, dim)
            return self._vectors

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        if k <= 0 or not flt.principals:
            return []
        index = self._vector_index()
        if index is None:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != index.dim:
            raise StoreError(f"query vector has {query.shape[0]} dimensions, index has {index.dim}")
        allowed, params = self._allowed(flt)
        rows = self._db.execute(allowed, params).fetchall()
        if not rows:
            return []
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        size = int(max(keys.max(), index.doc_keys.max())) + 1
        ceiling = np.full(size, -1, dtype=np.int8)
        ceiling[keys] = np.fromiter((r[1] for r in rows), dtype=np.int8, count=len(rows))
        # The permission mask: a chunk is a candidate only if its document is allowed and the
        # chunk itself is within that document's ceiling. Ranking happens after masking.
        mask = index.sensitivity <= ceiling[index.doc_keys]
        positions = np.flatnonzero(mask)
        if positions.size == 0:
            return []
        if positions.size * 3 < mask.size:
            scores = index.matrix[positions] @ query
        else:
            scores = (index.matrix @ query)[positions]
        take = min(k, positions.size)
        # Everything scoring at least the k-th best score, ties included, then best first
        # with ties in insertion order: argpartition alone would pick among chunks tied at
        # the cut arbitrarily.
        kth = np.partition(-scores, take - 1)[take - 1]
        top = np.flatnonzero(-scores <= kth)
        order = top[np.lexsort((positions[top], -scores[top]))][:take]
        chunk_keys = index.chunk_keys[positions[order]]
        names = dict(
            self._db.execute(
                "SELECT id, chunk_id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(chunk_keys.tolist()),),
            ).fetchall()
        )
        return [
            (str(names[int(c)]), float(s)) for c, s in zip(chunk_keys, scores[order], strict=True)
        ]

    # ------------------------------------------------------------------ facts

    _FACT_SELECT = (
        "SELECT d.doc_id, f.entity, f.period, f.metric, f.channel, f.value, f.unit, f.locator, "
        "f.raw FROM facts f JOIN documents d ON d.key = f.doc_key"
    )

    @staticmethod
    def _fact(row: Sequence[Any]) -> Fact:
        return Fact(
            entity=row[1],
            period=row[2],
            metric=row[3],
            channel=row[4],
            value=float(row[5]),
            unit=row[6],
            doc_id=row[0],
            locator=row[7],
            raw=row[8],
        )

    def query_facts(
        self,
        flt: SearchFilter,
        *,
        metric: str | None = None,
        entity: str | None = None,
        period: str | None = None,
        channel: str | None = None,
    ) -> list[tuple[Fact, Document]]:
        """Facts matching every given slot, each with its document, filtered *inside the
        query* by the same ``_allowed`` SQL as chunk search: a fact is visible exactly where
        its document is (its sensitivity and ACL are its document's). Storage order."""
        if not flt.principals:
            return []
        allowed, params = self._allowed(flt)
        where: list[str] = []
        args: list[Any] = []
        for column, value in (
            ("metric", metric),
            ("entity", entity),
            ("period", period),
            ("channel", channel),
        ):
            if value is not None:
                where.append(f"f.{column} = ?")
                args.append(value)
        sql = (
            f"WITH allowed AS MATERIALIZED ({allowed}) {self._FACT_SELECT} "
            "JOIN allowed a ON a.doc_key = f.doc_key"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY f.id"
        try:
            rows = self._db.execute(sql, [*params, *args]).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"fact query failed: {exc}") from exc
        ids = sorted({str(r[0]) for r in rows})
        docs = {
            d.doc_id: d
            for d in self._documents_where(
                "WHERE doc_id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
            )
        }
        return [(self._fact(r), docs[str(r[0])]) for r in rows if str(r[0]) in docs]

    def list_facts(self, doc_id: str | None = None) -> list[Fact]:
        """Every stored fact (or one document's), unfiltered: for operators only."""
        if doc_id is None:
            rows = self._db.execute(f"{self._FACT_SELECT} ORDER BY d.doc_id, f.id").fetchall()
        else:
            rows = self._db.execute(
                f"{self._FACT_SELECT} WHERE d.doc_id = ? ORDER BY f.id", (doc_id,)
            ).fetchall()
        return [self._fact(r) for r in rows]

    # ------------------------------------------------------------------ end facts

    # ------------------------------------------------------------------ status

    def stats(self) -> StoreStats:
        db = self._db
        by_corpus = dict(db.execute("SELECT corpus, COUNT(*) FROM documents GROUP BY corpus"))
        by_sens = {
            Sensitivity(s).name: n
            for s, n in db.execute("SELECT sensitivity, COUNT(*) FROM documents GROUP BY 1")
        }
        size = 0
        if str(self.path) != ":memory:":
            size = sum(
                p.stat().st_size
                for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
                if p.exists()
            )
        return StoreStats(
            documents=db.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
            chunks=db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
            vectors=db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0],
            by_corpus=by_corpus,
            by_sensitivity=by_sens,
            size_bytes=size,
        )
