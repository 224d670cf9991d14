"""Hybrid retrieval: lexical and vector search inside one filter, fused with RRF.

Both retrievers rank inside the same permission mask, computed once per request from the
:class:`~clearance.store.base.SearchFilter`; fusion only ever sees chunks that were already
inside the allowed set.
"""

from __future__ import annotations

from dataclasses import dataclass

from clearance.model import SearchHit
from clearance.retrieval.embedding import Embedder
from clearance.retrieval.fusion import reciprocal_rank_fusion
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

__all__ = ["HybridSearcher"]


@dataclass(frozen=True, slots=True)
class HybridSearcher:
    store: SQLiteStore
    embedder: Embedder | None
    candidates: int = 50
    rrf_k: int = 60

    def search(self, query: str, flt: SearchFilter, k: int) -> list[SearchHit]:
        if k <= 0 or not query.strip():
            return []
        pool = max(self.candidates, k)
        embedded = None if self.embedder is None else self.embedder.embed([query])[0]
        lexical, vector = self.store.retrieve(query, embedded, flt, pool)
        lex_rank = {cid: i for i, (cid, _) in enumerate(lexical, start=1)}
        vec_rank = {cid: i for i, (cid, _) in enumerate(vector, start=1)}
        fused = reciprocal_rank_fusion(
            [[c for c, _ in lexical], [c for c, _ in vector]], k=self.rrf_k
        )[:k]
        rows = self.store.hits([cid for cid, _ in fused])
        scores = dict(fused)
        return [
            SearchHit(
                chunk=chunk,
                document=document,
                score=scores[chunk.chunk_id],
                lexical_rank=lex_rank.get(chunk.chunk_id),
                vector_rank=vec_rank.get(chunk.chunk_id),
            )
            for chunk, document in rows
        ]
