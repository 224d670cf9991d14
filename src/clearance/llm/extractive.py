"""The embedded default provider: answers by quoting, never by writing.

Why: Clearance must work on a laptop with no model and no network, and an answer that can only
quote its sources cannot invent anything. :class:`ExtractiveProvider` is deterministic and uses
the same term analysis as retrieval (:func:`clearance.retrieval.analysis.query_terms`), so
English words and CJK character bigrams both count.

What is guaranteed:

* **Verbatim.** Every sentence in an ``answer`` is a contiguous, unmodified substring of the text
  of the snippet whose marker follows it: ``"<sentence> [S1] <sentence> [S3]"``.
* **Relevant or nothing.** Only sentences sharing at least one term with the question are used;
  when none does, the answer is ``""`` (the orchestrator then reports that it has no source).
* **No borrowed citations.** A sentence that itself contains a citation marker such as ``[S2]``
  is never quoted, so every marker in the output was put there by this provider.
* **Deterministic.** The same request always gives the same output. A ``rerank`` is a stable
  ordering of *all* the snippet refs: ``"S2 > S1 > S3"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from clearance.llm.base import ChatRequest, ChatResponse, Snippet
from clearance.retrieval.analysis import query_terms

__all__ = ["ExtractiveProvider", "Quote", "split_sentences"]

# A Latin sentence ends at . ! ? (possibly repeated, possibly followed by closing quotes or
# brackets) followed by whitespace; a CJK sentence ends at 。！？．, whitespace optional; a line
# break always ends one (bullets, table rows, headings).
_LATIN_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
_CJK_END = re.compile(r"(?:[。！？]|．(?![0-9０-９]))+[」』）】〉》\"”’)]*")
# A line break ends a sentence only where the text shows structure: a blank line, or a
# line that starts a list item, a heading or a table row. A lone break is a hard wrap
# inside a sentence ("… on the next business\nday."), so it reads as a space.
_NEWLINE = re.compile(
    r"[\r\n\u2028\u2029]\s*[\r\n\u2028\u2029]+"
    r"|[\r\n\u2028\u2029](?=\s*(?:[-*•・#|]|\d+[.)]\s))"
)
# Words after which a period does not end a sentence (case matters: "no." may end one).
_ABBREVIATIONS = frozenset(
    {"Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "No", "Nr", "Fig", "Vol"}
    | {"vs", "cf", "approx", "incl", "ca"}
)
_SINGLE_LETTERS = re.compile(r"(?:^|[\s(])(?:[A-Za-z]\.)+$")
_LAST_WORD = re.compile(r"([A-Za-z]+)\.$")
_MARKER = re.compile(r"\[\s*S\d+\s*\]", re.IGNORECASE)

MAX_SENTENCES = 3


def _is_abbreviation(before: str) -> bool:
    """Whether the text ``before`` (ending in a period) ends with an abbreviation."""
    if _SINGLE_LETTERS.search(before):  # e.g.  i.e.  U.S.
        return True
    m = _LAST_WORD.search(before)
    return bool(m and m.group(1) in _ABBREVIATIONS)


def _spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence in ``text``, whitespace-trimmed, non-empty."""
    cuts: set[int] = set()
    for m in _LATIN_END.finditer(text):
        single_period = m.group(0).rstrip("\"'”’)]") == "."
        if single_period and _is_abbreviation(text[: m.start() + 1]):
            continue
        cuts.add(m.end())
    for m in _CJK_END.finditer(text):
        cuts.add(m.end())
    for m in _NEWLINE.finditer(text):
        cuts.add(m.start())
        cuts.add(m.end())
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*sorted(cuts), len(text)]:
        if cut <= start:
            continue
        s, e = start, cut
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
        start = cut
    return spans


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences; each is a verbatim substring of ``text``.

    Handles Latin punctuation (with common abbreviations such as ``e.g.``, ``Dr.``, ``U.S.`` and
    decimals such as ``6.5`` kept intact), Japanese/Chinese ``。！？`` and line breaks.
    """
    return [text[s:e] for s, e in _spans(text)]


@dataclass(frozen=True, slots=True)
class Quote:
    """One sentence chosen for an answer, and where it came from."""

    ref: str
    sentence: str
    score: int


def _overlap(question: set[str], text: str) -> int:
    return len(question.intersection(query_terms(text)))


class ExtractiveProvider:
    """Quotes the sentences that best match the question. No model; see the module docstring.

    Selection for ``answer``: every sentence of every snippet is scored by the number of distinct
    question terms it contains. Candidates are ranked by score, then by snippet order (the
    retrieval rank), then by position in the snippet. The best one is always taken (if its score
    is positive); up to ``max_sentences - 1`` more are added when they score at least half as
    well as the best, so a weak sentence does not dilute a strong one. Identical sentences
    (overlapping chunks repeat text) are quoted once, under the first snippet that has them.
    """

    name = "extractive"

    def __init__(self, *, max_sentences: int = MAX_SENTENCES) -> None:
        if max_sentences < 1:
            raise ValueError("max_sentences must be at least 1")
        self.max_sentences = max_sentences

    def complete(self, request: ChatRequest) -> ChatResponse:
        if request.purpose == "rerank":
            text = " > ".join(s.ref for s in self.rank(request.question, request.snippets))
        else:
            text = " ".join(f"{q.sentence} [{q.ref}]" for q in self.quotes(request))
        return ChatResponse(text=text, model=self.name)

    def quotes(self, request: ChatRequest) -> list[Quote]:
        """The sentences an ``answer`` consists of, in output order (possibly none)."""
        question = set(query_terms(request.question))
        if not question:
            return []
        candidates: list[tuple[int, int, int, Quote]] = []
        seen: set[str] = set()
        for s_index, snippet in enumerate(request.snippets):
            for p_index, sentence in enumerate(split_sentences(snippet.text)):
                if _MARKER.search(sentence):
                    continue
                key = " ".join(sentence.split())
                if key in seen:
                    continue
                score = _overlap(question, sentence)
                if score > 0:
                    seen.add(key)
                    candidates.append(
                        (-score, s_index, p_index, Quote(snippet.ref, sentence, score))
                    )
        if not candidates:
            return []
        candidates.sort(key=lambda c: c[:3])
        best = candidates[0][3].score
        floor = max(1, math.ceil(best / 2))
        chosen = [c[3] for c in candidates if c[3].score >= floor]
        return chosen[: self.max_sentences]

    @staticmethod
    def rank(question: str, snippets: Sequence[Snippet]) -> list[Snippet]:
        """Snippets by descending term overlap with ``question``; equal scores keep their order."""
        terms = set(query_terms(question))
        return sorted(snippets, key=lambda s: -_overlap(terms, s.text))
