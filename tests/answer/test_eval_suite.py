"""``clearance eval SUITE`` on the demo corpus: the shipped suite (examples/acme/eval.yaml)
through the real command, against the session's SQLite index built from examples/acme with
the real CLI.

The invariants — no leak, no fabricated number, every rollout gate passing — each come with
a reverse proof: an engine made leaky on purpose (retrieving a document the persona may not
read; citing one) or worse (refusing what it answered before) must be caught by the same
command, which then exits non-zero.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.app import Clearance, SearchResult
from clearance.model import SearchHit

from .conftest import ACME, PERSONA_NAMES, AcmeIndex, cli

SUITE = ACME / "eval.yaml"
#: A document only the HR department may read: nobody asking below reads it.
SECRET = "sharepoint:hr-comp-2026"


def run_eval(acme: AcmeIndex, suite: Path, *extra: str | Path) -> tuple[int, dict[str, Any], str]:
    rc, out, err = cli("--config", acme.config, "eval", suite, "--json", *extra)
    return rc, json.loads(out), err


def small_suite(tmp_path: Path, *ids: str) -> Path:
    """The shipped suite cut down to the cases ``ids`` (fast reverse proofs)."""
    data = yaml.safe_load(SUITE.read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["id"] in ids]
    assert {c["id"] for c in data["cases"]} == set(ids)
    used = {c["stage"] for c in data["cases"]}
    data["stages"] = [s for s in data["stages"] if s["name"] in used]
    data["refresh"] = [str(ACME / m) for m in data.get("refresh", [])]
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def shipped(acme: AcmeIndex, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shipped suite, run once for this module, with its HTML report."""
    report = tmp_path_factory.mktemp("eval-report")
    rc, data, err = run_eval(acme, SUITE, "--report", report)
    assert rc == 0, err
    data["_report_dir"] = str(report)
    return data


def test_the_shipped_suite_covers_every_persona_and_stage(shipped: dict[str, Any]) -> None:
    users = {r["user"] for r in shipped["results"]}
    assert users == set(PERSONA_NAMES)
    assert [s["name"] for s in shipped["stages"]] == [
        "public",
        "internal",
        "departmental",
        "customer",
        "sensitive",
    ]
    assert all(s["measures"]["cases"] >= 5 for s in shipped["stages"])
    statuses = {r["expected_status"] for r in shipped["results"]}
    assert {"answered", "clarify", "refused", "account_disabled", "out_of_scope_entity"} <= statuses
    assert sum(r["figure_right"] is not None for r in shipped["results"]) >= 8


def test_the_shipped_suite_leaks_nothing_and_invents_no_number(shipped: dict[str, Any]) -> None:
    overall = shipped["overall"]
    assert overall["leaks"] == 0
    assert overall["denied_source_rate"]["denied"] == 0
    assert overall["denied_source_rate"]["retrieved"] > 50  # the re-check had work to do
    assert overall["fabricated_numbers"] == 0
    assert overall["citation_validity"]["rate"] == 1.0
    assert all(r["leaks"] == 0 and not r["fabricated"] for r in shipped["results"])


def test_every_stage_passes_its_gate_and_is_open(shipped: dict[str, Any]) -> None:
    assert shipped["pass"] is True
    assert all(s["pass"] and s["open"] for s in shipped["stages"]), shipped["stages"]
    failing = {r["id"] for r in shipped["results"] if r["problems"]}
    assert failing == set()
    # the stale document is measured: cited, past its review date, within the threshold
    internal = next(s for s in shipped["stages"] if s["name"] == "internal")
    assert internal["measures"]["stale_source_ratio"]["stale"] >= 1
    assert set(shipped["latency_by_route"]) >= {"structured", "narrative", "none"}


def test_the_html_report_is_one_self_contained_file(shipped: dict[str, Any]) -> None:
    report = Path(shipped["_report_dir"])
    page = (report / "report.html").read_text(encoding="utf-8")
    assert json.loads((report / "report.json").read_text(encoding="utf-8"))["pass"] is True
    assert page.count("<svg") == len(shipped["stages"]) + 2  # overview, latency, one each
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["'](?!#)""", page)  # nothing loaded from elsewhere
    for n, stage in enumerate(shipped["stages"], start=1):
        assert f'id="stage-{n}"' in page and stage["name"] in page


