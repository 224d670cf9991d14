"""How wide to walk PostgreSQL's class graphs: recall@10 and latency of the vector search
when every graph is walked at one breadth, against the store's own breadths
(``VectorPlan.breadth``), per caller, on a database ``bench_pg_classes.py`` loaded and kept.

Run from the repository root, after a ``bench_pg_classes.py --keep DIR`` run (its class
graphs stay until its next run; a store that finds none builds them first)::

    .venv/bin/python benchmarks/bench_pg_breadth.py --keep DIR --first 40 --count 80 \\
        --breadths 32 40 64 80 100 160 [--first-breadths 0 16]

Claims ``--first`` to ``--first + --count`` are the queries: the default breadths were
chosen on claims 40-119, and ``bench_pg_classes.py`` times claims from 0, so a check of the
choice runs with ``--first 0 --count 40``. Truth is exact ranking (``VectorPlan()``) over
the same database. Every variant's store is open at once; each runs every query once
untimed, then each query is timed on every variant in turn, the first variant changing
from one query to the next. The
callers are ``bench_pg_classes``'s: a person's small classes (0.1 %), one department
(1 %: every answer lies in one graph, as a query about one department's work would for
any caller), several departments (10 %), and the all-staff class with most departments
(60-100 %).

With ``--first-breadths`` the store's own breadths also run with each graph planned
narrower than the widest walked that wide first, and again as planned only if it gave one
of the top k (``VectorPlan.first_breadth``; 0: every graph walked once, as planned).

Progress goes to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ann_classes import embedded
from bench_pg_classes import (
    K,
    OneBreadth,
    class_plan,
    kept,
    kept_arguments,
    print_vector_table,
    timed_recall,
)
from bench_store import console

from clearance.store.postgres import PostgresStore, VectorPlan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kept_arguments(parser, first=40, count=80)
    parser.add_argument("--breadths", type=int, nargs="*", default=[32, 40, 64, 80, 100, 160])
    parser.add_argument(
        "--first-breadths",
        type=int,
        nargs="*",
        default=[],
        help="also the store's breadths with narrower graphs walked this wide first",
    )
    parser.add_argument("--exact-below", type=int, default=1000)
    parser.add_argument("--largest-graph", type=int, default=100_000)
    args = parser.parse_args()
    server, name, filters, queries, _ = kept(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    _, vectors = embedded(args.scifact)
    default, first = VectorPlan().ef_search, VectorPlan().first_breadth
    if len(set(args.breadths)) < len(args.breadths) or first in args.first_breadths:
        sys.exit("each breadth once, please (the store's own first breadth runs anyway)")
    if len(set(args.first_breadths)) < len(args.first_breadths):
        sys.exit("each first breadth once, please")
    columns = [f"{b} wide" for b in args.breadths]
    columns += [f"by size (ef {default}, {first} wide first)"]
    columns += [
        f"by size, {f} wide first" if f else "by size, each graph walked once"
        for f in args.first_breadths
    ]
    rows: dict[str, dict[str, Any]] = {}
    try:
        plan = class_plan(args.exact_below, default, args.largest_graph)
        store = server.open(name, plan)
        try:
            built = store.refresh_class_graphs()
            console.print(f"class graphs: {built}")
        finally:
            store.close()
        exact = server.open(name, VectorPlan())
        try:
            truth = {
                caller: [[c for c, _ in exact.vector_search(vectors[q], flt, K)] for q in queries]
                for caller, flt in filters.items()
            }
        finally:
            exact.close()
        console.print(f"exact ranking of {len(queries)} claims for {len(filters)} callers")
        plans: list[VectorPlan] = [
            OneBreadth(
                classes=True,
                exact_below=args.exact_below,
                ef_search=b,
                largest_graph=args.largest_graph,
            )
            for b in args.breadths
        ] + [plan]
        plans += [replace(plan, first_breadth=f) for f in args.first_breadths]
        stores: dict[str, PostgresStore] = {}
        try:
            for column, variant in zip(columns, plans, strict=True):
                stores[column] = server.open(name, variant)
            for caller, flt in filters.items():
                searches = {n: s.vector_search for n, s in stores.items()}
                rows[caller] = timed_recall(searches, flt, vectors, queries, truth[caller])
                console.print(f"{caller}: {rows[caller]}")
        finally:
            for store in stores.values():
                store.close()
    finally:
        server.stop()
    print_vector_table(queries, columns, rows)


if __name__ == "__main__":
    main()
