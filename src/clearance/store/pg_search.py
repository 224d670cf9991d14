"""The PostgreSQL store's search SQL: the permission filter compiled into every query.

:func:`allowed` is the application's filter (:class:`SearchFilter`, the same semantics as
``SearchFilter.admits`` and the embedded store's mask) as a CTE of ``(key, ceiling)`` per
admitted document. Each search joins or probes it *inside* the query that ranks, so
results are the top-k of the allowed set. The row-level policies of the schema are a
second, independent filter applied by the database on top of it.

Lexical ranking is the embedded store's BM25 computed in SQL: ``N``, the average length
and each term's document frequency come from the allowed chunks only, and every weight
is computed in the same order with the same float64 operations as
:func:`clearance.store.memory.bm25_top_k`, so both backends return the same scores. For a
caller who reads whole permission classes (every search not scoped to named documents),
the statistics are the classes' own counts summed (:func:`class_statistics_sql`), and the
query terms' postings in those classes are read packed where a current block holds them
(:func:`packed_postings_sql`, migration 9) and row by row elsewhere
(:func:`posting_rows_sql`), then scored by ``PostgresStore._lexical_by_class`` with the
embedded store's own arithmetic (:func:`clearance.store.memory.bm25_weights`); otherwise
they are counted from the allowed chunks (:func:`bm25_sql`).

Vector scores are inner products with the query, as the embedded store computes them (for
the unit vectors embedders write, the cosine). Ranking has three plans, chosen per request
(the HNSW one only with ``vector_search = "hnsw"``, the class graphs only with
``vector_search = "classes"``):

* **exact** — the allowed chunks found through ``chunks_doc``, ranked by cosine distance
  with no index: the true top-k, cheap when a caller may read little;
* **HNSW** — the ``chunks_embedding_<dim>`` index scanned in distance order with
  pgvector's iterative scan (``hnsw.iterative_scan = strict_order``): the scan goes on
  past ``ef_search`` candidates until ``k`` rows pass the filter or ``max_scan_tuples``
  were visited. The filter is a hashed probe per row, so visiting costs little. The graph
  holds every chunk, so which neighbours it finds can depend on rows the caller cannot read;
* **class graphs** — each permission class (:func:`admitted_classes`) the caller may read
  whole and that has a graph of its own (a partial HNSW index over exactly that class's
  rows) gives its top-k from that graph; the caller's other chunks are ranked exactly; the
  best ``k`` of all of them are the result. Every graph walked holds only rows the caller
  may read, so the result is a function of the query and of those rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clearance.store.base import SearchFilter
from clearance.store.memory import BM25

__all__ = [
    "admitted_classes",
    "allowed",
    "bm25_sql",
    "class_graphs_vector_sql",
    "class_sizes_sql",
    "class_statistics_sql",
    "exact_vector_sql",
    "graph_part",
    "hnsw_vector_sql",
    "packed_postings_sql",
    "posting_rows_sql",
    "stale_blocks_sql",
    "term_statistics_sql",
]

Params = dict[str, Any]
_BM25 = BM25()


def _scoped(flt: SearchFilter, select: str, table: str) -> tuple[str, str, Params]:
    """``SELECT {select} FROM {table}`` joined to the filter's corpora and their ceilings,
    the SQL of the ceiling that applies to a row, and the filter's common parameters."""
    params: Params = {
        "principals": sorted(flt.principals),
        "now": flt.now.timestamp(),
        "max_sensitivity": int(flt.max_sensitivity),
    }
    alias = table.split()[-1]
    if flt.corpora is None:
        ceiling = "%(max_sensitivity)s::integer"
        return f"SELECT {select.format(ceiling=ceiling)} FROM {table}", ceiling, params
    names = sorted(flt.corpora)
    params["corpora"] = names
    params["ceilings"] = [min(int(flt.corpora[c]), int(flt.max_sensitivity)) for c in names]
    sql = (
        f"SELECT {select.format(ceiling='cj.ceiling')} FROM {table} JOIN "
        "unnest(%(corpora)s::text[], %(ceilings)s::integer[]) AS cj (corpus, ceiling) "
        f"ON cj.corpus = {alias}.corpus"
    )
    return sql, "cj.ceiling", params


