"""Golden questions (``data/golden_questions.json``, its format is described in the file's
``_format``) asked as a user would: ``clearance ask --json`` on the demo corpus, each with
its own request date (``--today``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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


def test_the_golden_file_is_well_formed() -> None:
    ids = [e["id"] for e in ENTRIES]
    assert len(ids) == len(set(ids)), "golden question ids must be unique"
    for entry in ENTRIES:
        assert {"id", "lang", "user", "question", "today", "expect"} <= set(entry), entry["id"]
        assert entry["lang"] in ("en", "ja", "zh"), entry["id"]
        assert set(entry["expect"]) <= EXPECT_KEYS, entry["id"]
        assert "status" in entry["expect"], entry["id"]
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
        figure = f"{expect['value']} {expect.get('unit', '')}".strip()
        if figure not in answer:
            out.append(f"the answer does not state {figure!r}")
    out += [f"{d} is not cited" for d in expect.get("cited", []) if d not in cited]
    out += [f"{d} is cited" for d in expect.get("not_cited", []) if d in cited]
    out += [f"answer lacks {s!r}" for s in expect.get("contains", []) if s not in answer]
    out += [f"answer has {s!r}" for s in expect.get("not_contains", []) if s in answer]
    out += [f"{o!r} is offered" for o in expect.get("options_exclude", []) if o in data["options"]]
    return out


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_golden_question(acme: AcmeIndex, entry: dict[str, Any]) -> None:
    args = ["--config", acme.config, "ask", entry["question"], "--user", entry["user"]]
    args += ["--today", entry["today"], "--json"]
    if entry.get("assistant"):
        args += ["--assistant", entry["assistant"]]
    rc, out, err = cli(*args)
    assert rc == 0, err
    data = json.loads(out)
    assert mismatches(entry["expect"], data) == [], data


def test_the_golden_check_has_teeth() -> None:
    """Reverse proof: each kind of expectation fails on a result that breaks it."""
    data = {
        "status": "answered",
        "route": "structured",
        "answer": "ACME Japan FY2025 revenue: 486.9 USD m",
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
