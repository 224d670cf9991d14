"""PostgreSQL's graphs per permission class keep non-interference.

With ``vector_search = "classes"`` every permission class of ``exact_below`` chunks or more
has its own HNSW graph (a partial index over exactly that class's rows), and a search walks
it only when the caller may read the whole class. The property: a caller's results equal
those of a database holding only the rows the caller may read, searched with the same
parameters. pgvector draws each graph node's level at random, so two databases build two
different graphs from the same rows; the graphs here are therefore searched exhaustively
(``ef_search`` at least ``largest_graph``, so every graph's breadth covers it), which
makes the equality hold whatever the draw, while the same ``ef_search`` over one graph of
every chunk is far below its size. How wide each graph is walked is checked apart: it
must depend on the caller's rows alone, and a breadth sized by the whole table fails;
so must which graphs a search walks a second time, after walking the narrower ones
narrow first (50 wide, which still covers them), and a store-wide memory of which graphs
served earlier searches fails.
The reverse proof is that one global graph, searched and then filtered: the same check
must catch it.

Classes follow permissions: every chunk's class is the one its document's ACL, corpus,
sensitivities, AI use and expiry decide, after every kind of write, and the reader's row
policy admits chunks by their class. Its reverse proof disables the trigger that moves
chunks when an ACL changes: the same consistency check must catch the stale class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

import factories
from clearance.model import Sensitivity
from clearance.store import pg_search, postgres
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan
from conformance.world import NOW, Entry, World, fill
from pg import PgDatabase, server

DIM = 16
#: Classes of 20 chunks or more get a graph, searched exhaustively (no class here has 200):
#: the staff class's walked 200 wide; the departments' (about 34 chunks) planned 100 wide
#: and walked 50 wide first, which still covers them, so every walk is exhaustive.
GRAPHS = VectorPlan(
    classes=True,
    exact_below=20,
    ef_search=200,
    largest_graph=200,
    background=False,
    first_breadth=50,
)
#: Every HNSW index in a database, by name (read past the store's own lookup).
HNSW_INDEXES = (
    "SELECT c.relname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw'"
)
#: The leaky variant's graph: one over every chunk, the same breadth, no iterative scan.
GLOBAL = VectorPlan(approximate=True, exact_below=1, ef_search=200)


def company(seed: int = 5) -> World:
    """About 400 one-chunk documents laid out as a company's are: an all-staff group, four
    departments, thirty small teams; some past their deadline, some confidential. Vectors
    are clustered, so that neighbours are close calls."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((12, DIM))
    layout = [("group:staff", 130)] + [(f"group:dept-{d}", 40) for d in range(4)]
    layout += [(f"group:team-{t}", 3) for t in range(30)]
    entries = []
    n = 0
    for principal, docs in layout:
        for i in range(docs):
            doc = factories.document(
                f"doc:{n:04d}",
                corpus="ops",
                acl={principal},
                expires_at=NOW - timedelta(hours=1) if i % 17 == 3 else None,
            )
            n += 1
            level = Sensitivity.CONFIDENTIAL if i % 11 == 5 else Sensitivity.INTERNAL
            chunk = factories.chunk(doc, f"passage {n}", sensitivity=level)
            vector = centres[rng.integers(12)] + 0.35 * rng.standard_normal(DIM)
            vector /= np.linalg.norm(vector)
            entries.append(Entry(doc, [chunk], [[float(x) for x in vector]]))
    return World(entries)


def caller(*principals: str, ceiling: Sensitivity = Sensitivity.INTERNAL) -> SearchFilter:
    return SearchFilter(
        principals=frozenset(principals), corpora={"ops": ceiling}, max_sensitivity=ceiling, now=NOW
    )


CALLERS = {
    "one team (1 %)": caller("group:team-3"),
    "a department (10 %)": caller("group:dept-2", "group:team-9"),
    "staff and two departments (60 %)": caller(
        "group:staff", "group:dept-0", "group:dept-1", "group:team-1"
    ),
    "everything, confidential too (100 %)": caller(
        "group:staff",
        *(f"group:dept-{d}" for d in range(4)),
        *(f"group:team-{t}" for t in range(30)),
        ceiling=Sensitivity.CONFIDENTIAL,
    ),
}
#: Everything a database of one caller's rows holds.
EVERYTHING = SearchFilter(
    principals=frozenset(
        ["group:staff", *(f"group:dept-{d}" for d in range(4))]
        + [f"group:team-{t}" for t in range(30)]
    ),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=NOW - timedelta(days=365),
    require_ai_allowed=False,
)


def queries(count: int = 20) -> list[list[float]]:
    rng = np.random.default_rng(11)
    return [[float(x) for x in q / np.linalg.norm(q)] for q in rng.standard_normal((count, DIM))]


class Databases:
    """Fresh databases (corpora always fresh) and stores on them, dropped at the end."""

    def __init__(self) -> None:
        self.server = server()
        self.made: list[PgDatabase] = []
        self.stores: list[PostgresStore] = []

    def store(self, plan: VectorPlan, database: PgDatabase | None = None) -> PostgresStore:
        if database is None:
            database = self.server.database(always_fresh=True)
            self.made.append(database)
        opened = PostgresStore(database.reader_dsn, database.writer_dsn, vector_plan=plan)
        self.stores.append(opened)
        return opened

    def close(self) -> None:
        for opened in self.stores:
            opened.close()
        for database in self.made:
            self.server.drop(database)


@pytest.fixture
def databases() -> Iterator[Databases]:
    made = Databases()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def world() -> World:
    return company()


def company_database(plan: VectorPlan) -> Iterator[tuple[World, PgDatabase]]:
    """One database holding the whole company, its graphs built as ``plan`` says."""
    found = server()
    database = found.database(always_fresh=True)
    world = company()
    store = PostgresStore(database.reader_dsn, database.writer_dsn, vector_plan=plan)
    try:
        fill(store, world)
        store.refresh_class_graphs()
    finally:
        store.close()
    try:
        yield world, database
    finally:
        found.drop(database)


@pytest.fixture(scope="module")
def filled() -> Iterator[tuple[World, PgDatabase]]:
    """One database holding the whole company, shared by the read-only tests."""
    yield from company_database(GRAPHS)


def global_graph(database: PgDatabase) -> None:
    """The ``"hnsw"`` setting's graph over every chunk, made as a process with that setting
    made it before it checked for class graphs (or by hand)."""
    database.admin(
        f"CREATE INDEX chunks_embedding_{DIM} ON chunks USING hnsw "
        f"((embedding::vector({DIM})) vector_ip_ops) WHERE vector_dims(embedding) = {DIM}"
    )


def check_alike(store: PostgresStore, alone: PostgresStore, flt: SearchFilter, k: int) -> None:
    readable = len(alone.vector_search(queries(1)[0], EVERYTHING, 1000))
    assert readable > 0
    for q in queries():
        found = store.vector_search(q, flt, k)
        assert found == alone.vector_search(q, EVERYTHING, k)
        assert len(found) == min(k, readable)


