"""Every backend in the suite implements the whole ``Store`` protocol: it is everything the
application calls on an index (store/base.py), so a backend that passes here and in the
rest of the suite can be opened by every command."""

from __future__ import annotations

import inspect

from clearance.store.base import (
    AclStore,
    DocumentStore,
    MetaStore,
    SearchStore,
    SideTableStore,
    Store,
)

ROLES = (DocumentStore, AclStore, SearchStore, MetaStore, SideTableStore)


def test_the_store_satisfies_the_store_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    for role in ROLES:
        assert isinstance(store, role), role.__name__


def test_every_method_of_the_protocol_is_callable_with_its_parameters(store: Store) -> None:
    """Not only present: each method takes the protocol's parameters by the same names."""
    for name, member in inspect.getmembers(Store, inspect.isfunction):
        if name.startswith("_"):
            continue
        wanted = list(inspect.signature(member).parameters)
        offered = list(inspect.signature(getattr(store, name)).parameters)
        assert offered == wanted[1:], name


def test_reverse_proof_a_store_missing_one_method_is_not_a_store(store: Store) -> None:
    class Partial:
        def __getattr__(self, name: str) -> object:
            if name == "query_facts":
                raise AttributeError(name)
            return getattr(store, name)

    assert not isinstance(Partial(), SearchStore)
