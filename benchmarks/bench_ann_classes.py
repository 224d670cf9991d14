"""Approximate search by permission class: usearch, hnswlib and faiss-cpu side by side, on
real MiniLM vectors, with a company's ACL layout (the scale issue's library choice).

Run from the repository root::

    .venv/bin/pip install usearch hnswlib faiss-cpu   # candidates, not dependencies yet
    .venv/bin/python benchmarks/bench_ann_classes.py --chunks 100000 [--json OUT]

**The vectors.** SciFact's 5,183 abstracts, cut into passages of about 800 characters at
sentence ends (the product's chunk size), embedded with the bundled MiniLM int8 model (cached
in ``benchmarks/.cache/``; about ten minutes the first time on 2 cores). Larger sets are made
from those real vectors: each copy adds Gaussian noise of ``--noise`` per dimension (default
0.03, about a cosine of 0.85 to its source) and is normalised again, so neighbourhoods keep
the shape of real text embeddings, which uniform random vectors do not have. Queries are
SciFact's claims, embedded the same way.

**The layout.** One all-staff class holds 40 % of the chunks; 30 department classes share
45 %; 3,000 per-team or per-person classes share the rest (50 chunks each at 1M, 5 at
100k). Callers see 0.1 % (one person's classes), 1 % (a department), 10 % (several
departments) and 60-100 % (all-staff and departments).

``--exact-below`` (default 1,000) is the size from which a class gets its own index.

The fourth candidate gives a class of 100,000 chunks or more no graph at all: its vectors
as 8-bit codes scanned whole, the best 50 re-scored exactly in float32 (faiss's scalar
quantiser); the other large classes get hnswlib graphs.

**The method under test.** A class of at least ``--exact-below`` chunks gets its own
approximate index, built only over that class's rows; smaller classes are ranked exactly,
over the union of the caller's small classes. A caller's top 10 is the best 10 of its
classes' results, so it is a function of the rows the caller may read and nothing else.
Recall@10 is measured against the exact top 10 over the same allowed rows.

With ``--reopen``, the indexes are saved, dropped and opened again, and the time to the
first search of the widest caller is reported (hnswlib graphs and 8-bit scans only).

Reported per library, side by side in one run: build time and index size; p50/p95 search
time and recall@10 per selectivity; the time to move 10 % of the largest department's
chunks to the all-staff class (a permission-only change: removed from one index, added to
another, no re-embedding).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import re
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SCIFACT = REPO.parent / "shared" / "datasets" / "scifact.zip"
CACHE = REPO / "benchmarks" / ".cache"
K = 10
Vectors = npt.NDArray[np.float32]


# --------------------------------------------------------------------------- real vectors


def _abstract(literal: str) -> str:
    """SciFact's abstract column is a Python list of sentences, written as a literal."""
    sentences = ast.literal_eval(literal)
    return " ".join(str(s) for s in sentences)


def passages(text: str, size: int = 800) -> list[str]:
    """``text`` packed into passages of about ``size`` characters at sentence ends."""
    out: list[str] = []
    current = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if current and len(current) + len(sentence) + 1 > size:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    return out


def scifact_texts(path: Path) -> tuple[list[str], list[str]]:
    """(passages of the corpus, claims)."""
    with zipfile.ZipFile(path) as zf:

        def rows(name: str) -> list[dict[str, str]]:
            with zf.open(name) as fh:
                return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))

        corpus = rows("corpus_train.csv")
        claims = rows("claims_validation.csv")
    texts = [
        f"{row['title']}\n{chunk}"
        for row in corpus
        for chunk in passages(_abstract(row["abstract"]))
    ]
    queries = list(dict.fromkeys(row["claim"] for row in claims))
    return texts, queries


