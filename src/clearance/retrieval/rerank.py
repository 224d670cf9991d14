"""Listwise rerank, "strategy B" (stage 9).

Only the non-RESTRICTED candidates are shown to the judge; RESTRICTED candidates keep their
fused positions, and when every candidate is RESTRICTED the judge is not called at all. A
judge that fails, or answers anything but a permutation of the labels it was shown, leaves
the fused order untouched; a :class:`~clearance.errors.GuardError` (the egress guard refused
the judge's call) propagates so that the caller records it. (RESTRICTED candidates only reach
this stage through a ``view``-level search; answers never retrieve them — this is defence in
depth.)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence

from clearance.errors import ClearanceError, GuardError
from clearance.llm.base import Snippet
from clearance.model import SearchHit, is_restricted
from clearance.retrieval.link_exit import to_snippets
from clearance.trust import DEFAULT_ORIGIN_TRUST, Trust

__all__ = ["Judge", "parse_ranking", "rerank"]

log = logging.getLogger("clearance.retrieval.rerank")

#: Receives the snippets to order (labels S1…Sn) and returns the judge's raw answer.
Judge = Callable[[Sequence[Snippet]], str]

_LABEL = re.compile(r"\bS(\d{1,4})\b")


def parse_ranking(answer: str, n: int) -> list[int] | None:
    """``"S3 > S1 > S2"`` → ``[2, 0, 1]``; ``None`` unless it is a permutation of S1…Sn.

    Labels the judge omitted are appended in their fused order, so a judge that only
    ranks its top few still yields a complete order."""
    seen: list[int] = []
    for match in _LABEL.finditer(answer):
        index = int(match.group(1)) - 1
        if not 0 <= index < n:
            return None
        if index not in seen:
            seen.append(index)
    if not seen:
        return None
    return seen + [i for i in range(n) if i not in seen]


def rerank(
    hits: Sequence[SearchHit],
    judge: Judge | None,
    trust_map: Mapping[str, Trust] = DEFAULT_ORIGIN_TRUST,
) -> list[SearchHit]:
    """Reorder the non-RESTRICTED hits by the judge; RESTRICTED hits do not move.
    ``trust_map`` (``[trust.origins]``) labels the judge's snippets by trust."""
    result = list(hits)
    slots = [
        i
        for i, h in enumerate(result)
        if not is_restricted(h.chunk.sensitivity) and not is_restricted(h.document.sensitivity)
    ]
    if judge is None or len(slots) < 2:
        return result
    candidates = [result[i] for i in slots]
    snippets = to_snippets(candidates, trust_map)
    if len(snippets) != len(candidates):  # the link exit disagreed: keep fused order
        return result
    try:
        order = parse_ranking(judge(snippets), len(candidates))
    except GuardError:
        raise  # the egress guard refused the call: not a judge failure; the caller records it
    except ClearanceError as exc:
        log.info("rerank judge failed (%s); keeping fused order", exc.code)
        return result
    if order is None:
        log.info("rerank judge answered no valid ranking; keeping fused order")
        return result
    for slot, index in zip(slots, order, strict=True):
        result[slot] = candidates[index]
    return result
