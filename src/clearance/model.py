"""The nouns of Clearance (docs/design.md §2).

Everything here is an immutable value. Identity rules:

* ``doc_id`` is ``source_system:native_id`` and stable across re-ingests;
* ``chunk_id`` is ``doc_id#ordinal`` and only stable for one content version;
* a principal is one of the strings ``user:<id>``, ``group:<id>`` or ``everyone``, with
  ``<id>`` following the grammar of :func:`principal_id_problem` (docs/access.md).
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "EVERYONE",
    "LABEL_SEPARATOR",
    "STEPS_PART",
    "Chunk",
    "Document",
    "Fact",
    "SearchHit",
    "Section",
    "Sensitivity",
    "is_restricted",
    "parse_principal",
    "principal_id_problem",
    "shown",
]

EVERYONE = "everyone"
#: Between a topic and a run-in label of it in the line above a section's text ("Annual
#: health check — Key features"): written by the ingest, read back by the quoting reader.
LABEL_SEPARATOR = " — "
#: The locator part of a section listing a document's step headings
#: (``section=Our hiring process,outline=steps``): written by the ingest, read back by the
#: quoting reader, which quotes it only for a question asking for steps or a list.
STEPS_PART = "outline=steps"

# The longest id a principal may carry (an e-mail address is at most 254 characters).
_ID_MAX = 256
# Ids made only of these characters need no closer look (the common case, by far).
_PLAIN_ID = re.compile(rf"[A-Za-z0-9._@+\-]{{1,{_ID_MAX}}}")
# ':' separates the kind from the id; ',' and ';' separate list items; '*' and '?' are
# wildcards. In an id each would mean that somebody expected it to be split or expanded.
_ID_PUNCTUATION = frozenset(":,;*?")
_INVISIBLE = {
    "Cc": "control characters",
    "Cf": "invisible format characters",
    "Cs": "surrogates",
    "Co": "private-use characters",
    "Cn": "unassigned characters",
}


def shown(value: str) -> str:
    """``repr`` of ``value``, cut short so an error message stays one readable line."""
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "…"


def principal_id_problem(ident: str) -> str | None:
    """Why ``ident`` cannot be the ``<id>`` of ``user:<id>`` / ``group:<id>``, or ``None``.

    The grammar (docs/access.md): 1 to 256 characters, in Unicode NFC,
    each of them printable and none of them whitespace, a control, format (zero-width, bidi)
    or separator character, nor one of ``: , ; * ?``. ACLs are compared with the directory
    character by character, so an id outside this grammar could only ever match by accident
    — or, far more likely, silently match nobody. The directory's own user and group ids
    follow the same grammar.
    """
    if _PLAIN_ID.fullmatch(ident):
        return None
    if not ident:
        return "must not be empty"
    if len(ident) > _ID_MAX:
        return f"{shown(ident)} is longer than {_ID_MAX} characters"
    for char in ident:
        if char.isspace():
            return f"{shown(ident)} must not contain whitespace"
        if char in _ID_PUNCTUATION:
            return f"{shown(ident)} must not contain {char!r}"
        if not char.isprintable():
            what = _INVISIBLE.get(unicodedata.category(char), "unprintable characters")
            return f"{shown(ident)} must not contain {what} (U+{ord(char):04X})"
    if not unicodedata.is_normalized("NFC", ident):
        return f"{shown(ident)} must be in Unicode NFC form"
    return None


def parse_principal(value: object) -> str:
    """Validate one principal string; raise ``ValueError`` naming it otherwise.

    ``everyone``, or ``user:`` / ``group:`` followed by an id that
    :func:`principal_id_problem` accepts. Nothing is trimmed or normalised: a principal that
    is not already exact is an error, never a guess.
    """
    if not isinstance(value, str):
        raise ValueError(f"principal must be a string, got {type(value).__name__}")
    if value == EVERYONE:
        return value
    kind, sep, ident = value.partition(":")
    if not sep or kind not in ("user", "group"):
        raise ValueError(
            f"bad principal {shown(value)}: use 'user:<id>', 'group:<id>' or 'everyone'"
        )
    problem = principal_id_problem(ident)
    if problem is not None:
        raise ValueError(f"bad principal {shown(value)}: id {problem}")
    return value


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


def is_restricted(label: object) -> bool:
    """True for RESTRICTED in any spelling or type; unknown labels count as RESTRICTED."""
    if isinstance(label, Sensitivity):
        return label >= Sensitivity.RESTRICTED
    if isinstance(label, str):
        try:
            return Sensitivity.parse(label) >= Sensitivity.RESTRICTED
        except ValueError:
            return True
    return True


@dataclass(frozen=True, slots=True)
class Section:
    """One unit a loader yields: text plus the locator that points back into the file.

    ``atomic`` sections (a table row, a slide title) are never split by the chunker.
    ``table`` holds the cells of a table section for fact extraction, if any, and
    ``titles`` the titles above it that are neither cells nor in the locator, innermost
    first (a chart's title, then its slide's title). ``captions`` are the lines of running
    text right above a table that say what its figures are, nearest first: a note such as
    "(in thousands, except per share data)" and the sentence introducing the table ("The
    following table summarizes revenues by region …"); they are read as near the table as
    its own labels.
    """

    text: str
    locator: str
    atomic: bool = False
    table: tuple[tuple[str, ...], ...] | None = None
    titles: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    """A document with its full metadata (docs/design.md §2). ``acl`` empty means nobody."""

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
    # The embedding cosine of question and chunk, where the vector list ranked the chunk;
    # below a full vector list, the list's lowest cosine (an upper bound of the chunk's).
    cosine: float | None = None


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