def embedded(path: Path) -> tuple[Vectors, Vectors]:
    """(passage vectors, query vectors), from the cache or embedded now with progress."""
    cache = CACHE / "scifact-minilm.npz"
    if cache.is_file():
        found = np.load(cache)
        return found["passages"], found["queries"]
    from clearance.llm.embedding import MiniLMEmbedder

    texts, queries = scifact_texts(path)
    embedder = MiniLMEmbedder()
    rows: list[Vectors] = []
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        rows.append(np.asarray(embedder.embed(texts[i : i + 256]), dtype=np.float32))
        done = min(i + 256, len(texts))
        rate = done / (time.perf_counter() - start)
        print(f"\rembedding SciFact: {done}/{len(texts)} passages ({rate:.0f}/s)", end="")
    print()
    vectors = np.vstack(rows)
    query_vectors = np.asarray(embedder.embed(queries), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(cache, passages=vectors, queries=query_vectors)
    return vectors, query_vectors


def grown(real: Vectors, n: int, noise: float, seed: int) -> Vectors:
    """``n`` vectors: the real ones, then noisy copies of them, normalised."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[: min(n, len(real))] = real[: min(n, len(real))]
    filled = len(real)
    while filled < n:
        take = min(len(real), n - filled)
        copy = real[:take] + rng.normal(0.0, noise, (take, real.shape[1])).astype(np.float32)
        copy /= np.linalg.norm(copy, axis=1, keepdims=True)
        out[filled : filled + take] = copy
        filled += take
    return out


# --------------------------------------------------------------------------- the layout


@dataclass
class Layout:
    """Each chunk's permission class, and the classes each kind of caller may read."""

    classes: npt.NDArray[np.int32]  # chunk -> class id
    staff: int
    departments: list[int]
    small: list[int]

    def members(self) -> dict[int, npt.NDArray[np.int64]]:
        order = np.argsort(self.classes, kind="stable")
        ids, starts = np.unique(self.classes[order], return_index=True)
        ends = [*starts[1:], len(order)]
        return {int(c): order[s:e] for c, s, e in zip(ids, starts, ends, strict=True)}


def layout(n: int, seed: int) -> Layout:
    rng = np.random.default_rng(seed)
    classes = np.empty(n, dtype=np.int32)
    staff_n = int(n * 0.40)
    dept_n = int(n * 0.45)
    small_n = n - staff_n - dept_n
    small_count = min(3_000, max(1, small_n // 5))
    labels = [np.zeros(staff_n, dtype=np.int32)]
    departments = list(range(1, 31))
    labels.append(rng.choice(np.array(departments, dtype=np.int32), dept_n))
    small = list(range(31, 31 + small_count))
    labels.append(np.array(small, dtype=np.int32)[np.arange(small_n) % small_count])
    classes[:] = np.concatenate(labels)
    rng.shuffle(classes)
    return Layout(classes, 0, departments, small)


@dataclass(frozen=True)
class Caller:
    name: str
    classes: frozenset[int]


def callers(lay: Layout, n: int, seed: int) -> list[Caller]:
    rng = np.random.default_rng(seed)
    size = np.bincount(lay.classes)

    def smalls(share: float) -> set[int]:
        """Small classes holding about ``share`` of the chunks (one at least)."""
        chosen: set[int] = set()
        for c in rng.permutation(lay.small):
            if chosen and sum(size[k] for k in chosen) >= share * n:
                break
            chosen.add(int(c))
        return chosen

    def departments_for(share: float) -> set[int]:
        chosen: set[int] = set()
        for d in rng.permutation(lay.departments):
            if sum(size[c] for c in chosen) >= share * n:
                break
            chosen.add(int(d))
        return chosen

    person = smalls(0.001)
    one_department = {int(lay.departments[0])} | smalls(0.0002)
    several = departments_for(0.10) | smalls(0.0005)
    most = {lay.staff} | departments_for(0.30) | smalls(0.001)
    out = [
        Caller("0.1 %", frozenset(person)),
        Caller("1 %", frozenset(one_department)),
        Caller("10 %", frozenset(several)),
        Caller("60-100 %", frozenset(most)),
    ]
    return out


# --------------------------------------------------------------------------- candidates


class ClassIndex:
    """One library's approximate index over one class's rows (ids are chunk numbers)."""

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors]:
        raise NotImplementedError

    def remove(self, ids: npt.NDArray[np.int64]) -> None:
        raise NotImplementedError

    def add(self, vectors: Vectors, ids: npt.NDArray[np.int64]) -> None:
        raise NotImplementedError

    def size_bytes(self) -> int:
        raise NotImplementedError


class Hnswlib(ClassIndex):
    def __init__(self, vectors: Vectors, ids: npt.NDArray[np.int64], ef: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=vectors.shape[1])
        self.index.init_index(max_elements=len(ids) * 2, ef_construction=128, M=16, random_seed=7)
        self.index.add_items(vectors, ids)
        self.index.set_ef(ef)

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors]:
        labels, distances = self.index.knn_query(query, k=min(k, self.index.get_current_count()))
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)

    def remove(self, ids: npt.NDArray[np.int64]) -> None:
        for i in ids:
            self.index.mark_deleted(int(i))

    def add(self, vectors: Vectors, ids: npt.NDArray[np.int64]) -> None:
        self.index.add_items(vectors, ids, replace_deleted=False)

    def size_bytes(self) -> int:
        with tempfile.NamedTemporaryFile() as fh:
            self.index.save_index(fh.name)
            return Path(fh.name).stat().st_size

    def save(self, path: Path) -> None:
        self.index.save_index(str(path / "graph.bin"))

    @classmethod
    def load(cls, path: Path, dim: int, ef: int) -> Hnswlib:
        import hnswlib

        loaded = cls.__new__(cls)
        loaded.index = hnswlib.Index(space="ip", dim=dim)
        loaded.index.load_index(str(path / "graph.bin"))
        loaded.index.set_ef(ef)
        return loaded


