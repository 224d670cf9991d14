"""Expired browser sessions are swept from the index on a schedule while serving, on
SQLite and PostgreSQL; an expired session never signs in, swept or not."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from clearance.api.sessions import SessionStore, SessionSweeper
from clearance.store.postgres import PostgresStore
from clearance.store.sqlite import SQLiteStore


@pytest.fixture
def store(backend_store: SQLiteStore | PostgresStore) -> SQLiteStore | PostgresStore:
    """SQLite, then PostgreSQL (tests/pg.py)."""
    return backend_store


def rows(store: SQLiteStore | PostgresStore) -> int:
    with store.reading() as db:
        return int(db.execute("SELECT count(*) FROM ui_sessions").fetchone()[0])


def test_the_sweeper_deletes_expired_sessions_and_keeps_live_ones(
    store: SQLiteStore | PostgresStore,
) -> None:
    now = [datetime(2026, 12, 3, 9, 0, tzinfo=UTC)]
    sessions = SessionStore(store, clock=lambda: now[0])
    old, _ = sessions.create("ann", "oidc", now[0] + timedelta(minutes=30))
    live, _ = sessions.create("bob", "oidc", now[0] + timedelta(hours=8))
    now[0] += timedelta(hours=1)
    assert sessions.get(old) is None  # expired: never signs in, swept or not
    assert rows(store) == 2  # reverse proof: nothing removed it yet
    sweeper = SessionSweeper(sessions, 0.05).start()
    try:
        deadline = time.monotonic() + 10
        while rows(store) != 1:
            assert time.monotonic() < deadline, "the sweeper did not run"
            time.sleep(0.05)
    finally:
        sweeper.stop()
    found = sessions.get(live)
    assert found is not None and found.user_id == "bob"
    assert sessions.sweep() == 0
