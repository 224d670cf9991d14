"""A misspelt word of a question, read as the word the caller's own documents hold.

People type fast: "teleworck", "agreemnts", "Intellkgent Cloud". A word that no chunk
holds adds nothing to a lexical search, and the relevance gate then finds a word of the
question in no passage and refuses, so one slipped key turned a third of the held-out
questions that were answered into refusals or wrong answers (benchmarks/RESULTS.md).

A word is read as another when all of these hold:

* it is a word of five or more Latin letters, not written in capitals (an acronym or a
  code is meant as written) and not one of the organisation's configured terms;
* no chunk the caller may retrieve holds it (its index term's document frequency over the
  caller's filter is 0), and it is no English word (pyspellchecker's English list): a real
  word the documents lack ("pets", "apple") stays as asked, and the refusal stays honest;
* a word one edit away — a letter left out, added or replaced, or two neighbours swapped
  (Damerau–Levenshtein distance 1) — is held by at least one chunk the caller may
  retrieve. The one the most of those chunks hold wins; ties go to the commoner English
  word, then to the likelier slip (:func:`_slip`: candidates often share an index term,
  as "zephyrion" and "zephyrione" do), then to the first in alphabetical order. An English word the index does not
  search for (a stopword: "larye" is "large") counts as held by every readable chunk.

**It depends on nothing the caller may not read.** The index is asked only for
:meth:`~clearance.store.base.Store.term_statistics` under the caller's own retrieval filter,
the statistics the lexical search and the relevance gate already use: a word that only
hidden (or RESTRICTED) chunks hold has a document frequency of 0 for this caller, so it is
never offered, and the reading is the same whether or not hidden documents exist
(tests/retrieval/test_spelling.py builds both stores and compares). Every reading is shown
to the asker (:func:`statement`), never made silently.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearance.analysis import search_terms
from clearance.store.base import TermStatistics

if TYPE_CHECKING:
    from spellchecker import SpellChecker

__all__ = ["Correction", "Speller", "corrected", "statement"]

#: The fewest letters a word must have to be read as another: shorter words are one edit
#: away from too many others ("wifi" from "wife" and "wiki").
MIN_LETTERS = 5
# A run of Latin letters standing alone: not part of a longer word, a code ("abc123"), a
# word with letters of another script, or a contraction ("couldn't" is no misspelt "could").
_WORD = re.compile(rf"(?<![^\W_])[A-Za-z]{{{MIN_LETTERS},}}(?![^\W_]|['’]t\b)")

Statistics = Callable[[Sequence[str]], TermStatistics]


@dataclass(frozen=True, slots=True)
class Correction:
    """A word as the question wrote it (casefolded) and the word it was read as."""

    written: str
    read_as: str

    def to_dict(self) -> dict[str, str]:
        return {"written": self.written, "read_as": self.read_as}


@functools.cache
def _english() -> SpellChecker:
    """pyspellchecker's English word list (about 160,000 words with their frequencies),
    loaded with the first question that has a word no readable chunk holds (~0.1 s)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)


def _slip(written: str, candidate: str) -> int:
    """How unlikely the slip is that makes ``written`` of ``candidate`` (one edit away),
    lowest first: a letter typed twice ("zephyrionn"), a letter left out ("quillfeathr"),
    two letters swapped, one replaced, and last a stray letter added."""
    if len(candidate) == len(written) - 1:
        pairs = enumerate(zip(written, candidate, strict=False))
        i = next((i for i, (a, b) in pairs if a != b), len(candidate))
        doubled = written[i] in written[max(i - 1, 0) : i] + written[i + 1 : i + 2]
        return 0 if doubled else 4
    if len(candidate) == len(written) + 1:
        return 1
    diff = [i for i, (a, b) in enumerate(zip(written, candidate, strict=True)) if a != b]
    swapped = len(diff) == 2 and diff[1] == diff[0] + 1
    return 2 if swapped else 3


def _term(word: str) -> str | None:
    """The one index term of ``word``; ``None`` for a stopword."""
    terms = search_terms(word)
    return terms[0] if len(terms) == 1 else None


class Speller:
    """Reads a question's misspelt words as words of the caller's readable chunks."""

    def __init__(self, keep: Iterable[str] = ()) -> None:
        """``keep``: names and phrases whose words are never read as others, whatever the
        documents hold (the organisation's configured vocabulary), compared casefolded."""
        self.keep = frozenset(m.group(0).casefold() for text in keep for m in _WORD.finditer(text))

    def corrections(self, text: str, statistics: Statistics) -> tuple[Correction, ...]:
        """The readings of ``text``'s misspelt words, in the order they are written.
        ``statistics`` counts the chunks the caller may retrieve that hold each index term
        (the store's ``term_statistics`` under the caller's filter): the only thing read
        from the index."""
        words: dict[str, str] = {}
        for match in _WORD.finditer(text):
            written = match.group(0)
            word = written.casefold()
            if written.isupper() or word in self.keep or word in words:
                continue
            term = _term(word)
            if term is not None:
                words[word] = term
        if not words:
            return ()
        held = statistics(sorted(set(words.values()))).df
        english: SpellChecker | None = None
        # word: {candidate: its index term, None for a stopword}
        unknown: dict[str, dict[str, str | None]] = {}
        for word, term in words.items():
            if held.get(term, 0) > 0:
                continue
            english = english or _english()
            if word in english:
                continue
            options = {c: _term(c) for c in english.edit_distance_1(word) if c.isascii()}
            # A stopword ("whcih" for "which") is searched for by no chunk: an English one
            # counts as held by every readable chunk.
            unknown[word] = {
                c: t for c, t in options.items() if c.isalpha() and (t is not None or c in english)
            }
        if english is None or not any(unknown.values()):
            return ()
        stats = statistics(sorted({t for o in unknown.values() for t in o.values() if t}))
        found: list[Correction] = []
        for word, options in unknown.items():
            ranked = []
            for candidate, term in options.items():
                chunks = stats.df.get(term, 0) if term is not None else stats.chunks
                if chunks > 0:
                    rarity = -english.word_frequency[candidate]
                    ranked.append((-chunks, rarity, _slip(word, candidate), candidate))
            if ranked:
                found.append(Correction(word, min(ranked)[-1]))
        return tuple(found)


def _cased(like: str, word: str) -> str:
    """``word`` written with the case of ``like``: "Computing" for "Compyuting"."""
    if like[:1].isupper() and like[1:].islower():
        return word.capitalize()
    return word


def corrected(text: str, corrections: Sequence[Correction]) -> str:
    """``text`` with every standalone occurrence of each misspelt word read as its
    correction, in the case it was written in."""
    if not corrections:
        return text
    readings = {c.written: c.read_as for c in corrections}

    def read(match: re.Match[str]) -> str:
        written = match.group(0)
        reading = readings.get(written.casefold())
        return written if reading is None else _cased(written, reading)

    return _WORD.sub(read, text)


def statement(corrections: Sequence[Correction]) -> str:
    """The sentence that tells the asker how the question was read: ``Read “anual” as
    “annual”.``; empty when nothing was read as another word."""
    if not corrections:
        return ""
    pairs = [f"“{c.written}” as “{c.read_as}”" for c in corrections]
    listed = pairs[0] if len(pairs) == 1 else ", ".join(pairs[:-1]) + " and " + pairs[-1]
    return f"Read {listed}."
