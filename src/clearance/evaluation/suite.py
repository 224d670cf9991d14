"""Evaluation suites: personas, questions, what must come of them, and the rollout stages
whose thresholds gate a deployment. Written in YAML (``.yaml``/``.yml``) or TOML (``.toml``),
with the same structure::

    name: ACME demo corpus
    defaults: {today: "2026-10-15", assistant: general}   # optional, per-case keys
    personas: {alice: "broad employee", erin: "disabled account"}
    stages:                         # in rollout order; each gated on the ones before it
      - name: public
        corpora: [public]
        thresholds: {answer_usefulness: 1.0, denied_source_rate: 0, latency_p95_ms: 5000}
    cases:
      - id: revenue-fy2025
        stage: public
        user: alice                 # one of the personas
        question: What was group revenue in FY2025?
        assistant: public           # optional; "" for no assistant
        corpus: public              # optional; default: the stage's corpus if it has one
        today: "2026-10-15"         # optional: the request date relative periods read against
        now: "2030-01-01T00:00:00Z" # optional: the engine's clock for this case
        expect:
          status: answered          # a status (answered, clarify, not_found, …) or "refused"
          cite: [sharepoint:pub-0101]   # answered: one of these must be cited
          value: "1,571.0"          # a figure: exactly as written, with its unit,
          unit: USD m               #   held by a citation of one of ``cite``
          not_cite: [sharepoint:board-2025-03-minutes]  # never cited, title never written

Threshold names (:data:`THRESHOLDS`) say which way they point: rates are minimums, counts,
ratios and the p95 latency maximums. An unknown key anywhere is an error naming it, so a
misspelt expectation can never pass silently.
"""

from __future__ import annotations

import enum
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from clearance.answer.result import Status
from clearance.errors import EvaluationError
from clearance.evaluation.scoring import Case, Figure, Outcome

__all__ = [
    "ROLLOUT",
    "THRESHOLDS",
    "Direction",
    "Stage",
    "Suite",
    "SuiteCase",
    "load_suite",
    "parse_suite",
]

#: The rollout order stages are usually named after; a suite may use any names.
ROLLOUT = ("public", "internal", "departmental", "customer", "sensitive")


class Direction(enum.Enum):
    AT_LEAST = ">="
    AT_MOST = "<="


#: Measure → which way its threshold points.
THRESHOLDS: dict[str, Direction] = {
    "answer_usefulness": Direction.AT_LEAST,
    "numeric_accuracy": Direction.AT_LEAST,
    "citation_validity": Direction.AT_LEAST,
    "refusal_correctness": Direction.AT_LEAST,
    "clarification_correctness": Direction.AT_LEAST,
    "expected_status": Direction.AT_LEAST,
    "denied_source_rate": Direction.AT_MOST,
    "leaks": Direction.AT_MOST,
    "stale_source_ratio": Direction.AT_MOST,
    "fabricated_numbers": Direction.AT_MOST,
    "latency_p95_ms": Direction.AT_MOST,
}

_TOP = {"name", "description", "defaults", "personas", "stages", "cases", "refresh"}
_STAGE = {"name", "description", "corpora", "thresholds"}
_CASE = {"id", "stage", "user", "question", "assistant", "corpus", "today", "now", "expect", "note"}
_DEFAULTS = {"assistant", "today", "now"}
_EXPECT = {"status", "cite", "value", "unit", "not_cite"}
_STATUSES = {s.value for s in Status} - {Status.DEGRADED.value}


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    corpora: tuple[str, ...]
    thresholds: Mapping[str, float]
    description: str = ""


@dataclass(frozen=True, slots=True)
class SuiteCase:
    """One question of a suite: the scoring :class:`Case` plus what only a suite says."""

    case: Case
    stage: str
    corpus: str | None
    status: Status | None  # an exact status, or None when any refusal will do
    cite: tuple[str, ...]
    not_cite: tuple[str, ...]
    today: date | None = None
    now: datetime | None = None

    @property
    def id(self) -> str:
        return self.case.id


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    personas: Mapping[str, str]
    stages: tuple[Stage, ...]
    cases: tuple[SuiteCase, ...]
    description: str = ""
    source: str = ""
    # Manifests re-read before the cases run, as the operator's scheduled sync would: the
    # documents' access (and any changed content) read now, so a corpus with a short
    # revocation SLA serves again. Paths relative to the suite file.
    refresh: tuple[Path, ...] = ()

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


