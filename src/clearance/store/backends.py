"""Which store the settings ask for, opened.

``[store] backend = "sqlite"`` (the default) is one file; ``"postgres"`` is a PostgreSQL
server (docs/postgres.md), whose driver is an optional dependency (``clearance[postgres]``)
imported only when asked for.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clearance.config import Settings, store_passwords
from clearance.errors import ConfigError, StoreError
from clearance.store.base import Store
from clearance.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from clearance.store.postgres import PostgresStore

__all__ = [
    "database_status",
    "open_postgres",
    "open_store",
    "postgres_module",
    "upgrade_database",
]


def postgres_module() -> object:
    """:mod:`clearance.store.postgres`, or a one-line error when its driver is missing."""
    try:
        from clearance.store import postgres
    except ImportError as exc:
        raise ConfigError(
            f'store.backend = "postgres" needs the PostgreSQL driver ({exc.name} is missing): '
            "pip install 'clearance[postgres]'"
        ) from None
    return postgres


def open_store(settings: Settings) -> Store:
    """The store ``settings`` configure, opened."""
    store = settings.store
    if store.backend == "sqlite":
        plan = None
        if store.vector_search == "classes":
            from clearance.store.classes import ClassPlan

            plan = ClassPlan(
                exact_below=store.vector_exact_below,
                scan_above=store.vector_scan_above,
                scan_rescore=store.vector_scan_rescore,
            )
            if store.hnsw_ef_search is not None:
                plan = replace(plan, expansion_search=store.hnsw_ef_search)
        signs = None
        if store.vector_search == "signs":
            from clearance.store.signs import SignPlan

            signs = SignPlan(
                exact_below=store.vector_exact_below, rescore=store.vector_scan_rescore
            )
        return SQLiteStore(
            settings.db_path,
            busy_timeout_s=store.busy_timeout_s,
            vector_classes=plan,
            vector_signs=signs,
            saved_copy=store.saved_copy,
        )
    return open_postgres(settings, store.dsn, store.writer_dsn)


def open_postgres(settings: Settings, reader_dsn: str, writer_dsn: str) -> PostgresStore:
    """A PostgreSQL store at these two roles' DSNs, opened as ``[store]`` configures one:
    this settings file's passwords, pool, vector plan and corpus SLAs."""
    postgres_module()
    from clearance.store.postgres import PostgresStore, VectorPlan

    store = settings.store
    password, writer_password = store_passwords(settings)
    plan = VectorPlan(
        approximate=store.vector_search == "hnsw",
        classes=store.vector_search == "classes",
        exact_below=store.vector_exact_below,
        max_scan_tuples=store.hnsw_max_scan_tuples,
        largest_graph=store.vector_scan_above,
    )
    if store.hnsw_ef_search is not None:
        plan = replace(plan, ef_search=store.hnsw_ef_search)
    opened = PostgresStore(
        reader_dsn,
        writer_dsn,
        password=None if password is None else password.reveal(),
        writer_password=None if writer_password is None else writer_password.reveal(),
        pool_size=store.pool_size,
        vector_plan=plan,
    )
    try:
        opened.set_corpus_slas(
            {name: corpus.revocation_sla_s for name, corpus in settings.corpora.items()}
        )
    except BaseException:
        opened.close()
        raise
    return opened


def _postgres_admin(settings: Settings) -> Any:
    """A connection as the writing (owning) role, for schema work."""
    postgres_module()
    import psycopg

    from clearance.store.postgres import connect_writer

    _, writer_password = store_passwords(settings)
    try:
        return connect_writer(
            settings.store.writer_dsn,
            None if writer_password is None else writer_password.reveal(),
        )
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect as the writer: {exc}".strip()) from exc


def database_status(settings: Settings) -> dict[str, Any]:
    """The backend, where it is, and its schema version against this release's."""
    store = settings.store
    if store.backend == "sqlite":
        from clearance.store.sqlite import SCHEMA_VERSION

        opened = SQLiteStore(settings.db_path, busy_timeout_s=store.busy_timeout_s)
        try:
            version = opened.get_meta("schema_version")
        finally:
            opened.close()
        return {
            "backend": "sqlite",
            "location": str(settings.db_path),
            "version": version,
            "latest": SCHEMA_VERSION,
            "pending": [],
        }
    from clearance.store import pg_schema

    with _postgres_admin(settings) as conn:
        version = pg_schema.current_version(conn)
        location = _location(conn)
    return {
        "backend": "postgres",
        "location": location,
        "version": version,
        "latest": pg_schema.latest(),
        "pending": [
            f"{m.version:04d}_{m.name}" for m in pg_schema.MIGRATIONS if m.version > version
        ],
    }


def upgrade_database(settings: Settings) -> dict[str, Any]:
    """Bring the schema up to this release's and grant the reading role its access;
    returns :func:`database_status` after, with the migrations applied."""
    store = settings.store
    if store.backend == "sqlite":
        # The embedded index upgrades itself, in one transaction, when it is opened.
        return {**database_status(settings), "applied": []}
    from psycopg.conninfo import conninfo_to_dict

    from clearance.store import pg_schema

    reader = conninfo_to_dict(store.dsn).get("user")
    with _postgres_admin(settings) as conn:
        applied = pg_schema.upgrade(conn, None if reader is None else str(reader))
    applied_names = [f"{m.version:04d}_{m.name}" for m in applied]
    return {**database_status(settings), "applied": applied_names}


def _location(conn: Any) -> str:
    info = conn.info
    return f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}"
