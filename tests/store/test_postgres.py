"""The PostgreSQL store against a real server: it holds what the embedded store holds,
ranks exactly as it does, and its row-level security is a wall of its own.

Equivalence: the same documents written to both stores give the same documents back, the
same BM25 scores (bit for bit: the SQL computes the same float64 operations in the same
order), the same term statistics, the same facts and the same vector ranking.

Row-level security (the reverse proofs): with the application's SQL filter replaced by
one that admits every document, a search as the reading role still returns only what the
caller's principals, ceiling and the corpus's freshness allow — and the same check does
return the hidden rows once the policies are switched off, so it can fail.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

import factories
from clearance.errors import StoreError
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store import pg_search, postgres
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan
from clearance.store.sqlite import SQLiteStore
from pg import PgDatabase, server

NOW = datetime.now(UTC)
EMBEDDER = HashingEmbedder(dim=16)
WORDS = ("revenue", "margin", "tokyo", "milano", "forecast", "東京", "売上", "report", "plan")
PRINCIPALS = ("everyone", "user:ann", "user:bo", "group:sales")
CORPORA = ("public", "ops", "hr")


@pytest.fixture
def fresh_db() -> Iterator[PgDatabase]:
    """A migrated database whose corpora count as freshly synced."""
    found = server()
    database = found.database(always_fresh=True)
    try:
        yield database
    finally:
        found.drop(database)


@pytest.fixture
def pg_store(fresh_db: PgDatabase) -> Iterator[PostgresStore]:
    store = PostgresStore(fresh_db.reader_dsn, fresh_db.writer_dsn)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def sqlite_store(tmp_path: Any) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "clearance.db")
    try:
        yield store
    finally:
        store.close()


def corpus(seed: int, n: int = 40) -> list[tuple[Document, list[Chunk], list[Fact]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        level = rng.choice([Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL])
        doc = factories.document(
            f"t:doc{i:03d}",
            corpus=rng.choice(CORPORA),
            title=rng.choice(["", "Quarterly report", "東京 plan"]),
            acl=frozenset(rng.sample(PRINCIPALS, rng.randint(0, 2))),
            sensitivity=level,
            expires_at=rng.choice([None, None, NOW - timedelta(days=1)]),
            ai_allowed=rng.random() > 0.1,
            extra={"n": i},
        )
        texts = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(1, 4))
        ]
        chunks = [
            factories.chunk(
                doc, t, ordinal=j, sensitivity=max(level, rng.choice(list(Sensitivity)))
            )
            for j, t in enumerate(texts)
        ]
        facts = [Fact("ACME", "FY2024", "revenue", "total", float(i), "JPY", doc.doc_id, "row=1")]
        out.append((doc, chunks, facts))
    return out


def fill(store: SQLiteStore | PostgresStore, docs: list[tuple[Document, list[Chunk], list[Fact]]]):
    for doc, chunks, facts in docs:
        vectors = [EMBEDDER.embed([c.text])[0] for c in chunks]
        store.upsert(doc, chunks, vectors, facts=facts)


def filters() -> list[SearchFilter]:
    return [
        SearchFilter(frozenset({"everyone"}), now=NOW),
        SearchFilter(frozenset({"user:ann", "group:sales"}), now=NOW),
        SearchFilter(
            frozenset(PRINCIPALS),
            corpora={"public": Sensitivity.CONFIDENTIAL, "ops": Sensitivity.PUBLIC},
            now=NOW,
        ),
        SearchFilter(frozenset({"user:bo"}), max_sensitivity=Sensitivity.PUBLIC, now=NOW),
        SearchFilter(
            frozenset(PRINCIPALS),
            exclude_doc_ids=frozenset({"t:doc001", "t:doc002"}),
            require_ai_allowed=False,
            now=NOW,
        ),
        SearchFilter(frozenset({"nobody"}), now=NOW),
    ]


def test_documents_round_trip_as_in_sqlite(
    pg_store: PostgresStore, sqlite_store: SQLiteStore
) -> None:
    docs = corpus(1, 12)
    for store in (pg_store, sqlite_store):
        fill(store, docs)
        store.set_acls(
            {"t:doc003": frozenset({"user:zed"}), "t:missing": frozenset()},
            synced=("ops", NOW),
            extra={"t:doc004": {"reason": "x", "n": None}},
        )
        assert store.delete("t:doc005")
        assert not store.delete("t:doc005")
    assert pg_store.list_documents() == sqlite_store.list_documents()
    assert pg_store.list_documents("hr") == sqlite_store.list_documents("hr")
    for doc, _, _ in docs:
        assert pg_store.get_document(doc.doc_id) == sqlite_store.get_document(doc.doc_id)
        assert pg_store.get_chunks(doc.doc_id) == sqlite_store.get_chunks(doc.doc_id)
        assert pg_store.list_facts(doc.doc_id) == sqlite_store.list_facts(doc.doc_id)
    ids = [c.chunk_id for _, cs, _ in docs for c in cs][::-1]
    assert pg_store.hits(ids) == sqlite_store.hits(ids)
    assert pg_store.list_facts() == sqlite_store.list_facts()
    assert pg_store.corpora() == sqlite_store.corpora()
    assert pg_store.last_acl_syncs()["ops"] == sqlite_store.last_acl_syncs()["ops"]
    a, b = pg_store.stats(), sqlite_store.stats()
    assert (a.documents, a.chunks, a.vectors, dict(a.by_corpus), dict(a.by_sensitivity)) == (
        b.documents,
        b.chunks,
        b.vectors,
        dict(b.by_corpus),
        dict(b.by_sensitivity),
    )
    text = docs[0][1][0].text
    assert np.array_equal(
        pg_store.vectors_by_text("t:doc000")[text], sqlite_store.vectors_by_text("t:doc000")[text]
    )


def test_meta_and_directory_generation(pg_store: PostgresStore) -> None:
    assert pg_store.get_meta("x") is None
    assert pg_store.directory_if_changed(None) == (0, None)
    pg_store.set_meta("directory", {"users": []})
    generation, value = pg_store.directory_if_changed(None) or (None, None)
    assert value == {"users": []}
    assert pg_store.directory_if_changed(generation) is None
    pg_store.set_meta("directory", {"users": [1]})
    changed = pg_store.directory_if_changed(generation)
    assert changed is not None and changed[1] == {"users": [1]}


@pytest.mark.parametrize("seed", [3, 4])
def test_search_matches_sqlite_exactly(
    pg_store: PostgresStore, sqlite_store: SQLiteStore, seed: int
) -> None:
    """Same data, same filter: the same lexical results with the same scores, the same
    term statistics, facts and vector ranking."""
    docs = corpus(seed)
    fill(pg_store, docs)
    fill(sqlite_store, docs)
    for flt in filters():
        assert pg_store.allowed_doc_ids(flt) == sqlite_store.allowed_doc_ids(flt)
        for query in ("revenue tokyo", "東京の売上", "plan report margin", "absent"):
            assert pg_store.lexical_search(query, flt, 7) == sqlite_store.lexical_search(
                query, flt, 7
            ), (query, flt)
            terms = ["revenu", "tokyo", "東京", "売上", "absent"]
            assert pg_store.term_statistics(terms, flt) == sqlite_store.term_statistics(terms, flt)
        assert pg_store.query_facts(flt, metric="revenue") == sqlite_store.query_facts(
            flt, metric="revenue"
        )
        query = EMBEDDER.embed(["tokyo revenue"])[0]
        ours = pg_store.vector_search(query, flt, 10)
        theirs = sqlite_store.vector_search(query, flt, 10)
        assert [c for c, _ in ours] == [c for c, _ in theirs]
        assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)


def test_hnsw_with_iterative_scan_returns_the_true_top_k_at_low_selectivity(
    fresh_db: PgDatabase,
) -> None:
    """One allowed document among many: the index scan goes on until k rows pass the
    filter, and the result is the exact top-k of the allowed rows."""
    rng = np.random.default_rng(7)
    plan = VectorPlan(approximate=True, exact_below=0, ef_search=40, max_scan_tuples=100_000)
    store = PostgresStore(fresh_db.reader_dsn, fresh_db.writer_dsn, vector_plan=plan)
    try:
        vectors = rng.standard_normal((2000, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for d in range(200):
            acl = frozenset({"user:ann"}) if d == 13 else frozenset({"user:bo"})
            doc = factories.document(f"t:v{d:03d}", corpus="public", acl=acl)
            chunks = factories.chunks(doc, [f"text {i}" for i in range(10)])
            store.upsert(doc, chunks, list(vectors[d * 10 : (d + 1) * 10]))
        fresh_db.admin("ANALYZE")
        flt = SearchFilter(frozenset({"user:ann"}), now=NOW)
        query = rng.standard_normal(16).astype(np.float32)
        got = store.vector_search(query, flt, 5)
        allowed = vectors[130:140]
        cosine = allowed @ query
        expected = [f"t:v013#{i}" for i in np.argsort(-cosine)[:5]]
        assert [c for c, _ in got] == expected
        # and that plan is the index scan with the permission probe as its filter
        sql, params = pg_search.allowed(flt)
        with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            plan_text = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN " + pg_search.hnsw_vector_sql(sql, 16),
                    {**params, "vector": query, "k": 5},
                )
            )
            exact_text = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN " + pg_search.exact_vector_sql(sql),
                    {**params, "vector": query, "k": 5},
                )
            )
        assert "Index Scan using chunks_embedding_16" in plan_text, plan_text
        assert "hashed SubPlan" in plan_text or "hashed" in plan_text.lower(), plan_text
        assert "chunks_embedding_16" not in exact_text, exact_text
    finally:
        store.close()


# ------------------------------------------------------------------ row-level security


def _admit_everything(flt: SearchFilter) -> tuple[str, dict[str, Any]]:
    """A broken application filter: every document, every chunk level."""
    return "SELECT d.key, 3 AS ceiling FROM documents d", {}


def _admit_every_class(flt: SearchFilter) -> tuple[str, dict[str, Any]]:
    """The same broken filter, as the permission classes it admits: all of them."""
    return "SELECT id FROM access_classes ORDER BY id", {}


def _secret_world(store: PostgresStore) -> None:
    """ann may read doc a (INTERNAL, fresh corpus); everything else is hidden from her
    by ACL (b), by sensitivity (c), by a stale corpus (d), or by the sensitivity of the
    chunk alone (e)."""
    rows = [
        ("t:a", "public", frozenset({"user:ann"}), Sensitivity.INTERNAL),
        ("t:b", "public", frozenset({"user:bo"}), Sensitivity.INTERNAL),
        ("t:c", "public", frozenset({"user:ann"}), Sensitivity.RESTRICTED),
        ("t:d", "stale", frozenset({"user:ann"}), Sensitivity.INTERNAL),
        ("t:e", "public", frozenset({"user:ann"}), Sensitivity.INTERNAL),
    ]
    for doc_id, name, acl, level in rows:
        doc = factories.document(doc_id, corpus=name, acl=acl, sensitivity=level)
        # t:e's document is ann's to read, its one chunk is above her ceiling
        above = Sensitivity.RESTRICTED if doc_id == "t:e" else None
        chunk = factories.chunk(doc, "quarterly revenue tokyo", sensitivity=above)
        fact = Fact("ACME", "FY2024", "revenue", "total", 1.0, "JPY", doc_id, "row=1")
        # (a figure is read at its document's level: t:e, the chunk test, has none)
        facts = [] if doc_id == "t:e" else [fact]
        store.upsert(doc, [chunk], [EMBEDDER.embed(["revenue"])[0]], facts=facts)
    store.record_acl_sync("public", datetime.now(UTC))
    store.record_acl_sync("stale", datetime.now(UTC) - timedelta(days=30))


def _leaks(store: PostgresStore) -> set[str]:
    """Every document a search as ann returns, through each read path, beyond ``t:a``;
    ``refused`` when lexical search found its postings and counts at odds (one of them
    let a hidden chunk in, the other not) and failed rather than score."""
    flt = SearchFilter(frozenset({"user:ann", "everyone"}), now=NOW)
    ids = set()
    try:
        found = store.retrieve("revenue tokyo", EMBEDDER.embed(["revenue"])[0], flt, 10)
        ids = {c.split("#")[0] for c, _ in found.lexical + found.vector}
    except StoreError as exc:
        assert "disagree with its counts" in str(exc)
        ids.add("refused")
    ids |= {f.doc_id for f, _ in store.query_facts(flt, metric="revenue")}
    stats = store.term_statistics(["revenu"], flt)
    if stats.chunks > 1 or stats.df.get("revenu", 0) > 1:
        ids.add("statistics")
    # The postings lexical search scores from: a hidden chunk's would take a place in
    # the top k (its row is then refused by the chunks' policy, so only a count shows).
    with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
        posted = {int(r[0]) for r in conn.execute("SELECT DISTINCT chunk FROM postings")}
        packed = {int(r[0]) for r in conn.execute("SELECT class_id FROM posting_blocks")}
    if len(posted) > 1:
        ids.add("postings")
    if len(packed) > 1:  # the same postings, packed by class (migration 9)
        ids.add("blocks")
    return ids - {"t:a"}


_VERSIONED = pg_search.packed_postings_sql


def _missing_version_as_zero() -> str:
    """The leaky variant of the blocks' query: a pair without a visible total at version 0."""
    sql = _VERSIONED()
    leaky = sql.replace("b.version = (SELECT t.changes", "b.version = coalesce((SELECT t.changes")
    leaky = leaky.replace("t.class_id = b.class_id) +", "t.class_id = b.class_id), 0) +", 1)
    assert leaky.count("coalesce") == 2
    return leaky


