"""Extractive answers on the demo corpus read as answers: each ``[S#]`` marker names the
citation listed at that number, a table is quoted as its matching rows one per line, and a
list is quoted whole."""

from __future__ import annotations

import re

import pytest

import clearance.answer.routes.composite as composite_route
from clearance.answer.narrative import CheckedAnswer
from clearance.answer.result import AnswerResult, Route, Status
from clearance.answer.structured import written_amount
from clearance.ingest.facts import format_number
from clearance.llm.base import ChatRequest
from clearance.llm.extractive import split_sentences
from clearance.llm.mock import MockProvider

from .conftest import AcmeIndex

_QUOTE = re.compile(r"(?:^|(?<=\] )|(?<=\n))(?P<text>[^\[\n]+?) (?P<marks>(?:\[S\d+\])+)")

QUESTIONS = [
    "What are the hotel limits per night?",
    "What class of travel can I book for flights?",
    "What hours is support available for Standard plan customers Monday to Friday?",
]


def marker_errors(index: AcmeIndex, result: AnswerResult) -> list[str]:
    """Quotes whose marker names no citation, or a citation whose place does not hold the
    quoted text (a figure sentence: whose cell holds no fact of the amount it ends with)."""
    errors = []
    for match in _QUOTE.finditer(result.answer):
        text = " ".join(match.group("text").split())
        for n in (int(m) for m in re.findall(r"S(\d+)", match.group("marks"))):
            if not 1 <= n <= len(result.citations):
                errors.append(f"[S{n}] with {len(result.citations)} citations")
                continue
            cited = result.citations[n - 1]
            places = [
                " ".join(c.text.split())
                for c in index.chunks(cited.doc_id)
                if c.locator == cited.locator
            ]
            figures = [
                written_amount(format_number(f.value), f.unit)
                for f in index.facts(cited.doc_id)
                if f.locator == cited.locator
            ]
            if not any(text in place for place in places) and not any(
                text.endswith(figure) for figure in figures
            ):
                errors.append(f"[S{n}] {text!r} is not in {cited.doc_id} {cited.locator}")
    return errors


def last_snippet_first(request: ChatRequest) -> str:
    """A model that cites the prompt's snippets in reverse: its first marker is the last
    snippet's label."""
    quotes = [
        f"{split_sentences(s.text)[-1]} [{s.ref}]" for s in reversed(request.snippets) if s.text
    ]
    return " ".join(quotes[:2])


def test_markers_name_the_citations_as_numbered(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = [acme.app.ask(q, "alice") for q in QUESTIONS]
    assert all(r.status is Status.ANSWERED for r in results), [r.to_dict() for r in results]
    assert all(len(r.citations) >= 2 for r in results)
    assert [marker_errors(acme, r) for r in results] == [[], [], []]
    reverse = acme.orchestrator(MockProvider(last_snippet_first))
    reversed_answer = reverse.ask(QUESTIONS[0], "alice")
    assert reversed_answer.status is Status.ANSWERED, reversed_answer.to_dict()
    assert reversed_answer.answer.count("[S1]") == 1
    assert marker_errors(acme, reversed_answer) == []
    # Reverse proof: markers left as the prompt's snippet labels point at wrong citations.
    render = CheckedAnswer.render
    monkeypatch.setattr(CheckedAnswer, "render", lambda self, labels=None: render(self))
    assert marker_errors(acme, reverse.ask(QUESTIONS[0], "alice")) != []


def test_a_table_is_quoted_as_its_matching_rows_one_per_line(acme: AcmeIndex) -> None:
    result = acme.app.ask("Which holidays does the Frankfurt office observe?", "alice")
    assert result.status is Status.ANSWERED, result.to_dict()
    lines = result.answer.split("\n")
    assert lines[0] == "date | country | office | holiday [S1]"
    assert len(lines) > 5
    assert all(" | DE | Frankfurt | " in line for line in lines[1:]), result.answer
    assert marker_errors(acme, result) == []


def test_a_list_is_quoted_whole_without_its_heading(acme: AcmeIndex) -> None:
    result = acme.app.ask("What class of travel can I book for flights?", "alice")
    items = [line for line in result.answer.split("\n") if line.startswith("- ")]
    assert len(items) == 4, result.answer  # every item of the "Class of travel" list
    assert "Class of travel [S" not in result.answer
    assert not result.answer.startswith("2.")


def test_a_composite_answers_markers_follow_the_figures_citations(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "How much was Japan revenue in FY2025, and why did Japan grow?"
    result = acme.app.ask(question, "alice")
    assert result.route is Route.COMPOSITE and "[S" in result.answer, result.to_dict()
    assert marker_errors(acme, result) == []
    # Reverse proof: the explanation's markers left counting from its own first citation.
    monkeypatch.setattr(composite_route, "_renumbered", lambda text, own, listed: text)
    assert marker_errors(acme, acme.app.ask(question, "alice")) != []
