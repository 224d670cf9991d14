"""PostgreSQL's lexical search by permission class: exact BM25 without reading every chunk.

A caller's BM25 statistics (N, average length, document frequencies) are summed from
per-class counts, and the query terms' postings in the caller's classes are read packed,
one row per (term, class), where a current block holds them, and row by row elsewhere.
Both must leave results exactly as the plain-Python reference computes them over the
caller's chunks alone. The tests:

* results equal the reference for callers reading 1 % to 100 %, with every pair packed,
  some, and none; reverse proofs: frequencies read as rows, and chunk ids read from
  blocks, in the wrong byte order, the same check catches each;
* scores are the same floats from blocks, from rows and from the SQL that scores the
  chunks themselves; reverse proof: weights summed in another order, caught;
* blocks whose columns sit on each side of every width's edge (1, 2, 4 and 8 bytes) hold
  their postings and score as the chunks do, and a block whose bytes do not fit its
  postings is an error; reverse proof: each width read little-endian, caught;
* migration 10 packs again, in its form, every block it finds; reverse proof: packing only
  the pairs of 256 postings or more, caught;
* a block is read only while no write changed its pair: after every kind of write,
  before and after folding and packing, results equal those the chunks give, and every
  block the versions call current holds its postings; reverse proofs: blocks read whatever
  their version, and versions not raised by an update, each caught;
* results equal those of a database holding only the caller's rows; reverse proof:
  statistics counted over every class, the same check catches them;
* the per-class counts, and the postings scores are read from, equal those made from the
  chunks after every kind of write, before and after folding, with a fold running beside
  an open write; reverse proof: each counting or posting trigger disabled, the same check
  catches it.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

import factories
from clearance.errors import StoreError
from clearance.model import Sensitivity
from clearance.store import pg_schema, pg_search, postgres
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan
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
#: Packing every (term, class), those with eight postings or more, and none.
PACKS = (1, 8, 100_000)


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
    """One database holding the whole company, shared by the read-only tests. Chunk ids
    go up 300 at a time, so that packed, a class's chunk ids are gaps of two bytes or more
    (read in the wrong byte order, they would name other chunks)."""

    def filling(database: PgDatabase, store: PostgresStore) -> None:
        database.admin("ALTER TABLE chunks ALTER COLUMN id SET INCREMENT BY 300")
        fill(store, world)

    with shared_database(filling) as database:
        yield database


@contextmanager
def shared_database(
    filling: Callable[[PgDatabase, PostgresStore], None], **options: Any
) -> Iterator[PgDatabase]:
    """A fresh database for a module's tests, filled through a store (opened with
    ``options``, closed before the tests), dropped after them."""
    found = server()
    database = found.database(always_fresh=True)
    try:
        store = PostgresStore(database.reader_dsn, database.writer_dsn, **options)
        try:
            filling(database, store)
        finally:
            store.close()
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


def open_store(
    database: PgDatabase, stores: list[PostgresStore], pack_least: int = 8
) -> PostgresStore:
    """A store that folds the statistics' deltas, and packs, only when a test asks."""
    store = PostgresStore(
        database.reader_dsn,
        database.writer_dsn,
        pack_least=pack_least,
        fold_every_s=math.inf,
        vector_plan=VectorPlan(refresh_s=math.inf),
    )
    stores.append(store)
    return store


def fresh(
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    world: World,
    pack_least: int = 8,
    *,
    packed: bool = False,
) -> tuple[PgDatabase, PostgresStore]:
    """A database of its own holding ``world``, and a store on it (:func:`open_store`),
    folded and packed with ``packed``."""
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, pack_least)
    fill(store, world)
    if packed:
        fold_and_pack(store)
    return database, store


def fold_and_pack(store: PostgresStore) -> dict[str, Any]:
    store.fold_class_statistics()
    return store.pack_postings()


def check_every_query(store: PostgresStore, world: World, flt: SearchFilter) -> None:
    for query in queries():
        for k in (1, 5, 10):
            check_lexical_top_k(store, world, query, flt, k)


# --------------------------------------------------------------------------- exact results


