"""Held-out evaluation: public corpora, the default configuration, no ``[facts]`` vocabulary.

Builds a fresh index in a temporary folder from ``corpus/`` (``clearance init`` defaults plus
one ``[corpora.*]`` table per corpus), syncs ``directory.json``, asks every question of
``questions.yaml`` as its user through :meth:`Clearance.ask`, and scores each answer against
its expected outcome. Beside it, a BM25 baseline: the top lexical passage among the chunks
that user may read, scored by whether it holds the expected answer.

    .venv/bin/python benchmarks/heldout/run.py --split test
    .venv/bin/python benchmarks/heldout/run.py --split dev --json > dev.json

Outcomes: correct, partial, wrong, wrongly refused, wrong figure (a value the source gives for
another period or line, and not the asked one). Flags counted apart: fabricated (a number in
the answer that appears in no cited source) and leak (a cited document the user may not read,
or text of a RESTRICTED document in the answer).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clearance import Clearance, Status, load_settings
from clearance.access.policy import Action
from clearance.cli.init_cmd import default_config_text

HERE = Path(__file__).resolve().parent
CATEGORIES = ("narrative", "figure", "refusal", "clarification", "ja_zh")
OUTCOMES = ("correct", "partial", "wrong", "wrongly_refused", "wrong_figure")


@dataclass(frozen=True)
class Collection:
    """One held-out set: its corpora (one folder each under ``root/corpus``), the
    ``[corpora.*]`` tables that describe them, its directory and its questions, and the
    text only its RESTRICTED documents hold (none of it may appear in any answer)."""

    root: Path
    corpora: str
    restricted_markers: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return re.findall(r"^\[corpora\.([\w-]+)\]", self.corpora, re.M)

    @property
    def questions(self) -> Path:
        return self.root / "questions.yaml"

    @property
    def directory(self) -> Path:
        return self.root / "directory.json"


COLLECTIONS = {
    # US federal HR guidance and published figures, with a RESTRICTED board pack.
    "federal": Collection(
        HERE,
        """
[corpora.handbook]
description = "Public US federal HR guidance: leave, telework, FMLA, travel expenses."
max_sensitivity = "PUBLIC"

[corpora.finance]
description = "Published figures: segment tables, budget reviews, Japanese and Chinese results."
max_sensitivity = "CONFIDENTIAL"

[corpora.board]
description = "Board packs."
max_sensitivity = "RESTRICTED"
""",
        ("Kestrel", "Larkspur", "7,315", "4,480", "7,990", "Leeds", "612 roles"),
    ),
    # The TTS (18F) handbook's leave, travel, schedule and equipment pages, as published:
    # Jekyll front matter, template tags and links included.
    "tts": Collection(
        HERE / "18f",
        """
