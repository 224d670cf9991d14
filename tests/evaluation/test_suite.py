"""Suite files (YAML and TOML): what they mean, and the one-line error every mistake in
them gets — a misspelt expectation must never pass silently. Plus the baseline comparison
on report shapes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.result import Status
from clearance.errors import EvaluationError
from clearance.evaluation.rollout import compare, load_baseline
from clearance.evaluation.scoring import Outcome
from clearance.evaluation.suite import load_suite, parse_suite

YAML = """\
name: tiny
defaults: {today: 2026-10-15, assistant: general}
personas: {alice: employee, erin: disabled}
stages:
  - name: public
    corpora: [public]
    thresholds: {answer_usefulness: 1.0, leaks: 0}
  - name: internal
    corpora: [ops, dept]
cases:
  - id: revenue
    stage: public
    user: alice
    question: Revenue?
    expect: {status: answered, cite: [a:1], value: "1,571", unit: USD m}
  - id: disabled
    stage: internal
    user: erin
    assistant: ""
    now: 2030-01-01T00:00:00Z
    question: Anything?
    expect: {status: refused, not_cite: [a:2]}
"""

TOML = """\
name = "tiny"
personas = ["alice", "erin"]
defaults = {today = "2026-10-15", assistant = "general"}

[[stages]]
name = "public"
corpora = ["public"]
thresholds = {answer_usefulness = 1.0, leaks = 0}

[[stages]]
name = "internal"
corpora = ["ops", "dept"]

[[cases]]
id = "revenue"
stage = "public"
user = "alice"
question = "Revenue?"
expect = {status = "answered", cite = ["a:1"], value = "1,571", unit = "USD m"}

[[cases]]
id = "disabled"
stage = "internal"
user = "erin"
assistant = ""
now = 2030-01-01T00:00:00Z
question = "Anything?"
expect = {status = "refused", not_cite = ["a:2"]}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_and_toml_mean_the_same(tmp_path: Path) -> None:
    from_yaml = load_suite(write(tmp_path, "s.yaml", YAML))
    from_toml = load_suite(write(tmp_path, "s.toml", TOML))
    assert from_yaml.cases == from_toml.cases
    assert from_yaml.stages == from_toml.stages
    revenue, disabled = from_yaml.cases
    assert revenue.case.expected is Outcome.ANSWERED and revenue.status is Status.ANSWERED
    assert revenue.case.assistant == "general"  # from the defaults
    assert revenue.corpus == "public"  # the stage's only corpus
    assert revenue.case.figure is not None and revenue.case.figure.sources == ("a:1",)
    assert disabled.case.expected is Outcome.REFUSED and disabled.status is None
    assert disabled.case.assistant is None  # "" means no assistant
    assert disabled.corpus is None  # the stage has two corpora
    assert disabled.now is not None and disabled.now.year == 2030
    assert str(revenue.today) == "2026-10-15"


def _data() -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(YAML)
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("cases", 0, "expect", "cited"), ["a:1"], "unknown key 'cited'"),
        (("cases", 0, "expect", "status"), "answred", "unknown status 'answred'"),
        (("cases", 0, "user"), "mallory", "'mallory' is not one of the suite's personas"),
        (("cases", 0, "stage"), "customer", "no stage 'customer'"),
        (("cases", 0, "expect", "value"), 1571, "write the figure as a quoted string"),
        (("cases", 0, "expect", "value"), "about 1,571", "is not one number"),
        (("cases", 1, "id"), "revenue", "case id 'revenue' is used twice"),
        (("cases", 1, "today"), "tomorrow", "expected a date YYYY-MM-DD"),
        (("stages", 0, "thresholds", "leak"), 0, "unknown key 'leak'"),
        (("stages", 0, "thresholds", "answer_usefulness"), 1.5, "a rate is at most 1"),
        (("stages", 1, "name"), "public", "stage 'public' is listed twice"),
    ],
)
def test_every_mistake_is_one_error_naming_its_place(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    data = copy.deepcopy(_data())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(EvaluationError) as err:
        parse_suite(data, "suite.yaml")
    assert message in err.value.message
    assert err.value.message.startswith("suite.yaml: ")
    assert "\n" not in err.value.message


def test_a_figure_without_a_source_to_cite_is_refused() -> None:
    data = _data()
    del data["cases"][0]["expect"]["cite"]
    with pytest.raises(EvaluationError, match="names no source to be cited"):
        parse_suite(data, "suite.yaml")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError, match="cannot read the suite"):
        load_suite(tmp_path / "missing.yaml")
    with pytest.raises(EvaluationError, match="not valid YAML"):
        load_suite(write(tmp_path, "bad.yaml", "cases: [\n"))
    with pytest.raises(EvaluationError, match="not valid TOML"):
        load_suite(write(tmp_path, "bad.toml", "cases = [\n"))
    with pytest.raises(EvaluationError, match="not the JSON of a 'clearance eval SUITE"):
        load_baseline(write(tmp_path, "b.json", '{"results": []}'))


def _report(usefulness: float, leaks: int, passed: bool, problems: list[str]) -> dict[str, Any]:
    measures = {
        "answer_usefulness": {"rate": usefulness},
        "stale_source_ratio": {"rate": 0.0},
        "leaks": leaks,
        "fabricated_numbers": 0,
    }
    return {
        "overall": measures,
        "stages": [{"name": "public", "pass": passed, "measures": measures}],
        "results": [{"id": "c1", "problems": problems}],
    }


def test_compare_finds_each_kind_of_regression() -> None:
    good = _report(1.0, 0, True, [])
    assert compare(good, good) == []
    bad = _report(0.5, 2, False, ["expected answered, got not_found"])
    assert compare(bad, good) == [
        "overall: answer_usefulness fell from 1.000 to 0.500",
        "overall: leaks rose from 0 to 2",
        "stage public: the gate passed and now fails",
        "stage public: answer_usefulness fell from 1.000 to 0.500",
        "stage public: leaks rose from 0 to 2",
        "case c1: expected answered, got not_found",
    ]
    # getting better is never a regression
    assert compare(good, bad) == []


def test_the_cli_starts_without_the_evaluation_libraries() -> None:
    """matplotlib and ir-measures load when ``clearance eval`` runs, not with every command
    (``clearance serve`` workers start through the same module)."""
    import subprocess
    import sys

    code = (
        "import sys, clearance.cli.main; "
        "print(sorted(m for m in ('matplotlib', 'ir_measures', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
