"""PostgreSQL's posting blocks as migration 10 narrows them, against the full-width blocks
of migration 9: each caller's lexical search timed side by side, on a database that
``bench_pg_classes.py`` loaded and kept, with both formats' sizes and packing times.

Run from the repository root, after a ``bench_pg_classes.py --keep DIR`` run::

    .venv/bin/python benchmarks/bench_pg_blocks.py --keep DIR --first 0 --count 40 [--repack]

A database kept under an earlier migration is upgraded first (the upgrade timed: migration
10 packs every block again). The full-width blocks are a copy this benchmark makes and
keeps with the database (``bench_wide_blocks``): for each of the store's blocks, the same
(term, class)'s postings as migration 9 packed them (big-endian int8 chunk ids, int4
frequencies and int4 lengths), with the block's version, under the same row-level policy
and grant. A search on the copy is the store's own with only two things changed: the SQL
that reads blocks names the copy, and the columns are read at full width. Both must give
the same ids and floats for every query.

Queries are SciFact claims ``--first`` to ``--first + --count``; the callers are
``bench_pg_classes``'s. Every query runs once on each format untimed (counting the bytes of
blocks it reads); then each query is timed on both, in turn, the first changing from one
query to the next (``bench_pg_classes.each_way``). With ``--repack`` every block is also
packed again both ways, one after the other: the store's ``pack_postings()`` after its
blocks are emptied, and the copy made again.

Progress goes to stderr; the markdown to stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from bench_backends import READER
from bench_pg_classes import (
    K,
    class_plan,
    each_way,
    kept,
    kept_arguments,
    migrations_digest,
    p50_p95,
    upgraded,
)
from bench_store import console

from clearance.store import pg_search, postgres
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore

WIDE = "bench_wide_blocks"
# Migration 9's columns: chunk ids, frequencies, lengths.
_FULL_WIDTH: tuple[np.dtype[Any], ...] = (np.dtype(">i8"), np.dtype(">i4"), np.dtype(">i4"))


def wide_copy(conn: Any) -> float:
    """Make the full-width copy of every block (dropping an earlier one); seconds taken."""
    started = time.perf_counter()
    conn.execute(f"DROP TABLE IF EXISTS {WIDE}")
    conn.execute(f"CREATE TABLE {WIDE} (LIKE posting_blocks INCLUDING ALL)")
    conn.execute(
        f"INSERT INTO {WIDE} (term, class_id, version, postings, first_chunk, chunks, tfs, "
        "lengths) SELECT b.term, b.class_id, b.version, b.postings, 0, w.chunks, w.tfs, "
        "w.lengths FROM posting_blocks b CROSS JOIN LATERAL (SELECT "
        "string_agg(int8send(p.chunk), ''::bytea ORDER BY p.chunk) AS chunks, "
        "string_agg(int4send(p.tf), ''::bytea ORDER BY p.chunk) AS tfs, "
        "string_agg(int4send(p.length), ''::bytea ORDER BY p.chunk) AS lengths "
        "FROM postings p WHERE p.term = b.term AND p.class_id = b.class_id) w"
    )
    conn.execute(f"ALTER TABLE {WIDE} ENABLE ROW LEVEL SECURITY")
    conn.execute(f"ALTER TABLE {WIDE} FORCE ROW LEVEL SECURITY")
    conn.execute(f"CREATE POLICY {WIDE}_owner ON {WIDE} TO CURRENT_USER USING (true)")
    conn.execute(
        f"CREATE POLICY {WIDE}_reader ON {WIDE} FOR SELECT USING ("
        "class_id IN (SELECT id FROM readable_classes))"
    )
    conn.execute(f"GRANT SELECT ON {WIDE} TO {READER}")
    conn.execute(f"ANALYZE {WIDE}")
    return round(time.perf_counter() - started, 1)


def copy_is_current(conn: Any) -> bool:
    """Whether the copy has the store's blocks' columns and holds exactly their (term,
    class, version)s."""
    columns = (
        "SELECT array_agg(column_name::text ORDER BY column_name) "
        "FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = %s"
    )
    ours = conn.execute(columns, ("posting_blocks",)).fetchone()[0]
    if conn.execute(columns, (WIDE,)).fetchone()[0] != ours:
        return False
    row = conn.execute(
        f"SELECT count(*) FROM posting_blocks b FULL JOIN {WIDE} w "
        "USING (term, class_id, version) WHERE b.term IS NULL OR w.term IS NULL"
    ).fetchone()
    return bool(row and row[0] == 0)


def sizes(conn: Any) -> dict[str, dict[str, float]]:
    """Per format: the table's size with its TOAST and index, and the bytes of its blocks'
    three columns per posting."""
    out = {}
    for label, table in (("narrow", "posting_blocks"), ("wide", WIDE)):
        total, columns, postings = conn.execute(
            f"SELECT pg_total_relation_size('{table}'), "
            "sum(octet_length(chunks) + octet_length(tfs) + octet_length(lengths)), "
            f"sum(postings) FROM {table}"
        ).fetchone()
        out[label] = {
            "MB": round(int(total) / 1e6, 1),
            "bytes_a_posting": round(int(columns) / max(1, int(postings)), 2),
        }
    return out


def _wide_unpacked(term: str, class_id: int, first: int, postings: int, *columns: bytes) -> Any:
    """Migration 9's columns as its reader read them (the search makes them int64 when it
    joins each term's arrays, whatever their form)."""
    return tuple(np.frombuffer(c, dtype=t) for c, t in zip(columns, _FULL_WIDTH, strict=True))


