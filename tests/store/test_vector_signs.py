"""Approximate vector search by sign codes keeps non-interference exactly.

With ``vector_search = "signs"`` the embedded store keeps the chunks nearest the query by
the signs of their vectors and scores only those exactly. The property that must
survive: a caller's results equal those of a store holding only the rows the caller may
read (the rescore count here is small, so that the codes do miss neighbours and the
equality is not the exact search's). The reverse proof takes the nearest by signs among
every chunk and filters afterwards, as a cut before the permission mask would: the same
check must catch it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.config import settings_from_dict
from clearance.store.memory import VectorRows, _Rows
from clearance.store.signs import SignCodes, SignPlan, hamming, nearest_by_signs, sign_words
from clearance.store.sqlite import SQLiteStore
from conformance.world import World, fill
from store.test_vector_classes import (
    CALLERS,
    alike_to_its_own_rows,
    approximate_and_readable,
    check_alike,
    company,
    move_a_document_out_of_staffs_reach,
    opened_with,
    queries,
    rank_alike_in_a_random_world,
)


@pytest.fixture(scope="module")
def world() -> World:
    return company()


#: A caller reading 40 chunks or more is searched by signs, 30 of them scored exactly.
PLAN = SignPlan(exact_below=40, rescore=30)


class CutBeforeTheMask(SignCodes):
    """The leaky variant: the nearest by signs among every chunk, then filtered."""

    def candidates(self, rows: Any, admitted: Any, query: Any, k: int) -> Any:
        every = np.arange(admitted.size)
        found = nearest_by_signs(hamming(self.words(rows), query), every, self.plan.rescore)
        return found[admitted[found]]


def store_at(path: Path, plan: SignPlan | None = PLAN, leaky: bool = False) -> SQLiteStore:
    store = SQLiteStore(path, vector_signs=plan)
    if leaky:
        store._signs = CutBeforeTheMask(PLAN)
    return store


@pytest.mark.parametrize("who", list(CALLERS))
def test_a_callers_results_equal_those_of_a_store_of_their_rows_alone(
    tmp_path: Path, world: World, who: str
) -> None:
    flt = CALLERS[who]
    alike_to_its_own_rows(store_at, tmp_path, world, flt)


def test_the_codes_are_used_and_approximate(tmp_path: Path, world: World) -> None:
    """Without this, the equality above could be the exact search's."""
    flt = CALLERS["staff and three departments (60 %)"]
    fill(store_at(tmp_path / "index.db", None), world)
    signs, exact = store_at(tmp_path / "index.db"), store_at(tmp_path / "index.db", None)
    approximate_and_readable(signs, exact, flt)


def test_below_the_threshold_and_with_no_rescore_count_the_ranking_is_exact(
    tmp_path: Path, world: World
) -> None:
    fill(store_at(tmp_path / "index.db", None), world)
    exact = store_at(tmp_path / "index.db", None)
    few = store_at(tmp_path / "index.db", SignPlan(exact_below=5000, rescore=30))
    none = store_at(tmp_path / "index.db", SignPlan(exact_below=40, rescore=0))
    flt = CALLERS["everything, confidential too (100 %)"]
    for q in queries():
        truth = exact.vector_search(q, flt, 10)
        assert few.vector_search(q, flt, 10) == truth
        assert none.vector_search(q, flt, 10) == truth


def test_reverse_proof_a_cut_before_the_mask_fails_the_same_check(
    tmp_path: Path, world: World
) -> None:
    flt = CALLERS["a department (6 %)"]
    leaky, alone = store_at(tmp_path / "leaky.db", leaky=True), store_at(tmp_path / "alone.db")
    fill(leaky, world)
    fill(alone, world.admitted_only(flt))
    with pytest.raises(AssertionError):
        check_alike(leaky, alone, flt, 10)


def test_a_permission_change_governs_the_next_search(tmp_path: Path, world: World) -> None:
    """The codes stay; only the mask changes."""
    move_a_document_out_of_staffs_reach(tmp_path, world, store_at)


