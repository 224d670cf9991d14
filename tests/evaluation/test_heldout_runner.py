"""The held-out runner and its scorer work: three dev questions end to end, and the rules
that decide correct, wrong figure, fabricated and leak. The full run stays out of the suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout" / "run.py"


@pytest.fixture(scope="module")
def heldout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("heldout_run", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["heldout_run"] = module
    spec.loader.exec_module(module)
    return module


FIGURE = {"kind": "figure", "accept": ["87,464"], "wrong": ["106,265", "72,944"]}


def test_a_figure_for_another_period_is_a_wrong_figure(heldout: ModuleType) -> None:
    answered = heldout.Status.ANSWERED.value
    assert heldout.score_text(FIGURE, "was 87,464 In millions", True, answered) == "correct"
    assert heldout.score_text(FIGURE, "was 106,265 In millions", True, answered) == "wrong_figure"
    both = "87,464 and 106,265"
    assert heldout.score_text(FIGURE, both, True, answered) == "partial"
    assert heldout.score_text(FIGURE, both, True, answered, passage=True) == "correct"
    assert heldout.score_text(FIGURE, "", False, "not_found") == "wrongly_refused"


def test_a_partial_period_is_correct_only_when_labelled(heldout: ModuleType) -> None:
    expect = {"kind": "partial_period", "accept": ["738"], "labels": ["eight months"]}
    answered = heldout.Status.ANSWERED.value
    labelled = "$738 billion for the first eight months of fiscal year 2019"
    assert heldout.score_text(expect, labelled, True, answered) == "correct"
    assert heldout.score_text(expect, "FY2019: 738 USD bn", True, answered) == "wrong_figure"


def test_numbers_are_grounded_at_their_scale_and_years_are_not_checked(
    heldout: ModuleType,
) -> None:
    source = set(heldout.numbers("Intelligent Cloud Revenue | 87,464 | 162,150,695,000.00"))
    assert heldout.grounded(87.5, source)  # USD 87.5 bn
    assert heldout.grounded(162150695000, source)
    assert not heldout.grounded(91.2, source)
    assert heldout.is_trivial(2024.0)
    assert heldout.holds("营业收入 162,150,695,000.00 元", "162,150,695,000")
    assert heldout.holds("1兆1,599億円", "1兆1599億")


def test_three_dev_questions_run_end_to_end(heldout: ModuleType) -> None:
    wanted = {"narrative-01", "figure-01", "refusal-07"}
    items = [q for q in heldout.load_questions("dev") if q["id"] in wanted]
    assert len(items) == 3
    rows = heldout.run(items, progress=False)
    by_id = {r["id"]: r for r in rows}
    for row in rows:
        assert row["clearance"]["outcome"] in heldout.OUTCOMES
        assert row["clearance"]["leak"] == []
    assert by_id["refusal-07"]["clearance"]["status"] != "answered"
    table = heldout.summary(rows)
    assert table["all"]["n"] == 3
    assert "| category |" in heldout.render(table, "dev")


def test_naming_a_restricted_document_to_its_reader_is_no_leak(heldout: ModuleType) -> None:
    """The GitLab set's RESTRICTED note is titled "… Project Tamarind …", a restricted
    marker. Named to bianca, who may open it, the title is no leak; asked by ana, who may
    not, nothing of it appears. Reverse proof: the title read as the note's text is one."""
    gitlab = heldout.COLLECTIONS["gitlab"]
    wanted = {"narrative-08", "refusal-04"}
    items = [q for q in heldout.load_questions("all", gitlab) if q["id"] in wanted]
    assert {q["user"] for q in items} == {"bianca", "ana"}
    rows = {r["id"]: r["clearance"] for r in heldout.run(items, progress=False, collection=gitlab)}
    assert "Project Tamarind" in rows["narrative-08"]["answer"]
    assert rows["narrative-08"]["leak"] == [] and rows["refusal-04"]["leak"] == []
    assert "Tamarind" not in rows["refusal-04"]["answer"]
    assert [m for m in gitlab.restricted_markers if m in rows["narrative-08"]["answer"]]


def _one_edit(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter left out, added, replaced, or two swapped."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return (
        a[i + 1 :] == b[i + 1 :]  # replaced
        or a[i + 1 :] == b[i:]  # left out
        or a[i:] == b[i + 1 :]  # added
        or (a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :])  # swapped
    )


def test_a_misspelt_question_changes_one_word_by_one_slip_repeatably(heldout: ModuleType) -> None:
    items = heldout.load_questions("all")
    first, again = heldout.with_typos(items, 7), heldout.with_typos(items, 7)
    assert first == again and heldout.with_typos(items, 8) != first
    assert 0 < len(first) < len(items)  # questions without a five-letter word are left out
    for item in first:
        asked, written = item["asked_as"].split(" "), item["question"].split(" ")
        changed = [(a, w) for a, w in zip(asked, written, strict=True) if a != w]
        assert len(changed) == 1, item
        ((a, w),) = changed
        assert _one_edit(a, w), (a, w)
        assert w[0] == a[0]  # the first letter is kept
    assert heldout.misspelt("何ですか、それ?", __import__("random").Random(1)) is None
