"""The PostgreSQL store: the same :class:`~clearance.store.base.Store` as the embedded one,
for indexes too large for one process, and for several servers sharing one index.

Two roles, two connection pools:

* the **writer** owns the schema (``clearance db upgrade`` runs as it) and does every
  write: ingest, ACL sync, traces, tokens, sessions; operators' reads go through it too;
* the **reader** runs the request path's searches (chunks, facts, FAQ entries). It is not
  the tables' owner and cannot bypass row-level security, so every search runs in a
  read-only transaction that first sets the caller's principal set and sensitivity
  ceiling (:meth:`PostgresStore._as_caller`); the policies of the schema then admit only
  rows that the caller's ACL, ceiling and the corpus's freshness allow, whatever the
  query's own filter says. Opening refuses a reader that could bypass them.

Search runs in the database, with the filter inside each query (:mod:`.pg_search`). The
schema is versioned (:mod:`.pg_schema`); a store opened on an older schema refuses to run.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.sql import SQL, Composed, Identifier, Literal
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from clearance.analysis import document_terms
from clearance.errors import StoreError
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store import pg_schema, pg_search
from clearance.store.base import Retrieved, SearchFilter, SqlConnection, TermStatistics, Vector
from clearance.store.memory import BM25, bm25_weights, top_k
from clearance.store.pg_connection import QmarkConnection
from clearance.store.rows import (
    CHUNK_COLUMNS,
    SqlStore,
    allowed_facts_sql,
    check_upsert,
    chunk_row,
    delete_document,
    insert_document,
    insert_facts,
    marks,
    merge_patch,
    refuse_other_width,
)

__all__ = ["PostgresStore", "VectorPlan", "connect_writer"]

_log = logging.getLogger(__name__)

_DIRECTORY_META = "directory"


# How wide a search first walks a class graph planned narrower than its widest ones
# (``VectorPlan.first_breadth``); it walks one again as planned only if its class gave one
# of the top k. Chosen on claims 40-119 at 1M chunks (benchmarks/RESULTS.md): 16 lost
# recall (0.988 for the widest caller); 32 kept it above 0.99 (0.996, against 0.998 with
# every graph walked once; 1.0 on held-out claims) and saved the widest caller about a
# tenth of its vector search.
_FIRST_BREADTH = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorPlan:
    """How vector search ranks: exactly (the default), through one HNSW index over every
    chunk (``approximate``), or through a graph per permission class (``classes``).

    Without either, every search ranks the allowed rows exactly: the true top-k, and
    nothing the caller cannot read changes it. With ``approximate`` the index serves
    large allowed sets; its graph is built over every chunk, so which neighbours a scan
    finds may depend on chunks the caller cannot read (docs/search.md). Below
    ``exact_below`` allowed chunks, or when the index would have to visit more than half
    of ``max_scan_tuples`` rows to expect ``k`` allowed ones, the exact plan runs anyway: it
    is then both cheaper and exact.

    With ``classes`` every permission class of ``exact_below`` chunks or more gets a
    graph of its own (a partial HNSW index, ``ef_construction`` at build, ``ef_search``
    at search), made by :meth:`PostgresStore.refresh_class_graphs`; a search walks a
    class's graph only when the caller may read the whole class, so no graph it walks
    holds a row the caller cannot read. A class of more than ``largest_graph`` chunks is
    split into as many graphs as it takes to hold about that many each (a hash of each
    chunk's own id deals them; at most 64 graphs), all walked by a search of the class:
    one graph over a very large, dense class misses neighbours that its parts' graphs
    find. A graph of ``largest_graph`` chunks is walked ``ef_search`` wide, a smaller one
    narrower (:meth:`breadth`). A graph planned wider than ``first_breadth`` but narrower
    than the widest of a search is walked ``first_breadth`` wide first (``k`` if more),
    and again as planned only if its class gave one of the top k so far (0: every graph
    walked once, as planned). The graphs are refreshed on a worker thread at most every
    ``refresh_s`` seconds while the store searches (``background=False``: in the search
    that finds them due, before it starts; the search's packing of posting blocks,
    :meth:`PostgresStore.pack_postings`, likewise)."""

    approximate: bool = False
    classes: bool = False
    exact_below: int = 20_000
    ef_search: int = 160
    ef_construction: int = 128
    max_scan_tuples: int = 50_000
    largest_graph: int = 100_000
    refresh_s: float = 60.0
    background: bool = True
    first_breadth: int = _FIRST_BREADTH

    def parts(self, chunks: int) -> int:
        """Into how many graphs a class of ``chunks`` chunks is split: about
        ``largest_graph`` chunks each (a hash deals them), and never more than
        :data:`_MOST_PARTS` graphs, since every insert checks each graph's condition."""
        return min(_MOST_PARTS, max(1, -(-chunks // max(1, self.largest_graph))))

    def keeps(self, chunks: int, parts: int) -> bool:
        """Whether a class of ``chunks`` chunks keeps graphs split ``parts`` ways: while its
        parts hold ``largest_graph`` chunks or fewer on average (more once the class has
        :data:`_MOST_PARTS`) and it has at most one part more than it needs, so a class
        that shrank back across a boundary is not rebuilt at every refresh."""
        needed = self.parts(chunks)
        return needed <= parts <= min(_MOST_PARTS, needed + 1)

    def breadth(self, chunks: int, k: int, allowed: int | None = None) -> int:
        """How many candidates a walk of one class graph of ``chunks`` chunks keeps
        (pgvector's ``hnsw.ef_search``) for a caller who may read ``allowed`` chunks:
        ``ef_search`` for a graph of ``largest_graph`` chunks or of all the caller's, and
        for a smaller one its share of the smaller of the two, but at least
        :data:`_BREADTH_PER_RESULT` candidates per result asked for (and
        :data:`_LEAST_BREADTH`), and never more than ``ef_search`` (or ``k``, if more). A walk
        of a smaller graph reaches its nearest rows sooner, and one holding most of what the
        caller reads is where most of the caller's top ``k`` lie; the floor serves a query
        whose top ``k`` all lie in one small graph. Rounded up to ``ef_search`` halved a
        whole number of times, so that a search runs one statement per breadth and few of
        them. With ``ef_search`` at least ``largest_graph`` a class in one graph is walked
        whole. Both sizes are counts of rows the caller may read."""
        widest = min(max(self.ef_search, k), _EF_SEARCH_MAX)
        whole = max(1, self.largest_graph if allowed is None else min(self.largest_graph, allowed))
        share = -(-self.ef_search * max(0, chunks) // whole)
        wanted = max(_BREADTH_PER_RESULT * k, _LEAST_BREADTH, share)
        breadth = widest
        while breadth // 2 >= wanted:
            breadth //= 2
        return breadth

    def exact(self, allowed: int, total: int, k: int) -> bool:
        if not self.approximate or allowed <= self.exact_below or allowed <= k:
            return True
        return k * total / allowed > self.max_scan_tuples / 2


# Held while one process refreshes the class graphs: two servers build each graph once.
_GRAPHS_LOCK = 0x436C_6561_7201
# The most graphs one class is split into (``VectorPlan.parts``).
_MOST_PARTS = 64
# pgvector's largest hnsw.ef_search.
_EF_SEARCH_MAX = 1000
# The narrowest walk of a class graph (``VectorPlan.breadth``): this many candidates per
# result asked for, and never fewer than _LEAST_BREADTH. A department's graph (about
# 15,000 chunks) holding all of a query's top 10 gave them at recall@10 0.975-0.983 walked
# 40 wide, 0.993-0.995 at 80 (benchmarks/RESULTS.md); class sizes say nothing of where a
# query's answers lie, so every graph is walked wide enough to give all k of them.
_BREADTH_PER_RESULT = 8
_LEAST_BREADTH = 32
# The "hnsw" setting's graph over every chunk: this prefix and the vector width.
_GLOBAL_GRAPH = "chunks_embedding_"
_CLASS_GRAPH = re.compile(r"^chunks_class_([0-9]+)_([0-9]+)(?:_([0-9]+)of([0-9]+))?$")
# Held while one process packs posting blocks.
_PACK_LOCK = 0x436C_6561_7203
# A (term, class) with this many postings or more is packed into a block (migration 9
# packs the same on upgrade): below it, reading the rows costs little more than the block.
_PACK_LEAST = 256
# Postings packed per statement (migration 10 packs a batch of pairs in one, which reads
# one snapshot): a batch bounds how long the packer goes between looking at the store
# closing, and how much one statement holds.
_PACK_BATCH = 2_000_000
# How long a hybrid search waits for a second reading connection before it runs its
# lexical and vector halves one after the other on its own (seconds).
_BESIDE_WAIT_S = 0.002
# The least time between the packs the store starts by itself (seconds).
_PACK_EVERY_S = 60.0
# How often writes fold the class statistics' deltas into their totals (seconds).
_FOLD_S = 10.0
# Chunks written per INSERT: one statement per batch, so the statistics triggers append
# one delta per class and term that the batch touches, not one per chunk.
_CHUNKS_PER_INSERT = 1_000
_BM25 = BM25()
# What every search's transaction sets (``PostgresStore._searching`` says why).
_NO_NESTED_LOOPS = "SET LOCAL enable_nestloop = off"
# Postings read row by row (``pg_search.posting_rows_sql``): chunk ids, term frequencies,
# chunk lengths, as int8send and int4send write them.
_PACKED = (np.dtype(">i8"), np.dtype(">i4"), np.dtype(">i4"))
# A posting block's columns, by width: unsigned big-endian integers (migration 10).
_WIDTHS = {width: np.dtype(f">u{width}") for width in (1, 2, 4, 8)}


@dataclass(frozen=True, slots=True)
class _Graph:
    """What a class graph's index name says: the class, the vector width, and which of
    the class's ``parts`` graphs it is."""

    name: str
    class_id: int
    width: int
    part: int
    parts: int


def _graph_of(name: str) -> _Graph:
    found = _CLASS_GRAPH.fullmatch(name)
    if found is None:
        raise StoreError(f"not a class graph: {name!r}")
    part, parts = (0, 1) if found[3] is None else (int(found[3]), int(found[4]))
    return _Graph(name, int(found[1]), int(found[2]), part, parts)


def _is_class_graph(name: str) -> bool:
    """Whether ``name`` is one :func:`pg_search.class_graph_name` gives (so the index is
    one this store made, with the predicate that name says): no leading zeros, no
    ``_0of1`` for an unsplit class, no part past its split."""
    if _CLASS_GRAPH.fullmatch(name) is None:
        return False
    graph = _graph_of(name)
    canonical = pg_search.class_graph_name(graph.class_id, graph.width, graph.part, graph.parts)
    return canonical == name and graph.part < graph.parts


def _drop_index(conn: psycopg.Connection[Any], name: str) -> None:
    """``DROP INDEX CONCURRENTLY`` of an index found in the catalogue, its name quoted."""
    conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(Identifier(name)))


def _whole(parts: int, present: Iterable[int]) -> bool:
    """Whether every part of a split in ``parts`` has its graph among ``present``."""
    return set(present) == set(range(parts))


def _whole_splits(graphs: Sequence[_Graph]) -> dict[int, int]:
    """Per class, the split of which every part has a graph here (the widest, when a
    refresh left two; either holds only the class's rows)."""
    found: dict[tuple[int, int], set[int]] = {}
    for g in graphs:
        found.setdefault((g.class_id, g.parts), set()).add(g.part)
    whole: dict[int, int] = {}
    for (cid, parts), have in sorted(found.items()):
        if _whole(parts, have):
            whole[cid] = parts
    return whole


def _class_changes(conn: psycopg.Connection[Any]) -> tuple[int, str]:
    """What the worker compares to know whether the class graphs may need a refresh: how
    often a chunk's class was set (migration 6's counter, moved by a write when it
    happens, before it commits) and a digest of every class's committed size (migration
    7's counts, which a deletion changes too). A refresh that counted the classes while a
    write was open saw the counter move but not the write's rows; the digest changes when
    they commit, so the next refresh runs."""
    row = conn.execute(
        "SELECT (SELECT last_value FROM clearance_class_changes), "
        "(SELECT md5(coalesce(string_agg(s.class_id || ':' || s.chunks, ',' "
        "ORDER BY s.class_id), '')) FROM (SELECT u.class_id, sum(u.chunks) AS chunks FROM "
        "(SELECT class_id, chunks FROM class_sizes UNION ALL "
        "SELECT class_id, chunks FROM class_size_deltas) u "
        "GROUP BY u.class_id HAVING sum(u.chunks) <> 0) s)"
    ).fetchone()
    return (0, "") if row is None else (int(row[0]), str(row[1]))


def _analysed(text: str) -> tuple[int, list[str], list[int]]:
    """A text's length in index terms, its distinct terms (sorted) and their frequencies."""
    found = document_terms(text)
    counts = sorted(Counter(found).items())
    return len(found), [t for t, _ in counts], [n for _, n in counts]


def _caller_settings(principals: frozenset[str], ceiling: Sensitivity) -> Composed:
    """The statement that sets the caller's principal set and ceiling for this transaction
    only: what the row-level policies admit."""
    return SQL(
        "SELECT set_config('clearance.principals', {}, true), "
        "set_config('clearance.ceiling', {}, true)"
    ).format(Literal(json.dumps(sorted(principals))), Literal(str(int(ceiling))))


def _set_caller(
    conn: psycopg.Connection[Any], principals: frozenset[str], ceiling: Sensitivity
) -> None:
    conn.execute(_caller_settings(principals, ceiling))


def _unpacked(term: str, class_id: int, first: int, postings: int, *columns: bytes) -> Any:
    """The chunk ids, term frequencies and chunk lengths of one posting block (migration
    10: each column one unsigned integer a posting, of the width its bytes over the
    postings give; the chunk ids as gaps after ``first``): the chunk ids as int64, the
    others as stored (the search joins each term's arrays as int64)."""
    arrays = []
    for column in columns:
        width = len(column) // postings if postings > 0 else 0
        if width not in _WIDTHS or width * postings != len(column):
            raise StoreError(
                f"the posting block of {term!r} in class {class_id} is malformed "
                f"({len(column)} bytes for {postings} postings)"
            )
        arrays.append(np.frombuffer(column, dtype=_WIDTHS[width]))
    gaps, tf, lengths = arrays
    return np.cumsum(gaps, dtype=np.int64) + first, tf, lengths


def _summed_top_k(chunks: Any, weights: Any, k: int) -> list[tuple[int, float]]:
    """``(chunk, score)`` of the ``k`` chunks with the highest summed ``weights``, best
    first, ties by chunk: each chunk's weights added in the order given, as ``np.bincount``
    adds them (over the span of the ids when it is small, else over their ranks)."""
    if chunks.size == 0:
        return []
    low = int(chunks.min())
    span = int(chunks.max()) - low + 1
    if span <= 4 * chunks.size + 65_536:
        slots, ids = chunks - low, None
    else:
        ids, slots = np.unique(chunks, return_inverse=True)
    scores = np.bincount(slots, weights=weights).astype(np.float64, copy=False)
    # Every weight is positive: the chunks matched are those that scored.
    candidates = np.flatnonzero(scores > 0).astype(np.int64)
    best = top_k(scores, candidates, candidates, k)
    return [(int(p) + low if ids is None else int(ids[p]), float(scores[p])) for p in best]


def _ranked(rows: Sequence[Any]) -> list[tuple[str, float]]:
    return [(str(c), float(s)) for c, s in rows]


def _best_rows(rows: Sequence[Any], k: int) -> list[Any]:
    """The top ``k`` of ``(chunk_id, score, id, ...)`` rows from one statement or several,
    each row (``id``) once, in the order each statement gives: score, best first, then
    insertion order."""
    ordered = sorted({int(r[2]): r for r in rows}.values(), key=lambda r: (-float(r[1]), int(r[2])))
    return ordered[:k]


def _best(rows: Sequence[Any], k: int) -> list[tuple[str, float]]:
    """:func:`_best_rows` as ``(chunk_id, score)``."""
    return [(str(r[0]), float(r[1])) for r in _best_rows(rows, k)]


def _first_walks(
    planned: Sequence[tuple[int, dict[int, int]]], narrow: int
) -> tuple[list[tuple[int, dict[int, int]]], dict[int, tuple[int, int]]]:
    """The first statements' walks, and the graphs walked narrower in them than
    ``planned`` (class id: planned breadth, parts). The graphs planned widest are walked
    as planned; the others ``narrow`` wide first, when that is narrower (``narrow`` 0:
    every graph as planned)."""
    if narrow <= 0:
        return list(planned), {}
    later = {
        cid: (breadth, parts)
        for breadth, walked in planned[1:]
        for cid, parts in walked.items()
        if narrow < breadth
    }
    first = _merged(
        (narrow if cid in later else breadth, {cid: parts})
        for breadth, walked in planned
        for cid, parts in walked.items()
    )
    return first, later


def _merged(walks: Iterable[tuple[int, dict[int, int]]]) -> list[tuple[int, dict[int, int]]]:
    """``walks`` with the graphs of one breadth in one statement, widest first."""
    by_breadth: dict[int, dict[int, int]] = {}
    for breadth, walked in walks:
        by_breadth.setdefault(breadth, {}).update(walked)
    return sorted(by_breadth.items(), reverse=True)


def _grouped_by(
    later: Mapping[int, tuple[int, int]], gave: set[int]
) -> list[tuple[int, dict[int, int]]]:
    """The second walks: each graph of ``later`` whose class ``gave`` a top-k row, as
    wide as planned."""
    return _merged((b, {cid: parts}) for cid, (b, parts) in sorted(later.items()) if cid in gave)


def _safe_dsn(dsn: str) -> str:
    """The database a DSN names (host, port, name; no role, no password), for messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<invalid DSN>"
    host, port = parts.get("host") or "localhost", parts.get("port") or 5432
    return f"postgresql://{host}:{port}/{parts.get('dbname') or ''}"


def _with_password(dsn: str, password: str | None) -> str:
    return dsn if password is None else make_conninfo(dsn, password=password)


def connect_writer(dsn: str, password: str | None) -> psycopg.Connection[Any]:
    """One autocommit connection as the writing role (schema migrations)."""
    return psycopg.connect(_with_password(dsn, password), autocommit=True)


class PostgresStore(SqlStore):
    """The PostgreSQL :class:`~clearance.store.base.Store`. ``dsn`` is the reading role's
    connection, ``writer_dsn`` the owner's; passwords come separately (from the
    environment, never from the settings file)."""

    dialect = "postgres"
    _COLLATE = ' COLLATE "C"'
    _VECTOR_COUNT = "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL"
    _ACL_COLUMN = "ARRAY(SELECT principal FROM doc_acl a WHERE a.doc_key = documents.key)"
    _ROW_LOCK = "FOR UPDATE"

    def __init__(
        self,
        dsn: str,
        writer_dsn: str,
        *,
        password: str | None = None,
        writer_password: str | None = None,
        pool_size: int = 4,
        vector_plan: VectorPlan | None = None,
        pack_least: int = _PACK_LEAST,
        fold_every_s: float = _FOLD_S,
    ) -> None:
        self.location = _safe_dsn(dsn)
        self.vector_plan = vector_plan or VectorPlan()
        self._indexed: int | None = None  # the width whose HNSW index is known to exist
        self._beside_classes_until = 0.0  # "hnsw" found class graphs: until then, skip it
        # The class graphs' refresh: when it is next due, and the worker running one.
        self._graphs_due = 0.0
        self._graphs_worker: threading.Thread | None = None
        self._graphs_guard = threading.Lock()
        # The class changes and sizes (_class_changes) at the last refresh that left
        # nothing to do.
        self._graphs_writes: tuple[int, str] | None = None
        self._graphs_warmed = False  # whether a refresh warmed every graph since opening
        self._closing = False
        # The refresh builds on a connection of its own: a build waits for older
        # snapshots, and must not hold a connection a search in one is waiting for.
        self._writer_conninfo = _with_password(writer_dsn, writer_password)
        #: Class graphs walked by searches so far (a diagnostic, read by tests).
        self.graph_searches = 0
        #: Postings lexical searches scored, by where they were read from: ``packed``
        #: (current blocks) or ``rows`` (a diagnostic, read by tests and benchmarks).
        self.postings_read: Counter[str] = Counter()
        self.pack_least = pack_least
        # Packing posting blocks: the worker, and whether a search read enough rows that a
        # pack may be due (it starts one on the worker when it next finds none running).
        self._pack_worker: threading.Thread | None = None
        self._pack_wanted = False
        self._pack_due = 0.0
        self._fold_every_s = fold_every_s  # how often writes fold the statistics' deltas
        self._fold_due = time.monotonic() + fold_every_s  # when they are next folded
        self._fold_guard = threading.Lock()
        self._unfolded = False  # this store wrote since its last fold
        self._fold_worker: threading.Thread | None = None
        # Runs the lexical half of a hybrid search beside the vector half (:meth:`_retrieve`).
        self._beside_pool = ThreadPoolExecutor(
            max_workers=max(1, pool_size), thread_name_prefix="clearance-lexical"
        )
        # Second connections out at once: at most half the reading pool's.
        self._beside_slots = threading.BoundedSemaphore(max(0, pool_size // 2))
        self._writer = self._pool(_with_password(writer_dsn, writer_password), pool_size, "writer")
        with ExitStack() as opened:  # if anything below fails, the pools opened are closed
            opened.callback(self._writer.close)
            with self._writer.connection() as conn:
                pg_schema.require_current(conn, self.location)
            # Two from the start: a hybrid search's second connection is there at once.
            self._reader = self._pool(_with_password(dsn, password), pool_size, "reader", least=2)
            opened.callback(self._reader.close)
            with self._reader.connection() as conn:
                self._refuse_privileged_reader(conn)
            opened.pop_all()

    def _pool(
        self, conninfo: str, size: int, role: str, *, least: int = 1
    ) -> ConnectionPool[psycopg.Connection[Any]]:
        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.autocommit = True
            # Statements stay unnamed: each plan is made for its parameter values, so a
            # small ACL array or a selective filter gets its own plan.
            conn.prepare_threshold = None
            try:
                register_vector(conn)
            except psycopg.ProgrammingError as exc:
                raise StoreError(
                    f"{_safe_dsn(conninfo)}: the vector extension is missing: "
                    "run `clearance db upgrade`"
                ) from exc

        pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo,
            min_size=min(least, max(1, size)),
            max_size=max(1, size),
            configure=configure,
            open=False,
            name=f"clearance-{role}",
        )
        try:
            pool.open(wait=True, timeout=10.0)
        except Exception as exc:  # psycopg's errors, and the pool's timeout
            pool.close()
            raise StoreError(
                f"cannot connect to {_safe_dsn(conninfo)} as the {role}: {exc}"
            ) from exc
        return pool

    @staticmethod
    def _refuse_privileged_reader(conn: psycopg.Connection[Any]) -> None:
        """The reading role must be subject to row-level security: not a superuser, not
        BYPASSRLS, not the owner of the tables it reads."""
        row = conn.execute(
            "SELECT r.rolname, r.rolsuper, r.rolbypassrls, "
            "pg_has_role(current_user, c.relowner, 'USAGE') "
            "FROM pg_roles r, pg_class c WHERE r.rolname = current_user "
            "AND c.oid = 'chunks'::regclass"
        ).fetchone()
        if row is None:
            raise StoreError("the reading role cannot see the chunks table")
        name, superuser, bypass, owner = row
        if superuser or bypass or owner:
            raise StoreError(
                f"the reading role {name!r} can bypass row-level security "
                f"({'superuser' if superuser else 'BYPASSRLS' if bypass else 'owns the tables'}): "
                "connect [store] dsn as a role without it"
            )

    def close(self) -> None:
        with self._fold_guard:
            self._closing = True  # a refresh stops before its next build; no fold starts
        worker = self._graphs_worker
        if worker is not None:  # a graph being built goes on in the database; don't wait
            worker.join(timeout=1.0)
        for worker in (self._fold_worker, self._pack_worker):
            if worker is not None:  # a pack stops at its next batch
                worker.join(timeout=5.0)
        if self._unfolded and math.isfinite(self._fold_every_s):
            # A short run's writes leave no deltas and no stale blocks behind.
            self._maintain_quietly(finish=True)
        self._beside_pool.shutdown(wait=True)
        self._reader.close()
        self._writer.close()

    @property
    def identity(self) -> str:
        """Names this index uniquely within the process."""
        return f"postgres:{self.location}"

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def transaction(self) -> Iterator[QmarkConnection]:
        """One write transaction as the writer; everything inside commits together."""
        with self._writing() as conn:
            yield QmarkConnection(conn)

    @contextmanager
    def reading(self) -> Iterator[QmarkConnection]:
        """A connection for reads of tables other modules own (as the writer: those
        tables hold no document content)."""
        with self._writer.connection() as conn:
            yield QmarkConnection(conn)

    @contextmanager
    def _in_transaction(
        self, pool: ConnectionPool[psycopg.Connection[Any]], doing: str, *, read_only: bool
    ) -> Iterator[psycopg.Connection[Any]]:
        """One transaction on a connection of ``pool`` (a read-only snapshot with
        ``read_only``); a database error fails it as a :class:`StoreError` naming ``doing``."""
        with pool.connection() as conn:
            try:
                with conn.transaction():
                    if read_only:
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield conn
            except psycopg.Error as exc:
                raise StoreError(f"{doing} {self.location} failed: {exc}") from exc

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        with self._in_transaction(self._writer, "write to", read_only=False) as conn:
            yield conn
        self._fold_if_due()

    def fold_class_statistics(self) -> int | None:
        """Fold the class statistics' deltas into their totals (migration 7); returns the
        rows folded, or ``None`` when another process was folding. Searches are exact
        either way: they sum totals and deltas."""
        self._fold_due = time.monotonic() + self._fold_every_s
        self._unfolded = False
        with self._writer.connection() as conn:
            row = conn.execute("SELECT clearance_fold_class_statistics()").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _fold_if_due(self) -> None:
        """After a write commits: fold on a worker when the last fold is ``fold_every_s`` old,
        so the writer (a request recording its trace, say) does not wait for it."""
        self._unfolded = True
        with self._fold_guard:
            running = self._fold_worker is not None and self._fold_worker.is_alive()
            if time.monotonic() < self._fold_due or self._closing or running:
                return
            self._fold_due = time.monotonic() + self._fold_every_s
            worker = threading.Thread(
                target=self._fold_quietly, name="clearance-class-statistics", daemon=True
            )
            self._fold_worker = worker
            worker.start()

    def _fold_quietly(self) -> None:
        """A failure leaves the deltas for the next fold; searches are exact either way.
        Then a pack of what the writes left stale is started (:meth:`_pack_soon`)."""
        try:
            self.fold_class_statistics()
        except Exception as exc:  # the store may be closing; the database may be away
            _log.warning("folding the class statistics of %s failed: %s", self.location, exc)
        self._pack_soon()

    def _maintain_quietly(self, *, finish: bool = False) -> None:
        """Fold, then pack (to the end with ``finish``, even while closing). A failure
        leaves the rest for the next time; searches are exact either way."""
        try:
            self.fold_class_statistics()
            self._pack(stop=(lambda: False) if finish else (lambda: self._closing))
        except Exception as exc:  # the store may be closing; the database may be away
            if isinstance(exc, PoolClosed) and self._closing and not finish:
                # close() waits a few seconds for the worker, then closes the pools: a fold
                # still waiting for a writer connection is refused before it began. Its
                # deltas stay for the next fold, perhaps another process's; searches sum
                # them meanwhile. Nothing failed.
                _log.debug("folding and packing %s stopped at close: %s", self.location, exc)
                return
            _log.warning("packing the postings of %s failed: %s", self.location, exc)

    def pack_postings(self) -> dict[str, Any]:
        """Pack the postings of every (term, class) with ``pack_least`` of them or more whose
        block is missing or stale into a block (migration 9), and drop the blocks of pairs
        that fell below. Compares blocks with the folded versions, so it is best run after
        a fold. Searches are exact throughout: a block is read only while current. One
        process at a time; returns ``pairs`` and ``postings`` packed, ``dropped`` and
        ``seconds``, or ``busy`` when another process packs. Stops between batches when
        the store closes."""
        return self._pack(stop=lambda: self._closing)

    def _pack(self, stop: Callable[[], bool]) -> dict[str, Any]:
        started = time.perf_counter()
        pairs = postings = 0
        with psycopg.connect(self._writer_conninfo, autocommit=True) as conn:
            locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (_PACK_LOCK,)).fetchone()
            if locked is None or not locked[0]:
                return {"pairs": 0, "postings": 0, "dropped": 0, "seconds": 0.0, "busy": True}
            try:
                dropped = conn.execute(
                    "DELETE FROM posting_blocks b USING class_terms t WHERE t.term = b.term "
                    "AND t.class_id = b.class_id AND t.df < %s",
                    (self.pack_least,),
                ).rowcount
                stale = conn.execute(
                    pg_search.stale_blocks_sql(), {"least": self.pack_least}
                ).fetchall()
                batch: list[tuple[str, int]] = []
                size = 0
                for index, (term, class_id, df) in enumerate(stale):
                    batch.append((str(term), int(class_id)))
                    size += int(df)
                    if size < _PACK_BATCH and index < len(stale) - 1:
                        continue
                    if stop():
                        break
                    row = conn.execute(
                        "SELECT clearance_pack_postings(%s, %s)",
                        ([t for t, _ in batch], [c for _, c in batch]),
                    ).fetchone()
                    pairs += len(batch)
                    postings += 0 if row is None else int(row[0])
                    batch, size = [], 0
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_PACK_LOCK,))
        return {
            "pairs": pairs,
            "postings": postings,
            "dropped": dropped,
            "seconds": round(time.perf_counter() - started, 3),
        }

    def _pack_soon(self) -> None:
        """Start a fold and pack on the worker (:meth:`_maintain_quietly`) unless one runs,
        the last began less than ``_PACK_EVERY_S`` ago, or the store is closing: while a
        class is written without pause its common pairs' blocks go stale again within
        seconds, and packing them more often would rewrite them for nothing."""
        with self._fold_guard:
            running = self._pack_worker is not None and self._pack_worker.is_alive()
            if self._closing or running or time.monotonic() < self._pack_due:
                return
            self._pack_wanted = False
            self._pack_due = time.monotonic() + _PACK_EVERY_S
            self._pack_worker = threading.Thread(
                target=self._maintain_quietly, name="clearance-posting-blocks", daemon=True
            )
            self._pack_worker.start()

    def _pack_if_wanted(self) -> None:
        """When a search read a term's postings row by row, perhaps where a block could
        serve: fold and pack, so a store that only searches keeps the blocks that other
        processes' writes left stale up to date. On the worker (:meth:`_pack_soon`); before
        the search, every time, with ``VectorPlan.background`` off; never when the store
        folds only when asked (``fold_every_s`` infinite)."""
        if not self._pack_wanted or self._closing or not math.isfinite(self._fold_every_s):
            return
        if not self.vector_plan.background:
            self._pack_wanted = False
            self._maintain_quietly()
            return
        self._pack_soon()

    def _read(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """An operator's consistent read of several tables, as the writer."""
        return self._in_transaction(self._writer, "read from", read_only=True)

    @contextmanager
    def _snapshot(self) -> Iterator[QmarkConnection]:
        with self._read() as conn:
            yield QmarkConnection(conn)

    @contextmanager
    def _searching(self, flt: SearchFilter) -> Iterator[psycopg.Connection[Any]]:
        """:meth:`_as_caller` for the statements that join an allowed set to ``chunks``.
        The planner sizes that set (a CTE) at ten rows and would loop over it, probing
        ``chunks`` once per document with the row policies' key array re-sorted on every
        probe: quadratic in the allowed documents (10 % of a million chunks: 3.7 s to rank
        exactly, 0.54 s hashed). Hash joins scan the index once."""
        with self._as_caller(flt.principals, flt.max_sensitivity) as conn:
            conn.execute(_NO_NESTED_LOOPS)
            yield conn

    @contextmanager
    def _as_caller(
        self, principals: frozenset[str], ceiling: Sensitivity
    ) -> Iterator[psycopg.Connection[Any]]:
        """A read-only snapshot as the reading role, with the caller's principal set and
        ceiling set for this transaction only: what the row-level policies admit."""
        with self._in_transaction(self._reader, "search in", read_only=True) as conn:
            _set_caller(conn, principals, ceiling)
            yield conn

    def _second_connection(self) -> psycopg.Connection[Any] | None:
        """A reading connection for a hybrid search's lexical half: one the pool has free
        now, while fewer than half the pool's connections are out as second ones; else
        ``None`` (the search runs both halves on its own), so searches never queue for one."""
        if not self._beside_slots.acquire(blocking=False):
            return None
        try:
            if self._reader.get_stats().get("pool_available", 0) > 0:
                return self._reader.getconn(timeout=_BESIDE_WAIT_S)
        except PoolTimeout:
            pass
        self._beside_slots.release()
        return None

    def _give_back(self, other: psycopg.Connection[Any]) -> None:
        self._reader.putconn(other)
        self._beside_slots.release()

    def _lexical_beside(
        self,
        other: psycopg.Connection[Any],
        snapshot: str,
        flt: SearchFilter,
        lexical: Callable[[psycopg.Connection[Any]], list[tuple[str, float]]],
    ) -> list[tuple[str, float]]:
        """On the worker: ``lexical`` on ``other`` in the exported ``snapshot``, set up in one
        round trip as :meth:`_searching` sets up its connection; then ``other`` goes back to
        the pool. (The import fails, and with it this half, if the exporting transaction
        ended first.)"""
        try:
            with other.transaction():
                other.execute(
                    SQL(
                        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                        "SET TRANSACTION SNAPSHOT {}; {}; {}"
                    ).format(
                        Literal(snapshot),
                        SQL(_NO_NESTED_LOOPS),
                        _caller_settings(flt.principals, flt.max_sensitivity),
                    )
                )
                return lexical(other)
        except psycopg.Error as exc:
            raise StoreError(f"search in {self.location} failed: {exc}") from exc
        finally:
            self._give_back(other)

    def has_tables(self, *names: str) -> bool:
        """Every table of this store comes from its migrations."""
        return True

    def directory_if_changed(self, generation: int | None) -> tuple[int, Any] | None:
        """``(generation, value)`` of the stored directory, or ``None`` when its row's
        generation (new on every write, by a trigger) is still ``generation``."""
        with self.reading() as db:
            row = db.execute(
                "SELECT generation FROM meta WHERE key = ?", (_DIRECTORY_META,)
            ).fetchone()
            current = 0 if row is None else int(row[0])
            if current == generation:
                return None
            found = db.execute(
                "SELECT generation, value FROM meta WHERE key = ?", (_DIRECTORY_META,)
            ).fetchone()
        if found is None:
            return 0, None
        return int(found[0]), json.loads(found[1])

    def set_corpus_slas(self, slas: Mapping[str, float]) -> None:
        """Record each corpus's revocation SLA, for the row-level policies' freshness test."""
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO corpus_sla (corpus, sla_seconds) VALUES (%s, %s) "
                "ON CONFLICT (corpus) DO UPDATE SET sla_seconds = excluded.sla_seconds "
                "WHERE corpus_sla.sla_seconds IS DISTINCT FROM excluded.sla_seconds",
                sorted(slas.items()),
            )

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _vector_dims(conn: psycopg.Connection[Any]) -> int | None:
        """The width of the stored vectors (one index holds one), read as the writer: the
        reading role would scan past every row its policies hide to find one."""
        row = conn.execute(
            "SELECT vector_dims(embedding) FROM chunks WHERE embedding IS NOT NULL LIMIT 1"
        ).fetchone()
        return None if row is None else int(row[0])

    def _ensure_vector_index(self, conn: psycopg.Connection[Any], dim: int) -> None:
        """The HNSW index over vectors of this width (its cast fixes the width), made by
        the first writer of such a vector. Looked up first: creating an index locks the
        table against every other writer, even when the index exists already."""
        if self._indexed == dim:
            return
        name = f"{_GLOBAL_GRAPH}{dim}"
        classes, others = self._graphs(conn)
        found = {n for n in others if n.startswith(_GLOBAL_GRAPH)}
        if found != {name}:
            # Never beside class graphs (another process's "classes" setting): a search
            # that read the catalogue before this index committed could walk it in a
            # class's place, rows the caller cannot read included. Looked for before any
            # lock, and remembered for a refresh's interval, so writers do not queue.
            if time.monotonic() < self._beside_classes_until or classes:
                self._ranks_exactly_beside_classes()
                return
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('chunks_embedding', 0))")
            # Again under the lock a refresh holds while it builds (kept until this
            # commits, so none starts before the index is there for it to drop).
            free = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_GRAPHS_LOCK,)).fetchone()
            if free is None or not free[0] or self._graphs(conn)[0]:
                self._ranks_exactly_beside_classes()
                return
            # The caller found no vector of another width: their index (a model change)
            # would refuse every new row.
            for other in sorted(found - {name}):
                conn.execute(SQL("DROP INDEX IF EXISTS {}").format(Identifier(other)))
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON chunks USING hnsw "
                f"((embedding::vector({dim})) vector_ip_ops) WHERE vector_dims(embedding) = {dim}"
            )
        self._indexed = dim

    def _ranks_exactly_beside_classes(self) -> None:
        """Class graphs are there, or being built: this store's ``"hnsw"`` graph is not
        made for a while, and its searches rank exactly."""
        if self._beside_classes_until == 0.0:
            _log.warning(
                '%s has class graphs, or a refresh of them under way: vector_search = "hnsw" '
                "ranks exactly there",
                self.location,
            )
        self._beside_classes_until = time.monotonic() + self.vector_plan.refresh_s

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        width, embeddings = check_upsert(document, chunks, vectors, facts)
        analysed = [_analysed(f"{document.title}\n{chunk.text}") for chunk in chunks]
        levels: dict[int, list[int]] = {}
        for chunk, (length, _, _) in zip(chunks, analysed, strict=True):
            level = levels.setdefault(int(chunk.sensitivity), [0, 0])
            level[0] += 1
            level[1] += length
        with self._writing() as conn:
            # Two writers of one document queue here instead of failing on its unique id.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (document.doc_id,)
            )
            db = QmarkConnection(conn)
            delete_document(db, document.doc_id)
            if width is not None:
                refuse_other_width(document.doc_id, width, self._vector_dims(conn))
                # Only the HNSW opt-in reads the graph; the exact default would pay for
                # keeping it on every insert and never use it.
                if self.vector_plan.approximate:
                    self._ensure_vector_index(conn, width)
            doc_key = insert_document(db, document)
            # The document's classes made in one order (lowest sensitivity first) before
            # its chunks take them one by one: two writers needing the same new classes
            # queue on the first instead of each holding one the other waits for.
            db.execute(
                "SELECT clearance_class_of(?, s::smallint) FROM "
                "(SELECT unnest(?::integer[]) AS s ORDER BY 1) levels",
                (doc_key, sorted(levels)),
            )
            rows = [
                (*chunk_row(doc_key, c), *analysis, embedding)
                for c, analysis, embedding in zip(chunks, analysed, embeddings, strict=True)
            ]
            for start in range(0, len(rows), _CHUNKS_PER_INSERT):
                batch = rows[start : start + _CHUNKS_PER_INSERT]
                db.execute(
                    f"INSERT INTO chunks ({CHUNK_COLUMNS}, length, terms, tfs, embedding) "
                    f"VALUES {', '.join([f'({marks(11)})'] * len(batch))}",
                    [value for row in batch for value in row],
                )
            db.executemany(
                "INSERT INTO doc_levels (doc_key, sensitivity, chunks, length) VALUES (?, ?, ?, ?)",
                [(doc_key, level, n, total) for level, (n, total) in sorted(levels.items())],
            )
            insert_facts(db, doc_key, facts)

    def delete(self, doc_id: str) -> bool:
        with self.transaction() as db:
            return delete_document(db, doc_id)

    def _merge_extra(self, db: SqlConnection, doc_id: str, patch: Mapping[str, Any]) -> None:
        """Merged in Python: PostgreSQL has no JSON merge patch."""
        row = db.execute(
            "SELECT extra FROM documents WHERE doc_id = ? FOR UPDATE", (doc_id,)
        ).fetchone()
        if row is not None:
            merged = merge_patch(json.loads(row[0]), json.loads(json.dumps(dict(patch))))
            db.execute(
                "UPDATE documents SET extra = ? WHERE doc_id = ?",
                (json.dumps(merged, separators=(",", ":")), doc_id),
            )

    @staticmethod
    def _in(column: str) -> str:
        return f"{column} = ANY (?::text[])"

    @staticmethod
    def _list(values: Sequence[str]) -> list[str]:
        return list(values)

    @staticmethod
    def _acl(value: list[str]) -> frozenset[str]:
        return frozenset(value)

    # ------------------------------------------------------------------ reads

    def vectors_by_text(self, doc_id: str) -> dict[str, Vector]:
        """A document's stored vectors keyed by chunk text, to reuse when only metadata changed."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT c.text, c.embedding FROM chunks c JOIN documents d ON d.key = c.doc_key "
                "WHERE d.doc_id = %s AND c.embedding IS NOT NULL ORDER BY c.id",
                (doc_id,),
            ).fetchall()
        return {str(t): np.asarray(v.to_numpy(), dtype=np.float32) for t, v in rows}

    def corpora(self) -> list[str]:
        """Every corpus that holds at least one document, in code point order. Asked on
        every request: a skip scan of ``documents_corpus`` (one index probe per corpus)
        instead of reading an entry per document."""
        with self._read() as conn:
            rows = conn.execute(
                "WITH RECURSIVE found (corpus) AS ("
                "(SELECT corpus FROM documents ORDER BY corpus LIMIT 1) UNION ALL "
                "SELECT (SELECT d.corpus FROM documents d WHERE d.corpus > f.corpus "
                "ORDER BY d.corpus LIMIT 1) FROM found f WHERE f.corpus IS NOT NULL) "
                "SELECT corpus FROM found WHERE corpus IS NOT NULL"
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    # ------------------------------------------------------------------ filtered search

    def allowed_doc_ids(self, flt: SearchFilter) -> set[str]:
        """Every document id the filter admits, as the application's filter computes it
        (documents carry no row-level policy: this is the operators' view)."""
        sql, params = pg_search.allowed(flt)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT doc_id FROM documents WHERE key IN (SELECT key FROM ({sql}) a)", params
            ).fetchall()
        return {str(r[0]) for r in rows}

    def warm(self, *, vectors: bool) -> None:
        """The indexes live in the database; with class graphs, any that a class lacks are
        started on the worker (searches rank such a class exactly until its graph is
        there)."""
        if vectors and self.vector_plan.classes:
            self._graphs_due = 0.0
            self._refresh_graphs_if_due()

    # ------------------------------------------------------------------ class graphs

    def refresh_class_graphs(self) -> dict[str, Any]:
        """Give every permission class of ``exact_below`` vectors or more its graph (or its
        graphs, split as :meth:`VectorPlan.parts` says), and drop the graphs of classes
        that fell below half that, of another vector width, of a split the class has
        outgrown (after the new split's graphs are built, so searches walk graphs
        throughout), or left invalid by a build that died. Runs as the writer, one process
        at a time; graphs are built with ``CREATE INDEX CONCURRENTLY``, so writers go on.
        Then the graphs this store has not walked are read into the server's buffers, when
        the database has ``pg_prewarm`` (:meth:`_warm_graphs`): every one in its first
        refresh, the ones built in each later one (also when another process holds the
        refresh). Returns what was done: ``built``, ``dropped``, ``graphs`` (kept in all),
        ``warmed`` (read ahead), ``warming_s`` (the reading's share of) ``seconds``; and
        ``busy`` when another process holds the refresh."""
        self._graphs_due = time.monotonic() + self.vector_plan.refresh_s
        return self._refresh_class_graphs(only_after_writes=False)

    def _refresh_class_graphs(self, *, only_after_writes: bool) -> dict[str, Any]:
        started = time.perf_counter()
        plan = self.vector_plan
        built = dropped = 0
        new: list[str] = []  # the graphs this refresh built
        with psycopg.connect(self._writer_conninfo, autocommit=True) as conn:
            writes = _class_changes(conn)
            if only_after_writes and writes == self._graphs_writes:
                return {"built": 0, "dropped": 0, "graphs": None, "seconds": 0.0, "idle": True}
            locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (_GRAPHS_LOCK,)).fetchone()
            if locked is None or not locked[0]:
                # Another process builds; the graphs there can still be read ahead.
                walkable = [n for n, usable in self._graphs(conn)[0] if usable]
                warmed, warming_s = self._read_ahead(conn, walkable, [])
                return {
                    "built": 0,
                    "dropped": 0,
                    "graphs": 0,
                    "warmed": warmed,
                    "warming_s": warming_s,
                    "seconds": round(time.perf_counter() - started, 3),
                    "busy": True,
                }
            try:
                dim = self._vector_dims(conn)
                sizes: dict[int, int] = {}
                if dim is not None and plan.classes:
                    sizes = {
                        int(c): int(n)
                        for c, n in conn.execute(
                            "SELECT class_id, count(*) FROM chunks WHERE embedding IS NOT NULL "
                            "AND class_id IS NOT NULL GROUP BY class_id"
                        )
                    }
                classes, every = self._graphs(conn)
                if plan.classes:  # a graph over every chunk: never walked, only kept up
                    for name in every:
                        if name.startswith(_GLOBAL_GRAPH):  # the "hnsw" setting's
                            _drop_index(conn, name)
                            dropped += 1
                        else:  # made by hand: left, and searches rank exactly meanwhile
                            _log.warning(
                                "a vector index on chunks that the store did not make (%s) "
                                "keeps class graphs unused in %s: drop it",
                                name,
                                self.location,
                            )
                # Per class and split, the parts whose graphs are there and usable.
                have: dict[int, dict[int, dict[int, str]]] = {}
                for name, usable in classes:
                    graph = _graph_of(name)
                    if usable and graph.width == dim:
                        splits = have.setdefault(graph.class_id, {})
                        splits.setdefault(graph.parts, {})[graph.part] = name
                        continue
                    _drop_index(conn, name)
                    dropped += 1
                # The split each class keeps: of the splits its size still fits, a whole one
                # first, then the one with the most parts there; else a new split of its
                # size. A class below half the threshold, or below it with no graphs yet,
                # gets none (and loses any it has).
                target: dict[int, int] = {}
                for cid, n in sizes.items():
                    splits = have.get(cid, {})
                    fits = [p for p in splits if plan.keeps(n, p)]
                    if n < plan.exact_below // 2 or not (splits or n >= plan.exact_below):
                        continue
                    if fits:  # a whole split first, then the one with the most parts there
                        target[cid] = max(
                            fits,
                            key=lambda p: (_whole(p, splits[p]), len(splits[p]), p),
                        )
                    else:
                        target[cid] = plan.parts(n)
                for cid in sorted(set(have) - set(target)):
                    for names in have.pop(cid).values():
                        for name in names.values():
                            _drop_index(conn, name)
                            dropped += 1
                complete = True
                for cid, parts in sorted(target.items()):
                    if self._closing:
                        complete = False
                        break
                    there = have.setdefault(cid, {}).setdefault(parts, {})
                    for part in range(parts):
                        if self._closing:
                            break
                        if part not in there and dim is not None:
                            conn.execute(
                                pg_search.class_graph_ddl(
                                    cid, dim, plan.ef_construction, part, parts
                                )
                            )
                            there[part] = pg_search.class_graph_name(cid, dim, part, parts)
                            new.append(there[part])
                            built += 1
                    if not _whole(parts, there):
                        complete = False
                        continue
                    # The class's new split is whole: the graphs of any other split go (a
                    # split it outgrew, or one a refresh that died left beside it).
                    for other, names in have[cid].items():
                        if other == parts:
                            continue
                        for name in names.values():
                            _drop_index(conn, name)
                            dropped += 1
                    have[cid] = {parts: there}
                if complete:  # every graph due is there: nothing to retry until classes change
                    self._graphs_writes = writes
                kept = [
                    n
                    for splits in have.values()
                    for names in splits.values()
                    for n in names.values()
                ]
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_GRAPHS_LOCK,))
            warmed, warming_s = self._read_ahead(conn, kept, new)
        seconds = round(time.perf_counter() - started, 3)
        return {
            "built": built,
            "dropped": dropped,
            "graphs": len(kept),
            "warmed": warmed,
            "warming_s": warming_s,
            "seconds": seconds,
        }

    def _read_ahead(
        self, conn: psycopg.Connection[Any], there: Sequence[str], built: Sequence[str]
    ) -> tuple[int, float]:
        """Read ahead what this store has not walked yet: every graph ``there`` in its
        first refresh after opening, then the graphs each refresh ``built``. Returns how
        many were read and the seconds it took."""
        started = time.perf_counter()
        names = built if self._graphs_warmed else there
        warmed = self._warm_graphs(conn, names)
        # Once there was something to read: a store that found no graph yet (another
        # process still building the first) reads them all at its next refresh.
        self._graphs_warmed = self._graphs_warmed or (bool(there) and not self._closing)
        return warmed, round(time.perf_counter() - started, 3)

    def _warm_graphs(self, conn: psycopg.Connection[Any], names: Sequence[str]) -> int:
        """Read class graphs into the server's shared buffers (``pg_prewarm``, when the
        database has that extension, in whichever schema), largest first, while together
        they fill at most half of the buffers: a search that walks a graph read from disk
        took seconds where a warm one takes tens of milliseconds (docs/postgres.md).
        Returns how many were read. A failure is logged and leaves the graphs as they
        are: reading ahead only saves time."""
        if not names:
            return 0
        try:
            found = conn.execute(
                "SELECT n.nspname FROM pg_extension e "
                "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_prewarm'"
            ).fetchone()
            if found is None:
                return 0
            rows = conn.execute(
                "SELECT c.oid::regclass::text, pg_relation_size(c.oid), (SELECT s.setting::bigint "
                "FROM pg_settings s WHERE s.name = 'shared_buffers') "
                "* current_setting('block_size')::bigint FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = 'chunks'::regclass AND c.relname = ANY (%s::text[])",
                (list(names),),
            ).fetchall()
        except psycopg.Error as exc:
            _log.warning("reading the class graphs of %s ahead failed: %s", self.location, exc)
            return 0
        prewarm = SQL("SELECT {}.pg_prewarm(%s::regclass)").format(Identifier(str(found[0])))
        rows = [r for r in rows if r[1] is not None]  # dropped meanwhile: no size
        room = int(rows[0][2]) // 2 if rows else 0
        warmed = 0
        for name, size, _ in sorted(rows, key=lambda r: (-int(r[1]), str(r[0]))):
            if self._closing:
                break
            if int(size) > room:
                continue
            try:
                conn.execute(prewarm, (str(name),))
            except psycopg.errors.UndefinedTable:  # dropped by another process meanwhile
                continue
            except psycopg.Error as exc:
                _log.warning("reading the class graphs of %s ahead failed: %s", self.location, exc)
                break
            room -= int(size)
            warmed += 1
        return warmed

    @staticmethod
    def _graphs(conn: psycopg.Connection[Any]) -> tuple[list[tuple[str, bool]], list[str]]:
        """The vector indexes on ``chunks``, from one read of the catalogue: the class
        graphs (name, usable) and the names of every other HNSW or IVFFlat index on the
        table, valid or not: the ``"hnsw"`` setting's graph over every chunk, or one made
        by hand. Any such index could serve a class's branch of a search in its graph's
        place (its predicate, if any, is not the class), so none is told apart by its
        name."""
        rows = conn.execute(
            "SELECT c.relname, i.indisvalid AND i.indisready FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
            "WHERE i.indrelid = 'chunks'::regclass AND a.amname IN ('hnsw', 'ivfflat')"
        ).fetchall()
        classes: list[tuple[str, bool]] = []
        every: list[str] = []
        for name, usable in rows:
            if _is_class_graph(str(name)):
                classes.append((str(name), bool(usable)))
            else:
                every.append(str(name))
        return classes, every

    @staticmethod
    def _graph_indexes(
        conn: psycopg.Connection[Any], *, valid_only: bool
    ) -> list[tuple[str, bool]]:
        """The class graphs on ``chunks`` (name, usable)."""
        classes, _ = PostgresStore._graphs(conn)
        return [(n, v) for n, v in classes if v or not valid_only]

    @staticmethod
    def _usable_graphs(conn: psycopg.Connection[Any], dim: int) -> dict[int, int] | None:
        """The classes with usable graphs of this width, each with the number of parts of
        its split that are all there (:func:`_whole_splits`), read in the search's own
        transaction after it locked ``chunks`` (so no graph it lists can be dropped before
        the statement that walks it is planned); ``None`` while a graph over every chunk
        exists (the ``"hnsw"`` setting's), which the planner could walk in a class's place:
        the caller's classes are then ranked exactly, and the next refresh drops it."""
        conn.execute("LOCK TABLE chunks IN ACCESS SHARE MODE")
        classes, every = PostgresStore._graphs(conn)
        if every:
            return None
        return _whole_splits(
            [g for g in (_graph_of(n) for n, ok in classes if ok) if g.width == dim]
        )

    def _refresh_graphs_if_due(self) -> None:
        """Start a refresh of the class graphs when one is due: on the worker, or here
        (``background=False``) before the caller's search opens its transaction (a graph
        built concurrently waits for open transactions, the caller's own included)."""
        plan = self.vector_plan
        now = time.monotonic()
        if not plan.classes or now < self._graphs_due:
            return
        with self._graphs_guard:
            if now < self._graphs_due or (
                self._graphs_worker is not None and self._graphs_worker.is_alive()
            ):
                return
            self._graphs_due = now + plan.refresh_s
            if not plan.background:
                self.refresh_class_graphs()
                return
            self._graphs_worker = threading.Thread(
                target=self._refresh_quietly, name="clearance-class-graphs", daemon=True
            )
            self._graphs_worker.start()

    def _refresh_quietly(self) -> None:
        """The worker's refresh: a failure leaves the classes ranked exactly and is tried
        again when the next refresh is due."""
        try:
            self._refresh_class_graphs(only_after_writes=True)
        except Exception as exc:  # the store may be closing; the database may be away
            _log.warning("refreshing the class graphs of %s failed: %s", self.location, exc)

    def _retrieve(
        self, terms: list[str], vector: Vector | None, flt: SearchFilter, k: int
    ) -> Retrieved:
        """Both in one snapshot, as the reading role under the caller's settings."""
        self._pack_if_wanted()
        sql, params = pg_search.allowed(flt)
        dim = None
        if vector is not None:
            self._refresh_graphs_if_due()
            # Read as the writer before the search's transaction opens: a graph being built
            # waits for that transaction, and may hold a writer's connection meanwhile.
            with self._writer.connection() as writer:
                dim = self._vector_dims(writer)
        with self._searching(flt) as conn:
            classes = self._admitted_classes(conn, flt)

            def lexical(on: psycopg.Connection[Any]) -> list[tuple[str, float]]:
                if flt.doc_ids is None and not flt.exclude_doc_ids:
                    return self._lexical_by_class(on, classes, terms, k)
                # decided per document: counted from the caller's chunks
                return self._lexical(on, sql, {**params, "classes": classes}, terms, k)

            if vector is None or dim is None:
                return Retrieved(lexical(conn), [])
            # Both halves in one snapshot; the lexical one on a second connection when the
            # pool has one free (:meth:`_second_connection`), so the server runs them at once.
            other = self._second_connection()
            pending = None
            if other is not None:
                try:
                    row = conn.execute("SELECT pg_export_snapshot()").fetchone()
                    pending = self._beside_pool.submit(
                        self._lexical_beside, other, str(row[0] if row else ""), flt, lexical
                    )
                except BaseException:
                    self._give_back(other)
                    if not self._closing:
                        raise
            if pending is None:
                found = lexical(conn)
                return Retrieved(
                    found, self._vector(conn, flt, sql, params, vector, dim, k, classes)
                )
            try:
                vectors = self._vector(conn, flt, sql, params, vector, dim, k, classes)
            finally:
                wait([pending])  # the snapshot must outlive its import
            return Retrieved(pending.result(), vectors)

    @staticmethod
    def _admitted_classes(conn: psycopg.Connection[Any], flt: SearchFilter) -> list[int]:
        """The permission classes ``flt`` admits (:func:`pg_search.admitted_classes`)."""
        classes_sql, params = pg_search.admitted_classes(flt)
        return [int(r[0]) for r in conn.execute(classes_sql, params)]

    @staticmethod
    def _lexical(
        conn: psycopg.Connection[Any], sql: str, params: dict[str, Any], terms: list[str], k: int
    ) -> list[tuple[str, float]]:
        if not terms or not params["classes"]:
            return []
        rows = conn.execute(pg_search.bm25_sql(sql), {**params, "terms": terms, "k": k}).fetchall()
        return _ranked(rows)

    @staticmethod
    def _class_statistics(
        conn: psycopg.Connection[Any], classes: list[int], terms: Sequence[str]
    ) -> tuple[int, int, dict[str, int]]:
        """N, summed length and document frequencies of the ``classes``' chunks."""
        rows = conn.execute(
            pg_search.class_statistics_sql(), {"classes": classes, "terms": sorted(set(terms))}
        ).fetchall()
        if not rows:
            return 0, 0, {}
        df = {str(t): int(d) for _, _, t, d in rows if t is not None and d > 0}
        return int(rows[0][0]), int(rows[0][1]), df

    def _lexical_by_class(
        self, conn: psycopg.Connection[Any], classes: list[int], terms: list[str], k: int
    ) -> list[tuple[str, float]]:
        """BM25 over the ``classes`` the caller reads whole, exact.

        The statistics are the classes' (:func:`pg_search.class_statistics_sql`). Every
        query term's postings in those classes are read: packed, from each (term, class)
        whose block is current in this snapshot (:func:`pg_search.packed_postings_sql`),
        and row by row from the others (:func:`pg_search.posting_rows_sql`). They are
        weighed by :func:`~clearance.store.memory.bm25_weights`, as the embedded store
        weighs them, and each chunk's weights summed in query-term order: the scores of
        :func:`pg_search.bm25_sql`, float for float. Ties go by chunk row, as there."""
        if not terms or not classes or k <= 0:
            return []
        n, total, df = self._class_statistics(conn, classes, terms)
        present = [t for t in dict.fromkeys(terms) if t in df]
        if n == 0 or not present:
            return []
        found: dict[str, list[tuple[Any, ...]]] = {t: [] for t in present}
        packed: dict[str, set[int]] = {t: set() for t in present}
        args = {"terms": present, "classes": classes}
        for term, class_id, first, postings, *columns in conn.execute(
            pg_search.packed_postings_sql(), args, binary=True
        ):
            found[term].append(_unpacked(term, class_id, first, postings, *columns))
            packed[term].add(int(class_id))
            self.postings_read["packed"] += postings
        rest = [(t, [c for c in classes if c not in packed[t]]) for t in present]
        if rest := [(t, left) for t, left in rest if left]:
            sql, params = pg_search.posting_rows_sql(rest)
            for term, *columns in conn.execute(sql, params, binary=True):
                found[term].append(
                    tuple(np.frombuffer(c, dtype=_PACKED[i]) for i, c in enumerate(columns))
                )
                read = len(columns[1]) // 4
                self.postings_read["rows"] += read
                # Perhaps a pair a pack would serve: the next search starts one.
                self._pack_wanted = self._pack_wanted or read >= self.pack_least
        average = total / n if total else 1.0
        matched: list[Any] = []
        weights: list[Any] = []
        for term in present:
            if not found[term]:
                raise StoreError(
                    f"the postings of {term!r} in {self.location} disagree with its counts "
                    f"(none against {df[term]})"
                )
            chunks, tf, lengths = (
                np.concatenate([a[i] for a in found[term]], dtype=np.int64) for i in range(3)
            )
            if tf.size != df[term]:  # one snapshot: the counts and postings agree
                raise StoreError(
                    f"the postings of {term!r} in {self.location} disagree with its counts "
                    f"({tf.size} against {df[term]})"
                )
            matched.append(chunks)
            weights.append(bm25_weights(tf, lengths, n, average, _BM25))
        best = _summed_top_k(np.concatenate(matched), np.concatenate(weights), k)
        names = dict(
            conn.execute(
                "SELECT id, chunk_id FROM chunks WHERE id = ANY (%s)", ([c for c, _ in best],)
            ).fetchall()
        )
        return [(str(names[c]), score) for c, score in best if c in names]

    def _vector(
        self,
        conn: psycopg.Connection[Any],
        flt: SearchFilter,
        sql: str,
        params: dict[str, Any],
        vector: Vector,
        dim: int,
        k: int,
        classes: list[int],
    ) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != dim:
            raise StoreError(f"query vector has {query.shape[0]} dimensions, index has {dim}")
        args = {**params, "vector": query, "k": k}
        if self.vector_plan.classes and flt.doc_ids is None:
            return self._by_class(conn, flt, classes, args, dim, k)
        if self.vector_plan.approximate:
            found = self._hnsw(conn, sql, params, args, dim, k)
            if found is not None:
                return found
        rows = conn.execute(pg_search.exact_vector_sql(sql), args).fetchall()
        return _ranked(rows)

    def _hnsw(
        self,
        conn: psycopg.Connection[Any],
        sql: str,
        params: dict[str, Any],
        args: dict[str, Any],
        dim: int,
        k: int,
    ) -> list[tuple[str, float]] | None:
        """The HNSW opt-in: the top-k from the index when the allowed set is large enough
        for its plan and the scan found k allowed rows; ``None`` to rank exactly. (Only
        this plan counts the allowed set: the exact default ranks it anyway.)"""
        plan = self.vector_plan
        allowed_row = conn.execute(pg_search.allowed_chunks_sql(sql), params).fetchone()
        allowed = 0 if allowed_row is None else int(allowed_row[0])
        if allowed == 0:
            return []
        total_row = conn.execute(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = 'chunks'::regclass"
        ).fetchone()
        total = max(allowed, 0 if total_row is None else int(total_row[0]))
        if plan.exact(allowed, total, k):
            return None
        conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        conn.execute(f"SET LOCAL hnsw.ef_search = {max(int(plan.ef_search), k)}")
        conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(plan.max_scan_tuples)}")
        rows = conn.execute(pg_search.hnsw_vector_sql(sql, dim), args).fetchall()
        # The scan stopped before k allowed rows: rank the allowed rows exactly.
        if len(rows) < min(k, allowed):
            return None
        return _ranked(rows)

    def _by_class(
        self,
        conn: psycopg.Connection[Any],
        flt: SearchFilter,
        admitted: list[int],
        args: dict[str, Any],
        dim: int,
        k: int,
    ) -> list[tuple[str, float]]:
        """The class-graph plan (:func:`pg_search.class_graphs_vector_sql`) over the
        ``admitted`` classes: a class the caller reads whole and that has a graph is
        searched through it; a class holding an excluded document, or with no graph yet,
        is ranked exactly. The graphs are walked as wide as :meth:`_walks` plans, those
        planned narrower than the widest first ``first_breadth`` wide and again as planned
        only if their class gave one of the top k so far (every part of a split class);
        one statement per breadth in each of the two rounds, all in the search's one
        snapshot, their rows merged as one statement would order them."""
        if not admitted:
            return []
        excluded = sorted(flt.exclude_doc_ids)
        partial: set[int] = set()
        if excluded:
            partial = {
                int(r[0])
                for r in conn.execute(
                    "SELECT DISTINCT c.class_id FROM chunks c JOIN documents d "
                    "ON d.key = c.doc_key WHERE d.doc_id = ANY (%s::text[])",
                    (excluded,),
                )
            }
        graphs = self._usable_graphs(conn, dim) or {}
        if k > _EF_SEARCH_MAX:  # a graph gives at most this many rows in order
            graphs.clear()
        graphed = {c: graphs[c] for c in admitted if c in graphs and c not in partial}
        rest = [c for c in admitted if c not in graphed]
        planned = self._walks(conn, graphed, admitted, k)
        narrow = self.vector_plan.first_breadth
        first, later = _first_walks(planned, max(narrow, k) if narrow > 0 else 0)
        args = {**args, "excluded": excluded}
        rows: list[Any] = []
        for breadth, walked in first or [(0, {})]:
            rows += self._walk(conn, breadth, walked, rest, args, dim)
            rest = []  # ranked in the first statement
        # A graph walked narrow first is walked again as wide as planned only if it gave
        # one of the top k so far: what it holds of the top k is then near its best.
        gave = {int(r[3]) for r in _best_rows(rows, k)}
        for breadth, walked in _grouped_by(later, gave):
            rows += self._walk(conn, breadth, walked, [], args, dim)
        self.graph_searches += sum(graphed.values())
        return _best(rows, k)

    def _walk(
        self,
        conn: psycopg.Connection[Any],
        breadth: int,
        walked: Mapping[int, int],
        rest: list[int],
        args: dict[str, Any],
        dim: int,
    ) -> list[Any]:
        """The rows of one statement: the ``walked`` graphs ``breadth`` wide, and the
        ``rest`` classes ranked exactly."""
        if walked:
            self._set_graph_walk(conn, int(args["k"]), breadth)
        sql = pg_search.class_graphs_vector_sql(walked, rest, dim)
        return conn.execute(sql, args).fetchall()

    def _walks(
        self,
        conn: psycopg.Connection[Any],
        graphed: Mapping[int, int],
        admitted: Sequence[int],
        k: int,
    ) -> list[tuple[int, dict[int, int]]]:
        """The ``graphed`` classes (class id: parts) grouped by the breadth their graphs
        are walked at, widest first: one statement each. :meth:`VectorPlan.breadth` sizes
        each graph by its class's chunks in this snapshot over its parts, against the
        chunks of every ``admitted`` class."""
        if not graphed:
            return []
        sizes = {
            int(cid): int(n)
            for cid, n in conn.execute(pg_search.class_sizes_sql(), {"classes": list(admitted)})
        }
        return self._grouped(graphed, sizes, sum(sizes.values()), k)

    def _grouped(
        self, graphed: Mapping[int, int], sizes: Mapping[int, int], allowed: int, k: int
    ) -> list[tuple[int, dict[int, int]]]:
        """:meth:`_walks` from the classes' ``sizes`` and the caller's ``allowed`` chunks."""
        walks: dict[int, dict[int, int]] = {}
        for cid, parts in sorted(graphed.items()):
            breadth = self.vector_plan.breadth(-(-sizes.get(cid, 0) // parts), k, allowed)
            walks.setdefault(breadth, {})[cid] = parts
        return sorted(walks.items(), reverse=True)

    def _set_graph_walk(
        self, conn: psycopg.Connection[Any], k: int, breadth: int | None = None
    ) -> None:
        """This transaction's settings for walking class graphs, ``breadth`` candidates
        wide (by default as wide as the plan walks its largest graphs), in one round trip:
        a search sets them before each statement of its walks."""
        plan = self.vector_plan
        if breadth is None:
            breadth = plan.breadth(plan.largest_graph, k)
        # The planner cannot know a class's size from the row policy and the index's
        # predicate; thinking it a few rows, it sorted a 400,000-chunk class instead of
        # walking its graph (1.3 s against 47 ms at a million chunks). No sort but the
        # final one and the exactly ranked rest remains to be chosen (enable_sort).
        conn.execute(
            "SET LOCAL hnsw.iterative_scan = strict_order; "
            f"SET LOCAL hnsw.ef_search = {int(breadth)}; "
            f"SET LOCAL hnsw.max_scan_tuples = {int(plan.max_scan_tuples)}; "
            "SET LOCAL enable_sort = off"
        )

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        """Allowed-chunk count and document frequencies, from the same SQL as BM25."""
        wanted = list(dict.fromkeys(terms))
        if not flt.principals:
            return TermStatistics(0, {})
        sql, params = pg_search.allowed(flt)
        with self._searching(flt) as conn:
            classes = self._admitted_classes(conn, flt)
            if flt.doc_ids is None and not flt.exclude_doc_ids:
                n, _, df = self._class_statistics(conn, classes, wanted)
                return TermStatistics(n, df)
            rows = conn.execute(
                pg_search.term_statistics_sql(sql), {**params, "terms": wanted, "classes": classes}
            ).fetchall()
        n = int(rows[0][0]) if rows else 0
        df = {wanted[int(o) - 1]: int(d) for _, o, d in rows if o is not None and d}
        return TermStatistics(n, df)

    # ------------------------------------------------------------------ facts

    def _allowed_facts(
        self, flt: SearchFilter, slots: Mapping[str, str]
    ) -> tuple[list[Any], dict[str, Document]]:
        """Filtered by the same SQL as search and, as the reading role, by the row
        policies; the documents are read as the writer."""
        sql, params = pg_search.allowed(flt)
        query = allowed_facts_sql(sql, "key", [f"f.{c} = %(slot_{c})s" for c in slots])
        params.update({f"slot_{column}": value for column, value in slots.items()})
        with self._as_caller(flt.principals, flt.max_sensitivity) as conn:
            rows = conn.execute(query, params).fetchall()
        with self._snapshot() as db:
            return rows, self._documents_by_id(db, sorted({str(r[0]) for r in rows}))

    def database_admits_faq(
        self, entry_id: str, principals: frozenset[str], ceiling: Sensitivity
    ) -> bool:
        """Whether the row-level policy lets this caller read the FAQ entry: the
        database's own check, after the application's."""
        if not principals:
            return False
        with self._as_caller(principals, ceiling) as conn:
            row = conn.execute("SELECT 1 FROM faq_entries WHERE id = %s", (entry_id,)).fetchone()
        return row is not None

    # ------------------------------------------------------------------ status

    def _size_bytes(self, db: SqlConnection) -> int:
        return int(db.execute("SELECT pg_database_size(current_database())").fetchone()[0])
