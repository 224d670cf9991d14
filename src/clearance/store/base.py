"""The ``Store`` protocol: what every backend (SQLite, PostgreSQL) must provide.

The one rule every backend obeys: **the filter is part of the search**. ``lexical_search``
and ``vector_search`` return the top-k *of the allowed set*, computed inside the index
query (SQL predicate or vector mask) — never by over-fetching and dropping afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, runtime_checkable

from clearance.model import Chunk, Document, Fact, Sensitivity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "AclStore",
    "DocumentStore",
    "MetaStore",
    "Retrieved",
    "SearchFilter",
    "SearchStore",
    "SideTableStore",
    "SqlConnection",
    "SqlCursor",
    "Store",
    "StoreStats",
    "TermStatistics",
]


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which chunks a search may see. Every field narrows; nothing widens.

    * ``principals`` — a chunk's document ACL must name at least one of these
      (an empty set matches nothing; a document with an empty ACL matches nobody);
    * ``corpora`` — allowed corpus names, each with its own sensitivity ceiling
      (``None``: every corpus, under ``max_sensitivity`` alone);
    * ``max_sensitivity`` — global ceiling for documents *and* chunks;
    * ``doc_ids`` — if given, only these documents; ``exclude_doc_ids`` never these;
    * ``now`` — documents whose ``expires_at`` is not after ``now`` are excluded;
    * ``require_ai_allowed`` — exclude documents with ``ai_allowed = false``.
    """

    principals: frozenset[str]
    corpora: Mapping[str, Sensitivity] | None = None
    max_sensitivity: Sensitivity = Sensitivity.CONFIDENTIAL
    doc_ids: frozenset[str] | None = None
    exclude_doc_ids: frozenset[str] = frozenset()
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    require_ai_allowed: bool = True

    def ceiling_for(self, corpus: str) -> Sensitivity | None:
        """The effective ceiling for one corpus, or ``None`` if the corpus is excluded."""
        if self.corpora is None:
            return self.max_sensitivity
        if corpus not in self.corpora:
            return None
        return min(self.corpora[corpus], self.max_sensitivity)

    def admits(self, document: Document, chunk: Chunk | None = None) -> bool:
        """Reference semantics in plain Python; backends must agree with it exactly."""
        ceiling = self.ceiling_for(document.corpus)
        if ceiling is None or document.sensitivity > ceiling:
            return False
        if chunk is not None and chunk.sensitivity > ceiling:
            return False
        if not (document.acl & self.principals):
            return False
        if self.doc_ids is not None and document.doc_id not in self.doc_ids:
            return False
        if document.doc_id in self.exclude_doc_ids:
            return False
        if document.expires_at is not None and document.expires_at <= self.now:
            return False
        return not (self.require_ai_allowed and not document.ai_allowed)


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    chunks: int
    vectors: int
    by_corpus: Mapping[str, int]
    by_sensitivity: Mapping[str, int]
    size_bytes: int


Vector: TypeAlias = "npt.NDArray[np.float32]"


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """Document frequencies over the chunks one filter allows (``chunks`` of them); a term
    missing from ``df`` occurs in none."""

    chunks: int
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        """BM25's ``ln(1 + (N - df + 0.5) / (df + 0.5))``: largest for a term no allowed
        chunk holds, never negative."""
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.chunks - df + 0.5) / (df + 0.5))


class Retrieved(NamedTuple):
    """Both retrievers' ``(chunk_id, score)`` lists for one request, ranked in one mask."""

    lexical: list[tuple[str, float]]
    vector: list[tuple[str, float]]


@runtime_checkable
class DocumentStore(Protocol):
    """Documents with their chunks, vectors, facts and ACLs, written atomically."""

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        """Insert or replace a document with all its chunks, atomically.

        ``vectors`` holds one row per chunk, or ``None`` for a chunk that must have no vector.
        ``facts`` (numbers from its tables) replace the document's facts in the same write.
        """

    def delete(self, doc_id: str) -> bool:
        """Purge a document with its chunks, vectors and ACL. ``False`` if it did not exist."""

    def get_document(self, doc_id: str) -> Document | None: ...

    def get_chunks(self, doc_id: str) -> list[Chunk]: ...

    def list_documents(self, corpus: str | None = None) -> list[Document]: ...

    def content_hash(self, doc_id: str) -> str | None:
        """The stored document's content hash (ingestion skips unchanged content)."""

    def vectors_by_text(self, doc_id: str) -> dict[str, Vector]:
        """A document's stored vectors keyed by chunk text, to reuse when only metadata
        changed."""

    def list_facts(self, doc_id: str | None = None) -> list[Fact]:
        """Every stored fact (or one document's), unfiltered: for operators only."""

    def corpora(self) -> list[str]:
        """Every corpus that holds at least one document."""

    def stats(self) -> StoreStats: ...


