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
ratios and the p95 latency maximums. The file's shape is a set of dataclasses that
pydantic validates (:mod:`clearance.validation`): an unknown key anywhere is an error
naming it, so a misspelt expectation can never pass silently, and every such problem is
reported at once.
"""

from __future__ import annotations

import enum
import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationInfo,
)

from clearance.answer.result import Status
from clearance.errors import ConfigError, EvaluationError
from clearance.evaluation.scoring import Case, Figure, Outcome
from clearance.validation import Invalid, Wording, non_empty, validate

__all__ = [
    "RATE_LABELS",
    "THRESHOLDS",
    "Direction",
    "Stage",
    "Suite",
    "SuiteCase",
    "load_suite",
    "parse_suite",
]


class Direction(enum.Enum):
    AT_LEAST = ">="
    AT_MOST = "<="


#: The rates of a suite run (right / judged), each with the short label tables and charts
#: show it by.
RATE_LABELS = {
    "answer_usefulness": "usefulness",
    "numeric_accuracy": "numeric",
    "citation_validity": "citations",
    "refusal_correctness": "refusals",
    "clarification_correctness": "clarify",
    "expected_status": "status",
}

#: Measure → which way its threshold points: a rate is a minimum, the rest maximums.
THRESHOLDS: dict[str, Direction] = {
    **dict.fromkeys(RATE_LABELS, Direction.AT_LEAST),
    "denied_source_rate": Direction.AT_MOST,
    "leaks": Direction.AT_MOST,
    "stale_source_ratio": Direction.AT_MOST,
    "fabricated_numbers": Direction.AT_MOST,
    "latency_p95_ms": Direction.AT_MOST,
}

_STATUSES = {s.value for s in Status} - {Status.DEGRADED.value}
_FILE = ConfigDict(extra="forbid")
_WORDING = Wording(unknown="{table}: unknown key {name!r}")


def _optional_text(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid("expected a string")
    return value


def _strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise Invalid("expected a list of strings")
    return tuple(value)


def _date(value: object) -> date | None:
    if value is None or isinstance(value, date):
        return value.date() if isinstance(value, datetime) else value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise Invalid(f"expected a date YYYY-MM-DD, got {value!r}") from None


def _datetime(value: object) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise Invalid(f"expected a date and time (ISO 8601), got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _thresholds(value: object) -> dict[str, float]:
    if not isinstance(value, dict):
        raise Invalid("expected a table")
    out: dict[str, float] = {}
    for key, limit in value.items():
        if key not in THRESHOLDS:
            raise Invalid(f"unknown key {key!r} (known: {', '.join(sorted(THRESHOLDS))})")
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 0:
            raise Invalid(f"expected a number of at least 0, got {limit!r}", at=key)
        if THRESHOLDS[key] is Direction.AT_LEAST and limit > 1:
            raise Invalid(f"a rate is at most 1, got {limit!r}", at=key)
        out[key] = float(limit)
    return out


def _status(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("expected a non-empty string")
    status = value
    if status != "refused" and status not in _STATUSES:
        known = ", ".join(sorted(_STATUSES | {"refused"}))
        raise Invalid(f"unknown status {status!r} (known: {known})")
    return status


def _figure(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Invalid("write the figure as a quoted string, exactly as the answer writes it")
    return value


def _personas(value: object) -> dict[str, str]:
    if isinstance(value, list):
        value = dict.fromkeys(_strings(value), "")
    if not isinstance(value, dict) or not value:
        raise Invalid("expected the personas (directory users) the cases ask as")
    return {str(k): str(v or "") for k, v in value.items()}


def _some(message: str) -> AfterValidator:
    def check(items: tuple[Any, ...]) -> tuple[Any, ...]:
        if not items:
            raise Invalid(message)
        return items

    return AfterValidator(check)


def _distinct(stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    for i, stage in enumerate(stages):
        if any(s.name == stage.name for s in stages[:i]):
            raise Invalid(f"stage {stage.name!r} is listed twice", at=f"[{i}].name")
    return stages


Text = Annotated[str, non_empty()]
OptionalText = Annotated[str, PlainValidator(_optional_text)]
Strings = Annotated[tuple[str, ...], PlainValidator(_strings)]


@dataclass(frozen=True, slots=True)
class Stage:
    __pydantic_config__ = _FILE

    name: Text
    corpora: Strings = ()
    thresholds: Annotated[Mapping[str, float], PlainValidator(_thresholds)] = field(
        default_factory=dict
    )
    description: OptionalText = ""


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


# ---------------------------------------------------------------------- the file's shape


def _unit_needs_value(unit: str, info: ValidationInfo) -> str:
    if unit and info.data.get("value") is None:
        raise Invalid("write the figure as a quoted string, exactly as the answer writes it")
    return unit


@dataclass(frozen=True, slots=True)
class _Expect:
    __pydantic_config__ = _FILE

    status: Annotated[str, PlainValidator(_status)]
    cite: Strings = ()
    value: Annotated[str | None, PlainValidator(_figure)] = None
    unit: Annotated[OptionalText, AfterValidator(_unit_needs_value)] = ""
    not_cite: Strings = ()


@dataclass(frozen=True, slots=True)
class _Defaults:
    __pydantic_config__ = _FILE

    assistant: OptionalText = ""
    today: Annotated[date | None, PlainValidator(_date)] = None
    now: Annotated[datetime | None, PlainValidator(_datetime)] = None


@dataclass(frozen=True, slots=True)
class _Case:
    __pydantic_config__ = _FILE

    id: Text
    stage: Text
    user: Text
    question: Text
    expect: _Expect
    assistant: OptionalText = ""
    corpus: Text | None = None
    today: Annotated[date | None, PlainValidator(_date)] = None
    now: Annotated[datetime | None, PlainValidator(_datetime)] = None
    note: OptionalText = ""


@dataclass(frozen=True, slots=True)
class _SuiteFile:
    __pydantic_config__ = _FILE

    personas: Annotated[dict[str, str], PlainValidator(_personas), Field(validate_default=True)] = (
        field(default_factory=dict)
    )
    stages: Annotated[
        tuple[Stage, ...], _some("expected a list of rollout stages"), AfterValidator(_distinct)
    ] = ()
    cases: Annotated[tuple[_Case, ...], _some("expected a list of cases")] = ()
    name: Text | None = None
    description: OptionalText = ""
    defaults: _Defaults = field(default_factory=_Defaults)
    refresh: Strings = ()


def _with_defaults(data: object) -> object:
    """Each case with the suite's ``defaults`` under its own keys."""
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        return data
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        return data
    cases = [{**defaults, **c} if isinstance(c, dict) else c for c in data["cases"]]
    return {**data, "cases": cases}


