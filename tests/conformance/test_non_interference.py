"""Non-interference: a document the caller may not read cannot move the caller's results.

Lexical statistics (the number of chunks, their average length, each term's document
frequency) come from the caller's allowed chunks only, so a filtered search equals, bit
for bit, the search of a store holding only what the filter admits; ``term_statistics``
counts allowed chunks only. Adding hidden documents of every kind (another ACL, an empty
ACL, above the ceiling, another corpus, expired, no AI use, excluded, hidden chunks in a
readable document) changes no ranking and no score.

The reverse proof: ranking inside the filter with statistics over every chunk returns the
right chunks in the wrong order, and both checks catch it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import factories
from clearance.analysis import search_terms
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter, Store
from conformance.backends import Stores, examples
from conformance.leaks import BackOffOverEverything, global_statistics
from conformance.world import (
    EMBEDDER,
    NOW,
    World,
    check_non_interference,
    check_term_statistics,
    embedded,
    fill,
    filters,
    texts,
    worlds,
)


def test_a_filtered_search_equals_the_search_of_the_admitted_chunks_alone(
    stores: Stores,
) -> None:
    # Two fresh stores per example: a database server's stores cost far more to make than
    # files, so it runs fewer examples of the same property.
    @settings(max_examples=examples(stores, 40), deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        world = data.draw(worlds(), label="world")
        flt = data.draw(filters(world), label="filter")
        query = data.draw(texts, label="query")
        k = data.draw(st.sampled_from([3, 1, 2, 6]), label="k")
        with stores.scratch() as store, stores.scratch() as alone:
            fill(store, world)
            fill(alone, world.admitted_only(flt))
            check_non_interference(store, alone, query, flt, k)
            check_term_statistics(store, world, [*search_terms(query), "zzz"], flt)

    check()


ANN = SearchFilter(
    principals=frozenset({"user:ann"}),
    corpora={"ops": Sensitivity.CONFIDENTIAL, "hr": Sensitivity.INTERNAL},
    max_sensitivity=Sensitivity.CONFIDENTIAL,
    exclude_doc_ids=frozenset({"hidden:excluded"}),
    now=NOW,
)
READABLE = ["revenue forecast milano report", "margin forecast", "revenue tokyo margin"]


def readable() -> World:
    entries = []
    for n, text in enumerate(READABLE):
        doc = factories.document(f"ann:{n}", corpus="ops", acl={"user:ann"})
        entries.append(embedded(doc, [factories.chunk(doc, text)]))
    return World(entries)


def hidden() -> World:
    """Documents ANN may not read, one per rule, all saying "revenue" often: with
    statistics over every chunk they would make it a common word."""
    kinds = {
        "hidden:acl": {"acl": {"group:legal"}},
        "hidden:nobody": {"acl": set()},
        "hidden:ceiling": {"sensitivity": Sensitivity.RESTRICTED},
        "hidden:corpus-ceiling": {"corpus": "hr", "sensitivity": Sensitivity.CONFIDENTIAL},
        "hidden:corpus": {"corpus": "finance"},
        "hidden:expired": {"expires_at": NOW - timedelta(seconds=1)},
        "hidden:no-ai": {"ai_allowed": False},
        "hidden:excluded": {},
    }
    entries = []
    for doc_id, fields in kinds.items():
        fields = {"corpus": "ops", "acl": {"user:ann"}, **fields}
        doc = factories.document(doc_id, **fields)  # type: ignore[arg-type]
        entries.append(embedded(doc, [factories.chunk(doc, "revenue revenue revenue tokyo")]))
    # a readable document whose only chunk is above ANN's ceiling
    doc = factories.document("hidden:chunk", corpus="ops", acl={"user:ann"})
    chunk = factories.chunk(doc, "revenue revenue margin", sensitivity=Sensitivity.RESTRICTED)
    entries.append(embedded(doc, [chunk]))
    return World(entries)


QUERIES = ["revenue", "revenue margin", "tokyo forecast", "milano"]


def results(store: Store, terms: list[str]) -> list[object]:
    probe = EMBEDDER.embed(["revenue tokyo"])[0]
    out: list[object] = [store.lexical_search(q, ANN, 3) for q in QUERIES]
    out.append(store.vector_search(probe, ANN, 3))
    out.append(store.term_statistics(terms, ANN))
    return out


def check_hidden_documents_change_nothing(store: Store) -> None:
    fill(store, readable())
    terms = ["revenu", "margin", "tokyo", "forecast"]
    before = results(store, terms)
    assert all(before[:4])  # every query finds something ANN may read
    fill(store, hidden())
    assert results(store, terms) == before


def test_hidden_documents_change_no_ranking_score_or_statistic(store: Store) -> None:
    check_hidden_documents_change_nothing(store)


def test_term_statistics_count_allowed_chunks_only(store: Store) -> None:
    world = World(readable().entries + hidden().entries)
    fill(store, world)
    check_term_statistics(store, world, ["revenu", "margin", "tokyo", "nowhere"], ANN)
    stats = store.term_statistics(["revenu", "margin", "tokyo", "nowhere"], ANN)
    assert (stats.chunks, dict(stats.df)) == (3, {"revenu": 2, "margin": 2, "tokyo": 1})
    assert stats.idf("nowhere") > stats.idf("margin")


def test_reverse_proof_global_statistics_fail_both_checks(stores: Stores) -> None:
    """Six hidden documents saying "revenue" make it a common word under global
    statistics, and the caller's "margin" chunk jumps above their "revenue" chunk."""
    store = stores.new()
    leaky = global_statistics(store)
    with pytest.raises(AssertionError):
        check_hidden_documents_change_nothing(leaky)  # type: ignore[arg-type]

    world = World(readable().entries + hidden().entries)
    alone = stores.new()
    fill(alone, world.admitted_only(ANN))
    check_non_interference(store, alone, "revenue margin", ANN, 3)  # the real store passes
    with pytest.raises(AssertionError):
        check_non_interference(leaky, alone, "revenue margin", ANN, 3)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        check_term_statistics(leaky, world, ["revenu"], ANN)  # type: ignore[arg-type]
    # the variant returns the chunks ANN may read, so only the ranking gives it away
    got = {c for c, _ in leaky.lexical_search("revenue margin", ANN, 3)}
    assert got == {c for c, _ in store.lexical_search("revenue margin", ANN, 3)}


