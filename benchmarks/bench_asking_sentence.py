"""What judging a question's asking sentence alone costs, and what it changes.

Not a test: it prints figures measured side by side in one run, and never asserts.

Over an index already built (``--config``, a ``clearance.toml``), every question of
``--questions`` (lines ``id | question | expected …``, ``#`` comments; the trial sets in
``benchmarks/trials``) that tells the asker's situation before asking (two sentences or
more, the last one asking) is asked ``--rounds`` times as ``--user``, alternately with the
relevance gate judging the asking sentence alone against a refusal and without it: the same
engine, only ``clearance.answer.relevance.asking_sentence`` differs. Printed: p50 and p95 of
the ask latency for each, then every question whose outcome differs, with both answers'
first words, for a person to judge against the expected answer.

    .venv/bin/python benchmarks/bench_asking_sentence.py --config trial/clearance.toml \\
        --questions benchmarks/trials/mattermost/questions.txt --user ana
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_multilingual_gate import print_latencies  # noqa: E402

import clearance.answer.relevance as relevance  # noqa: E402
from clearance import Clearance, load_settings  # noqa: E402

ASKING = relevance.asking_sentence


def questions(path: Path) -> list[tuple[str, str, str]]:
    """``(id, question, expected)`` of every line of a trial's question file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            qid, question, expected, *_ = (part.strip() for part in line.split("|"))
            out.append((qid, question, expected))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--user", default="ana")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    engine = Clearance.open(load_settings(args.config))
    told = [q for q in questions(args.questions) if ASKING(q[1]) is not None]
    print(f"{len(told)} questions tell the asker's situation first")
    variants = {"asking sentence": ASKING, "whole question only": lambda question: None}
    times: dict[str, list[float]] = {name: [] for name in variants}
    answers: dict[str, dict[str, tuple[str, str]]] = {name: {} for name in variants}
    try:
        for _ in range(args.rounds):
            for name, chosen in variants.items():
                relevance.asking_sentence = chosen
                for qid, question, _expected in told:
                    start = time.perf_counter()
                    result = engine.ask(question, args.user)
                    times[name].append((time.perf_counter() - start) * 1000)
                    answers[name][qid] = (result.status.value, result.answer)
    finally:
        relevance.asking_sentence = ASKING
        engine.close()
    print_latencies("gate", times)
    print("\nquestions whose outcome differs:")
    for qid, question, expected in told:
        with_ask, without = (answers[name][qid] for name in variants)
        if with_ask != without:
            print(f"{qid}: {question}\n  expected: {expected}")
            print(f"  whole question only: {without[0]}: {without[1][:160]!r}")
            print(f"  asking sentence:     {with_ask[0]}: {with_ask[1][:160]!r}")


if __name__ == "__main__":
    main()
