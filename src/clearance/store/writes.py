"""The write statements both backends run, written once.

Each function takes a :class:`~clearance.store.base.SqlConnection` (``sqlite3``-style
``?`` statements: a ``sqlite3.Connection`` as it is, a PostgreSQL connection through
:class:`~clearance.store.pg_connection.QmarkConnection`) inside the caller's transaction.
What differs between the dialects stays in each backend: the search structures (SQLite's
term tables and in-memory copies, PostgreSQL's term arrays and ``pgvector``), locking, and
how a JSON patch is applied."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from clearance.model import Fact
from clearance.store.base import SqlConnection
from clearance.store.rows import fact_row

__all__ = ["insert_acl", "insert_facts", "record_acl_sync", "replace_acl"]


def insert_acl(db: SqlConnection, doc_key: int, acl: frozenset[str]) -> None:
    db.executemany(
        "INSERT INTO doc_acl (doc_key, principal) VALUES (?, ?)",
        [(doc_key, p) for p in sorted(acl)],
    )


def replace_acl(db: SqlConnection, doc_id: str, acl: frozenset[str], *, lock: str = "") -> bool:
    """Replace a document's ACL; False when there is no such document. ``lock`` is the
    dialect's row lock for the document (``FOR UPDATE``), so two writers queue."""
    row = db.execute(f"SELECT key FROM documents WHERE doc_id = ? {lock}", (doc_id,)).fetchone()
    if row is None:
        return False
    db.execute("DELETE FROM doc_acl WHERE doc_key = ?", (row[0],))
    insert_acl(db, int(row[0]), acl)
    return True


def insert_facts(db: SqlConnection, doc_key: int, facts: Sequence[Fact]) -> None:
    """A document's facts (the old ones went with its rows, by ON DELETE CASCADE)."""
    db.executemany(
        "INSERT INTO facts (doc_key, entity, period, metric, channel, value, unit, raw, "
        "locator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [fact_row(doc_key, f) for f in facts],
    )


def record_acl_sync(db: SqlConnection, corpus: str, at: datetime) -> None:
    """``corpus``'s last complete ACL sync (the revocation clock's start)."""
    db.execute(
        "INSERT INTO corpus_sync VALUES (?, ?) ON CONFLICT (corpus) "
        "DO UPDATE SET last_acl_sync = excluded.last_acl_sync",
        (corpus, at.timestamp()),
    )
