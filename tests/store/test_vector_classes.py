"""Approximate vector search by permission class keeps non-interference exactly.

With ``vector_search = "classes"`` the embedded store asks HNSW graphs for candidates. The
property that must survive: a caller's results equal those of a store holding only the rows
the caller may read, searched with the same graph parameters (the graphs here are made
deliberately weak, so that they do miss neighbours and the equality is not the exact
search's). The reverse proof is one global graph over every chunk, filtered after the
search, as a single shared index would be: the same check must catch it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import factories
from clearance.config import settings_from_dict
from clearance.errors import ConfigError
from clearance.model import Sensitivity
from clearance.store.backends import open_store
from clearance.store.base import SearchFilter
from clearance.store.classes import ClassIndexes, ClassPlan, _SignScan
from clearance.store.sqlite import SQLiteStore
from conformance.world import ADMIT_ALL, EMBEDDER, NOW, Entry, World, fill, filters, worlds

# Graphs built in the search that needs them, so that every search below uses one.
WEAK = ClassPlan(
    exact_below=40, connectivity=4, expansion_add=8, expansion_search=8, background=False
)
DIM = 24


class GlobalGraph(ClassIndexes):
    """The leaky variant: one graph over every chunk, searched, then filtered."""

    def candidates(self, content: Any, access: Any, admitted: Any, query: Any, k: int) -> Any:
        rows = np.arange(admitted.size)
        if getattr(self, "_global", None) is None:
            self._global = self._build(content.vectors.matrix)
        found = self._search(self._global, rows, query, k)
        return found[admitted[found]]


class StaleInTheGraph(ClassIndexes):
    """The subtler leaky variant: each class's one graph, holding the documents past their
    freshness deadline too, searched, then filtered."""

    def candidates(self, content: Any, access: Any, admitted: Any, query: Any, k: int) -> Any:
        labels = self.labels(content, access)
        found = [np.flatnonzero(admitted & (labels < 0))]
        for label in np.unique(labels[admitted & (labels >= 0)]).tolist():
            known = self._class(content, labels, label)
            got = self._search(self._whole(content, known), known.members, query, k)
            found.append(got[admitted[got]])
        return np.concatenate(found)


class SignsOfEveryChunk(ClassIndexes):
    """The leaky sign scan: the signs of every chunk scanned, the nearest cut, then
    filtered, as one shared code table would be."""

    def candidates(self, content: Any, access: Any, admitted: Any, query: Any, k: int) -> Any:
        found = _SignScan(content.vectors.matrix, SIGNS.scan_rescore).search(query, k).keys
        return found[admitted[found]]


def store_at(
    path: Path, plan: ClassPlan | None = WEAK, leaky: type[ClassIndexes] | None = None
) -> SQLiteStore:
    store = SQLiteStore(path, vector_classes=plan)
    if leaky is not None:
        store._classes = leaky(WEAK)
    return store


# --------------------------------------------------------------------------- a company


def company(seed: int = 7) -> World:
    """About 2,000 chunks laid out as a company's are: an all-staff class of 40 %, six
    departments, sixty small teams; some documents of each past their freshness deadline,
    some chunks above INTERNAL. Vectors are clustered, so that neighbours are close calls."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((30, DIM))
    layout = [("group:staff", 400)]
    layout += [(f"group:dept-{d}", 120) for d in range(6)]
    layout += [(f"group:team-{t}", 6) for t in range(60)]
    entries = []
    n = 0
    for principal, docs in layout:
        for i in range(docs):
            stale = i % 17 == 3
            doc = factories.document(
                f"doc:{n:05d}",
                corpus="ops",
                acl={principal},
                expires_at=NOW - timedelta(hours=1) if stale else None,
            )
            n += 1
            level = Sensitivity.CONFIDENTIAL if i % 11 == 5 else Sensitivity.INTERNAL
            chunk = factories.chunk(doc, f"passage {n}", sensitivity=level)
            vector = centres[rng.integers(30)] + 0.35 * rng.standard_normal(DIM)
            vector /= np.linalg.norm(vector)
            entries.append(Entry(doc, [chunk], [[float(x) for x in vector]]))
    return World(entries)


def caller(*principals: str, ceiling: Sensitivity = Sensitivity.INTERNAL) -> SearchFilter:
    return SearchFilter(
        principals=frozenset(principals),
        corpora={"ops": ceiling},
        max_sensitivity=ceiling,
        now=NOW,
    )


CALLERS = {
    "one team (0.3 %)": caller("group:team-3"),
    "a department (6 %)": caller("group:dept-2", "group:team-9"),
    "staff and three departments (60 %)": caller(
        "group:staff", "group:dept-0", "group:dept-1", "group:dept-4", "group:team-1"
    ),
    "everything, confidential too (100 %)": caller(
        "group:staff",
        *(f"group:dept-{d}" for d in range(6)),
        *(f"group:team-{t}" for t in range(60)),
        ceiling=Sensitivity.CONFIDENTIAL,
    ),
}


