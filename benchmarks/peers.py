"""Clearance's permission-filtered vector search side by side with the tools people would pick
instead: Chroma (the ACL in metadata, a ``where`` filter) and LanceDB (the ACL as a list
column, an ``array_has_any`` prefilter; flat and IVF_PQ).

Not a test: it prints figures and ratios measured in one interleaved run, and never asserts.
The peers are benchmark-only extras, never project dependencies. Install them next to
Clearance — into a separate virtual environment if they would change the project's pins
(``chromadb`` brings uvicorn's ``standard`` extras)::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install . chromadb lancedb

Corpora (each chunk carries its document's ACL; the same four principal sets for every system)
------------------------------------------------------------------------------------------
* ``random`` — the 100k-chunk corpus of ``bench_store.py`` (10,000 documents × 10 chunks, the
  same text, ACLs and seeded random unit vectors, dim 384), queried with ``--queries`` seeded
  random unit vectors. Random vectors are a worst case for approximate indexes: no cluster
  structure to exploit.
* ``scifact`` — real all-MiniLM-L6-v2 vectors (Clearance's bundled int8 model) of SciFact:
  every abstract's title and each of its sentences is a chunk (5,183 documents, ~51k chunks,
  ~10 per document like the synthetic corpus), queried with the 300 test claims. Document
  ``d`` (in file order) gets the ACL of synthetic document ``d``. The zip is read in place
  (``--scifact``; default ``$CLEARANCE_SCIFACT``, else ``../shared/datasets/scifact.zip``)
  and never copied into the repository. Embedding takes a few minutes on 2 cores; ``--cache
  DIR`` keeps the vectors between runs.

A document's ACL is ``group:t<d % 1000>``, ``group:h<d % 100>``, ``group:d<d % 10>`` and
``group:all``; the caller holds one of ``group:t0`` / ``h0`` / ``d0`` / ``all`` (0.1 / 1 / 10 /
100 % of the documents) plus ``user:bench``, ``everyone`` and 40 groups on no document.

Systems
-------
* ``clearance`` — ``SQLiteStore.upsert`` (one transaction per document, text indexed too), then
  ``SQLiteStore.vector_search(vector, SearchFilter(principals), 10)``: exact cosine under the
  permission mask;
* ``chroma`` — ``PersistentClient``, one collection (HNSW, cosine, defaults), metadata
  ``acl0``…``acl3`` (Chroma metadata values are scalars), ``where = {"$or": [{"aclN": {"$in":
  principals}}, …]}``;
* ``lance-flat`` — one LanceDB table (``vector``, ``acl`` ``list<string>``, ``text``), no index:
  ``search(v).distance_type("cosine").where("array_has_any(acl, make_array(…))",
  prefilter=True).limit(10)``;
* ``lance-ivfpq`` — the same on a copy with an ``IVF_PQ`` index (cosine, LanceDB's defaults).

Measured per corpus and selectivity, each query run once per system in rotating order:
latency p50/p95 (ms, the call only), recall@10 against exact search over the allowed set
(numpy, float64), queries returning fewer than 10 results while at least 10 are allowed;
per corpus: insert time and size on disk. Ratios are Clearance's figure over the peer's.

Run from the repository root (with the peers installed)::

    python benchmarks/peers.py [--chunks 100000] [--queries 200] [--scifact PATH]
                               [--corpora random,scifact] [--cache DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tokenize
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from bench_store import (  # noqa: E402
    CHUNKS_PER_DOC,
    SELECTIVITIES,
    Corpus,
    db_size,
    exact_vector_top,
    principal_set,
    query_vectors,
    random_unit_vectors,
)

from clearance.llm.embedding import MiniLMEmbedder  # noqa: E402
from clearance.model import Chunk  # noqa: E402
from clearance.store.base import SearchFilter  # noqa: E402
from clearance.store.sqlite import SQLiteStore  # noqa: E402

try:
    import chromadb
    import lancedb
    import pyarrow as pa
except ImportError:
    sys.exit("the peers are not installed: pip install chromadb lancedb (benchmark only)")

K = 10
DEFAULT_SCIFACT = REPO.parent / "shared" / "datasets" / "scifact.zip"
SYSTEMS = ("clearance", "chroma", "lance-flat", "lance-ivfpq")
Vector = npt.NDArray[np.float32]


@dataclass
class Dataset:
    """Chunks grouped by document (row r belongs to document ``doc[r]``) with vectors."""

    name: str
    texts: list[str]
    doc: npt.NDArray[np.int64]
    vectors: Vector
    queries: Vector
    documents: int = field(init=False)

    def __post_init__(self) -> None:
        self.documents = int(self.doc.max()) + 1

    def rows_of(self, d: int) -> range:
        start = int(np.searchsorted(self.doc, d, side="left"))
        end = int(np.searchsorted(self.doc, d, side="right"))
        return range(start, end)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- data


def random_dataset(chunks: int, queries: int, seed: int) -> Dataset:
    corpus = Corpus.build(chunks, seed)
    texts = [c.text for d in range(corpus.n_docs) for c in corpus.doc(d)[1]]
    doc = np.repeat(np.arange(corpus.n_docs, dtype=np.int64), CHUNKS_PER_DOC)
    return Dataset(
        "random",
        texts,
        doc,
        random_unit_vectors(corpus.n_chunks, seed),
        query_vectors(queries, seed),
    )


def _strings(literal: str) -> list[str]:
    """The string tokens of a Python-list-like string (adjacent strings kept apart)."""
    out: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(literal).readline):
        if tok.type == tokenize.STRING:
            out.append(str(ast.literal_eval(tok.string)))
    return out


# Embedded in blocks, a line of progress each; onnxruntime's threads (``--embed-threads``,
# default every core) spin while they wait, so on a busy machine one thread is faster.
EMBED_BLOCK = 2048
EMBED_THREADS: int | None = None


def _embed(texts: list[str], cache: Path | None, label: str) -> Vector:
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = cache / f"minilm-{label}-{key}.npy" if cache is not None else None
    if path is not None and path.is_file():
        return np.load(path)
    start = time.perf_counter()
    embedder = MiniLMEmbedder(threads=EMBED_THREADS)
    parts: list[Vector] = []
    for i in range(0, len(texts), EMBED_BLOCK):
        parts.append(embedder.embed(texts[i : i + EMBED_BLOCK]).astype(np.float32))
        done, spent = min(len(texts), i + EMBED_BLOCK), time.perf_counter() - start
        left = (len(texts) - done) * spent / done
        print(
            f"  {label}: {done:,}/{len(texts):,} embedded, {spent:.0f} s, ~{left:.0f} s left",
            flush=True,
        )
    vectors = np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
    print(f"  embedded {len(texts):,} {label} texts in {time.perf_counter() - start:.0f} s")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


def scifact_dataset(path: Path, cache: Path | None) -> Dataset:
    if not path.is_file():
        sys.exit(f"SciFact not found at {path} (pass --scifact PATH)")
    with zipfile.ZipFile(path) as zf:

        def rows(name: str) -> list[dict[str, str]]:
            with zf.open(name) as fh:
                return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))

        corpus = rows("corpus_train.csv")
        claims = list(dict.fromkeys(r["claim"] for r in rows("claims_validation.csv")))
    texts: list[str] = []
    doc: list[int] = []
    for d, row in enumerate(corpus):
        for text in [row["title"], *_strings(row["abstract"])]:
            if text.strip():
                texts.append(text)
                doc.append(d)
    return Dataset(
        "scifact",
        texts,
        np.asarray(doc, dtype=np.int64),
        _embed(texts, cache, "scifact-chunks"),
        _embed(claims, cache, "scifact-claims"),
    )


# --------------------------------------------------------------------------- systems


class System:
    name: str

    def insert(self, data: Dataset) -> None: ...

    def search(self, vector: Vector, principals: frozenset[str]) -> list[int]: ...

    def size(self) -> int: ...


class ClearanceSystem(System):
    name = "clearance"

    def __init__(self, root: Path) -> None:
        self.path = root / "clearance.db"
        self.store: SQLiteStore | None = None
        self.filters: dict[frozenset[str], SearchFilter] = {}

    def insert(self, data: Dataset) -> None:
        store = SQLiteStore(self.path)
        for d in range(data.documents):
            document = _DOCUMENTS.document(d)
            rows = data.rows_of(d)
            chunks = [
                Chunk(
                    chunk_id=f"{document.doc_id}#{r}",
                    doc_id=document.doc_id,
                    ordinal=i,
                    text=data.texts[r],
                    locator=f"p{i + 1}",
                    sensitivity=document.sensitivity,
                    origin="bench",
                )
                for i, r in enumerate(rows)
            ]
            store.upsert(document, chunks, list(data.vectors[rows.start : rows.stop]))
        store.warm(vectors=True)  # load the matrix and masks, as a server does at start
        self.store = store

    def search(self, vector: Vector, principals: frozenset[str]) -> list[int]:
        assert self.store is not None
        flt = self.filters.setdefault(principals, SearchFilter(principals=principals))
        hits = self.store.vector_search(vector, flt, K)
        return [int(chunk_id.rsplit("#", 1)[1]) for chunk_id, _ in hits]

    def size(self) -> int:
        return db_size(self.path)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


#: Documents and ACLs exactly as ``bench_store.py`` makes them (no text needed here).
_DOCUMENTS = Corpus(n_docs=0, seed=0, vocab=[], cdf=np.zeros(1))


def _acl(d: int) -> list[str]:
    return sorted(Corpus.acl(d))


class ChromaSystem(System):
    name = "chroma"

    def __init__(self, root: Path) -> None:
        self.path = root / "chroma"
        settings = chromadb.config.Settings(anonymized_telemetry=False)
        self.client = chromadb.PersistentClient(path=str(self.path), settings=settings)
        self.collection: Any = None

    def insert(self, data: Dataset) -> None:
        collection = self.client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        batch = self.client.get_max_batch_size()
        for start in range(0, len(data.texts), batch):
            rows = range(start, min(start + batch, len(data.texts)))
            collection.add(
                ids=[str(r) for r in rows],
                embeddings=data.vectors[rows.start : rows.stop],
                documents=[data.texts[r] for r in rows],
                metadatas=[
                    {f"acl{i}": g for i, g in enumerate(_acl(int(data.doc[r])))} for r in rows
                ],
            )
        self.collection = collection

    def search(self, vector: Vector, principals: frozenset[str]) -> list[int]:
        allowed = sorted(principals)
        where = {"$or": [{f"acl{i}": {"$in": allowed}} for i in range(4)]}
        result = self.collection.query(
            query_embeddings=[vector], n_results=K, where=where, include=["distances"]
        )
        return [int(i) for i in result["ids"][0]]

    def size(self) -> int:
        return dir_size(self.path)


class LanceSystem(System):
    def __init__(self, root: Path, *, ivf_pq: bool) -> None:
        self.name = "lance-ivfpq" if ivf_pq else "lance-flat"
        self.path = root / self.name
        self.ivf_pq = ivf_pq
        self.table: Any = None
        self.index_s = 0.0

    def insert(self, data: Dataset) -> None:
        db = lancedb.connect(str(self.path))
        dim = data.vectors.shape[1]
        schema = pa.schema(
            [
                pa.field("id", pa.int64()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
                pa.field("acl", pa.list_(pa.string())),
                pa.field("text", pa.string()),
            ]
        )
        table = db.create_table("chunks", schema=schema)
        batch = 10_000
        for start in range(0, len(data.texts), batch):
            stop = min(start + batch, len(data.texts))
            flat = pa.array(data.vectors[start:stop].reshape(-1), type=pa.float32())
            table.add(
                pa.table(
                    {
                        "id": pa.array(range(start, stop), type=pa.int64()),
                        "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                        "acl": [_acl(int(data.doc[r])) for r in range(start, stop)],
                        "text": data.texts[start:stop],
                    },
                    schema=schema,
                )
            )
        if self.ivf_pq:
            started = time.perf_counter()
            from lancedb.index import IvfPq

            table.create_index("vector", config=IvfPq(distance_type="cosine"))
            self.index_s = time.perf_counter() - started
        self.table = table

    def search(self, vector: Vector, principals: frozenset[str]) -> list[int]:
        allowed = ", ".join(f"'{p}'" for p in sorted(principals))
        query = (
            self.table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .where(f"array_has_any(acl, make_array({allowed}))", prefilter=True)
            .select(["id", "_distance"])
            .limit(K)
        )
        return [int(i) for i in query.to_arrow()["id"].to_pylist()]

    def size(self) -> int:
        return dir_size(self.path)


# --------------------------------------------------------------------------- the run


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def allowed_rows(data: Dataset, selector: str) -> npt.NDArray[np.intp]:
    principals = principal_set(selector)
    docs = np.array([bool(Corpus.acl(d) & principals) for d in range(data.documents)])
    return np.flatnonzero(docs[data.doc])


def timed(fn: Callable[[], list[int]]) -> tuple[float, list[int]]:
    start = time.perf_counter()
    out = fn()
    return (time.perf_counter() - start) * 1000, out


def run_dataset(data: Dataset, root: Path) -> dict[str, Any]:
    print(
        f"\n{data.name}: {len(data.texts):,} chunks, {data.documents:,} documents, "
        f"{len(data.queries)} queries"
    )
    systems: list[System] = [
        ClearanceSystem(root),
        ChromaSystem(root),
        LanceSystem(root, ivf_pq=False),
        LanceSystem(root, ivf_pq=True),
    ]
    out: dict[str, Any] = {"chunks": len(data.texts), "documents": data.documents, "systems": {}}
    for system in systems:
        started = time.perf_counter()
        system.insert(data)
        seconds = time.perf_counter() - started
        extra = (
            {"index_seconds": round(system.index_s, 2)} if isinstance(system, LanceSystem) else {}
        )
        out["systems"][system.name] = {
            "insert_seconds": round(seconds, 2),
            "size_bytes": system.size(),
            **extra,
        }
        print(f"  {system.name:<12} insert {seconds:7.1f} s, {system.size() / 1e6:7.1f} MB")
    out["selectivity"] = {}
    for label, selector in SELECTIVITIES:
        principals = principal_set(selector)
        rows = allowed_rows(data, selector)
        truth = exact_vector_top(data.vectors, rows, data.queries, K)
        for system in systems:  # warm-up, untimed
            for vector in data.queries[:3]:
                system.search(vector, principals)
        times: dict[str, list[float]] = {s.name: [] for s in systems}
        recalls: dict[str, list[float]] = {s.name: [] for s in systems}
        short: dict[str, int] = dict.fromkeys(times, 0)
        leaks: dict[str, int] = dict.fromkeys(times, 0)
        allowed = set(rows.tolist())
        for qi, vector in enumerate(data.queries):
            order = systems[qi % len(systems) :] + systems[: qi % len(systems)]
            expected = set(truth[qi].tolist())
            for system in order:
                ms, found = timed(lambda s=system, v=vector, p=principals: s.search(v, p))
                times[system.name].append(ms)
                recalls[system.name].append(len(set(found) & expected) / max(1, len(expected)))
                short[system.name] += len(found) < min(K, len(rows))
                leaks[system.name] += sum(r not in allowed for r in found)
        figures = {
            s.name: {
                "p50_ms": round(statistics.median(times[s.name]), 3),
                "p95_ms": round(pct(times[s.name], 0.95), 3),
                "recall_at_10": round(statistics.fmean(recalls[s.name]), 4),
                "fewer_than_k": short[s.name],
                "outside_allowed_set": leaks[s.name],
            }
            for s in systems
        }
        out["selectivity"][label] = {"allowed_chunks": len(rows), "systems": figures}
        print(f"  {label:>5} ({len(rows):,} chunks allowed)")
        for name, f in figures.items():
            print(
                f"    {name:<12} p50 {f['p50_ms']:8.2f} ms  p95 {f['p95_ms']:8.2f} ms  "
                f"recall@10 {f['recall_at_10']:.3f}  <k {f['fewer_than_k']:>3}  "
                f"outside {f['outside_allowed_set']}"
            )
    for system in systems:
        close = getattr(system, "close", None)
        if callable(close):
            close()
    return out


def ratios(result: dict[str, Any]) -> None:
    """Clearance's p95 and recall over each peer's, per selectivity."""
    for corpus, data in result["corpora"].items():
        print(f"\n{corpus}: Clearance p95 / peer p95 (recall@10: Clearance vs peer)")
        peers = [s for s in SYSTEMS if s != "clearance"]
        print(f"  {'selectivity':<12}" + "".join(f"{p:>28}" for p in peers))
        for label, sel in data["selectivity"].items():
            mine = sel["systems"]["clearance"]
            cells = []
            for peer in peers:
                theirs = sel["systems"][peer]
                ratio = mine["p95_ms"] / theirs["p95_ms"] if theirs["p95_ms"] else float("nan")
                cells.append(
                    f"{ratio:9.3f}× ({mine['recall_at_10']:.2f} vs {theirs['recall_at_10']:.2f})"
                )
            print(f"  {label:<12}" + "".join(f"{c:>28}" for c in cells))
        inserts = data["systems"]
        mine = inserts["clearance"]
        print(
            "  insert: "
            + ", ".join(
                f"{p} {mine['insert_seconds'] / inserts[p]['insert_seconds']:.2f}×" for p in peers
            )
            + "; size on disk: "
            + ", ".join(f"{p} {mine['size_bytes'] / inserts[p]['size_bytes']:.2f}×" for p in peers)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200, help="random-corpus queries")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--corpora", default="random,scifact")
    parser.add_argument(
        "--scifact",
        type=Path,
        default=Path(os.environ.get("CLEARANCE_SCIFACT", DEFAULT_SCIFACT)),
        help="SciFact zip (default: $CLEARANCE_SCIFACT, else ../shared/datasets/scifact.zip)",
    )
    parser.add_argument("--cache", type=Path, help="keep the SciFact MiniLM vectors here")
    parser.add_argument(
        "--embed-threads", type=int, help="onnxruntime threads for embedding (default: all)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    global EMBED_THREADS
    EMBED_THREADS = args.embed_threads
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    result: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "versions": {
            "chromadb": chromadb.__version__,
            "lancedb": lancedb.__version__,
            "numpy": np.__version__,
        },
        "cpus": len(os.sched_getaffinity(0)),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "corpora": {},
    }
    root = Path(tempfile.mkdtemp(prefix="peers-"))
    try:
        for name in corpora:
            if name == "random":
                data = random_dataset(args.chunks, args.queries, args.seed)
            elif name == "scifact":
                data = scifact_dataset(args.scifact, args.cache)
            else:
                sys.exit(f"unknown corpus {name!r} (random, scifact)")
            workdir = root / name
            workdir.mkdir()
            result["corpora"][name] = run_dataset(data, workdir)
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    ratios(result)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