_SCHEMA = Annotated[_SuiteFile, BeforeValidator(_with_defaults)]


# ---------------------------------------------------------------------- across cases


def _outcome(status: str) -> tuple[Outcome, Status | None]:
    if status == "refused":
        return Outcome.REFUSED, None
    exact = Status(status)
    if exact is Status.ANSWERED:
        return Outcome.ANSWERED, exact
    if exact is Status.CLARIFY:
        return Outcome.CLARIFIED, exact
    return Outcome.REFUSED, exact


def _case(raw: _Case, where: str, suite: _SuiteFile) -> SuiteCase:
    """A case checked against the rest of the suite; ``where`` names it in errors."""
    if raw.user not in suite.personas:
        raise EvaluationError(f"{where}.user: {raw.user!r} is not one of the suite's personas")
    stage = next((s for s in suite.stages if s.name == raw.stage), None)
    if stage is None:
        raise EvaluationError(f"{where}.stage: no stage {raw.stage!r}")
    corpus = raw.corpus
    if corpus is None and len(stage.corpora) == 1:
        corpus = stage.corpora[0]
    expect = raw.expect
    outcome, status = _outcome(expect.status)
    try:
        figure = None if expect.value is None else Figure(expect.value, expect.unit, expect.cite)
    except ValueError as exc:
        raise EvaluationError(f"{where}.expect.value: {exc}") from None
    try:
        case = Case(raw.id, raw.question, raw.user, outcome, raw.assistant or None, figure)
    except ValueError as exc:
        raise EvaluationError(f"{where}: {exc}") from None
    return SuiteCase(
        case=case,
        stage=stage.name,
        corpus=corpus,
        status=status,
        cite=expect.cite,
        not_cite=expect.not_cite,
        today=raw.today,
        now=raw.now,
    )


def _refresh(paths: Sequence[str], source: str, base: Path | None) -> tuple[Path, ...]:
    """``refresh``: manifests re-read before the run, each an existing file."""
    out = []
    for i, raw in enumerate(paths):
        path = Path(raw)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise EvaluationError(f"{source}: refresh[{i}]: no such manifest: {raw}")
        out.append(path)
    return tuple(out)


def parse_suite(data: Any, source: str, *, base: Path | None = None) -> Suite:
    """A suite from its parsed file (YAML or TOML give the same structure); ``base`` is
    the folder relative paths in it (``refresh``) are read from. Every problem of the
    file's shape is reported at once; then the cases are checked against the rest."""
    try:
        suite: _SuiteFile = validate(_SCHEMA, data, wording=_WORDING)
    except ConfigError as exc:
        found = [f"{source}: {p}" for p in exc.problems]
        raise EvaluationError(found[0], problems=found) from None
    cases = [
        _case(raw, f"{source}: cases[{i}] (id {raw.id})", suite)
        for i, raw in enumerate(suite.cases)
    ]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise EvaluationError(f"{source}: cases: case id {case.id!r} is used twice")
        seen.add(case.id)
    return Suite(
        name=suite.name or Path(source).stem,
        personas=suite.personas,
        stages=suite.stages,
        cases=tuple(cases),
        description=suite.description,
        source=source,
        refresh=_refresh(suite.refresh, source, base),
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
