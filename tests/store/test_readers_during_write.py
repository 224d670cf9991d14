"""Readers never wait for a writer; writers wait up to ``[store] busy_timeout``.

Another process holds the index's write lock, with an uncommitted change, until the test
releases it, so no assertion depends on how fast anything runs. Every busy timeout below
is far shorter than the time the lock is held: a read that waited for the lock would fail.

The reverse proof opens the index as releases before did (writing on every open, so that
opening needed the write lock) and shows the same open then fails with "database is
locked".
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearance.access.sync import sync_acls
from clearance.app import Clearance
from clearance.config import StoreSettings
from clearance.errors import StoreError
from clearance.model import Sensitivity
from clearance.store import sqlite as sqlite_module
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from conftest import SettingsFactory
from factories import chunks, document
from store.rawsql import raw

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SHORT = 0.5  # seconds: every busy timeout a test expects to run out
PATIENT = 60.0  # seconds: a busy timeout a test expects never to run out
ANN = SearchFilter(
    principals=frozenset({"user:ann"}), max_sensitivity=Sensitivity.RESTRICTED, now=NOW
)

# The other process: take the write lock, revoke ann's grant without committing, say so,
# and hold the lock until told to commit (a line on stdin) or to roll back (end of input).
HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("DELETE FROM doc_acl WHERE principal = 'user:ann'")
    print("holding", flush=True)
    db.execute("COMMIT" if sys.stdin.readline() else "ROLLBACK")
    print("released", flush=True)
    """
)


def make_index(path: Path) -> None:
    """A current index: one document ann may read."""
    doc = document("wiki:plan", acl={"user:ann"}, corpus="wiki", title="Plan")
    with SQLiteStore(path) as store:
        store.upsert(doc, chunks(doc, ["The budget for Osaka", "Travel rules"]))
        store.record_acl_sync("wiki", NOW)


class Holder:
    """The process holding the write lock; :meth:`release` commits its revocation."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == "holding\n"

    def release(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("commit\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "released\n"

    def end(self) -> None:
        self.process.communicate(timeout=30)


@contextmanager
def lock_held(path: Path) -> Iterator[Holder]:
    """Another process holds ``path``'s write lock (with an uncommitted revocation of
    ann's grant) for as long as the block runs, unless it calls ``release()``."""
    holder = Holder(path)
    try:
        yield holder
    finally:
        holder.end()


def reads(store: SQLiteStore) -> dict[str, Any]:
    """What ``search``, ``status`` and ``ask`` read from the store."""
    return {
        "search": [c for c, _ in store.lexical_search("budget", ANN, 5)],
        "retrieve": {c for c, _ in store.retrieve("osaka travel", None, ANN, 5).lexical},
        "allowed": store.allowed_doc_ids(ANN),
        "hits": [c.chunk_id for c, _ in store.hits(["wiki:plan#0"])],
        "stats": (store.stats().documents, store.stats().chunks),
        "syncs": store.last_acl_syncs(),
        "documents": [d.doc_id for d in store.list_documents()],
        "schema": store.get_meta("schema_version"),
    }


BEFORE = {
    "search": ["wiki:plan#0"],
    "retrieve": {"wiki:plan#0", "wiki:plan#1"},
    "allowed": {"wiki:plan"},
    "hits": ["wiki:plan#0"],
    "stats": (1, 2),
    "syncs": {"wiki": NOW},
    "documents": ["wiki:plan"],
    "schema": 2,
}


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``work`` in a thread; the dict gets its ``result`` or its ``error``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # handed to the test, which asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def assert_waits(thread: threading.Thread) -> None:
    """The thread is still waiting for the lock (it would have failed or finished by now
    if it did not wait)."""
    thread.join(1.0)
    assert thread.is_alive()


# ------------------------------------------------------------------------ readers


def test_readers_never_wait_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    make_index(path)

    with lock_held(path) as holder, SQLiteStore(path, busy_timeout_s=SHORT) as store:
        during = reads(store)
        holder.release()
        after = reads(store)

    assert during == BEFORE  # the uncommitted revocation is not seen
    assert after == {**BEFORE, "search": [], "retrieve": set(), "allowed": set()}


def test_a_reader_opened_before_the_write_began_keeps_reading(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    make_index(path)

    with SQLiteStore(path, busy_timeout_s=SHORT) as store:
        assert reads(store) == BEFORE  # in-memory copies built before the writer came
        with lock_held(path):
            assert reads(store) == BEFORE


class OpensAsBefore(SQLiteStore):
    """Opening as releases before did: the schema script and the meta rows were written on
    every open, so every open needed the write lock."""

    def _is_current(self) -> bool:
        super()._is_current()
        return False


def test_reverse_proof_an_open_that_writes_fails_while_a_writer_holds_the_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.db"
    make_index(path)

    with lock_held(path), pytest.raises(StoreError) as caught:
        OpensAsBefore(path, busy_timeout_s=SHORT)

    assert "database is locked" in str(caught.value.__cause__)


@pytest.mark.parametrize(("opener", "writes"), [(SQLiteStore, False), (OpensAsBefore, True)])
def test_opening_a_current_index_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opener: type[SQLiteStore], writes: bool
) -> None:
    """Every statement an open runs: only reads, in read snapshots (plain BEGIN)."""
    path = tmp_path / "index.db"
    make_index(path)
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced)
    opener(path).close()

    reading = ("SELECT", "PRAGMA", "COMMIT")
    written = [s for s in statements if not s.lstrip().upper().startswith(reading) and s != "BEGIN"]
    assert bool(written) is writes, written


