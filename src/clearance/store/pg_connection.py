"""The connection seam between modules that own side tables and the PostgreSQL store.

Modules such as the FAQ repository, the trace writer or the API token store keep their own
tables and write them with plain SQL through ``store.transaction()`` / ``store.reading()``.
They are written in the DB-API *qmark* style that ``sqlite3`` uses (``?`` placeholders);
psycopg only knows the *format* style (``%s``). Rather than give every module two copies of
its SQL, the PostgreSQL store hands them a :class:`QmarkConnection`: a thin wrapper whose
``execute`` / ``executemany`` translate the placeholders and otherwise pass straight through.
Their SQL keeps to what both databases accept (``INSERT … ON CONFLICT``, no ``INSERT OR
IGNORE``); where a statement cannot be portable the module asks the store's ``dialect``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from clearance.store.base import SqlCursor

__all__ = ["QmarkConnection", "qmark_to_format"]


# A quoted string or identifier (a doubled quote stays inside; one left open runs to the
# end), a comment to the end of its line, or a placeholder or percent sign outside them.
_TOKEN = re.compile(r"""'(?:[^']|'')*'?|"(?:[^"]|"")*"?|--[^\n]*|[?%]""")


def _translated(token: re.Match[str]) -> str:
    return "%s" if token.group() == "?" else token.group().replace("%", "%%")


@functools.lru_cache(maxsize=512)
def qmark_to_format(sql: str) -> str:
    """``?`` placeholders to ``%s``, and a literal ``%`` to ``%%``, outside quoted strings,
    quoted identifiers and comments (where both are left as they are)."""
    return _TOKEN.sub(_translated, sql)


class QmarkConnection:
    """A psycopg connection that takes ``sqlite3``-style statements."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> SqlCursor:
        return self._connection.execute(qmark_to_format(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> SqlCursor:
        cursor = self._connection.cursor()
        cursor.executemany(qmark_to_format(sql), [tuple(p) for p in parameters])
        return cursor
