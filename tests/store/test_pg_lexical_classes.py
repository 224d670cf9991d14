"""PostgreSQL's lexical search by permission class: exact BM25 without reading every chunk.

A caller's BM25 statistics (N, average length, document frequencies) are summed from
per-class counts, and the top k is found by reading the chunks of the query's rarest terms
first, stopping once the other terms cannot lift any unread chunk into the top k. Both
must leave results exactly as the plain-Python reference computes them over the caller's
chunks alone. The tests:

* results equal the reference for callers reading 1 % to 100 %, with the early stop and
  its widening taken (a probe of 1, 8 and 64 postings); reverse proof: a term ceiling
  below the true bound stops too early, and the same check catches it;
* results equal those of a database holding only the caller's rows; reverse proof:
  statistics counted over every class, the same check catches them;
* the per-class counts, and the postings scores are read from, equal those made from the
  chunks after every kind of write, before and after folding, with a fold running beside
  an open write; reverse proof: each counting or posting trigger disabled, the same check
  catches it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

import factories
from clearance.model import Sensitivity
from clearance.store import pg_schema, postgres
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore
from conformance.world import NOW, Entry, World, check_lexical_top_k, fill
from pg import READER, PgDatabase, server

#: Made-up words that the analyser keeps as they are; drawn with Zipf's law, so a query
#: mixes words most chunks hold with words a few hold.
WORDS = [
    f"{a}{b}{c}"
    for a in ("ka", "ro", "mi", "te", "su")
    for b in ("lo", "ne", "vi", "da")
    for c in ("x", "q", "z")
]
PROBES = (1, 8, 64)


def _draw_words(rng: np.random.Generator, count: int) -> str:
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    picks = rng.choice(len(WORDS), size=count, p=weights / weights.sum())
    return " ".join(WORDS[i] for i in picks)


def company(seed: int = 3) -> World:
    """About 250 documents of one to three chunks, laid out as a company's: an all-staff
    group, four departments, twenty small teams; some past their deadline, some chunks
    confidential."""
    rng = np.random.default_rng(seed)
    layout = [("group:staff", 90)] + [(f"group:dept-{d}", 30) for d in range(4)]
    layout += [(f"group:team-{t}", 2) for t in range(20)]
    entries = []
    n = 0
    for principal, docs in layout:
        for i in range(docs):
            doc = factories.document(
                f"doc:{n:04d}",
                corpus="ops",
                acl={principal},
                expires_at=NOW - timedelta(hours=1) if i % 13 == 4 else None,
            )
            n += 1
            chunks = [
                factories.chunk(
                    doc,
                    _draw_words(rng, int(rng.integers(4, 25))),
                    ordinal=o,
                    sensitivity=Sensitivity.CONFIDENTIAL if (i + o) % 9 == 5 else None,
                )
                for o in range(int(rng.integers(1, 4)))
            ]
            entries.append(Entry(doc, chunks, [None] * len(chunks)))
    return World(entries)


def caller(*principals: str, ceiling: Sensitivity = Sensitivity.INTERNAL) -> SearchFilter:
    return SearchFilter(
        principals=frozenset(principals), corpora={"ops": ceiling}, max_sensitivity=ceiling, now=NOW
    )


CALLERS = {
    "one team": caller("group:team-3"),
    "a department": caller("group:dept-2", "group:team-9"),
    "staff and two departments": caller("group:staff", "group:dept-0", "group:dept-1"),
    "everything, confidential too": caller(
        "group:staff",
        *(f"group:dept-{d}" for d in range(4)),
        *(f"group:team-{t}" for t in range(20)),
        ceiling=Sensitivity.CONFIDENTIAL,
    ),
}


def queries() -> list[str]:
    """Two to five words each: common ones, rare ones, and mixes."""
    rng = np.random.default_rng(17)
    found = [_draw_words(rng, int(rng.integers(2, 6))) for _ in range(18)]
    found += [f"{WORDS[0]} {WORDS[1]} {WORDS[-1]}", f"{WORDS[-2]} {WORDS[-5]}", WORDS[0]]
    return found


@pytest.fixture(scope="module")
def world() -> World:
    return company()


@pytest.fixture(scope="module")
def filled(world: World) -> Iterator[PgDatabase]:
    """One database holding the whole company, shared by the read-only tests."""
    found = server()
    database = found.database(always_fresh=True)
    store = PostgresStore(database.reader_dsn, database.writer_dsn)
    try:
        fill(store, world)
    finally:
        store.close()
    try:
        yield database
    finally:
        found.drop(database)


@pytest.fixture
def stores() -> Iterator[list[PostgresStore]]:
    opened: list[PostgresStore] = []
    try:
        yield opened
    finally:
        for store in opened:
            store.close()


def open_store(database: PgDatabase, stores: list[PostgresStore], probe: int) -> PostgresStore:
    """A store that folds the statistics' deltas only when a test asks."""
    store = PostgresStore(
        database.reader_dsn, database.writer_dsn, probe_postings=probe, fold_every_s=math.inf
    )
    stores.append(store)
    return store


