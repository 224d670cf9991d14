"""Versioned schema migrations of the PostgreSQL store, and the reading role's grants.

Each file ``pg_migrations/NNNN_name.sql`` is one migration, applied once, in order, in its
own transaction together with its row in ``schema_version``. ``clearance db upgrade``
applies what is missing (:func:`upgrade`); a store opened on a database whose schema is
older than this release refuses to run (:func:`require_current`), since a half-known
schema could read or write the wrong columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from clearance.errors import StoreError

__all__ = ["MIGRATIONS", "Migration", "grant_reader", "latest", "require_current", "upgrade"]

_NAME = re.compile(r"^(\d{4})_(\w+)\.sql$")
# Every migration runs under this advisory lock: two upgrades at once apply each step once.
_LOCK = 0x436C_6561_7200  # "Clear"
# What the reading role may read: the tables its queries and the row-level policies touch.
READER_TABLES = (
    "documents",
    "doc_acl",
    "chunks",
    "doc_levels",
    "facts",
    "faq_entries",
    "corpus_sync",
    "corpus_sla",
    "readable_documents",
    "access_classes",
    "readable_classes",
    "class_sizes",
    "class_size_deltas",
    "class_terms",
    "class_term_deltas",
    "postings",
    "posting_blocks",
)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def _load() -> tuple[Migration, ...]:
    found: list[Migration] = []
    for entry in resources.files("clearance.store.pg_migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise StoreError("the PostgreSQL migrations are not numbered 1, 2, 3, …")
    return tuple(found)


MIGRATIONS = _load()


def latest() -> int:
    return MIGRATIONS[-1].version


def current_version(conn: psycopg.Connection[Any]) -> int:
    """The highest applied migration, or 0 for a database Clearance never touched."""
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    found = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return 0 if found is None else int(found[0])


def require_current(conn: psycopg.Connection[Any], where: str) -> None:
    """Raise unless the database holds exactly this release's schema."""
    found = current_version(conn)
    if found < latest():
        raise StoreError(
            f"{where}: database schema version {found}, this release needs {latest()}: "
            "run `clearance db upgrade`"
        )
    if found > latest():
        raise StoreError(
            f"{where}: database schema version {found} is newer than this release "
            f"supports ({latest()})"
        )


def upgrade(conn: psycopg.Connection[Any], reader_role: str | None) -> list[Migration]:
    """Apply every missing migration, each in its own transaction, then (re)grant the
    reading role its access. Returns the migrations applied. ``conn`` must be in autocommit
    mode and log in as the role that will own the tables (the writer)."""
    applied: list[Migration] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, "
            "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    for migration in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            if current_version(conn) >= migration.version:
                continue
            try:
                conn.execute(migration.sql.encode())
            except psycopg.Error as exc:
                raise StoreError(
                    f"migration {migration.version:04d}_{migration.name} failed: {exc}"
                ) from exc
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration)
    if reader_role is not None:
        grant_reader(conn, reader_role)
    return applied


def grant_reader(conn: psycopg.Connection[Any], role: str) -> None:
    """Let ``role`` read what search needs, and nothing more: no write, and every row of
    chunks, facts and FAQ entries still passes the row-level policies."""
    with conn.transaction():
        conn.execute(
            sql.SQL("GRANT SELECT ON {} TO {}").format(
                sql.SQL(", ").join(sql.Identifier(t) for t in READER_TABLES),
                sql.Identifier(role),
            )
        )
