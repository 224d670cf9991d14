"""The ``Store`` protocol: what every backend (SQLite now, PostgreSQL later) must provide.

The one rule every backend obeys: **the filter is part of the search**. ``lexical_search``
and ``vector_search`` return the top-k *of the allowed set*, computed inside the index
query (SQL predicate or vector mask) — never by over-fetching and dropping afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from clearance.model import Chunk, Document, Fact, Sensitivity

__all__ = [
    "CorpusSync",
    "SearchFilter",
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
class CorpusSync:
    corpus: str
    last_acl_sync: datetime | None


@dataclass(frozen=True, slots=True)
class StoreStats:
    documents: int
    chunks: int
    vectors: int
    by_corpus: Mapping[str, int]
    by_sensitivity: Mapping[str, int]
    size_bytes: int


Vector = npt.NDArray[np.float32]


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


@runtime_checkable
class Store(Protocol):
    """Persistence and filtered search. Implementations must be safe to reopen."""

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

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """``(chunk_id, score)`` best first, top-k of the allowed set."""

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        """``(chunk_id, cosine)`` best first, top-k of the allowed set."""

    def hits(self, chunk_ids: Sequence[str]) -> list[tuple[Chunk, Document]]:
        """Chunks with their documents, in the order asked."""

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        """How many allowed chunks there are and how many of them hold each index term:
        the lexical search's own statistics, so a judgement built on them depends on
        nothing the filter hides."""

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        """Replace one document's ACL without touching its content or vectors."""

    def stats(self) -> StoreStats: ...

    def get_meta(self, key: str) -> Any: ...

    def set_meta(self, key: str, value: Any) -> None: ...

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
