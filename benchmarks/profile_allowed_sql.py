"""Profile of the allowed-set SQL behind every filtered search (prints, never asserts).

``bench_store.py`` shows the permission predicate compiled by ``SQLiteStore._allowed`` taking
most of a lexical query's time when the filter is *selective*. The predicate is::

    ... AND EXISTS (SELECT 1 FROM doc_acl a WHERE a.doc_key = d.key
                    AND a.principal IN (SELECT value FROM json_each(?)))

SQLite evaluates it by scanning every document and, per document, probing ``doc_acl`` once per
principal until one matches: O(documents × principals) primary-key probes. A filter that admits
few documents probes all ~43 principals of every document; one whose first sorted principal
matches (``group:all``) stops after a couple of probes — so narrow filters are the slow ones.

This script compares it, on the same database and filters as ``bench_store.py``, with an
index-driven form that reads only the ACL rows of the caller's principals through the existing
``doc_acl_principal (principal, doc_key)`` index and looks the documents up by key::

    ... AND d.key IN (SELECT a.doc_key FROM doc_acl a
                      WHERE a.principal IN (SELECT value FROM json_each(?)))

For each filter it prints the query plan of both forms, whether they return the same set, and
p50/p95 latency of (a) the allowed-set query alone and (b) the full ``lexical_search`` SQL with
each form as its ``allowed`` CTE. ``src/`` is not modified: the alternative is a string rewrite of
the SQL the store builds.

Run from the repository root::

    .venv/bin/python benchmarks/profile_allowed_sql.py [--chunks N] [--queries N]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_store import CHUNKS_PER_DOC, SELECTIVITIES, Corpus, ingest, pct, principal_set

from clearance.retrieval.analysis import fts_query
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

CURRENT = (
    " AND EXISTS (SELECT 1 FROM doc_acl a WHERE a.doc_key = d.key"
    " AND a.principal IN (SELECT value FROM json_each(?)))"
)
INDEXED = (
    " AND d.key IN (SELECT a.doc_key FROM doc_acl a"
    " WHERE a.principal IN (SELECT value FROM json_each(?)))"
)
LEXICAL = (
    "WITH allowed AS MATERIALIZED ({allowed}) "
    "SELECT c.chunk_id, bm25(chunks_fts) AS score FROM chunks_fts "
    "JOIN chunks c ON c.id = chunks_fts.rowid "
    "JOIN allowed a ON a.doc_key = c.doc_key "
    "WHERE chunks_fts MATCH ? AND c.sensitivity <= a.ceiling "
    "ORDER BY score, c.id LIMIT ?"
)


def times(fn: Callable[[Any], object], items: Sequence[Any]) -> tuple[float, float]:
    samples = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), pct(samples, 0.95)


def plan(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> str:
    rows = db.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return "; ".join(str(r[-1]) for r in rows)


def compare(
    db: sqlite3.Connection, selector: str, queries: Sequence[str], matches: Sequence[str | None]
) -> tuple[tuple[Any, ...], list[str]] | None:
    flt = SearchFilter(principals=principal_set(selector))
    current, params = SQLiteStore._allowed(flt)
    if CURRENT not in current:
        return None
    indexed = current.replace(CURRENT, INDEXED)
    same = set(db.execute(current, params).fetchall()) == set(
        db.execute(indexed, params).fetchall()
    )

    def allowed(sql: str) -> tuple[float, float]:
        return times(lambda _q: db.execute(sql, params).fetchall(), queries)

    def lexical(sql: str) -> tuple[float, float]:
        full = LEXICAL.format(allowed=sql)
        return times(lambda m: db.execute(full, [*params, m, 50]).fetchall(), matches)

    figures = (allowed(current), allowed(indexed), lexical(current), lexical(indexed), same)
    return figures, [plan(db, current, params), plan(db, indexed, params)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()

    corpus = Corpus.build(args.chunks, args.seed)
    queries = corpus.queries(args.queries)
    matches = [fts_query(q) for q in queries]
    print(f"command: {' '.join(['.venv/bin/python', *sys.argv])}")
    print(f"corpus: {corpus.n_docs} documents × {CHUNKS_PER_DOC} chunks; {len(queries)} queries")
    with tempfile.TemporaryDirectory(prefix="clearance-allowed-sql-") as tmp:
        path = Path(tmp) / "index.db"
        ingest(corpus, path, "ingest lexical only")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        header = (
            f"{'allowed':>8} | {'allowed-set SQL p50/p95 ms':>30} | "
            f"{'lexical_search k=50 p50/p95 ms':>32} | same set"
        )
        print(f"\n{'':>8}   {'current (EXISTS) → indexed (IN)':>30}")
        print(header)
        print("-" * len(header))
        plans: list[str] = []
        for label, selector in SELECTIVITIES:
            row = compare(db, selector, queries, matches)
            if row is None:
                print("SQLiteStore._allowed no longer has the EXISTS form; nothing to compare")
                return
            (cur_allowed, idx_allowed, cur_lex, idx_lex, same), row_plans = row
            print(
                f"{label:>8} | {cur_allowed[0]:6.2f}/{cur_allowed[1]:6.2f} → "
                f"{idx_allowed[0]:6.2f}/{idx_allowed[1]:6.2f} | "
                f"{cur_lex[0]:6.2f}/{cur_lex[1]:6.2f} → {idx_lex[0]:6.2f}/{idx_lex[1]:6.2f} | "
                f"{same}"
            )
            plans = plans or row_plans
        print(f"\nplan, current: {plans[0]}\nplan, indexed: {plans[1]}")
        db.close()


if __name__ == "__main__":
    main()
