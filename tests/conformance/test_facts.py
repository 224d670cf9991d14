"""Facts (numbers from tables) are written, replaced and deleted with their document, and
``query_facts`` filters them exactly like chunks: a fact is visible where its document is.
The reverse proof: filtering facts afterwards on their ACL alone (forgetting the ceiling,
expiry and AI-use rules) fails the same brute-force check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import factories
from clearance.errors import StoreError
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import SearchFilter, Store
from conformance.backends import Stores, examples
from conformance.common import fact
from conformance.leaks import Wrapper
from conformance.world import Entry, World, check_facts, fill, filters, worlds

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def document(doc_id: str, **fields: object) -> Document:
    fields = {"corpus": "public", "title": f"title of {doc_id}", **fields}
    return factories.document(doc_id, **fields)  # type: ignore[arg-type]


def chunk(doc: Document) -> Chunk:
    return factories.chunk(doc, "text", locator="page=1")


def test_facts_are_written_replaced_and_deleted_with_their_document(store: Store) -> None:
    doc = document("src:a")
    list_facts = store.list_facts  # type: ignore[attr-defined]
    store.upsert(doc, [chunk(doc)], facts=[fact("src:a", 1.0), fact("src:a", 2.0)])
    assert [f.value for f in list_facts("src:a")] == [1.0, 2.0]
    store.upsert(doc, [chunk(doc)], facts=[fact("src:a", 3.0)])  # re-ingest replaces
    assert list_facts() == [fact("src:a", 3.0)]
    store.upsert(doc, [chunk(doc)])  # no facts given: none kept
    assert list_facts() == []
    store.upsert(doc, [chunk(doc)], facts=[fact("src:a", 4.0)])
    assert store.delete("src:a")
    assert list_facts() == []
    with pytest.raises(StoreError, match="does not belong"):
        store.upsert(doc, [chunk(doc)], facts=[fact("src:other")])
    assert store.get_document("src:a") is None  # nothing half-written


def test_facts_round_trip_every_field_and_list_by_document(store: Store) -> None:
    a, b = document("src:a"), document("src:b")
    precise = Fact(
        "東京 Co",
        "FY2024 Q3",
        "売上",
        "online",
        1320.125,
        "JPY m",
        "src:a",
        "sheet=S!B7",
        "1,320.125",
    )
    store.upsert(b, [chunk(b)], facts=[fact("src:b", 5.0)])
    store.upsert(a, [chunk(a)], facts=[precise, fact("src:a", 2.0)])

    assert store.list_facts("src:a") == [precise, fact("src:a", 2.0)]  # type: ignore[attr-defined]
    assert store.list_facts() == [precise, fact("src:a", 2.0), fact("src:b", 5.0)]  # type: ignore[attr-defined]


def test_query_facts_filters_by_slot_in_storage_order(store: Store) -> None:
    doc = document("src:a")
    facts = [fact("src:a", 1.0), fact("src:a", 2.0, period="FY2025"), fact("src:a", 3.0)]
    store.upsert(doc, [chunk(doc)], facts=facts)
    flt = SearchFilter(frozenset({"everyone"}), now=NOW)
    query_facts = store.query_facts  # type: ignore[attr-defined]

    got = query_facts(flt, metric="revenue", period="FY2024", entity="North Co")

    assert [(f.value, d.doc_id) for f, d in got] == [(1.0, "src:a"), (3.0, "src:a")]
    assert got[0][1] == doc
    assert query_facts(flt, channel="budget") == []
    assert query_facts(SearchFilter(frozenset(), now=NOW)) == []


SLOTS = ({}, {"metric": "revenue"}, {"entity": "South Co", "period": "FY2025"}, {"channel": "x"})


def test_query_facts_equals_brute_force_over_admitted_documents(stores: Stores) -> None:
    @settings(max_examples=examples(stores, 40), deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        world = data.draw(worlds(min_size=1, max_size=6), label="world")
        flt = data.draw(filters(world), label="filter")
        slots = data.draw(st.sampled_from(SLOTS), label="slots")
        with stores.scratch() as store:
            fill(store, world)
            check_facts(store, world, flt, **slots)
        admitted = sum(len(e.facts) for e in world.entries if flt.admits(e.document))
        event(f"facts admitted: {min(admitted, 3)}")

    check()


class FactsFilteredAfterwards(Wrapper):
    """The forbidden shape: every fact, kept if its document's ACL names a principal,
    forgetting the sensitivity ceiling, expiry and AI-use rules."""

    def query_facts(self, flt: SearchFilter, **slots: str | None) -> list[tuple[Fact, Document]]:
        out = []
        for f in self.inner.list_facts():  # type: ignore[attr-defined]
            doc = self.inner.get_document(f.doc_id)
            matches = all(v is None or getattr(f, k) == v for k, v in slots.items())
            if doc is not None and doc.acl & flt.principals and matches:
                out.append((f, doc))
        return out


def test_reverse_proof_a_filter_applied_afterwards_is_caught(store: Store) -> None:
    secret = document("src:secret", sensitivity=Sensitivity.RESTRICTED)
    expired = document("src:old", expires_at=NOW - timedelta(days=1))
    world = World(
        [
            Entry(secret, [chunk(secret)], [None], [fact("src:secret", 1.0)]),
            Entry(expired, [chunk(expired)], [None], [fact("src:old", 2.0)]),
        ]
    )
    flt = SearchFilter(frozenset({"everyone"}), max_sensitivity=Sensitivity.CONFIDENTIAL, now=NOW)
    fill(store, world)

    check_facts(store, world, flt, metric="revenue")
    with pytest.raises(AssertionError):
        check_facts(FactsFilteredAfterwards(store), world, flt, metric="revenue")  # type: ignore[arg-type]