@pytest.mark.parametrize("least", PACKS)
def test_lexical_results_are_the_reference_bm25_of_the_callers_chunks(
    filled: PgDatabase, world: World, stores: list[PostgresStore], least: int
) -> None:
    store = open_store(filled, stores, least)
    fold_and_pack(store)
    for flt in CALLERS.values():
        check_every_query(store, world, flt)
    # What the check covered: blocks alone, blocks and rows, rows alone.
    read = store.postings_read
    assert (read["packed"] > 0, read["rows"] > 0) == {
        1: (True, False),
        8: (True, True),
        100_000: (False, True),
    }[least]


def test_reverse_proof_frequencies_read_in_the_wrong_byte_order_fail_the_same_check(
    filled: PgDatabase, world: World, stores: list[PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(filled, stores, 100_000)  # every posting read as a row
    fold_and_pack(store)
    chunks, tfs, lengths = postgres._PACKED  # the frequencies misread, the chunks not
    monkeypatch.setattr(postgres, "_PACKED", (chunks, tfs.newbyteorder("<"), lengths))
    with pytest.raises(AssertionError):
        for flt in CALLERS.values():
            check_every_query(store, world, flt)


def test_reverse_proof_blocks_read_in_the_wrong_byte_order_fail_the_same_check(
    filled: PgDatabase, world: World, stores: list[PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(filled, stores, 1)  # every posting read from a block
    fold_and_pack(store)
    assert 2 in {chunks for chunks, _, _ in widths(store).values()}
    monkeypatch.setitem(postgres._WIDTHS, 2, np.dtype("<u2"))
    with pytest.raises(AssertionError):
        for flt in CALLERS.values():
            check_every_query(store, world, flt)


def by_sql(flt: SearchFilter) -> SearchFilter:
    """``flt`` decided per document (one that no chunk belongs to left out): the store
    scores the allowed chunks' own terms in SQL (``pg_search.bm25_sql``), without the
    class counts, the postings or their blocks."""
    return replace(flt, exclude_doc_ids=frozenset({"doc:none"}))


def same_floats(store: PostgresStore) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """Every caller's results for every query, which must be the same ids and the same
    floats as the SQL that scores the chunks themselves gives."""
    found = {}
    for who, flt in CALLERS.items():
        for query in queries():
            found[who, query] = store.lexical_search(query, flt, 10)
            assert found[who, query] == store.lexical_search(query, by_sql(flt), 10), (who, query)
    assert any(found.values())
    return found


def test_scores_are_the_same_floats_from_blocks_rows_and_sql(
    filled: PgDatabase, stores: list[PostgresStore]
) -> None:
    rows = open_store(filled, stores, 100_000)
    fold_and_pack(rows)  # drops every block
    from_rows = same_floats(rows)
    packed = open_store(filled, stores, 1)
    fold_and_pack(packed)
    assert same_floats(packed) == from_rows
    assert packed.postings_read["rows"] == 0 and rows.postings_read["packed"] == 0


def test_reverse_proof_weights_summed_in_another_order_fail_the_same_check(
    filled: PgDatabase, stores: list[PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    summed = postgres._summed_top_k
    monkeypatch.setattr(
        postgres, "_summed_top_k", lambda chunks, weights, k: summed(chunks[::-1], weights[::-1], k)
    )
    store = open_store(filled, stores, 1)
    fold_and_pack(store)
    with pytest.raises(AssertionError):
        same_floats(store)


# --------------------------------------------------------------------------- block widths

#: Each width's largest value, and one more: 1, 2, 2, 4, 4 and 8 bytes.
EDGES = {255: 1, 256: 2, 65_535: 2, 65_536: 4, 2**32 - 1: 4, 2**32: 8}
#: A word for each edge held by two chunks whose ids are that far apart; a word for each
#: edge below 2**16 that many times in a chunk of its own (frequency and length both).
GAP_WORDS = dict(zip(EDGES, WORDS[:6], strict=True))
COUNT_WORDS = dict(zip(list(EDGES)[:4], WORDS[6:10], strict=True))


@pytest.fixture(scope="module")
def widths_db() -> Iterator[PgDatabase]:
    """A database whose blocks' columns, once packed, sit on each side of every width's
    edge (``EDGES``), all in the all-staff class: chunk ids placed exactly by restarting
    the table's identity before each chunk."""
    placed = [(1_000_000 * (i + 1), word) for i, word in enumerate(GAP_WORDS.values())]
    placed += [
        (1_000_000 * (i + 1) + edge, word) for i, (edge, word) in enumerate(GAP_WORDS.items())
    ]
    placed += [(500 + i, f"{word} " * edge) for i, (edge, word) in enumerate(COUNT_WORDS.items())]

    def filling(database: PgDatabase, store: PostgresStore) -> None:
        for n, (chunk_id, text) in enumerate(placed):
            database.admin(f"ALTER TABLE chunks ALTER COLUMN id RESTART WITH {chunk_id}")
            doc = factories.document(f"doc:w{n}", corpus="ops", acl={"group:staff"})
            store.upsert(doc, factories.chunks(doc, [text]))

    with shared_database(filling, fold_every_s=math.inf) as database:
        yield database


def every_width(database: PgDatabase, stores: list[PostgresStore]) -> PostgresStore:
    store = open_store(database, stores, 1)
    fold_and_pack(store)
    return store


def widths(store: PostgresStore) -> dict[str, tuple[int, int, int]]:
    """Each term's block's widths: of its chunk, frequency and length columns."""
    with store._writer.connection() as conn:
        rows = conn.execute(
            "SELECT term, octet_length(chunks) / postings, octet_length(tfs) / postings, "
            "octet_length(lengths) / postings FROM posting_blocks"
        ).fetchall()
    return {str(t): (int(c), int(f), int(n)) for t, c, f, n in rows}


def check_words(store: PostgresStore) -> None:
    """Each word alone and all at once: the same ids and floats as the SQL that scores the
    chunks themselves, and every chunk that holds a word found."""
    staff = caller("group:staff")
    words = [*GAP_WORDS.values(), *COUNT_WORDS.values()]
    for query in [*words, " ".join(words)]:
        found = store.lexical_search(query, staff, 20)
        assert found == store.lexical_search(query, by_sql(staff), 20), query
        assert found
    assert len(store.lexical_search(" ".join(words), staff, 20)) == 2 * len(EDGES) + 4


def test_blocks_on_each_side_of_every_width_read_as_the_chunks_score(
    widths_db: PgDatabase, stores: list[PostgresStore]
) -> None:
    store = every_width(widths_db, stores)
    found = widths(store)
    assert {w: found[w] for w in GAP_WORDS.values()} == {
        word: (EDGES[edge], 1, 1) for edge, word in GAP_WORDS.items()
    }
    assert {w: found[w] for w in COUNT_WORDS.values()} == {
        word: (1, EDGES[edge], EDGES[edge]) for edge, word in COUNT_WORDS.items()
    }
    check_words(store)
    assert store.postings_read["rows"] == 0 and store.postings_read["packed"] > 0
    assert misblocked(store) == []


@pytest.mark.parametrize("width", [2, 4, 8])
def test_reverse_proof_a_width_read_little_endian_fails_the_same_check(
    widths_db: PgDatabase, stores: list[PostgresStore], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    store = every_width(widths_db, stores)
    monkeypatch.setitem(postgres._WIDTHS, width, np.dtype(f"<u{width}"))
    with pytest.raises(AssertionError):
        check_words(store)


@pytest.mark.parametrize(
    ("column", "change"),
    [("tfs", "substring(tfs FROM 2)"), ("chunks", "chunks || '\\x00'::bytea")],
    ids=["a byte short of one-byte postings", "a byte past two-byte postings"],
)
def test_a_block_whose_bytes_do_not_fit_its_postings_is_an_error(
    dropped: list[PgDatabase], stores: list[PostgresStore], column: str, change: str
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = open_store(database, stores, 1)
    word = GAP_WORDS[256]
    for i, chunk_id in enumerate((10**6, 10**6 + 256)):
        database.admin(f"ALTER TABLE chunks ALTER COLUMN id RESTART WITH {chunk_id}")
        doc = factories.document(f"doc:edge{i}", corpus="ops", acl={"group:staff"})
        store.upsert(doc, factories.chunks(doc, [word]))
    fold_and_pack(store)
    assert widths(store)[word] == (2, 1, 1)
    with store._writer.connection() as conn:
        changed = conn.execute(
            f"UPDATE posting_blocks SET {column} = {change} WHERE term = %s", (word,)
        ).rowcount
    assert changed == 1
    with pytest.raises(StoreError, match=r"posting block of .* is malformed"):
        store.lexical_search(word, caller("group:staff"), 5)


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
    """The leaky variant: the number of chunks and their length over every class, read
    as the writer (the document frequencies stay the caller's, which the postings read
    must match)."""
    with self._writer.connection() as writer:
        every = [int(r[0]) for r in writer.execute("SELECT id FROM access_classes")]
        n, total, _ = COUNTED(writer, every, terms)
    return n, total, COUNTED(conn, classes, terms)[2]


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
    store = open_store(database, stores, 1)
    fill(store, world.admitted_only(flt))
    fold_and_pack(store)
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
    store = open_store(filled, stores, 1)
    fold_and_pack(store)  # every class's blocks, the hidden ones' too
    check_alike(store, alone(world, flt, dropped, stores), flt)
    assert store.postings_read["packed"] > 0


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
        check_alike(open_store(filled, stores), reference, flt)


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
    _, store = fresh(dropped, stores, world)
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
    _, store = fresh(dropped, stores, world)
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
    _, store = fresh(dropped, stores, world, 1, packed=True)
    before = postings_written(store)
    with store.transaction() as db:  # nothing a posting holds changes: none rewritten
        db.execute("UPDATE chunks SET locator = locator || '!' WHERE chunk_id LIKE 'doc:001%'")
    assert postings_written(store) == before
    assert miscounted(store) == [] and misblocked(store) == []
    with store.transaction() as db:  # a chunk's length alone
        db.execute("UPDATE chunks SET length = length + 1 WHERE chunk_id = 'doc:0022#0'")
    assert miscounted(store) == [] and misblocked(store) == []
    with store.transaction() as db:  # a chunk's terms, frequencies and length rewritten
        db.execute(
            "UPDATE chunks SET terms = terms[1:2], tfs = tfs[1:2], length = 3 "
            "WHERE chunk_id = 'doc:0020#0'"
        )
    assert miscounted(store) == [] and misblocked(store) == []
    with store.transaction() as db:  # a chunk renumbered
        db.execute("UPDATE chunks SET id = DEFAULT WHERE chunk_id = 'doc:0021#0'")
    assert miscounted(store) == [] and misblocked(store) == []
    changed = {key for key, xid in postings_written(store).items() if before.get(key) != xid}
    rewritten = _ids(store, "doc:0020#0", "doc:0021#0", "doc:0022#0")
    assert changed and all(c in rewritten for _, c in changed)


def counting_blind_to(column: str) -> str:
    """Migration 9's counting function, with updates compared without ``column``."""
    ninth = next(m for m in pg_schema.MIGRATIONS if m.version == 9).sql
    start = ninth.index("CREATE OR REPLACE FUNCTION clearance_count_class_rows")
    body = ninth[start : ninth.index("$$;", start) + 3]
    compared = "id, class_id, terms, tfs, length"
    blind = body.replace(compared, ", ".join(c for c in compared.split(", ") if c != column))
    assert blind.count(compared) == 0 and body.count(compared) == 4
    return blind


@pytest.mark.parametrize("column", ["length", "id"])
def test_reverse_proof_versions_blind_to_a_column_fail_the_same_check(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore], column: str
) -> None:
    database, store = fresh(dropped, stores, world, 1, packed=True)
    database.admin(counting_blind_to(column))
    with store.transaction() as db:
        if column == "length":
            db.execute("UPDATE chunks SET length = length + 1 WHERE chunk_id = 'doc:0022#0'")
        else:
            db.execute("UPDATE chunks SET id = DEFAULT WHERE chunk_id = 'doc:0021#0'")
    assert misblocked(store) != []


def _ids(store: PostgresStore, *chunk_ids: str) -> set[int]:
    with store._writer.connection() as conn:
        rows = conn.execute(
            "SELECT id FROM chunks WHERE chunk_id = ANY (%s)", (list(chunk_ids),)
        ).fetchall()
    return {int(r[0]) for r in rows}


#: Migrations 7 to 10 undone on a filled database, as an index made before them holds it.
UNDO_7_TO_10 = (
    "DROP TABLE class_sizes, class_size_deltas, class_terms, class_term_deltas, postings, "
    "posting_blocks; "
    "DROP FUNCTION clearance_count_class_rows, clearance_forget_class_rows, "
    "clearance_fold_class_statistics, clearance_post_chunks, clearance_forget_postings, "
    "clearance_pack_postings, clearance_posting_width CASCADE; "
    "DELETE FROM schema_version WHERE version >= 7"
)
#: Enough chunks holding one word in one class for migrations 9 and 10 to pack the pair.
PACKED_BY_MIGRATION = 260


def migrate_filled(world: World, dropped: list[PgDatabase]) -> PgDatabase:
    """A database filled and written to at version 6, then upgraded; one document's
    chunks hold a word often enough for its (term, class) to be packed."""
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = PostgresStore(database.reader_dsn, database.writer_dsn, fold_every_s=math.inf)
    try:
        fill(store, world)
        every_kind_of_write(store)
        doc = factories.document("doc:many", corpus="ops", acl={"group:staff"})
        texts = [f"{WORDS[0]} {WORDS[i % 9 + 1]}" for i in range(PACKED_BY_MIGRATION)]
        store.upsert(doc, factories.chunks(doc, texts))
    finally:
        store.close()
    database.admin(UNDO_7_TO_10)
    with psycopg.connect(database.writer_dsn, autocommit=True) as conn:
        applied = pg_schema.upgrade(conn, READER)
    assert [m.version for m in applied] == [7, 8, 9, 10]
    return database


def test_migrations_7_to_10_count_post_and_pack_an_index_that_holds_chunks(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    store = open_store(migrate_filled(world, dropped), stores)
    assert miscounted(store) == []
    assert postings_written(store)
    assert block_count(store) > 0 and misblocked(store) == []
    staff = caller("group:staff")
    assert store.lexical_search(WORDS[0], staff, 5) == store.lexical_search(
        WORDS[0], by_sql(staff), 5
    )
    assert store.postings_read["packed"] >= PACKED_BY_MIGRATION


def test_reverse_proof_a_migration_without_its_backfill_fails_the_same_check(
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    eighth = next(m for m in pg_schema.MIGRATIONS if m.version == 8)
    start = eighth.sql.index("INSERT INTO postings")
    end = eighth.sql.index("ORDER BY 1, 2, 3;") + len("ORDER BY 1, 2, 3;")
    hollow = pg_schema.Migration(8, eighth.name, eighth.sql[:start] + eighth.sql[end:])
    monkeypatch.setattr(
        pg_schema,
        "MIGRATIONS",
        tuple(hollow if m.version == 8 else m for m in pg_schema.MIGRATIONS),
    )
    store = open_store(migrate_filled(world, dropped), stores)
    assert miscounted(store) != []


def full_width_blocks(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> tuple[PgDatabase, int]:
    """A database at migration 9 whose every (term, class) has a block in migration 9's
    form (as a store packing from one posting makes them), and how many blocks."""
    database, store = fresh(dropped, stores, world, 1, packed=True)
    blocks = block_count(store)
    ninth = next(m for m in pg_schema.MIGRATIONS if m.version == 9)
    pack = ninth.sql[
        ninth.sql.index("CREATE FUNCTION clearance_pack_postings") : ninth.sql.index(
            "-- Emptying the chunks"
        )
    ]
    with psycopg.connect(database.writer_dsn, autocommit=True) as conn:
        conn.execute(
            "DROP FUNCTION clearance_pack_postings, clearance_posting_width; "
            "TRUNCATE posting_blocks; ALTER TABLE posting_blocks DROP COLUMN first_chunk; "
            "DELETE FROM schema_version WHERE version = 10"
        )
        conn.execute(pack.encode())
        conn.execute(
            "SELECT clearance_pack_postings(array_agg(term), array_agg(class_id)) "
            "FROM class_terms WHERE df > 0"
        )
        row = conn.execute(
            "SELECT count(*), bool_and(octet_length(chunks) = 8 * postings) FROM posting_blocks"
        ).fetchone()
    assert row == (blocks, True)
    return database, blocks


def upgraded(database: PgDatabase) -> list[int]:
    with psycopg.connect(database.writer_dsn, autocommit=True) as conn:
        return [m.version for m in pg_schema.upgrade(conn, READER)]


def check_migration_10(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    """Upgraded from full-width blocks of every pair, the same blocks in the new form, read
    by every search."""
    database, blocks = full_width_blocks(world, dropped, stores)
    assert upgraded(database) == [10]
    store = open_store(database, stores, 1)
    assert block_count(store) == blocks and misblocked(store) == []
    same_floats(store)
    assert store.postings_read["rows"] == 0


def test_migration_10_packs_again_every_block_it_finds(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    check_migration_10(world, dropped, stores)


def test_reverse_proof_a_migration_10_that_packs_only_common_pairs_fails_the_same_check(
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenth = next(m for m in pg_schema.MIGRATIONS if m.version == 10)
    common = tenth.sql.replace(
        "INTO terms, classes FROM posting_blocks;",
        "INTO terms, classes FROM class_terms WHERE df >= 256;",
    )
    assert common != tenth.sql
    monkeypatch.setattr(
        pg_schema,
        "MIGRATIONS",
        tuple(
            pg_schema.Migration(10, tenth.name, common) if m.version == 10 else m
            for m in pg_schema.MIGRATIONS
        ),
    )
    with pytest.raises(AssertionError):
        check_migration_10(world, dropped, stores)


# --------------------------------------------------------------------------- blocks follow


def block_count(store: PostgresStore) -> int:
    with store._writer.connection() as conn:
        row = conn.execute("SELECT count(*) FROM posting_blocks").fetchone()
    assert row is not None
    return int(row[0])


def held(first: int, count: int, columns: Sequence[bytes]) -> list[tuple[int, ...]] | None:
    """A block's postings as ``(chunk, tf, length)``, decoded here byte by byte rather
    than by the store's reader; ``None`` when its bytes do not fit its postings."""
    decoded = []
    for column in columns:
        width, rest = divmod(len(column), count)
        if rest or width not in (1, 2, 4, 8):
            return None
        decoded.append(
            [int.from_bytes(column[i : i + width], "big") for i in range(0, len(column), width)]
        )
    gaps, tfs, lengths = decoded
    chunks = list(itertools.accumulate(gaps, initial=first))[1:]
    return list(zip(chunks, tfs, lengths, strict=True))


def misblocked(store: PostgresStore) -> list[tuple[str, int]]:
    """Every block whose version is its (term, class)'s now (totals and deltas summed)
    but which does not hold that pair's postings: what a search would read wrongly."""
    wrong = []
    with store._writer.connection() as conn:
        blocks = conn.execute(
            "WITH versions AS (SELECT term, class_id, sum(changes) AS version FROM "
            "(SELECT term, class_id, changes FROM class_terms UNION ALL "
            "SELECT term, class_id, changes FROM class_term_deltas) u GROUP BY term, class_id) "
            "SELECT b.term, b.class_id, b.first_chunk, b.postings, b.chunks, b.tfs, b.lengths "
            "FROM posting_blocks b JOIN versions v "
            "ON v.term = b.term AND v.class_id = b.class_id AND v.version = b.version"
        ).fetchall()
        for term, class_id, first, count, *columns in blocks:
            rows = conn.execute(
                "SELECT chunk, tf, length FROM postings WHERE term = %s AND class_id = %s "
                "ORDER BY chunk",
                (term, class_id),
            ).fetchall()
            if held(first, count, columns) != [tuple(r) for r in rows]:
                wrong.append((str(term), int(class_id)))
    return wrong


def rewrite_frequencies(store: PostgresStore) -> None:
    """A chunk's term frequencies changed and nothing else: no document frequency moves,
    only the postings' own values."""
    with store.transaction() as db:
        db.execute("UPDATE chunks SET tfs = array_fill(7, ARRAY[cardinality(tfs)]) WHERE id = 1")


def check_current(store: PostgresStore) -> None:
    same_floats(store)
    assert misblocked(store) == []


def test_blocks_a_write_left_stale_are_not_read_until_packed_again(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    _, store = fresh(dropped, stores, world, 1, packed=True)
    check_current(store)
    assert store.postings_read["rows"] == 0
    every_kind_of_write(store)
    rewrite_frequencies(store)
    check_current(store)  # versions in the deltas: the blocks they changed are passed by
    assert store.postings_read["rows"] > 0
    store.fold_class_statistics()
    check_current(store)  # the same versions, folded
    packed = store.pack_postings()
    assert packed["pairs"] > 0 and packed["postings"] > 0
    store.postings_read.clear()
    check_current(store)
    assert store.postings_read["rows"] == 0 and store.postings_read["packed"] > 0


def stale_blocks_read(flt: SearchFilter) -> Any:
    """The leaky variant: every block of the caller's classes, whatever its version."""
    return (
        "SELECT b.term, b.class_id, b.first_chunk, b.postings, b.chunks, b.tfs, b.lengths "
        "FROM posting_blocks b WHERE b.term = ANY (%(terms)s::text[]) AND b.class_id = ANY (%(classes)s::integer[])"
    )


def test_reverse_proof_blocks_read_whatever_their_version_fail_the_same_check(
    world: World,
    dropped: list[PgDatabase],
    stores: list[PostgresStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, store = fresh(dropped, stores, world, 1, packed=True)
    monkeypatch.setattr(pg_search, "packed_postings_sql", lambda: stale_blocks_read(None))
    rewrite_frequencies(store)
    with pytest.raises(AssertionError):
        same_floats(store)


def test_reverse_proof_versions_an_update_does_not_raise_fail_the_same_check(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database, store = fresh(dropped, stores, world, 1, packed=True)
    database.admin("ALTER TABLE chunks DISABLE TRIGGER chunks_counted_again")
    rewrite_frequencies(store)
    assert misblocked(store) != []


def test_a_search_that_read_rows_a_block_could_hold_packs_before_the_next(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database = server().database(always_fresh=True)
    dropped.append(database)
    store = PostgresStore(  # no fold (nor pack) after the writes before the test's searches
        database.reader_dsn,
        database.writer_dsn,
        pack_least=1,
        fold_every_s=3600.0,
        vector_plan=VectorPlan(background=False),
    )
    stores.append(store)
    fill(store, world)
    everyone = CALLERS["everything, confidential too"]
    first = store.lexical_search(WORDS[0], everyone, 5)
    assert store.postings_read == {"rows": store.postings_read["rows"]} and block_count(store) == 0
    assert store.lexical_search(WORDS[0], everyone, 5) == first
    assert store.postings_read["packed"] > 0 and block_count(store) > 0


def test_one_process_packs_at_a_time(filled: PgDatabase, stores: list[PostgresStore]) -> None:
    store = open_store(filled, stores, 1)
    with psycopg.connect(filled.writer_dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (postgres._PACK_LOCK,))
        assert store.pack_postings()["busy"]
    assert "busy" not in store.pack_postings()


def test_emptying_the_chunks_table_empties_the_counts_and_blocks(
    world: World, dropped: list[PgDatabase], stores: list[PostgresStore]
) -> None:
    database, store = fresh(dropped, stores, world, 1, packed=True)
    assert block_count(store) > 0
    database.admin("TRUNCATE chunks")
    assert miscounted(store) == []
    assert block_count(store) == 0
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
    database, store = fresh(dropped, stores, world)
    database.admin(f"ALTER TABLE chunks DISABLE TRIGGER {trigger}")
    every_kind_of_write(store)
    assert miscounted(store) != []


@pytest.mark.parametrize(
    ("closing", "finish", "warned"),
    [(True, False, False), (False, False, True), (True, True, True)],
    ids=["the worker, at close", "the worker, not closing", "close's own last pack"],
)
def test_a_fold_refused_by_close_is_no_failure(
    filled: PgDatabase,
    stores: list[PostgresStore],
    caplog: pytest.LogCaptureFixture,
    closing: bool,
    finish: bool,
    warned: bool,
) -> None:
    """close() waits a few seconds for the maintenance worker, then closes the pools: a
    fold still waiting for a writer connection is refused, which leaves its deltas for the
    next fold and is logged quietly. The same refusal when the store is not closing, or in
    close()'s own last fold and pack, is a warning (the reverse proof that this check sees
    warnings at all)."""
    store = open_store(filled, stores)
    store._closing = closing
    store._writer.close()  # what close() does while the worker still runs
    with caplog.at_level(logging.DEBUG, logger="clearance.store.postgres"):
        store._maintain_quietly(finish=finish)
    records = [r for r in caplog.records if r.name == "clearance.store.postgres"]
    assert len(records) == 1
    assert (records[0].levelno == logging.WARNING) is warned
    assert warned or "stopped at close" in records[0].getMessage()


def test_any_other_failure_while_closing_still_warns(
    filled: PgDatabase,
    stores: list[PostgresStore],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing is when close() causes a refusal, not a reason to hide every error: a fold
    failing in the database while the store closes is a warning."""
    store = open_store(filled, stores)
    store._closing = True

    def broken() -> None:
        raise psycopg.errors.UndefinedFunction("clearance_fold_class_statistics() is missing")

    monkeypatch.setattr(store, "fold_class_statistics", broken)
    with caplog.at_level(logging.DEBUG, logger="clearance.store.postgres"):
        store._maintain_quietly()
    levels = [r.levelno for r in caplog.records if r.name == "clearance.store.postgres"]
    assert levels == [logging.WARNING]
