"""The lines of financial statements by their names in English, Japanese and Chinese.

A results table names its lines in its own language: 売上高, 营业收入, Revenue. A question
may name them in another ("What was Konica Minolta's operating profit?"). These are not an
organisation's jargon (that is ``[retrieval.synonyms]``) but the standard names of statement
lines, so they ship with the project (``data/statement-lines.toml``): each group is one line,
and every name of a group stands for the others where a passage or a table is judged (the
relevance gate, quoting, a table's metric), though not in the lexical search itself, where
a dozen names in three scripts would outweigh the words of the question.

Names compare casefolded with white space folded (:func:`key`).
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable
from importlib import resources

__all__ = ["equivalents", "key", "line_name", "lines", "same_line", "weak_names"]


def key(name: str) -> str:
    """How a name of a line compares: casefolded, white space folded, a dash between
    words as a hyphen (``earnings per common share—basic`` is ``… share - basic``)."""
    return " ".join(_DASH.sub(" - ", name.casefold()).split())


_DASH = re.compile(r"\s*[—–]\s*|\s+-\s*|\s*-\s+")


@functools.cache
def _lines_read() -> tuple[dict[str, list[str]], ...]:
    """The data file's lines, each with its ``names`` and ``weak`` names (read once)."""
    text = resources.files("clearance").joinpath("data/statement-lines.toml").read_text("utf-8")
    return tuple(tomllib.loads(text)["line"])


@functools.cache
def lines() -> tuple[tuple[str, ...], ...]:
    """Every line's names, as the data file lists them."""
    return tuple(tuple(line["names"]) for line in _lines_read())


@functools.cache
def _by_name() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for names in lines():
        for name in names:
            out[key(name)] = names
    return out


@functools.cache
def _weak_by_name() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for line in _lines_read():
        for name in line["names"]:
            out[key(name)] = tuple(line.get("weak", ()))
    return out


def weak_names(name: str) -> tuple[str, ...]:
    """The names a question may give the line ``name`` names where no table has a line by
    them ("receipts" for revenue): never a name of the line in :func:`same_line`."""
    return _weak_by_name().get(key(name), ())


def equivalents(name: str) -> tuple[str, ...]:
    """The other names of the line ``name`` names (none when it names no known line)."""
    names = _by_name().get(key(name), ())
    return tuple(n for n in names if key(n) != key(name))


def line_name(name: str) -> str | None:
    """The first name the data file gives the line ``name`` names ("revenue" for "net
    revenues"); ``None`` when it names no known line."""
    names = _by_name().get(key(name))
    return names[0] if names else None


def same_line(name: str, names: Iterable[str]) -> list[str]:
    """The names among ``names``, but ``name`` itself, of the line ``name`` names: the
    metrics of other tables that are this one ("Revenue" → a Japanese table's 売上高)."""
    line = {key(n) for n in _by_name().get(key(name), ())}
    return [n for n in names if key(n) in line and key(n) != key(name)]
