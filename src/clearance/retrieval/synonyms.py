"""An organisation's own vocabulary: phrases that mean the same thing in its documents.

People ask in their words, documents answer in others: "the litigation hold" is a "legal
hold" in the legal team's notice and "preserve all records" in a customer record; "PTO" is
"annual leave" in the handbook. Neither BM25 nor a small embedding model knows that, and no
general thesaurus knows an organisation's jargon, so the equivalences are configured, as in
any enterprise search engine (``[retrieval.synonyms]``: a phrase and the phrases equivalent
to it; every phrase of a group stands for each other).

They serve two places, both only ever on what the caller may already read:

* **retrieval** — the lexical query also searches the equivalent phrases of every phrase the
  question holds (the vector search keeps the question as asked);
* **relevance** — a snippet that states an equivalent phrase in full is judged to hold the
  question's phrase (:mod:`clearance.answer.relevance`).

Phrases match on :func:`~clearance.analysis.phrase_keys`: index forms, so plurals
and case do not matter, and CJK phrases match inside longer runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clearance.analysis import phrase_keys, search_terms

__all__ = ["NO_SYNONYMS", "Synonyms", "Used"]


@dataclass(frozen=True, slots=True)
class _Phrase:
    text: str
    keys: tuple[str, ...]
    terms: frozenset[str]  # its search terms: what a snippet must hold to state it


@dataclass(frozen=True, slots=True)
class Used:
    """A phrase found in a question, with the phrases equivalent to it."""

    phrase: str
    terms: frozenset[str]
    equivalents: tuple[frozenset[str], ...]  # the search terms of each equivalent
    texts: tuple[str, ...]  # the equivalents as configured


def _occurs(keys: tuple[str, ...], text: Sequence[str]) -> bool:
    n = len(keys)
    return any(tuple(text[i : i + n]) == keys for i in range(len(text) - n + 1))


class Synonyms:
    """Groups of equivalent phrases (``RetrievalSettings.synonyms``, validated there)."""

    def __init__(self, groups: Sequence[Sequence[str]]) -> None:
        self.groups: tuple[tuple[_Phrase, ...], ...] = tuple(
            tuple(_Phrase(p, tuple(phrase_keys(p)), frozenset(search_terms(p))) for p in group)
            for group in groups
        )

    def with_groups(self, groups: Sequence[Sequence[str]]) -> Synonyms:
        """These equivalences and ``groups`` besides."""
        return Synonyms([*(tuple(p.text for p in g) for g in self.groups), *groups])

    def __bool__(self) -> bool:
        return bool(self.groups)

    def used(self, question: str) -> list[Used]:
        """The configured phrases ``question`` holds, each with its equivalents."""
        keys = phrase_keys(question)
        found: list[Used] = []
        for group in self.groups:
            for phrase in group:
                if phrase.keys and _occurs(phrase.keys, keys):
                    others = [p for p in group if p is not phrase]
                    found.append(
                        Used(
                            phrase.text,
                            phrase.terms,
                            tuple(p.terms for p in others),
                            tuple(p.text for p in others),
                        )
                    )
        return found

    def expand(self, query: str) -> str:
        """``query`` followed by the equivalents of the phrases it holds, for the lexical
        search: the same query when it holds none."""
        extra = dict.fromkeys(t for u in self.used(query) for t in u.texts)
        return "\n".join([query, *extra]) if extra else query


NO_SYNONYMS = Synonyms(())
