"""Deliberately wrong stores, for the reverse proofs: each wraps a real store of the backend
under test and gets one rule wrong in a way an implementation plausibly could. A check
that passes on the real store must fail on the wrapper, or it proves nothing.

Wrappers delegate everything they do not override, so the same check runs on both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from clearance.analysis import is_cjk_pair, search_terms, unseen_pairs_as_characters
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import SearchFilter, Store, TermStatistics, Vector


class Wrapper:
    """Delegates every attribute to ``inner``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _everyone_in(store: Store) -> frozenset[str]:
    """Every principal any stored ACL names: a filter with these sees every readable row."""
    return frozenset().union(*(d.acl for d in store.list_documents()))


def _widened(store: Store, flt: SearchFilter) -> SearchFilter:
    """``flt`` with every field opened up: what a search over everything uses."""
    return SearchFilter(
        principals=_everyone_in(store),
        corpora=None,
        max_sensitivity=Sensitivity.RESTRICTED,
        now=datetime(1970, 1, 2, tzinfo=UTC),
        require_ai_allowed=False,
    )


class PostFilter(Wrapper):
    """The forbidden shape: search everything for ``fetch(k)`` rows, then drop what the
    caller may not see. With a small over-fetch, a selective filter gets fewer rows than
    asked (or none); with an unbounded one, every row is right but lexical scores carry
    statistics over every chunk, hidden ones included."""

    def __init__(self, inner: Store, fetch: Callable[[int], int]) -> None:
        super().__init__(inner)
        self.fetch = fetch

    def _keep(
        self, rows: list[tuple[str, float]], flt: SearchFilter, k: int
    ) -> list[tuple[str, float]]:
        allowed = {c.chunk_id for c, d in self.inner.hits([r for r, _ in rows]) if flt.admits(d, c)}
        return [(cid, s) for cid, s in rows if cid in allowed][:k]

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        rows = self.inner.lexical_search(query, _widened(self.inner, flt), self.fetch(k))
        return self._keep(rows, flt, k)

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        rows = self.inner.vector_search(vector, _widened(self.inner, flt), self.fetch(k))
        return self._keep(rows, flt, k)

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        return self.inner.term_statistics(terms, _widened(self.inner, flt))

    def retrieve(self, query: str, vector: Vector | None, flt: SearchFilter, k: int) -> Any:
        lexical = self.lexical_search(query, flt, k)
        found = [] if vector is None else self.vector_search(vector, flt, k)
        return type(self.inner.retrieve(query, vector, flt, 0))(lexical, found)


class BackOffOverEverything(Wrapper):
    """Ranks inside the filter, but decides which CJK pairs to search as their characters
    from every chunk's statistics: a hidden chunk holding the pair "育休" keeps the caller's
    search from backing off to 育 and 休, and their 育児休業 passage is not found."""

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        terms = search_terms(query)
        pairs = [t for t in terms if is_cjk_pair(t)]
        wanted = [*pairs, *(ch for t in pairs for ch in t)]
        seen = self.inner.term_statistics(wanted, _widened(self.inner, flt)).df
        searched = unseen_pairs_as_characters(terms, seen)
        return self.inner._retrieve(searched, None, flt, k).lexical  # type: ignore[no-any-return]


def over_fetch(inner: Store) -> PostFilter:
    """Post-filtering after fetching twice as many rows as asked."""
    return PostFilter(inner, lambda k: 2 * k)


def global_statistics(inner: Store) -> PostFilter:
    """Post-filtering after fetching every row: the right rows, scored with statistics over
    everything."""
    return PostFilter(inner, lambda k: 1_000_000)


