"""The nouns of Clearance (DESIGN §2).

Everything here is an immutable value. Identity rules:

* ``doc_id`` is ``source_system:native_id`` and stable across re-ingests;
* ``chunk_id`` is ``doc_id#ordinal`` and only stable for one content version;
* a principal is one of the strings ``user:<id>``, ``group:<id>`` or ``everyone``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "EVERYONE",
    "Chunk",
    "Document",
    "Fact",
    "SearchHit",
    "Section",
    "Sensitivity",
    "parse_principal",
]

EVERYONE = "everyone"
_PRINCIPAL = re.compile(r"^(?:user|group):[^\s:][^\s]*$")


def parse_principal(value: object) -> str:
    """Validate one principal string; raise ``ValueError`` naming it otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"principal must be a string, got {type(value).__name__}")
    if value == EVERYONE or _PRINCIPAL.match(value):
        return value
    raise ValueError(f"bad principal {value!r}: use 'user:<id>', 'group:<id>' or 'everyone'")


class Sensitivity(enum.IntEnum):
    """Tiers, lowest to highest. Ordering is the comparison of the integers."""

    PUBLIC = 0
    INTERNAL = 1
    CONFIDENTIAL = 2
    RESTRICTED = 3

    @classmethod
    def parse(cls, value: object) -> Sensitivity:
        """Parse a label case-insensitively; raise ``ValueError`` naming the bad value."""
        if isinstance(value, Sensitivity):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                pass
        names = "/".join(m.name for m in cls)
        raise ValueError(f"bad sensitivity {value!r}: use one of {names}")


@dataclass(frozen=True, slots=True)
class Section:
    """One unit a loader yields: text plus the locator that points back into the file.

    ``atomic`` sections (a table row, a slide title) are never split by the chunker.
    ``table`` holds the cells of a table section for fact extraction, if any.
    """

    text: str
    locator: str
    atomic: bool = False
    table: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A document with its full metadata (DESIGN §2). ``acl`` empty means nobody."""

    doc_id: str
    source_system: str
    corpus: str
    title: str
    uri: str
    owner: str | None
    acl: frozenset[str]
    sensitivity: Sensitivity
    created_at: datetime | None
    updated_at: datetime | None
    review_at: datetime | None
    expires_at: datetime | None
    ai_allowed: bool
    personal_data: bool
    origin: str
    origin_chain: tuple[str, ...]
    content_hash: str
    version: int = 1
    path: str | None = None
    format: str = "txt"
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable piece of a document. It may only be *more* sensitive than its document."""

    chunk_id: str
    doc_id: str
    ordinal: int
    text: str
    locator: str
    sensitivity: Sensitivity
    origin: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the chunk, its document and how it ranked."""

    chunk: Chunk
    document: Document
    score: float
    lexical_rank: int | None = None
    vector_rank: int | None = None


@dataclass(frozen=True, slots=True)
class Fact:
    """One number from a table, with its provenance. Filtered exactly like chunks:
    it carries its document's id and is only visible where the document is."""

    entity: str
    period: str
    metric: str
    channel: str
    value: float
    unit: str
    doc_id: str
    locator: str
    raw: str = ""  # the cell text as written (e.g. "1,320")