def allowed(flt: SearchFilter) -> tuple[str, Params]:
    """SQL yielding ``(key, ceiling)`` for every document the filter admits, with its
    named parameters. The ACL test is driven from ``doc_acl (principal, doc_key)``: the
    caller's document keys as an array probe ``documents`` by key, where a semi-join read
    every document (20 ms against 1 ms at 100,000 documents, 100 of them readable)."""
    sql, ceiling, params = _scoped(flt, "d.key, {ceiling} AS ceiling", "documents d")
    sql += (
        " WHERE d.key = ANY (ARRAY(SELECT a.doc_key FROM doc_acl a"
        " WHERE a.principal = ANY (%(principals)s::text[])))"
        f" AND d.sensitivity BETWEEN 0 AND {ceiling}"
        " AND (d.expires_at IS NULL OR d.expires_at > %(now)s)"
    )
    if flt.require_ai_allowed:
        sql += " AND d.ai_allowed"
    if flt.doc_ids is not None:
        sql += " AND d.doc_id = ANY (%(doc_ids)s::text[])"
        params["doc_ids"] = sorted(flt.doc_ids)
    if flt.exclude_doc_ids:
        sql += " AND NOT (d.doc_id = ANY (%(exclude_doc_ids)s::text[]))"
        params["exclude_doc_ids"] = sorted(flt.exclude_doc_ids)
    return sql, params


# N and the summed length of the allowed chunks, from one row per document and level.
_STATS = (
    "stats AS (SELECT coalesce(sum(l.chunks), 0)::bigint AS n, "
    "coalesce(sum(l.length), 0)::bigint AS total FROM doc_levels l "
    "JOIN allowed a ON a.key = l.doc_key AND l.sensitivity BETWEEN 0 AND a.ceiling)"
)
# The allowed chunks holding a query term, one row per (chunk, query term). A term's
# frequency is read at its place in the chunk's term array: unnesting every term of every
# matching chunk to join a handful of query terms took 2–4× as long (200k chunks of 60
# terms: 2.6 s against 0.67 s for three common words, 25 against 13 ms for two rare ones).
# The caller's permission classes (%(classes)s, from :func:`admitted_classes`) narrow the
# rows the term index finds before they are read: for a caller who may read little, the
# planner intersects the term index with the class index instead of fetching every chunk
# that holds a common word. They admit the same chunks as the allowed documents (less
# the per-document exclusions, which the join keeps).
_MATCHED = (
    "matched AS MATERIALIZED (SELECT c.id, c.chunk_id, c.length, q.ord, c.tfs[p.pos] AS tf "
    "FROM chunks c JOIN allowed a ON a.key = c.doc_key AND c.sensitivity BETWEEN 0 AND a.ceiling "
    "CROSS JOIN unnest(%(terms)s::text[]) WITH ORDINALITY AS q (term, ord) "
    "CROSS JOIN LATERAL (SELECT array_position(c.terms, q.term) AS pos) p "
    "WHERE c.terms && %(terms)s::text[] AND c.class_id = ANY (%(classes)s::integer[]) "
    "AND p.pos IS NOT NULL)"
)
_DF = "df AS (SELECT ord, count(*)::bigint AS df FROM matched GROUP BY ord)"


def term_statistics_sql(allowed_sql: str) -> str:
    """``(n, term ordinal, df)`` rows: one per query term held by an allowed chunk, or a
    single row with a null ordinal when none is."""
    return (
        f"WITH allowed AS MATERIALIZED ({allowed_sql}), {_STATS}, {_MATCHED}, {_DF} "
        "SELECT s.n, df.ord, df.df FROM stats s LEFT JOIN df ON true"
    )


def _weighted(params: BM25) -> tuple[str, str]:
    """The ``idf`` and ``average`` steps over ``df`` and ``stats``, and the score of a
    chunk: its (chunk, term) weights over ``matched m``, summed in query-term order."""
    k1, b = float(params.k1), float(params.b)
    steps = (
        "idf AS (SELECT df.ord, ln(1.0::float8 + (s.n - df.df + 0.5::float8) "
        "/ (df.df + 0.5::float8)) AS idf FROM df CROSS JOIN stats s), "
        "average AS (SELECT CASE WHEN s.n = 0 OR s.total = 0 THEN 1.0::float8 "
        "ELSE s.total::float8 / s.n::float8 END AS avg FROM stats s)"
    )
    score = (
        "sum(i.idf * m.tf::float8 * "
        f"({k1!r}::float8 + 1.0::float8) / (m.tf::float8 + {k1!r}::float8 * "
        f"(1.0::float8 - {b!r}::float8 + {b!r}::float8 * m.length::float8 / v.avg)) "
        "ORDER BY m.ord)"
    )
    return steps, score