[corpora.handbook]
description = "The TTS handbook: leave, pay for extra hours, schedules, travel, equipment."
max_sensitivity = "PUBLIC"
""",
    ),
    # A third set: the unofficial Japanese translation of the GitLab Handbook as published
    # (Hugo front matter and shortcodes included), CBO's budget actuals in long-format CSVs,
    # and a RESTRICTED note written for the set.
    "gitlab": Collection(
        HERE / "gitlab",
        (HERE / "gitlab" / "corpora.toml").read_text(encoding="utf-8"),
        ("Tamarind", "Quillfeather", "286.4", "31 months"),
    ),
}

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_MARKER = re.compile(r"\[(?:S\d+|inferred)\]")


def normalise(text: str) -> str:
    """NFKC, lower case, thousands separators and spaces removed."""
    text = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).replace(" ", "")


def numbers(text: str) -> list[float]:
    """Every number in ``text`` (sign ignored: △4,496 and -4,496 are both 4496)."""
    found = []
    for m in _NUMBER.finditer(unicodedata.normalize("NFKC", _MARKER.sub(" ", text))):
        try:
            found.append(float(m.group().replace(",", "")))
        except ValueError:
            continue
    return found


def holds(text: str, expected: str) -> bool:
    """``expected`` is in ``text``: a bare number as a whole number, anything else as text."""
    want = normalise(expected)
    if re.fullmatch(r"\d+(?:\.\d+)?", want):
        return float(want) in numbers(text)
    return want in normalise(text)


def holds_any(text: str, alternatives: Iterable[str]) -> bool:
    return any(holds(text, a) for alternative in alternatives for a in alternative.split("|"))


def grounded(value: float, source_numbers: set[float]) -> bool:
    """A number is grounded when a source states it, at its scale or a thousandfold apart
    (USD 87.5 bn for 87,464 million), rounded as the answer rounds it."""
    if value in source_numbers:
        return True
    for s in source_numbers:
        for scale in (1e-3, 1e-6, 1e-4, 1e-8, 1e3):
            scaled = s * scale
            if scaled and abs(scaled - value) <= max(0.051, abs(scaled) * 0.0006):
                return True
    return False


def is_trivial(value: float) -> bool:
    """Ordinals, small counts and years are not checked for fabrication."""
    return value < 10 or (1900 <= value <= 2100 and value.is_integer())


@dataclass
class Score:
    outcome: str
    fabricated: list[str] = field(default_factory=list)
    leak: list[str] = field(default_factory=list)


def score_text(
    expect: dict[str, Any], text: str, answered: bool, status: str, *, passage: bool = False
) -> str:
    """The outcome of one answer against its expected outcome. A baseline ``passage`` is
    correct when it holds the expected value, whatever else the passage holds."""
    kind = expect["kind"]
    if kind == "refusal":
        if not answered:
            return "correct"
        return "wrong"
    if kind == "clarification":
        return "correct" if status == Status.CLARIFY.value else "wrong"
    if kind == "partial_period" and not answered:
        # The README's rule: a refusal of the whole period is correct; a refusal that goes
        # on to give the part under its label is scored on its text like an answer.
        right = holds_any(text, expect["accept"])
        if not right:
            return "correct"
        answered = True
    if not answered:
        return "wrongly_refused"
    if kind == "answer":
        hits = [holds_any(text, [m]) for m in expect["must"]]
        return "correct" if all(hits) else "partial" if any(hits) else "wrong"
    right = holds_any(text, expect["accept"])
    wrong = holds_any(text, expect.get("wrong", []))
    if kind == "partial_period":
        labelled = any(holds(text, label) for label in expect["labels"])
        if right and labelled:
            return "correct"
        if right or wrong:
            return "wrong_figure"
        return "wrong"
    if right and (passage or not wrong):
        return "correct"
    if right:
        return "partial"
    return "wrong_figure" if wrong else "wrong"


class Bench:
    """One index of the held-out corpora, and what each user may read in it."""

    def __init__(
        self,
        workdir: Path,
        collection: Collection | None = None,
        store: Sequence[str] = (),
        answer: Sequence[str] = (),
    ) -> None:
        """``store``, ``answer``: ``key = value`` lines (TOML) added to the ``[store]`` and
        ``[answer]`` tables."""
        self.collection = collection = collection or COLLECTIONS["federal"]
        config = workdir / "clearance.toml"
        text = default_config_text()
        for table, lines in (("store", store), ("answer", answer)):
            if lines and f"[{table}]\n" not in text:
                raise SystemExit(f"error: the default configuration has no [{table}] table")
            head, _, rest = text.partition(f"[{table}]\n")
            body, nxt, tail = rest.partition("\n[")
            for line in lines:
                key = line.split("=", 1)[0].strip()
                # A key the default configuration already sets is set again, not repeated.
                body = re.sub(rf"(?m)^{re.escape(key)}\s*=.*\n?", "", body)
                body = f"{line}\n{body}"
            if lines:
                text = f"{head}[{table}]\n{body}{nxt}{tail}"
        config.write_text(text + collection.corpora, encoding="utf-8")
        (workdir / "data").mkdir(exist_ok=True)
        self.engine = Clearance.open(load_settings(config))
        self.engine.sync_directory(collection.directory)
        report = self.engine.ingest([collection.root / "corpus" / n for n in collection.names])
        if report.failed:
            first = report.failed[0]
            raise SystemExit(f"error: {first.source}: {first.error}")
        index = self.engine.store
        self.documents = {
            d.doc_id: d for corpus in collection.names for d in index.list_documents(corpus)
        }
        self.numbers = {
            doc_id: set(numbers(" ".join(c.text for c in index.get_chunks(doc_id))))
            for doc_id in self.documents
        }

    def close(self) -> None:
        self.engine.close()

    def readable(self, user: str) -> set[str]:
        principals = self.engine.access().principal(user).principals
        return {d.doc_id for d in self.documents.values() if d.acl & principals}

    def ask(self, item: dict[str, Any]) -> dict[str, Any]:
        result = self.engine.ask(item["question"], item["user"])
        answered = result.status is Status.ANSWERED
        text = result.answer
        score = Score(score_text(item["expect"], text, answered, result.status.value))
        cited = {c.doc_id for c in result.citations}
        readable = self.readable(item["user"])
        score.leak = sorted(cited - readable)
        # A RESTRICTED document may be named to a reader allowed to open it: its title is
        # not its text, whatever words the title shares with it.
        shown = text
        for doc_id in cited & readable:
            shown = shown.replace(self.documents[doc_id].title or "\0", "")
        markers = self.collection.restricted_markers
        score.leak += [m for m in markers if m.lower() in shown.lower()]
        if answered:
            source = set().union(*(self.numbers.get(d, set()) for d in cited)) if cited else set()
            asked = set(numbers(item["question"]))
            score.fabricated = sorted(
                {
                    f"{v:g}"
                    for v in numbers(text)
                    if not is_trivial(v) and v not in asked and not grounded(v, source)
                }
            )
        if score.leak:
            score.outcome = "wrong"
        return {
            "status": result.status.value,
            "answer": text,
            "citations": [f"{c.doc_id} {c.locator}" for c in result.citations],
            "outcome": score.outcome,
            "fabricated": score.fabricated,
            "leak": score.leak,
        }

    def baseline(self, item: dict[str, Any]) -> dict[str, Any]:
        """The top BM25 passage among the chunks the user may retrieve."""
        access = self.engine.access()
        principal = access.principal(item["user"])
        flt = access.search_filter(
            principal, access.assistant(None), self.engine.store.corpora(), action=Action.RETRIEVE
        )
        top = self.engine.store.lexical_search(item["question"], flt, 1)
        passage = ""
        if top:
            chunk, _ = self.engine.store.hits([top[0][0]])[0]
            passage = chunk.text
        status = Status.ANSWERED.value if passage else Status.NOT_FOUND.value
        return {"outcome": score_text(item["expect"], passage, bool(passage), status, passage=True)}


def load_questions(split: str | None, collection: Collection | None = None) -> list[dict[str, Any]]:
    questions = (collection or COLLECTIONS["federal"]).questions
    items = yaml.safe_load(questions.read_text(encoding="utf-8"))
    if split == "probe":  # a set's probe split may stand on its own, in one file or more
        for probe in sorted(questions.parent.glob("probe*.yaml")):
            items += yaml.safe_load(probe.read_text(encoding="utf-8"))
    if split in (None, "all"):
        return [q for q in items if q["split"] in ("dev", "test")]
    return [q for q in items if q["split"] == split]


# Keys beside each key on a QWERTY keyboard: the letters a slipped finger types instead.
_NEIGHBOURS = {
    k: "".join(sorted(v))
    for k, v in {
        "q": "wa",
        "w": "qeas",
        "e": "wrsd",
        "r": "etdf",
        "t": "ryfg",
        "y": "tugh",
        "u": "yihj",
        "i": "uojk",
        "o": "ipkl",
        "p": "ol",
        "a": "qwsz",
        "s": "awedxz",
        "d": "serfcx",
        "f": "drtgvc",
        "g": "ftyhbv",
        "h": "gyujnb",
        "j": "huikmn",
        "k": "jiolm",
        "l": "kop",
        "z": "asx",
        "x": "zsdc",
        "c": "xdfv",
        "v": "cfgb",
        "b": "vghn",
        "n": "bhjm",
        "m": "njk",
    }.items()
}
_TYPABLE = re.compile(r"(?<![\w'’-])[A-Za-z]{5,}(?![\w'’-])")


def misspelt(question: str, rng: random.Random) -> str | None:
    """``question`` with one word of five or more Latin letters misspelt as people slip:
    a letter left out, typed twice, swapped with the next, or replaced by (or typed beside)
    a neighbouring key. ``None`` when no word has five letters."""
    words = list(_TYPABLE.finditer(question))
    if not words:
        return None
    match = rng.choice(words)
    word = match.group(0)
    i = rng.randrange(1, len(word) - 1)  # the first letter is kept; the last only swapped
    kind = rng.choice(("drop", "double", "swap", "replace", "beside"))
    keys = _NEIGHBOURS.get(word[i].lower(), "e")
    if kind == "drop":
        typo = word[:i] + word[i + 1 :]
    elif kind == "double":
        typo = word[:i] + word[i] + word[i:]
    elif kind == "swap" and word[i] != word[i + 1]:
        typo = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    elif kind == "beside":
        typo = word[:i] + rng.choice(keys) + word[i:]
    else:
        typo = word[:i] + rng.choice(keys) + word[i + 1 :]
    return question[: match.start()] + typo + question[match.end() :]


def with_typos(items: Sequence[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Each question with one word misspelt (:func:`misspelt`, seeded by the seed and the
    question's id, so a run is repeatable); questions with no word to misspell are left out."""
    out = []
    for item in items:
        typo = misspelt(item["question"], random.Random(f"{seed}:{item['id']}"))
        if typo is not None:
            out.append({**item, "question": typo, "asked_as": item["question"]})
    return out


