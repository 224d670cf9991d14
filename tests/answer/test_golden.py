"""Golden questions (``data/golden_questions.json``, its format is described in the file's
``_format``) asked as a user would: ``clearance ask --json`` on the demo corpus, each with
its own request date (``--today``).

Each question is checked against its own expectations, and the whole file is measured with
:mod:`clearance.evaluation`: numeric accuracy, refusal correctness, clarification
correctness and citation validity must all be 1.0, and no answer may state a fabricated
number. ``pytest -s`` shows the table; the test's tmp dir holds it as JSON.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.result import AnswerResult
from clearance.answer.structured import written_amount
from clearance.evaluation.scoring import (
    Case,
    CaseScore,
    Figure,
    Outcome,
    score_case,
    summarise,
)
from clearance.ingest.facts import Vocabulary

from .conftest import AcmeIndex, cli

GOLDEN = Path(__file__).parent / "data" / "golden_questions.json"
ENTRIES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["questions"]
EXPECT_KEYS = {
    "status",
    "route",
    "value",
    "unit",
    "cited",
    "not_cited",
    "contains",
    "not_contains",
    "missing",
    "options",
    "options_exclude",
    "assumptions",
    "resolved_periods",
}


#: The targets of the golden file: every rate 1.0 and no fabricated number.
TARGET_RATE = 1.0


def case_of(entry: dict[str, Any]) -> Case:
    """The entry as an evaluation case: its expected outcome class, and its figure with the
    documents that must be cited for it."""
    expect = entry["expect"]
    status = expect["status"]
    outcome = {"answered": Outcome.ANSWERED, "clarify": Outcome.CLARIFIED}.get(
        status, Outcome.REFUSED
    )
    figure = None
    if "value" in expect:
        figure = Figure(expect["value"], expect.get("unit", ""), tuple(expect["cited"]))
    return Case(
        entry["id"], entry["question"], entry["user"], outcome, entry.get("assistant"), figure
    )


def test_the_golden_file_is_well_formed() -> None:
    ids = [e["id"] for e in ENTRIES]
    assert len(ids) == len(set(ids)), "golden question ids must be unique"
    for entry in ENTRIES:
        assert {"id", "lang", "user", "question", "today", "expect"} <= set(entry), entry["id"]
        assert entry["lang"] in ("en", "ja", "zh"), entry["id"]
        assert set(entry["expect"]) <= EXPECT_KEYS, entry["id"]
        assert "status" in entry["expect"], entry["id"]
        # a figure is right only with its source: name the documents it must be cited from
        assert "value" not in entry["expect"] or entry["expect"].get("cited"), entry["id"]
        case_of(entry)  # a figure that is not one number, or an outcome it cannot have
    assert {e["lang"] for e in ENTRIES} == {"en", "ja", "zh"}


def mismatches(expect: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Every expectation ``data`` (the JSON of ``clearance ask``) does not meet."""
    out: list[str] = []
    answer = data["answer"]
    cited = {c["doc_id"] for c in data["citations"]}
    for key in ("status", "route", "missing", "options", "assumptions", "resolved_periods"):
        if key in expect and data[key] != expect[key]:
            out.append(f"{key}: {data[key]!r} != {expect[key]!r}")
    if "value" in expect:
        figure = written_amount(expect["value"], expect.get("unit", ""))
        if figure not in answer:
            out.append(f"the answer does not state {figure!r}")
    out += [f"{d} is not cited" for d in expect.get("cited", []) if d not in cited]
    out += [f"{d} is cited" for d in expect.get("not_cited", []) if d in cited]
    out += [f"answer lacks {s!r}" for s in expect.get("contains", []) if s not in answer]
    out += [f"answer has {s!r}" for s in expect.get("not_contains", []) if s in answer]
    out += [f"{o!r} is offered" for o in expect.get("options_exclude", []) if o in data["options"]]
    return out


_ANSWERS: dict[str, dict[str, Any]] = {}


