"""Every ``SearchFilter`` field, through every filtered read (lexical and vector search,
term statistics, facts): a world where each document is kept out by exactly one rule, a
filter per field, and a random property over all fields at once.

Reverse proofs: a store that forgets one field (or stores an empty ACL as public, or a
chunk at its document's sensitivity) fails the same check, field by field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import factories
from clearance.model import Fact, Sensitivity
from clearance.store.base import SearchFilter, Store
from conformance import leaks
from conformance.backends import Stores, examples
from conformance.world import (
    EVERY_CHUNK,
    NOW,
    PRINCIPALS,
    Entry,
    World,
    check_visible_set,
    embedded,
    fill,
    filters,
    worlds,
)

PUBLIC, INTERNAL = Sensitivity.PUBLIC, Sensitivity.INTERNAL
CONFIDENTIAL, RESTRICTED = Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED


def entry(doc_id: str, *chunk_levels: Sensitivity, **fields: object) -> Entry:
    """A document in corpus ``ops`` readable by ``user:ann`` at INTERNAL unless ``fields``
    say otherwise, one chunk per level given (its document's level if none), a fact."""
    fields = {"corpus": "ops", "acl": {"user:ann"}, "sensitivity": INTERNAL, **fields}
    doc = factories.document(doc_id, **fields)  # type: ignore[arg-type]
    levels = chunk_levels or (doc.sensitivity,)
    chunks = [
        factories.chunk(doc, f"{EVERY_CHUNK} {doc_id.split(':')[1]}", ordinal=i, sensitivity=s)
        for i, s in enumerate(levels)
    ]
    e = embedded(doc, chunks)
    fact = Fact("North Co", "FY2024", "revenue", "total", 1.0, "", doc_id, "row=1")
    return dataclasses.replace(e, facts=[fact])


# Each document is kept out of ANN's view by the one rule its name says (or by none).
WORLD = World(
    [
        entry("src:plain"),
        entry("src:mixed", INTERNAL, CONFIDENTIAL, RESTRICTED),  # chunk levels above the document's
        entry("src:hr", corpus="hr"),
        entry("src:public", corpus="public", sensitivity=PUBLIC),
        entry("src:confidential", sensitivity=CONFIDENTIAL),
        entry("src:restricted", sensitivity=RESTRICTED),
        entry("src:legal", acl={"group:legal"}),
        entry("src:nobody", acl=set()),  # an empty ACL: nobody, whoever asks
        entry("src:expired", expires_at=NOW - timedelta(days=1)),
        entry("src:expires-now", expires_at=NOW),  # exactly now: already expired
        entry("src:expires-later", expires_at=NOW + timedelta(microseconds=1000)),
        entry("src:no-ai", ai_allowed=False),
        entry("src:excluded"),
    ]
)

ANN = SearchFilter(
    principals=frozenset({"user:ann", "everyone"}),
    max_sensitivity=CONFIDENTIAL,
    exclude_doc_ids=frozenset({"src:excluded"}),
    now=NOW,
)

# name → (filter, a wrapper that forgets what the filter relies on)
CASES: dict[str, tuple[SearchFilter, Callable[[Store], object]]] = {
    "principals": (ANN, leaks.IgnoresAcl),
    "empty ACL": (
        dataclasses.replace(ANN, principals=frozenset(PRINCIPALS) | {"user:ann"}),
        leaks.EmptyAclIsPublic,
    ),
    "global ceiling": (ANN, leaks.forgets("the global ceiling")),
    "chunk sensitivity": (ANN, leaks.ChunkSensitivityOfItsDocument),
    "corpora": (
        dataclasses.replace(ANN, corpora={"ops": RESTRICTED, "public": PUBLIC}),
        leaks.forgets("corpora and their ceilings"),
    ),
    "per-corpus ceiling": (
        dataclasses.replace(ANN, corpora={"ops": INTERNAL, "hr": RESTRICTED, "public": RESTRICTED}),
        leaks.forgets("corpora and their ceilings"),
    ),
    "doc_ids": (
        dataclasses.replace(ANN, doc_ids=frozenset({"src:plain", "src:mixed", "src:unknown"})),
        leaks.forgets("doc_ids"),
    ),
    "exclude_doc_ids": (ANN, leaks.forgets("exclude_doc_ids")),
    "expiry": (ANN, leaks.forgets("expiry")),
    "expiry exactly at now": (ANN, leaks.forgets("expiry exactly at now")),
    "ai_allowed": (ANN, leaks.forgets("ai_allowed")),
}


@pytest.mark.parametrize("case", CASES)
def test_each_field_narrows_every_filtered_read(store: Store, case: str) -> None:
    flt, _ = CASES[case]
    fill(store, WORLD)
    check_visible_set(store, WORLD, flt)


@pytest.mark.parametrize("case", CASES)
def test_reverse_proof_forgetting_the_field_is_caught(store: Store, case: str) -> None:
    flt, wrap = CASES[case]
    leaky = wrap(store)
    fill(leaky, WORLD)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        check_visible_set(leaky, WORLD, flt)  # type: ignore[arg-type]


def test_the_world_separates_what_each_field_keeps_out() -> None:
    """What the cases above rely on: under ANN, each rule alone keeps its document out."""
    admitted = {e.document.doc_id for e in WORLD.entries if ANN.admits(e.document)}
    assert admitted == {
        "src:plain",
        "src:mixed",
        "src:hr",
        "src:public",
        "src:confidential",
        "src:expires-later",
    }
    mixed = WORLD.entries[1]
    assert [ANN.admits(mixed.document, c) for c in mixed.chunks] == [True, True, False]


def test_an_empty_acl_is_read_by_nobody_whatever_the_filter(store: Store) -> None:
    fill(store, WORLD)
    widest = SearchFilter(
        principals=frozenset(PRINCIPALS) | {"user:ann", "", "*", "src:nobody"},
        max_sensitivity=RESTRICTED,
        now=NOW - timedelta(days=365),
        require_ai_allowed=False,
    )
    hits = store.lexical_search("nobody", widest, 50)
    assert [c for c, _ in hits] == []
    check_visible_set(store, WORLD, widest)


def test_an_empty_principal_set_reads_nothing(store: Store) -> None:
    fill(store, WORLD)
    nobody = dataclasses.replace(ANN, principals=frozenset())
    check_visible_set(store, WORLD, nobody)
    assert store.term_statistics([EVERY_CHUNK], nobody).chunks == 0


def test_a_principal_matches_exactly_not_by_prefix_or_case(store: Store) -> None:
    doc = factories.document("src:a", acl={"user:ann"})
    store.upsert(doc, [factories.chunk(doc, EVERY_CHUNK)])
    for principals in ({"user:an"}, {"USER:ANN"}, {"user:ann "}, {"user"}, {"ann"}):
        flt = SearchFilter(principals=frozenset(principals), now=NOW)
        assert store.lexical_search(EVERY_CHUNK, flt, 5) == [], principals
    assert len(store.lexical_search(EVERY_CHUNK, dataclasses.replace(ANN), 5)) == 1


def test_every_filtered_read_sees_exactly_the_admitted_set(stores: Stores) -> None:
    @settings(max_examples=examples(stores, 40), deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        world = data.draw(worlds(), label="world")
        marked = World(
            [
                dataclasses.replace(
                    e,
                    chunks=[
                        dataclasses.replace(c, text=f"{c.text} {EVERY_CHUNK}") for c in e.chunks
                    ],
                )
                for e in world.entries
            ]
        )
        flt = data.draw(filters(marked), label="filter")
        with stores.scratch() as store:
            fill(store, marked)
            check_visible_set(store, marked, flt)

    check()
