"""Fixtures of the conformance suite: every test that takes ``store`` (a fresh, empty store)
or ``stores`` (more stores of one backend, second handles, reopening) runs once per entry
of :data:`conformance.backends.BACKENDS`.

A backend that needs a server reaches it from its ``BACKENDS`` entry: PostgreSQL's starts
once per session (``tests/pg.py``) and each store is a database of its own, copied from a
migrated template.
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