class Usearch(ClassIndex):
    def __init__(self, vectors: Vectors, ids: npt.NDArray[np.int64], ef: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=vectors.shape[1],
            metric="ip",
            dtype="f32",
            connectivity=16,
            expansion_add=128,
            expansion_search=ef,
        )
        self.index.add(ids, vectors, threads=2)

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors]:
        found = self.index.search(query[0], k)
        return np.asarray(found.keys, dtype=np.int64), (1.0 - found.distances).astype(np.float32)

    def remove(self, ids: npt.NDArray[np.int64]) -> None:
        self.index.remove(ids)

    def add(self, vectors: Vectors, ids: npt.NDArray[np.int64]) -> None:
        self.index.add(ids, vectors)

    def size_bytes(self) -> int:
        return len(self.index.save())


class Faiss(ClassIndex):
    """HNSW32 with an id map. faiss's HNSW cannot remove a vector: a move rebuilds the
    class's index (what is timed), as ``remove`` does here."""

    def __init__(self, vectors: Vectors, ids: npt.NDArray[np.int64], ef: int) -> None:
        import faiss

        faiss.omp_set_num_threads(2)
        self.ef = ef
        self.vectors = dict(zip(ids.tolist(), vectors, strict=True))
        self._build()

    def _build(self) -> None:
        import faiss

        ids = np.fromiter(self.vectors, dtype=np.int64)
        matrix = np.vstack(list(self.vectors.values())).astype(np.float32)
        hnsw = faiss.IndexHNSWFlat(matrix.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = 128
        hnsw.hnsw.efSearch = self.ef
        self.index = faiss.IndexIDMap(hnsw)
        self.index.add_with_ids(matrix, ids)

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors]:
        scores, labels = self.index.search(query, k)
        return labels[0].astype(np.int64), scores[0].astype(np.float32)

    def remove(self, ids: npt.NDArray[np.int64]) -> None:
        for i in ids.tolist():
            self.vectors.pop(i, None)
        self._build()

    def add(self, vectors: Vectors, ids: npt.NDArray[np.int64]) -> None:
        self.vectors.update(zip(ids.tolist(), vectors, strict=True))
        self._build()

    def size_bytes(self) -> int:
        import faiss

        return len(faiss.serialize_index(self.index))


class Sq8Scan(ClassIndex):
    """No graph: every vector of the class as 8-bit codes (faiss's scalar quantiser),
    scanned whole, and the best ``RESCORED`` re-scored exactly in float32. Still a function
    of the class's rows only; removes and adds in place."""

    RESCORED = 50

    def __init__(self, vectors: Vectors, ids: npt.NDArray[np.int64], ef: int) -> None:
        import faiss

        faiss.omp_set_num_threads(2)
        codes = faiss.IndexScalarQuantizer(
            vectors.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        codes.train(vectors)
        self.index = faiss.IndexIDMap2(codes)
        self.index.add_with_ids(vectors, ids)
        self.rows = {int(i): k for k, i in enumerate(ids.tolist())}
        self.matrix = [vectors]

    def _vector(self, ident: int) -> Vectors:
        row = self.rows[ident]
        for block in self.matrix:
            if row < len(block):
                return block[row]
            row -= len(block)
        raise KeyError(ident)

    def search(self, query: Vectors, k: int) -> tuple[npt.NDArray[np.int64], Vectors]:
        _, labels = self.index.search(query, max(k, self.RESCORED))
        found = labels[0][labels[0] >= 0].astype(np.int64)
        exact = np.array([self._vector(int(i)) for i in found]) @ query[0]
        best = np.argsort(-exact)[:k]
        return found[best], exact[best].astype(np.float32)

    def remove(self, ids: npt.NDArray[np.int64]) -> None:
        self.index.remove_ids(ids)

    def add(self, vectors: Vectors, ids: npt.NDArray[np.int64]) -> None:
        start = sum(len(b) for b in self.matrix)
        self.index.add_with_ids(vectors, ids)
        self.rows.update({int(i): start + k for k, i in enumerate(ids.tolist())})
        self.matrix.append(vectors)

    def size_bytes(self) -> int:
        import faiss

        return len(faiss.serialize_index(self.index))

    def save(self, path: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path / "codes.faiss"))
        order = sorted(self.rows, key=self.rows.__getitem__)
        np.save(path / "ids.npy", np.array(order, dtype=np.int64))
        np.save(path / "vectors.npy", np.vstack(self.matrix))

    @classmethod
    def load(cls, path: Path, dim: int, ef: int) -> Sq8Scan:
        """The codes read back; the float32 vectors mapped, not read, as a store keeps them."""
        import faiss

        loaded = cls.__new__(cls)
        loaded.index = faiss.read_index(str(path / "codes.faiss"))
        ids = np.load(path / "ids.npy")
        loaded.rows = {int(i): k for k, i in enumerate(ids.tolist())}
        loaded.matrix = [np.load(path / "vectors.npy", mmap_mode="r")]
        return loaded


