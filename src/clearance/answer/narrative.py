"""Checks on a model's narrative answer (stage 13, narrative path).

The model's text is never trusted as is:

* a sentence is **attributed** when it cites a snippet that was in the prompt (``[S2]``);
  markers naming anything else are removed;
* a sentence with no valid marker, or one the model marked ``[inferred]``, is an
  **inference**: nothing ties it to what a snippet states. It is kept apart from the
  attributed sentences, and the caller drops it or shows it under its own label
  (``[answer] inferred``) — never as sourced fact;
* **every number in a sentence, inferred or not, must appear in a snippet that sentence
  cites**, else the sentence is removed (``fabrication_guard_triggered``); an inference
  that cites nothing may carry no number at all;
* if no attributed sentence survives, the caller answers ``no_authorized_source``.

Numbers compare by value after NFKC: ``1,320`` = ``1320`` = ``１，３２０``; ``6.50`` = ``6.5``.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from clearance.analysis import query_terms
from clearance.ingest.locator import parse_locator
from clearance.llm.base import Snippet
from clearance.llm.extractive import is_line_unit, split_sentences

__all__ = [
    "INFERRED_MARKER",
    "CheckedAnswer",
    "Sentence",
    "check_answer",
    "content_terms",
    "find_conflicts",
    "numbers_in",
    "relevant_snippets",
    "render_sentences",
]

#: What the model writes in a sentence it infers rather than reads in a snippet.
INFERRED_MARKER = "[inferred]"
_MARKER = re.compile(r"\[\s*(S\d{1,4})\s*\]", re.IGNORECASE)
_INFERRED = re.compile(r"\[\s*inferred\s*\]", re.IGNORECASE)
_LEADING_MARKERS = re.compile(r"^(?:\s*\[\s*S\d{1,4}\s*\])+")
# A marker followed by more words closes a claim even without punctuation ("… 20:00 [S1]
# Standard plan …"), so each claim is checked against the snippets it cites itself.
_MARKER_THEN_WORDS = re.compile(r"(\[\s*S\d{1,4}\s*\])\s*(?=\w)", re.IGNORECASE)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?。、！？])")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?")


def numbers_in(text: str) -> set[Decimal]:
    """The numeric values written in ``text`` (citation markers excluded)."""
    plain = _MARKER.sub(" ", unicodedata.normalize("NFKC", text))
    values: set[Decimal] = set()
    for match in _NUMBER.finditer(plain):
        token = match.group(0).replace(",", "").lstrip("+")
        try:
            values.add(abs(Decimal(token)).normalize())
        except InvalidOperation:
            continue
    return values


def content_terms(text: str) -> set[str]:
    """Query terms without numbers, lightly stemmed (``flights`` ~ ``flight``) so overlap
    measures agree across inflections; CJK bigrams pass through unchanged."""
    out: set[str] = set()
    for term in query_terms(text):
        if any(ch.isdigit() for ch in term):
            continue
        if term.isascii() and len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
            term = term[:-1]
        out.add(term)
    return out


def relevant_snippets(
    question: str, snippets: Sequence[Snippet], *, min_coverage: float = 0.4
) -> list[Snippet]:
    """The snippets that share at least ``min_coverage`` of the question's content terms
    (title included). Below that, the material is too thin to answer from: the caller
    refuses with ``no_authorized_source`` rather than letting a model improvise."""
    wanted = content_terms(question)
    if not wanted:
        return []
    need = max(1, -(-len(wanted) * min_coverage // 1))  # ceil
    return [s for s in snippets if len(wanted & content_terms(f"{s.title} {s.text}")) >= need]


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str  # without markers
    refs: tuple[str, ...]


def render_sentences(sentences: Sequence[Sentence], labels: Mapping[str, str] | None = None) -> str:
    """Each sentence with its markers, list items and table lines on lines of their own.
    ``labels`` renames snippet refs (``S3`` → ``S1``, the number of the citation shown);
    refs that name one citation are marked once."""
    parts: list[str] = []
    previous_line = False
    for i, sentence in enumerate(sentences):
        line = is_line_unit(sentence.text)
        if i:
            parts.append("\n" if line or previous_line else " ")
        marks = dict.fromkeys(labels.get(r, r) if labels else r for r in sentence.refs)
        parts.append(f"{sentence.text} " + "".join(f"[{m}]" for m in marks))
        previous_line = line
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class CheckedAnswer:
    sentences: tuple[Sentence, ...]  # attributed: each cites a prompt snippet
    removed_for_numbers: int
    # Inferences whose numbers passed the check: refs are the valid ones they cite, if any.
    inferred: tuple[Sentence, ...] = ()

    @property
    def cited_refs(self) -> list[str]:
        return list(dict.fromkeys(r for s in self.sentences for r in s.refs))

    def render(self, labels: Mapping[str, str] | None = None) -> str:
        """The attributed sentences (see :func:`render_sentences`); inferences are the
        caller's to drop or label."""
        return render_sentences(self.sentences, labels)


