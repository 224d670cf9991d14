"""Trust, derived from origin at read time and never stored (docs/design.md §4).

``system`` and ``human`` are trusted, ``consolidation`` is medium, and everything else —
``external_platform``, ``external_web``, ``email``, ``unknown``, any unmapped value and a
missing origin — is untrusted. Text derived through several origins gets the *minimum*
trust over its chain, so a summary of a chat export stays untrusted. The mapping can be
overridden by ``[trust.origins]``; unmapped origins remain untrusted whatever it says.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

__all__ = ["DEFAULT_ORIGIN_TRUST", "MAX_CHAIN", "Trust", "resolve_trust"]

MAX_CHAIN = 16  # a longer chain is treated as untrusted: nobody should need more hops


class Trust(enum.IntEnum):
    UNTRUSTED = 0
    MEDIUM = 1
    TRUSTED = 2

    @property
    def label(self) -> str:
        return self.name.lower()


DEFAULT_ORIGIN_TRUST: Mapping[str, Trust] = {
    "system": Trust.TRUSTED,
    "human": Trust.TRUSTED,
    "consolidation": Trust.MEDIUM,
    "external_platform": Trust.UNTRUSTED,
    "external_web": Trust.UNTRUSTED,
    "email": Trust.UNTRUSTED,
    "unknown": Trust.UNTRUSTED,
}


def resolve_trust(
    origin: str | None,
    chain: Iterable[str] = (),
    mapping: Mapping[str, Trust] = DEFAULT_ORIGIN_TRUST,
) -> Trust:
    """Minimum trust over ``origin`` and every origin in ``chain`` (case-insensitive)."""
    hops = [origin, *chain]
    if len(hops) > MAX_CHAIN + 1:
        return Trust.UNTRUSTED
    levels = [
        mapping.get(hop.strip().lower(), Trust.UNTRUSTED)
        if isinstance(hop, str)
        else Trust.UNTRUSTED
        for hop in hops
    ]
    return min(levels)