def scan_above(threshold: int) -> Callable[[Vectors, npt.NDArray[np.int64], int], ClassIndex]:
    """hnswlib for a class below ``threshold`` chunks, an 8-bit scan with exact re-scoring
    from it on."""

    def make(vectors: Vectors, ids: npt.NDArray[np.int64], ef: int) -> ClassIndex:
        return Sq8Scan(vectors, ids, ef) if len(ids) >= threshold else Hnswlib(vectors, ids, ef)

    return make


CANDIDATES: dict[str, Callable[[Vectors, npt.NDArray[np.int64], int], ClassIndex]] = {
    "usearch": Usearch,
    "hnswlib": Hnswlib,
    "faiss-cpu": Faiss,
    "hnswlib + 8-bit scan": scan_above(100_000),
}


# --------------------------------------------------------------------------- the method


@dataclass
class Partitioned:
    """Approximate indexes for the large classes, exact ranking for the small ones."""

    vectors: Vectors
    members: dict[int, npt.NDArray[np.int64]]
    exact_below: int
    make: Callable[[Vectors, npt.NDArray[np.int64], int], ClassIndex]
    ef: int
    indexes: dict[int, ClassIndex] = field(default_factory=dict)
    build_s: float = 0.0

    def build(self) -> None:
        start = time.perf_counter()
        for cls, ids in self.members.items():
            if len(ids) >= self.exact_below:
                self.indexes[cls] = self.make(self.vectors[ids], ids, self.ef)
        self.build_s = time.perf_counter() - start

    def search(self, query: Vectors, caller: Caller) -> npt.NDArray[np.int64]:
        ids: list[npt.NDArray[np.int64]] = []
        scores: list[Vectors] = []
        small = [self.members[c] for c in caller.classes if c not in self.indexes]
        if small:
            rows = np.concatenate(small)
            exact = self.vectors[rows] @ query[0]
            top = np.argpartition(-exact, min(K, len(rows) - 1))[:K]
            ids.append(rows[top])
            scores.append(exact[top])
        for cls in caller.classes:
            if cls in self.indexes:
                found, found_scores = self.indexes[cls].search(query, K)
                ids.append(found)
                scores.append(found_scores)
        all_ids = np.concatenate(ids)
        all_scores = np.concatenate(scores)
        best = np.argsort(-all_scores, kind="stable")[:K]
        return all_ids[best]

    def size_bytes(self) -> int:
        return sum(index.size_bytes() for index in self.indexes.values())


def reopened(method: Partitioned, caller: Caller, query: Vectors, ef: int) -> dict[str, float]:
    """Save every class index, drop them, and time opening them again up to the first
    search of ``caller`` (the figure a restarted server shows its first user)."""
    with tempfile.TemporaryDirectory() as tmp:
        kinds: dict[int, type[Any]] = {}
        for cls, index in method.indexes.items():
            folder = Path(tmp) / str(cls)
            folder.mkdir()
            index.save(folder)  # type: ignore[attr-defined]
            kinds[cls] = type(index)
        method.indexes = {}
        start = time.perf_counter()
        dim = method.vectors.shape[1]
        method.indexes = {
            cls: kind.load(Path(tmp) / str(cls), dim, ef) for cls, kind in kinds.items()
        }
        opened = time.perf_counter() - start
        method.search(query, caller)
        first = time.perf_counter() - start
    return {"reopen_s": round(opened, 2), "first_search_s": round(first, 2)}


