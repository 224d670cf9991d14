"""What the handling of a question that tells a story first costs, and what it changes.

Not a test: it prints figures measured side by side in one run, and never asserts.

Over an index already built (``--config``, a ``clearance.toml``), every question of
``--questions`` (lines ``id | question | expected …``, ``#`` comments; the trial sets in
``benchmarks/trials``) that tells the asker's situation before asking (two sentences or
more, the last one asking) is asked ``--rounds`` times as ``--user``, alternately with one
step on and off, the same engine otherwise (``--step``):

* ``asking`` — the relevance gate judging the asking sentence alone against a refusal
  (off: ``clearance.answer.relevance.asking_sentence`` finds none);
* ``reading`` — the quoting reader ranking the units by their cosine with the question as
  well as by its words (off: ``clearance.llm.extractive._READ_WEIGHT`` is 0).

Printed: p50 and p95 of the ask latency for each, then every question whose answer
differs, with both answers' first words, for a person to judge against the expected answer.

    .venv/bin/python benchmarks/bench_asking_sentence.py --config trial/clearance.toml \\
        --questions benchmarks/trials/mattermost/questions.txt --user ana --step reading
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
import clearance.llm.extractive as extractive  # noqa: E402
from clearance import Clearance, load_settings  # noqa: E402

ASKING = relevance.asking_sentence
READING = extractive._READ_WEIGHT


def switch(step: str, on: bool) -> None:
    """Turn ``step`` on or off (see the module docstring)."""
    if step == "asking":
        relevance.asking_sentence = ASKING if on else (lambda question: None)
    else:
        extractive._READ_WEIGHT = READING if on else 0.0


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
    parser.add_argument("--step", choices=("asking", "reading"), default="asking")
    args = parser.parse_args()

    engine = Clearance.open(load_settings(args.config))
    told = [q for q in questions(args.questions) if ASKING(q[1]) is not None]
    print(f"{len(told)} questions tell the asker's situation first")
    variants = {f"{args.step} on": True, f"{args.step} off": False}
    times: dict[str, list[float]] = {name: [] for name in variants}
    answers: dict[str, dict[str, tuple[str, str]]] = {name: {} for name in variants}
    try:
        for _ in range(args.rounds):
            for name, on in variants.items():
                switch(args.step, on)
                for qid, question, _expected in told:
                    start = time.perf_counter()
                    result = engine.ask(question, args.user)
                    times[name].append((time.perf_counter() - start) * 1000)
                    answers[name][qid] = (result.status.value, result.answer)
    finally:
        switch(args.step, True)
        engine.close()
    print_latencies(args.step, times)
    print("\nquestions whose answer differs:")
    for qid, question, expected in told:
        on, off = (answers[name][qid] for name in variants)
        if on != off:
            print(f"{qid}: {question}\n  expected: {expected}")
            print(f"  {args.step} off: {off[0]}: {off[1][:160]!r}")
            print(f"  {args.step} on:  {on[0]}: {on[1][:160]!r}")


if __name__ == "__main__":
    main()
