"""The filter-inside-search property (test_filter_property.py) on the PostgreSQL store.

The same random corpora and filters, the same oracles: a store holding only what the
filter admits (the embedded store: the PostgreSQL store must return its results bit for
bit, so a document the caller cannot read moves nothing), the plain-Python BM25 and the
numpy brute force. The reverse proofs of those oracles live beside the SQLite property;
here the leaky shapes are the PostgreSQL ones: statistics over every row, and a search
that ranks first and filters after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clearance.store import pg_search
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore
from pg import PgDatabase, server
from store.test_filter_property import (
    ANN,
    ANN_MAY_READ,
    EMBEDDER,
    Corpus,
    check_lexical,
    check_non_interference,
    check_vector,
    constructed_corpus,
    documents,
    fill,
    filters,
    texts,
)


@pytest.fixture(scope="module")
def pg_module_db() -> Iterator[PgDatabase]:
    found = server()
    database = found.database(always_fresh=True)
    try:
        yield database
    finally:
        found.drop(database)


@pytest.fixture(scope="module")
def pg(pg_module_db: PgDatabase) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_module_db.reader_dsn, pg_module_db.writer_dsn, pool_size=1)
    try:
        yield store
    finally:
        store.close()


def refill(store: PostgresStore, corpus: Corpus) -> None:
    """Empty the index (keys restart, so insertion order is key order again) and write
    ``corpus``."""
    with store.transaction() as db:
        db.execute("TRUNCATE documents RESTART IDENTITY CASCADE")
    fill(store, corpus)  # type: ignore[arg-type]


def pg_lexical(store: Any, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
    return list(store.lexical_search(query, flt, k))


def pg_vector(store: Any, vector: Any, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
    return list(store.vector_search(vector, flt, k))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_postgres_search_returns_the_top_k_of_the_allowed_set(
    pg: PostgresStore, data: st.DataObject
) -> None:
    corpus = data.draw(documents(), label="corpus")
    flt = data.draw(filters(corpus), label="filter")
    query = data.draw(texts, label="query")
    k = data.draw(st.sampled_from([3, 1, 2, 6]), label="k")
    refill(pg, corpus)
    assert pg.allowed_doc_ids(flt) == {d.doc_id for d, _ in corpus.docs if flt.admits(d)}
    lexical = check_lexical(pg_lexical, pg, corpus, query, flt, k)  # type: ignore[arg-type]
    vector = check_vector(pg_vector, pg, corpus, query, flt, k)  # type: ignore[arg-type]
    both = pg.retrieve(query, EMBEDDER.embed([query])[0], flt, k)
    assert (both.lexical, both.vector) == (lexical, vector)


@pytest.fixture
def without_policies(pg_module_db: PgDatabase) -> Iterator[None]:
    """Row-level security off on the searched tables for one test: the leaky shapes below
    are also hidden by the policies, which would make their reverse proofs vacuous."""
    tables = ("chunks", "doc_levels")
    for table in tables:
        pg_module_db.admin(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    try:
        yield
    finally:
        for table in tables:
            pg_module_db.admin(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")


def test_statistics_over_every_row_are_caught(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, pg_module_db: PgDatabase
) -> None:
    """Reverse proof: BM25 whose N and document frequencies count every document (the
    filter applied only to the rows ranked) fails the non-interference oracle — once the
    policies are off; with them on, the database's wall keeps the statistics honest."""
    corpus = constructed_corpus()
    refill(pg, corpus)
    check_non_interference(pg_lexical, pg, corpus, "revenue", ANN, 2)  # type: ignore[arg-type]
    honest = pg_search.bm25_sql

    def global_statistics(allowed_sql: str, *args: Any) -> str:
        everything = "SELECT d.key, 3 AS ceiling FROM documents d"
        sql = honest(everything, *args)
        # rank only the caller's rows, with statistics over everything
        return sql.replace(
            "FROM matched m JOIN idf",
            f"FROM matched m JOIN ({allowed_sql}) mine ON mine.key = "
            "(SELECT doc_key FROM chunks WHERE id = m.id) JOIN idf",
        )

    monkeypatch.setattr(pg_search, "bm25_sql", global_statistics)
    check_non_interference(pg_lexical, pg, corpus, "revenue", ANN, 2)  # type: ignore[arg-type]
    for table in ("chunks", "doc_levels"):
        pg_module_db.admin(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    try:
        got = pg.lexical_search("revenue", ANN, 2)
        assert [c for c, _ in got] == ANN_MAY_READ  # the same chunks, other scores
        with pytest.raises(AssertionError):
            check_non_interference(pg_lexical, pg, corpus, "revenue", ANN, 2)  # type: ignore[arg-type]
    finally:
        for table in ("chunks", "doc_levels"):
            pg_module_db.admin(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")


def test_rank_then_filter_is_caught(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, without_policies: None
) -> None:
    """Reverse proof: a vector search that ranks every row and keeps the allowed ones
    among the first k returns fewer than k, and the vector oracle rejects it."""
    corpus = constructed_corpus()
    refill(pg, corpus)
    check_vector(pg_vector, pg, corpus, "revenue", ANN, 2)  # type: ignore[arg-type]
    honest = pg_search.exact_vector_sql

    def rank_then_filter(allowed_sql: str) -> str:
        everything = honest("SELECT d.key, 3 AS ceiling FROM documents d")
        return (
            f"WITH ranked AS ({everything}) SELECT r.chunk_id, r.score FROM ranked r "
            f"WHERE r.chunk_id IN (SELECT c.chunk_id FROM chunks c JOIN ({allowed_sql}) a "
            "ON a.key = c.doc_key) ORDER BY r.score DESC"
        )

    monkeypatch.setattr(pg_search, "exact_vector_sql", rank_then_filter)
    with pytest.raises(AssertionError):
        check_vector(pg_vector, pg, corpus, "revenue", ANN, 2)  # type: ignore[arg-type]