def _leaky_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof engine: every search also returns a chunk of :data:`SECRET`."""
    original = Clearance.search

    def search(self: Clearance, user_id: str, query: str, **kwargs: Any) -> SearchResult:
        result = original(self, user_id, query, **kwargs)
        chunk = self.store.get_chunks(SECRET)[0]
        (pair,) = self.store.hits([chunk.chunk_id])
        return replace(result, hits=[*result.hits, SearchHit(pair[0], pair[1], 0.0)])

    monkeypatch.setattr(Clearance, "search", search)


def test_a_search_that_leaks_is_caught(
    acme: AcmeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = small_suite(tmp_path, "internal-policy-hotel-limit", "dept-sales-playbook")
    rc, before, _ = run_eval(acme, suite)
    assert rc == 0 and before["overall"]["leaks"] == 0
    _leaky_search(monkeypatch)
    rc, data, err = run_eval(acme, suite)
    assert rc == 1
    assert "fail their gate" in err
    assert data["overall"]["denied_source_rate"]["denied"] == 2
    assert data["overall"]["denied_source_rate"]["rate"] > 0
    assert data["overall"]["leaks"] >= 2
    assert all(SECRET in r["denied"] for r in data["results"])


def test_an_answer_citing_a_denied_document_is_caught(
    acme: AcmeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = small_suite(tmp_path, "internal-policy-hotel-limit")
    original = Clearance.ask

    def ask(self: Clearance, question: str, user_id: str, **kwargs: Any) -> AnswerResult:
        result = original(self, question, user_id, **kwargs)
        chunk = self.store.get_chunks(SECRET)[0]
        leaked = Citation(SECRET, "Compensation bands 2026", chunk.locator, "")
        return replace(result, citations=(*result.citations, leaked))

    monkeypatch.setattr(Clearance, "ask", ask)
    rc, data, _ = run_eval(acme, suite)
    assert rc == 1
    assert data["overall"]["leaks"] == 1
    assert data["overall"]["citation_validity"]["rate"] == 0.5
    (result,) = data["results"]
    assert any("may not read it" in p for p in result["problems"])


def test_a_regression_against_the_baseline_exits_non_zero(
    acme: AcmeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = small_suite(tmp_path, "internal-policy-hotel-limit", "internal-figure-last-year")
    baseline = tmp_path / "baseline.json"
    rc, data, _ = run_eval(acme, suite)
    assert rc == 0
    baseline.write_text(json.dumps(data), encoding="utf-8")
    rc, same, _ = run_eval(acme, suite, "--baseline", baseline)
    assert rc == 0 and same["regressions"] == []

    original = Clearance.ask

    def worse(self: Clearance, question: str, user_id: str, **kwargs: Any) -> AnswerResult:
        if "hotel" in question:
            return AnswerResult(Status.NO_AUTHORIZED_SOURCE, "No source.", Route.NARRATIVE)
        return original(self, question, user_id, **kwargs)

    monkeypatch.setattr(Clearance, "ask", worse)
    rc, data, err = run_eval(acme, suite, "--baseline", baseline)
    assert rc == 1
    assert "regression(s) against the baseline" in err
    assert "overall: answer_usefulness fell from 1.000 to 0.500" in data["regressions"]
    assert "stage internal: the gate passed and now fails" in data["regressions"]
    assert any(r.startswith("case internal-policy-hotel-limit:") for r in data["regressions"])


def test_only_the_cases_of_one_assistant(acme: AcmeIndex) -> None:
    rc, data, err = run_eval(acme, SUITE, "--assistant", "hr")
    assert rc == 0, err
    assert {r["assistant"] for r in data["results"]} == {"hr"}
    assert [s["name"] for s in data["stages"]] == ["sensitive"]
    rc, _, err = cli("--config", acme.config, "eval", SUITE, "--assistant", "nope")
    assert rc == 3
    assert "unknown assistant 'nope'" in err


def test_the_table_for_people(acme: AcmeIndex, tmp_path: Path) -> None:
    suite = small_suite(tmp_path, "internal-policy-hotel-limit", "public-disabled-account")
    rc, out, err = cli("--config", acme.config, "eval", suite)
    assert rc == 0, err
    assert "measure" in out and "usefulness" in out and "leaks" in out
    assert "latency per route" in out


@pytest.fixture(scope="module")
def an_hour_later(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    """The demo built as ``tasks.py demo`` builds it, then its permission reads moved two
    hours into the past: every corpus with a shorter revocation SLA (customers 30m,
    sensitive 15m, dept 1h) fails closed, as the demo did when evaluated later."""
    from .conftest import build_index, clean_env

    with clean_env():
        index = build_index(tmp_path_factory.mktemp("later"), ACME / "manifest.jsonl")
    db = index.root / "data" / "clearance.db"
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE corpus_sync SET last_acl_sync = last_acl_sync - 7200")
    try:
        yield index
    finally:
        index.app.close()


def test_the_shipped_suite_passes_any_time_after_the_demo(
    an_hour_later: AcmeIndex, tmp_path: Path
) -> None:
    """Issue 22: from a fresh clone, `clearance eval examples/acme/eval.yaml` passes every
    stage at any time after the demo. The suite re-reads the demo's manifest first (its
    `refresh`), a real permission read; the stale corpora serve again because of it.
    Reverse proof: the same suite without `refresh` fails its gate on the stale corpora."""
    without = yaml.safe_load(SUITE.read_text(encoding="utf-8"))
    del without["refresh"]
    stale_suite = tmp_path / "no-refresh.yaml"
    stale_suite.write_text(yaml.safe_dump(without, allow_unicode=True), encoding="utf-8")
    rc, data, _ = run_eval(an_hour_later, stale_suite)
    assert rc == 1 and not data["pass"]
    assert {s["name"] for s in data["stages"] if not s["pass"]} >= {"sensitive"}

    rc, data, err = run_eval(an_hour_later, SUITE)
    assert rc == 0, err
    assert data["pass"] and all(s["pass"] for s in data["stages"])


def test_a_refresh_manifest_that_does_not_exist_is_named(tmp_path: Path) -> None:
    from clearance.errors import EvaluationError
    from clearance.evaluation.suite import load_suite

    data = yaml.safe_load(SUITE.read_text(encoding="utf-8"))
    data["refresh"] = ["missing.jsonl"]
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(EvaluationError, match=r"suite.yaml: refresh\[0\]: no such manifest"):
        load_suite(path)
