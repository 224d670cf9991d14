"""What reading misspelt words (stage 4b, ``clearance.retrieval.spelling``) costs a question
on a 1M-chunk PostgreSQL index, beside the lexical search it comes before.

Run from the repository root, after a ``bench_pg_classes.py --keep DIR`` run::

    .venv/bin/python benchmarks/bench_pg_spelling.py --keep DIR --first 100 --count 30

For each caller of the kept database (0.1 %, 1 %, 10 % and 60–100 % of the chunks), each
SciFact claim is read three ways, one after the other, timed by the same clock:

* **as asked**: the stage on the claim as written. A question of English words asks the
  index nothing; a claim's scientific words that are not in the English list ("mtDNA",
  gene names) are counted once, and those no readable chunk holds are read;
* **one word misspelt**: the first word of six letters or more loses its third letter
  (two statistics calls, and the text of a few chunks where several spellings share the
  index term);
* **lexical search**: the BM25 top 50 of the claim, for scale.

The stage reads the index only under the caller's filter, as the store's own searches do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pg_classes import kept, kept_arguments

from clearance.retrieval.spelling import Speller
from clearance.store.base import SearchFilter
from clearance.store.postgres import PostgresStore, VectorPlan


def misspelt(claim: str) -> str | None:
    """``claim`` with the third letter of its first word of six letters or more left out."""
    words = [w for w in claim.split() if w.isalpha() and len(w) >= 6]
    return claim.replace(words[0], words[0][:2] + words[0][3:], 1) if words else None


def reading(store: PostgresStore, flt: SearchFilter) -> Callable[[str], object]:
    speller = Speller()

    def texts(word: str) -> list[str]:
        ranked = store.lexical_search(word, flt, 3)
        return [c.text for c, _ in store.hits([i for i, _ in ranked])]

    return lambda text: speller.corrections(
        text, lambda terms: store.term_statistics(terms, flt), texts
    )


def ms(times: Sequence[float]) -> str:
    ordered = sorted(times)
    return f"{1000 * statistics.median(ordered):.1f} / {1000 * ordered[int(0.95 * (len(ordered) - 1))]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kept_arguments(parser, first=100, count=30)
    args = parser.parse_args()
    server, name, filters, queries, claims = kept(args)
    rows = []
    try:
        store = server.open(name, replace(VectorPlan(), classes=True))
        try:
            for caller, flt in filters.items():
                read = reading(store, flt)
                asked: list[float] = []
                slipped: list[float] = []
                lexical: list[float] = []
                for q in queries:
                    for text, times in ((claims[q], asked), (misspelt(claims[q]), slipped)):
                        if text is not None:
                            t0 = time.perf_counter()
                            read(text)
                            times.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    store.lexical_search(claims[q], flt, 50)
                    lexical.append(time.perf_counter() - t0)
                rows.append((caller, ms(asked), ms(slipped), ms(lexical), len(slipped)))
                print(f"{caller}: {rows[-1]}", file=sys.stderr)
        finally:
            store.close()
    finally:
        server.stop()
    print(
        f"claims {queries[0]}–{queries[-1]}, ms p50 / p95\n\n"
        "| caller | stage as asked | stage, one word misspelt | lexical search (k=50) | misspelt claims |\n"
        "|---|---|---|---|---|"
    )
    for caller, a, s, lex, n in rows:
        print(f"| {caller} | {a} | {s} | {lex} | {n} |")


if __name__ == "__main__":
    main()
