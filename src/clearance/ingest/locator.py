"""Locators: where in its file a chunk or fact came from.

A locator is a comma-separated list of ``key=value`` parts, e.g. ``page=3``,
``section=Results > Japan``, ``slide=2,table=1,row=Revenue,col=FY2024`` or
``sheet=P&L,range=A1:D9``. Values are cleaned so the format stays parseable:
``,`` and ``=`` inside a value become spaces and whitespace runs collapse.
"""

from __future__ import annotations

import re

__all__ = ["format_locator", "is_table_row", "is_tabular", "parse_locator"]

_SPACE = re.compile(r"\s+")


def _clean(value: object) -> str:
    text = str(value).replace(",", " ").replace("=", " ")
    return _SPACE.sub(" ", text).strip() or "-"


def format_locator(*parts: tuple[str, object]) -> str:
    """``format_locator(("slide", 2), ("table", 1))`` → ``"slide=2,table=1"``."""
    return ",".join(f"{key}={_clean(value)}" for key, value in parts)


def parse_locator(locator: str) -> list[tuple[str, str]]:
    """The inverse of :func:`format_locator`."""
    out: list[tuple[str, str]] = []
    for part in locator.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"bad locator part {part!r} in {locator!r}")
        out.append((key, value))
    return out


# The locator parts that place a chunk inside a table or chart rather than running text.
_TABULAR = frozenset({"table", "chart", "row", "rows", "col", "range", "series", "category"})


def is_table_row(locator: str) -> bool:
    """Whether a chunk is one row of a table (``…,row=<label>``), headed by its columns."""
    return any(part.partition("=")[0] == "row" for part in locator.split(","))


def is_tabular(locator: str) -> bool:
    """Whether a chunk is cut from a table, sheet range or chart: rows of figures."""
    return any(part.partition("=")[0] in _TABULAR for part in locator.split(","))
