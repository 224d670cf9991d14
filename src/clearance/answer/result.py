"""The answer contract: a stable JSON shape every channel (CLI, API, HTTP) returns.

``{"status", "answer", "citations": [{"doc_id", "title", "locator", "uri", "trust"}],
"route", "trace_id", "flags", "assumptions", "missing", "options", "resolved_periods":
[{"text", "period"}], "corrections": [{"written", "read_as"}]}``. ``status`` and ``route`` values are a public contract; fields are
only ever added, and the lists are always present (empty when they do not apply).

* ``assumptions`` — what a structured answer assumed because the question did not say it
  (``[facts] default_entity`` / ``default_period``), each also stated in ``answer``;
* ``missing`` — for ``clarify``: the slots the question lacks (``metric``, ``entity``,
  ``period``), in that order;
* ``options`` — for ``clarify``: at most five values to choose from, only ever taken from
  facts the caller may read (or, for an ambiguous period, the readings themselves);
* ``resolved_periods`` — each relative period of the question ("last year") with the
  absolute period it was read as (``FY2025``), also stated in ``answer``;
* ``corrections`` — each misspelt word of the question (casefolded) with the word of the
  caller's readable documents it was read as (:mod:`clearance.retrieval.spelling`), also
  stated in ``answer``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from clearance.retrieval.spelling import Correction

__all__ = ["AnswerResult", "Citation", "Correction", "ResolvedPeriod", "Route", "Status"]


class Status(enum.Enum):
    ANSWERED = "answered"
    NOT_FOUND = "not_found"
    UNRECOGNIZED_PARAM = "unrecognized_param"
    NO_AUTHORIZED_SOURCE = "no_authorized_source"
    OUT_OF_SCOPE_ENTITY = "out_of_scope_entity"
    CLARIFY = "clarify"
    DEGRADED = "degraded"
    ACCOUNT_DISABLED = "account_disabled"
    UNKNOWN_ASSISTANT = "unknown_assistant"


class Route(enum.Enum):
    FAQ = "faq"
    STRUCTURED = "structured"
    MULTI = "multi"
    NARRATIVE = "narrative"
    COMPOSITE = "composite"  # a figure and an explanation, each on its own path
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Citation:
    doc_id: str
    title: str
    locator: str
    uri: str
    trust: str = "trusted"

    def to_dict(self) -> dict[str, str]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "locator": self.locator,
            "uri": self.uri,
            "trust": self.trust,
        }


@dataclass(frozen=True, slots=True)
class ResolvedPeriod:
    """A relative period of the question (``text``) and the period it was read as."""

    text: str
    period: str

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "period": self.period}


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"answer result: {key!r} must be a list of strings")
    return tuple(value)


def _records(data: dict[str, Any], key: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"answer result: {key!r} must be a list")
    out: list[dict[str, str]] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not all(isinstance(item.get(f), str) for f in fields):
            raise ValueError(f"answer result: {key}[{i}] needs the strings {', '.join(fields)}")
        out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class AnswerResult:
    status: Status
    answer: str
    route: Route
    citations: tuple[Citation, ...] = ()
    trace_id: str = ""
    flags: tuple[str, ...] = field(default=())  # e.g. "possibly_outdated:<doc_id>", "conflict"
    assumptions: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    resolved_periods: tuple[ResolvedPeriod, ...] = ()
    corrections: tuple[Correction, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "route": self.route.value,
            "trace_id": self.trace_id,
            "flags": list(self.flags),
            "assumptions": list(self.assumptions),
            "missing": list(self.missing),
            "options": list(self.options),
            "resolved_periods": [p.to_dict() for p in self.resolved_periods],
            "corrections": [c.to_dict() for c in self.corrections],
        }

    @classmethod
    def from_dict(cls, data: object) -> AnswerResult:
        """The inverse of :meth:`to_dict`, for results read back from JSON (``clearance ask
        --json``, a saved evaluation run). Fields added later are optional; a wrong type or
        an unknown status or route raises :class:`ValueError` naming the field."""
        if not isinstance(data, dict):
            raise ValueError("answer result: expected a JSON object")
        try:
            status, route = Status(data.get("status")), Route(data.get("route"))
        except ValueError as exc:
            raise ValueError(f"answer result: {exc}") from None
        for key in ("answer", "trace_id"):
            if not isinstance(data.get(key, ""), str):
                raise ValueError(f"answer result: {key!r} must be a string")
        citations = _records(data, "citations", ("doc_id", "title", "locator", "uri"))
        periods = _records(data, "resolved_periods", ("text", "period"))
        corrections = _records(data, "corrections", ("written", "read_as"))
        return cls(
            status=status,
            answer=data.get("answer", ""),
            route=route,
            citations=tuple(
                Citation(c["doc_id"], c["title"], c["locator"], c["uri"], c.get("trust", "trusted"))
                for c in citations
            ),
            trace_id=data.get("trace_id", ""),
            flags=_strings(data, "flags"),
            assumptions=_strings(data, "assumptions"),
            missing=_strings(data, "missing"),
            options=_strings(data, "options"),
            resolved_periods=tuple(ResolvedPeriod(p["text"], p["period"]) for p in periods),
            corrections=tuple(Correction(c["written"], c["read_as"]) for c in corrections),
        )