def _scored(params: BM25) -> str:
    """The ranking over ``matched`` (which carries each chunk's ``chunk_id``)."""
    steps, score = _weighted(params)
    return (
        f"{steps} SELECT m.chunk_id, {score} AS score "
        "FROM matched m JOIN idf i ON i.ord = m.ord CROSS JOIN average v "
        "GROUP BY m.id, m.chunk_id ORDER BY score DESC, m.id LIMIT %(k)s"
    )


def bm25_sql(allowed_sql: str, params: BM25 = _BM25) -> str:
    """``(chunk_id, score)`` of the best ``%(k)s`` allowed chunks, best first, ties by
    chunk key. Per (chunk, term) the weight is
    ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))`` in float64,
    summed in query-term order: the operations of ``bm25_top_k``, in its order."""
    return f"WITH allowed AS MATERIALIZED ({allowed_sql}), {_STATS}, {_MATCHED}, {_DF}, " + _scored(
        params
    )


def class_statistics_sql() -> str:
    """``(n, total, term, df)``: the chunks of the ``%(classes)s``, their summed length and,
    per term of ``%(terms)s`` that any of them holds, how many hold it; one row with a null
    term when none does. Totals and not yet folded deltas, summed (migration 7)."""
    classes = "class_id = ANY (%(classes)s::integer[])"
    return (
        "WITH sizes AS (SELECT coalesce(sum(s.chunks), 0)::bigint AS n, "
        "coalesce(sum(s.length), 0)::bigint AS total FROM ("
        f"{_class_size_rows('chunks, length')}) s), "
        "df AS (SELECT t.term, sum(t.df)::bigint AS df FROM ("
        f"SELECT term, df FROM class_terms WHERE term = ANY (%(terms)s::text[]) AND {classes} "
        "UNION ALL SELECT term, df FROM class_term_deltas "
        f"WHERE term = ANY (%(terms)s::text[]) AND {classes}) t GROUP BY t.term) "
        "SELECT s.n, s.total, df.term, df.df FROM sizes s LEFT JOIN df ON true"
    )


def packed_postings_sql() -> str:
    """``(term, class_id, first_chunk, postings, chunks, tfs, lengths)`` of each block of
    a term of ``%(terms)s`` in a class of ``%(classes)s`` that is current: packed from the
    version of its (term, class) that this snapshot sees (totals and deltas, migration 9).
    A pair with no total this snapshot can see has no version (null): its block is not
    read, so a class whose counts the reading role may not see never has a current block.
    The columns hold unsigned big-endian integers in chunk order, each column of one width:
    the chunk ids as gaps after ``first_chunk``, the frequencies and the lengths (migration
    10). (Subqueries rather than joins: searches run with nested loops off, and a hash join
    would read every class's terms.)"""
    return (
        "SELECT b.term, b.class_id, b.first_chunk, b.postings, b.chunks, b.tfs, b.lengths "
        "FROM posting_blocks b "
        "WHERE b.term = ANY (%(terms)s::text[]) AND b.class_id = ANY (%(classes)s::integer[]) "
        "AND b.version = (SELECT t.changes FROM class_terms t "
        "WHERE t.term = b.term AND t.class_id = b.class_id) "
        "+ coalesce((SELECT sum(d.changes) FROM class_term_deltas d "
        "WHERE d.term = b.term AND d.class_id = b.class_id), 0)"
    )


