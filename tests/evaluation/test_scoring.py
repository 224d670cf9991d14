"""Outcome classes, figure accuracy and the rates over a set of cases (both directions of
refusal and clarification), and the answer JSON read back for scoring."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from clearance.answer.result import AnswerResult, Citation, ResolvedPeriod, Route, Status
from clearance.evaluation.scoring import (
    Case,
    Figure,
    Outcome,
    figure_problems,
    outcome_of,
    score_case,
    summarise,
)

from .conftest import DECK, DECK_CELL, REPORT, SECTION, World, cell

FIGURE = Figure("486.9", "USD m", (REPORT,))
ANSWER = "ACME Japan FY2025 revenue: 486.9 USD m"


def test_every_status_has_an_outcome_class() -> None:
    classes = {status: outcome_of(status) for status in Status}
    assert classes[Status.ANSWERED] is Outcome.ANSWERED
    assert classes[Status.CLARIFY] is Outcome.CLARIFIED
    assert classes[Status.DEGRADED] is Outcome.FAILED
    refusals = {s for s, o in classes.items() if o is Outcome.REFUSED}
    assert refusals == set(Status) - {Status.ANSWERED, Status.CLARIFY, Status.DEGRADED}


def test_a_figure_is_right_with_its_value_unit_and_source(world: World) -> None:
    result = world.result(ANSWER, (REPORT, cell("FY2025")))
    assert figure_problems(result, FIGURE, world.store) == []


def test_a_figure_sentence_states_its_figure_as_a_reader_says_it(world: World) -> None:
    """A figure answer says "USD 486.9 m": that states 486.9 in USD m, and only that."""
    sentence = "ACME Japan's revenue in FY2025 was USD 486.9 m [S1]."
    result = world.result(sentence, (REPORT, cell("FY2025")))
    assert figure_problems(result, FIGURE, world.store) == []
    for wrong in ("USD 486.8 m", "JPY 486.9 m", "USD 1486.9 m", "USD 486.9 bn"):
        other = world.result(sentence.replace("USD 486.9 m", wrong), (REPORT, cell("FY2025")))
        assert any("does not state" in p for p in figure_problems(other, FIGURE, world.store))


@pytest.mark.parametrize(
    ("answer", "cited", "problem"),
    [
        pytest.param(
            ANSWER.replace("486.9", "486.8"), (REPORT, cell("FY2025")), "does not state", id="value"
        ),
        pytest.param(
            ANSWER.replace("USD m", "JPY m"), (REPORT, cell("FY2025")), "does not state", id="unit"
        ),
        pytest.param(
            ANSWER.replace("486.9", "1486.9"),
            (REPORT, cell("FY2025")),
            "does not state",
            id="inside a longer number",
        ),
        pytest.param(ANSWER, (DECK, DECK_CELL), "is cited", id="another source cited"),
        pytest.param(
            ANSWER, (REPORT, cell("FY2024")), "holds", id="the expected source, another cell"
        ),
        pytest.param(
            ANSWER, (REPORT, "section=Why"), "holds", id="the expected source, a passage without it"
        ),
    ],
)
def test_a_figure_is_wrong_when_any_part_is(
    world: World, answer: str, cited: tuple[str, str], problem: str
) -> None:
    problems = figure_problems(world.result(answer, cited), FIGURE, world.store)
    assert any(problem in p for p in problems), problems


def test_a_passage_that_states_the_figure_is_its_source(world: World) -> None:
    """A narrative answer cites the text, not a cell: the text must state the value."""
    result = world.result(ANSWER, (REPORT, SECTION), route=Route.NARRATIVE)
    assert figure_problems(result, FIGURE, world.store) == []


def test_a_refused_figure_is_wrong(world: World) -> None:
    result = world.result("No figure found.", status=Status.NOT_FOUND)
    assert "status is not_found, not answered" in figure_problems(result, FIGURE, world.store)


@pytest.mark.parametrize("value", ["", "1.2.3", "12 USD", "FY2025", "1,5,7"])
def test_an_expected_figure_is_one_number(value: str) -> None:
    with pytest.raises(ValueError, match="not one number"):
        Figure(value, "USD m", (REPORT,))


def test_an_expected_figure_names_its_source() -> None:
    with pytest.raises(ValueError, match="names no source"):
        Figure("486.9", "USD m", ())
    assert Figure("-12.5", "USD m", (REPORT,)).number == Decimal("-12.5")


def test_a_case_cannot_expect_the_impossible() -> None:
    with pytest.raises(ValueError, match="never the expected"):
        Case("c", "q", "ann", Outcome.FAILED)
    with pytest.raises(ValueError, match="only expected of an answer"):
        Case("c", "q", "ann", Outcome.REFUSED, figure=FIGURE)


# --------------------------------------------------------------------------- rates

OUTCOME_STATUS = {
    Outcome.ANSWERED: Status.ANSWERED,
    Outcome.CLARIFIED: Status.CLARIFY,
    Outcome.REFUSED: Status.NO_AUTHORIZED_SOURCE,
    Outcome.FAILED: Status.DEGRADED,
}


def scored(world: World, expected: Outcome, actual: Outcome) -> tuple[bool | None, bool]:
    case = Case("c", "Why?", "ann", expected)
    result = world.result("x", status=OUTCOME_STATUS[actual])
    score = score_case(case, result, evidence=world.store, access=world.access)
    return score.refusal_right, score.clarification_right


@pytest.mark.parametrize(
    ("expected", "actual", "refusal", "clarification"),
    [
        (Outcome.ANSWERED, Outcome.ANSWERED, True, True),
        (Outcome.ANSWERED, Outcome.REFUSED, False, True),  # an answerable question refused
        (Outcome.ANSWERED, Outcome.CLARIFIED, True, False),  # a needless clarifying question
        (Outcome.ANSWERED, Outcome.FAILED, False, False),
        (Outcome.REFUSED, Outcome.REFUSED, True, True),
        (Outcome.REFUSED, Outcome.ANSWERED, False, True),  # answered what must be refused
        (Outcome.REFUSED, Outcome.CLARIFIED, False, False),
        (Outcome.REFUSED, Outcome.FAILED, False, False),
        (Outcome.CLARIFIED, Outcome.CLARIFIED, None, True),
        (Outcome.CLARIFIED, Outcome.ANSWERED, None, False),  # guessed instead of asking
        (Outcome.CLARIFIED, Outcome.REFUSED, None, False),
        (Outcome.CLARIFIED, Outcome.FAILED, None, False),
    ],
)
def test_refusal_and_clarification_in_both_directions(
    world: World,
    expected: Outcome,
    actual: Outcome,
    refusal: bool | None,
    clarification: bool,
) -> None:
    assert scored(world, expected, actual) == (refusal, clarification)


def test_the_summary_has_four_rates_and_a_count(world: World) -> None:
    right = score_case(
        Case("figure", "Japan revenue FY2025?", "ann", Outcome.ANSWERED, figure=FIGURE),
        world.result(ANSWER, (REPORT, cell("FY2025"))),
        evidence=world.store,
        access=world.access,
    )
    wrong = score_case(
        Case("refuse", "Japan revenue FY2031?", "ann", Outcome.REFUSED),
        world.result(ANSWER + " and 1,571 USD m", (REPORT, "page=4")),
        evidence=world.store,
        access=world.access,
    )
    summary = summarise([right, wrong])
    assert {k: (r.right, r.total) for k, r in summary.rates().items()} == {
        "numeric accuracy": (1, 1),
        "refusal correctness": (1, 2),
        "clarification correctness": (2, 2),
        "citation validity": (1, 2),
    }
    # a locator that opens nothing is no evidence: only the title's 2025 is accounted for
    assert summary.fabricated_numbers == 2
    assert summary.failures() == {
        "refuse": [
            "expected refused, got answered",
            "citation wiki:report · page=4: the locator opens no stored text",
            "fabricated numbers: 486.9, 1571",
        ]
    }
    report = json.loads(summary.to_json())
    assert report["rates"]["refusal_correctness"] == {"right": 1, "total": 2, "rate": 0.5}
    assert report["fabricated_numbers"] == 2
    table = summary.table()
    assert "refusal correctness" in table and "0.500" in table and "refuse:" in table


def test_a_rate_with_nothing_to_judge_is_not_a_number(world: World) -> None:
    summary = summarise([])
    assert all(r.value is None for r in summary.rates().values())
    assert "n/a" in summary.table()


# --------------------------------------------------------------------------- JSON


def test_an_answer_reads_back_from_its_json() -> None:
    result = AnswerResult(
        Status.ANSWERED,
        "(last year = FY2025) ACME Japan FY2025 revenue: 486.9 USD m",
        Route.STRUCTURED,
        (Citation(REPORT, "Annual report", cell("FY2025"), "https://x.test/r", "medium"),),
        trace_id="t1",
        flags=("conflict",),
        assumptions=("entity: ACME Japan",),
        missing=(),
        options=("revenue",),
        resolved_periods=(ResolvedPeriod("last year", "FY2025"),),
    )
    assert AnswerResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a JSON object"),
        ({"status": "maybe", "route": "none"}, "'maybe' is not a valid Status"),
        ({"status": "answered", "route": "nowhere"}, "'nowhere' is not a valid Route"),
        ({"status": "answered", "route": "none", "answer": 3}, "'answer' must be a string"),
        ({"status": "answered", "route": "none", "options": "revenue"}, "'options' must be a list"),
        (
            {"status": "answered", "route": "none", "citations": [{"doc_id": "a"}]},
            r"citations\[0\]",
        ),
    ],
)
def test_a_malformed_answer_json_is_refused_by_name(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnswerResult.from_dict(data)