class FilterRewrite(Wrapper):
    """Forgets one filter field: every filtered read runs with ``rewrite(flt)``."""

    def __init__(self, inner: Store, rewrite: Callable[[SearchFilter], SearchFilter]) -> None:
        super().__init__(inner)
        self.rewrite = rewrite

    def lexical_search(self, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        return self.inner.lexical_search(query, self.rewrite(flt), k)

    def vector_search(self, vector: Vector, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        return self.inner.vector_search(vector, self.rewrite(flt), k)

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        return self.inner.term_statistics(terms, self.rewrite(flt))

    def query_facts(self, flt: SearchFilter, **slots: str | None) -> Any:
        return self.inner.query_facts(self.rewrite(flt), **slots)  # type: ignore[attr-defined]

    def retrieve(self, query: str, vector: Vector | None, flt: SearchFilter, k: int) -> Any:
        return self.inner.retrieve(query, vector, self.rewrite(flt), k)  # type: ignore[attr-defined]


def _replace(**changes: Any) -> Callable[[SearchFilter], SearchFilter]:
    return lambda flt: dataclasses.replace(flt, **changes)


#: One wrong filter per field the filter has (name → rewrite).
FORGETS: dict[str, Callable[[SearchFilter], SearchFilter]] = {
    "corpora and their ceilings": _replace(corpora=None),
    "the global ceiling": _replace(max_sensitivity=Sensitivity.RESTRICTED),
    "doc_ids": _replace(doc_ids=None),
    "exclude_doc_ids": _replace(exclude_doc_ids=frozenset()),
    "expiry": _replace(now=datetime(1970, 1, 2, tzinfo=UTC)),
    "expiry exactly at now": lambda flt: dataclasses.replace(
        flt, now=flt.now - timedelta(microseconds=1)
    ),
    "ai_allowed": _replace(require_ai_allowed=False),
}


def forgets(field: str) -> Callable[[Store], Store]:
    def wrap(inner: Store) -> Store:
        return FilterRewrite(inner, FORGETS[field])  # type: ignore[return-value]

    return wrap


class IgnoresAcl(Wrapper):
    """Reads with every principal that any ACL names, whoever asks."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self._rewrite = FilterRewrite(
            inner, lambda flt: dataclasses.replace(flt, principals=_everyone_in(inner))
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rewrite, name)


class EmptyAclIsPublic(Wrapper):
    """Stores a document without an ACL as readable by everyone: "no ACL, no restriction"."""

    def _acl(self, acl: frozenset[str]) -> frozenset[str]:
        return acl or frozenset({"everyone"})

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        widened = dataclasses.replace(document, acl=self._acl(document.acl))
        self.inner.upsert(widened, chunks, vectors, facts=facts)

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        return self.inner.set_acl(doc_id, self._acl(acl))


class ChunkSensitivityOfItsDocument(Wrapper):
    """Stores every chunk at its document's sensitivity: a RESTRICTED table in an INTERNAL
    document becomes INTERNAL."""

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        lowered = [dataclasses.replace(c, sensitivity=document.sensitivity) for c in chunks]
        self.inner.upsert(document, lowered, vectors, facts=facts)


class SetAclRewrites(Wrapper):
    """Changes an ACL by writing the document again from what ``get_chunks`` returns: the
    content survives, the vectors and facts do not."""

    def set_acl(self, doc_id: str, acl: frozenset[str]) -> bool:
        doc = self.inner.get_document(doc_id)
        if doc is None:
            return False
        self.inner.upsert(dataclasses.replace(doc, acl=acl), self.inner.get_chunks(doc_id))
        return True


class SoftDelete(Wrapper):
    """Deletes by emptying the ACL: nobody can search the document, but it is all still
    there (chunks, vectors, facts, the row itself)."""

    def delete(self, doc_id: str) -> bool:
        return self.inner.set_acl(doc_id, frozenset())


class TwoStepUpsert(Wrapper):
    """Writes a document in two commits (its first chunk, then all of them), calling
    ``between()`` in between: what a reader sees there is what a non-atomic replace shows."""

    def __init__(self, inner: Store, between: Callable[[], None]) -> None:
        super().__init__(inner)
        self.between = between

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        self.inner.upsert(document, chunks[:1], None if vectors is None else vectors[:1])
        self.between()
        self.inner.upsert(document, chunks, vectors, facts=facts)
