"""``clearance eval --retrieval``: retrieval quality on the BEIR-format sample in
``data/beir_sample`` (36 short documents and 20 judged queries in English, Japanese and
Chinese, plus one unjudged query), run through the real command on a real temporary index."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from clearance.evaluation.beir import load_beir
from clitools import assert_one_line_error, cli

SAMPLE = Path(__file__).parent / "data" / "beir_sample"


def config(tmp_path: Path, *, embedding: str = "none", rerank: str = "") -> Path:
    path = tmp_path / "clearance.toml"
    path.write_text(
        f'[store]\npath = "data/index.db"\n\n[embedding]\nprovider = "{embedding}"\n\n'
        f'[rerank]\nprovider = "{rerank}"\n',
        encoding="utf-8",
    )
    return path


def run(cfg: Path, dataset: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    rc, out, err = cli("--config", cfg, "eval", "--retrieval", dataset, "--json", *extra)
    assert rc == 0, err
    return rc, json.loads(out)


def test_the_sample_loads_as_beir() -> None:
    dataset = load_beir(SAMPLE)
    assert len(dataset.corpus) == 36
    assert len(dataset.queries) == 20  # q21 has no judgement and measures nothing
    assert "q21" not in dataset.queries
    assert dataset.qrels["q11"] == {"d16": 1, "d33": 1, "d27": 1}


def test_lexical_only_measures_lexical_hybrid_and_reranked(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    _, report = run(cfg, SAMPLE)
    assert report["dataset"] == "beir_sample"
    assert (report["documents"], report["indexed"], report["queries"]) == (36, 36, 20)
    assert report["measures"] == ["nDCG@10", "R@100"]
    # no embedding model configured: no vector list to measure
    assert list(report["retrievers"]) == ["lexical", "hybrid", "reranked"]
    lexical = report["retrievers"]["lexical"]
    # without vectors, fusion of one list keeps its order
    assert report["retrievers"]["hybrid"] == lexical
    assert 0.8 < lexical["nDCG@10"] <= 1.0
    # the evaluation index is temporary: the configured one is never created
    assert not (tmp_path / "data").exists()


def test_rerank_off_drops_the_reranked_run(tmp_path: Path) -> None:
    _, report = run(config(tmp_path, rerank="none"), SAMPLE)
    assert list(report["retrievers"]) == ["lexical", "hybrid"]


def test_a_zip_measures_the_same_as_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "sample.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in SAMPLE.rglob("*"):
            if path.is_file():
                z.write(path, "beir_sample/" + path.relative_to(SAMPLE).as_posix())
    cfg = config(tmp_path)
    _, from_folder = run(cfg, SAMPLE)
    _, from_zip = run(cfg, archive)
    assert from_zip["retrievers"] == from_folder["retrievers"]
    assert from_zip["dataset"] == "sample"


def test_the_measures_have_teeth(tmp_path: Path) -> None:
    """Reverse proof: judgements moved to other documents make every figure collapse, so
    the figures measure the ranking, not the mere presence of results."""
    wrong = tmp_path / "wrong"
    shutil.copytree(SAMPLE, wrong)
    qrels = wrong / "qrels" / "test.tsv"
    lines = qrels.read_text(encoding="utf-8").splitlines()
    moved = [lines[0]]
    for line in lines[1:]:
        query, doc, grade = line.split("\t")
        other = f"d{(int(doc[1:]) + 17) % 36 + 1:02d}"
        moved.append(f"{query}\t{other}\t{grade}")
    qrels.write_text("\n".join(moved) + "\n", encoding="utf-8")
    cfg = config(tmp_path)
    _, right = run(cfg, SAMPLE)
    _, shifted = run(cfg, wrong)
    assert right["retrievers"]["lexical"]["nDCG@10"] > 0.8
    assert shifted["retrievers"]["lexical"]["nDCG@10"] < 0.1


def test_the_table_and_progress_for_people(tmp_path: Path) -> None:
    rc, out, err = cli("--config", config(tmp_path), "eval", "--retrieval", SAMPLE)
    assert rc == 0, err
    assert "beir_sample: 20 queries, 36/36 documents" in out
    assert "nDCG@10" in out and "lexical" in out and "hybrid" in out


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: (d / "qrels" / "test.tsv").unlink(), "no qrels/test.tsv"),
        (
            lambda d: (d / "corpus.jsonl").write_text("{not json\n"),
            "corpus.jsonl:1: not valid JSON",
        ),
        (
            lambda d: (d / "queries.jsonl").write_text('{"text": "no id"}\n'),
            "queries.jsonl:1: '_id' must be a non-empty string",
        ),
        (
            lambda d: (d / "qrels" / "test.tsv").write_text(
                "query-id\tcorpus-id\tscore\nq01\td02\n"
            ),
            "qrels/test.tsv:2: expected query-id, corpus-id and score",
        ),
        (
            lambda d: (d / "qrels" / "test.tsv").write_text("q99\td02\t1\n"),
            "query 'q99' is not in queries.jsonl",
        ),
    ],
    ids=["no-qrels", "bad-json", "no-id", "short-qrels-line", "unknown-query"],
)
def test_a_bad_dataset_is_one_clear_error(tmp_path: Path, mutate: Any, message: str) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(SAMPLE, broken)
    mutate(broken)
    rc, _, err = cli("--config", config(tmp_path), "eval", "--retrieval", broken)
    assert rc == 2
    assert_one_line_error(err, message)


def test_a_missing_dataset_is_one_clear_error(tmp_path: Path) -> None:
    rc, _, err = cli("--config", config(tmp_path), "eval", "--retrieval", tmp_path / "nowhere")
    assert rc == 2
    assert_one_line_error(err, "no such folder or zip file")


@pytest.mark.embeddings
def test_with_the_embedding_model_hybrid_leads(tmp_path: Path) -> None:
    """With MiniLM every retriever is measured, and on the sample the fused list is ahead of
    both single lists (the benchmark checks the same on SciFact)."""
    _, report = run(config(tmp_path, embedding="minilm"), SAMPLE)
    scores = {r: v["nDCG@10"] for r, v in report["retrievers"].items()}
    assert list(scores) == ["lexical", "vector", "hybrid", "reranked"]
    assert report["embedding"].startswith("all-MiniLM-L6-v2")
    assert scores["hybrid"] > max(scores["lexical"], scores["vector"])