@contextmanager
def wide_blocks() -> Iterator[None]:
    """Lexical search reading the full-width copy instead of the store's blocks."""
    packed, unpacked = pg_search.packed_postings_sql, postgres._unpacked
    sql = packed().replace("FROM posting_blocks b", f"FROM {WIDE} b")
    assert sql != packed()
    pg_search.packed_postings_sql = lambda: sql
    postgres._unpacked = _wide_unpacked
    try:
        yield
    finally:
        pg_search.packed_postings_sql, postgres._unpacked = packed, unpacked


def wide_lexical(store: PostgresStore, query: str, flt: SearchFilter) -> list[Any]:
    with wide_blocks():
        return store.lexical_search(query, flt, K)


@contextmanager
def bytes_counted(into: list[int]) -> Iterator[None]:
    """Add up the bytes of the blocks read (whichever reader is in place) into ``into``."""
    unpacked = postgres._unpacked

    def counting(term: str, class_id: int, first: int, postings: int, *columns: bytes) -> Any:
        into[0] += sum(len(c) for c in columns)
        return unpacked(term, class_id, first, postings, *columns)

    postgres._unpacked = counting
    try:
        yield
    finally:
        postgres._unpacked = unpacked


def per_caller(store: PostgresStore, flt: SearchFilter, queries: list[str]) -> dict[str, Any]:
    read: dict[str, list[float]] = {"narrow": [], "wide": []}
    for query in queries:
        counted = [0]
        with bytes_counted(counted):
            narrow = store.lexical_search(query, flt, K)
        read["narrow"].append(counted[0] / 1e6)
        counted = [0]
        with wide_blocks(), bytes_counted(counted):
            wide = store.lexical_search(query, flt, K)
        read["wide"].append(counted[0] / 1e6)
        if narrow != wide:
            sys.exit(f"the two formats disagree on {query!r}: {narrow} against {wide}")
    times: dict[str, list[float]] = {"narrow": [], "wide": []}
    for i, query in enumerate(queries):
        each_way(
            i,
            [
                (times["narrow"], store.lexical_search, (query, flt, K)),
                (times["wide"], wide_lexical, (store, query, flt)),
            ],
        )
    return {
        label: {"ms": p50_p95(times[label]), "MB": round(median(read[label]), 2)} for label in times
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kept_arguments(parser, first=0, count=40)
    parser.add_argument("--repack", action="store_true", help="time packing every block both ways")
    args = parser.parse_args()
    server, name, filters, asked, claims = kept(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    queries = [claims[q] for q in asked]
    notes: dict[str, Any] = {}
    try:
        found = server.marker(name)
        if found is None or not found.get("loaded"):
            sys.exit(f"{name} under {args.keep} was not loaded whole")
        if found["identity"].get("migrations") != migrations_digest():
            upgrade_s = upgraded(server, name, found)
            if upgrade_s is None:
                sys.exit(f"{name} was loaded under other migrations: run bench_pg_classes.py")
            found["identity"]["migrations"] = migrations_digest()
            found["load"] = {**found["load"], "upgrade_s": upgrade_s}
            server.mark(name, found)
            notes["upgrade_s"] = upgrade_s
        store = server.open(name, class_plan(1000, 40, 100_000))
        try:
            if args.repack:
                with store._writer.connection() as conn:
                    conn.execute("TRUNCATE posting_blocks")
                packed = store.pack_postings()
                with store._writer.connection() as conn:
                    conn.execute("ANALYZE posting_blocks")  # as the copy is
                notes["narrow_pack_s"] = packed["seconds"]
                console.print(f"packed narrow: {packed}")
            else:
                console.print(f"pack: {store.pack_postings()}")
            owner = server.owner(name)
            try:
                if args.repack or not copy_is_current(owner):
                    notes["wide_pack_s"] = wide_copy(owner)
                    console.print(f"copied wide in {notes['wide_pack_s']} s")
                notes["sizes"] = sizes(owner)
            finally:
                owner.close()
            rows = {}
            for caller, flt in filters.items():
                rows[caller] = per_caller(store, flt, queries)
                console.print(f"{caller}: {rows[caller]}")
        finally:
            store.close()
    finally:
        server.stop()
    print(
        f"Claims {args.first}-{args.first + len(queries) - 1} ({len(queries)}): lexical "
        "p50 / p95 (ms), blocks read a query (MB, median)\n"
    )
    print("| caller | narrow (migration 10) | full width (migration 9's form) |")
    print("|---|---|---|")
    for caller, cells in rows.items():
        n, w = cells["narrow"], cells["wide"]
        print(
            f"| {caller} | {n['ms'][0]:.1f} / {n['ms'][1]:.1f}, {n['MB']} MB | "
            f"{w['ms'][0]:.1f} / {w['ms'][1]:.1f}, {w['MB']} MB |"
        )
    s = notes["sizes"]
    print(
        f"\nBlocks: narrow {s['narrow']['MB']} MB ({s['narrow']['bytes_a_posting']} bytes a "
        f"posting), wide {s['wide']['MB']} MB ({s['wide']['bytes_a_posting']})."
    )
    for key in ("upgrade_s", "narrow_pack_s", "wide_pack_s"):
        if key in notes:
            print(f"{key}: {notes[key]}")


if __name__ == "__main__":
    main()
