"""The side tables of an index, and the one place that says how each is created.

Documents, chunks, vectors, facts and meta are the stores' own schema. Everything else an
index holds — FAQ entries, API tokens, browser sessions, source sync state, the action
log, rate limits and traces — lives in a side table that the module owning it reads and
writes. PostgreSQL creates every side table in its migrations (``pg_migrations``); the
embedded store creates each on first use from the statements below, so the owning
module, :mod:`clearance.migrate` and the schema cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SIDE_TABLES", "columns", "create_table"]

SIDE_TABLES: Mapping[str, tuple[str, ...]] = {
    "faq_entries": (
        "CREATE TABLE IF NOT EXISTS faq_entries (id TEXT PRIMARY KEY, question TEXT NOT NULL, "
        "aliases TEXT NOT NULL, answer TEXT NOT NULL, citations TEXT NOT NULL, "
        "acl TEXT NOT NULL, sensitivity INTEGER NOT NULL, valid_from TEXT, valid_until TEXT)",
    ),
    "faq_state": (
        "CREATE TABLE IF NOT EXISTS faq_state (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    ),
    "api_tokens": (
        "CREATE TABLE IF NOT EXISTS api_tokens (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, "
        "admin INTEGER NOT NULL, secret_sha256 TEXT NOT NULL, created_at TEXT NOT NULL, "
        "expires_at TEXT, revoked_at TEXT, scopes TEXT)",
    ),
    "ui_sessions": (
        "CREATE TABLE IF NOT EXISTS ui_sessions (id_sha256 TEXT PRIMARY KEY, "
        "user_id TEXT NOT NULL, method TEXT NOT NULL, token_id TEXT, csrf TEXT NOT NULL, "
        "created_at TEXT NOT NULL, expires_at TEXT NOT NULL)",
    ),
    "source_state": (
        "CREATE TABLE IF NOT EXISTS source_state (name TEXT PRIMARY KEY, "
        "content_cursor TEXT, permission_cursor TEXT, "
        "content_synced_at REAL, permission_synced_at REAL, "
        "content_attempted_at REAL, permission_attempted_at REAL, "
        "last_error TEXT, failing_since REAL, groups TEXT NOT NULL DEFAULT '[]', "
        "stats TEXT NOT NULL DEFAULT '{}')",
    ),
    "admin_actions": (
        "CREATE TABLE IF NOT EXISTS admin_actions (id TEXT PRIMARY KEY, at TEXT NOT NULL, "
        "actor TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, "
        "outcome TEXT NOT NULL, detail TEXT NOT NULL)",
    ),
    "rate_limits": (
        "CREATE TABLE IF NOT EXISTS rate_limits (key TEXT PRIMARY KEY, tat REAL NOT NULL)",
    ),
    "traces": (
        "CREATE TABLE IF NOT EXISTS traces (trace_id TEXT PRIMARY KEY, "
        "created_at TEXT NOT NULL, record TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS traces_created ON traces (created_at)",
    ),
}


def create_table(db: Any, name: str) -> None:
    """Create side table ``name`` (if absent) on an open transaction's connection."""
    for statement in SIDE_TABLES[name]:
        db.execute(statement)


def columns(name: str) -> tuple[str, ...]:
    """Side table ``name``'s columns, in the order its statement defines them (the first
    is its primary key): what a copy of its rows reads and writes."""
    return tuple(re.findall(r"[(,]\s*(\w+) (?:TEXT|INTEGER|REAL)\b", SIDE_TABLES[name][0]))
