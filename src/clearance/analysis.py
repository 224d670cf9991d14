"""Text analysis shared by indexing and querying, so both see the same terms.

Latin-script text is split into words (NFKC, casefolded). CJK text has no spaces, so every
run of Han, Hiragana, Katakana or Hangul characters is indexed as its unigrams **and**
bigrams: a Japanese or Chinese query matches documents by overlapping character pairs, which
is the standard CJK approach when no dictionary tokenizer is available and keeps recall for
one-character words.

Two layers:

* :func:`index_terms` / :func:`query_terms` give the *surface* terms (what the extractive
  answerer compares between a question and a sentence);
* :func:`document_terms` / :func:`search_terms` give the *index* terms the lexical index
  stores and matches: surface terms with diacritics folded ("società" = "societa") and
  stemmed by the Snowball English stemmer (PyStemmer), CJK terms untouched.

:func:`searchable` says whether a query has anything to search for (a letter or a digit).
A query of emoji, invisible characters, punctuation or whitespace has not, and searching it
would only return the vector index's nearest neighbours of noise: retrieval answers it with
nothing.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import Stemmer

__all__ = [
    "cjk_share",
    "document_terms",
    "ends_with_abbreviation",
    "file_name_words",
    "index_terms",
    "is_cjk_frame",
    "is_cjk_pair",
    "is_stopword",
    "kana_free",
    "phrase_keys",
    "query_terms",
    "search_terms",
    "searchable",
    "unseen_pairs_as_characters",
    "word_pairs",
]

_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\u31f0-\u31ff\u3005\u3006\u30fc"  # Katakana ext, 々, 〆, ー
)
# Combining marks are not word characters to `re`, yet they belong inside words: a Hindi
# vowel sign, an Arabic or Hebrew point, the dot of a case-folded Turkish "İ".
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    "\u0900-\u0dff\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u1ab0-\u1aff\u1dc0-\u1dff"
    "\u20d0-\u20ff\ufe20-\ufe2f"
)
_WORD = rf"[^\W_{_CJK}](?:[^\W_{_CJK}]|[{_MARKS}])*"


# Both patterns are compiled with their first use, not on import: their classes span tens
# of thousands of code points, and compiling them (about 12 ms) was most of what loading
# this module cost a command that analyses no text, such as `clearance status`.
@functools.cache
def _tokens() -> re.Pattern[str]:
    # Latin-script words exclude CJK characters, so "6時間" splits into "6" and a CJK run.
    return re.compile(rf"[{_CJK}]+|{_WORD}(?:['’]{_WORD})*", re.UNICODE)


@functools.cache
def _is_cjk() -> re.Pattern[str]:
    return re.compile(rf"^[{_CJK}]+$")


# Only dropped from queries (documents keep them), to keep OR-queries selective.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "il",
        "lo",
        "la",
        "le",
        "gli",
        "i",
        "un",
        "una",
        "di",
        "da",
        "del",
        "della",
        "dei",
        "che",
        "per",
        "con",
        "non",
        "sono",
    ]
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _terms(text: str, *, for_query: bool = False) -> list[str]:
    out: list[str] = []
    is_cjk = _is_cjk()
    for match in _tokens().finditer(_normalise(text)):
        token = match.group(0)
        if is_cjk.match(token):
            # Documents get unigrams and bigrams; a query uses its bigrams (selective) and
            # falls back to the unigram only for a one-character run.
            if not for_query or len(token) == 1:
                out.extend(token)
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            out.append(token.replace("’", "'"))
    return out


# Words after which a period does not end a sentence (case matters: "no." may end one).
_ABBREVIATIONS = frozenset(
    {"Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "No", "Nr", "Fig", "Vol"}
    | {"vs", "cf", "approx", "incl", "ca", "ie", "eg", "viz", "esp"}
)
_SINGLE_LETTERS = re.compile(r"(?:^|[\s(])(?:[A-Za-z]\.)+$")
_LAST_WORD = re.compile(r"(?:^|[^\w])([A-Za-z]+)\.$")


def ends_with_abbreviation(before: str) -> bool:
    """Whether ``before`` (text ending in a period) ends with an abbreviation, whose period
    ends no sentence: ``e.g.``, ``i.e.``, ``U.S.``, ``Dr.``, ``vs.``, ``(ie.`` …"""
    if _SINGLE_LETTERS.search(before):
        return True
    m = _LAST_WORD.search(before)
    return bool(m and m.group(1) in _ABBREVIATIONS)


def searchable(text: str) -> bool:
    """True when ``text`` has something to search for: a letter or digit (CJK included)
    once normalised. Emoji, invisible characters, punctuation (CJK punctuation such as
    "・" too) and whitespace are not. Stopwords count ("IT", "who"): they carry meaning
    for the vector search even where the lexical index drops them."""
    return any(ch.isalnum() for ch in _normalise(text))


def _is_hiragana(ch: str) -> bool:
    return "\u3040" <= ch <= "\u309f"


def kana_free(terms: Sequence[str]) -> list[str]:
    """A question's terms without the grammar of Japanese: hiragana are its particles,
    endings and auxiliaries ("って", "んですか", "の健"), so a two-character term holding
    one names its other character at most ("休み" → "休"), and only when no other term of
    the question holds that character already ("の健" beside "健康" → nothing). Terms of any
    other kind are kept as they are."""
    kept = [t for t in terms if not (len(t) == 2 and any(_is_hiragana(c) for c in t))]
    covered = {c for t in kept if _is_cjk().match(t) for c in t}
    out = list(kept)
    for term in terms:
        if len(term) == 2 and any(_is_hiragana(c) for c in term):
            for ch in term:
                # the long-vowel mark only lengthens the character before it
                if (
                    not _is_hiragana(ch)
                    and ch != "ー"
                    and _is_cjk().match(ch)
                    and ch not in covered
                ):
                    covered.add(ch)
                    out.append(ch)
    return out


# Chinese particles, pronouns and question words: like hiragana in Japanese, they frame a
# question ("的", "吗", "什么") and name nothing it asks about.
_CJK_FRAME_CHARACTERS = frozenset(
    "的了吗呢吧啊呀是有在什么怎样哪里几多少请问我你他她们这那个些吗么何"
)


def is_cjk_frame(character: str) -> bool:
    """Whether ``character`` is a hiragana or a Chinese function character: the grammar of
    a question, not what it is about."""
    return len(character) == 1 and (_is_hiragana(character) or character in _CJK_FRAME_CHARACTERS)


def _is_han(character: str) -> bool:
    return (
        "\u4e00" <= character <= "\u9fff"
        or "\u3400" <= character <= "\u4dbf"
        or "\uf900" <= character <= "\ufaff"
    )


def is_cjk_pair(term: str) -> bool:
    """Whether ``term`` is a query's CJK bigram (two CJK characters)."""
    return len(term) == 2 and cjk_share(term) == 1.0


def unseen_pairs_as_characters(terms: Sequence[str], df: Mapping[str, int]) -> list[str]:
    """``terms`` (distinct, in order) with each CJK pair that ``df`` says no chunk holds
    given way to its Han characters, frames dropped (:func:`is_cjk_frame`). Japanese
    shortens words by their first characters: "育休" is 育児休業, which the documents spell
    out and never hold as the pair "育休", so the pair finds nothing and its characters
    find the passage. A pair stays as it is where one of its characters is held by no
    chunk either ("京都" beside documents holding 東京 and no 都: Kyoto is not Tokyo) or
    where it has none to give: a kana or Hangul character only spells a sound ("カイ" is no
    part of "ガイド"). ``df`` must count the caller's readable chunks only, as the lexical
    search's own statistics do, so what this gives depends on nothing the caller may not
    read; it must hold the pairs' characters too."""
    out: dict[str, None] = {}
    for term in terms:
        if is_cjk_pair(term) and df.get(term, 0) == 0:
            characters = [ch for ch in term if _is_han(ch) and not is_cjk_frame(ch)]
            if characters and all(df.get(ch, 0) for ch in characters):
                out.update((ch, None) for ch in characters)
                continue
        out[term] = None
    return list(out)


def cjk_share(text: str) -> float:
    """The share of CJK characters among the letters and digits of ``text`` (0 if none)."""
    letters = [ch for ch in _normalise(text) if ch.isalnum()]
    if not letters:
        return 0.0
    is_cjk = _is_cjk()
    return sum(1 for ch in letters if is_cjk.match(ch)) / len(letters)


def index_terms(text: str) -> str:
    """The space-separated term stream stored in the full-text index."""
    return " ".join(_terms(text))


def query_terms(text: str) -> list[str]:
    """Distinct query terms in order of first appearance, stopwords removed."""
    seen: dict[str, None] = {}
    for term in _terms(text, for_query=True):
        if term not in _STOPWORDS:
            seen.setdefault(term, None)
    return list(seen)


# A Stemmer object keeps state between calls and must not be shared between threads.
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


# The accents of Latin, Greek and Cyrillic letters; vowel signs of other scripts stay.
_ACCENTS = re.compile("[\u0300-\u036f]")


def _fold(term: str) -> str:
    """Drop accents from a term ("città" → "citta", "Ελλάδα" → "ελλαδα"). Never applied to
    CJK terms: NFD would split the voicing mark off "が" and turn it into "か"."""
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFD", term)
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


def _index_forms(terms: list[str]) -> list[str]:
    is_cjk = _is_cjk()
    latin = [i for i, t in enumerate(terms) if not is_cjk.match(t)]
    if not latin:
        return terms
    stemmed = _stemmer().stemWords([_fold(terms[i]) for i in latin])
    out = list(terms)
    for i, stem in zip(latin, stemmed, strict=True):
        out[i] = stem
    return out


def document_terms(text: str) -> list[str]:
    """Every index term of a document, in order, repeats kept (term frequency counts)."""
    return _index_forms(_terms(text))


def phrase_keys(text: str) -> list[str]:
    """``text`` as a sequence to match phrases in: Latin-script words in their index form
    (stemmed, accents folded), CJK runs as single characters, stopwords kept. A phrase
    occurs in a text when its keys are a contiguous run of the text's keys, so "litigation
    holds" contains "litigation hold" and "訴訟ホールドの通知" contains "訴訟ホールド"."""
    pieces: list[str] = []
    is_cjk = _is_cjk()
    for match in _tokens().finditer(_normalise(text)):
        token = match.group(0)
        pieces.extend(token if is_cjk.match(token) else [token.replace("’", "'")])
    return _index_forms(pieces)


def is_stopword(word: str) -> bool:
    """Whether a query drops ``word`` (casefolded) as it stands, before stemming."""
    return word in _STOPWORDS


def search_terms(text: str) -> list[str]:
    """Distinct index terms of a query, stopwords removed before and after stemming."""
    # Checked again after stemming: "what's" and "it's" stem to stopwords.
    return [t for t in dict.fromkeys(_index_forms(query_terms(text))) if t not in _STOPWORDS]


def file_name_words(uri: str) -> str:
    """The words of a document's file name as a reader sees them in its link:
    ``…/konica-minolta-fy2023-overview.md`` → ``konica minolta fy2023 overview``."""
    return re.sub(r"[-_.]+", " ", PurePosixPath(uri).stem)


_LETTERS = re.compile(r"[^\W\d_]+")


@functools.lru_cache(maxsize=65536)
def _index_form(word: str) -> str | None:
    terms = document_terms(word)
    return terms[0] if len(terms) == 1 else None


@functools.lru_cache(maxsize=65536)
def _joined(first: str, second: str) -> str | None:
    """The index term of two adjacent words written as one ("set" "up" → "setup"), or
    ``None`` when either is not a word of Latin letters."""
    if not (first.isalpha() and second.isalpha() and first.isascii() and second.isascii()):
        return None
    terms = document_terms(first + second)
    return terms[0] if len(terms) == 1 else None


def word_pairs(text: str) -> list[tuple[str, str, str]]:
    """Each pair of adjacent words of ``text`` — their index terms — with the term they make
    written as one: a question's "AppleCare" is a page's "Apple Care", its "set up" a page's
    "setup". The words are joined as written, not as stemmed ("Apple Care" is "applecare",
    indexed "applecar", where the stems would make "applcare")."""
    out = []
    words = [m.group(0) for m in _LETTERS.finditer(text.casefold())]
    for first, second in itertools.pairwise(words):
        joined = _joined(first, second)
        a, b = _index_form(first), _index_form(second)
        if joined is not None and a is not None and b is not None:
            out.append((a, b, joined))
    return out