def _claims(sentence: str) -> list[str]:
    """``sentence`` cut after every citation marker that more words follow."""
    parts: list[str] = []
    start = 0
    for match in _MARKER_THEN_WORDS.finditer(sentence):
        parts.append(sentence[start : match.end(1)])
        start = match.end()
    parts.append(sentence[start:])
    return parts


def _split(answer: str) -> list[tuple[str, tuple[str, ...], bool]]:
    """Sentences with their markers and whether the model marked them inferred; markers a
    splitter put at the start of the next sentence ("… economy. [S1] Next …") are moved
    back to the sentence they close, and a marker followed by more words ends a sentence
    ("… economy [S1] Next …")."""
    pieces = [claim for sentence in split_sentences(answer) for claim in _claims(sentence)]
    out: list[tuple[str, list[str], bool]] = []
    for piece in pieces:
        lead = _LEADING_MARKERS.match(piece)
        if lead and out:
            out[-1][1].extend(m.upper() for m in _MARKER.findall(lead.group(0)))
            piece = piece[lead.end() :]
        refs = [m.upper() for m in _MARKER.findall(piece)]
        inferred = bool(_INFERRED.search(piece))
        plain = _INFERRED.sub(" ", _MARKER.sub(" ", piece))
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(plain.split()))
        depth = len(plain) - len(plain.lstrip(" "))
        if depth and is_line_unit(plain):  # a nested list item keeps its depth
            text = plain[:depth] + text
        if text.strip(" .。"):
            out.append((text, refs, inferred))
        elif refs and out:
            out[-1][1].extend(refs)
    return [(t, tuple(dict.fromkeys(r)), i) for t, r, i in out]


def check_answer(answer: str, snippets: Sequence[Snippet]) -> CheckedAnswer:
    """``answer`` split into attributed sentences and inferences (see the module
    docstring); a sentence with a number none of its cited snippets holds is neither."""
    by_ref = {s.ref.upper(): s for s in snippets}
    kept: list[Sentence] = []
    inferred: list[Sentence] = []
    removed_numbers = 0
    for text, refs, marked in _split(answer):
        valid = tuple(r for r in refs if r in by_ref)
        supported: set[Decimal] = set()
        for ref in valid:
            supported |= numbers_in(by_ref[ref].text)
        if not numbers_in(text) <= supported:
            removed_numbers += 1
            continue
        (inferred if marked or not valid else kept).append(Sentence(text, valid))
    return CheckedAnswer(tuple(kept), removed_numbers, tuple(inferred))


