"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009).

``score(d) = Σ w_r / (k + rank_r(d))`` over the ranked lists ``r`` that contain ``d`` (ranks
from 1; every weight ``w_r`` is 1 unless given; a list of weight 0 takes no part). Ties are
broken by the best single rank, then by id, so fusion is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["reciprocal_rank_fusion"]

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse ranked id lists into ``(id, score)`` best first."""
    if k <= 0:
        raise ValueError("rrf k must be positive")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings) or any(not 0.0 <= w < math.inf for w in weights):
        raise ValueError("rrf weights: one finite, non-negative weight per ranking")
    parts: dict[K, list[float]] = {}
    best: dict[K, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if weight == 0.0:
            continue
        for rank, item in enumerate(ranking, start=1):
            parts.setdefault(item, []).append(weight / (k + rank))
            best[item] = min(best.get(item, rank), rank)
    # fsum is exactly rounded, so equal rank multisets give equal scores whatever the list
    # order, and the tie rule above (not float rounding) decides between them.
    scores = {item: math.fsum(p) for item, p in parts.items()}
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], str(kv[0])))
