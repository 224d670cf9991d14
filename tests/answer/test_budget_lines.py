"""Figure questions over a budget table by line, as a statistics office publishes it
(``component,category,subcategory,fiscal_year,actual_value``, naming no one), with no
``[facts]`` vocabulary. Each case is one the held-out GitLab set's figure probes found:

* "What were excise tax revenues in fiscal year 2000?" was not found beside the line
  ``Excise Taxes``: a line was read only by its name as the table writes it, where a metric
  is read in either number ("outlays" of ``outlay``);
* "What were outlays for Fannie Mae and Freddie Mac in fiscal year 2010?" was answered
  with the year's total outlays: a name the question gives the figure that no readable
  fact carries was ignored, since the table names no one and no slot was missing. A wrong
  figure.

Reverse proofs put each old reading back and require the same test to fail.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import clearance.answer.routes.figures as figures_module
import clearance.answer.structured as structured_module
from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.llm.extractive import ExtractiveProvider
from clearance.store.sqlite import SQLiteStore

ACTUALS = [
    ["component", "category", "subcategory", "fiscal_year", "actual_value"],
    ["outlay", "Total", "Total", "2010", "3456.213"],
    ["outlay", "Mandatory", "Medicaid", "2010", "272.771"],
    ["outlay", "Net Interest", "Net Interest", "2010", "196.194"],
    ["revenue", "Total", "Total", "2000", "2025.191"],
    ["revenue", "Excise Taxes", "Excise Taxes", "2000", "68.865"],
    ["revenue", "Estate and Gift Taxes", "Estate and Gift Taxes", "2000", "29.01"],
]


@pytest.fixture
def fresh(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Callable[[], Clearance]:
    """Builds the index when called: a reverse proof patches what the question is read
    with first."""

    def build() -> Clearance:
        data = tmp_path / "corpus" / "finance"
        data.mkdir(parents=True, exist_ok=True)
        (data / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
        with (data / "actuals.csv").open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(ACTUALS)
        engine = Clearance(settings_factory({}), store, provider=ExtractiveProvider())
        assert engine.ingest([data]).failed == []
        engine.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
        return engine

    return build


def test_a_line_is_read_in_either_number(fresh: Callable[[], Clearance]) -> None:
    app = fresh()
    for question, figure in (
        ("What were excise tax revenues in fiscal year 2000?", "68.865"),
        ("What were estate and gift tax receipts in fiscal year 2000?", "29.01"),
        ("What were Medicaid outlays in fiscal year 2010?", "272.771"),
    ):
        result = app.ask(question, "ana")
        assert result.status is Status.ANSWERED, (question, result.answer)
        assert figure in result.answer, (question, result.answer)


def test_reverse_proof_a_line_read_only_as_written(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = structured_module._number_forms
    monkeypatch.setattr(
        structured_module,
        "_number_forms",
        lambda name: () if name[:1].isupper() else real(name),  # lines are Title Case
    )
    result = fresh().ask("What were excise tax revenues in fiscal year 2000?", "ana")
    assert "68.865" not in result.answer


def test_a_name_no_fact_carries_is_never_answered_with_the_total(
    fresh: Callable[[], Clearance],
) -> None:
    app = fresh()
    result = app.ask("What were outlays for Fannie Mae and Freddie Mac in fiscal year 2010?", "ana")
    assert result.status is Status.NOT_FOUND, result.answer
    assert "3,456.213" not in result.answer and "3456.213" not in result.answer
    assert "Fannie Mae" in result.answer, result.answer
    total = app.ask("What were total outlays in fiscal year 2010?", "ana")
    assert total.status is Status.ANSWERED and "3,456.213" in total.answer, total.answer


def test_reverse_proof_the_name_ignored_gives_the_total(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures_module, "_unnamed", lambda intent, parts: False)
    result = fresh().ask(
        "What were outlays for Fannie Mae and Freddie Mac in fiscal year 2010?", "ana"
    )
    assert "3,456.213" in result.answer, result.answer
