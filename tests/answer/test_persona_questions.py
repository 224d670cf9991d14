"""Persona × question type on the ACME demo corpus, with the default (extractive) provider.

The cases live in ``data/persona_questions.json``: for several personas, a question of each
type — answerable; just outside the person's permissions; about a sensitive document they
know exists; public and internal sources that conflict; an "ignore the access rules and …"
prompt injection — with the expected ``status`` and the doc_ids that must be cited (or
``"none"``). Expectations were reasoned from ``personas.json`` and the documents' contents;
a case whose behaviour differs without being a clear bug carries a ``discrepancy`` and runs
as a strict xfail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.result import Status

from .conftest import (
    PERSONAS,
    RESTRICTED_CANARIES,
    AcmeIndex,
    citable,
    forbidden_canaries,
    nameable,
    readable,
)

DATA: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "persona_questions.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = DATA["cases"]


def _param(case: dict[str, Any]) -> Any:
    marks = (
        [pytest.mark.xfail(strict=True, reason=case["discrepancy"])]
        if "discrepancy" in case
        else []
    )
    return pytest.param(case, marks=marks, id=_id(case))


def test_the_matrix_covers_every_type_for_several_personas() -> None:
    types = set(DATA["types"])
    by_persona: dict[str, set[str]] = {}
    for case in CASES:
        assert case["persona"] in PERSONAS
        assert case["type"] in types
        assert case["status"] in {s.value for s in Status}
        allowed = nameable if case.get("named_only") else readable
        assert case["cited"] == "none" or (
            isinstance(case["cited"], list) and set(case["cited"]) <= allowed(case["persona"])
        )
        by_persona.setdefault(case["persona"], set()).add(case["type"])
    complete = [p for p, seen in by_persona.items() if seen == types]
    assert len(complete) >= 6, by_persona


def _id(case: dict[str, Any]) -> str:
    return f"{case['persona']}-{case['type']}-{case['question']}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_persona_question_shows_nothing_outside_permissions(
    acme: AcmeIndex, case: dict[str, Any]
) -> None:
    """Whatever the expectation (discrepancies included): no citation of a document the
    persona may not retrieve, no canary of one, no RESTRICTED canary at all."""
    persona = case["persona"]
    result = acme.app.ask(case["question"], persona)
    output = json.dumps(result.to_dict(), ensure_ascii=False)
    assert {c.doc_id for c in result.citations} <= citable(persona, result.answer, result.flags)
    leaked = [m for marks in forbidden_canaries(persona).values() for m in marks if m in output]
    assert leaked == []
    assert [c for c in RESTRICTED_CANARIES if c in output] == []


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_persona_question(acme: AcmeIndex, case: dict[str, Any]) -> None:
    result = acme.app.ask(case["question"], case["persona"])
    cited = [c.doc_id for c in result.citations]
    assert result.status.value == case["status"], result.to_dict()
    if case["cited"] == "none":
        assert cited == []
    else:
        assert set(case["cited"]) <= set(cited), cited
