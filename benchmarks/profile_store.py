"""Profile of the store's search path on ``bench_store.py``'s corpus (prints, never asserts).

Same corpus, filters, queries and random query vectors as ``bench_store.py``, in an index with
vectors; the in-memory indexes are built before anything is timed. Two sections:

1. each step of ``SQLiteStore.retrieve`` (k=50) at every selectivity, timed on its own through
   the store's internals (``bench_store.steps``): query analysis, the ``_indexes()`` cache
   check, ``AccessIndex.chunk_mask``, the term-id lookup, ``bm25_top_k``, the vector product
   (``_vector``), ``hits`` for 10 chunks, and the whole ``retrieve``;
2. the permission mask computed once per request — ``retrieve(q, v, flt, 50)``, as
   ``HybridSearcher`` does — vs twice — ``lexical_search`` then ``vector_search``, each with
   its own cache check and mask. Both must return the same lists.

Run from the repository root::

    .venv/bin/python benchmarks/profile_store.py [--chunks N] [--queries N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench_store import (
    CHUNKS_PER_DOC,
    SELECTIVITIES,
    STEP_COUNT,
    Corpus,
    ingest,
    lat,
    principal_set,
    progress,
    query_vectors,
    random_unit_vectors,
    steps,
    time_each,
)

from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore


def cell(figures: dict[str, float]) -> str:
    return f"{figures['p50_ms']:7.3f} /{figures['p95_ms']:7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()

    corpus = Corpus.build(args.chunks, args.seed)
    queries = corpus.queries(args.queries)
    qvecs = query_vectors(len(queries), args.seed)
    print(f"command: {' '.join(['.venv/bin/python', *sys.argv])}")
    print(f"corpus: {corpus.n_docs} documents × {CHUNKS_PER_DOC} chunks; {len(queries)} queries")
    with tempfile.TemporaryDirectory(prefix="clearance-profile-store-") as tmp:
        path = Path(tmp) / "index.db"
        ingest(
            corpus, path, "ingest + random vectors", random_unit_vectors(corpus.n_chunks, args.seed)
        )
        store = SQLiteStore(path)
        filters = {label: SearchFilter(principals=principal_set(s)) for label, s in SELECTIVITIES}
        store.retrieve(queries[0], qvecs[0], filters["100%"], 50)  # build every in-memory index
        qidx = range(len(queries))
        per_step: dict[str, dict[str, dict[str, float]]] = {}
        once: dict[str, dict[str, float]] = {}
        twice: dict[str, dict[str, float]] = {}
        same: dict[str, int] = {}
        with progress() as bar:
            task = bar.add_task("profile", total=len(filters) * len(queries) * (STEP_COUNT + 2))

            def advance() -> None:
                bar.advance(task)

            for label, flt in filters.items():
                per_step[label] = steps(store, flt, queries, qvecs, advance)

                def request(i: int, flt: SearchFilter = flt) -> object:
                    return store.retrieve(queries[i], qvecs[i], flt, 50)

                def separately(i: int, flt: SearchFilter = flt) -> object:
                    lexical = store.lexical_search(queries[i], flt, 50)
                    return lexical, store.vector_search(qvecs[i], flt, 50)

                ms, together = time_each(request, qidx, advance)
                once[label] = lat(ms)
                ms, apart = time_each(separately, qidx, advance)
                twice[label] = lat(ms)
                same[label] = sum(
                    tuple(a) == tuple(b) for a, b in zip(together, apart, strict=True)
                )
        store.close()

    labels = list(filters)
    print("\n## Steps of retrieve k=50 (wall ms, p50 / p95)")
    head = f"{'step':<36} | " + " | ".join(f"{'admits ' + x:>16}" for x in labels)
    print(head)
    print("-" * len(head))
    for name in per_step[labels[0]]:
        print(f"{name:<36} | " + " | ".join(f"{cell(per_step[x][name]):>16}" for x in labels))

    print("\n## Permission mask once per request vs twice (wall ms, p50 / p95)")
    head = (
        f"{'admits':>7} | {'retrieve (mask once)':>20} | {'lexical + vector (twice)':>24} | "
        f"{'saved p50':>9} | same results"
    )
    print(head)
    print("-" * len(head))
    for x in labels:
        saved = twice[x]["p50_ms"] - once[x]["p50_ms"]
        print(
            f"{x:>7} | {cell(once[x]):>20} | {cell(twice[x]):>24} | {saved:9.3f} | "
            f"{same[x]}/{len(queries)}"
        )


if __name__ == "__main__":
    main()
