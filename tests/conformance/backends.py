"""The backends the conformance suite runs against, and :class:`Stores`, which opens their
stores for a test.

Adding a backend is one entry in :data:`BACKENDS`: a function that receives the pytest
request (to reach a server through a session fixture, see ``conftest.py``) and returns a
:class:`Backend`. Only backends that implement the whole :class:`~clearance.store.base.Store`
protocol — everything the application calls on an index — belong here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from clearance.store.base import Store
from clearance.store.sqlite import SQLiteStore


@dataclass(frozen=True)
class Backend:
    """How the suite makes stores of one kind.

    ``create`` returns the location of a new, empty store (a file path, a DSN) given a
    directory no other store uses; ``open`` opens a store at a location, again and again
    (every handle sees the same data); ``drop`` removes what ``create`` made, once every
    handle is closed."""

    name: str
    create: Callable[[Path], str]
    open: Callable[[str], Store]
    drop: Callable[[str], None] = lambda location: None


def sqlite_backend(request: pytest.FixtureRequest) -> Backend:
    """One SQLite file per store, under pytest's temporary directory."""
    return Backend("sqlite", create=lambda directory: str(directory / "index.db"), open=SQLiteStore)


def sqlite_classes_backend(request: pytest.FixtureRequest) -> Backend:
    """SQLite with ``vector_search = "classes"``: every class of two to five chunks
    searched through its own graph (built in the search that needs it), every larger one
    by the signs of its vectors. The graphs' default breadth and the scan's default rescore
    count cover every row of these small worlds, so exact references hold; the property
    tests then show that no graph or scan lets a hidden row in
    (tests/store/test_vector_classes.py has the worlds where both do miss rows)."""
    from clearance.store.classes import ClassPlan

    plan = ClassPlan(exact_below=2, scan_above=6, background=False)
    return Backend(
        "sqlite-classes",
        create=lambda directory: str(directory / "index.db"),
        open=lambda location: SQLiteStore(location, vector_classes=plan),
    )


def sqlite_signs_backend(request: pytest.FixtureRequest) -> Backend:
    """SQLite with ``vector_search = "signs"``: every caller who may read a chunk searched
    by sign codes. The default rescore count covers every row of these small worlds, so
    exact references hold; the property tests then show that the codes let no hidden row in
    (tests/store/test_vector_signs.py has the worlds where they do miss rows)."""
    from clearance.store.signs import SignPlan

    plan = SignPlan(exact_below=1)
    return Backend(
        "sqlite-signs",
        create=lambda directory: str(directory / "index.db"),
        open=lambda location: SQLiteStore(location, vector_signs=plan),
    )


def postgres_backend(
    request: pytest.FixtureRequest, plan: Any = None, pack_least: int | None = None
) -> Backend:
    """One database per store on the session's PostgreSQL server (tests/pg.py), migrated,
    with the reading and the owning role. Its corpora count as freshly synced: the suite
    tests the store's filter, and freshness is the row-level policies' own test
    (tests/store/test_postgres.py). ``pack_least`` sets how many postings a (term, class)
    needs to be packed into a block (the store's default: more than these worlds hold, so
    every search reads the postings row by row)."""
    from clearance.store.postgres import PostgresStore
    from pg import PgDatabase, server

    found = server()
    databases: dict[str, PgDatabase] = {}

    def create(directory: Path) -> str:
        database = found.database(always_fresh=True)
        databases[database.name] = database
        return database.name

    def open_store(name: str) -> Store:
        database = databases[name]
        tuning = {} if pack_least is None else {"pack_least": pack_least}
        return PostgresStore(
            database.reader_dsn, database.writer_dsn, pool_size=2, vector_plan=plan, **tuning
        )

    def drop(name: str) -> None:
        found.drop(databases.pop(name))

    name = "postgres" if plan is None else "postgres-classes"
    return Backend(name, create=create, open=open_store, drop=drop)


def postgres_classes_backend(request: pytest.FixtureRequest) -> Backend:
    """PostgreSQL with ``vector_search = "classes"``: every permission class of two chunks
    or more gets its own graph, refreshed before every search. A class of up to
    ``ef_search`` chunks is one graph, walked whole (``VectorPlan.breadth``), and these
    worlds' classes are far smaller, so exact references hold; the property
    tests then show that no graph lets a hidden row in, and that classes admit exactly what
    the filter admits (tests/store/test_pg_classes.py has the class-specific tests).
    Lexical search here packs every (term, class) into a block, before the search after
    one that read postings row by row: the suite's exact references check scores read
    from blocks and from rows, and from both at once."""
    from clearance.store.postgres import VectorPlan

    plan = VectorPlan(classes=True, exact_below=2, refresh_s=0.0, background=False)
    plan = replace(plan, largest_graph=plan.ef_search)
    return postgres_backend(request, plan, pack_least=1)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Backend]] = {
    "sqlite": sqlite_backend,
    "sqlite-classes": sqlite_classes_backend,
    "sqlite-signs": sqlite_signs_backend,
    "postgres": postgres_backend,
    "postgres-classes": postgres_classes_backend,
}


#: The share of a property test's examples each backend runs: making a store on a database
#: server costs about a hundred times a SQLite file, so the slowest properties run fewer
#: examples there (every example still checks the whole property).
EXAMPLE_SHARE = {"sqlite": 1.0, "sqlite-classes": 0.5, "postgres": 0.3, "postgres-classes": 0.3}


def examples(stores: Stores, n: int) -> int:
    """``n`` hypothesis examples scaled to ``stores``' backend (at least 5)."""
    return max(5, round(n * EXAMPLE_SHARE.get(stores.backend.name, 1.0)))


class Stores:
    """Opens stores of one backend and closes (and drops) them all at the end."""

    def __init__(self, backend: Backend, root: Path) -> None:
        self.backend = backend
        self.root = root
        self._numbers = itertools.count()
        self._opened: list[Store] = []
        self._created: list[str] = []
        self._location: dict[int, str] = {}

    def new(self) -> Store:
        """A new, empty store."""
        directory = self.root / f"store-{next(self._numbers)}"
        directory.mkdir(parents=True)
        location = self.backend.create(directory)
        self._created.append(location)
        return self._open(location)

    def reopen(self, store: Store) -> Store:
        """Another handle on ``store``'s data (``store`` may be open or closed): what a
        second process, or the same one after a restart, would open."""
        return self._open(self._location[id(store)])

    @contextmanager
    def scratch(self) -> Iterator[Store]:
        """A new store for one block (one hypothesis example), closed and dropped after it."""
        store = self.new()
        location = self._location[id(store)]
        try:
            yield store
        finally:
            store.close()
            self._opened.remove(store)
            self._created.remove(location)
            self.backend.drop(location)

    def _open(self, location: str) -> Store:
        store = self.backend.open(location)
        self._opened.append(store)
        self._location[id(store)] = location
        return store

    def close(self) -> None:
        for store in self._opened:
            with suppress(Exception):  # a test may have closed it already
                store.close()
        for location in self._created:
            self.backend.drop(location)
