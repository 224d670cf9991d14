"""Citation validity: a citation is valid when its document exists, the person who got the
answer may read it, and its locator opens text in the stored document.

A locator *opens text* when

* a stored chunk of that document has exactly this locator (a page, a section, a slide's
  text, one table cell of a deck, one chart point), or
* it addresses a cell inside a table that was stored as one chunk: the longest chunk
  locator that is a part-by-part prefix of it (``sheet=P&L,range=A1:F10`` for
  ``sheet=P&L,range=A1:F10,row=Japan / Revenue,col=FY2024``) leaves only cell-addressing
  parts (``table``, ``row``, ``col``, ``series``, ``category``), at least one of them a
  label, and every label named there (each ``" / "``-joined piece of a row label) occurs
  in that chunk's text. So a cell cannot resolve to a chunk that does not hold it, and
  ``slide=3,table=1`` does not resolve to the slide's text just because ``slide=3`` does.

Readable means the access rules allow it for that person and assistant now
(:meth:`~clearance.access.policy.AccessControl.decide`): ``retrieve`` for ordinary
documents, ``view`` for RESTRICTED ones, which may be *named* to their readers but never
retrieved (docs/design.md §3) — that their text stays out of every answer is the leak tests'
business, not this one's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from clearance.access.policy import AccessControl, Action
from clearance.answer.result import AnswerResult, Citation
from clearance.ingest.locator import parse_locator
from clearance.model import Chunk, Document, Fact, Sensitivity

__all__ = [
    "CitationCheck",
    "Evidence",
    "check_citations",
    "citation_validity",
    "locate",
]

#: Locator parts that address a cell inside a stored table rather than a place in a file
#: (a chart point is always a chunk of its own, so ``chart`` is not one of them).
CELL_KEYS = frozenset({"table", "row", "col", "series", "category"})
#: Of those, the ones whose value is a label written in the table.
LABEL_KEYS = frozenset({"row", "col", "series", "category"})


class Evidence(Protocol):
    """What the checks read from a store (``SQLiteStore`` provides it)."""

    def get_document(self, doc_id: str) -> Document | None: ...

    def get_chunks(self, doc_id: str) -> list[Chunk]: ...

    def list_facts(self, doc_id: str | None = None) -> list[Fact]: ...


@dataclass(frozen=True, slots=True)
class CitationCheck:
    """One citation and why it is invalid (``problem is None``: valid)."""

    citation: Citation
    problem: str | None = None

    @property
    def valid(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, str | None]:
        return {
            "doc_id": self.citation.doc_id,
            "locator": self.citation.locator,
            "problem": self.problem,
        }


def _plain(text: str) -> str:
    """Text as a locator value writes it: NFKC, ``,`` and ``=`` as spaces, whitespace runs
    collapsed, case folded."""
    text = unicodedata.normalize("NFKC", text).replace(",", " ").replace("=", " ")
    return " ".join(text.split()).casefold()


def _label_pieces(key: str, value: str) -> list[str]:
    pieces = value.split(" / ") if key == "row" else [value]
    # A label longer than the fact extractor keeps ends in "…": its kept part must match.
    return [_plain(p.removesuffix("…")) for p in pieces if p.strip() and p.strip() != "-"]


def locate(chunks: Sequence[Chunk], locator: str) -> Chunk | None:
    """The chunk ``locator`` opens, by the rules of the module docstring; ``None`` if none."""
    for chunk in chunks:
        if chunk.locator == locator:
            return chunk
    try:
        wanted = parse_locator(locator)
    except ValueError:
        return None
    best: tuple[int, Chunk] | None = None
    for chunk in chunks:
        try:
            parts = parse_locator(chunk.locator)
        except ValueError:
            continue
        n = len(parts)
        if n >= len(wanted) or wanted[:n] != parts or (best is not None and best[0] >= n):
            continue
        best = (n, chunk)
    if best is None:
        return None
    n, chunk = best
    rest = wanted[n:]
    if any(key not in CELL_KEYS for key, _ in rest):
        return None
    labels = [p for key, value in rest if key in LABEL_KEYS for p in _label_pieces(key, value)]
    if not labels:
        return None
    text = _plain(chunk.text)
    return chunk if all(label in text for label in labels) else None


def _readable(
    access: AccessControl, user_id: str, document: Document, assistant: str | None
) -> bool:
    action = Action.VIEW if document.sensitivity >= Sensitivity.RESTRICTED else Action.RETRIEVE
    principal = access.principal(user_id)
    return access.decide(principal, action, document, access.assistant(assistant)).allow


def check_citations(
    result: AnswerResult,
    user_id: str,
    *,
    evidence: Evidence,
    access: AccessControl,
    assistant: str | None = None,
) -> list[CitationCheck]:
    """Every citation of ``result`` (in order) with its problem, if any, for the answer
    given to ``user_id`` through ``assistant``."""
    out: list[CitationCheck] = []
    chunks: dict[str, list[Chunk]] = {}
    for citation in result.citations:
        document = evidence.get_document(citation.doc_id)
        problem: str | None = None
        if document is None:
            problem = "no such document"
        elif not _readable(access, user_id, document, assistant):
            problem = f"{user_id} may not read it"
        else:
            if citation.doc_id not in chunks:
                chunks[citation.doc_id] = evidence.get_chunks(citation.doc_id)
            if locate(chunks[citation.doc_id], citation.locator) is None:
                problem = "the locator opens no stored text"
        out.append(CitationCheck(citation, problem))
    return out


def citation_validity(checks: Sequence[CitationCheck]) -> float | None:
    """The share of valid citations; ``None`` when there are none to judge."""
    return sum(c.valid for c in checks) / len(checks) if checks else None
