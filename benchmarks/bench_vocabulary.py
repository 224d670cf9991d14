"""Micro-benchmark of the ``[facts]`` vocabulary's overlap checks (not a test: it prints,
it never asserts).

Why: ``Vocabulary.find`` keeps the longest of overlapping matches and
``Vocabulary.malformed_periods`` skips tokens inside recognised periods or already taken.
Both used to compare every match with every match taken so far (O(m²) in the number of
matches m of one text); they now keep the taken spans sorted and binary-search them. The
question parser runs both on every question, so the worst realistic text is a question at
``[answer] max_question_chars`` (2,000 characters) made of period-like tokens.

Measured, each as the median of ``--repeat`` runs in milliseconds, old (the quadratic
versions, copied here) and new side by side in one process, the two alternating run by run:

* ``find_periods`` and ``malformed_periods`` of a 2,000-character question of periods and of
  malformed periods (``FY2024 FY20245 Q3 2025 Q5 2024 …``);
* the same on a typical question (``What was revenue in Japan in FY2024?``);
* ``extract_facts`` over a 2,000-row, 6-column long-format sheet (labels are short, so m is
  small: this shows the change costs nothing where matches are few).

Run: ``.venv/bin/python benchmarks/bench_vocabulary.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterable

from clearance.config import settings_from_dict
from clearance.ingest import facts
from clearance.ingest.facts import Match, Vocabulary, extract_facts, normalize
from clearance.model import Section

VOCAB = settings_from_dict(
    {
        "facts": {
            "metrics": {"revenue": ["revenue", "売上高"], "headcount": ["headcount"]},
            "entities": {"ACME Japan": ["Japan", "日本"], "ACME US": ["US"], "ACME EU": ["EU"]},
            "units": {"USD m": ["USD m"]},
        }
    }
).facts


def old_longest(matches: Iterable[Match]) -> list[Match]:
    chosen: list[Match] = []
    for m in sorted(set(matches), key=lambda m: (-(m.end - m.start), m.start, m.canonical)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: (m.start, m.end))


def old_malformed_periods(self: Vocabulary, text: str) -> list[str]:
    norm = normalize(text)
    if not norm:
        return []
    recognised = self.find_periods(norm)
    spaced, back = facts._spaced(norm)
    spans: list[tuple[int, int]] = []
    for pattern in facts._PERIODISH:
        for m in pattern.finditer(spaced):
            start, end = back[m.start()], back[m.end() - 1] + 1
            if any(r.start <= start and end <= r.end for r in recognised):
                continue
            if any(start < e and s < end for s, e in spans):
                continue
            spans.append((start, end))
    return [norm[s:e].strip() for s, e in sorted(spans)]


def timed_ms(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def use(old: bool) -> None:
    """Switch the vocabulary to the old (quadratic) or the new overlap checks."""
    if old:
        facts._longest = old_longest  # type: ignore[assignment]
        Vocabulary.malformed_periods = old_malformed_periods  # type: ignore[method-assign]
    else:
        facts._longest = NEW_LONGEST
        Vocabulary.malformed_periods = NEW_MALFORMED  # type: ignore[method-assign]


NEW_LONGEST, NEW_MALFORMED = facts._longest, Vocabulary.malformed_periods


def sheet(rows: int) -> list[Section]:
    regions = ("Japan", "US", "EU")
    body = [
        (regions[i % 3], f"FY{2000 + i % 25}", "Revenue", "USD m", f"{i}.5", f"{i * 3}")
        for i in range(rows)
    ]
    header = ("Region", "Fiscal year", "Metric", "Unit", "Value", "Other")
    return [Section("…", f"sheet=S,range=A1:F{rows + 1}", atomic=True, table=(header, *body))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    vocab = Vocabulary(VOCAB)
    long_q = ("FY2024 FY20245 Q3 2025 Q5 2024 2025年度 " * 60)[:2000]
    short_q = "What was revenue in Japan in FY2024?"
    sections = sheet(2000)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("find_periods, 2,000-char question", lambda: vocab.find_periods(long_q)),
        ("malformed_periods, 2,000-char question", lambda: vocab.malformed_periods(long_q)),
        ("find_periods, typical question", lambda: vocab.find_periods(short_q)),
        ("malformed_periods, typical question", lambda: vocab.malformed_periods(short_q)),
        (
            "extract_facts, 2,000-row sheet",
            lambda: extract_facts(sections, doc_id="d", title="", vocab=vocab),
        ),
    ]
    print(f"matches in the long question: {len(vocab.find_periods(long_q))} periods")
    print(f"{'case':42} {'old ms':>10} {'new ms':>10} {'old/new':>8}")
    for name, run in cases:
        old_times: list[float] = []
        new_times: list[float] = []
        for i in range(args.repeat):  # alternate, so load from elsewhere hits both alike
            for is_old in (i % 2 == 0, i % 2 == 1):
                use(is_old)
                (old_times if is_old else new_times).append(timed_ms(run))
        use(False)
        old, new = statistics.median(old_times), statistics.median(new_times)
        print(f"{name:42} {old:10.3f} {new:10.3f} {old / new:8.1f}")


if __name__ == "__main__":
    main()