def abbreviated() -> tuple[World, World]:
    """ANN's leave page spells out 育児休業; a hidden page holds its short form 育休."""
    leave = factories.document("ann:leave", corpus="ops", acl={"user:ann"})
    pay = factories.document("ann:pay", corpus="ops", acl={"user:ann"})
    secret = factories.document("hidden:leave", corpus="ops", acl={"group:legal"})
    readable = World(
        [
            embedded(leave, [factories.chunk(leave, "育児休業の給付は給与の 67% です。")]),
            embedded(pay, [factories.chunk(pay, "給料は毎月 25 日に支払われます。")]),
        ]
    )
    hidden = World([embedded(secret, [factories.chunk(secret, "育休の調査メモ")])])
    return readable, hidden


def check_hidden_pair_changes_no_search(store: Store) -> None:
    readable, hidden = abbreviated()
    fill(store, readable)
    before = store.lexical_search("育休の給付", ANN, 3)
    assert [c for c, _ in before][:1] == ["ann:leave#0"]
    fill(store, hidden)
    assert store.lexical_search("育休の給付", ANN, 3) == before


def test_a_hidden_chunk_holding_a_pair_changes_how_the_caller_searches_it_not(
    store: Store,
) -> None:
    """Whether "育休" is searched as 育 and 休 is decided on ANN's chunks alone."""
    check_hidden_pair_changes_no_search(store)


def test_reverse_proof_backing_off_by_every_chunk_fails(stores: Stores) -> None:
    with pytest.raises(AssertionError):
        check_hidden_pair_changes_no_search(BackOffOverEverything(stores.new()))
