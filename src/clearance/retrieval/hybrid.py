"""Hybrid retrieval: lexical and vector search inside one filter, fused with RRF.

Both retrievers rank inside the same permission mask, computed once per request from the
:class:`~clearance.store.base.SearchFilter`; fusion only ever sees chunks that were already
inside the allowed set.

A query written mostly in CJK script gives the vector list ``cjk_vector_weight``: the
default embedder is English-only, and fusing its near-random ranking of a Japanese query
with the bigram lexical ranking was measured to lower MRR@10 from 0.72 to 0.66
(benchmarks/RESULTS.md). At weight 0 the vector search is skipped for such queries.

Each retriever's own first hit is always among the ``k`` returned: where fusion ranks it
lower, it takes the place of the last fused hit that is no list's first. A chunk that holds
every word of the question, ranked first by BM25 and middling by the embedder, was otherwise
lost to chunks both rank middling. A hit the vector search did not rank carries the lowest
cosine of the vector list as its own (an upper bound), for the relevance gate to weigh.

A query with nothing to search for (:func:`~clearance.analysis.searchable`: only
emoji, invisible characters, punctuation or whitespace) finds nothing, and its embedding is
never computed: the embedder turns any string into a vector, whose nearest neighbours would
be arbitrary hits. Every search and every answer's retrieval passes through here, so this is
the one place the rule lives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearance.analysis import cjk_share, searchable
from clearance.model import SearchHit
from clearance.retrieval.fusion import reciprocal_rank_fusion
from clearance.retrieval.synonyms import NO_SYNONYMS, Synonyms
from clearance.store.base import SearchFilter

if TYPE_CHECKING:
    from clearance.llm.embedding import Embedder
    from clearance.store.base import Store

__all__ = ["HybridSearcher"]


@dataclass(frozen=True, slots=True)
class HybridSearcher:
    store: Store
    embedder: Embedder | None
    candidates: int = 50
    rrf_k: int = 60
    cjk_vector_weight: float = 1.0
    synonyms: Synonyms = NO_SYNONYMS

    def search(
        self, query: str, flt: SearchFilter, k: int, synonyms: Synonyms | None = None
    ) -> list[SearchHit]:
        """The fused top ``k``; ``synonyms`` stands for the configured ones in this search."""
        if k <= 0 or not searchable(query):
            return []
        pool = max(self.candidates, k)
        weight = self.vector_weight(query)
        embedded = None
        if self.embedder is not None and weight > 0.0:
            embedded = self.embedder.embed([query])[0]
        # The lexical search also looks for the organisation's equivalents of the phrases
        # the query holds; the vector search keeps the query as asked.
        expanded = (self.synonyms if synonyms is None else synonyms).expand(query)
        lexical, vector = self.store.retrieve(expanded, embedded, flt, pool)
        lex_rank = {cid: i for i, (cid, _) in enumerate(lexical, start=1)}
        vec_rank = {cid: i for i, (cid, _) in enumerate(vector, start=1)}
        cosines = dict(vector)
        ranked = reciprocal_rank_fusion(
            [[c for c, _ in lexical], [c for c, _ in vector]], k=self.rrf_k, weights=[1.0, weight]
        )
        fused = _with_each_lists_first(ranked, [lexical, vector if weight > 0.0 else []], k)
        # The chunks and documents are read again here; a permission change committed since
        # the ranking is honoured by checking each against the filter once more (a hit may
        # then be missing, never shown under a permission that no longer holds).
        rows = [(c, d) for c, d in self.store.hits([cid for cid, _ in fused]) if flt.admits(d, c)]
        scores = dict(fused)
        if embedded is not None and vector and len(vector) >= pool:
            # A hit the vector search did not rank (a lexical first kept by the rule above)
            # lies below every chunk it did: the lowest cosine it returned bounds its own,
            # so the relevance gate still weighs the embedder's judgement, with no vector
            # read. A shorter list holds every embedded chunk: one missing has no vector.
            below = min(s for _, s in vector)
            cosines.update((c.chunk_id, below) for c, _ in rows if c.chunk_id not in cosines)
        return [
            SearchHit(
                chunk=chunk,
                document=document,
                score=scores[chunk.chunk_id],
                lexical_rank=lex_rank.get(chunk.chunk_id),
                vector_rank=vec_rank.get(chunk.chunk_id),
                cosine=cosines.get(chunk.chunk_id),
            )
            for chunk, document in rows
        ]

    def vector_weight(self, query: str) -> float:
        """The vector list's RRF weight for ``query`` (the lexical list's is 1)."""
        return self.cjk_vector_weight if cjk_share(query) > 0.5 else 1.0


def _with_each_lists_first(
    ranked: list[tuple[str, float]], lists: list[list[tuple[str, float]]], k: int
) -> list[tuple[str, float]]:
    """The first ``k`` of ``ranked`` with each list's own first hit among them, in place of
    the last fused hit that is no list's first (none such: left as fused). RRF can push a
    chunk one retriever ranks first below ones both rank middling: the README section
    answering "on which baselines are the projection errors calculated?" was the lexical
    first and sixth after fusion."""
    top = ranked[:k]
    at = {cid: i for i, (cid, _) in enumerate(ranked)}
    firsts = {hits[0][0] for hits in lists if hits}
    for cid in sorted(firsts - {c for c, _ in top}, key=at.__getitem__):
        others = [i for i, (c, _) in enumerate(top) if c not in firsts]
        if not others:
            break
        top[others[-1]] = ranked[at[cid]]
    return top
