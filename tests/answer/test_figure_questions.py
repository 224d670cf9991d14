"""The figures path on the demo corpus: stated assumptions instead of needless clarification,
clarifying questions whose options come only from readable facts, routing that does not
hijack questions about something else, and composite (figure + explanation) questions."""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import Any

import pytest

import clearance.answer.intent as intent_module
import clearance.answer.routes.narrative as narrative_route
from clearance.answer.context import AnswerContext
from clearance.answer.intent import MetricQuery
from clearance.answer.orchestrator import Orchestrator
from clearance.answer.result import AnswerResult, Route, Status
from clearance.answer.routes.figures import FiguresRoute
from clearance.answer.routes.narrative import NarrativeRoute
from clearance.answer.structured import ToolResult
from clearance.ingest.locator import is_tabular
from clearance.llm.mock import MockProvider

from .conftest import PERSONAS, AcmeIndex

TODAY = date(2026, 10, 15)
BUDGET_QUESTION = "Japan budget FY2026, how much?"  # only the board pack has FY2026 budgets


def ask(index: AcmeIndex, question: str, user: str, **kwargs: Any) -> AnswerResult:
    orchestrator = index.orchestrator(MockProvider())
    return orchestrator.ask(question, user, today=TODAY, **kwargs)


def without_defaults(orchestrator: Orchestrator) -> Orchestrator:
    facts = dataclasses.replace(
        orchestrator.ctx.settings.facts, default_entity="", default_period=""
    )
    orchestrator.ctx.settings = dataclasses.replace(orchestrator.ctx.settings, facts=facts)
    orchestrator.default_period = ""
    return orchestrator


# --------------------------------------------------------------------------- assumptions


def test_a_bare_metric_question_is_answered_for_the_defaults_and_says_so(acme: AcmeIndex) -> None:
    result = ask(acme, "Revenue?", "alice")
    assert (result.status, result.route) == (Status.ANSWERED, Route.STRUCTURED)
    assert result.answer.startswith(
        "Assuming ACME Group and FY2025: ACME Group's revenue in FY2025 was"
    )
    assert result.assumptions == ("entity: ACME Group", "period: FY2025 (the latest with a figure)")
    assert result.to_dict()["assumptions"] == list(result.assumptions)

    # Without [facts] default_entity / default_period, the same question asks to clarify.
    bare = without_defaults(acme.orchestrator(MockProvider())).ask("Revenue?", "alice", today=TODAY)
    assert (bare.status, bare.missing, bare.assumptions) == (
        Status.CLARIFY,
        ("entity", "period"),
        (),
    )


def test_the_latest_period_is_the_latest_the_asker_may_read(acme: AcmeIndex) -> None:
    """FY2026 budgets exist only in the board pack: jun reads them, alice does not, and for
    alice no other period's budget (nor an actual) stands in."""
    question = "What is the Japan revenue budget?"
    board = ask(acme, question, "jun")
    assert board.status is Status.ANSWERED
    assert "FY2026" in board.answer and "522" in board.answer
    assert board.assumptions == ("period: FY2026 (the latest with a figure)",)

    other = ask(acme, question, "alice")
    assert other.status is Status.NOT_FOUND
    assert "any period" in other.answer
    assert "FY2026" not in other.answer and "522" not in other.answer
    assert other.assumptions == ()


def test_unexplained_words_stop_the_default_entity(acme: AcmeIndex) -> None:
    """An unknown name ("ACME HK") is never answered with the default entity's figure, and
    no other entity is offered in its place: it is not found."""
    result = ask(acme, "What was ACME HK revenue last year?", "alice")
    assert (result.status, result.missing, result.options) == (Status.NOT_FOUND, (), ())
    assert "ACME HK" in result.answer and "ACME Group" not in result.answer
    assert "1,571" not in result.answer and result.citations == ()


# --------------------------------------------------------------------------- clarify options


