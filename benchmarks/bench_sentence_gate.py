"""What reading sentences costs the relevance gate: ask latency with and without it.

Not a test: it prints figures measured side by side in one run, and never asserts.

The held-out sets (``benchmarks/heldout``: US federal HR guidance and figures, the TTS
handbook, the GitLab set; the default configuration with the bundled MiniLM embedder) are
indexed once each in a temporary folder. Every question of a set that is not mostly CJK (all
splits: this measures time, not answers) is asked ``--rounds`` times as its user, alternately
with the gate reading sentences (a chunk's sentence holding most of the question's words,
and, against a refusal, the sentences of chunks the cosine alone kept out) and without it:
the same index and engine, only the embedder handed to the gate differs. Printed: p50 and
p95 of the ask latency for each, how many asks the gate embedded sentences for, and the
time that took.

    .venv/bin/python benchmarks/bench_sentence_gate.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "heldout"))

import run as heldout  # noqa: E402
from bench_multilingual_gate import print_latencies  # noqa: E402

import clearance.llm.embedding as embedding  # noqa: E402
from clearance.analysis import cjk_share  # noqa: E402

READER = embedding.EmbedderSimilarity


class Counted:
    """The gate's sentence reader, counting the asks it embeds sentences for and the time."""

    calls = 0
    sentences = 0
    seconds = 0.0

    def __init__(self, embedder: Any) -> None:
        self.inner = READER(embedder)

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        started = time.perf_counter()
        out = self.inner.similarity(question, passages)
        Counted.seconds += time.perf_counter() - started
        Counted.calls += 1
        Counted.sentences += len(passages)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"sentences": [], "chunk only": []}
    asked = 0
    for name, collection in heldout.COLLECTIONS.items():
        items = [
            q
            for split in ("all", "probe")
            for q in heldout.load_questions(split, collection)
            if cjk_share(q["question"]) <= 0.5
        ]
        asked += len(items)
        with tempfile.TemporaryDirectory() as tmp:
            bench = heldout.Bench(Path(tmp), collection)
            bench.engine.ask(items[0]["question"], items[0]["user"])  # the embedder's first load
            for _ in range(args.rounds):
                for item in items:
                    for setting in times:
                        reader = Counted if setting == "sentences" else (lambda embedder: None)
                        setattr(embedding, "EmbedderSimilarity", reader)  # noqa: B010
                        started = time.perf_counter()
                        bench.engine.ask(item["question"], item["user"])
                        times[setting].append((time.perf_counter() - started) * 1000)
            setattr(embedding, "EmbedderSimilarity", READER)  # noqa: B010
            bench.close()
        print(f"{name}: {len(items)} questions", file=sys.stderr)
    print(f"{asked} questions not mostly CJK x {args.rounds} rounds, one index per set\n")
    print_latencies("gate", times)
    per_call = Counted.seconds / Counted.calls * 1000 if Counted.calls else 0.0
    print(
        f"\nThe gate embedded sentences {Counted.calls} times for {len(times['sentences'])} "
        f"asks ({Counted.sentences} sentences, {per_call:.1f} ms a time, "
        f"{Counted.seconds / max(Counted.sentences, 1) * 1000:.1f} ms a sentence)."
    )


if __name__ == "__main__":
    main()
