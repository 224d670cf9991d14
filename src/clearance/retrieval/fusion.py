"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009).

``score(d) = Σ 1 / (k + rank_r(d))`` over the ranked lists ``r`` that contain ``d`` (ranks
from 1). Ties are broken by the best single rank, then by id, so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["reciprocal_rank_fusion"]

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int = 60) -> list[tuple[K, float]]:
    """Fuse ranked id lists into ``(id, score)`` best first."""
    if k <= 0:
        raise ValueError("rrf k must be positive")
    scores: dict[K, float] = {}
    best: dict[K, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], str(kv[0])))