def test_clarify_options_come_only_from_facts_the_caller_may_read(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = ask(acme, BUDGET_QUESTION, "jun")
    assert (reader.status, reader.missing) == (Status.CLARIFY, ("metric",))
    assert reader.options == ("revenue", "operating_profit", "headcount")
    assert "revenue" in reader.answer

    outsider = ask(acme, BUDGET_QUESTION, "alice")
    assert (outsider.status, outsider.missing, outsider.options) == (
        Status.CLARIFY,
        ("metric",),
        (),
    )
    assert "revenue" not in outsider.answer

    # Reverse proof: options read with someone else's principals are caught.
    real = AnswerContext.readable_facts

    def leaky(self: Orchestrator, request: Any, **slots: Any) -> Any:
        request.flt = dataclasses.replace(
            request.flt, principals=frozenset(PERSONAS["jun"]["principals"])
        )
        return real(self, request, **slots)

    monkeypatch.setattr(AnswerContext, "readable_facts", leaky)
    assert ask(acme, BUDGET_QUESTION, "alice").options != ()


def test_an_ambiguous_period_is_offered_back_not_guessed(acme: AcmeIndex) -> None:
    result = ask(acme, "前年売上高", "alice")
    assert (result.status, result.missing, result.options) == (
        Status.CLARIFY,
        ("period",),
        ("FY2025", "FY2024"),
    )
    assert result.citations == ()


# --------------------------------------------------------------------------- routing


HIJACK_CANDIDATES = (
    "When will employees be informed about the Okta maintenance?",
    "How many employees entered credentials in the phishing simulation?",
)


@pytest.mark.parametrize("question", HIJACK_CANDIDATES)
def test_a_question_about_something_else_is_not_taken_for_a_figure(
    acme: AcmeIndex, question: str
) -> None:
    result = ask(acme, question, "alice")
    assert result.route is Route.NARRATIVE
    assert result.status is not Status.CLARIFY
    assert "Please say which" not in result.answer


def test_the_routing_check_has_teeth(acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: a parser that lets any leftover words through hijacks the question."""
    monkeypatch.setattr(intent_module, "_MAX_RESIDUAL_WORDS", 99)
    result = ask(acme, HIJACK_CANDIDATES[1], "alice")
    assert result.route is Route.STRUCTURED


# --------------------------------------------------------------------------- composite

COMPOSITE = "How much was Japan revenue in FY2025, and why did Japan grow?"


def test_a_composite_question_gets_the_figure_and_the_explanation(acme: AcmeIndex) -> None:
    figure = ask(acme, "How much was Japan revenue in FY2025?", "alice")
    result = ask(acme, COMPOSITE, "alice")
    assert (result.status, result.route) == (Status.ANSWERED, Route.COMPOSITE)
    head, _, tail = result.answer.partition("\n\n")
    assert head == figure.answer  # the figure exactly as the structured path renders it
    # The explanation, cited: its markers count on from the figure's citations.
    assert tail.strip() and f"[S{len(figure.citations) + 1}]" in tail
    assert set(figure.citations) <= set(result.citations)
    assert len(result.citations) > len(figure.citations)
    assert not [f for f in result.flags if f.startswith("unanswered_part:")]


REVERSED = "Why did Japan grow, and how much was Japan revenue in FY2025?"


def _explanation_locators(result: AnswerResult, figure: AnswerResult) -> list[str]:
    return [c.locator for c in result.citations if c not in figure.citations]


def test_an_explanation_asked_first_is_answered_too(acme: AcmeIndex) -> None:
    """ "Why …, and how much …?": the figure from facts, the explanation from prose."""
    figure = ask(acme, "How much was Japan revenue in FY2025?", "alice")
    result = ask(acme, REVERSED, "alice")
    assert (result.status, result.route) == (Status.ANSWERED, Route.COMPOSITE)
    head, _, tail = result.answer.partition("\n\n")
    assert head == figure.answer
    assert "Osaka sales office" in tail  # the report's explanation, not a row of figures
    assert not [f for f in result.flags if f.startswith("unanswered_part:")]


@pytest.mark.parametrize("question", [COMPOSITE, REVERSED])
def test_the_explanation_is_prose_not_the_figures_own_table_rows(
    acme: AcmeIndex, question: str
) -> None:
    figure = ask(acme, "How much was Japan revenue in FY2025?", "alice")
    located = _explanation_locators(ask(acme, question, "alice"), figure)
    assert located and not [loc for loc in located if is_tabular(loc)]


def _judged_locators(acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch, question: str) -> list[str]:
    """The locators of every snippet the explanation part put before the relevance gate."""
    seen: list[str] = []
    real = narrative_route.to_snippets

    def spy(hits: Any, *args: Any) -> Any:
        snippets = real(hits, *args)
        seen.extend(s.locator for s in snippets)
        return snippets

    monkeypatch.setattr(narrative_route, "to_snippets", spy)
    ask(acme, question, "alice")
    return seen


def test_table_rows_never_reach_the_explanation(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not [loc for loc in _judged_locators(acme, monkeypatch, COMPOSITE) if is_tabular(loc)]


def test_the_prose_rule_has_teeth(acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: when every chunk counts as prose, the figure's rows are considered."""
    monkeypatch.setattr(narrative_route, "is_tabular", lambda locator: False)
    assert [loc for loc in _judged_locators(acme, monkeypatch, COMPOSITE) if is_tabular(loc)]


def test_a_composite_part_without_a_source_is_named_and_the_other_answered(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_source(self: Orchestrator, request: Any, **_: Any) -> AnswerResult:
        return AnswerResult(Status.NO_AUTHORIZED_SOURCE, "none", Route.NARRATIVE)

    monkeypatch.setattr(NarrativeRoute, "_narrative", no_source)
    result = ask(acme, COMPOSITE, "alice")
    assert (result.status, result.route) == (Status.ANSWERED, Route.COMPOSITE)
    assert "USD 486.9 m" in result.answer
    assert "“why did Japan grow?”" in result.answer
    assert "unanswered_part:narrative" in result.flags

    monkeypatch.undo()

    def no_fact(self: Orchestrator, request: Any, part: MetricQuery) -> ToolResult:
        return ToolResult("not_found", part)

    monkeypatch.setattr(FiguresRoute, "_tool", no_fact)
    missing_figure = ask(acme, COMPOSITE, "alice")
    assert missing_figure.status is Status.ANSWERED
    assert missing_figure.answer.startswith("No figure found for revenue of ACME Japan in FY2025.")
    assert "486.9" not in missing_figure.answer.partition("\n\n")[0]
    assert "unanswered_part:figure" in missing_figure.flags
    assert "unanswered_part:narrative" not in missing_figure.flags