class _Where:
    """A place in the suite, for error messages: ``suite.yaml: cases[3] (id x): key 'y'``."""

    def __init__(self, source: str, path: str = "") -> None:
        self.source, self.path = source, path

    def __truediv__(self, part: str) -> _Where:
        return _Where(self.source, f"{self.path}.{part}" if self.path else part)

    def error(self, message: str) -> EvaluationError:
        where = f"{self.source}: {self.path}" if self.path else self.source
        return EvaluationError(f"{where}: {message}")


def _table(value: Any, where: _Where, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error("expected a table")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise where.error(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(keys))})")
    return value


def _text(value: Any, where: _Where, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise where.error("expected a non-empty string")
    return value


def _strings(value: Any, where: _Where) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise where.error("expected a list of strings")
    return tuple(value)


def _date(value: Any, where: _Where) -> date | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise where.error(f"expected a date YYYY-MM-DD, got {value!r}") from None


def _datetime(value: Any, where: _Where) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise where.error(f"expected a date and time (ISO 8601), got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _thresholds(value: Any, where: _Where) -> dict[str, float]:
    table = _table(value or {}, where, set(THRESHOLDS))
    out: dict[str, float] = {}
    for key, limit in table.items():
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 0:
            raise (where / key).error(f"expected a number of at least 0, got {limit!r}")
        if THRESHOLDS[key] is Direction.AT_LEAST and limit > 1:
            raise (where / key).error(f"a rate is at most 1, got {limit!r}")
        out[key] = float(limit)
    return out


def _stages(value: Any, where: _Where) -> tuple[Stage, ...]:
    if not isinstance(value, list) or not value:
        raise where.error("expected a list of rollout stages")
    stages: list[Stage] = []
    for i, raw in enumerate(value):
        at = where / f"[{i}]"
        table = _table(raw, at, _STAGE)
        name = _text(table.get("name"), at / "name")
        if any(s.name == name for s in stages):
            raise (at / "name").error(f"stage {name!r} is listed twice")
        stages.append(
            Stage(
                name=name,
                corpora=_strings(table.get("corpora"), at / "corpora"),
                thresholds=_thresholds(table.get("thresholds"), at / "thresholds"),
                description=_text(table.get("description"), at / "description", required=False),
            )
        )
    return tuple(stages)


def _expected(status: str, where: _Where) -> tuple[Outcome, Status | None]:
    if status == "refused":
        return Outcome.REFUSED, None
    if status not in _STATUSES:
        known = ", ".join(sorted(_STATUSES | {"refused"}))
        raise where.error(f"unknown status {status!r} (known: {known})")
    exact = Status(status)
    if exact is Status.ANSWERED:
        return Outcome.ANSWERED, exact
    if exact is Status.CLARIFY:
        return Outcome.CLARIFIED, exact
    return Outcome.REFUSED, exact


def _case(
    raw: Any,
    where: _Where,
    defaults: Mapping[str, Any],
    personas: Mapping[str, str],
    stages: Sequence[Stage],
) -> SuiteCase:
    table = {**defaults, **_table(raw, where, _CASE)}
    case_id = _text(table.get("id"), where / "id")
    where = _Where(where.source, f"{where.path} (id {case_id})")
    user = _text(table.get("user"), where / "user")
    if user not in personas:
        raise (where / "user").error(f"{user!r} is not one of the suite's personas")
    stage = _text(table.get("stage"), where / "stage")
    match = [s for s in stages if s.name == stage]
    if not match:
        raise (where / "stage").error(f"no stage {stage!r}")
    corpus = table.get("corpus")
    if corpus is None and len(match[0].corpora) == 1:
        corpus = match[0].corpora[0]
    corpus = _text(corpus, where / "corpus") if corpus is not None else None
    assistant = _text(table.get("assistant"), where / "assistant", required=False) or None
    expect = _table(table.get("expect"), where / "expect", _EXPECT)
    outcome, status = _expected(_text(expect.get("status"), where / "expect.status"), where)
    cite = _strings(expect.get("cite"), where / "expect.cite")
    figure = None
    if "value" in expect or "unit" in expect:
        value = expect.get("value")
        if not isinstance(value, str):
            raise (where / "expect.value").error(
                "write the figure as a quoted string, exactly as the answer writes it"
            )
        unit = _text(expect.get("unit", ""), where / "expect.unit", required=False)
        try:
            figure = Figure(value, unit, cite)
        except ValueError as exc:
            raise (where / "expect.value").error(str(exc)) from None
    try:
        case = Case(
            case_id,
            _text(table.get("question"), where / "question"),
            user,
            outcome,
            assistant,
            figure,
        )
    except ValueError as exc:
        raise where.error(str(exc)) from None
    return SuiteCase(
        case=case,
        stage=stage,
        corpus=corpus,
        status=status,
        cite=cite,
        not_cite=_strings(expect.get("not_cite"), where / "expect.not_cite"),
        today=_date(table.get("today"), where / "today"),
        now=_datetime(table.get("now"), where / "now"),
    )


def _refresh(value: Any, where: _Where, base: Path | None) -> tuple[Path, ...]:
    """``refresh``: manifests re-read before the run, each an existing file."""
    if value is None:
        return ()
    paths = []
    for i, raw in enumerate(_strings(value, where)):
        path = Path(raw)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise _Where(where.source, f"{where.path}[{i}]").error(f"no such manifest: {raw}")
        paths.append(path)
    return tuple(paths)


def parse_suite(data: Any, source: str, *, base: Path | None = None) -> Suite:
    """A suite from its parsed file (YAML or TOML give the same structure); ``base`` is
    the folder relative paths in it (``refresh``) are read from."""
    top = _Where(source)
    table = _table(data, top, _TOP)
    defaults = _table(table.get("defaults") or {}, top / "defaults", _DEFAULTS)
    personas_raw = table.get("personas")
    if isinstance(personas_raw, list):
        personas_raw = dict.fromkeys(_strings(personas_raw, top / "personas"), "")
    if not isinstance(personas_raw, dict) or not personas_raw:
        raise (top / "personas").error("expected the personas (directory users) the cases ask as")
    personas = {str(k): str(v or "") for k, v in personas_raw.items()}
    stages = _stages(table.get("stages"), top / "stages")
    cases_raw = table.get("cases")
    if not isinstance(cases_raw, list) or not cases_raw:
        raise (top / "cases").error("expected a list of cases")
    cases = [
        _case(raw, top / f"cases[{i}]", defaults, personas, stages)
        for i, raw in enumerate(cases_raw)
    ]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise (top / "cases").error(f"case id {case.id!r} is used twice")
        seen.add(case.id)
    return Suite(
        name=_text(table.get("name", Path(source).stem), top / "name"),
        personas=personas,
        stages=stages,
        cases=tuple(cases),
        description=_text(table.get("description"), top / "description", required=False),
        source=source,
        refresh=_refresh(table.get("refresh"), top / "refresh", base),
    )


def load_suite(path: Path) -> Suite:
    """Read a suite file: ``.toml`` as TOML, ``.yaml``/``.yml``/``.json`` as YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"{path}: cannot read the suite: {exc}") from None
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except tomllib.TOMLDecodeError as exc:
        raise EvaluationError(f"{path}: not valid TOML: {exc}") from None
    except yaml.YAMLError as exc:
        message = " ".join(str(exc).split())
        raise EvaluationError(f"{path}: not valid YAML: {message}") from None
    # YAML reads unquoted dates as dates; JSON round-trips keep every key a string
    data = json.loads(json.dumps(data, default=str)) if data is not None else data
    return parse_suite(data, path.name, base=path.parent)