def exact_top(vectors: Vectors, rows: npt.NDArray[np.int64], query: Vectors) -> set[int]:
    scores = vectors[rows] @ query[0]
    top = np.argpartition(-scores, min(K, len(rows) - 1))[:K]
    return {int(i) for i in rows[top]}


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    real, queries = embedded(args.scifact)
    vectors = grown(real, args.chunks, args.noise, seed=1)
    lay = layout(args.chunks, seed=2)
    members = lay.members()
    who = callers(lay, args.chunks, seed=3)
    queries = queries[: args.queries]
    allowed = {c.name: np.concatenate([members[k] for k in sorted(c.classes)]) for c in who}
    truth = {
        c.name: [exact_top(vectors, allowed[c.name], q[None, :]) for q in queries] for c in who
    }
    large = sum(1 for ids in members.values() if len(ids) >= args.exact_below)
    result: dict[str, Any] = {
        "chunks": args.chunks,
        "real_vectors": len(real),
        "classes": len(members),
        "indexed_classes": large,
        "callers": {c.name: len(allowed[c.name]) for c in who},
        "candidates": {},
    }
    print(
        f"{args.chunks:,} chunks ({len(real):,} real), {len(members):,} classes, "
        f"{large} with their own index (>= {args.exact_below:,} chunks)"
    )
    for name in args.candidates:
        method = Partitioned(vectors, members, args.exact_below, CANDIDATES[name], args.ef)
        method.build()
        row: dict[str, Any] = {
            "build_s": round(method.build_s, 2),
            "size_mb": round(method.size_bytes() / 1e6, 1),
        }
        for caller in who:
            times: list[float] = []
            hits = 0
            for q, want in zip(queries, truth[caller.name], strict=True):
                start = time.perf_counter()
                got = method.search(q[None, :], caller)
                times.append((time.perf_counter() - start) * 1000)
                hits += len(want & {int(i) for i in got})
            row[caller.name] = {
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(percentile(times, 95), 2),
                "recall@10": round(hits / (K * len(queries)), 4),
            }
        # a permission-only change: 10 % of the largest department move to the all-staff
        # class: out of one class's index, into another's
        source = max(lay.departments, key=lambda d: len(members[d]))
        moving = members[source][: max(1, len(members[source]) // 10)]
        start = time.perf_counter()
        if source in method.indexes:
            method.indexes[source].remove(moving)
        method.indexes[lay.staff].add(vectors[moving], moving)
        row["move_s"] = round(time.perf_counter() - start, 3)
        row["moved"] = len(moving)
        if args.reopen:
            row.update(reopened(method, who[-1], queries[0][None, :], args.ef))
        result["candidates"][name] = row
        print(json.dumps({name: row}))
    return result


def table(result: dict[str, Any]) -> str:
    names = list(result["candidates"])
    lines = [
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
        "| build (s) | "
        + " | ".join(str(result["candidates"][n]["build_s"]) for n in names)
        + " |",
        "| index size (MB) | "
        + " | ".join(str(result["candidates"][n]["size_mb"]) for n in names)
        + " |",
    ]
    for caller, size in result["callers"].items():
        cells = []
        for n in names:
            row = result["candidates"][n][caller]
            cells.append(f"{row['p50_ms']} / {row['p95_ms']} ms, {row['recall@10']}")
        lines.append(
            f"| {caller} ({size:,} chunks): p50 / p95, recall@10 | " + " | ".join(cells) + " |"
        )
    if all("reopen_s" in result["candidates"][n] for n in names):
        lines.append(
            "| open saved indexes / to first search (s) | "
            + " | ".join(
                f"{result['candidates'][n]['reopen_s']} / {result['candidates'][n]['first_search_s']}"
                for n in names
            )
            + " |"
        )
    lines.append(
        f"| move {result['candidates'][names[0]]['moved']} chunks between classes (s) | "
        + " | ".join(str(result["candidates"][n]["move_s"]) for n in names)
        + " |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-below", type=int, default=1_000)
    parser.add_argument("--ef", type=int, default=64)
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=CANDIDATES)
    parser.add_argument(
        "--reopen",
        action="store_true",
        help="also time opening the saved indexes up to the first search (hnswlib, 8-bit scan)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.scifact.is_file():
        sys.exit(f"SciFact not found at {args.scifact} (pass --scifact PATH)")
    result = measure(args)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
