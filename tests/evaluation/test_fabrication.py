"""Fabricated numbers: each accepted class on its own, and a planted number counted."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from clearance.answer.result import AnswerResult, ResolvedPeriod, Route, Status
from clearance.evaluation import fabrication
from clearance.evaluation.citations import Evidence
from clearance.evaluation.fabrication import comparison_numbers, fabricated_numbers

from .conftest import DECK, DECK_CELL, FY2024, FY2025, REPORT, SECTION, World, cell

FIGURE = "ACME Japan's revenue in FY2025 was USD 486.9 m [S1]."
COMPARED = (
    "ACME Japan's revenue in FY2025 was USD 486.9 m [S1].\n"
    "ACME Japan's revenue in FY2024 was USD 448.2 m [S2].\n"
    "FY2025 vs FY2024: up USD 38.7 m (+8.6%)"
)


def counted(
    world: World,
    question: str,
    answer: str,
    *cited: tuple[str, str],
    route: Route = Route.STRUCTURED,
) -> list[Decimal]:
    return fabricated_numbers(question, world.result(answer, *cited, route=route), world.store)


def test_a_figure_from_its_cited_fact_is_not_fabricated(world: World) -> None:
    assert counted(world, "Japan revenue FY2025?", FIGURE, (REPORT, cell("FY2025"))) == []


def test_a_planted_number_is_counted(world: World) -> None:
    answer = FIGURE + " Group revenue: 1,571 USD m."
    assert counted(world, "Japan revenue FY2025?", answer, (REPORT, cell("FY2025"))) == [
        Decimal("1571")
    ]


def assert_other_cells_are_counted(world: World) -> None:
    answer = FIGURE + " Headcount 1,362; the year before 448.2."
    assert counted(world, "Japan revenue FY2025?", answer, (REPORT, cell("FY2025"))) == [
        Decimal("448.2"),
        Decimal("1362"),
    ]


def test_a_cell_admits_its_own_fact_not_the_rest_of_its_table(world: World) -> None:
    """The citation names the FY2025 cell of a table stored as one chunk: the FY2024 value
    and the headcount in the same chunk are not what it cites."""
    assert_other_cells_are_counted(world)


def test_narrative_numbers_come_from_the_text_the_citation_opens(world: World) -> None:
    answer = "Japan grew thanks to 12 new accounts [S1]. Revenue reached 486.9 [S2]."
    ok = counted(
        world,
        "Why did Japan grow?",
        answer,
        (REPORT, "section=Why"),
        (REPORT, SECTION),
        route=Route.NARRATIVE,
    )
    assert ok == []
    # the same answer citing only the note: the table's number is from nowhere it cites
    only_note = counted(
        world, "Why did Japan grow?", answer, (REPORT, "section=Why"), route=Route.NARRATIVE
    )
    assert only_note == [Decimal("486.9")]


def test_titles_locators_and_the_question_are_not_claims(world: World) -> None:
    answer = "No figure found for revenue of ACME Japan in FY2031 (slide 3 of Investor deck)."
    assert counted(world, "Japan revenue FY2031?", answer, (DECK, DECK_CELL)) == []
    assert counted(world, "Japan revenue?", answer, (DECK, DECK_CELL)) == [Decimal("2031")]


def test_the_results_own_reading_of_the_question_is_not_a_claim(world: World) -> None:
    base = world.result(
        "(last year = FY2025) Which figure? For example: Q3 2025.", status=Status.CLARIFY
    )
    assert fabricated_numbers("Japan last year?", base, world.store) == [
        Decimal("3"),
        Decimal("2025"),
    ]
    read = dataclasses.replace(
        base, resolved_periods=(ResolvedPeriod("last year", "FY2025"),), options=("Q3 2025",)
    )
    assert fabricated_numbers("Japan last year?", read, world.store) == []


def test_canonical_periods_of_the_question_need_the_vocabulary(world: World) -> None:
    refusal = world.result(
        "No figure found for revenue of ACME Japan in H1 2025.", status=Status.NOT_FOUND
    )
    question = "日本2025年上半年营收多少？"
    assert fabricated_numbers(question, refusal, world.store) == [Decimal("1")]
    assert fabricated_numbers(question, refusal, world.store, periods=world.periods) == []


def test_comparisons_of_cited_facts_on_the_figures_paths(world: World) -> None:
    cited = ((REPORT, cell("FY2025")), (REPORT, cell("FY2024")))
    assert (
        counted(world, "Japan revenue FY2025 and FY2024?", COMPARED, *cited, route=Route.MULTI)
        == []
    )
    # the same derivation on another route is not accepted
    assert counted(
        world, "Japan revenue FY2025 and FY2024?", COMPARED, *cited, route=Route.NARRATIVE
    ) == [
        Decimal("8.6"),
        Decimal("38.7"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("FY2025 vs FY2024: up USD 38.7 m (+8.7%)", id="percentage rounded up"),
        pytest.param("FY2025 vs FY2024: up USD 38.7 m (+8.0%)", id="percentage on the wrong base"),
        pytest.param("FY2025 and FY2024 together: USD 935.1 m", id="a sum"),
        pytest.param("FY2025 vs FY2024: up USD 39 m", id="a rounded difference"),
    ],
)
def test_looser_derivations_are_counted(world: World, line: str) -> None:
    answer = COMPARED.rsplit("\n", 1)[0] + "\n" + line
    cited = ((REPORT, cell("FY2025")), (REPORT, cell("FY2024")))
    assert (
        counted(world, "Japan revenue FY2025 and FY2024?", answer, *cited, route=Route.MULTI) != []
    )


def test_comparison_numbers_match_the_structured_renderer() -> None:
    """The accepted derivations are the renderer's: difference and percentage on the
    earlier value, both orders, nothing for facts of different units."""
    assert comparison_numbers([FY2024, FY2025]) == {Decimal("38.7"), Decimal("8.6"), Decimal("7.9")}
    other_unit = dataclasses.replace(FY2024, unit="JPY m")
    assert comparison_numbers([other_unit, FY2025]) == set()


def test_the_count_has_teeth(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: an accounting that takes every number of a cited document (not the
    place cited) lets the table's other cells through, and the assertion above fails."""

    def whole_documents(
        question: str, result: AnswerResult, evidence: Evidence, *, periods: object = None
    ) -> set[Decimal]:
        texts = [c.text for cit in result.citations for c in evidence.get_chunks(cit.doc_id)]
        return set().union(*(fabrication.numbers_in(t) for t in texts))

    monkeypatch.setattr(fabrication, "accounted_numbers", whole_documents)
    with pytest.raises(AssertionError):
        assert_other_cells_are_counted(world)
