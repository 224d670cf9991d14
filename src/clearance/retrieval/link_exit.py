"""The link exit (stage 10): the only adapter that turns search hits into snippets.

It drops every RESTRICTED chunk — judged on the chunk's *and* the document's label,
compared case-insensitively so a label that arrives as a string (``"restricted"``) from
another backend or connector is caught too. This is one of several independent exits:
the filter already excludes RESTRICTED, and the egress guard checks again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clearance.llm.base import Snippet
from clearance.model import SearchHit, is_restricted
from clearance.trust import DEFAULT_ORIGIN_TRUST, Trust, resolve_trust

__all__ = ["to_snippets"]


def to_snippets(
    hits: Iterable[SearchHit], trust_map: Mapping[str, Trust] = DEFAULT_ORIGIN_TRUST
) -> list[Snippet]:
    """Snippets ``S1…Sn`` in hit order, RESTRICTED dropped before numbering."""
    kept = [
        h
        for h in hits
        if not is_restricted(h.chunk.sensitivity) and not is_restricted(h.document.sensitivity)
    ]
    return [
        Snippet(
            ref=f"S{i}",
            chunk_id=h.chunk.chunk_id,
            doc_id=h.document.doc_id,
            title=h.document.title,
            locator=h.chunk.locator,
            uri=h.document.uri,
            text=h.chunk.text,
            sensitivity=h.chunk.sensitivity,
            corpus=h.document.corpus,
            origin=h.chunk.origin,
            trust=resolve_trust(h.chunk.origin, h.document.origin_chain, trust_map).label,
        )
        for i, h in enumerate(kept, start=1)
    ]
