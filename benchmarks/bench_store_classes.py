"""The embedded store's approximate vector searches against exact ranking, side by side in
one run, on real MiniLM vectors and a company's ACL layout (the scale issue).

Run from the repository root::

    .venv/bin/python benchmarks/bench_store_classes.py --chunks 200000 [--json OUT]

**The index.** A real SQLite store file, filled through ``SQLiteStore.upsert`` with
documents of ``--per-doc`` chunks. Chunk texts are SciFact passages and their vectors are
MiniLM's (``bench_ann_classes.py`` says how the real vectors are cached and how larger sets
are made from them with small perturbations; a copy keeps its source passage's text).
**The layout** is ``bench_ann_classes.layout``: an all-staff class of 40 %, 30 departments,
up to 3,000 small classes; each document's ACL is its class's one group. **The callers**
read about 0.1 %, 1 %, 10 % and 60-100 % of the chunks.

The store is opened on that file one variant after the other:

* exact ranking;
* ``vector_search = "classes"`` once per ``--exact-below`` threshold (``vector_exact_below``;
  ``hnsw_ef_search`` ``--ef``), unless ``--no-graphs-only``;
* the first threshold with classes of ``--scan-above`` chunks or more scanned instead of
  graphed (``vector_scan_above``), once per ``--scan-rescore`` (``vector_scan_rescore``: 0
  scans the float vectors exactly; otherwise their signs, that many nearest scored exactly);
* ``vector_search = "signs"`` once per ``--signs`` rescore count, from
  ``--signs-exact-below`` chunks.

Reported per variant: the time from opening to the first search of the widest caller
(graphs are then built on the store's worker thread, and that search ranks exactly
meanwhile), the time until every caller's graphs are built, what the graphs or codes hold,
and per caller p50/p95 of the vector search and of the hybrid retrieval (lexical and
vector, one mask) and recall@10 of the vector search against exact ranking, over SciFact
claims as queries. The last variant also moves chunks between classes by their ACL.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ann_classes import (
    DEFAULT_SCIFACT,
    callers,
    embedded,
    grown,
    layout,
    percentile,
    scifact_texts,
)
from bench_store import bench_document

from clearance.model import Chunk, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.classes import ClassPlan
from clearance.store.saved import saved_path
from clearance.store.signs import SignPlan
from clearance.store.sqlite import SQLiteStore

K = 10


def fill(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    real, _ = embedded(args.scifact)
    texts, _ = scifact_texts(args.scifact)
    vectors = grown(real, args.chunks, args.noise, seed=1)
    lay = layout(args.chunks // args.per_doc, seed=2)  # one class per document
    store = SQLiteStore(path)
    start = time.perf_counter()
    docs = args.chunks // args.per_doc
    for d in range(docs):
        doc = bench_document(f"bench:{d}", d, frozenset({f"group:c{int(lay.classes[d])}"}))
        rows = range(d * args.per_doc, (d + 1) * args.per_doc)
        chunks = [
            Chunk(
                chunk_id=f"bench:{d}#{i}",
                doc_id=doc.doc_id,
                ordinal=i,
                text=texts[r % len(texts)],
                locator=f"p{i + 1}",
                sensitivity=Sensitivity.INTERNAL,
                origin="bench",
            )
            for i, r in enumerate(rows)
        ]
        store.upsert(doc, chunks, [vectors[r] for r in rows])
        if d % 500 == 0 or d == docs - 1:
            rate = (d + 1) * args.per_doc / (time.perf_counter() - start)
            print(f"\rfilling: {(d + 1) * args.per_doc:,} chunks ({rate:,.0f}/s)", end="")
    print()
    store.close()
    return {"fill_s": round(time.perf_counter() - start, 1), "layout": lay}


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    path = workdir / "index.db"
    filled = fill(path, args)
    lay = filled["layout"]
    _, query_vectors = embedded(args.scifact)
    _, claims = scifact_texts(args.scifact)
    queries = list(range(min(args.queries, len(claims))))
    docs = args.chunks // args.per_doc
    doc_classes = np.asarray(lay.classes)
    who = callers(lay, docs, seed=3)
    filters = [
        SearchFilter(
            principals=frozenset(f"group:c{c}" for c in w.classes),
            corpora={"bench": Sensitivity.INTERNAL},
            max_sensitivity=Sensitivity.INTERNAL,
        )
        for w in who
    ]
    shares = [round(100 * float(np.isin(doc_classes, list(w.classes)).mean()), 2) for w in who]
    variants: list[tuple[str, ClassPlan | SignPlan | None]] = [("exact", None)]
    if not args.no_graphs_only:
        variants += [
            (f"classes {t:,}", ClassPlan(exact_below=t, expansion_search=args.ef))
            for t in args.exact_below
        ]
    if args.scan_above:
        first = args.exact_below[0]
        for rescore in args.scan_rescore:
            how = f"signs, {rescore:,} rescored" if rescore else "floats"
            variants.append(
                (
                    f"classes {first:,}, scan from {args.scan_above:,} ({how})",
                    ClassPlan(
                        exact_below=first,
                        expansion_search=args.ef,
                        scan_above=args.scan_above,
                        scan_rescore=rescore,
                    ),
                )
            )
    for rescore in args.signs:
        variants.append(
            (
                f"signs from {args.signs_exact_below:,}, {rescore:,} rescored",
                SignPlan(exact_below=args.signs_exact_below, rescore=rescore),
            )
        )
    reopened = reopen_from_saved_copy(path, filters[-1], query_vectors[0], claims[0])
    results: dict[str, dict[str, Any]] = {}
    for label, plan in variants:
        t0 = time.perf_counter()
        if isinstance(plan, SignPlan):
            store = SQLiteStore(path, vector_signs=plan)
        else:
            store = SQLiteStore(path, vector_classes=plan)
        store.vector_search(query_vectors[0], filters[-1], K)  # the widest caller
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        if store._classes is not None:  # graphs for every caller, built by the worker
            settle(store, filters, query_vectors[0])
        built_s = time.perf_counter() - t0
        graphs_mb = 0.0
        if store._classes is not None:  # saved size of every graph: vectors and links
            graphs = store._classes._graphs.values()
            graphs_mb = sum(g.serialized_length for g in graphs) / 2**20
        if store._signs is not None and store._signs._words is not None:  # the codes
            graphs_mb = store._signs._words[:, : store._signs._coded].nbytes / 2**20
        per_caller = []
        for flt in filters:
            vector_ms, hybrid_ms, found = [], [], []
            for q in queries:
                t0 = time.perf_counter()
                got = store.vector_search(query_vectors[q], flt, K)
                vector_ms.append(1000 * (time.perf_counter() - t0))
                t0 = time.perf_counter()
                store.retrieve(claims[q], query_vectors[q], flt, K)
                hybrid_ms.append(1000 * (time.perf_counter() - t0))
                found.append([c for c, _ in got])
            per_caller.append(
                {
                    "vector_ms": (percentile(vector_ms, 50), percentile(vector_ms, 95)),
                    "hybrid_ms": (percentile(hybrid_ms, 50), percentile(hybrid_ms, 95)),
                    "found": found,
                }
            )
        move: dict[str, float] = {}
        if plan is not None and plan is variants[-1][1]:
            move = permission_move(store, lay, filters[-1], query_vectors[0], args.move)
        store.close()
        results[label] = {
            "first_s": round(first_s, 2),
            "graphs_s": round(built_s, 1),
            "graphs_mb": round(graphs_mb),
            "callers": per_caller,
            "move": move,
        }
        print(f"{label}: open to first search {first_s:.2f} s, graphs built in {built_s:.1f} s")
    exact = [c["found"] for c in results["exact"]["callers"]]
    for result in results.values():
        for mine, truth in zip(result["callers"], exact, strict=True):
            hits = [
                len(set(a) & set(e)) / max(len(e), 1)
                for a, e in zip(mine.pop("found"), truth, strict=True)
            ]
            mine["recall_at_10"] = round(float(np.mean(hits)), 4)
    return {
        "chunks": args.chunks,
        "per_doc": args.per_doc,
        "ef": args.ef,
        "fill_s": filled["fill_s"],
        "saved_copy": reopened,
        "callers": [{"name": w.name, "share": sh} for w, sh in zip(who, shares, strict=True)],
        "variants": results,
    }


def reopen_from_saved_copy(
    path: Path, widest: SearchFilter, query: Any, text: str
) -> dict[str, float]:
    """Open with ``saved_copy`` on: the first search rebuilds the copy and closing saves
    it; then open again and time the first search of the widest caller, vector and hybrid,
    from the saved copy (the page cache is warm: the files were just written)."""
    t0 = time.perf_counter()
    store = SQLiteStore(path, saved_copy=True)
    store.vector_search(query, widest, K)
    built_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.close()
    save_s = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in saved_path(path).iterdir()) / 2**20
    t0 = time.perf_counter()
    store = SQLiteStore(path, saved_copy=True)
    store.vector_search(query, widest, K)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.retrieve(text, query, widest, K)
    hybrid_s = time.perf_counter() - t0
    store.close()
    print(
        f"saved copy: built in {built_s:.1f} s, saved in {save_s:.1f} s ({size:,.0f} MB); "
        f"reopened, first search {first_s:.2f} s, then hybrid {hybrid_s:.2f} s"
    )
    return {
        "built_s": round(built_s, 2),
        "save_s": round(save_s, 2),
        "size_mb": round(size),
        "first_s": round(first_s, 2),
        "first_hybrid_s": round(hybrid_s, 2),
    }


def settle(store: SQLiteStore, filters: list[SearchFilter], query: Any) -> None:
    """Search as each caller until the worker has nothing left to build (a class first
    seen is ordered there; a later search then asks for the graph of the part read)."""
    classes = store._classes
    assert classes is not None
    while True:
        for flt in filters:
            store.vector_search(query, flt, K)
        if not classes._pending and classes._worker is None:
            return
        classes.wait()


def permission_move(
    store: SQLiteStore, lay: Any, widest: SearchFilter, query: Any, chunks: int
) -> dict[str, float]:
    """Move ``chunks`` chunks (whole documents) of the first department into the all-staff
    class by their ACL alone: the write, the next search of the widest caller (which the
    new permissions already govern, ranking the two changed classes exactly), and the
    worker's rebuild of those classes' graphs."""
    department = lay.departments[0]
    docs = [d for d, c in enumerate(np.asarray(lay.classes).tolist()) if c == department]
    moved = docs[: max(1, chunks // 10)]  # ten chunks a document
    t0 = time.perf_counter()
    store.set_acls({f"bench:{d}": frozenset({f"group:c{lay.staff}"}) for d in moved})
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.vector_search(query, widest, K)
    next_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if store._classes is not None:  # (sign codes have nothing to rebuild)
        settle(store, [widest], query)
    rebuilt_s = time.perf_counter() - t0
    return {
        "chunks": len(moved) * 10,
        "write_s": round(write_s, 2),
        "next_search_s": round(next_s, 2),
        "graphs_rebuilt_s": round(rebuilt_s, 1),
    }


def table(result: dict[str, Any]) -> str:
    def ms(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.1f} / {pair[1]:.1f}"

    names = list(result["variants"])
    lines = [
        f"{result['chunks']:,} chunks ({result['per_doc']} per document), ef {result['ef']}; "
        f"filled in {result['fill_s']} s",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        "| open → first search of the widest caller (s) | "
        + " | ".join(str(result["variants"][n]["first_s"]) for n in names)
        + " |",
        "| every caller's graphs built, on the worker (s) | "
        + " | ".join(str(result["variants"][n]["graphs_s"]) for n in names)
        + " |",
        "| graphs' or codes' size (MB) | "
        + " | ".join(f"{result['variants'][n]['graphs_mb']:,}" for n in names)
        + " |",
    ]
    for i, caller in enumerate(result["callers"]):
        for kind in ("vector", "hybrid"):
            cells = []
            for n in names:
                row = result["variants"][n]["callers"][i]
                cell = ms(row[f"{kind}_ms"])
                if kind == "vector" and n != "exact":
                    cell += f", recall {row['recall_at_10']}"
                cells.append(cell)
            lines.append(
                f"| {caller['name']} ({caller['share']} %): {kind} p50 / p95 (ms) | "
                + " | ".join(cells)
                + " |"
            )
    saved = result.get("saved_copy")
    if saved:
        lines += [
            "",
            f"Saved copy (`saved_copy`, exact ranking): built by the first search in "
            f"{saved['built_s']} s, saved on closing in {saved['save_s']} s "
            f"({saved['size_mb']:,} MB); opened again, the widest caller's first search in "
            f"{saved['first_s']} s, its first hybrid search then {saved['first_hybrid_s']} s.",
        ]
    for n in names:
        move = result["variants"][n].get("move")
        if move:
            lines += [
                "",
                f"{n}: a permission change moving {move['chunks']:,} chunks from a department "
                f"to the all-staff class: written in {move['write_s']} s; the next search, "
                f"under the new permissions, {move['next_search_s']} s"
                + (
                    f"; both classes' graphs rebuilt on the worker in "
                    f"{move['graphs_rebuilt_s']} s (searched exactly until then)."
                    if n.startswith("classes")
                    else " (nothing to rebuild)."
                ),
            ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--per-doc", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--exact-below", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--ef", type=int, default=128)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--move", type=int, default=10_000, help="chunks to move (by ACL)")
    parser.add_argument(
        "--scan-above", type=int, default=100_000, help="one more variant: scan classes this large"
    )
    parser.add_argument(
        "--scan-rescore",
        type=int,
        nargs="+",
        default=[0, 4000],
        help="one scan variant each: rows rescored after the sign scan (0: float scan)",
    )
    parser.add_argument(
        "--no-graphs-only", action="store_true", help="leave out the variants without a scan"
    )
    parser.add_argument(
        "--signs",
        type=int,
        nargs="*",
        default=[8000],
        help='one "signs" variant each: rows rescored after the sign codes',
    )
    parser.add_argument("--signs-exact-below", type=int, default=20_000)
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args, Path(tmp))
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
