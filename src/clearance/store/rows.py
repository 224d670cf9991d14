"""Rows as both stores write and read them: one definition of a document's columns, of
what an upsert must satisfy, and of how a stored row becomes a model object again.

:class:`SqlStore` holds the statements both backends run alike, in the ``sqlite3`` qmark
style (``?``): a ``sqlite3.Connection`` takes them as they are, a PostgreSQL connection
through :class:`~clearance.store.pg_connection.QmarkConnection`. Each backend supplies its
connections and the few fragments the dialects spell apart (a list parameter, collation,
an ACL as one column, a row lock, a JSON merge, the vector count, the index's size). What
differs beyond that stays in each backend: the search structures (SQLite's term tables and
in-memory copies, PostgreSQL's term arrays and ``pgvector``) and how a document's chunks
are inserted."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from clearance.analysis import (
    is_cjk_pair,
    kana_free,
    search_terms,
    unseen_pairs_as_characters,
)
from clearance.errors import StoreError
from clearance.lifecycle import Closing
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import (
    Retrieved,
    SearchFilter,
    SqlConnection,
    StoreStats,
    TermStatistics,
    Vector,
)

__all__ = [
    "CHUNK_COLUMNS",
    "CHUNK_SELECT",
    "DOC_COLUMNS",
    "FACT_SELECT",
    "SqlStore",
    "allowed_facts_sql",
    "check_upsert",
    "chunk_from_row",
    "chunk_row",
    "delete_document",
    "document_from_row",
    "document_row",
    "epoch",
    "fact_from_row",
    "fact_row",
    "from_epoch",
    "insert_acl",
    "insert_document",
    "insert_facts",
    "marks",
    "merge_patch",
    "refuse_other_width",
    "replace_acl",
]

DOC_COLUMNS = (
    "doc_id, source_system, corpus, title, uri, owner, sensitivity, created_at, updated_at, "
    "review_at, expires_at, ai_allowed, personal_data, origin, origin_chain, content_hash, "
    "version, path, format, extra"
)


def epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def from_epoch(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def check_upsert(
    document: Document,
    chunks: Sequence[Chunk],
    vectors: Sequence[Vector | None] | None,
    facts: Sequence[Fact],
) -> tuple[int | None, list[Vector | None]]:
    """Refuse a write no store may hold, naming the document; returns the vectors' width
    (``None`` without one) and each chunk's vector as a flat float32 row, or ``None``."""
    if vectors is not None and len(vectors) != len(chunks):
        raise StoreError(f"{document.doc_id}: {len(chunks)} chunks but {len(vectors)} vectors")
    for chunk in chunks:
        if chunk.doc_id != document.doc_id:
            raise StoreError(f"chunk {chunk.chunk_id} does not belong to {document.doc_id}")
        if chunk.sensitivity < document.sensitivity:
            raise StoreError(f"chunk {chunk.chunk_id} is less sensitive than its document")
    # Facts are visible exactly where their document is: each must belong to it.
    for fact in facts:
        if fact.doc_id != document.doc_id:
            raise StoreError(f"a fact at {fact.locator} does not belong to {document.doc_id}")
    # One index holds one vector space: a row of another width would break every later
    # vector search, so it is refused here, naming the document.
    import numpy as np  # loaded with the first write, not with every command

    rows: list[Vector | None] = [
        None if v is None else np.ascontiguousarray(v, dtype=np.float32).reshape(-1)
        for v in (vectors if vectors is not None else [None] * len(chunks))
    ]
    for i, row in enumerate(rows):
        if row is not None and not np.isfinite(row).all():
            raise StoreError(f"{document.doc_id}: the vector of chunk {i} is not finite")
    dims = {row.size for row in rows if row is not None}
    if len(dims) > 1:
        raise StoreError(f"{document.doc_id}: vectors of different dimensions {sorted(dims)}")
    return (dims.pop() if dims else None), rows


def refuse_other_width(doc_id: str, width: int | None, stored: int | None) -> None:
    """One index holds one vector space: a row of another width would break every later
    vector search."""
    if width is not None and stored is not None and stored != width:
        raise StoreError(
            f"{doc_id}: {width}-dimensional vectors, the index holds {stored}-dimensional ones"
        )