def run(
    items: Sequence[dict[str, Any]],
    progress: bool = True,
    collection: Collection | None = None,
    store: Sequence[str] = (),
    answer: Sequence[str] = (),
) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="clearance-heldout-") as tmp:
        started = time.monotonic()
        bench = Bench(Path(tmp), collection, store, answer)
        if progress:
            print(f"index built in {time.monotonic() - started:.1f}s", file=sys.stderr)
        try:
            for n, item in enumerate(items, start=1):
                row = {k: item[k] for k in ("id", "split", "category", "user", "question")}
                if "asked_as" in item:
                    row["asked_as"] = item["asked_as"]
                row["clearance"] = bench.ask(item)
                row["baseline"] = bench.baseline(item)
                rows.append(row)
                if progress:
                    print(
                        f"[{n}/{len(items)}] {item['id']}: {row['clearance']['outcome']}"
                        f" (baseline {row['baseline']['outcome']})",
                        file=sys.stderr,
                    )
        finally:
            bench.close()
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for category in (*CATEGORIES, "all"):
        mine = [r for r in rows if category in ("all", r["category"])]
        if not mine:
            continue
        line = {"n": len(mine)}
        for outcome in OUTCOMES:
            line[outcome] = sum(r["clearance"]["outcome"] == outcome for r in mine)
        line["fabricated"] = sum(bool(r["clearance"]["fabricated"]) for r in mine)
        line["leak"] = sum(bool(r["clearance"]["leak"]) for r in mine)
        line["baseline_correct"] = sum(r["baseline"]["outcome"] == "correct" for r in mine)
        table[category] = line
    return table