def posting_rows_sql(wanted: Sequence[tuple[str, Sequence[int]]]) -> tuple[str, Params]:
    """``(term, chunks, tfs, lengths)``: big-endian int8, int4 and int4 arrays (in no
    particular order, the same in all three), from the postings rows of each term of
    ``wanted`` in its own classes: a branch per term, so that a class whose block holds a
    term is not read for it, and with its named parameters."""
    branches: list[str] = []
    params: Params = {}
    for i, (term, classes) in enumerate(wanted):
        params[f"term_{i}"], params[f"classes_{i}"] = term, list(classes)
        branches.append(
            "SELECT term, chunk, tf, length FROM postings "
            f"WHERE term = %(term_{i})s AND class_id = ANY (%(classes_{i})s::integer[])"
        )
    sql = (
        "SELECT p.term, string_agg(int8send(p.chunk), ''::bytea), "
        "string_agg(int4send(p.tf), ''::bytea), string_agg(int4send(p.length), ''::bytea) "
        f"FROM ({' UNION ALL '.join(branches)}) p GROUP BY p.term"
    )
    return sql, params


def stale_blocks_sql() -> str:
    """``(term, class_id, df)`` of each (term, class) with ``%(least)s`` postings or more
    whose block is missing or was packed from another version than the folded one, in
    (term, class) order."""
    return (
        "SELECT t.term, t.class_id, t.df FROM class_terms t LEFT JOIN posting_blocks b "
        "ON b.term = t.term AND b.class_id = t.class_id "
        "WHERE t.df >= %(least)s AND b.version IS DISTINCT FROM t.changes "
        "ORDER BY t.term, t.class_id"
    )


def allowed_chunks_sql(allowed_sql: str) -> str:
    """How many allowed chunks there are (the vector plan's selectivity)."""
    return f"WITH allowed AS MATERIALIZED ({allowed_sql}), {_STATS} SELECT n FROM stats"


def exact_vector_sql(allowed_sql: str) -> str:
    """Every allowed chunk with a vector, ranked by inner product without the index (it
    is computed on the column, not on the indexed cast); ties in insertion order."""
    return (
        f"WITH allowed AS MATERIALIZED ({allowed_sql}) "
        "SELECT c.chunk_id, -(c.embedding <#> %(vector)s::vector) AS score "
        "FROM allowed a JOIN chunks c ON c.doc_key = a.key "
        "AND c.sensitivity BETWEEN 0 AND a.ceiling "
        "WHERE c.embedding IS NOT NULL "
        "ORDER BY c.embedding <#> %(vector)s::vector, c.id LIMIT %(k)s"
    )


def hnsw_vector_sql(allowed_sql: str, dim: int) -> str:
    """The HNSW index scanned in distance order, each visited row probed against the
    allowed (document, level) pairs: a hashed subplan, built once per query. The probe
    is written so the planner keeps it as a filter on the index scan instead of turning
    it into a join that would need a sort."""
    cast = f"vector({int(dim)})"
    return (
        f"WITH allowed AS MATERIALIZED ({allowed_sql}) "
        f"SELECT c.chunk_id, -(c.embedding::{cast} <#> %(vector)s::{cast}) AS score "
        "FROM chunks c "
        f"WHERE vector_dims(c.embedding) = {int(dim)} "
        "AND ((c.doc_key, c.sensitivity::integer) IN (SELECT a.key, l.level FROM allowed a "
        "CROSS JOIN generate_series(0, a.ceiling) AS l (level))) IS TRUE "
        f"ORDER BY c.embedding::{cast} <#> %(vector)s::{cast} LIMIT %(k)s"
    )


def admitted_classes(flt: SearchFilter) -> tuple[str, Params]:
    """SQL yielding the ``id`` of every permission class the filter admits, with its named
    parameters: :func:`allowed`'s conditions read from the class (its ACL, corpus,
    document and chunk sensitivity, AI use and expiry) instead of from each document. A
    class is admitted whole; only ``doc_ids`` and ``exclude_doc_ids`` decide per document,
    and the caller's plan handles those."""
    sql, ceiling, params = _scoped(flt, "ac.id", "access_classes ac")
    sql += (
        " WHERE ac.acl && %(principals)s::text[]"
        f" AND ac.doc_sensitivity BETWEEN 0 AND {ceiling}"
        f" AND ac.sensitivity BETWEEN 0 AND {ceiling}"
        " AND (ac.expires_at IS NULL OR ac.expires_at > %(now)s)"
    )
    if flt.require_ai_allowed:
        sql += " AND ac.ai_allowed"
    return sql + " ORDER BY ac.id", params


def class_graph_name(class_id: int, dim: int, part: int = 0, parts: int = 1) -> str:
    """The partial HNSW index over one class's vectors of one width, or over one of the
    ``parts`` into which a class too large for one graph is split."""
    name = f"chunks_class_{int(class_id)}_{int(dim)}"
    return name if parts == 1 else f"{name}_{int(part)}of{int(parts)}"