def document_row(document: Document) -> tuple[Any, ...]:
    """The values of :data:`DOC_COLUMNS`, in order (booleans as ``bool``: SQLite stores
    them as 0/1, PostgreSQL as ``boolean``)."""
    return (
        document.doc_id,
        document.source_system,
        document.corpus,
        document.title,
        document.uri,
        document.owner,
        int(document.sensitivity),
        epoch(document.created_at),
        epoch(document.updated_at),
        epoch(document.review_at),
        epoch(document.expires_at),
        bool(document.ai_allowed),
        bool(document.personal_data),
        document.origin,
        json.dumps(list(document.origin_chain)),
        document.content_hash,
        document.version,
        document.path,
        document.format,
        json.dumps(dict(document.extra), sort_keys=True),
    )


def document_from_row(row: Sequence[Any], acl: frozenset[str]) -> Document:
    """A document from the values of :data:`DOC_COLUMNS` and its ACL."""
    return Document(
        doc_id=row[0],
        source_system=row[1],
        corpus=row[2],
        title=row[3],
        uri=row[4],
        owner=row[5],
        acl=acl,
        sensitivity=Sensitivity(row[6]),
        created_at=from_epoch(row[7]),
        updated_at=from_epoch(row[8]),
        review_at=from_epoch(row[9]),
        expires_at=from_epoch(row[10]),
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


#: The chunks' columns as :func:`chunk_from_row` reads them (both backends select them so).
CHUNK_SELECT = (
    "SELECT c.chunk_id, d.doc_id, c.ordinal, c.text, c.locator, c.sensitivity, c.origin "
    "FROM chunks c JOIN documents d ON d.key = c.doc_key"
)
#: The facts' columns as :func:`fact_from_row` reads them.
FACT_SELECT = (
    "SELECT d.doc_id, f.entity, f.period, f.metric, f.channel, f.value, f.unit, f.locator, "
    "f.raw FROM facts f JOIN documents d ON d.key = f.doc_key"
)


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """``(chunk_id, doc_id, ordinal, text, locator, sensitivity, origin)`` → a chunk."""
    return Chunk(
        chunk_id=row[0],
        doc_id=row[1],
        ordinal=row[2],
        text=row[3],
        locator=row[4],
        sensitivity=Sensitivity(row[5]),
        origin=row[6],
    )


def fact_from_row(row: Sequence[Any]) -> Fact:
    """``(doc_id, entity, period, metric, channel, value, unit, locator, raw)`` → a fact."""
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


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch (SQLite's ``json_patch``): objects merge key by key, a
    ``None`` value removes its key, anything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def chunk_row(doc_key: int, chunk: Chunk) -> tuple[Any, ...]:
    """The ``chunks`` columns both stores insert: ``(chunk_id, doc_key, ordinal, text,
    locator, sensitivity, origin)``."""
    return (
        chunk.chunk_id,
        doc_key,
        chunk.ordinal,
        chunk.text,
        chunk.locator,
        int(chunk.sensitivity),
        chunk.origin,
    )


def fact_row(doc_key: int | None, fact: Fact) -> tuple[Any, ...]:
    """The ``facts`` columns after ``doc_key`` (entity, period, metric, channel, value,
    unit, raw, locator), as both stores insert them."""
    return (
        doc_key,
        fact.entity,
        fact.period,
        fact.metric,
        fact.channel,
        float(fact.value),
        fact.unit,
        fact.raw,
        fact.locator,
    )


#: The chunk columns :func:`chunk_row` fills.
CHUNK_COLUMNS = "chunk_id, doc_key, ordinal, text, locator, sensitivity, origin"


def insert_acl(db: SqlConnection, doc_key: int, acl: frozenset[str]) -> None:
    db.executemany(
        "INSERT INTO doc_acl (doc_key, principal) VALUES (?, ?)",
        [(doc_key, p) for p in sorted(acl)],
    )


def replace_acl(db: SqlConnection, doc_id: str, acl: frozenset[str], *, lock: str = "") -> bool:
    """Replace a document's ACL; False when there is no such document. ``lock`` is the
    dialect's row lock for the document (``FOR UPDATE``), so two writers queue."""
    row = db.execute(f"SELECT key FROM documents WHERE doc_id = ? {lock}", (doc_id,)).fetchone()
    if row is None:
        return False
    db.execute("DELETE FROM doc_acl WHERE doc_key = ?", (row[0],))
    insert_acl(db, int(row[0]), acl)
    return True


def marks(count: int) -> str:
    """``count`` qmark placeholders, comma-separated: the ``VALUES`` of one row."""
    return ", ".join("?" * count)


def insert_document(db: SqlConnection, document: Document) -> int:
    """Insert a document's row and its ACL; returns the document's key."""
    [(doc_key,)] = db.execute(
        f"INSERT INTO documents ({DOC_COLUMNS}, ingested_at) VALUES ({marks(21)}) RETURNING key",
        (*document_row(document), time.time()),
    ).fetchall()
    insert_acl(db, int(doc_key), document.acl)
    return int(doc_key)


def insert_facts(db: SqlConnection, doc_key: int, facts: Sequence[Fact]) -> None:
    """A document's facts (the old ones went with its rows, by ON DELETE CASCADE)."""
    db.executemany(
        "INSERT INTO facts (doc_key, entity, period, metric, channel, value, unit, raw, "
        f"locator) VALUES ({marks(9)})",
        [fact_row(doc_key, f) for f in facts],
    )


def delete_document(db: SqlConnection, doc_id: str) -> bool:
    """Delete a document (its chunks, vectors, ACL and facts go with it); ``False`` if
    there was no such document."""
    return db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount > 0


def allowed_facts_sql(allowed: str, key: str, slots: Sequence[str]) -> str:
    """The facts of the documents ``allowed`` (a query of ``(key, ceiling)`` with its key
    column named ``key``) whose ``slots`` conditions all hold, in storage order."""
    sql = (
        f"WITH allowed AS MATERIALIZED ({allowed}) {FACT_SELECT} "
        f"JOIN allowed a ON a.{key} = f.doc_key"
    )
    if slots:
        sql += " WHERE " + " AND ".join(slots)
    return sql + " ORDER BY f.id"


class SqlStore(Closing, ABC):
    """What both SQL stores do alike: document, chunk and fact reads, ACL writes and
    metadata, in qmark statements. A backend provides :meth:`transaction`, :meth:`reading`
    and :meth:`_snapshot` (one consistent read) and the dialect's fragments below."""

    #: ``"sqlite"`` or ``"postgres"``.
    dialect: str
    #: What orders text in code point order (after a column or expression).
    _COLLATE: str
    #: A query of the number of stored vectors.
    _VECTOR_COUNT: str
    #: A document's ACL as one column of a ``FROM documents`` query.
    _ACL_COLUMN: str
    #: The row lock an ACL writer takes on its document.
    _ROW_LOCK: str

    @abstractmethod
    def transaction(self) -> AbstractContextManager[SqlConnection]: ...

    @abstractmethod
    def reading(self) -> AbstractContextManager[SqlConnection]: ...

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[SqlConnection]:
        """One consistent read of several tables."""

    @staticmethod
    @abstractmethod
    def _in(column: str) -> str:
        """``column`` is one of a list parameter (given through :meth:`_list`)."""

    @staticmethod
    @abstractmethod
    def _list(values: Sequence[str]) -> Any: ...

    @staticmethod
    @abstractmethod
    def _acl(value: Any) -> frozenset[str]:
        """The ACL from the value of :attr:`_ACL_COLUMN`."""

    @abstractmethod
    def _size_bytes(self, db: SqlConnection) -> int:
        """How much room the index takes."""

    @abstractmethod
    def _merge_extra(self, db: SqlConnection, doc_id: str, patch: Mapping[str, Any]) -> None:
        """Merge ``patch`` into a document's ``extra`` (RFC 7396: ``None`` removes a key)."""

    # ------------------------------------------------------------------ metadata

    def get_meta(self, key: str) -> Any:
        with self.reading() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )

    # ------------------------------------------------------------------ ACLs

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        return not self.set_acls({doc_id: acl})

    def set_acls(
        self,
        acls: Mapping[str, frozenset[str]],
        *,
        synced: tuple[str, datetime] | None = None,
        extra: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Replace many ACLs in one transaction, optionally recording ``(corpus, time)`` as
        that corpus's successful ACL sync (the revocation clock's start) in the same
        transaction. Returns unknown doc ids.

        ``extra`` merges keys into documents' ``extra`` in the same transaction (a ``None``
        value removes the key): what a sync notes beside an ACL, such as why it is empty."""
        missing: list[str] = []
        with self.transaction() as db:
            for doc_id, acl in acls.items():
                if not replace_acl(db, doc_id, acl, lock=self._ROW_LOCK):
                    missing.append(doc_id)
            for doc_id, patch in (extra or {}).items():
                self._merge_extra(db, doc_id, patch)
            if synced is not None:
                corpus, at = synced
                db.execute(
                    "INSERT INTO corpus_sync VALUES (?, ?) ON CONFLICT (corpus) "
                    "DO UPDATE SET last_acl_sync = excluded.last_acl_sync",
                    (corpus, at.timestamp()),
                )
        return missing

    def record_acl_sync(self, corpus: str, at: datetime) -> None:
        self.set_acls({}, synced=(corpus, at))

    def last_acl_syncs(self) -> dict[str, datetime]:
        with self._snapshot() as db:
            rows = db.execute("SELECT corpus, last_acl_sync FROM corpus_sync").fetchall()
        return {str(c): datetime.fromtimestamp(t, UTC) for c, t in rows}

    # ------------------------------------------------------------------ reads

    def _documents_where(
        self, db: SqlConnection, where: str, params: Sequence[Any]
    ) -> list[Document]:
        rows = db.execute(
            f"SELECT {DOC_COLUMNS}, {self._ACL_COLUMN} FROM documents {where}", tuple(params)
        ).fetchall()
        return [document_from_row(r[:-1], self._acl(r[-1])) for r in rows]

    def _documents_by_id(self, db: SqlConnection, doc_ids: Sequence[str]) -> dict[str, Document]:
        found = self._documents_where(db, f"WHERE {self._in('doc_id')}", (self._list(doc_ids),))
        return {d.doc_id: d for d in found}

    def get_document(self, doc_id: str) -> Document | None:
        with self._snapshot() as db:
            docs = self._documents_where(db, "WHERE doc_id = ?", (doc_id,))
        return docs[0] if docs else None

    def list_documents(self, corpus: str | None = None) -> list[Document]:
        with self._snapshot() as db:
            if corpus is None:
                return self._documents_where(db, f"ORDER BY doc_id{self._COLLATE}", ())
            return self._documents_where(
                db, f"WHERE corpus = ? ORDER BY doc_id{self._COLLATE}", (corpus,)
            )

    def content_hash(self, doc_id: str) -> str | None:
        with self._snapshot() as db:
            row = db.execute(
                "SELECT content_hash FROM documents WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def get_chunks(self, doc_id: str) -> list[Chunk]:
        with self._snapshot() as db:
            rows = db.execute(
                f"{CHUNK_SELECT} WHERE d.doc_id = ? ORDER BY c.ordinal", (doc_id,)
            ).fetchall()
        return [chunk_from_row(r) for r in rows]

    def hits(self, chunk_ids: Sequence[str]) -> list[tuple[Chunk, Document]]:
        """Chunks with their documents, in the order asked (ids a search returned)."""
        with self._snapshot() as db:
            rows = db.execute(
                f"{CHUNK_SELECT} WHERE {self._in('c.chunk_id')}", (self._list(chunk_ids),)
            ).fetchall()
            chunks = {r[0]: chunk_from_row(r) for r in rows}
            docs = self._documents_by_id(db, sorted({c.doc_id for c in chunks.values()}))
        return [(chunks[c], docs[chunks[c].doc_id]) for c in chunk_ids if c in chunks]

    def list_facts(self, doc_id: str | None = None) -> list[Fact]:
        """Every stored fact (or one document's), unfiltered: for operators only."""
        with self._snapshot() as db:
            if doc_id is None:
                sql = f"{FACT_SELECT} ORDER BY d.doc_id{self._COLLATE}, f.id"
                rows = db.execute(sql).fetchall()
            else:
                rows = db.execute(
                    f"{FACT_SELECT} WHERE d.doc_id = ? ORDER BY f.id", (doc_id,)
                ).fetchall()
        return [fact_from_row(r) for r in rows]

    def stats(self) -> StoreStats:
        with self._snapshot() as db:
            by_corpus = db.execute(
                f"SELECT corpus{self._COLLATE}, count(*) FROM documents GROUP BY 1 ORDER BY 1"
            ).fetchall()
            by_sensitivity = db.execute(
                "SELECT sensitivity, count(*) FROM documents GROUP BY 1 ORDER BY 1"
            ).fetchall()
            documents, chunks, vectors = db.execute(
                "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), "
                f"({self._VECTOR_COUNT})"
            ).fetchone()
            size = self._size_bytes(db)
        return StoreStats(
            documents=int(documents),
            chunks=int(chunks),
            vectors=int(vectors),
            by_corpus={str(c): int(n) for c, n in by_corpus},
            by_sensitivity={Sensitivity(s).name: int(n) for s, n in by_sensitivity},
            size_bytes=size,
        )

    # ------------------------------------------------------------------ facts

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
        query* by the same SQL as chunk search: a fact is visible exactly where its
        document is (its sensitivity and ACL are its document's). Storage order."""
        if not flt.principals:
            return []
        slots = {"metric": metric, "entity": entity, "period": period, "channel": channel}
        rows, docs = self._allowed_facts(flt, {c: v for c, v in slots.items() if v is not None})
        return [(fact_from_row(r), docs[str(r[0])]) for r in rows if str(r[0]) in docs]

    @abstractmethod
    def _allowed_facts(
        self, flt: SearchFilter, slots: Mapping[str, str]
    ) -> tuple[list[Any], dict[str, Document]]:
        """The fact rows the filter admits with every slot's column equal to its value,
        and the documents they name."""

    # ------------------------------------------------------------------ search

    def retrieve(self, query: str, vector: Vector | None, flt: SearchFilter, k: int) -> Retrieved:
        """Lexical and (given a query vector) vector top-k of the allowed set, with the
        permission filter applied once for both."""
        # The grammar of a Japanese question ("って", "ますか", "の健") is in every Japanese
        # chunk: searched for, it ranks the passages holding most of it first, and a
        # question about bereavement leave found the FAQ entries asking "…必要がありますか".
        # The relevance gate weighs the same terms (:func:`clearance.analysis.kana_free`).
        terms = kana_free(search_terms(query)) or search_terms(query)
        if k > 0 and flt.principals and (pairs := [t for t in terms if is_cjk_pair(t)]):
            # A CJK pair none of the caller's chunks holds ("育休", the short form of the
            # 育児休業 the documents spell out) is searched as its characters; the relevance
            # gate weighs it the same way. Counted over the allowed chunks only.
            seen = self.term_statistics([*pairs, *(ch for t in pairs for ch in t)], flt).df
            terms = unseen_pairs_as_characters(terms, seen)
        if k <= 0 or not flt.principals or (not terms and vector is None):
            return Retrieved([], [])
        return self._retrieve(terms, vector, flt, k)

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """BM25 top-k of the allowed chunks, with statistics over the allowed chunks only."""
        return self.retrieve(query, None, flt, k).lexical

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """Cosine top-k of the allowed chunks that have a vector."""
        return self.retrieve("", vector, flt, k).vector

    @abstractmethod
    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        """How many allowed chunks there are and how many of them hold each index term
        (:meth:`clearance.store.base.Store.term_statistics`)."""

    @abstractmethod
    def _retrieve(
        self, terms: list[str], vector: Vector | None, flt: SearchFilter, k: int
    ) -> Retrieved:
        """:meth:`retrieve` for analysed query terms (none: the vector search alone), a
        filter naming principals and a positive ``k``."""
