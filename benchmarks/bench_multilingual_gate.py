"""What the multilingual relevance model costs an answer: ask latency with and without it.

Not a test: it prints figures measured side by side in one run, and never asserts.

The GitLab held-out set (``benchmarks/heldout/gitlab``: a Japanese handbook, budget data,
the default configuration) is indexed once in a temporary folder. Every question of the set
that is mostly Chinese or Japanese (all splits: this measures time, not answers) is asked
``--rounds`` times as its user, alternately with ``[answer.relevance] multilingual = "e5"``
and with ``"none"`` (the same index, the same engine; only the gate's second signal differs,
so the model's first load is paid before the first timed round). Printed: p50 and p95 of
the ask latency for each, how many asks the model read snippets for, and the time it took.

    .venv/bin/python benchmarks/bench_multilingual_gate.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "heldout"))

import run as heldout  # noqa: E402

from clearance.analysis import cjk_share  # noqa: E402
from clearance.llm.multilingual import get_similarity  # noqa: E402


class Counted:
    """The model, counting the asks it reads snippets for and the time it takes."""

    def __init__(self) -> None:
        self.inner = get_similarity("e5")
        assert self.inner is not None
        self.calls = 0
        self.passages = 0
        self.seconds = 0.0

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        started = time.perf_counter()
        assert self.inner is not None
        out = self.inner.similarity(question, passages)
        self.seconds += time.perf_counter() - started
        self.calls += 1
        self.passages += len(passages)
        return out


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def print_latencies(column: str, times: Mapping[str, Sequence[float]]) -> None:
    """One Markdown row per setting: its asks, p50 and p95 in milliseconds."""
    print(f"| {column} | asks | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        print(
            f"| {name} | {len(values)} | {statistics.median(values):.1f} | "
            f"{percentile(values, 0.95):.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    collection = heldout.COLLECTIONS["gitlab"]
    items = [q for q in heldout.load_questions("all", collection) if cjk_share(q["question"]) > 0.5]
    with tempfile.TemporaryDirectory() as tmp:
        bench = heldout.Bench(Path(tmp), collection)
        ctx = bench.engine.orchestrator().ctx
        model = Counted()
        model.inner.similarity("準備", ["準備"])  # type: ignore[union-attr]  # first load
        times: dict[str, list[float]] = {"e5": [], "none": []}
        for _ in range(args.rounds):
            for item in items:
                for name in ("e5", "none"):
                    ctx.similarity = model if name == "e5" else None
                    started = time.perf_counter()
                    bench.engine.ask(item["question"], item["user"])
                    times[name].append((time.perf_counter() - started) * 1000)
        bench.close()
    print(f"{len(items)} mostly-CJK questions x {args.rounds} rounds, one index, 2 settings\n")
    print_latencies("multilingual", times)
    per_call = model.seconds / model.calls * 1000 if model.calls else 0.0
    print(
        f"\nThe model read snippets for {model.calls} of {len(times['e5'])} asks "
        f"({model.passages} snippets, {per_call:.0f} ms per ask it read for, "
        f"{model.seconds / max(model.passages, 1) * 1000:.0f} ms per snippet)."
    )


if __name__ == "__main__":
    main()