def ask(acme: AcmeIndex, entry: dict[str, Any]) -> dict[str, Any]:
    """The JSON of ``clearance ask`` for ``entry``, asked once per session."""
    if entry["id"] not in _ANSWERS:
        args = ["--config", acme.config, "ask", entry["question"], "--user", entry["user"]]
        args += ["--today", entry["today"], "--json"]
        if entry.get("assistant"):
            args += ["--assistant", entry["assistant"]]
        rc, out, err = cli(*args)
        assert rc == 0, err
        _ANSWERS[entry["id"]] = json.loads(out)
    return _ANSWERS[entry["id"]]


def score(acme: AcmeIndex, entry: dict[str, Any], data: dict[str, Any] | None = None) -> CaseScore:
    result = AnswerResult.from_dict(ask(acme, entry) if data is None else data)
    return score_case(
        case_of(entry),
        result,
        evidence=acme.app.store,
        access=acme.app.access(),
        periods=Vocabulary(acme.app.settings.facts),
    )


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_golden_question(acme: AcmeIndex, entry: dict[str, Any]) -> None:
    data = ask(acme, entry)
    assert mismatches(entry["expect"], data) == [], data
    assert score(acme, entry).problems() == [], data


def test_the_golden_file_meets_its_targets(acme: AcmeIndex, tmp_path: Path) -> None:
    """The four rates and the fabricated-number count over the whole file."""
    summary = summarise([score(acme, entry) for entry in ENTRIES])
    print("\n" + summary.table())
    (tmp_path / "golden_report.json").write_text(summary.to_json(), encoding="utf-8")
    rates = {name: rate.value for name, rate in summary.rates().items()}
    assert rates == dict.fromkeys(rates, TARGET_RATE), summary.table()
    assert summary.fabricated_numbers == 0, summary.table()


def test_the_measures_have_teeth(acme: AcmeIndex) -> None:
    """Reverse proof on a real answer: a planted number, a citation moved to a cell the
    table does not have, and a refusal of the answerable question each miss the targets."""
    entry = next(e for e in ENTRIES if e["id"] == "defaults-en")
    data = ask(acme, entry)
    assert score(acme, entry).problems() == []
    planted = {**data, "answer": data["answer"] + " Up from 1,442 USD m."}
    cite = data["citations"][0]
    moved = {
        **data,
        "citations": [{**cite, "locator": cite["locator"].replace("FY2025", "FY2031")}],
    }
    refused = {**data, "status": "no_authorized_source", "answer": "No source.", "citations": []}
    scores = [score(acme, entry, d) for d in (planted, moved, refused)]
    # moved, the citation no longer names the fact: its value is then from nowhere cited
    assert [s.fabricated for s in scores] == [(Decimal(1442),), (Decimal(1571),), ()]
    assert [s.citations[0].valid for s in scores[:2]] == [True, False]
    assert [s.figure_right for s in scores] == [True, False, False]
    assert [s.refusal_right for s in scores] == [True, True, False]
    summary = summarise(scores)
    rates = {name: rate.value for name, rate in summary.rates().items()}
    assert rates == {
        "numeric accuracy": 1 / 3,
        "refusal correctness": 2 / 3,
        "clarification correctness": 1.0,
        "citation validity": 0.5,
    }
    assert summary.fabricated_numbers == 2


def test_the_golden_check_has_teeth() -> None:
    """Reverse proof: each kind of expectation fails on a result that breaks it."""
    data = {
        "status": "answered",
        "route": "structured",
        "answer": "ACME Japan's revenue in FY2025 was USD 486.9 m [S1].",
        "citations": [{"doc_id": "a"}],
        "missing": [],
        "options": ["x"],
        "assumptions": [],
        "resolved_periods": [],
    }
    expect = {
        "status": "clarify",
        "value": "448.2",
        "unit": "USD m",
        "cited": ["b"],
        "not_cited": ["a"],
        "contains": ["FY2024"],
        "not_contains": ["486.9"],
        "options_exclude": ["x"],
        "resolved_periods": [{"text": "last year", "period": "FY2025"}],
    }
    assert len(mismatches(expect, data)) == len(expect) - 1  # value and unit are one check
