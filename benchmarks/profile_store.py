"""Profile of where ``bench_store.py``'s filtered searches spend time (prints, never asserts).

Three sections, each comparing two ways of doing one step, on the same database, filters and
queries as ``bench_store.py`` (``src/`` is not modified; alternatives are SQL rewrites or
separate interpreters):

1. the ACL test inside the allowed-set SQL of ``SQLiteStore._allowed``, in two forms —
   correlated ``EXISTS``, which SQLite runs as a scan of every document probing ``doc_acl``
   once per principal (re-reading the ``json_each`` list each time), so narrow filters cost
   O(documents × principals)::

       EXISTS (SELECT 1 FROM doc_acl a WHERE a.doc_key = d.key
               AND a.principal IN (SELECT value FROM json_each(?)))

   and index-driven ``IN``, which reads only the caller's ACL rows through the
   ``doc_acl_principal (principal, doc_key)`` index and looks documents up by key::

       d.key IN (SELECT a.doc_key FROM doc_acl a
                 WHERE a.principal IN (SELECT value FROM json_each(?)))

   Whichever form the store currently builds is rewritten into the other; for each filter the
   script prints whether both return the same set, p50/p95 of the allowed-set query alone and of
   the full ``lexical_search`` SQL with each form as its ``allowed`` CTE, and both query plans;
2. the FTS5 OR-query without any permission filter: store-style ranking vs ``ORDER BY rank``,
   before and after merging the index segments (``'optimize'``);
3. the exact vector scan: 100k × 384 float32 matrix-vector products with OpenBLAS's default
   threads vs one thread (each in a fresh interpreter, since the thread count is fixed at load).

Run from the repository root::

    .venv/bin/python benchmarks/profile_store.py [--chunks N] [--queries N]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
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

EXISTS = (
    "EXISTS (SELECT 1 FROM doc_acl a WHERE a.doc_key = d.key"
    " AND a.principal IN (SELECT value FROM json_each(?)))"
)
INDEXED = (
    "d.key IN (SELECT a.doc_key FROM doc_acl a"
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
    store_sql, params = SQLiteStore._allowed(flt)
    if EXISTS in store_sql:
        current, indexed = store_sql, store_sql.replace(EXISTS, INDEXED)
    elif INDEXED in store_sql:
        current, indexed = store_sql.replace(INDEXED, EXISTS), store_sql
    else:
        return None
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
        form = (
            "IN" if INDEXED in SQLiteStore._allowed(SearchFilter(frozenset({"x"})))[0] else "EXISTS"
        )
        print(f"\nthe store currently builds the {form} form")
        print(f"\n{'':>8}   {'EXISTS → IN':>30}")
        print(header)
        print("-" * len(header))
        plans: list[str] = []
        for label, selector in SELECTIVITIES:
            row = compare(db, selector, queries, matches)
            if row is None:
                print("SQLiteStore._allowed has neither known ACL form; nothing to compare")
                return
            (cur_allowed, idx_allowed, cur_lex, idx_lex, same), row_plans = row
            print(
                f"{label:>8} | {cur_allowed[0]:6.2f}/{cur_allowed[1]:6.2f} → "
                f"{idx_allowed[0]:6.2f}/{idx_allowed[1]:6.2f} | "
                f"{cur_lex[0]:6.2f}/{cur_lex[1]:6.2f} → {idx_lex[0]:6.2f}/{idx_lex[1]:6.2f} | "
                f"{same}"
            )
            plans = plans or row_plans
        print(f"\nplan, EXISTS: {plans[0]}\nplan, IN:     {plans[1]}")
        db.close()
        fts_profile(path, matches)
    blas_profile(corpus.n_chunks)


_MATVEC = """
import statistics, time, numpy as np
m = np.random.default_rng(1).standard_normal(({n}, 384), dtype=np.float32)
q = np.random.default_rng(2).standard_normal((100, 384), dtype=np.float32)
for i in range(5):
    m @ q[i]
t = []
for i in range(100):
    s = time.perf_counter(); m @ q[i]; t.append((time.perf_counter() - s) * 1000)
t.sort()
print(f"{{statistics.median(t):.2f}} / {{t[94]:.2f}}")
"""


def blas_profile(n: int) -> None:
    """Exact scan cost with OpenBLAS's default thread count vs one thread."""
    print(f"\nexact scan, {n} × 384 float32 matrix @ query (p50 / p95 ms, 100 queries):")
    for label, threads in (("OpenBLAS default threads", None), ("OPENBLAS_NUM_THREADS=1", "1")):
        env = dict(os.environ)
        env.pop("OPENBLAS_NUM_THREADS", None)
        if threads:
            env["OPENBLAS_NUM_THREADS"] = threads
        out = subprocess.run(
            [sys.executable, "-c", _MATVEC.format(n=n)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"  {label:<28} {out.stdout.strip() or out.stderr.strip()[-200:]}")


def fts_profile(path: Path, matches: Sequence[str | None]) -> None:
    """The unfiltered FTS5 part: store-style ranking vs ``ORDER BY rank``, before and after
    merging the index segments that 10,000 one-document transactions leave behind."""
    store_like = (
        "SELECT c.chunk_id, bm25(chunks_fts) AS score FROM chunks_fts "
        "JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ? "
        "ORDER BY score, c.id LIMIT 50"
    )
    by_rank = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 50"
    count = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?"
    db = sqlite3.connect(str(path))
    print("\nFTS5 OR-query, no permission filter (p50/p95 ms):")
    for stage in ("as ingested", "after 'optimize'"):
        if stage != "as ingested":
            start = time.perf_counter()
            db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")
            db.commit()
            print(f"  'optimize' took {time.perf_counter() - start:.1f} s")
        segments = db.execute("SELECT count(*) FROM chunks_fts_data").fetchone()[0]
        rows = {
            "bm25 + join chunks, top 50 (store)": store_like,
            "ORDER BY rank, top 50": by_rank,
            "count(*) of matches": count,
        }
        print(f"  {stage} ({segments} rows in chunks_fts_data):")
        for name, sql in rows.items():
            p50, p95 = times(lambda m, sql=sql: db.execute(sql, (m,)).fetchall(), matches)
            print(f"    {name:<36} {p50:7.2f} / {p95:7.2f}")
    db.close()


if __name__ == "__main__":
    main()