@runtime_checkable
class AclStore(Protocol):
    """ACLs replaced without touching content, and when each corpus was last synced."""

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        """Replace one document's ACL without touching its content or vectors."""

    def set_acls(
        self,
        acls: Mapping[str, frozenset[str]],
        *,
        synced: tuple[str, datetime] | None = None,
        extra: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Replace many ACLs in one transaction, optionally recording ``(corpus, time)`` as
        that corpus's successful ACL sync in the same transaction, and merging ``extra``
        into documents' ``extra``. Returns the doc ids that are not stored."""

    def record_acl_sync(self, corpus: str, at: datetime) -> None: ...

    def last_acl_syncs(self) -> dict[str, datetime]: ...


@runtime_checkable
class SearchStore(Protocol):
    """Filtered search: every result is inside the filter, computed in the index query."""

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """``(chunk_id, score)`` best first, top-k of the allowed set."""

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """``(chunk_id, cosine)`` best first, top-k of the allowed set."""

    def retrieve(self, query: str, vector: Vector | None, flt: SearchFilter, k: int) -> Retrieved:
        """Lexical and (given a query vector) vector top-k of the allowed set, with the
        permission mask computed once for both."""

    def hits(self, chunk_ids: Sequence[str]) -> list[tuple[Chunk, Document]]:
        """Chunks with their documents, in the order asked."""

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        """How many allowed chunks there are and how many of them hold each index term:
        the lexical search's own statistics, so a judgement built on them depends on
        nothing the filter hides."""

    def allowed_doc_ids(self, flt: SearchFilter) -> set[str]:
        """Every document id the filter admits (previews, counts, operators)."""

    def query_facts(
        self,
        flt: SearchFilter,
        *,
        metric: str | None = None,
        entity: str | None = None,
        period: str | None = None,
        channel: str | None = None,
    ) -> list[tuple[Fact, Document]]:
        """Facts matching every given slot, each with its document, filtered inside the
        query exactly as chunks are."""

    def warm(self, *, vectors: bool) -> None:
        """Build in-memory search structures now rather than in the first search."""


@runtime_checkable
class MetaStore(Protocol):
    """Small named values (the directory, embedding model, sync state)."""

    def get_meta(self, key: str) -> Any: ...

    def set_meta(self, key: str, value: Any) -> None: ...

    def directory_if_changed(self, generation: int | None) -> tuple[int, Any] | None:
        """``(generation, value)`` of the stored directory, or ``None`` while its
        generation is still ``generation``."""


@runtime_checkable
class SideTableStore(Protocol):
    """Transactions on the index's side tables (store/side_tables.py), in qmark style."""

    #: ``"sqlite"`` or ``"postgres"``: for the few statements the dialects spell apart.
    dialect: str

    def transaction(self) -> AbstractContextManager[SqlConnection]:
        """One write transaction; everything inside commits together or not at all."""

    def reading(self) -> AbstractContextManager[SqlConnection]:
        """A connection for reads of side tables; write through :meth:`transaction`."""

    def has_tables(self, *names: str) -> bool: ...

    def database_admits_faq(
        self, entry_id: str, principals: frozenset[str], ceiling: Sensitivity
    ) -> bool:
        """The database's own second check of an FAQ entry (row-level policies), or True
        where there is no second wall."""


@runtime_checkable
class Store(DocumentStore, AclStore, SearchStore, MetaStore, SideTableStore, Protocol):
    """Everything application code uses of an index: a new backend is one module that
    satisfies this protocol and passes the conformance suite (tests/conformance/)."""

    @property
    def location(self) -> str:
        """Where the index is, for people (a file path, a DSN without its password)."""

    @property
    def identity(self) -> str:
        """Names this index uniquely within the process."""

    def close(self) -> None: ...


class SqlCursor(Protocol):
    """What the side-table modules use of a cursor (``sqlite3`` and psycopg both have it)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class SqlConnection(Protocol):
    """What the side-table modules use of a connection: qmark-style statements."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlCursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> SqlCursor: ...