def graph_part(parts: int, part: int, alias: str = "") -> str:
    """The condition that puts a chunk in one of a class's ``parts`` graphs: a hash of the
    chunk's own id, so which graph holds a chunk depends on that chunk alone, never on rows
    written before it (as the table's serial ``id`` would). Empty for a class in one graph."""
    if parts == 1:
        return ""
    return f" AND mod(hashtext({alias}chunk_id) & 65535, {int(parts)}) = {int(part)}"


def class_graph_ddl(
    class_id: int, dim: int, construction: int, part: int = 0, parts: int = 1
) -> str:
    """``CREATE INDEX CONCURRENTLY`` of a class's graph (or of one part of it): writers go
    on while it builds. Vectors of another width (a model change under way) stay out of it."""
    cid, width = int(class_id), int(dim)
    return (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS "
        f"{class_graph_name(cid, width, part, parts)} ON chunks "
        f"USING hnsw ((embedding::vector({width})) vector_ip_ops) "
        f"WITH (m = 16, ef_construction = {int(construction)}) "
        f"WHERE class_id = {cid} AND vector_dims(embedding) = {width}{graph_part(parts, part)}"
    )


def class_sizes_sql() -> str:
    """``(class_id, chunks)`` of each class of ``%(classes)s`` that has chunks: totals and
    not yet folded deltas, summed (migration 7)."""
    return (
        f"SELECT s.class_id, sum(s.chunks)::bigint FROM ({_class_size_rows('class_id, chunks')}) s "
        "GROUP BY s.class_id HAVING sum(s.chunks) > 0"
    )


def _class_size_rows(columns: str) -> str:
    """The ``columns`` of the size totals and not yet folded deltas of the classes of
    ``%(classes)s`` (migration 7): summed, a class's chunk count and length."""
    classes = "class_id = ANY (%(classes)s::integer[])"
    return (
        f"SELECT {columns} FROM class_sizes WHERE {classes} UNION ALL "
        f"SELECT {columns} FROM class_size_deltas WHERE {classes}"
    )


def class_graphs_vector_sql(graphed: Mapping[int, int], rest: list[int], dim: int) -> str:
    """``(chunk_id, score, id, class_id)`` of the best ``%(k)s`` chunks, best first, ties in
    insertion order (``id``): the top ``k`` of each
    class in ``graphed`` (class id: the number of graphs it is split into) from each of its
    graphs (the class id and part are written into the statement, so the planner matches
    the part's partial index; the caller makes sure no graph over other rows exists that
    the planner could take instead), and the exact top ``k`` of the chunks in the ``rest``
    classes, minus the documents in ``%(excluded)s``. The graphed classes must be ones the
    caller reads whole."""
    cast = f"vector({int(dim)})"
    distance = f"c.embedding::{cast} <#> %(vector)s::{cast}"
    branches = [
        f"(SELECT c.id, c.chunk_id, -({distance}) AS score, c.class_id FROM chunks c "
        f"WHERE c.class_id = {int(cid)} AND vector_dims(c.embedding) = {int(dim)}"
        f"{graph_part(parts, part, 'c.')} ORDER BY {distance}, c.id LIMIT %(k)s)"
        for cid, parts in sorted(graphed.items())
        for part in range(parts)
    ]
    if rest:
        classes = ", ".join(str(int(c)) for c in rest)
        branches.append(
            "(SELECT c.id, c.chunk_id, -(c.embedding <#> %(vector)s::vector) AS score, c.class_id "
            f"FROM chunks c WHERE c.class_id IN ({classes}) AND c.embedding IS NOT NULL "
            "AND NOT (c.doc_key = ANY (ARRAY(SELECT d.key FROM documents d "
            "WHERE d.doc_id = ANY (%(excluded)s::text[])))) "
            "ORDER BY c.embedding <#> %(vector)s::vector, c.id LIMIT %(k)s)"
        )
    union = " UNION ALL ".join(branches)
    return (
        f"SELECT t.chunk_id, t.score, t.id, t.class_id FROM ({union}) t "
        "ORDER BY t.score DESC, t.id LIMIT %(k)s"
    )
