"""Calibrate the narrative relevance gate on labelled (question, document) pairs.

Not a test: it prints figures and the thresholds it would choose, and never asserts.

Data: ``tests/answer/data/relevance_pairs.json`` — questions in English, Japanese and
Chinese, each with documents that answer it (``relevant``) and documents that do not
(``irrelevant``: near misses sharing words with it, and off-topic questions), plus a few
notes added to the demo corpus (the Chinese material, a phishing incident report).

The demo corpus (``examples/acme``) is indexed in a temporary directory with the real
``clearance`` commands, with the MiniLM embedder unless ``--lexical-only``. Each question is
searched as its user, and the snippets retrieved are judged by :class:`RelevanceGate` as the
answer path judges them: term statistics over what that user may retrieve and, with
embeddings, the search's question-to-chunk cosines. A pair's document counts as judged
relevant when one of its retrieved snippets passes; a document retrieval did not return
counts as judged irrelevant (a relevant one is then a miss of retrieval, counted against
recall all the same). Precision and recall are over pairs, per language and overall.

Printed side by side: the previous term-overlap gate (40 % of the question's content terms),
the lexical-only gate and the gate with cosine, each at the configured defaults and at the
thresholds a grid search picks (best F1, ties to higher precision); last, the gate exactly
as the answer path runs it, where a mostly-CJK question's snippets in doubt are also read by
the multilingual model (``[answer.relevance] multilingual``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clearance.access.policy import AccessControl
from clearance.answer.narrative import relevant_snippets
from clearance.answer.relevance import RelevanceGate
from clearance.app import Clearance
from clearance.config import RelevanceSettings, load_settings
from clearance.llm.embedding import EmbedderSimilarity
from clearance.llm.multilingual import Similarity, get_similarity
from clearance.retrieval.link_exit import to_snippets
from clearance.retrieval.synonyms import NO_SYNONYMS
from clearance.store.base import SearchFilter, TermStatistics

ROOT = Path(__file__).resolve().parents[1]
ACME = ROOT / "examples" / "acme"
PAIRS = ROOT / "tests" / "answer" / "data" / "relevance_pairs.json"


@dataclass
class Pair:
    lang: str
    question: str
    doc_id: str
    relevant: bool
    chunks: list[tuple[float, float | None]]  # (coverage, cosine) per chunk
    old_gate: bool
    judged: bool = False  # the gate as the answer path runs it, multilingual model included


def build(work: Path, lexical_only: bool) -> Clearance:
    toml = (ACME / "clearance.toml").read_text(encoding="utf-8")
    toml = toml.replace('path = "data/clearance.db"', f"path = {json.dumps(str(work / 'c.db'))}")
    if lexical_only:
        toml = re.sub(r'(\[embedding\]\nprovider\s*=\s*)"minilm"', r'\1"none"', toml)
    toml += f"\n[ingest]\nroots = [{json.dumps(str(ACME))}]\n"
    config = work / "clearance.toml"
    config.write_text(toml, encoding="utf-8")
    cli = [
        sys.executable,
        "-c",
        "from clearance.cli.main import run; run()",
        "--config",
        str(config),
    ]
    subprocess.run([*cli, "directory", "sync", str(ACME / "directory.json")], check=True)
    subprocess.run(
        [*cli, "ingest", "--manifest", str(ACME / "manifest.jsonl")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return Clearance.open(load_settings(config))


def judge_pairs(
    app: Clearance, data: dict, gate: RelevanceGate, similarity: Similarity | None = None
) -> list[Pair]:
    for note in data["notes"]:
        app.add_note(
            note["text"],
            origin="human",
            corpus=note["corpus"],
            acl=note["acl"],
            title=note["title"],
            doc_id=note["doc_id"],
        )
    access: AccessControl = app.access()
    pairs: list[Pair] = []
    for q in data["questions"]:
        principal = access.principal(q["user"])
        flt = access.search_filter(principal, None, app.store.corpora())

        def stats(terms: Sequence[str], flt: SearchFilter = flt) -> TermStatistics:
            return app.store.term_statistics(terms, flt)

        hits = app.search(q["user"], q["question"]).hits
        snippets = to_snippets(hits)
        cosines = (
            {h.chunk.chunk_id: h.cosine for h in hits if h.cosine is not None}
            if app.embedder is not None
            else None
        )
        sentences = EmbedderSimilarity(app.embedder) if app.embedder is not None else None
        judged = gate.judge(q["question"], snippets, stats, cosines, similarity, sentences)
        labelled = [(d, True) for d in q["relevant"]] + [(d, False) for d in q["irrelevant"]]
        for doc_id, label in labelled:
            document = app.store.get_document(doc_id)
            assert document is not None, doc_id
            assert flt.admits(document), f"{q['user']} may not retrieve {doc_id}"
            mine = [j for j in judged if j.snippet.doc_id == doc_id]
            pairs.append(
                Pair(
                    q["lang"],
                    q["question"],
                    doc_id,
                    label,
                    [(j.coverage, j.cosine) for j in mine if j.snippet_holds_terms],
                    bool(relevant_snippets(q["question"], [j.snippet for j in mine])),
                    any(j.relevant for j in mine),
                )
            )
    return pairs


def scores(pairs: Iterable[Pair], predict: Callable[[Pair], bool]) -> tuple[float, float, float]:
    tp = fp = fn = 0
    for p in pairs:
        said = predict(p)
        tp += said and p.relevant
        fp += said and not p.relevant
        fn += (not said) and p.relevant
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def gate_predict(settings: RelevanceSettings, use_cosine: bool) -> Callable[[Pair], bool]:
    gate = RelevanceGate(settings)
    return lambda p: any(
        gate.decide(cov, cos if use_cosine else None, cjk=p.lang in ("ja", "zh"))
        for cov, cos in p.chunks
    )


def _steps(lo: float, hi: float, step: float) -> list[float]:
    return [round(float(x), 2) for x in np.arange(lo, hi + step / 2, step)]


def search(
    pairs: list[Pair], use_cosine: bool, base: RelevanceSettings
) -> tuple[RelevanceSettings, tuple[float, ...]]:
    """Grid search: ``min_coverage`` alone for the lexical gate; with cosine, the weight,
    the score and the coverage floor (``min_coverage`` kept at ``base``'s)."""
    if use_cosine:
        candidates = [
            RelevanceSettings(base.min_coverage, w, score, floor)
            for w, score, floor in itertools.product(
                _steps(0.5, 2.0, 0.25), _steps(0.4, 1.6, 0.05), _steps(0.0, 0.5, 0.05)
            )
        ]
    else:
        candidates = [
            RelevanceSettings(
                cov, base.cosine_weight, base.min_score, base.min_coverage_with_cosine
            )
            for cov in _steps(0.2, 0.9, 0.05)
        ]
    best: tuple[tuple[float, float], RelevanceSettings, tuple[float, ...]] | None = None
    for settings in candidates:
        p, r, f = scores(pairs, gate_predict(settings, use_cosine))
        key = (f, p)
        if best is None or key > best[0]:
            best = (key, settings, (p, r, f))
    assert best is not None
    return best[1], best[2]


def report(name: str, pairs: list[Pair], predict: Callable[[Pair], bool]) -> None:
    cells = []
    for lang in ("en", "ja", "zh", None):
        subset = [p for p in pairs if lang is None or p.lang == lang]
        p, r, _ = scores(subset, predict)
        cells.append(f"{p:.2f} / {r:.2f}")
    print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lexical-only", action="store_true", help="index without embeddings")
    parser.add_argument("--misses", action="store_true", help="list the pairs judged wrong")
    parser.add_argument(
        "--no-synonyms",
        action="store_true",
        help="judge without the demo corpus's [retrieval.synonyms]",
    )
    args = parser.parse_args()
    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    defaults = RelevanceSettings()
    with tempfile.TemporaryDirectory() as tmp:
        app = build(Path(tmp), args.lexical_only)
        try:
            synonyms = NO_SYNONYMS if args.no_synonyms else app.synonyms
            similarity = get_similarity(defaults.multilingual)
            pairs = judge_pairs(app, data, RelevanceGate(defaults, synonyms), similarity)
        finally:
            app.close()
    n_rel = sum(p.relevant for p in pairs)
    print(f"{len(data['questions'])} questions, {len(pairs)} pairs ({n_rel} relevant)")
    for lang in ("en", "ja", "zh"):
        subset = [p for p in pairs if p.lang == lang]
        print(f"  {lang}: {len(subset)} pairs ({sum(p.relevant for p in subset)} relevant)")
    lexical, _ = search(pairs, use_cosine=False, base=defaults)
    print("\n| gate | EN precision / recall | JA | ZH | all |")
    print("|---|---:|---:|---:|---:|")
    report("term overlap ≥ 40 % (previous gate)", pairs, lambda p: p.old_gate)
    report(
        f"coverage ≥ {defaults.min_coverage} (defaults, lexical only)",
        pairs,
        gate_predict(defaults, False),
    )
    report(
        f"coverage ≥ {lexical.min_coverage} (grid best, lexical only)",
        pairs,
        gate_predict(lexical, False),
    )
    chosen = lexical
    if not args.lexical_only:
        combined, _ = search(pairs, use_cosine=True, base=defaults)
        chosen = combined
        report(
            f"coverage + {defaults.cosine_weight} x cosine ≥ {defaults.min_score}, coverage ≥ "
            f"{defaults.min_coverage_with_cosine} (defaults)",
            pairs,
            gate_predict(defaults, True),
        )
        report(
            f"grid best with cosine (coverage + {combined.cosine_weight} x cosine ≥ "
            f"{combined.min_score}, coverage ≥ {combined.min_coverage_with_cosine})",
            pairs,
            gate_predict(combined, True),
        )
    report(
        f"the defaults as answers run them (CJK in doubt: {defaults.multilingual} cosine ≥ "
        f"{defaults.min_cosine_cjk}, coverage ≥ {defaults.min_coverage_cjk_with_cosine}, "
        "the nearest; other questions in doubt: the best sentence's cosine)",
        pairs,
        lambda p: p.judged,
    )
    if args.misses:
        predict = gate_predict(chosen, not args.lexical_only)
        print(f"\nJudged wrong at the grid best ({chosen}):")
        for p in pairs:
            if predict(p) != p.relevant:
                best_cov = max((c for c, _ in p.chunks), default=0.0)
                best_cos = max((c for _, c in p.chunks if c is not None), default=None)
                print(
                    f"  {'FN' if p.relevant else 'FP'} {p.lang} cov={best_cov:.2f} "
                    f"cos={best_cos if best_cos is None else round(best_cos, 2)} "
                    f"{p.question} -> {p.doc_id}"
                )


if __name__ == "__main__":
    main()
