"""Every backend in the suite implements the ``Store`` protocol and what the application
calls beside it."""

from __future__ import annotations

from clearance.store.base import Store
from conformance.backends import APPLICATION_SURFACE


def test_the_store_satisfies_the_store_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_the_store_offers_what_the_application_calls_beside_the_protocol(store: Store) -> None:
    missing = [name for name in APPLICATION_SURFACE if not callable(getattr(store, name, None))]
    assert missing == []
