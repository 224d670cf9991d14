"""Fixtures of the conformance suite: every test that takes ``store`` (a fresh, empty store)
or ``stores`` (more stores of one backend, second handles, reopening) runs once per entry
of :data:`conformance.backends.BACKENDS`.

A backend that needs a server starts it in a session fixture here and reaches it from its
``BACKENDS`` entry through the request, e.g. for PostgreSQL::

    @pytest.fixture(scope="session")
    def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
        server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
        yield server
        server.cleanup()

    # in backends.py
    def postgres_backend(request: pytest.FixtureRequest) -> Backend:
        server = request.getfixturevalue("postgres_server")
        return Backend("postgres", create=<new database, its DSN>, open=PostgresStore,
                       drop=<DROP DATABASE>)

    BACKENDS = {"sqlite": sqlite_backend, "postgres": postgres_backend}
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clearance.store.base import Store
from conformance.backends import BACKENDS, Backend, Stores


@pytest.fixture(scope="session", params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param](request)


@pytest.fixture
def stores(backend: Backend, tmp_path: Path) -> Iterator[Stores]:
    opened = Stores(backend, tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def store(stores: Stores) -> Store:
    """A fresh, empty store of the backend under test."""
    return stores.new()


@pytest.fixture(scope="module")
def module_stores(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    """Stores shared by the tests of one module: for worlds built once and only read."""
    opened = Stores(backend, tmp_path_factory.mktemp(f"{backend.name}-stores"))
    try:
        yield opened
    finally:
        opened.close()
