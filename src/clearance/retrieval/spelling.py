"""A misspelt word of a question, read as the word the caller's own documents hold.

People type fast: "teleworck", "agreemnts", "Intellkgent Cloud". A word that no chunk
holds adds nothing to a lexical search, and the relevance gate then finds a word of the
question in no passage and refuses, so one slipped key turned a third of the held-out
questions that were answered into refusals or wrong answers (benchmarks/RESULTS.md).

A word is read as another when all of these hold:

* it is a word of five or more Latin letters standing alone (not part of an address, a
  path or a code), not written in capitals (an acronym or a code is meant as written),
  not a contraction written without its apostrophe ("wasnt"), and not one of the
  organisation's configured terms;
* no chunk the caller's statistics count holds it (its index term's document frequency is
  0), and it is no English word (pyspellchecker's English list): a real word the documents
  lack ("pets", "apple") stays as asked, and the refusal stays honest;
* a word one edit away that keeps its first letter — a letter left out, added or replaced,
  or two neighbours swapped (Damerau–Levenshtein distance 1) — is held by at least one of
  those chunks. The index term the most of them hold wins, then the commoner English word.
  Several words often share an index term ("telework", "teleworke"): the one shown is a
  word a readable chunk holding the term writes, where one is one edit away, else an
  English word, else the likelier slip (:func:`_slip`). An English stopword one edit away
  ("whcih") counts as held by every chunk counted.

A question written in another language (more of its function words French, Spanish,
German … than English: "Est-ce que le SNC offre une prime aux bogues ?") is read as
written: its words are not in the English list because they are not English, not because
they were mistyped. A reading must be a word: English, its index term itself, or written
by a readable chunk holding that term; "incme" is never "ince", which shares only the
index term "inc" with "Netflix, Inc.".

At most :data:`MAX_UNKNOWN` words of a question are read, the first ones written: each
costs some 50 candidates a letter, all counted in one statistics call.

**It depends on nothing the caller may not read.** The index is asked only for
:meth:`~clearance.store.base.Store.term_statistics` and for the text of a few chunks
under the filter the caller passes, which the orchestrator narrows to the chunks the
caller may retrieve without a real-time check (a document a real-time corpus serves is
confirmed only once retrieved, too late to choose a word). A word that only hidden,
RESTRICTED or unconfirmed chunks hold has a document frequency of 0 there, so it is never
offered, and the reading is the same whether or not hidden documents exist
(tests/retrieval/test_spelling.py builds both and compares). Every reading is shown to the
asker (:func:`statement`), never made silently.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clearance.analysis import is_stopword, search_terms
from clearance.store.base import TermStatistics

if TYPE_CHECKING:
    from spellchecker import SpellChecker

__all__ = ["MAX_UNKNOWN", "Correction", "Speller", "corrected", "statement"]

#: The fewest letters a word must have to be read as another: shorter words are one edit
#: away from too many others ("wifi" from "wife" and "wiki").
MIN_LETTERS = 5
#: The most words of one question read as others (the first ones written).
MAX_UNKNOWN = 3
# A run of Latin letters standing alone: not part of a longer word, a code ("abc123") or a
# word with letters of another script, nor followed by "'t" ("couldn't" is no misspelt
# "could") or a combining mark.
_WORD = re.compile(rf"(?<!\w)[A-Za-z]{{{MIN_LETTERS},}}(?![\w\u0300-\u036f]|['’]t\b)")
# What makes a run of text between spaces an address, a path or a file name, whose words
# are meant as written: "https://…", "jsmith@acme.com", "hr/teleworck.md", "notes.txt".
_ADDRESS = re.compile(r"[@/\\]|:/|\w\.\w")
_TOKEN = re.compile(r"\S+")
# The punctuation a sentence puts around a word, which does not make it an address.
_AROUND = "\"'“”‘’()[]{}<>«»,;:!?…."


def _words(text: str) -> Iterator[re.Match[str]]:
    """The words of ``text`` that may be read as others: those of :data:`_WORD` outside
    addresses, paths and file names."""
    for token in _TOKEN.finditer(text):
        if not _ADDRESS.search(token.group(0).strip(_AROUND)):
            yield from _WORD.finditer(text, token.start(), token.end())


_LETTERS = re.compile(r"[A-Za-z]+")
# The endings of contractions ("wasn't", "they're"), not of possessives ("nimbus's").
_CONTRACTED = ("n't", "'re", "'ve", "'ll", "'d", "'m")

Statistics = Callable[[Sequence[str]], TermStatistics]
#: The text of a few chunks the caller's statistics count that hold a word's index term.
Texts = Callable[[str], Sequence[str]]


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
    loaded with the first question that has a word of five letters (~0.1 s a process)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)


#: :func:`_slip` of a stray letter added, the least likely slip.
_STRAY = 4


def _slip(written: str, candidate: str) -> int:
    """How unlikely the slip is that makes ``written`` of ``candidate`` (one edit away),
    lowest first: a letter typed twice ("zephyrionn"), a letter left out ("quillfeathr"),
    two letters swapped, one replaced, and last a stray letter added."""
    if len(candidate) == len(written) - 1:
        pairs = enumerate(zip(written, candidate, strict=False))
        i = next((i for i, (a, b) in pairs if a != b), len(candidate))
        doubled = written[i] in written[max(i - 1, 0) : i] + written[i + 1 : i + 2]
        return 0 if doubled else _STRAY
    if len(candidate) == len(written) + 1:
        return 1
    diff = [i for i, (a, b) in enumerate(zip(written, candidate, strict=True)) if a != b]
    swapped = len(diff) == 2 and diff[1] == diff[0] + 1
    return 2 if swapped else 3


def _term(word: str) -> str | None:
    """The one index term of ``word``; ``None`` for a word a query drops."""
    terms = search_terms(word)
    return terms[0] if len(terms) == 1 else None


#: How often (in pyspellchecker's counts) each of two words written as one must occur for
#: the pair to be a word people coin ("frontend", "codebase", "timeoff"), not a slip that
#: happens to split in two ("subnit": "sub" and "nit").
COMMON = 10_000


def _compound(word: str, english: SpellChecker) -> bool:
    """Whether ``word`` is two common English words written as one ("frontend",
    "codebase"), which may be meant as written."""
    frequency = english.word_frequency
    return any(
        min(frequency[word[:i]], frequency[word[i:]]) >= COMMON for i in range(3, len(word) - 2)
    )


def _candidates(word: str, english: SpellChecker) -> dict[str, str | None] | None:
    """The words one edit from ``word`` that keep its first letter, each with its index
    term (``None`` for an English stopword, which no chunk is searched for); ``None`` when
    ``word`` is a contraction written without its apostrophe ("wasnt", "theyre"). Of two
    common words written as one (:func:`_compound`), a letter is never taken out as a stray
    one: "frontend" is no "fronted" with an "n" added, while "agreemet" (agree, met) is
    still "agreement"."""
    compound = _compound(word, english)
    edits = english.edit_distance_1(word)
    if any(c.endswith(_CONTRACTED) and c in english for c in edits):
        return None
    out: dict[str, str | None] = {}
    for c in edits:
        if c[:1] != word[:1] or not (c.isascii() and c.isalpha()):
            continue
        if compound and _slip(word, c) == _STRAY:
            continue
        if is_stopword(c):
            if c in english:
                out[c] = None
        elif (term := _term(c)) is not None:
            out[c] = term
    return out


class Speller:
    """Reads a question's misspelt words as words of the caller's readable chunks."""

    def __init__(self, keep: Iterable[str] = ()) -> None:
        """``keep``: names and phrases whose words are never read as others, whatever the
        documents hold (the organisation's configured vocabulary), compared casefolded."""
        self.keep = frozenset(m.group(0).casefold() for text in keep for m in _words(text))

    def corrections(
        self, text: str, statistics: Statistics, texts: Texts | None = None
    ) -> tuple[Correction, ...]:
        """The readings of ``text``'s misspelt words, in the order they are written.
        ``statistics`` counts the chunks the caller may retrieve that hold each index term
        (the store's ``term_statistics`` under the caller's filter); ``texts`` gives the
        text of a few of those chunks holding a term, to show the word as they write it.
        Nothing else is read from the index."""
        if not _reads_as_english(text):
            return ()  # "offre" in a French question is no misspelt "offer"
        english: SpellChecker | None = None
        words: dict[str, str] = {}  # each word no English word, with its index term
        for match in _words(text):
            written = match.group(0)
            word = written.casefold()
            if written.isupper() or word in self.keep or word in words:
                continue
            english = english or _english()
            if word not in english and (term := _term(word)) is not None:
                words[word] = term
        if english is None or not words:
            return ()  # a question of English words asks the index nothing
        held = statistics(sorted(set(words.values()))).df
        unknown: dict[str, dict[str, str | None]] = {}
        for word, term in words.items():
            if held.get(term, 0) > 0 or (options := _candidates(word, english)) is None:
                continue
            unknown[word] = options
            if len(unknown) == MAX_UNKNOWN:
                break
        if not any(unknown.values()):
            return ()
        stats = statistics(sorted({t for o in unknown.values() for t in o.values() if t}))
        found: list[Correction] = []
        for word, options in unknown.items():
            ranked: dict[str | None, tuple[int, int]] = {}
            for candidate, term in options.items():
                chunks = stats.df.get(term, 0) if term is not None else stats.chunks
                if chunks > 0:
                    rank = (-chunks, -english.word_frequency[candidate])
                    ranked[term] = min(ranked.get(term, rank), rank)
            for term in sorted(ranked, key=lambda t: ranked[t]):
                spellings = [c for c, t in options.items() if t == term]
                shown = _shown(word, term, spellings, english, texts)
                if shown is not None:
                    found.append(Correction(word, shown))
                    break
        return tuple(found)


def _shown(
    word: str,
    term: str | None,
    spellings: Sequence[str],
    english: SpellChecker,
    texts: Texts | None,
) -> str | None:
    """Which of the ``spellings`` one edit from ``word`` that share the index ``term`` to
    show: one a readable chunk holding the term writes, else an English one (the commoner
    first), else the term itself where it is one of them ("telework" where the documents
    write "teleworking"), else the likelier slip, then alphabetical order. ``None`` when
    none of them is a word: neither English, nor the term itself, nor written by a chunk
    holding the term ("ince" shares the term "inc" with "Netflix, Inc." and is no word)."""
    known = [c for c in spellings if c in english or c == term]
    written: set[str] = set()
    if term is not None and texts is not None and (len(spellings) > 1 or not known):
        written = {w.casefold() for t in texts(spellings[0]) for w in _LETTERS.findall(t)}
    words = sorted(written & set(spellings)) or known
    if not words:
        return None
    return min(
        words,
        key=lambda c: (c not in english, -english.word_frequency[c], c != term, _slip(word, c), c),
    )


# Function words of the languages besides English most often written in Latin letters
# (French, Spanish, German, Portuguese, Italian, Dutch). A few are English words too ("son",
# "die"), which an English question holds beside many more English function words.
_OTHER_FUNCTION_TEXT = """
    le la les des du une est sont que qui pour avec dans sur aux et ou nous vous mon ma
    mes ce cette ces il elle ils je quel quelle quels quelles comment pourquoi el los
    las del una es son por con para como qué cómo cuál mi mis su sus yo der die das und
    ich nicht mit für ist wie wer wann warum ein eine einen dem den zu auf uma não com é
    di il della che per sono het een van voor niet wat hoe
"""
_OTHER_FUNCTION_WORDS = frozenset(_OTHER_FUNCTION_TEXT.split())
_ENGLISH_FUNCTION_TEXT = """
    the a an of to in on at is are was were be do does did how what which who when why
    where my our your i we you it this that for with and or can could should would will
    from by much many
"""
_ENGLISH_FUNCTION_WORDS = frozenset(_ENGLISH_FUNCTION_TEXT.split())
_ANY_WORD = re.compile(r"[^\W\d_]+")


def _reads_as_english(text: str) -> bool:
    """Whether ``text`` is written in English, as far as its function words tell: a
    question with more function words of another language than of English ("Est-ce que
    le SNC offre une prime ?") has its words read as they are, since a word the English
    list lacks is then no slip."""
    words = [w.casefold() for w in _ANY_WORD.findall(text)]
    other = sum(w in _OTHER_FUNCTION_WORDS for w in words)
    # two at least: "El Paso office parkng polcy" is English with a Spanish name in it
    return other < 2 or other <= sum(w in _ENGLISH_FUNCTION_WORDS for w in words)


def _cased(like: str, word: str) -> str:
    """``word`` written with the case of ``like``: "Computing" for "Compyuting"."""
    if like[:1].isupper() and like[1:].islower():
        return word.capitalize()
    return word


def corrected(text: str, corrections: Sequence[Correction]) -> str:
    """``text`` with every standalone occurrence of each misspelt word read as its
    correction, in the case it was written in; a word written in capitals stays."""
    if not corrections:
        return text
    readings = {c.written: c.read_as for c in corrections}

    out: list[str] = []
    done = 0
    for match in _words(text):
        written = match.group(0)
        reading = readings.get(written.casefold())
        if reading is not None and not written.isupper():
            out += (text[done : match.start()], _cased(written, reading))
            done = match.end()
    out.append(text[done:])
    return "".join(out)


def statement(corrections: Sequence[Correction]) -> str:
    """The sentence that tells the asker how the question was read: ``Read “anual” as
    “annual”.``; empty when nothing was read as another word."""
    if not corrections:
        return ""
    pairs = [f"“{c.written}” as “{c.read_as}”" for c in corrections]
    listed = pairs[0] if len(pairs) == 1 else ", ".join(pairs[:-1]) + " and " + pairs[-1]
    return f"Read {listed}."