def walked_indexes(
    store: PostgresStore, flt: SearchFilter, monkeypatch: pytest.MonkeyPatch
) -> set[str]:
    """The HNSW indexes the planner walks for one vector search of ``flt``: every
    statement the store built for it (one per breadth of walk), explained in a search
    transaction of the same caller."""
    built: list[str] = []
    real = pg_search.class_graphs_vector_sql

    def spy(graphed: Any, rest: list[int], dim: int) -> str:
        built.append(real(graphed, rest, dim))
        return built[-1]

    monkeypatch.setattr(pg_search, "class_graphs_vector_sql", spy)
    store.vector_search(queries(1)[0], flt, 10)
    monkeypatch.setattr(pg_search, "class_graphs_vector_sql", real)
    if not built:
        return set()
    args = {"vector": np.asarray(queries(1)[0]), "k": 10, "excluded": []}
    walked: set[str] = set()
    with store._searching(flt) as conn:
        store._set_graph_walk(conn, 10)
        graphs = {str(r[0]) for r in conn.execute(HNSW_INDEXES)}
        for sql in built:
            plan = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", args).fetchone()
            assert plan is not None
            walked |= {n for n in _index_names(plan[0][0]["Plan"]) if n in graphs}
    return walked


def check_walks_only_admitted_graphs(
    store: PostgresStore, flt: SearchFilter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every graph a search of ``flt`` walks is a class graph of a class ``flt`` admits:
    the equality of results alone cannot show it, since a graph over every chunk searched
    as wide as these walk finds the same neighbours here."""
    classes = set(admitted(store, flt))
    for name in walked_indexes(store, flt, monkeypatch):
        assert postgres._is_class_graph(name), name
        assert postgres._graph_of(name).class_id in classes, name


@pytest.mark.parametrize("who", list(CALLERS))
def test_a_callers_results_equal_those_of_a_database_of_their_rows_alone(
    filled: tuple[World, PgDatabase],
    databases: Databases,
    who: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, database = filled
    flt = CALLERS[who]
    store = databases.store(GRAPHS, database)
    alone = databases.store(GRAPHS)
    fill(alone, world.admitted_only(flt))
    alone.refresh_class_graphs()
    for k in (1, 10):
        check_alike(store, alone, flt, k)
    check_walks_only_admitted_graphs(store, flt, monkeypatch)
    if who != "one team (1 %)":  # a team's classes are below the threshold: ranked exactly
        assert store.graph_searches > 0


def test_the_graphs_are_partial_indexes_walked_by_the_search(
    filled: tuple[World, PgDatabase], databases: Databases
) -> None:
    """The planner reads each class's own index: without it the equality above could be
    an exact scan's."""
    _, database = filled
    store = databases.store(GRAPHS, database)
    with store._writer.connection() as conn:
        names = [n for n, _ in store._graph_indexes(conn, valid_only=True)]
    assert len(names) >= 5  # staff and the four departments, at each sensitivity that is large
    flt = CALLERS["staff and two departments (60 %)"]
    with store._searching(flt) as conn:
        classes_sql, params = pg_search.admitted_classes(flt)
        admitted = [int(r[0]) for r in conn.execute(classes_sql, params)]
        graphed = [c for c in admitted if pg_search.class_graph_name(c, DIM) in names]
        assert graphed
        sql = pg_search.class_graphs_vector_sql(dict.fromkeys(graphed, 1), [], DIM)
        store._set_graph_walk(conn, 10)
        plan = conn.execute(
            f"EXPLAIN (FORMAT JSON) {sql}", {"vector": np.asarray(queries(1)[0]), "k": 10}
        ).fetchone()
    assert plan is not None
    used = {n for n in _index_names(plan[0][0]["Plan"]) if n.startswith("chunks")}
    assert used == {pg_search.class_graph_name(c, DIM) for c in graphed}, used


def _index_names(node: dict[str, Any]) -> Iterator[str]:
    if "Index Name" in node:
        yield node["Index Name"]
    for child in node.get("Plans", []):
        yield from _index_names(child)


def test_reverse_proof_one_graph_over_every_chunk_fails_the_same_check(
    filled: tuple[World, PgDatabase], databases: Databases
) -> None:
    """The graph's breadth (200) covers half of the 420 chunks: a caller whose few rows lie
    outside the half nearest the query loses them, which a database of their rows alone
    never does."""
    world, database = filled
    flt = CALLERS["one team (1 %)"]
    leaky = databases.store(GLOBAL, database)
    global_graph(database)
    leaky._hnsw = _global_graph_without_fallback.__get__(leaky)  # type: ignore[method-assign]
    alone = databases.store(GRAPHS)
    fill(alone, world.admitted_only(flt))
    with pytest.raises(AssertionError):
        check_alike(leaky, alone, flt, 10)


def _global_graph_without_fallback(
    self: PostgresStore,
    conn: Any,
    sql: str,
    params: dict[str, Any],
    args: dict[str, Any],
    dim: int,
    k: int,
) -> list[tuple[str, float]]:
    """One graph over every chunk searched ``ef_search`` deep, then filtered: what a single
    shared index gives (no iterative scan, no exact fallback)."""
    conn.execute("SET LOCAL hnsw.iterative_scan = off")
    conn.execute(f"SET LOCAL hnsw.ef_search = {self.vector_plan.ef_search}")
    rows = conn.execute(pg_search.hnsw_vector_sql(sql, dim), args).fetchall()
    return [(str(c), float(s)) for c, s in rows]


# --------------------------------------------------------------------------- breadth


@pytest.mark.parametrize("ef_search", [10, 32, 100, 160, 200, 1000])
@pytest.mark.parametrize("k", [1, 10, 50])
def test_a_walk_is_as_wide_as_its_graphs_share_of_the_largest(ef_search: int, k: int) -> None:
    plan = VectorPlan(classes=True, ef_search=ef_search, largest_graph=100_000)
    widest = min(max(ef_search, k), postgres._EF_SEARCH_MAX)
    sizes = [0, 1, 500, 15_000, 40_000, 80_000, 100_000, 250_000]
    breadths = [plan.breadth(n, k) for n in sizes]
    assert breadths == sorted(breadths)  # a larger graph is never walked narrower
    for n, breadth in zip(sizes, breadths, strict=True):
        assert breadth <= widest
        assert breadth in {widest >> j for j in range(12)}  # ef_search halved: few statements
        least = max(postgres._BREADTH_PER_RESULT * k, postgres._LEAST_BREADTH)
        assert breadth >= min(widest, max(least, ef_search * n // 100_000))
    assert plan.breadth(100_000, k) == widest
    # ef_search at least largest_graph: every graph of up to largest_graph chunks is walked whole
    whole = VectorPlan(classes=True, ef_search=200, largest_graph=150)
    assert all(whole.breadth(n, 10) >= n for n in range(151))


def test_the_breadth_of_the_default_plan() -> None:
    """For a caller reading 700,000 chunks, a department's graph (about 15,000 chunks) 80
    wide and one part of the all-staff class (about 80,000) 160 wide; for a caller
    reading about that department alone, its graph 160 wide: the widths the 1M
    benchmark's recall was measured at (benchmarks/RESULTS.md). The top 1 is looked for
    among fewer candidates, the top 40 among more."""
    plan = VectorPlan(classes=True)
    assert (plan.breadth(15_000, 10, 700_000), plan.breadth(80_000, 10, 700_000)) == (80, 160)
    assert plan.breadth(15_000, 10, 15_900) == 160
    assert plan.breadth(15_000, 10, 106_000) == 80  # one of seven departments
    assert plan.breadth(15_000, 1, 700_000) == 40
    assert plan.breadth(15_000, 40, 700_000) == 160


def test_a_graph_holding_most_of_what_a_caller_reads_is_walked_wide() -> None:
    plan = VectorPlan(classes=True, ef_search=160, largest_graph=100_000)
    for allowed in (50, 1_000, 20_000, 99_999):
        assert plan.breadth(allowed, 10, allowed) == 160
        shares = [
            plan.breadth(n, 10, allowed) for n in range(0, allowed + 1, max(1, allowed // 50))
        ]
        assert shares == sorted(shares)
    # beyond largest_graph the caller's share no longer narrows a graph further
    assert plan.breadth(40_000, 10, 100_000) == plan.breadth(40_000, 10, 10**7) == 80


def walks_of(
    store: PostgresStore, flt: SearchFilter, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[int, list[int]]]:
    """How wide one vector search of ``flt`` walks its graphs: per statement, the breadth
    and the parts of each class walked (class ids differ between databases; these don't)."""
    seen: list[list[tuple[int, dict[int, int]]]] = []
    real = store._walks

    def spy(conn: Any, graphed: Any, admitted: Any, k: int) -> list[tuple[int, dict[int, int]]]:
        seen.append(real(conn, graphed, admitted, k))
        return seen[-1]

    monkeypatch.setattr(store, "_walks", spy)
    store.vector_search(queries(1)[0], flt, 10)
    monkeypatch.setattr(store, "_walks", real)
    assert len(seen) == 1
    return [(breadth, sorted(walked.values())) for breadth, walked in seen[0]]


def check_walked_alike(
    store: PostgresStore, alone: PostgresStore, flt: SearchFilter, mp: pytest.MonkeyPatch
) -> None:
    assert walks_of(store, flt, mp) == walks_of(alone, EVERYTHING, mp)


def alone_for(world: World, databases: Databases, flt: SearchFilter) -> PostgresStore:
    alone = databases.store(GRAPHS)
    fill(alone, world.admitted_only(flt))
    alone.refresh_class_graphs()
    return alone


def test_each_graph_is_walked_as_wide_as_its_own_size_says(
    filled: tuple[World, PgDatabase], databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a caller reading about 180 chunks, the staff class's graph (about 110) is walked
    200 wide and the departments' (about 34) 100 wide, in two statements whose rows merge
    into exact ranking's order; a database of each caller's rows alone walks them just
    as wide."""
    world, database = filled
    flt = CALLERS["staff and two departments (60 %)"]
    store = databases.store(GRAPHS, database)
    assert walks_of(store, flt, monkeypatch) == [(200, [1]), (100, [1, 1])]
    exact = databases.store(VectorPlan(), database)
    for q in queries(10):
        for k in (1, 10, 40):
            assert store.vector_search(q, flt, k) == exact.vector_search(q, flt, k)
    for who in CALLERS:
        flt = CALLERS[who]
        check_walked_alike(store, alone_for(world, databases, flt), flt, monkeypatch)


def _breadth_by_share_of_the_table(
    self: PostgresStore, conn: Any, graphed: Any, admitted: Any, k: int
) -> list[tuple[int, dict[int, int]]]:
    """Each graph sized against every chunk in the table instead of the caller's: a count
    of rows the caller may not read."""
    sizes = dict(conn.execute(pg_search.class_sizes_sql(), {"classes": sorted(graphed)}))
    with self._writer.connection() as writer:
        row = writer.execute("SELECT count(*) FROM chunks").fetchone()
    return self._grouped(graphed, sizes, int(row[0]) if row else 0, k)


def test_reverse_proof_a_breadth_sized_by_the_whole_table_fails_the_same_check(
    filled: tuple[World, PgDatabase], databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The department's caller reads about 40 chunks: their department's graph holds
    most of them and is walked 200 wide; against the table's 420 chunks it is a small
    graph, walked 100 wide, while a database of the caller's rows alone still walks it 200
    wide."""
    world, database = filled
    flt = CALLERS["a department (10 %)"]
    alone = alone_for(world, databases, flt)
    store = databases.store(GRAPHS, database)
    check_walked_alike(store, alone, flt, monkeypatch)  # the real store passes
    assert walks_of(store, flt, monkeypatch) == [(200, [1])]
    for opened in (store, alone):
        opened._walks = _breadth_by_share_of_the_table.__get__(opened)  # type: ignore[method-assign]
    with pytest.raises(AssertionError):
        check_walked_alike(store, alone, flt, monkeypatch)


def statements_of(
    store: PostgresStore, flt: SearchFilter, query: list[float], mp: pytest.MonkeyPatch
) -> list[tuple[int, list[int], list[str]]]:
    """The statements one vector search of ``flt`` for ``query`` runs: each one's breadth,
    the parts of each class it walks and the chunks it gives (class ids differ between
    databases; chunk ids don't)."""
    seen: list[tuple[int, list[int], list[str]]] = []
    real = store._walk

    def spy(conn: Any, breadth: int, walked: Any, rest: Any, args: Any, dim: int) -> list[Any]:
        rows = real(conn, breadth, walked, rest, args, dim)
        seen.append((breadth, sorted(walked.values()), sorted(str(r[0]) for r in rows)))
        return rows

    mp.setattr(store, "_walk", spy)
    store.vector_search(query, flt, 10)
    mp.setattr(store, "_walk", real)
    return seen


def check_statements_alike(
    store: PostgresStore, alone: PostgresStore, flt: SearchFilter, mp: pytest.MonkeyPatch
) -> set[int]:
    """Every query's statements, and what each gives, are the same over the store and a
    database of the caller's rows alone; returns the numbers of statements seen."""
    counts = set()
    for query in queries(10):
        mine = statements_of(store, flt, query, mp)
        assert mine == statements_of(alone, EVERYTHING, query, mp)
        counts.add(len(mine))
    return counts


def test_graphs_walked_narrow_first_are_walked_again_only_if_they_give_a_top_result(
    filled: tuple[World, PgDatabase], databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staff graph is walked as planned (200 wide) and the departments' 50 wide in a second
    statement; a department that gave one of the top 10 is walked again 100 wide, one that
    did not is not (here every query's top 10 holds a department's chunk). Results are exact
    ranking's, and every statement, and what it gives, is the same over a database of each
    caller's rows alone."""
    world, database = filled
    flt = CALLERS["staff and two departments (60 %)"]
    store = databases.store(GRAPHS, database)
    exact = databases.store(VectorPlan(), database)
    for q in queries(10):
        for k in (1, 10, 40):
            assert store.vector_search(q, flt, k) == exact.vector_search(q, flt, k)
    walks = [
        [(b, tuple(parts)) for b, parts, _ in statements_of(store, flt, q, monkeypatch)]
        for q in queries(20)
    ]
    assert {tuple(w[:2]) for w in walks} == {((200, (1,)), (50, (1, 1)))}
    # Each department walked again only when it served: sometimes both, sometimes one.
    assert {tuple(w[2:]) for w in walks} == {((100, (1,)),), ((100, (1, 1)),)}
    for who, caller_flt in CALLERS.items():
        alone = alone_for(world, databases, caller_flt)
        counts = check_statements_alike(store, alone, caller_flt, monkeypatch)
        # Graphs walked twice only for the callers who read the staff graph too.
        assert (max(counts) > 2) == who.endswith(("(60 %)", "(100 %)")), who


def remember_useful_graphs(mp: pytest.MonkeyPatch, *stores: PostgresStore) -> list[set[int]]:
    """The leaky variant: each store walks a graph again if it gave a top result in this
    search or in any earlier one, of any caller (a memory of useful graphs per store).
    Returns each store's memory: the class ids it holds."""
    real_grouped_by = postgres._grouped_by
    searching: list[set[int]] = []

    def grouped_by(later: Any, gave: set[int]) -> list[tuple[int, dict[int, int]]]:
        searching[-1].update(gave)
        return real_grouped_by(later, set(searching[-1]))

    mp.setattr(postgres, "_grouped_by", grouped_by)

    memories: list[set[int]] = []

    def remembering(real: Any) -> Any:
        memory: set[int] = set()
        memories.append(memory)

        def by_class(*args: Any) -> Any:
            searching.append(memory)
            try:
                return real(*args)
            finally:
                searching.pop()

        return by_class

    for opened in stores:
        mp.setattr(opened, "_by_class", remembering(opened._by_class))
    return memories


def test_reverse_proof_walks_chosen_by_other_callers_searches_fail_the_same_check(
    filled: tuple[World, PgDatabase], databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The widest caller searches first and leaves behind which departments served it; the
    narrower caller's searches then walk those graphs again, as the same caller's over a
    database of their rows alone do not."""
    world, database = filled
    flt = CALLERS["staff and two departments (60 %)"]
    store = databases.store(GRAPHS, database)
    alone = alone_for(world, databases, flt)
    check_statements_alike(store, alone, flt, monkeypatch)  # the real store passes
    mine, alones = remember_useful_graphs(monkeypatch, store, alone)
    for query in queries(10):
        store.vector_search(query, CALLERS["everything, confidential too (100 %)"], 10)
    assert len(mine) >= 2 and not alones  # departments that served the widest caller
    with pytest.raises(AssertionError):
        check_statements_alike(store, alone, flt, monkeypatch)


# --------------------------------------------------------------------------- classes follow


def classes_as_derived(store: PostgresStore) -> list[tuple[str, bool]]:
    """Every chunk, and whether its class is the one its document decides now."""
    with store._writer.connection() as conn:
        rows = conn.execute(
            "SELECT c.chunk_id, coalesce(ac.corpus = d.corpus AND ac.acl = coalesce("
            "ARRAY(SELECT a.principal FROM doc_acl a WHERE a.doc_key = d.key "
            "ORDER BY a.principal COLLATE \"C\"), '{}') "
            "AND ac.doc_sensitivity = d.sensitivity AND ac.sensitivity = c.sensitivity "
            "AND ac.ai_allowed = d.ai_allowed "
            "AND ac.expires_at IS NOT DISTINCT FROM d.expires_at, false) "
            "FROM chunks c JOIN documents d ON d.key = c.doc_key "
            "LEFT JOIN access_classes ac ON ac.id = c.class_id ORDER BY c.chunk_id"
        ).fetchall()
    return [(str(c), bool(ok)) for c, ok in rows]


def check_classes_follow(store: PostgresStore) -> None:
    found = classes_as_derived(store)
    assert found and all(ok for _, ok in found), [c for c, ok in found if not ok][:5]


def permission_writes(store: PostgresStore) -> None:
    """Every kind of write that changes what decides a class."""
    store.set_acls(
        {
            "doc:0001": frozenset({"group:dept-3"}),
            "doc:0002": frozenset({"group:staff", "user:ann"}),
            "doc:0200": frozenset(),
        }
    )
    store.set_acl("doc:0003", frozenset({"user:bo"}))
    doc = factories.document("doc:0004", corpus="hr", acl={"group:staff"})
    chunk = factories.chunk(doc, "moved", sensitivity=Sensitivity.CONFIDENTIAL)
    store.upsert(doc, [chunk], [[1.0] * DIM])
    store.delete("doc:0005")
    with store.transaction() as db:  # a document's class-deciding columns changed in place
        db.execute(
            "UPDATE documents SET sensitivity = 2, ai_allowed = false, expires_at = 1.0 "
            "WHERE doc_id = 'doc:0006'"
        )


def test_every_chunk_is_in_the_class_its_document_decides_after_every_write(
    world: World, databases: Databases
) -> None:
    store = databases.store(GRAPHS)
    fill(store, world)
    permission_writes(store)
    check_classes_follow(store)


@pytest.mark.parametrize(
    ("table", "trigger"), [("doc_acl", "doc_acl_reclasses"), ("documents", "documents_reclass")]
)
def test_reverse_proof_without_a_reclassing_trigger_the_same_check_fails(
    world: World, databases: Databases, table: str, trigger: str
) -> None:
    store = databases.store(GRAPHS)
    fill(store, world)
    databases.made[-1].admin(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
    permission_writes(store)
    with pytest.raises(AssertionError):
        check_classes_follow(store)


def change_twice_in_one_transaction(store: PostgresStore) -> None:
    """An ACL changed, the commit-time triggers fired early (SET CONSTRAINTS ...
    IMMEDIATE), the same ACL changed again, then the commit."""
    with store.transaction() as db:
        key = db.execute("SELECT key FROM documents WHERE doc_id = 'doc:0010'").fetchone()[0]
        db.execute("DELETE FROM doc_acl WHERE doc_key = ?", (key,))
        db.execute("INSERT INTO doc_acl VALUES (?, 'group:dept-1')", (key,))
        db.execute("SET CONSTRAINTS ALL IMMEDIATE")
        db.execute("SET CONSTRAINTS ALL DEFERRED")
        db.execute("DELETE FROM doc_acl WHERE doc_key = ?", (key,))
        db.execute("INSERT INTO doc_acl VALUES (?, 'group:dept-2')", (key,))


def test_a_document_changed_again_after_its_triggers_fired_is_reclassed_again(
    world: World, databases: Databases
) -> None:
    """The commit-time triggers re-class each document once per run; a change after a
    run clears that mark."""
    store = databases.store(GRAPHS)
    fill(store, World(world.entries[:40]))
    change_twice_in_one_transaction(store)
    check_classes_follow(store)


def test_reverse_proof_a_mark_that_survives_a_later_change_fails_the_same_check(
    world: World, databases: Databases
) -> None:
    store = databases.store(GRAPHS)
    fill(store, World(world.entries[:40]))
    databases.made[-1].admin("ALTER TABLE doc_acl DISABLE TRIGGER doc_acl_reclass_pending")
    change_twice_in_one_transaction(store)
    with pytest.raises(AssertionError):
        check_classes_follow(store)


def test_a_large_acl_is_classed_once_per_document(world: World, databases: Databases) -> None:
    """An ACL of 300 principals written and rewritten: every chunk in its class."""
    store = databases.store(GRAPHS)
    fill(store, World(world.entries[:20]))
    many = frozenset(f"user:u{n:03d}" for n in range(300))
    doc = factories.document("doc:wide", corpus="ops", acl=many)
    chunks = factories.chunks(doc, [f"wide {n}" for n in range(5)])
    store.upsert(doc, chunks, [[1.0] * DIM for _ in chunks])
    store.set_acl("doc:wide", many - {"user:u007"})
    check_classes_follow(store)


def test_a_permission_change_takes_a_chunk_out_of_its_old_graph_at_once(
    world: World, databases: Databases
) -> None:
    """A staff document given to one team leaves the staff class (and its graph) in the
    transaction that changes its ACL, without being embedded again; the staff caller's very
    next search no longer finds it, and the team's does."""
    store = databases.store(GRAPHS)
    fill(store, world)
    store.refresh_class_graphs()
    staff = caller("group:staff")
    entry = next(e for e in world.entries if e.document.doc_id == "doc:0000")
    query = entry.vectors[0]
    chunk_id = entry.chunks[0].chunk_id
    assert store.vector_search(query, staff, 1)[0][0] == chunk_id
    searched = store.graph_searches
    assert searched > 0
    store.set_acl("doc:0000", frozenset({"group:team-7"}))
    assert chunk_id not in [c for c, _ in store.vector_search(query, staff, 10)]
    assert store.graph_searches > searched  # still through the staff graph
    assert store.vector_search(query, caller("group:team-7"), 1)[0][0] == chunk_id
    check_classes_follow(store)


def test_graphs_follow_class_sizes(world: World, databases: Databases) -> None:
    """A class reaching the threshold gets a graph; one emptied loses it; a refresh with
    nothing to do changes nothing."""
    store = databases.store(GRAPHS)
    fill(store, world)
    first = store.refresh_class_graphs()
    assert first["built"] == first["graphs"] >= 5
    assert first["warmed"] == 0  # this database has no pg_prewarm: nothing is read ahead
    again = store.refresh_class_graphs()
    assert (again["built"], again["dropped"], again["graphs"]) == (0, 0, first["graphs"])
    for n in range(130, 170):  # department 0's documents all move to staff
        store.set_acl(f"doc:{n:04d}", frozenset({"group:staff"}))
    after = store.refresh_class_graphs()
    assert after["dropped"] >= 1 and after["graphs"] < first["graphs"]
    check_classes_follow(store)


def class_graph_pages(database: PgDatabase) -> dict[str, tuple[int, int]]:
    """Per class graph: how many of its pages are in the server's shared buffers, and how
    many it has."""
    rows = database.admin(
        "SELECT c.relname, (SELECT count(*) FROM pg_buffercache b "
        "WHERE b.relfilenode = pg_relation_filenode(c.oid) AND b.reldatabase = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())), "
        "pg_relation_size(c.oid) / current_setting('block_size')::bigint "
        "FROM pg_class c WHERE c.relname LIKE 'chunks\\_class\\_%' AND c.relkind = 'i'"
    )
    return {str(name): (int(held), int(pages)) for name, held, pages in rows}


def check_opening_reads_the_graphs(world: World, databases: Databases) -> None:
    """Built graphs are read ahead; a store opened later reads every graph once, in its
    first refresh, and later refreshes only the graphs they build."""
    first = databases.store(GRAPHS)
    database = databases.made[-1]
    # In a schema of its own, off the search path, as an operator may install it.
    database.admin("CREATE SCHEMA extensions")
    database.admin("GRANT USAGE ON SCHEMA extensions TO PUBLIC")
    database.admin("CREATE EXTENSION pg_prewarm SCHEMA extensions")
    database.admin("CREATE EXTENSION pg_buffercache")
    fill(first, world)
    built = first.refresh_class_graphs()
    assert built["built"] == built["graphs"] >= 5
    graphs = class_graph_pages(database)
    assert len(graphs) == built["graphs"]
    for name in graphs:  # as after a restart: no page of any graph in the buffers
        database.admin("SELECT pg_buffercache_evict_relation(%s::regclass)", (name,))
    assert all(held == 0 for held, _ in class_graph_pages(database).values())

    opened_store = databases.store(GRAPHS, database)
    opened = opened_store.refresh_class_graphs()

    assert (opened["built"], opened["graphs"]) == (0, built["graphs"])
    assert all(held == pages > 0 for held, pages in class_graph_pages(database).values())
    assert opened["warmed"] == built["graphs"] == built["warmed"]
    # Read once: a refresh that builds nothing reads nothing again.
    for name in graphs:
        database.admin("SELECT pg_buffercache_evict_relation(%s::regclass)", (name,))
    assert opened_store.refresh_class_graphs()["warmed"] == 0
    assert all(held == 0 for held, _ in class_graph_pages(database).values())


def test_class_graphs_are_read_into_the_buffers_when_a_store_opens(
    world: World, databases: Databases
) -> None:
    check_opening_reads_the_graphs(world, databases)


def test_a_store_reads_the_graphs_ahead_while_another_process_holds_the_refresh(
    world: World, databases: Databases
) -> None:
    import psycopg

    first = databases.store(GRAPHS)
    database = databases.made[-1]
    database.admin("CREATE EXTENSION pg_prewarm")
    database.admin("CREATE EXTENSION pg_buffercache")
    fill(first, world)
    graphs = first.refresh_class_graphs()["graphs"]
    for name in class_graph_pages(database):
        database.admin("SELECT pg_buffercache_evict_relation(%s::regclass)", (name,))
    with psycopg.connect(database.writer_dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (postgres._GRAPHS_LOCK,))
        busy = databases.store(GRAPHS, database).refresh_class_graphs()
    assert busy["busy"] and busy["warmed"] == graphs >= 5
    assert all(held == pages > 0 for held, pages in class_graph_pages(database).values())


def test_reverse_proof_a_store_that_reads_nothing_ahead_fails_the_same_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PostgresStore, "_warm_graphs", staticmethod(lambda conn, names: 0))
    with pytest.raises(AssertionError):
        check_opening_reads_the_graphs(world, databases)


def test_the_reader_policy_admits_chunks_by_readable_class(
    filled: tuple[World, PgDatabase], databases: Databases
) -> None:
    """As the reading role, with the application's filter left out, a bare SELECT returns
    only the chunks of the caller's readable classes: the policy is a wall of its own."""
    world, database = filled
    store = databases.store(GRAPHS, database)
    flt = CALLERS["a department (10 %)"]
    with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
        seen = {str(r[0]) for r in conn.execute("SELECT chunk_id FROM chunks")}
    # The policy knows no deadline: expired documents are the application's to hide.
    readable = {
        c.chunk_id
        for e in world.entries
        if e.document.acl & flt.principals and e.document.sensitivity <= flt.max_sensitivity
        for c in e.chunks
        if c.sensitivity <= flt.max_sensitivity
    }
    assert seen == readable and len(seen) > 10


def test_the_conformance_backend_walks_class_graphs(
    world: World, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    """The conformance suite's ``postgres-classes`` backend does search through graphs
    (else its every property would be the exact plan's)."""
    from conformance.backends import postgres_classes_backend

    backend = postgres_classes_backend(request)
    location = backend.create(tmp_path)
    store = backend.open(location)
    try:
        assert isinstance(store, PostgresStore)
        fill(store, World(world.entries[:60]))
        store.vector_search(queries(1)[0], CALLERS["staff and two departments (60 %)"], 5)
        assert store.graph_searches > 0
    finally:
        store.close()
        backend.drop(location)


def test_the_workers_refresh_waits_for_writes_and_an_asked_one_does_not(
    world: World, databases: Databases
) -> None:
    """The worker's periodic refresh counts chunks per class only after a chunk's class was
    set (a million-row count every minute otherwise); a refresh asked for runs."""
    store = databases.store(GRAPHS)
    fill(store, World(world.entries[:60]))
    first = store.refresh_class_graphs()
    assert first["graphs"] >= 1
    idle = store._refresh_class_graphs(only_after_writes=True)
    assert idle.get("idle") is True and idle["built"] == 0
    asked = store.refresh_class_graphs()
    assert asked.get("idle") is None and asked["graphs"] == first["graphs"]


def check_the_worker_sees_every_committed_change(world: World, databases: Databases) -> None:
    """The worker's refresh skips when nothing changed since the last; a write that was
    still open while a refresh counted the classes, and a deletion, are changes."""
    import psycopg

    store = databases.store(GRAPHS)
    database = databases.made[-1]
    fill(store, world)
    store.refresh_class_graphs()

    def worker() -> dict[str, Any]:
        return store._refresh_class_graphs(only_after_writes=True)

    assert worker().get("idle")
    # A department's chunks made confidential (another class), in a transaction left open
    # while the refresh counts: the counter moves at once, the rows only at commit.
    with psycopg.connect(database.writer_dsn) as writer:
        writer.execute(
            "UPDATE chunks SET sensitivity = %s WHERE doc_key IN (SELECT key FROM documents "
            "WHERE doc_id >= 'doc:0130' AND doc_id < 'doc:0150')",
            (int(Sensitivity.CONFIDENTIAL),),
        )
        assert not worker().get("idle")
    assert not worker().get("idle")  # committed now: counted anew
    assert worker().get("idle")
    assert store.delete("doc:0131")
    assert not worker().get("idle")


def test_the_worker_sees_every_committed_change(world: World, databases: Databases) -> None:
    check_the_worker_sees_every_committed_change(world, databases)


def test_reverse_proof_a_counter_of_writes_alone_fails_the_same_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check as it was: the counter alone, which moves before a write commits and
    not at all for a deletion."""
    real = postgres._class_changes
    monkeypatch.setattr(postgres, "_class_changes", lambda conn: (real(conn)[0], ""))
    with pytest.raises(AssertionError):
        check_the_worker_sees_every_committed_change(world, databases)


def _plan_indexes(store: PostgresStore, flt: SearchFilter, sql: str) -> set[str]:
    with store._searching(flt) as conn:
        store._set_graph_walk(conn, 10)
        plan = conn.execute(
            f"EXPLAIN (FORMAT JSON) {sql}", {"vector": np.asarray(queries(1)[0]), "k": 10}
        ).fetchone()
    assert plan is not None
    return {n for n in _index_names(plan[0][0]["Plan"]) if n.startswith("chunks")}


def test_a_graph_over_every_chunk_is_never_walked_in_a_class_place(
    world: World, databases: Databases
) -> None:
    """A database that ran the ``"hnsw"`` setting still holds its graph over every chunk,
    whose walk hidden rows shape. While it exists the class plan ranks the caller's classes
    exactly; the next refresh drops it, and the class graphs are walked again."""
    store = databases.store(GRAPHS)
    fill(store, world)
    store.refresh_class_graphs()
    global_graph(databases.made[-1])
    flt = CALLERS["staff and two departments (60 %)"]
    exact = databases.store(VectorPlan(), databases.made[-1])
    before = store.graph_searches
    for q in queries(5):
        assert store.vector_search(q, flt, 10) == exact.vector_search(q, flt, 10)
    assert store.graph_searches == before
    assert store.refresh_class_graphs()["dropped"] >= 1
    store.vector_search(queries(1)[0], flt, 10)
    assert store.graph_searches > before
    with store._writer.connection() as conn:
        assert not conn.execute(
            "SELECT 1 FROM pg_indexes WHERE indexname = %s", (f"chunks_embedding_{DIM}",)
        ).fetchall()


def test_reverse_proof_the_planner_takes_the_global_graph_for_a_class_without_one(
    world: World, databases: Databases
) -> None:
    """Why the plan checks: a class branch whose graph is gone, with the global graph
    present, is planned through the global graph."""
    store = databases.store(GRAPHS)
    fill(store, world)
    store.refresh_class_graphs()
    global_graph(databases.made[-1])
    with store._writer.connection() as conn:
        names = [n for n, _ in store._graph_indexes(conn, valid_only=True)]
    gone = sorted(pg_search.class_graph_name(int(n.split("_")[2]), DIM) for n in names)[0]
    databases.made[-1].admin(f"DROP INDEX {gone}")
    cid = int(gone.split("_")[2])
    sql = pg_search.class_graphs_vector_sql({cid: 1}, [], DIM)
    assert f"chunks_embedding_{DIM}" in _plan_indexes(store, EVERYTHING, sql)


def test_reverse_proof_a_graph_over_every_chunk_walked_in_classes_place_fails_the_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a search would do if it read the catalogue before a graph over every chunk
    committed and the classes' graphs were meanwhile gone: the planner walks the global
    graph in their place, which the results of these small classes do not show and the
    walked-graph check must."""
    store = databases.store(GRAPHS)
    fill(store, world)
    store.refresh_class_graphs()
    graphs = walked_graphs(store)
    assert graphs
    database = databases.made[-1]
    for (name,) in database.admin(
        "SELECT relname FROM pg_class WHERE relname LIKE 'chunks\\_class\\_%' AND relkind = 'i'"
    ):
        database.admin(f"DROP INDEX {name}")
    global_graph(database)
    monkeypatch.setattr(PostgresStore, "_usable_graphs", staticmethod(lambda conn, dim: graphs))
    with pytest.raises(AssertionError):
        check_walks_only_admitted_graphs(
            store, CALLERS["staff and two departments (60 %)"], monkeypatch
        )


def test_the_hnsw_setting_makes_no_graph_over_every_chunk_beside_class_graphs(
    world: World, databases: Databases
) -> None:
    """A process with ``vector_search = "hnsw"`` writing to a database whose class graphs
    another process keeps: it does not make its graph over every chunk (which a search
    that read the catalogue just before could walk in a class's place), and ranks exactly."""
    check_no_global_graph_beside_classes(world, databases)


def check_no_global_graph_beside_classes(world: World, databases: Databases) -> None:
    classes = databases.store(GRAPHS)
    database = databases.made[-1]
    fill(classes, world)
    assert classes.refresh_class_graphs()["graphs"] >= 5
    hnsw = databases.store(GLOBAL, database)
    entry = world.entries[0]
    hnsw.upsert(entry.document, entry.chunks, entry.vectors)
    graphs = [str(name) for (name,) in database.admin(HNSW_INDEXES)]
    assert graphs and all(n.startswith("chunks_class_") for n in graphs), graphs
    exact = databases.store(VectorPlan(), database)
    flt = CALLERS["staff and two departments (60 %)"]
    for q in queries(3):
        assert hnsw.vector_search(q, flt, 10) == exact.vector_search(q, flt, 10)


def test_an_hnsw_writer_makes_its_graph_only_while_no_refresh_holds_the_lock(
    world: World, databases: Databases
) -> None:
    """While a refresh holds the graphs' lock (it may be building the first class graphs,
    not yet in the catalogue), a process with ``"hnsw"`` does not make its graph; once the
    lock is free and no class graph exists, it does."""
    import psycopg

    store = databases.store(dataclasses.replace(GLOBAL, refresh_s=0.0))
    database = databases.made[-1]
    with psycopg.connect(database.writer_dsn, autocommit=True) as refresh:
        refresh.execute("SELECT pg_advisory_lock(%s)", (postgres._GRAPHS_LOCK,))
        fill(store, world)
        assert database.admin(HNSW_INDEXES) == []
    entry = world.entries[0]
    store.upsert(entry.document, entry.chunks, entry.vectors)
    assert database.admin(HNSW_INDEXES) == [(f"chunks_embedding_{DIM}",)]


def test_reverse_proof_an_hnsw_setting_blind_to_class_graphs_fails_the_same_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PostgresStore, "_graphs", staticmethod(lambda conn: ([], [])))
    with pytest.raises(AssertionError):
        check_no_global_graph_beside_classes(world, databases)


def check_a_graph_made_by_hand_keeps_class_graphs_unused(
    world: World, databases: Databases
) -> None:
    """An HNSW index on the chunks that the store did not make, under any name: searches
    rank exactly while it exists, and the refresh leaves it to whoever made it."""
    store = databases.store(GRAPHS)
    fill(store, world)
    store.refresh_class_graphs()
    database = databases.made[-1]
    database.admin(
        "CREATE INDEX vectors_by_hand ON chunks USING hnsw "
        f"((embedding::vector({DIM})) vector_ip_ops)"
    )
    flt = CALLERS["staff and two departments (60 %)"]
    exact = databases.store(VectorPlan(), database)
    before = store.graph_searches
    for q in queries(3):
        assert store.vector_search(q, flt, 10) == exact.vector_search(q, flt, 10)
    assert store.graph_searches == before
    store.refresh_class_graphs()
    assert database.admin("SELECT 1 FROM pg_class WHERE relname = 'vectors_by_hand'")


def test_a_graph_made_by_hand_keeps_class_graphs_unused(world: World, databases: Databases) -> None:
    check_a_graph_made_by_hand_keeps_class_graphs_unused(world, databases)


def test_reverse_proof_graphs_told_apart_by_name_fail_the_same_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As before this check: only ``chunks_embedding_*`` counted as a graph over every chunk."""
    real = PostgresStore._graphs

    def by_name(conn: Any) -> tuple[list[tuple[str, bool]], list[str]]:
        classes, others = real(conn)
        return classes, [n for n in others if n.startswith("chunks_embedding_")]

    monkeypatch.setattr(PostgresStore, "_graphs", staticmethod(by_name))
    with pytest.raises(AssertionError):
        check_a_graph_made_by_hand_keeps_class_graphs_unused(world, databases)


def test_only_names_the_store_gives_are_class_graphs() -> None:
    assert postgres._is_class_graph("chunks_class_7_16")
    assert postgres._is_class_graph("chunks_class_7_16_2of4")
    for other in (
        "chunks_class_07_16",  # a leading zero
        "chunks_class_7_16_0of1",  # an unsplit class's graph named as a split
        "chunks_class_\u0667_16",  # a digit that is not ASCII
        "chunks_class_7_16_4of4",  # a part past its split
        "chunks_class_7",
        "chunks_embedding_16",
    ):
        assert not postgres._is_class_graph(other), other


# --------------------------------------------------------------------------- split graphs

#: As :data:`GRAPHS`, with graphs of about 30 chunks: the staff class (111 chunks a caller
#: reads) is split into four graphs, each department's (33) into two.
SPLIT = dataclasses.replace(GRAPHS, largest_graph=30)


@pytest.fixture(scope="module")
def split() -> Iterator[tuple[World, PgDatabase]]:
    """One database holding the whole company, its large classes split."""
    yield from company_database(SPLIT)


def graph_members(database: PgDatabase, classes: list[int] | None = None) -> set[frozenset[str]]:
    """The chunks each class graph holds, read through each index's own predicate: the
    graphs of the ``classes`` (all of them when ``None``)."""
    graphs = database.admin(
        "SELECT c.relname, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'chunks\\_class\\_%%'"
    )
    members = set()
    for name, predicate in graphs:
        if classes is None or int(str(name).split("_")[2]) in classes:
            rows = database.admin(f"SELECT chunk_id FROM chunks WHERE {predicate}")
            members.add(frozenset(str(r[0]) for r in rows))
    return members


def walked_graphs(store: PostgresStore) -> dict[int, int]:
    """The classes a search would walk graphs of, each with the parts of its split."""
    with store._writer.connection() as conn, conn.transaction():
        return store._usable_graphs(conn, DIM) or {}


def admitted(store: PostgresStore, flt: SearchFilter) -> list[int]:
    with store._searching(flt) as conn:
        sql, params = pg_search.admitted_classes(flt)
        return [int(r[0]) for r in conn.execute(sql, params)]


@pytest.mark.parametrize("who", list(CALLERS))
def test_a_callers_results_through_split_graphs_equal_those_of_their_rows_alone(
    split: tuple[World, PgDatabase],
    databases: Databases,
    who: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world, database = split
    flt = CALLERS[who]
    store = databases.store(SPLIT, database)
    alone = databases.store(SPLIT)
    fill(alone, world.admitted_only(flt))
    alone.refresh_class_graphs()
    for k in (1, 10):
        check_alike(store, alone, flt, k)
    check_walks_only_admitted_graphs(store, flt, monkeypatch)
    if who != "one team (1 %)":  # one search walks every part of each graphed class
        walked = walked_graphs(store)
        mine = [walked[c] for c in admitted(store, flt) if c in walked]
        assert max(mine) > 1
        before = store.graph_searches
        store.vector_search(queries(1)[0], flt, 10)
        assert store.graph_searches - before == sum(mine)


def parts_both_ways(
    world: World, databases: Databases, flt: SearchFilter
) -> tuple[set[frozenset[str]], set[frozenset[str]]]:
    """The chunks of each graph a caller walks, in the whole company's database and in a
    database of the caller's rows alone."""
    whole = databases.store(SPLIT)
    fill(whole, world)
    whole.refresh_class_graphs()
    alone = databases.store(SPLIT)
    fill(alone, world.admitted_only(flt))
    alone.refresh_class_graphs()
    mine = graph_members(databases.made[0], admitted(whole, flt))
    theirs = graph_members(databases.made[1])
    assert len(mine) == len(theirs) == 8  # staff in four parts, each department in two
    return mine, theirs


def test_which_graph_holds_a_chunk_depends_on_that_chunk_alone(
    world: World, databases: Databases
) -> None:
    """Hidden documents written between the caller's change the table's serial ids of the
    caller's chunks, never which part of a split class holds them."""
    mine, theirs = parts_both_ways(world, databases, CALLERS["staff and two departments (60 %)"])
    assert mine == theirs


def test_reverse_proof_parts_by_serial_id_fail_the_same_check(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Split by the row's serial id, a part's members shift with every hidden row written
    before them: the same check must catch it."""

    def by_serial_id(parts: int, part: int, alias: str = "") -> str:
        return "" if parts == 1 else f" AND mod({alias}id, {int(parts)}) = {int(part)}"

    monkeypatch.setattr(pg_search, "graph_part", by_serial_id)
    mine, theirs = parts_both_ways(world, databases, CALLERS["staff and two departments (60 %)"])
    assert mine != theirs


def test_a_split_class_is_searched_through_each_of_its_parts_graphs(
    split: tuple[World, PgDatabase], databases: Databases
) -> None:
    """The planner walks each part's own partial index (else the equality above could be
    an exact scan's)."""
    _, database = split
    store = databases.store(SPLIT, database)
    walked = walked_graphs(store)
    cid, parts = max(walked.items(), key=lambda item: item[1])
    assert parts == 4
    sql = pg_search.class_graphs_vector_sql({cid: parts}, [], DIM)
    used = _plan_indexes(store, EVERYTHING, sql)
    assert used == {pg_search.class_graph_name(cid, DIM, p, parts) for p in range(parts)}


def test_a_class_outgrowing_its_graph_is_split_and_kept_near_a_boundary(
    world: World, databases: Databases
) -> None:
    """A class past the graph size is split at the next refresh, which drops its one graph
    only after the parts are built; a class with one part more than it needs keeps its
    split, so a class moving back and forth across a boundary is not rebuilt at every
    refresh."""
    store = databases.store(GRAPHS)
    fill(store, world)
    whole = store.refresh_class_graphs()
    database = databases.made[-1]
    splitting = databases.store(SPLIT, database)
    resplit = splitting.refresh_class_graphs()
    # The staff class (about 110 chunks) is split four ways, each department's (about 34)
    # two ways, and their one graph each dropped after.
    assert (resplit["built"], resplit["dropped"]) == (4 + 4 * 2, 1 + 4)
    with splitting._writer.connection() as conn:
        names = [n for n, _ in splitting._graph_indexes(conn, valid_only=True)]
    assert resplit["graphs"] == len(names) == whole["graphs"] + 3 + 4
    assert any(n.endswith("_0of4") for n in names)
    split_classes = {int(n.split("_")[2]) for n in names if "of" in n}
    assert split_classes and not {  # no class keeps its one graph beside its parts
        n for n in names if n in {pg_search.class_graph_name(c, DIM) for c in split_classes}
    }
    near = databases.store(
        dataclasses.replace(GRAPHS, largest_graph=40),
        database,
    )
    kept = near.refresh_class_graphs()
    assert (kept["built"], kept["dropped"], kept["graphs"]) == (0, 0, resplit["graphs"])
    flt = CALLERS["staff and two departments (60 %)"]
    exact = databases.store(VectorPlan(), database)
    for q in queries(5):
        assert near.vector_search(q, flt, 10) == exact.vector_search(q, flt, 10)
    # Graphs of 200 chunks: the staff class is one graph again, its parts dropped after;
    # the departments' two parts are one more than they need, and stay.
    merged = databases.store(GRAPHS, database).refresh_class_graphs()
    assert (merged["built"], merged["dropped"]) == (1, 4)
    assert merged["graphs"] == whole["graphs"] + 4
    assert set(walked_graphs(near).values()) == {1, 2}


def test_a_split_that_dies_midway_leaves_the_old_graphs_walked(
    world: World, databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh that dies after building some of a class's new parts has dropped none of
    its old graphs, and searches walk only whole splits; the next refresh finishes it."""
    store = databases.store(GRAPHS)
    fill(store, world)
    whole = store.refresh_class_graphs()
    splitting = databases.store(SPLIT, databases.made[-1])
    real, made = pg_search.class_graph_ddl, []

    def dies_at_the_second(*args: Any) -> str:
        made.append(args)
        if len(made) == 2:
            raise RuntimeError("the build died")
        return real(*args)

    monkeypatch.setattr(pg_search, "class_graph_ddl", dies_at_the_second)
    with pytest.raises(RuntimeError):
        splitting.refresh_class_graphs()
    walked = walked_graphs(splitting)
    assert len(walked) == whole["graphs"] and set(walked.values()) == {1}
    monkeypatch.undo()
    splitting.refresh_class_graphs()
    walked = walked_graphs(splitting)
    assert sorted(walked.values()) == [1] * (whole["graphs"] - 5) + [2] * 4 + [4]
    with splitting._writer.connection() as conn:
        names = {n for n, _ in splitting._graph_indexes(conn, valid_only=False)}
    split = [c for c, parts in walked.items() if parts > 1]
    assert not names & {pg_search.class_graph_name(c, DIM) for c in split}  # old ones gone


def test_a_part_whose_build_died_is_built_again_and_its_split_walked_only_then(
    world: World, databases: Databases
) -> None:
    """A part's graph left invalid (a concurrent build that died) makes its split unusable
    until the next refresh drops and builds it again."""
    store = databases.store(SPLIT)
    fill(store, world)
    store.refresh_class_graphs()
    cid = next(c for c, parts in walked_graphs(store).items() if parts == 4)
    broken = pg_search.class_graph_name(cid, DIM, 2, 4)
    databases.made[-1].admin(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (broken,)
    )
    walked = walked_graphs(store)
    assert cid not in walked  # ranked exactly meanwhile
    flt = CALLERS["staff and two departments (60 %)"]
    exact = databases.store(VectorPlan(), databases.made[-1])
    before = store.graph_searches
    assert store.vector_search(queries(1)[0], flt, 10) == exact.vector_search(
        queries(1)[0], flt, 10
    )
    others = sum(walked[c] for c in admitted(store, flt) if c in walked)
    assert cid in admitted(store, flt) and store.graph_searches - before == others
    again = store.refresh_class_graphs()
    assert (again["built"], again["dropped"]) == (1, 1)
    assert walked_graphs(store)[cid] == 4
