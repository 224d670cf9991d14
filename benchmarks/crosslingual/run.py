"""Cross-lingual questions over the held-out handbooks: the same question asked in English,
Japanese and Chinese, over English pages (group A) and over Japanese pages (group B).

For each question and language, with the default configuration (no ``[facts]`` vocabulary,
no synonyms, the extractive reader):

* **recall@10 as asked**: a chunk of the answering section is among the top 10 of the
  caller's search for the question as written;
* **recall@10 read across**: the same for the search the cross-lingual route runs, the
  question read in the documents' language (clearance.bilingual) with each word as the
  caller's pages put it; for a question in the pages' own language, the search as asked;
* **cited**: ``ask`` answers citing the answering section;
* **answered**: ``ask`` answers, and the answer holds every ``must`` string of the item;
* **other**: ``ask`` answers without them (a neighbouring sentence, or another passage);
* **ask p50 / p95**: the seconds ``ask`` takes, the cross-lingual pass included where it runs.

The index is the held-out sets' own (benchmarks/heldout/run.py): the TTS handbook, the federal
set and the GitLab set, one index each, asked as their staff reader. Report the ``test``
split; the ``dev`` split is the one looked at.

    .venv/bin/python benchmarks/crosslingual/run.py --split test [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "heldout"))

import run as heldout  # noqa: E402  (benchmarks/heldout/run.py)

from clearance.access.policy import Action  # noqa: E402
from clearance.answer.routes.crosslingual import read_across  # noqa: E402

K = 10
#: Which held-out set holds each source folder, and who reads it there.
SETS = {"18f/": ("tts", "ana"), "corpus/": ("federal", "ana"), "gitlab/": ("gitlab", "ana")}


def _set_of(source: str) -> tuple[str, str]:
    return next(v for prefix, v in SETS.items() if source.startswith(prefix))


def _section_hit(locator: str, title: str, wanted: str) -> bool:
    """Whether a chunk's locator (``section=A > B > C``) is the item's section: the item's
    ``parent > child`` path, or its innermost heading, ends the chunk's path. A passage
    before the page's first heading (``(top)``) is the section only of an item whose
    locator is the page's title (it has no heading above it)."""
    path = locator.split("section=", 1)[-1]
    if path == "(top)":
        return wanted == title
    return path.endswith(wanted) or path.endswith(wanted.split(" > ")[-1])


def _found(hits: Sequence[Any], source: str, locator: str) -> bool:
    return any(
        _is(h.document.doc_id, h.chunk.locator, h.document.title, source, locator) for h in hits[:K]
    )


def _is(doc_id: str, at: str, title: str, source: str, locator: str) -> bool:
    return doc_id.endswith(f":{Path(source).name}") and _section_hit(at, title, locator)


def _across(bench: heldout.Bench, user: str, question: str) -> list[Any]:
    """The top hits of the cross-lingual route's search: the first reading that crosses,
    each word as the caller's pages put it (answer/routes/crosslingual.py), else the
    question as asked."""
    engine = bench.engine
    flt = engine.caller(user, None).filter(Action.RETRIEVE, engine.store.corpora())
    for reading in read_across(engine.store, flt, question):
        return list(engine.search(user, reading.text, k=K, renderings=reading.groups()).hits)
    return list(engine.search(user, question, k=K).hits)


def run(split: str | None, quiet: bool, answer: Sequence[str] = ()) -> list[dict[str, Any]]:
    items = yaml.safe_load((HERE / "questions.yaml").read_text(encoding="utf-8"))
    items = [i for i in items if split in (None, "all", i["split"])]
    rows: list[dict[str, Any]] = []
    by_set: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        by_set[_set_of(item["source"])[0]].append(item)
    done = 0
    for name, members in by_set.items():
        with tempfile.TemporaryDirectory(prefix="clearance-xl-") as tmp:
            bench = heldout.Bench(Path(tmp), heldout.COLLECTIONS[name], answer=answer)
            try:
                for item in members:
                    user = _set_of(item["source"])[1]
                    for language, question in item["questions"].items():
                        asked = bench.engine.search(user, question, k=K).hits
                        own = language == ("en" if item["direction"] == "to_en" else "ja")
                        across = asked if own else _across(bench, user, question)
                        started = time.perf_counter()
                        result = bench.engine.ask(question, user)
                        took = time.perf_counter() - started
                        text = result.answer or ""
                        answered = result.status.value == "answered" and all(
                            heldout.holds(text, m) for m in item["must"]
                        )
                        rows.append(
                            {
                                "id": item["id"],
                                "split": item["split"],
                                "direction": item["direction"],
                                "language": language,
                                "asked@10": _found(asked, item["source"], item["locator"]),
                                "across@10": _found(across, item["source"], item["locator"]),
                                "answered": answered,
                                "cited": result.status.value == "answered"
                                and any(
                                    _is(
                                        c.doc_id,
                                        c.locator,
                                        c.title,
                                        item["source"],
                                        item["locator"],
                                    )
                                    for c in result.citations
                                ),
                                "status": result.status.value,
                                "flags": list(result.flags),
                                "seconds": round(took, 3),
                                "answer": text,
                            }
                        )
                    done += 1
                    if not quiet:
                        print(f"[{done}/{len(items)}] {item['id']}", file=sys.stderr)
            finally:
                bench.close()
    return rows


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def table(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        source = "en" if r["direction"] == "to_en" else "ja"
        groups[f"{r['language']}→{source}"].append(r)
    for key, members in sorted(groups.items()):
        n = len(members)
        out[key] = {
            "questions": n,
            "asked@10": round(sum(r["asked@10"] for r in members) / n, 3),
            "across@10": round(sum(r["across@10"] for r in members) / n, 3),
            "cited": round(sum(r["cited"] for r in members) / n, 3),
            "answered": round(sum(r["answered"] for r in members) / n, 3),
            "other": round(
                sum(r["status"] == "answered" and not r["answered"] for r in members) / n, 3
            ),
            "ask p50 s": _quantile([r["seconds"] for r in members], 0.5),
            "ask p95 s": _quantile([r["seconds"] for r in members], 0.95),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test", "all"), default="test")
    parser.add_argument("--json", action="store_true", help="every row and the table")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="'KEY = VALUE'",
        help="an [answer] setting, as a TOML line, e.g. 'across_languages = false'",
    )
    args = parser.parse_args(argv)
    rows = run(args.split, args.quiet, args.answer)
    summary = table(rows)
    if args.json:
        print(
            json.dumps(
                {"split": args.split, "table": summary, "rows": rows}, ensure_ascii=False, indent=1
            )
        )
        return 0
    print(f"split: {args.split}")
    heads = ("asked@10", "across@10", "cited", "answered", "other", "ask p50 s", "ask p95 s")
    print(f"{'question→pages':<16} {'n':>3} " + " ".join(f"{h:>9}" for h in heads))
    for key, line in summary.items():
        cells = " ".join(f"{line[h]:>9.2f}" for h in heads)
        print(f"{key:<16} {line['questions']:>3} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
