"""The retriever: hybrid search for one caller, inside the caller's filter only.

Every search and answer goes through :meth:`Retriever.search`. The candidates come from
the store *inside* the filter compiled from the caller (docs/design.md §2); real-time
checks of the corpora that have them then drop what the source system denies now, and the
search is re-run with those documents excluded inside the filter, so the result is still
the top-k of what remains allowed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from clearance.access.caller import Caller
from clearance.access.policy import Action
from clearance.access.realtime import PermissionChecker, RealtimeResult, filter_allowed
from clearance.config import RetrievalSettings
from clearance.model import SearchHit
from clearance.retrieval.hybrid import HybridSearcher
from clearance.retrieval.synonyms import Synonyms
from clearance.store.base import Store

if TYPE_CHECKING:
    from clearance.llm.embedding import Embedder

__all__ = ["Retriever", "SearchResult"]

# How often a search is re-run to refill results after real-time checks dropped some.
_REALTIME_REFILLS = 3


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits for one user, plus what real-time checks dropped (for the trace, never shown)."""

    user_id: str
    hits: list[SearchHit]
    realtime_dropped: dict[str, RealtimeResult] = field(default_factory=dict)
    refused: str | None = None  # "account_disabled" / "unknown_user" when nothing was searched

    def to_dict(self, query: str) -> dict[str, Any]:
        """The JSON of a search — the one place its shape is built: ``clearance search
        --json``, ``POST /v1/search`` and the MCP ``search`` tool all return it."""
        rows = [
            {
                "rank": i,
                "doc_id": h.document.doc_id,
                "title": h.document.title,
                "locator": h.chunk.locator,
                "uri": h.document.uri,
                "corpus": h.document.corpus,
                "sensitivity": h.chunk.sensitivity.name,
                "score": round(h.score, 6),
                "lexical_rank": h.lexical_rank,
                "vector_rank": h.vector_rank,
                "text": h.chunk.text,
            }
            for i, h in enumerate(self.hits, start=1)
        ]
        return {"user": self.user_id, "query": query, "refused": self.refused, "results": rows}


class Retriever:
    """Searches the store for a :class:`Caller` (lexical and vector, fused)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        settings: RetrievalSettings,
        synonyms: Synonyms,
        checkers: Mapping[str, PermissionChecker],
    ) -> None:
        self.store = store
        self.checkers = checkers
        self.settings = settings
        self._searcher = HybridSearcher(
            store,
            embedder,
            settings.candidates,
            settings.rrf_k,
            settings.cjk_vector_weight,
            synonyms,
        )

    def search(
        self,
        caller: Caller,
        query: str,
        k: int | None,
        action: Action,
        synonyms: Synonyms | None = None,
    ) -> SearchResult:
        """The top ``k`` hits for ``query`` among what ``caller`` may take ``action`` on;
        ``synonyms`` stands for the configured equivalences in this search."""
        if caller.refused is not None:
            return SearchResult(caller.user_id, [], refused=caller.refused)
        flt = caller.filter(action, self.store.corpora())
        k = k or self.settings.k
        dropped: dict[str, RealtimeResult] = {}
        hits: list[SearchHit] = []
        for _ in range(_REALTIME_REFILLS + 1):
            hits = self._searcher.search(query, flt, k, synonyms)
            newly = self._realtime_drops(caller.user_id, hits)
            if not newly:
                return SearchResult(caller.user_id, hits, dropped)
            dropped.update(newly)
            # Re-run with the dropped documents excluded *inside* the filter, so the result
            # is still the top-k of what remains allowed.
            flt = replace(flt, exclude_doc_ids=flt.exclude_doc_ids | frozenset(newly))
        # Out of refills: keep only the hits whose documents this last round confirmed.
        kept = [h for h in hits if h.document.doc_id not in dropped]
        return SearchResult(caller.user_id, kept, dropped)

    def _realtime_drops(self, user_id: str, hits: Sequence[SearchHit]) -> dict[str, RealtimeResult]:
        by_corpus: dict[str, list[str]] = {}
        for hit in hits:
            if hit.document.corpus in self.checkers:
                by_corpus.setdefault(hit.document.corpus, []).append(hit.document.doc_id)
        dropped: dict[str, RealtimeResult] = {}
        for corpus, doc_ids in by_corpus.items():
            _, drops = filter_allowed(self.checkers[corpus], user_id, doc_ids)
            dropped.update(drops)
        return dropped
