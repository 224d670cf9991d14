"""Issue 22, "A qualifier dropped", in Japanese and Chinese, on the demo corpus: CJK words
attached to a metric (before it, or joined by の/的) that are no entity, period, metric or
question word narrow it to a line or name the entity. Such a figure is not found, naming
what was asked, never the parent's total and never a list of entities to choose from.

* "日本のサービス売上高は2025年度いくら？" had answered ACME Japan's total revenue
  (USD 486.9 m);
* "香港去年营收多少？" and "ACME 香港的收入是多少？" had asked which entity, offering the
  demo's four, as "What was ACME HK revenue last year?" no longer does.

Reverse proof: with the old reading (no CJK qualifier) monkeypatched back, the first question
gets the total again and the same assertion catches it.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date
from typing import Any

import pytest

import clearance.answer.intent as intent_module
from clearance.answer.result import AnswerResult, Route, Status
from clearance.llm.mock import MockProvider

from .conftest import AcmeIndex

TODAY = date(2026, 10, 15)
USER = "alice"
ENTITIES = ("ACME Group", "ACME Japan", "ACME US", "ACME EU")
# A number written on its own (not the year of "FY2025").
_NUMBER = re.compile(r"(?<![A-Za-z\d.,])\d[\d,]*(?:\.\d+)?")

SERVICES = "日本のサービス売上高は2025年度いくら？"


def ask(index: AcmeIndex, question: str) -> AnswerResult:
    return index.orchestrator(MockProvider()).ask(question, USER, today=TODAY)


def parent_totals(index: AcmeIndex, result: AnswerResult) -> list[float]:
    """The figures of ``result``'s answer that are a parent total the question narrowed:
    any revenue value in the demo, for any entity and period (the qualified lines asked
    about have no fact of their own, so every revenue figure in the answer is a total)."""
    totals = {
        fact.value
        for doc_id in index.doc_ids()
        for fact in index.facts(doc_id)
        if fact.metric == "revenue"
    }
    found = [float(n.replace(",", "")) for n in _NUMBER.findall(result.answer)]
    return [n for n in found if n in totals]


def assert_not_the_total(index: AcmeIndex, result: AnswerResult) -> None:
    assert result.status is Status.NOT_FOUND, result.answer
    assert result.route is Route.STRUCTURED, result.route
    assert parent_totals(index, result) == [], result.answer
    assert result.citations == () and result.options == (), result
    # no entity the question did not name is offered
    offered = [e for e in ENTITIES if e in result.answer]
    assert offered in ([], ["ACME Japan"]), result.answer


def test_the_total_is_what_the_guard_catches(acme: AcmeIndex) -> None:
    """The helper sees ACME Japan's FY2025 revenue (486.9) as a parent total."""
    total = ask(acme, "日本の2025年度の売上高はいくら？")
    assert total.status is Status.ANSWERED and "486.9" in total.answer, total.answer
    assert parent_totals(acme, total) == [486.9]


def test_a_japanese_line_is_not_found_never_the_total(acme: AcmeIndex) -> None:
    result = ask(acme, SERVICES)
    assert_not_the_total(acme, result)
    assert result.answer == "No figure found for サービス revenue of ACME Japan in FY2025."
    # joined by の, the same
    joined = ask(acme, "日本のサービスの売上高は2025年度いくら？")
    assert_not_the_total(acme, joined)
    assert "サービス revenue of ACME Japan" in joined.answer


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("香港去年营收多少？", "(去年 = FY2025) No figure found for revenue of 香港 in FY2025."),
        ("ACME 香港的收入是多少？", "No figure found for revenue of ACME 香港."),
    ],
)
def test_an_unknown_chinese_entity_is_not_found_and_nothing_is_offered(
    acme: AcmeIndex, question: str, expected: str
) -> None:
    result = ask(acme, question)
    assert_not_the_total(acme, result)
    assert result.answer == expected
    assert not [e for e in ENTITIES if e in result.answer]
    assert "Please say which" not in result.answer


def test_an_entity_alias_is_no_qualifier(acme: AcmeIndex) -> None:
    """香港 configured as an entity's alias is that entity, not a qualifier."""
    facts = acme.orchestrator(MockProvider()).ctx.settings.facts
    with_hk = dataclasses.replace(facts, entities={**facts.entities, "ACME HK": ["香港"]})
    parser = intent_module.RuleIntentParser(with_hk)
    intent = parser.parse("香港去年营收多少？", today=TODAY)
    assert [(p.entity, p.qualifier) for p in intent.parts] == [("ACME HK", None)]


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("ACME Japanの2024年度の売上高は？", "448.2"),
        ("集团去年营收多少？", "1,571"),
        ("日本の2025年度の売上高はいくら？", "486.9"),
        ("2025年度の日本の営業利益はいくら？", "61.2"),
        ("请问集团去年营收是多少？", "1,571"),
    ],
)
def test_legitimate_cjk_figure_questions_are_still_answered(
    acme: AcmeIndex, question: str, value: str
) -> None:
    result = ask(acme, question)
    assert result.status is Status.ANSWERED, result.answer
    assert value in result.answer


def test_reverse_proof_the_old_reading_gives_the_total(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the CJK qualifier (the old reading) サービス is dropped: the answer is ACME
    Japan's total revenue, and the same assertion catches it."""

    def dropped(*_: Any, **__: Any) -> None:
        return None

    monkeypatch.setattr(intent_module, "_cjk_qualifier", dropped)
    result = ask(acme, SERVICES)
    assert result.status is Status.ANSWERED and "486.9" in result.answer, result.answer
    with pytest.raises(AssertionError):
        assert_not_the_total(acme, result)
    hk = ask(acme, "香港去年营收多少？")
    assert hk.status is Status.CLARIFY and "ACME Group" in hk.answer, hk.answer
    with pytest.raises(AssertionError):
        assert_not_the_total(acme, hk)
