"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009).

``score(d) = Σ 1 / (k + rank_r(d))`` over the ranked lists ``r`` that contain ``d`` (ranks
from 1). Ties are broken by the best single rank, then by id, so fusion is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["reciprocal_rank_fusion"]

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int = 60) -> list[tuple[K, float]]:
    """Fuse ranked id lists into ``(id, score)`` best first."""
    if k <= 0:
        raise ValueError("rrf k must be positive")
    parts: dict[K, list[float]] = {}
    best: dict[K, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            parts.setdefault(item, []).append(1.0 / (k + rank))
            best[item] = min(best.get(item, rank), rank)
    # fsum is exactly rounded, so equal rank multisets give equal scores whatever the list
    # order, and the tie rule above (not float rounding) decides between them.
    scores = {item: math.fsum(p) for item, p in parts.items()}
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], str(kv[0])))