def test_documents_written_later_are_coded_and_ranked_alike(tmp_path: Path, world: World) -> None:
    """Writes append rows: the codes grow with them and rank as a store coded afresh."""
    half = len(world.entries) // 2
    store = store_at(tmp_path / "grown.db")
    fill(store, World(world.entries[:half]))
    flt = CALLERS["everything, confidential too (100 %)"]
    store.vector_search(queries(1)[0], flt, 10)  # coded at half
    fill(store, World(world.entries[half:]))
    fresh = store_at(tmp_path / "grown.db")
    for q in queries():
        assert store.vector_search(q, flt, 10) == fresh.vector_search(q, flt, 10)
    assert store._signs is not None and store._signs._coded == len(world.entries)


def test_codes_grow_with_their_buffer_and_restart_on_another_array() -> None:
    rng = np.random.default_rng(5)
    codes = SignCodes(SignPlan())
    buffer = _Rows(np.zeros((100, 100), dtype=np.float32), 30)
    buffer.array[:30] = rng.standard_normal((30, 100))
    first = VectorRows(np.arange(30), buffer.array[:30], buffer)
    assert (codes.words(first) == sign_words(buffer.array[:30])).all()
    buffer.array[30:60] = rng.standard_normal((30, 100))  # a write appends below them
    buffer.used = 60
    grown = VectorRows(np.arange(60), buffer.array[:60], buffer)
    assert (codes.words(grown) == sign_words(buffer.array[:60])).all()
    assert codes._coded == 60
    # an older copy still in use reads its prefix
    assert (codes.words(first) == sign_words(buffer.array[:30])).all()
    other = VectorRows(np.arange(30), -buffer.array[:30].copy())  # another array
    assert (codes.words(other) == sign_words(-buffer.array[:30])).all()
    assert codes._coded == 30


@pytest.mark.parametrize("dim", [24, 64, 100, 384])
def test_the_cut_keeps_every_row_as_near_as_the_last_it_must_keep(dim: int) -> None:
    """The candidates are exactly the rows within the Hamming distance of the
    ``want``-th nearest, computed here bit by bit, whatever the width."""
    rng = np.random.default_rng(dim)
    vectors = rng.standard_normal((500, dim)).astype(np.float32)
    words = sign_words(vectors)
    among = np.arange(0, 500, 2)
    for query in rng.standard_normal((10, dim)).astype(np.float32):
        distance = ((vectors > 0) != (query > 0)).sum(axis=1)
        assert hamming(words, query).tolist() == distance.tolist()
        last = np.sort(distance[among])[59]
        got = nearest_by_signs(distance[among].astype(np.uint16), among, 60)
        assert got.tolist() == among[distance[among] <= last].tolist()
    assert nearest_by_signs(np.zeros(250, np.uint16), among, 400).tolist() == among.tolist()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_worlds_and_filters_rank_alike(tmp_path_factory: Any, data: st.DataObject) -> None:
    """Searched by signs from one row up, one row rescored."""
    plan = SignPlan(exact_below=1, rescore=1)
    rank_alike_in_a_random_world(
        data, tmp_path_factory.mktemp("w"), lambda path: store_at(path, plan)
    )


def test_the_setting_opens_the_embedded_store_with_signs(tmp_path: Path) -> None:
    with opened_with(
        tmp_path, vector_search="signs", vector_exact_below=500, vector_scan_rescore=3000
    ) as store:
        assert store._signs is not None and store._classes is None
        assert (store._signs.plan.exact_below, store._signs.plan.rescore) == (500, 3000)


def test_an_unknown_mode_is_refused_with_the_modes_named(tmp_path: Path) -> None:
    from clearance.errors import ConfigError

    with pytest.raises(ConfigError, match="'exact', 'hnsw', 'classes' or 'signs'"):
        settings_from_dict({"store": {"vector_search": "sign"}}, root=tmp_path)


def test_warming_codes_every_vector_before_the_first_search(tmp_path: Path, world: World) -> None:
    store = store_at(tmp_path / "index.db")
    fill(store, world)
    assert store._signs is not None and store._signs._coded == 0
    store.warm(vectors=True)
    assert store._signs._coded == len(world.entries)