#: The tables of the permission classes' BM25 statistics (migration 7).
CLASS_STATISTICS = ("class_sizes", "class_size_deltas", "class_terms", "class_term_deltas")
#: The postings lexical search scores from (migration 8), and their blocks (9).
POSTINGS = ("postings",)
BLOCKS = ("posting_blocks",)


@pytest.fixture
def rls_db() -> Iterator[PgDatabase]:
    found = server()
    database = found.database()
    try:
        yield database
    finally:
        found.drop(database)


def test_row_level_security_holds_when_the_application_filter_admits_everything(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(rls_db.reader_dsn, rls_db.writer_dsn, pack_least=1)
    try:
        _secret_world(store)
        store.fold_class_statistics()
        assert store.pack_postings()["pairs"] >= 5  # every class's blocks
        assert _leaks(store) == set()  # the application's filter alone
        monkeypatch.setattr(pg_search, "allowed", _admit_everything)
        monkeypatch.setattr(pg_search, "admitted_classes", _admit_every_class)
        assert _leaks(store) == set()  # the database's wall alone
        # Reverse proofs, one wall at a time: without the postings' policy, the blocks',
        # or the statistics', the broken filter reaches hidden chunks' terms (and lexical
        # search, finding postings and counts at odds, mostly fails); with readable classes
        # judged without their chunks' sensitivity, all three; without every policy, it
        # leaks every row.
        walls = (
            (POSTINGS, {"postings", "refused"}),
            (BLOCKS, {"blocks"}),  # read, a hidden class's block has no current version
            (CLASS_STATISTICS, {"statistics", "refused"}),
        )
        for tables, leaked in walls:
            for table in tables:
                rls_db.admin(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
            assert _leaks(store) == leaked
            for table in tables:
                rls_db.admin(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        # A block packed at version 0 (as migration 9 packs an index) is still never
        # current for a class whose counts the reader cannot see: it has no version there.
        # Reverse proof: a missing version taken as 0 makes the hidden blocks current.
        rls_db.admin("UPDATE posting_blocks SET version = 0")
        rls_db.admin("ALTER TABLE posting_blocks DISABLE ROW LEVEL SECURITY")
        assert _leaks(store) == {"blocks"}
        monkeypatch.setattr(pg_search, "packed_postings_sql", _missing_version_as_zero)
        assert _leaks(store) == {"blocks", "refused"}
        monkeypatch.setattr(pg_search, "packed_postings_sql", _VERSIONED)
        rls_db.admin("ALTER TABLE posting_blocks ENABLE ROW LEVEL SECURITY")
        rls_db.admin(
            "CREATE OR REPLACE VIEW readable_classes WITH (security_invoker = true) AS "
            "SELECT c.id FROM access_classes c WHERE c.acl && (SELECT clearance_principals()) "
            "AND c.doc_sensitivity BETWEEN 0 AND (SELECT clearance_ceiling()) "
            "AND c.corpus IN (SELECT clearance_fresh_corpora())"
        )
        assert _leaks(store) == {"statistics", "postings", "blocks"}
        for table in ("chunks", "facts", "doc_levels", *CLASS_STATISTICS, *POSTINGS, *BLOCKS):
            rls_db.admin(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        assert _leaks(store) == {"t:b", "t:c", "t:d", "t:e", "statistics", "postings", "blocks"}
    finally:
        store.close()


@contextmanager
def _secret_store(database: PgDatabase, pool_size: int = 4) -> Iterator[PostgresStore]:
    """A store on ``database`` holding :func:`_secret_world`, closed afterwards."""
    store = PostgresStore(database.reader_dsn, database.writer_dsn, pool_size=pool_size)
    try:
        _secret_world(store)
        yield store
    finally:
        store.close()


def _ids(found: list[tuple[str, float]]) -> set[str]:
    return {c.split("#")[0] for c, _ in found}


def _search_beside_a_write(store: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A hybrid search as ann during which, after its snapshot was taken, a document
    matching it is written and committed; returns the search's results and the threads
    its lexical half ran on."""
    admitted = PostgresStore._admitted_classes
    lexical = PostgresStore._lexical_by_class
    threads: list[str] = []

    def write_then_admit(conn: Any, flt: SearchFilter) -> list[int]:
        classes = admitted(conn, flt)  # the search's snapshot is taken by now
        if not threads:
            doc = factories.document("t:late", corpus="public", acl=frozenset({"user:ann"}))
            chunk = factories.chunk(doc, "quarterly revenue tokyo")
            store.upsert(doc, [chunk], [EMBEDDER.embed(["revenue"])[0]])
        return classes

    def recording(self: PostgresStore, *args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return lexical(self, *args)

    monkeypatch.setattr(PostgresStore, "_admitted_classes", staticmethod(write_then_admit))
    monkeypatch.setattr(PostgresStore, "_lexical_by_class", recording)
    flt = SearchFilter(frozenset({"user:ann", "everyone"}), now=NOW)
    found = store.retrieve("revenue tokyo", EMBEDDER.embed(["revenue"])[0], flt, 10)
    monkeypatch.setattr(PostgresStore, "_admitted_classes", staticmethod(admitted))
    later = store.retrieve("revenue tokyo", EMBEDDER.embed(["revenue"])[0], flt, 10)
    assert "t:late" in _ids(later.lexical) and "t:late" in _ids(later.vector)  # committed
    return found, threads


def test_a_hybrid_search_reads_both_halves_in_one_snapshot_on_two_connections(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _secret_store(rls_db) as store:
        found, threads = _search_beside_a_write(store, monkeypatch)
        assert threads[0].startswith("clearance-lexical")  # the second connection's
        assert _ids(found.lexical) == _ids(found.vector) == {"t:a"}


def _lexical_in_a_snapshot_of_its_own(
    self: PostgresStore, other: Any, snapshot: str, flt: SearchFilter, lexical: Any
) -> Any:
    """The leaky variant: the second connection takes a snapshot of its own."""
    try:
        with other.transaction():
            other.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            postgres._set_caller(other, flt.principals, flt.max_sensitivity)
            return lexical(other)
    finally:
        self._give_back(other)


def test_reverse_proof_a_second_connection_in_a_snapshot_of_its_own_fails_the_same_check(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _secret_store(rls_db) as store:
        monkeypatch.setattr(PostgresStore, "_lexical_beside", _lexical_in_a_snapshot_of_its_own)
        found, _ = _search_beside_a_write(store, monkeypatch)
        # the lexical half saw the late write, the vector half not
        assert "t:late" in _ids(found.lexical) and "t:late" not in _ids(found.vector)


def test_a_hybrid_search_without_a_free_connection_runs_both_halves_on_its_own(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _secret_store(rls_db, 1) as store:
        found, threads = _search_beside_a_write(store, monkeypatch)
        assert threads[0] == threading.current_thread().name
        assert _ids(found.lexical) == _ids(found.vector) == {"t:a"}


def test_a_failing_vector_half_waits_for_the_lexical_half_and_gives_every_connection_back(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _secret_store(rls_db, 4) as store:
        lexical = PostgresStore._lexical_by_class
        ran: list[str] = []

        def slow(self: PostgresStore, *args: Any) -> Any:
            time.sleep(0.2)  # still running when the vector half fails
            ran.append(threading.current_thread().name)
            return lexical(self, *args)

        def failing(*args: Any) -> Any:
            raise RuntimeError("the vector half failed")

        monkeypatch.setattr(PostgresStore, "_lexical_by_class", slow)
        monkeypatch.setattr(PostgresStore, "_vector", failing)
        flt = SearchFilter(frozenset({"user:ann", "everyone"}), now=NOW)
        with pytest.raises(RuntimeError, match="vector half"):
            store.retrieve("revenue tokyo", EMBEDDER.embed(["revenue"])[0], flt, 10)
        assert ran and ran[0].startswith("clearance-lexical")  # it finished first
        stats = store._reader.get_stats()
        assert stats["pool_available"] == stats["pool_size"]  # every connection back
        assert store._beside_slots.acquire(blocking=False)  # the slot too
        store._beside_slots.release()


def test_a_reader_without_settings_sees_nothing(rls_db: PgDatabase) -> None:
    store = PostgresStore(rls_db.reader_dsn, rls_db.writer_dsn)
    try:
        _secret_world(store)
    finally:
        store.close()
    with psycopg.connect(rls_db.reader_dsn) as conn:
        for table in ("chunks", "facts", "doc_levels", "faq_entries"):
            (count,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone() or (None,)
            assert count == 0, table
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM chunks")


def test_the_faq_policy_is_checked_in_the_database(
    rls_db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.answer.faq import FaqEntry, FaqMatcher, FaqRepository

    store = PostgresStore(rls_db.reader_dsn, rls_db.writer_dsn)
    try:
        repository = FaqRepository(store)
        entry = FaqEntry(
            id="vpn",
            question="What is the VPN?",
            aliases=(),
            answer="Use the corporate VPN.",
            acl=frozenset({"group:it"}),
            sensitivity=Sensitivity.INTERNAL,
        )
        repository.add(entry)
        matcher = FaqMatcher(repository)

        def ask(principals: set[str]) -> FaqEntry | None:
            return matcher.match(
                "what is the vpn",
                frozenset(principals),
                NOW,
                out_of_scope=False,
                has_slots=False,
                ceiling=Sensitivity.CONFIDENTIAL,
            )

        assert ask({"group:it"}) == entry
        assert ask({"user:ann"}) is None
        # A broken application check: the database still refuses ann.
        monkeypatch.setattr(FaqMatcher, "_acl_admits", staticmethod(lambda e, p: True))
        assert ask({"user:ann"}) is None
        rls_db.admin("ALTER TABLE faq_entries DISABLE ROW LEVEL SECURITY")
        assert ask({"user:ann"}) == entry  # reverse proof: without the policy it leaks
    finally:
        store.close()


def test_a_reader_that_can_bypass_the_policies_is_refused(rls_db: PgDatabase) -> None:
    with pytest.raises(StoreError, match="can bypass row-level security"):
        PostgresStore(rls_db.writer_dsn, rls_db.writer_dsn)
    with pytest.raises(StoreError, match="superuser"):
        PostgresStore(rls_db.admin_dsn, rls_db.writer_dsn)


def test_an_old_schema_is_refused_until_upgraded() -> None:
    found = server()
    database = found.database(migrated=False)
    try:
        with pytest.raises(StoreError, match=r"run `clearance db upgrade`") as caught:
            PostgresStore(database.reader_dsn, database.writer_dsn)
        assert "\n" not in str(caught.value)
    finally:
        found.drop(database)


def _chunk_scan(store: PostgresStore, flt: SearchFilter) -> dict[str, Any]:
    """The executed plan node that reads ``chunks`` for a bare ``SELECT`` as the reader:
    only the row policies narrow it."""
    with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) SELECT chunk_id FROM chunks").fetchone()
    assert row is not None
    plan = row[0][0]["Plan"]

    def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    (scan,) = [n for n in nodes(plan) if n.get("Relation Name") == "chunks"]
    return scan


def test_the_row_policies_reach_the_admitted_chunks_through_the_index(
    rls_db: PgDatabase,
) -> None:
    """A caller who may read one document among hundreds, each shared with one person: the
    policy on ``chunks`` (the caller's permission classes) is an index condition, so the
    statement reads that document's rows and not the table."""
    store = PostgresStore(rls_db.reader_dsn, rls_db.writer_dsn)
    try:
        for d in range(400):
            acl = frozenset({"user:ann" if d == 7 else f"user:p{d}"})
            doc = factories.document(f"t:p{d:03d}", corpus="public", acl=acl)
            store.upsert(doc, factories.chunks(doc, [f"text {i} of {d}" for i in range(5)]))
        store.record_acl_sync("public", datetime.now(UTC))
        rls_db.admin("ANALYZE")
        flt = SearchFilter(frozenset({"user:ann"}), now=NOW)
        scan = _chunk_scan(store, flt)
        assert scan["Actual Rows"] == 5
        assert scan["Node Type"] in {"Index Scan", "Bitmap Heap Scan", "Index Only Scan"}, scan
        assert scan.get("Rows Removed by Filter", 0) == 0, scan
        # Reverse proof: the release-1 form of the same policy admits the same rows by
        # reading every row of the table.
        rls_db.admin(
            "ALTER POLICY chunks_reader ON chunks USING (sensitivity BETWEEN 0 AND "
            "clearance_ceiling() AND doc_key IN (SELECT key FROM readable_documents))"
        )
        scan = _chunk_scan(store, flt)
        assert scan["Actual Rows"] == 5
        assert scan["Node Type"] == "Seq Scan" and scan["Rows Removed by Filter"] == 1995, scan
    finally:
        store.close()


def test_only_the_hnsw_opt_in_keeps_an_hnsw_index(fresh_db: PgDatabase) -> None:
    """The exact default never reads a graph, so its writers do not maintain one."""

    def vector_indexes() -> list[str]:
        rows = fresh_db.admin(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' "
            "AND indexname LIKE 'chunks\\_embedding\\_%'"
        )
        return [str(r[0]) for r in rows]

    doc = factories.document("t:one", corpus="public")
    chunks = factories.chunks(doc, ["tokyo revenue"])
    vector = [EMBEDDER.embed(["tokyo revenue"])[0]]
    exact = PostgresStore(fresh_db.reader_dsn, fresh_db.writer_dsn)
    try:
        exact.upsert(doc, chunks, vector)
        assert vector_indexes() == []
    finally:
        exact.close()
    hnsw = PostgresStore(
        fresh_db.reader_dsn, fresh_db.writer_dsn, vector_plan=VectorPlan(approximate=True)
    )
    try:
        hnsw.upsert(doc, chunks, vector)
        dim = len(vector[0])
        assert vector_indexes() == [f"chunks_embedding_{dim}"]
    finally:
        hnsw.close()


def test_a_chunks_row_stays_whole(fresh_db: PgDatabase) -> None:
    """Ranking reads every allowed row's vector, BM25 its terms: both stay in the row, not
    behind the TOAST index, for a chunk whose row passes PostgreSQL's 2 kB threshold."""
    ((storage, options),) = fresh_db.admin(
        "SELECT a.attstorage, c.reloptions FROM pg_attribute a JOIN pg_class c "
        "ON c.oid = a.attrelid WHERE c.relname = 'chunks' AND a.attname = 'embedding'"
    )
    assert storage == "m" and "toast_tuple_target=8160" in options

    def toasted_value_sizes() -> set[int]:
        ((toast,),) = fresh_db.admin(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'chunks'"
        )
        rows = fresh_db.admin(f"SELECT sum(length(chunk_data)) FROM {toast} GROUP BY chunk_id")
        return {int(n) for (n,) in rows}

    vector_bytes = 4 + 384 * 4  # what pgvector stores: dimensions, a reserved word, floats
    # Text and terms each smaller than the vector, all three past the threshold, as with
    # the chunks of real documents.
    words = np.random.default_rng(3).integers(0, 2**40, size=60)
    text = " ".join(f"w{w:x}" for w in words)
    vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
    store = PostgresStore(fresh_db.reader_dsn, fresh_db.writer_dsn)
    try:
        doc = factories.document("t:long", corpus="public")
        store.upsert(doc, factories.chunks(doc, [text]), [vector])
        assert toasted_value_sizes() == set()
        # A chunk larger than a page: its text and terms go out, its vector stays.
        big = factories.document("t:big", corpus="public")
        huge = " ".join(f"w{w:x}" for w in np.random.default_rng(4).integers(0, 2**40, 900))
        store.upsert(big, factories.chunks(big, [huge]), [vector])
        assert toasted_value_sizes() and vector_bytes not in toasted_value_sizes()
        # Reverse proof: with PostgreSQL's and pgvector's own settings the same row as the
        # first one has its vector moved out.
        fresh_db.admin("ALTER TABLE chunks RESET (toast_tuple_target)")
        fresh_db.admin("ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE EXTERNAL")
        other = factories.document("t:long2", corpus="public")
        store.upsert(other, factories.chunks(other, [text]), [vector])
        assert vector_bytes in toasted_value_sizes()
    finally:
        store.close()