def find_conflicts(
    checked: CheckedAnswer,
    snippets: Sequence[Snippet],
    *,
    question: str | None = None,
    min_overlap: float = 0.6,
    min_shared: int = 3,
    periods: Callable[[str], set[str]] | None = None,
) -> list[tuple[str, str]]:
    """Sentences of *other* documents in the prompt that state the same thing with other
    numbers: ``(sentence, ref)`` pairs, so both sides can be shown with citations.

    Two sentences "state the same thing" when at least ``min_overlap`` of the answer
    sentence's content terms, and at least ``min_shared`` of them, occur in the other
    sentence, and — given ``periods``, which names the periods a sentence is about — they
    are not about different periods (FY2024's revenue does not contradict FY2025's).

    Given the ``question``, they must also be about what it asks where the answer's source
    names that. Of the question's terms in the title or section of a snippet the answer
    sentence cites ("annual" and "leave" under "Annual leave"), the other sentence or its
    own title or section must hold at least one; and the other's title or section must
    not name another kind of the same thing: the head word of a kind the cited heading
    names ("annual leave") after another word ("Advanced sick leave"), where neither the
    other sentence nor its heading holds the question's word ("annual"). So "4 sick leave
    hours per pay period" under "Advanced sick leave", or a sentence on comp time, does
    not contradict an answer about annual leave. This reads words, not meaning: a heading
    such as "Accrued leave" is another kind too, and a paraphrase holding none of the
    topic's words in its sentence or heading is not compared (a comp time sentence in a
    section whose text mentions leave would be, if its snippet's text counted).

    They "disagree" when both carry numbers and the sets differ."""
    by_ref = {s.ref: s for s in snippets}
    asked = content_terms(question) if question is not None else set()
    headings = {s.ref: _heading_parts(s) for s in snippets}
    heading_terms = {ref: content_terms(" ".join(parts)) for ref, parts in headings.items()}
    heading_pairs = {ref: _pairs(parts) for ref, parts in headings.items()}
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for sentence in checked.sentences:
        numbers = numbers_in(sentence.text)
        if not numbers:
            continue
        terms = content_terms(sentence.text)
        if len(terms) < min_shared:
            continue
        cited = [by_ref[r] for r in sentence.refs if r in by_ref]
        cited_docs = {s.doc_id for s in cited}
        topic = set().union(*(asked & heading_terms[s.ref] for s in cited))
        # The kinds of thing asked for as the cited headings name them ("annual leave").
        kinds = {
            (word, head)
            for s in cited
            for word, head in heading_pairs[s.ref]
            if word in asked and head in asked
        }
        own_periods = periods(sentence.text) if periods is not None else set()
        for snippet in snippets:
            if snippet.doc_id in cited_docs or snippet.ref in sentence.refs:
                continue
            heading, named = heading_terms[snippet.ref], heading_pairs[snippet.ref]
            for other in split_sentences(snippet.text):
                other_numbers = numbers_in(other)
                if not other_numbers or other_numbers == numbers:
                    continue
                if own_periods and periods is not None:
                    other_periods = periods(other)
                    if other_periods and other_periods != own_periods:
                        continue
                other_terms = content_terms(other)
                around = other_terms | heading
                if topic and not topic & around:
                    continue  # nothing of what the question asks
                if any(
                    word not in around and any(h == head and w != word for w, h in named)
                    for word, head in kinds
                ):
                    continue  # another kind of it
                shared = len(terms & other_terms)
                flat = " ".join(other.split())
                if shared >= min_shared and shared / len(terms) >= min_overlap and flat not in seen:
                    seen.add(flat)
                    found.append((other, snippet.ref))
                    break
    return found


# What separates the parts of a heading ("Types of leave > Annual leave", "Leave: sick");
# other marks ("Sick-leave", an emoji) only separate words.
_SEPARATORS = re.compile(r"[>/|:;,()\[\]{}<«»]+")
_WORD = re.compile(r"\w+")
_LOCATOR_KEY = re.compile(r"\b[a-z_]+=")


def _pairs(parts: Sequence[str]) -> set[tuple[str, str]]:
    """The adjacent pairs of content terms within each of ``parts`` (``sick leave``,
    ``Sick-leave``), never across a separator (the ``>`` between sections): a word that is
    not exactly one content term (``the``, a number, a run of CJK characters, which is
    several) breaks a pair."""
    out: set[tuple[str, str]] = set()
    for part in parts:
        for segment in _SEPARATORS.split(part):
            terms = []
            for word in _WORD.findall(segment):
                found = content_terms(word)
                terms.append(next(iter(found)) if len(found) == 1 else None)
            out.update((a, b) for a, b in itertools.pairwise(terms) if a and b)
    return out


def _heading_parts(snippet: Snippet) -> list[str]:
    """What a snippet's source says it is about, part by part: its title and each value of
    its locator (the section path), without the locator's keys (``section=``)."""
    try:
        values = [value for _, value in parse_locator(snippet.locator)]
    except ValueError:  # not a locator this project wrote: its words, without its keys
        values = [_LOCATOR_KEY.sub(" ", snippet.locator)]
    return [snippet.title, *values]
