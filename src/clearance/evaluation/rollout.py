"""A suite run summed up: measures per rollout stage, assistant and corpus, the gate of
each stage, latency per route, and regressions against an earlier run.

=========================  ============================================================
measure                    what
=========================  ============================================================
answer_usefulness          answered cases expecting a source that cite one of them
numeric_accuracy           :mod:`~clearance.evaluation.scoring`
citation_validity          :mod:`~clearance.evaluation.citations`
refusal_correctness        both directions (scoring)
clarification_correctness  both directions (scoring)
expected_status            the exact status expected (any refusal for ``refused``)
denied_source_rate         retrieved documents the persona may not retrieve / retrieved
leaks                      denied retrievals + unreadable citations + forbidden sources
stale_source_ratio         cited documents past their review date / cited documents
fabricated_numbers         :mod:`~clearance.evaluation.fabrication`
latency_p95_ms             95th percentile of the time ``ask`` took
=========================  ============================================================

A stage **passes** when it has cases and every threshold it sets holds (a measure with
nothing to judge — no figure asked, say — holds); a stage without cases measured nothing and
fails (with ``--assistant``, stages none of whose cases use that assistant are left out of
the report instead). A stage is **open** for rollout when it and every stage before it
pass: each stage is gated on the figures of the ones before.

A **regression** against a baseline (the JSON of an earlier run) is any rate lower, any
count or ratio higher, a stage that passed and no longer does, or a case that had no
problem and now has one. Latency is shown beside the baseline's but never a regression:
on a shared machine it is noise, and a gate holds it to its threshold instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from clearance.errors import EvaluationError
from clearance.evaluation.runner import CaseRun
from clearance.evaluation.scoring import Rate, rate_of, summarise
from clearance.evaluation.suite import RATE_LABELS, THRESHOLDS, Direction, Stage, Suite

__all__ = ["Measures", "StageGate", "SuiteReport", "compare", "load_baseline", "measures_of"]

#: Report format version, so a baseline of another shape is refused rather than misread.
FORMAT = 1
_COUNTS = ("leaks", "fabricated_numbers")
_RATIOS = ("denied_source_rate", "stale_source_ratio")
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Measures:
    cases: int
    rates: Mapping[str, Rate]
    denied: int
    retrieved: int
    stale: int
    cited: int
    leaks: int
    fabricated_numbers: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    def value(self, name: str) -> float | None:
        """The figure a threshold of ``name`` is held against; ``None``: nothing to judge."""
        if name in self.rates:
            return self.rates[name].value
        if name == "denied_source_rate":
            return self.denied / self.retrieved if self.retrieved else None
        if name == "stale_source_ratio":
            return self.stale / self.cited if self.cited else None
        if name == "leaks":
            return float(self.leaks)
        if name == "fabricated_numbers":
            return float(self.fabricated_numbers)
        if name == "latency_p95_ms":
            return self.latency_p95_ms
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            **{name: rate.to_dict() for name, rate in self.rates.items()},
            "denied_source_rate": {
                "denied": self.denied,
                "retrieved": self.retrieved,
                "rate": self.value("denied_source_rate"),
            },
            "stale_source_ratio": {
                "stale": self.stale,
                "cited": self.cited,
                "rate": self.value("stale_source_ratio"),
            },
            "leaks": self.leaks,
            "fabricated_numbers": self.fabricated_numbers,
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
        }


def _percentiles(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    p50, p95 = np.percentile(np.asarray(values, dtype=float), [50, 95])
    return round(float(p50), 3), round(float(p95), 3)


def measures_of(runs: Sequence[CaseRun]) -> Measures:
    summary = summarise([r.score for r in runs])
    rates = {
        "answer_usefulness": rate_of([r.useful for r in runs]),
        "numeric_accuracy": summary.numeric_accuracy,
        "citation_validity": summary.citation_validity,
        "refusal_correctness": summary.refusal_correctness,
        "clarification_correctness": summary.clarification_correctness,
        "expected_status": rate_of([r.status_right for r in runs]),
    }
    p50, p95 = _percentiles([r.latency_ms for r in runs])
    return Measures(
        cases=len(runs),
        rates=rates,
        denied=sum(len(r.denied) for r in runs),
        retrieved=sum(len(r.retrieved) for r in runs),
        stale=sum(len(r.stale) for r in runs),
        cited=sum(len({c.doc_id for c in r.result.citations}) for r in runs),
        leaks=sum(r.leaks for r in runs),
        fabricated_numbers=summary.fabricated_numbers,
        latency_p50_ms=p50,
        latency_p95_ms=p95,
    )


@dataclass(frozen=True, slots=True)
class Check:
    measure: str
    direction: Direction
    threshold: float
    value: float | None

    @property
    def passed(self) -> bool:
        if self.value is None:
            return True
        if self.direction is Direction.AT_LEAST:
            return self.value >= self.threshold - _EPSILON
        return self.value <= self.threshold + _EPSILON

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "op": self.direction.value,
            "threshold": self.threshold,
            "value": self.value,
            "pass": self.passed,
        }


@dataclass(frozen=True, slots=True)
class StageGate:
    stage: Stage
    measures: Measures
    checks: tuple[Check, ...]
    open: bool  # this stage and every one before it pass

    @property
    def passed(self) -> bool:
        return self.measures.cases > 0 and all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.stage.name,
            "description": self.stage.description,
            "corpora": list(self.stage.corpora),
            "measures": self.measures.to_dict(),
            "checks": [c.to_dict() for c in self.checks],
            "pass": self.passed,
            "open": self.open,
        }


def _group(runs: Sequence[CaseRun], key: Callable[[CaseRun], str | None]) -> dict[str, Measures]:
    groups: dict[str, list[CaseRun]] = {}
    for run in runs:
        name = key(run)
        groups.setdefault(name if name is not None else "(none)", []).append(run)
    return {name: measures_of(group) for name, group in sorted(groups.items())}


@dataclass(frozen=True, slots=True)
class SuiteReport:
    suite: Suite
    runs: tuple[CaseRun, ...]
    assistant: str | None = None
    generated_at: str = ""

    @classmethod
    def of(cls, suite: Suite, runs: Sequence[CaseRun], assistant: str | None) -> SuiteReport:
        now = datetime.now(UTC).replace(microsecond=0).isoformat()
        return cls(suite, tuple(runs), assistant, now)

    def overall(self) -> Measures:
        return measures_of(self.runs)

    def gates(self) -> list[StageGate]:
        out: list[StageGate] = []
        still_open = True
        for stage in self.suite.stages:
            runs = [r for r in self.runs if r.case.stage == stage.name]
            if not runs and self.assistant is not None:
                continue
            measures = measures_of(runs)
            checks = tuple(
                Check(name, THRESHOLDS[name], limit, measures.value(name))
                for name, limit in stage.thresholds.items()
            )
            gate = StageGate(stage, measures, checks, open=False)
            still_open = still_open and gate.passed
            out.append(StageGate(stage, measures, checks, open=still_open))
        return out

    def latency_by_route(self) -> dict[str, dict[str, Any]]:
        routes: dict[str, list[float]] = {}
        for run in self.runs:
            routes.setdefault(run.result.route.value, []).append(run.latency_ms)
        out: dict[str, dict[str, Any]] = {}
        for route, values in sorted(routes.items()):
            p50, p95 = _percentiles(values)
            out[route] = {"count": len(values), "p50_ms": p50, "p95_ms": p95}
        return out

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates())

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "suite": self.suite.name,
            "source": self.suite.source,
            "assistant": self.assistant,
            "generated_at": self.generated_at,
            "pass": self.passed,
            "overall": self.overall().to_dict(),
            "stages": [g.to_dict() for g in self.gates()],
            "by_assistant": {
                k: m.to_dict()
                for k, m in _group(self.runs, lambda r: r.case.case.assistant).items()
            },
            "by_corpus": {
                k: m.to_dict() for k, m in _group(self.runs, lambda r: r.case.corpus).items()
            },
            "latency_by_route": self.latency_by_route(),
            "results": [r.to_dict() for r in self.runs],
        }


def load_baseline(path: Path) -> dict[str, Any]:
    """The JSON of an earlier ``clearance eval SUITE --json`` run."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"{path}: cannot read the baseline: {exc}") from None
    except json.JSONDecodeError as exc:
        raise EvaluationError(f"{path}: the baseline is not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or "stages" not in data:
        raise EvaluationError(
            f"{path}: not the JSON of a 'clearance eval SUITE --json' run (format {FORMAT})"
        )
    return data


def _measure_regressions(where: str, now: Mapping[str, Any], then: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name in RATE_LABELS:
        new, old = (now.get(name) or {}).get("rate"), (then.get(name) or {}).get("rate")
        if new is not None and old is not None and new < old - _EPSILON:
            out.append(f"{where}: {name} fell from {old:.3f} to {new:.3f}")
    for name in _RATIOS:
        new, old = (now.get(name) or {}).get("rate"), (then.get(name) or {}).get("rate")
        if new is not None and old is not None and new > old + _EPSILON:
            out.append(f"{where}: {name} rose from {old:.3f} to {new:.3f}")
    for name in _COUNTS:
        new, old = now.get(name), then.get(name)
        if isinstance(new, int) and isinstance(old, int) and new > old:
            out.append(f"{where}: {name} rose from {old} to {new}")
    return out


def compare(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Every regression of ``current`` against ``baseline`` (module docstring), in words."""
    out = _measure_regressions("overall", current["overall"], baseline.get("overall", {}))
    old_stages = {s["name"]: s for s in baseline.get("stages", [])}
    for stage in current["stages"]:
        old = old_stages.get(stage["name"])
        if old is None:
            continue
        where = f"stage {stage['name']}"
        if old.get("pass") and not stage["pass"]:
            out.append(f"{where}: the gate passed and now fails")
        out += _measure_regressions(where, stage["measures"], old.get("measures", {}))
    old_cases = {r["id"]: r for r in baseline.get("results", [])}
    for result in current["results"]:
        old = old_cases.get(result["id"])
        if old is not None and not old.get("problems") and result["problems"]:
            out.append(f"case {result['id']}: " + "; ".join(result["problems"]))
    return out