def render(table: dict[str, dict[str, int]], split: str) -> str:
    head = (
        "| category | n | correct | partial | wrong | wrongly refused | wrong figure "
        "| fabricated | leak | BM25 top passage correct |"
    )
    lines = [f"split: {split}", "", head, "|---" * 10 + "|"]
    for category, s in table.items():
        pct = 100 * s["correct"] / s["n"]
        base = 100 * s["baseline_correct"] / s["n"]
        lines.append(
            f"| {category} | {s['n']} | {s['correct']} ({pct:.0f} %) | {s['partial']} "
            f"| {s['wrong']} | {s['wrongly_refused']} | {s['wrong_figure']} "
            f"| {s['fabricated']} | {s['leak']} | {s['baseline_correct']} ({base:.0f} %) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test", "probe", "all"), default="test")
    parser.add_argument(
        "--set",
        choices=sorted(COLLECTIONS),
        default="federal",
        help="federal: US federal HR guidance and published figures (questions.yaml); "
        "tts: the TTS (18F) handbook (18f/questions.yaml)",
    )
    parser.add_argument("--json", action="store_true", help="print every answer and the table")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="'KEY = VALUE'",
        help="a [store] setting, as a TOML line (repeatable), e.g. 'vector_search = \"signs\"'",
    )
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="'KEY = VALUE'",
        help="an [answer] setting, as a TOML line (repeatable), e.g. 'across_languages = false'",
    )
    parser.add_argument(
        "--typos",
        type=int,
        metavar="SEED",
        help="ask each question with one word misspelt, as seeded (questions with no word "
        "of five letters are left out)",
    )
    args = parser.parse_args(argv)
    collection = COLLECTIONS[args.set]
    items = load_questions(args.split, collection)
    if args.typos is not None:
        items = with_typos(items, args.typos)
    rows = run(
        items, progress=not args.quiet, collection=collection, store=args.store, answer=args.answer
    )
    table = summary(rows)
    if args.json:
        print(
            json.dumps(
                {"set": args.set, "split": args.split, "summary": table, "rows": rows},
                indent=1,
                ensure_ascii=False,
            )
        )
    else:
        print(render(table, args.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