#: Everything a store of one caller's rows holds (its documents' own principals).
EVERYTHING = SearchFilter(
    principals=frozenset(
        ["group:staff", *(f"group:dept-{d}" for d in range(6))]
        + [f"group:team-{t}" for t in range(60)]
    ),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=NOW - timedelta(days=365),
    require_ai_allowed=False,
)


def queries(count: int = 25) -> list[list[float]]:
    rng = np.random.default_rng(99)
    out = []
    for _ in range(count):
        q = rng.standard_normal(DIM)
        out.append([float(x) for x in q / np.linalg.norm(q)])
    return out


def check_alike(store: SQLiteStore, alone: SQLiteStore, flt: SearchFilter, k: int) -> None:
    for q in queries():
        assert store.vector_search(q, flt, k) == alone.vector_search(q, EVERYTHING, k)


def alike_to_its_own_rows(
    make: Callable[[Path], SQLiteStore], tmp_path: Path, world: World, flt: SearchFilter
) -> None:
    """A store holding ``world`` searches for ``flt`` as one holding only its rows does."""
    store, alone = make(tmp_path / "all.db"), make(tmp_path / "alone.db")
    fill(store, world)
    fill(alone, world.admitted_only(flt))
    for k in (1, 10):
        check_alike(store, alone, flt, k)


@pytest.fixture(scope="module")
def world() -> World:
    return company()


#: The staff class (400 documents) scanned exactly, the departments graphed.
SCANNED = replace(WEAK, scan_above=300, scan_rescore=0)
#: The staff class scanned by its signs, 40 of its rows scored exactly: close calls missed.
SIGNS = replace(WEAK, scan_above=300, scan_rescore=40)


@pytest.mark.parametrize(
    "plan", [WEAK, SCANNED, SIGNS], ids=["graphs", "graphs and a scan", "graphs and signs"]
)
@pytest.mark.parametrize("who", list(CALLERS))
def test_a_callers_results_equal_those_of_a_store_of_their_rows_alone(
    tmp_path: Path, world: World, who: str, plan: ClassPlan
) -> None:
    flt = CALLERS[who]
    alike_to_its_own_rows(lambda path: store_at(path, plan), tmp_path, world, flt)


def test_the_graphs_are_used_and_approximate(tmp_path: Path, world: World) -> None:
    """Without this, the equality above could be the exact search's."""
    flt = CALLERS["staff and three departments (60 %)"]
    store, exact = store_at(tmp_path / "classes.db"), store_at(tmp_path / "exact.db", None)
    fill(store, world)
    fill(exact, world)
    approximate_and_readable(store, exact, flt)


def approximate_and_readable(store: SQLiteStore, exact: SQLiteStore, flt: SearchFilter) -> None:
    """``store`` ranks some queries otherwise than ``exact``, and returns a full top 10 of
    chunks ``flt`` admits."""
    differ = sum(
        store.vector_search(q, flt, 10) != exact.vector_search(q, flt, 10) for q in queries()
    )
    assert differ > 0
    allowed = store.allowed_doc_ids(flt)
    for q in queries(5):
        got = store.vector_search(q, flt, 10)
        assert len(got) == 10
        assert {c.split("#")[0] for c, _ in got} <= allowed


@pytest.mark.parametrize(
    ("plan", "kind"),
    [(SCANNED, "_Scan"), (replace(SIGNS, scan_rescore=5000), "_SignScan")],
    ids=["floats", "signs, every row rescored"],
)
def test_a_scanned_class_is_ranked_exactly(
    tmp_path: Path, world: World, plan: ClassPlan, kind: str
) -> None:
    """A caller reading only the staff class, scanned whole (its floats, or its signs with
    more rows rescored than it holds), gets the exact results."""
    staff = caller("group:staff")
    fill(store_at(tmp_path / "index.db", None), world)
    exact, scanned = store_at(tmp_path / "index.db", None), store_at(tmp_path / "index.db", plan)
    for q in queries():
        assert scanned.vector_search(q, staff, 10) == exact.vector_search(q, staff, 10)
    assert scanned._classes is not None
    # (the part of it past no freshness deadline, as this caller reads it)
    used = [*scanned._classes._graphs.values(), *scanned._classes._parts.values()]
    assert any(type(g).__name__ == kind for g in used)


