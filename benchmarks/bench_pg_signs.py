"""Would sign codes make PostgreSQL's vector search fast for wide callers? The store's
class graphs against a cut by sign codes held in the searching process, rescored exactly
by PostgreSQL, per caller, on a database ``bench_pg_classes.py`` loaded and kept.

Run from the repository root, after a ``bench_pg_classes.py --keep DIR`` run::

    .venv/bin/python benchmarks/bench_pg_signs.py --keep DIR --first 0 --count 40 \\
        --rescore 1000 2000 4000 8000

What the sign variant does for a caller, as the embedded store's ``vector_search =
"signs"`` does (``clearance.store.signs``), but with the vectors left in PostgreSQL:

1. the process holds the sign codes (one bit a dimension, 48 bytes a chunk) of every
   class that has a graph, made here once from the chunks' vectors (the load is timed);
2. a search counts the Hamming distance to the query of every chunk of the caller's
   coded classes, one class at a time, and keeps the ``--rescore`` nearest of them all
   (and their ties: ``nearest_by_signs``);
3. PostgreSQL scores the kept chunks exactly (a lookup by row id, as the reading role in
   the caller's transaction, under the row policy), and ranks the classes without codes
   exactly (``class_graphs_vector_sql`` with no graphs), in the same statement's snapshot;
4. the best ``k`` of both, best first, ties by row.

Nothing here keeps the codes current: that is the part a store would have to build (a
class's codes are valid only while its chunks are the ones they were made from). This
benchmark measures what the cut and the rescoring cost and find, before building it.

Truth is exact ranking (``VectorPlan()``) over the same database; each query runs on
every variant in turn, the first variant changing from one query to the next, after one
untimed pass. Progress goes to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ann_classes import embedded
from bench_pg_classes import (
    K,
    PgServer,
    Search,
    kept,
    kept_arguments,
    print_vector_table,
    timed_recall,
)
from bench_store import console

from clearance.store import pg_search
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan
from clearance.store.signs import Words, hamming, nearest_by_signs, sign_words

DIM = 384
# One class's codes: its chunks' row ids, ascending, and their sign words.
Codes = dict[int, tuple[npt.NDArray[np.int64], Words]]


def load_codes(server: PgServer, name: str, classes: list[int]) -> tuple[Codes, float]:
    """The sign codes of every chunk of ``classes`` (as the owner, reading the vectors in
    binary), and the seconds it took."""
    t0 = time.perf_counter()
    codes: Codes = {}
    conn = server.owner(name)
    try:
        for cid in classes:
            cur = conn.cursor(binary=True)
            cur.execute(
                "SELECT id, embedding FROM chunks WHERE class_id = %s "
                "AND vector_dims(embedding) = %s ORDER BY id",
                (cid, DIM),
            )
            rows = cur.fetchall()
            ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
            vectors = np.stack([r[1].to_numpy() for r in rows]).astype(np.float32)
            codes[cid] = (ids, sign_words(vectors))
            console.print(f"codes of class {cid}: {len(rows):,} chunks")
    finally:
        conn.close()
    return codes, time.perf_counter() - t0


def by_signs(store: PostgresStore, codes: Codes, rescore: int) -> Search:
    """A vector search of ``store`` whose coded classes are cut by signs and rescored."""

    def search(vector: Any, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with store._searching(flt) as conn:
            admitted = store._admitted_classes(conn, flt)
            coded = [c for c in admitted if c in codes]
            rest = [c for c in admitted if c not in codes]
            rows: list[Any] = []
            args = {"vector": query, "k": k, "excluded": []}
            if coded:
                # The planner, sizing the caller's classes from the row policy at a few
                # rows, would AND a bitmap of all their chunks (740,000 for the widest
                # caller: 150 ms) with the few ids; it is to look the ids up instead.
                conn.execute("SET LOCAL enable_bitmapscan = off")
                ids = np.concatenate([codes[c][0] for c in coded])
                distance = np.concatenate([hamming(codes[c][1], query) for c in coded])
                kept_rows = nearest_by_signs(distance, np.arange(ids.size), max(k, rescore))
                rows += conn.execute(
                    "SELECT c.chunk_id, -(c.embedding <#> %(vector)s::vector) AS score, c.id "
                    "FROM chunks c WHERE c.id = ANY (%(ids)s)",
                    {**args, "ids": ids[kept_rows].tolist()},
                ).fetchall()
            if rest:
                conn.execute("SET LOCAL enable_bitmapscan = on")
                sql = pg_search.class_graphs_vector_sql({}, rest, DIM)
                rows += [(r[0], r[1], r[2]) for r in conn.execute(sql, args)]
        rows.sort(key=lambda r: (-float(r[1]), int(r[2])))
        return [(str(r[0]), float(r[1])) for r in rows[:k]]

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kept_arguments(parser, first=0, count=40)
    parser.add_argument("--rescore", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    args = parser.parse_args()
    if len(set(args.rescore)) < len(args.rescore) or min(args.rescore) < K:
        sys.exit(f"each --rescore once, and at least {K}")
    server, name, filters, queries, _ = kept(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    _, vectors = embedded(args.scifact)
    graphs_column = "class graphs (the store's plan)"
    columns = [graphs_column] + [f"signs, {r} rescored" for r in args.rescore]
    rows: dict[str, dict[str, Any]] = {}
    try:
        graphs = server.open(name, replace(VectorPlan(), classes=True))
        exact = server.open(name, VectorPlan())
        try:
            with graphs._searching(filters[list(filters)[-1]]) as conn:
                graphed = sorted((graphs._usable_graphs(conn, DIM) or {}).keys())
            if not graphed:
                sys.exit("the kept database has no class graphs (run bench_pg_breadth.py first)")
            codes, load_s = load_codes(server, name, graphed)
            words = sum(w.nbytes for _, w in codes.values())
            coded = sum(i.size for i, _ in codes.values())
            console.print(f"codes of {coded:,} chunks ({words / 1e6:.1f} MB) in {load_s:.1f} s")
            searches: dict[str, Search] = {graphs_column: graphs.vector_search}
            for r, column in zip(args.rescore, columns[1:], strict=True):
                searches[column] = by_signs(graphs, codes, r)
            for caller, flt in filters.items():
                truth = [[c for c, _ in exact.vector_search(vectors[q], flt, K)] for q in queries]
                rows[caller] = timed_recall(searches, flt, vectors, queries, truth)
                console.print(f"{caller}: {rows[caller]}")
        finally:
            graphs.close()
            exact.close()
    finally:
        server.stop()
    print_vector_table(
        queries,
        columns,
        rows,
        f". Codes of the {len(graphed)} classes with graphs: {coded:,} chunks, "
        f"{words / 1e6:.1f} MB, made in {load_s:.1f} s from their vectors",
    )


if __name__ == "__main__":
    main()
