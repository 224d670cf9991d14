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
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from clearance.store.base import SqlCursor

__all__ = ["QmarkConnection", "qmark_to_format"]


@functools.lru_cache(maxsize=512)
def qmark_to_format(sql: str) -> str:
    """``?`` placeholders to ``%s``, and a literal ``%`` to ``%%``, outside quoted strings,
    quoted identifiers and comments (where both are left as they are)."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":  # a quoted string or identifier; a doubled quote stays inside
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "?":
            out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


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
