"""Deterministic sensitivity classification (docs/design.md §3), driven by ``[sensitivity]`` only.

Order: a label from the source system is kept; a path matching
``restricted_filename_patterns`` ⇒ RESTRICTED; text matching a ``restricted_keywords``
entry ⇒ RESTRICTED; no source label and ``escalate_unknown_to_restricted`` ⇒ RESTRICTED;
else ``default_level``. Classification only ever raises a label, never lowers one.

How a pattern matches (both lists, after NFKC and case folding of both sides):

* without glob metacharacters (``*``, ``?``, ``[``) it is a **substring**: ``board_minutes``
  matches ``minutes/2024_board_minutes.pdf`` and a keyword anywhere in the text;
* with them it is a **glob**: a filename pattern must match the whole file name or the
  whole relative path (``salaries-*.xlsx``, ``hr/*/cases/*``); a keyword glob matches
  anywhere in the text (``project*falcon``).

A classifier that can only raise a label must never be silently inert: :class:`Classifier`
counts the matches of every pattern over a run, and ingestion warns about each configured
pattern that matched nothing.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from clearance.config import SensitivitySettings
from clearance.model import Sensitivity

__all__ = ["Classifier", "Pattern", "classify"]

_GLOB_CHARS = frozenset("*?[")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True, slots=True)
class Pattern:
    """One configured pattern, compiled once: a folded substring or a glob regex."""

    raw: str
    substring: str | None
    glob: re.Pattern[str] | None

    @classmethod
    def compile(cls, raw: str, *, anywhere: bool) -> Pattern:
        """``anywhere``: a glob may match inside the subject (keywords) rather than the
        whole of it (file names and paths)."""
        folded = _fold(raw.strip())
        if not _GLOB_CHARS & set(folded):
            return cls(raw, folded, None)
        body = fnmatch.translate(folded)  # "(?s:…)\Z", anchored at the end only
        if anywhere:
            body = body.removesuffix(r"\Z")
        return cls(raw, None, re.compile(body))

    def matches(self, subject: str, *, anywhere: bool) -> bool:
        """``subject`` must already be folded."""
        if self.substring is not None:
            return self.substring in subject
        assert self.glob is not None
        return bool(self.glob.search(subject) if anywhere else self.glob.match(subject))


@dataclass(slots=True)
class Classifier:
    """The ``[sensitivity]`` rules compiled once, with match counts for the run."""

    settings: SensitivitySettings
    filename_patterns: tuple[Pattern, ...] = ()
    keywords: tuple[Pattern, ...] = ()
    hits: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.filename_patterns = tuple(
            Pattern.compile(p, anywhere=False)
            for p in self.settings.restricted_filename_patterns
            if p.strip()
        )
        self.keywords = tuple(
            Pattern.compile(k, anywhere=True)
            for k in self.settings.restricted_keywords
            if k.strip()
        )

    def classify(self, *, label: Sensitivity | None, path: str | None, text: str) -> Sensitivity:
        """The sensitivity of a document given its source label, its path relative to what
        was ingested (``None`` for inline text) and its full text. Every pattern is tried,
        so the counts say which patterns matched at least once."""
        level = label if label is not None else self.settings.default_level
        restricted = False
        if path is not None:
            folded_path = _fold(path.replace("\\", "/"))
            name = folded_path.rsplit("/", 1)[-1]
            for p in self.filename_patterns:
                if p.matches(folded_path, anywhere=False) or p.matches(name, anywhere=False):
                    self.hits[f"filename:{p.raw}"] += 1
                    restricted = True
        folded = _fold(text)
        for k in self.keywords:
            if k.matches(folded, anywhere=True):
                self.hits[f"keyword:{k.raw}"] += 1
                restricted = True
        if restricted:
            return Sensitivity.RESTRICTED
        if label is None and self.settings.escalate_unknown_to_restricted:
            return Sensitivity.RESTRICTED
        return level

    def unmatched(self) -> list[str]:
        """One warning per configured pattern that matched no document so far."""
        out = [
            f"[sensitivity] restricted_filename_patterns entry {p.raw!r} matched no file "
            "in this run"
            for p in self.filename_patterns
            if not self.hits[f"filename:{p.raw}"]
        ]
        out += [
            f"[sensitivity] restricted_keywords entry {k.raw!r} matched no document in this run"
            for k in self.keywords
            if not self.hits[f"keyword:{k.raw}"]
        ]
        return out


def classify(
    settings: SensitivitySettings,
    *,
    label: Sensitivity | None,
    filename: str | None,
    text: str,
) -> Sensitivity:
    """The sensitivity of one document; ``filename`` may be a name or a relative path."""
    return Classifier(settings).classify(label=label, path=filename, text=text)
