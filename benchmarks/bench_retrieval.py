"""Retrieval quality on SciFact through ``clearance eval --retrieval``.

Not a test: it prints figures, the reference figures next to them, and whether hybrid search
is ahead of both single retrievers, and never asserts.

SciFact (Wadden et al., EMNLP 2020) is read in place from its zip: ``corpus_train.csv``
(5,183 abstracts) and ``claims_validation.csv`` (the 300 claims of the BEIR test split, whose
``cited_doc_ids`` are the 339 judgements). The benchmark writes the BEIR layout
(``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``) into a temporary folder — each
abstract's sentences split with ``tokenize`` (string tokens), so adjacent strings are never
joined — runs the real command on it, and deletes the folder. Nothing of the dataset is
written into the repository (CC BY-NC 2.0: evaluation use only).

The command indexes the corpus with the configuration's embedding model and chunking (the
defaults unless ``--config`` is given: all-MiniLM-L6-v2 int8, 800-character chunks), then
measures nDCG@10 and Recall@100 with ``ir-measures`` for the lexical, vector, hybrid and
reranked runs. Indexing takes about 5 minutes on 2 cores (the embedding model).

Run from the repository root::

    .venv/bin/python benchmarks/bench_retrieval.py [--scifact PATH] [--config FILE] [--json OUT]

``--scifact`` defaults to ``$CLEARANCE_SCIFACT``, else ``../shared/datasets/scifact.zip``
beside the repository.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import io
import json
import os
import re
import sys
import tempfile
import time
import tokenize
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clearance.cli.main import main  # noqa: E402

DEFAULT_SCIFACT = REPO.parent / "shared" / "datasets" / "scifact.zip"

#: Measured from outside through ``Clearance.search`` (nDCG@10), the figures to reproduce.
TARGETS = {"lexical": 0.683, "vector": 0.671, "hybrid": 0.726}
#: Reference implementations on the same split (nDCG@10 / Recall@100).
REFERENCES = {
    "bm25s + PyStemmer": (0.686, 0.913),
    "SQLite FTS5 porter": (0.682, 0.925),
    "all-MiniLM-L6-v2 int8 ONNX": (0.647, None),
    "RRF(k=60) of bm25s-stemmed + MiniLM int8": (0.715, 0.948),
}


def _strings(literal: str) -> list[str]:
    """The string tokens of a Python-list-like string (adjacent strings kept apart)."""
    out: list[str] = []
    for tok in tokenize.generate_tokens(io.StringIO(literal).readline):
        if tok.type == tokenize.STRING:
            out.append(str(ast.literal_eval(tok.string)))
    return out


def write_beir(scifact: Path, dest: Path) -> tuple[int, int, int]:
    """SciFact's zip as a BEIR folder at ``dest``: (documents, queries, judgements)."""
    with zipfile.ZipFile(scifact) as zf:

        def rows(name: str) -> list[dict[str, str]]:
            with zf.open(name) as fh:
                return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))

        corpus = rows("corpus_train.csv")
        claims = rows("claims_validation.csv")
    with (dest / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for row in corpus:
            text = " ".join(_strings(row["abstract"]))
            record = {"_id": row["doc_id"], "title": row["title"], "text": text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    queries: dict[str, str] = {}
    qrels: dict[str, set[str]] = {}
    for row in claims:
        queries.setdefault(row["id"], row["claim"])
        qrels.setdefault(row["id"], set()).update(re.findall(r"\d+", row["cited_doc_ids"]))
    with (dest / "queries.jsonl").open("w", encoding="utf-8") as out:
        for query_id, text in queries.items():
            out.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
    (dest / "qrels").mkdir()
    judgements = 0
    with (dest / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for query_id, docs in qrels.items():
            for doc in sorted(docs, key=int):
                out.write(f"{query_id}\t{doc}\t1\n")
                judgements += 1
    return len(corpus), len(queries), judgements


def run_eval(config: Path, dataset: Path) -> tuple[dict[str, Any], float]:
    """``clearance --config CONFIG eval --retrieval DATASET --json`` in this process."""
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        rc = main(["--config", str(config), "eval", "--retrieval", str(dataset), "--json"])
    elapsed = time.perf_counter() - start
    if rc != 0:
        sys.exit(f"clearance eval exited {rc}")
    return json.loads(out.getvalue()), elapsed


def report(result: dict[str, Any], elapsed: float) -> None:
    print(
        f"\nSciFact: {result['queries']} queries, {result['indexed']}/{result['documents']} "
        f"documents, {result['chunks']} chunks, embedding {result['embedding']}, "
        f"{elapsed:.0f} s (index + search)\n"
    )
    print(f"{'retriever':<12} {'nDCG@10':>8} {'R@100':>7}   {'target nDCG@10':>14}")
    scores = result["retrievers"]
    for name, values in scores.items():
        target = TARGETS.get(name)
        shown = f"{target:.3f}" if target is not None else "–"
        print(f"{name:<12} {values['nDCG@10']:>8.3f} {values['R@100']:>7.3f}   {shown:>14}")
    print("\nreferences (same split, measured outside Clearance):")
    for name, (ndcg, r100) in REFERENCES.items():
        r100_shown = f"{r100:.3f}" if r100 is not None else "–"
        print(f"  {name:<44} {ndcg:.3f} {r100_shown:>7}")
    ndcg = {name: values["nDCG@10"] for name, values in scores.items()}
    if "vector" in ndcg:
        ahead = ndcg["hybrid"] > max(ndcg["lexical"], ndcg["vector"])
        verdict = "PASS" if ahead else "MISS"
        print(
            f"\n{verdict}: hybrid {ndcg['hybrid']:.3f} vs lexical {ndcg['lexical']:.3f} "
            f"and vector {ndcg['vector']:.3f}"
        )


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scifact",
        type=Path,
        default=Path(os.environ.get("CLEARANCE_SCIFACT", DEFAULT_SCIFACT)),
        help="SciFact zip (default: $CLEARANCE_SCIFACT, else ../shared/datasets/scifact.zip)",
    )
    parser.add_argument(
        "--config", type=Path, help="clearance.toml whose model and search settings to use"
    )
    parser.add_argument("--json", type=Path, help="also write the command's JSON here")
    args = parser.parse_args()
    if not args.scifact.is_file():
        sys.exit(f"SciFact not found at {args.scifact} (pass --scifact PATH)")
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        root = Path(tmp)
        dataset = root / "scifact"
        dataset.mkdir()
        docs, queries, judgements = write_beir(args.scifact, dataset)
        print(f"SciFact as BEIR: {docs} documents, {queries} queries, {judgements} judgements")
        config = args.config
        if config is None:
            config = root / "clearance.toml"
            config.write_text('[store]\npath = "unused.db"\n', encoding="utf-8")
        result, elapsed = run_eval(config, dataset)
    report(result, elapsed)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main_cli()
