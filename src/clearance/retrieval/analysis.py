"""Text analysis shared by indexing and querying, so both see the same terms.

Latin-script text is split into words (NFKC, casefolded; FTS5's porter stemmer runs on top).
CJK text has no spaces, so every run of Han, Hiragana, Katakana or Hangul characters is
indexed as its unigrams **and** bigrams: a Japanese or Chinese query matches documents by
overlapping character pairs, which is the standard CJK approach when no dictionary
tokenizer is available and keeps recall for one-character words.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fts_query", "index_terms", "query_terms"]

_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\uac00-\ud7af"  # Hangul syllables
    "\u31f0-\u31ff\u3005\u3006\u30fc"  # Katakana ext, 々, 〆, ー
)
# Latin-script words exclude CJK characters, so "6時間" splits into "6" and a CJK run.
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*", re.UNICODE)
_IS_CJK = re.compile(rf"^[{_CJK}]+$")

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
    for match in _TOKEN.finditer(_normalise(text)):
        token = match.group(0)
        if _IS_CJK.match(token):
            # Documents get unigrams and bigrams; a query uses its bigrams (selective) and
            # falls back to the unigram only for a one-character run.
            if not for_query or len(token) == 1:
                out.extend(token)
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            out.append(token.replace("’", "'"))
    return out


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


def fts_query(text: str) -> str | None:
    """An FTS5 ``MATCH`` expression OR-ing the quoted query terms; ``None`` if no terms."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