def test_the_sign_scan_is_used_and_approximate(tmp_path: Path, world: World) -> None:
    """Without this, the equality above could be the exact search's: 40 rows by their
    signs' Hamming distance miss some of the staff class's true neighbours."""
    staff = caller("group:staff")
    fill(store_at(tmp_path / "index.db", None), world)
    exact, signs = store_at(tmp_path / "index.db", None), store_at(tmp_path / "index.db", SIGNS)
    differ = sum(
        signs.vector_search(q, staff, 10) != exact.vector_search(q, staff, 10) for q in queries()
    )
    assert differ > 0
    assert signs._classes is not None
    used = [*signs._classes._graphs.values(), *signs._classes._parts.values()]
    assert any(isinstance(g, _SignScan) for g in used)
    allowed = signs.allowed_doc_ids(staff)
    for q in queries(5):
        got = signs.vector_search(q, staff, 10)
        assert len(got) == 10 and {c.split("#")[0] for c, _ in got} <= allowed


@pytest.mark.parametrize("dim", [24, 64, 100, 384])
def test_the_sign_scan_keeps_every_row_as_near_as_the_last_it_must_keep(dim: int) -> None:
    """The candidates are exactly the rows within the Hamming distance of the
    ``rescore``-th nearest, computed here bit by bit, whatever the width."""
    rng = np.random.default_rng(dim)
    vectors = rng.standard_normal((500, dim)).astype(np.float32)
    scan = _SignScan(vectors, rescore=60)
    for query in rng.standard_normal((10, dim)).astype(np.float32):
        distance = ((vectors > 0) != (query > 0)).sum(axis=1)
        last = np.sort(distance)[59]
        got = scan.search(query, 10).keys
        assert got.tolist() == np.flatnonzero(distance <= last).tolist()
        assert len(got) >= 60
    assert len(scan.search(vectors[0], 600).keys) == 500  # asked for more than it holds
    assert scan.serialized_length == 500 * 8 * -(-dim // 64)


def move_a_document_out_of_staffs_reach(
    tmp_path: Path, world: World, make: Callable[[Path], SQLiteStore]
) -> None:
    """The staff's nearest document is shared with a team only: the staff's very next
    search leaves it out and equals a store that never held it."""
    store = make(tmp_path / "all.db")
    fill(store, world)
    staff = caller("group:staff")
    probe = world.entries[0].vectors[0]
    assert probe is not None
    moved = world.entries[0].document
    assert store.vector_search(probe, staff, 1)[0][0].startswith(moved.doc_id)
    store.set_acl(moved.doc_id, frozenset({"group:team-0"}))
    after = store.vector_search(probe, staff, 10)
    assert not any(c.startswith(moved.doc_id) for c, _ in after)
    alone = make(tmp_path / "alone.db")
    staff_world = World([e for e in world.entries if e.document.doc_id != moved.doc_id])
    fill(alone, staff_world.admitted_only(staff))
    for q in queries():
        assert store.vector_search(q, staff, 10) == alone.vector_search(q, EVERYTHING, 10)


def test_a_permission_change_moves_a_chunk_to_another_graph(tmp_path: Path, world: World) -> None:
    """A document leaving the staff class for a team's leaves the staff graph."""
    move_a_document_out_of_staffs_reach(tmp_path, world, store_at)


def settle(store: SQLiteStore, flt: SearchFilter) -> None:
    """Search until the worker has nothing left to build for this caller: a class first
    seen is ordered on the worker, and only then can a search ask for the graph of the part
    the caller reads."""
    assert store._classes is not None
    for _ in range(5):
        store.vector_search(queries(1)[0], flt, 10)
        if not store._classes._pending and store._classes._worker is None:
            return
        store._classes.wait()
    raise AssertionError("the worker kept finding work")


def test_a_graph_being_built_leaves_its_class_ranked_exactly(tmp_path: Path, world: World) -> None:
    """By default a missing graph is built on a worker thread: the search that finds it
    missing ranks the class exactly (no search waits minutes for a large class after a
    write), and later searches use the graph. Both are functions of the caller's rows."""
    fill(store_at(tmp_path / "index.db", None), world)
    flt = CALLERS["staff and three departments (60 %)"]
    exact = store_at(tmp_path / "index.db", None)
    store = store_at(tmp_path / "index.db", replace(WEAK, background=True))
    alone = store_at(tmp_path / "alone.db", replace(WEAK, background=True))
    fill(alone, world.admitted_only(flt))
    assert store._classes is not None and alone._classes is not None
    building = threading.Event()
    build = store._classes._build

    def held(vectors: Any) -> Any:  # the worker builds only when the test lets it
        building.wait(timeout=60)
        return build(vectors)

    store._classes._build = held  # type: ignore[method-assign]
    first = [store.vector_search(q, flt, 10) for q in queries()]
    assert first == [exact.vector_search(q, flt, 10) for q in queries()]
    building.set()
    settle(store, flt)
    settle(alone, EVERYTHING)
    later = [store.vector_search(q, flt, 10) for q in queries()]
    assert later != first  # the graphs are in use now
    check_alike(store, alone, flt, 10)


def test_warming_builds_every_large_classes_graph(tmp_path: Path, world: World) -> None:
    """A server warms its store before the first request: the graphs are ready then."""
    fill(store_at(tmp_path / "index.db", None), world)
    store = store_at(tmp_path / "index.db")
    assert store._classes is not None
    store.warm(vectors=True)
    built = dict(store._classes._graphs)
    # staff and the six departments; their CONFIDENTIAL chunks (one in 11) are classes of
    # their own, too small for a graph
    assert len(built) == 7
    store.vector_search(queries(1)[0], CALLERS["everything, confidential too (100 %)"], 10)
    assert store._classes._graphs == built  # nothing built again


@pytest.mark.parametrize("variant", [GlobalGraph, StaleInTheGraph, SignsOfEveryChunk])
def test_reverse_proof_a_graph_holding_hidden_rows_fails_the_same_check(
    tmp_path: Path, world: World, variant: type[ClassIndexes]
) -> None:
    flt = CALLERS["a department (6 %)"]
    leaky = store_at(tmp_path / "leaky.db", leaky=variant)
    alone = store_at(tmp_path / "alone.db")
    fill(leaky, world)
    fill(alone, world.admitted_only(flt))
    with pytest.raises(AssertionError):
        check_alike(leaky, alone, flt, 10)


# --------------------------------------------------------------------------- any world


def rank_alike_in_a_random_world(
    data: st.DataObject, where: Path, make: Callable[[Path], SQLiteStore]
) -> None:
    """A conformance world and filter drawn from ``data`` (every filter field varies: ACLs,
    ceilings, corpora, expiries, AI use, named and excluded documents): the filtered search
    of a store of ``make`` equals that of a store of the admitted rows alone."""
    world = data.draw(worlds(max_size=14), label="world")
    flt = data.draw(filters(world), label="filter")
    words = data.draw(st.lists(st.sampled_from(["revenue", "tokyo", "売上", "margin"]), min_size=1))
    k = data.draw(st.sampled_from([1, 3]), label="k")
    store, alone = make(where / "a.db"), make(where / "b.db")
    fill(store, world)
    fill(alone, world.admitted_only(flt))
    probe = EMBEDDER.embed([" ".join(words)])[0]
    assert store.vector_search(probe, flt, k) == alone.vector_search(probe, ADMIT_ALL, k)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_worlds_and_filters_rank_alike(tmp_path_factory: Any, data: st.DataObject) -> None:
    """Graphs from two rows up."""
    plan = ClassPlan(
        exact_below=2, connectivity=2, expansion_add=2, expansion_search=1, background=False
    )
    rank_alike_in_a_random_world(
        data, tmp_path_factory.mktemp("w"), lambda path: store_at(path, plan)
    )


# --------------------------------------------------------------------------- settings


@contextlib.contextmanager
def opened_with(tmp_path: Path, **store: Any) -> Iterator[SQLiteStore]:
    """The embedded store that ``clearance.toml``'s ``[store]`` table ``store`` opens."""
    opened = open_store(settings_from_dict({"store": store}, root=tmp_path))
    try:
        assert isinstance(opened, SQLiteStore)
        yield opened
    finally:
        opened.close()


def test_the_setting_opens_the_embedded_store_with_classes(tmp_path: Path) -> None:
    with opened_with(
        tmp_path,
        vector_search="classes",
        vector_exact_below=500,
        hnsw_ef_search=64,
        vector_scan_above=9000,
        vector_scan_rescore=0,
    ) as store:
        assert store._classes is not None
        plan = store._classes.plan
        assert (plan.exact_below, plan.expansion_search, plan.scan_above) == (500, 64, 9000)
        assert plan.scan_rescore == 0


def test_unset_the_walk_width_is_the_embedded_stores_own(tmp_path: Path) -> None:
    """``hnsw_ef_search`` unset: 100, not PostgreSQL's 160 (docs/postgres.md says why
    that backend's graphs need wider walks)."""
    with opened_with(tmp_path, vector_search="classes") as store:
        assert store._classes is not None
        assert store._classes.plan.expansion_search == 100


def test_a_negative_rescore_count_is_refused_by_its_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"vector_scan_rescore.*at least 0, got -1"):
        settings_from_dict({"store": {"vector_scan_rescore": -1}}, root=tmp_path)


def test_each_backend_ranks_exactly_under_the_others_value(tmp_path: Path) -> None:
    """ "hnsw" is PostgreSQL's: a settings file preparing a migration keeps the embedded
    store exact meanwhile."""
    store = open_store(settings_from_dict({"store": {"vector_search": "hnsw"}}, root=tmp_path))
    try:
        assert isinstance(store, SQLiteStore) and store._classes is None
    finally:
        store.close()