# ------------------------------------------------------------------------ writers


def test_a_writer_that_cannot_get_the_lock_fails_in_one_line_naming_the_setting(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.db"
    make_index(path)

    with (
        SQLiteStore(path, busy_timeout_s=SHORT) as store,
        lock_held(path),
        pytest.raises(StoreError) as caught,
    ):
        store.set_meta("note", 1)

    message = str(caught.value)
    assert "\n" not in message
    assert "busy" in message and "[store] busy_timeout" in message and "0.5 s" in message
    assert "database is locked" in str(caught.value.__cause__)


def test_an_acl_delta_sync_waits_for_the_writer_and_then_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    make_index(path)
    delta = tmp_path / "acl.jsonl"
    delta.write_text(json.dumps({"doc_id": "wiki:plan", "acl": ["user:bo"]}) + "\n")
    later = datetime(2025, 6, 2, tzinfo=UTC)

    with SQLiteStore(path, busy_timeout_s=PATIENT) as store:
        with lock_held(path) as holder:
            thread, outcome = in_thread(
                lambda: sync_acls(store, delta, "wiki", delta=True, now=later)
            )
            assert_waits(thread)
            holder.release()
            thread.join(30)

        assert "error" not in outcome, outcome
        assert outcome["result"].changed == 1
        assert store.get_document("wiki:plan").acl == frozenset({"user:bo"})  # type: ignore[union-attr]
        assert store.last_acl_syncs() == {"wiki": later}


def test_opening_an_index_with_a_stale_trigger_waits_for_the_writer(tmp_path: Path) -> None:
    """Only a new file, a migration or stale triggers make opening write: then it waits,
    like any writer, and repairs the index once the lock is free."""
    path = tmp_path / "index.db"
    make_index(path)
    with raw(path) as db:
        db.execute("DROP TRIGGER doc_acl_delete_bumps_access_generation")

    with lock_held(path) as holder:
        thread, outcome = in_thread(lambda: SQLiteStore(path, busy_timeout_s=PATIENT))
        assert_waits(thread)
        holder.release()
        thread.join(30)

    assert "error" not in outcome, outcome
    with outcome["result"] as store, raw(path) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert names == set(sqlite_module._TRIGGERS)
        assert reads(store)["search"] == []  # the holder's revocation, committed


def test_opening_an_index_with_a_stale_trigger_gives_up_after_the_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.db"
    make_index(path)
    with raw(path) as db:
        db.execute("DROP TRIGGER doc_acl_delete_bumps_access_generation")

    with lock_held(path), pytest.raises(StoreError, match=r"busy.*\[store\] busy_timeout"):
        SQLiteStore(path, busy_timeout_s=SHORT)


# ------------------------------------------------------------------------ the setting


def test_the_store_default_is_the_settings_default() -> None:
    assert StoreSettings().busy_timeout_s == sqlite_module.DEFAULT_BUSY_TIMEOUT_S


def test_the_app_opens_the_store_with_the_configured_busy_timeout(
    settings_factory: SettingsFactory,
) -> None:
    settings = settings_factory({"store": {"busy_timeout": "2.5s"}})

    with Clearance.open(settings) as app:
        assert app.store.busy_timeout_s == 2.5


def open_trace_log(path: Path) -> None:
    from clearance.trace.log import TraceLog

    with SQLiteStore(path, busy_timeout_s=SHORT) as store:
        TraceLog(store)


def test_opening_the_trace_log_of_an_index_that_has_it_needs_no_lock(tmp_path: Path) -> None:
    """``ask`` opens the trace writer; on an index whose traces table exists that is a read."""
    path = tmp_path / "index.db"
    make_index(path)
    open_trace_log(path)  # creates the table once

    with lock_held(path):
        open_trace_log(path)


def test_reverse_proof_creating_the_trace_table_on_every_open_fails_under_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.trace import record

    path = tmp_path / "index.db"
    make_index(path)
    open_trace_log(path)
    real = record.ensure_table

    def always_writes(store: SQLiteStore) -> None:
        with store.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS traces_probe (x)")
        real(store)

    monkeypatch.setattr("clearance.trace.log.ensure_table", always_writes)
    with lock_held(path), pytest.raises(StoreError, match="busy"):
        open_trace_log(path)