def check_every_query(store: PostgresStore, world: World, flt: SearchFilter) -> None:
    for query in queries():
        for k in (1, 5, 10):
            check_lexical_top_k(store, world, query, flt, k)


# --------------------------------------------------------------------------- exact results


@pytest.mark.parametrize("probe", PROBES)
def test_lexical_results_are_the_reference_bm25_of_the_callers_chunks(
    filled: PgDatabase, world: World, stores: list[PostgresStore], probe: int
) -> None:
    store = open_store(filled, stores, probe)
    for flt in CALLERS.values():
        check_every_query(store, world, flt)
    # The early stop was taken, and so was its widening: the check covered both.
    assert store.lexical_searches["pruned"] > 0
    assert store.lexical_searches["rounds"] > (
        store.lexical_searches["pruned"] + store.lexical_searches["whole"]
    )


def test_reverse_proof_a_ceiling_below_the_bound_fails_the_same_check(
    filled: PgDatabase, world: World, stores: list[PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    true_ceiling = postgres._term_ceiling
    monkeypatch.setattr(postgres, "_term_ceiling", lambda n, df: 0.2 * true_ceiling(n, df))
    store = open_store(filled, stores, 1)
    with pytest.raises(AssertionError):
        for flt in CALLERS.values():
            check_every_query(store, world, flt)


# --------------------------------------------------------------------------- non-interference


def check_alike(store: PostgresStore, alone: PostgresStore, flt: SearchFilter) -> None:
    everything = SearchFilter(
        principals=flt.principals,
        corpora=None,
        max_sensitivity=Sensitivity.RESTRICTED,
        now=NOW - timedelta(days=365),
        require_ai_allowed=False,
    )
    hits = 0
    for query in queries():
        found = store.lexical_search(query, flt, 10)
        assert found == alone.lexical_search(query, everything, 10)
        hits += len(found)
    assert hits > 0


def _every_class_counted(
    self: PostgresStore, conn: psycopg.Connection[Any], classes: list[int], terms: Any
) -> tuple[int, int, dict[str, int]]:
    """The leaky variant: statistics over every class, read as the writer."""
    with self._writer.connection() as writer:
        every = [int(r[0]) for r in writer.execute("SELECT id FROM access_classes")]
        return COUNTED(writer, every, terms)


#: The store's own statistics, which the leaky variant reads over every class.
COUNTED = PostgresStore._class_statistics


@pytest.fixture
def dropped() -> Iterator[list[PgDatabase]]:
    made: list[PgDatabase] = []
    try:
        yield made
    finally:
        for database in made:
            server().drop(database)


def alone(
    world: World, flt: SearchFilter, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> PostgresStore:
    """A store on a database holding only the rows ``flt`` admits."""
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world.admitted_only(flt))
    return store


@pytest.mark.parametrize("who", list(CALLERS))
def test_results_equal_those_of_a_database_of_the_callers_rows_alone(
    filled: PgDatabase,
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    who: str,
) -> None:
    flt = CALLERS[who]
    check_alike(open_store(filled, stores, 8), alone(world, flt, dropped, stores), flt)


def test_reverse_proof_statistics_of_every_class_fail_the_same_check(
    filled: PgDatabase,
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    flt = CALLERS["a department"]
    reference = alone(world, flt, dropped, stores)
    monkeypatch.setattr(PostgresStore, "_class_statistics", _every_class_counted)
    with pytest.raises(AssertionError):
        check_alike(open_store(filled, stores, 8), reference, flt)


# --------------------------------------------------------------------------- counts follow


def miscounted(store: PostgresStore) -> list[tuple[Any, ...]]:
    """Every class and (class, term) whose counts, totals and deltas summed, differ from
    those made from the chunks now, and every posting missing or too many."""
    with store._writer.connection() as conn:
        sizes = conn.execute(
            "WITH kept AS (SELECT class_id, sum(chunks) AS chunks, sum(length) AS length FROM "
            "(SELECT * FROM class_sizes UNION ALL SELECT * FROM class_size_deltas) s "
            "GROUP BY class_id HAVING sum(chunks) <> 0 OR sum(length) <> 0), "
            "made AS (SELECT class_id, count(*) AS chunks, sum(length) AS length FROM chunks "
            "GROUP BY class_id) "
            "SELECT 'size', coalesce(k.class_id, m.class_id) FROM kept k "
            "FULL JOIN made m ON m.class_id = k.class_id "
            "WHERE k.chunks IS DISTINCT FROM m.chunks OR k.length IS DISTINCT FROM m.length"
        ).fetchall()
        terms = conn.execute(
            "WITH kept AS (SELECT term, class_id, sum(df) AS df FROM "
            "(SELECT * FROM class_terms UNION ALL SELECT * FROM class_term_deltas) t "
            "GROUP BY term, class_id HAVING sum(df) <> 0), "
            "made AS (SELECT t.term, c.class_id, count(*) AS df FROM chunks c "
            "CROSS JOIN unnest(c.terms) AS t (term) GROUP BY t.term, c.class_id) "
            "SELECT 'term', coalesce(k.term, m.term), coalesce(k.class_id, m.class_id) "
            "FROM kept k FULL JOIN made m ON m.term = k.term AND m.class_id = k.class_id "
            "WHERE k.df IS DISTINCT FROM m.df"
        ).fetchall()
        postings = conn.execute(
            "WITH made AS (SELECT u.term, c.class_id, c.id AS chunk, u.tf, c.length "
            "FROM chunks c CROSS JOIN unnest(c.terms, c.tfs) AS u (term, tf) "
            "WHERE c.class_id IS NOT NULL), "
            "kept AS (SELECT term, class_id, chunk, tf, length FROM postings) "
            "SELECT 'posting', * FROM ((SELECT * FROM made EXCEPT ALL SELECT * FROM kept) "
            "UNION ALL (SELECT * FROM kept EXCEPT ALL SELECT * FROM made)) d"
        ).fetchall()
    return [tuple(r) for r in sizes + terms + postings]


def deltas(store: PostgresStore) -> int:
    with store._writer.connection() as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM class_size_deltas) "
            "+ (SELECT count(*) FROM class_term_deltas)"
        ).fetchone()
    assert row is not None
    return int(row[0])


def every_kind_of_write(store: PostgresStore) -> None:
    """Permission changes (which move chunks between classes), a document rewritten with
    new text, one deleted, and a document's class-deciding columns changed in place."""
    store.set_acls(
        {
            "doc:0001": frozenset({"group:dept-3"}),
            "doc:0100": frozenset({"group:staff", "user:ann"}),
            "doc:0200": frozenset(),
        }
    )
    store.set_acl("doc:0003", frozenset({"user:bo"}))
    doc = factories.document("doc:0004", corpus="hr", acl={"group:staff"})
    store.upsert(
        doc,
        factories.chunks(doc, [f"{WORDS[0]} {WORDS[3]} fresh words", f"{WORDS[7]} again"]),
    )
    store.delete("doc:0005")
    with store.transaction() as db:
        db.execute(
            "UPDATE documents SET sensitivity = 2, ai_allowed = false, expires_at = 1.0 "
            "WHERE doc_id = 'doc:0006'"
        )


def test_class_counts_follow_every_kind_of_write_before_and_after_folding(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world)
    assert miscounted(store) == []
    store.fold_class_statistics()
    assert deltas(store) == 0
    every_kind_of_write(store)
    assert deltas(store) > 0  # the writes left deltas: the check read them
    assert miscounted(store) == []
    assert store.fold_class_statistics()
    assert deltas(store) == 0
    assert miscounted(store) == []


def test_a_fold_beside_an_open_write_leaves_its_deltas_for_the_next(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world)
    assert store.fold_class_statistics()
    with store.transaction() as db:
        db.execute("DELETE FROM documents WHERE doc_id = 'doc:0010'")  # its chunks cascade
        db.execute("UPDATE documents SET expires_at = 2.0 WHERE doc_id = 'doc:0011'")
        assert store.fold_class_statistics() == 0  # another connection: sees none of this
    assert miscounted(store) == []
    assert deltas(store) > 0  # the write's deltas were left for the next fold
    assert store.fold_class_statistics()
    assert deltas(store) == 0
    assert miscounted(store) == []


def test_writes_fold_the_deltas_on_a_worker(world: World, dropped: list[PgDatabase]) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = PostgresStore(database.reader_dsn, database.writer_dsn, fold_every_s=0.0)
    try:
        fill(store, world)
        worker = store._fold_worker
        assert worker is not None
        worker.join(timeout=30)
        with store._writer.connection() as conn:  # only a fold writes totals
            folded = conn.execute("SELECT count(*) FROM class_sizes").fetchone()
        assert folded is not None and folded[0] > 0
        assert miscounted(store) == []
    finally:
        store.close()


def postings_written(store: PostgresStore) -> dict[tuple[str, int], str]:
    """Each posting and the transaction that wrote its row."""
    with store._writer.connection() as conn:
        rows = conn.execute("SELECT term, chunk, xmin::text FROM postings").fetchall()
    return {(str(t), int(c)): str(x) for t, c, x in rows}


def test_updates_of_a_chunk_keep_its_postings_and_leave_others_alone(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world)
    before = postings_written(store)
    with store.transaction() as db:  # nothing a posting holds changes: none rewritten
        db.execute("UPDATE chunks SET locator = locator || '!' WHERE chunk_id LIKE 'doc:001%'")
    assert postings_written(store) == before
    assert miscounted(store) == []
    with store.transaction() as db:  # a chunk's terms, frequencies and length rewritten
        db.execute(
            "UPDATE chunks SET terms = terms[1:2], tfs = tfs[1:2], length = 3 "
            "WHERE chunk_id = 'doc:0020#0'"
        )
    assert miscounted(store) == []
    with store.transaction() as db:  # a chunk renumbered
        db.execute("UPDATE chunks SET id = DEFAULT WHERE chunk_id = 'doc:0021#0'")
    assert miscounted(store) == []
    changed = {key for key, xid in postings_written(store).items() if before.get(key) != xid}
    assert changed and all(c in _ids(store, "doc:0020#0", "doc:0021#0") for _, c in changed)


def _ids(store: PostgresStore, *chunk_ids: str) -> set[int]:
    with store._writer.connection() as conn:
        rows = conn.execute(
            "SELECT id FROM chunks WHERE chunk_id = ANY (%s)", (list(chunk_ids),)
        ).fetchall()
    return {int(r[0]) for r in rows}


#: Migrations 7 and 8 undone on a filled database, as an index made before them holds it.
UNDO_7_AND_8 = (
    "DROP TABLE class_sizes, class_size_deltas, class_terms, class_term_deltas, postings; "
    "DROP FUNCTION clearance_count_class_rows, clearance_forget_class_rows, "
    "clearance_fold_class_statistics, clearance_post_chunks, clearance_forget_postings "
    "CASCADE; DELETE FROM schema_version WHERE version >= 7"
)


def migrate_filled(world: World, dropped: list[PgDatabase]) -> PgDatabase:
    """A database filled and written to at version 6, then upgraded."""
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = PostgresStore(database.reader_dsn, database.writer_dsn, fold_every_s=math.inf)
    try:
        fill(store, world)
        every_kind_of_write(store)
    finally:
        store.close()
    database.admin(UNDO_7_AND_8)
    with psycopg.connect(database.writer_dsn, autocommit=True) as conn:
        applied = pg_schema.upgrade(conn, READER)
    assert [m.version for m in applied] == [7, 8]
    return database


def test_migrations_7_and_8_count_and_post_an_index_that_holds_chunks(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    store = open_store(migrate_filled(world, dropped), stores, 8)
    assert miscounted(store) == []
    assert postings_written(store)


def test_reverse_proof_a_migration_without_its_backfill_fails_the_same_check(
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    last = pg_schema.MIGRATIONS[-1]
    start = last.sql.index("INSERT INTO postings")
    end = last.sql.index("ORDER BY 1, 2, 3;") + len("ORDER BY 1, 2, 3;")
    hollow = pg_schema.Migration(last.version, last.name, last.sql[:start] + last.sql[end:])
    monkeypatch.setattr(pg_schema, "MIGRATIONS", (*pg_schema.MIGRATIONS[:-1], hollow))
    store = open_store(migrate_filled(world, dropped), stores, 8)
    assert miscounted(store) != []


def test_emptying_the_chunks_table_empties_the_counts(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world)
    database.admin("TRUNCATE chunks")
    assert miscounted(store) == []
    assert store.lexical_search(WORDS[0], CALLERS["everything, confidential too"], 5) == []


@pytest.mark.parametrize(
    "trigger",
    [
        "chunks_counted_in",
        "chunks_counted_out",
        "chunks_counted_again",
        "chunks_posted",
        "chunks_unposted",
        "chunks_reposted",
    ],
)
def test_reverse_proof_without_a_counting_trigger_the_same_check_fails(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore], trigger: str
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 8)
    fill(store, world)
    database.admin(f"ALTER TABLE chunks DISABLE TRIGGER {trigger}")
    every_kind_of_write(store)
    assert miscounted(store) != []
