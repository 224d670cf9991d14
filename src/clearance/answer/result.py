"""The answer contract: a stable JSON shape every channel (CLI, API, HTTP) returns.

``{"status", "answer", "citations": [{"doc_id", "title", "locator", "uri", "trust"}],
"route", "trace_id"}``. ``status`` and ``route`` values are a public contract.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AnswerResult", "Citation", "Route", "Status"]


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
class AnswerResult:
    status: Status
    answer: str
    route: Route
    citations: tuple[Citation, ...] = ()
    trace_id: str = ""
    flags: tuple[str, ...] = field(default=())  # e.g. "possibly_outdated:<doc_id>", "conflict"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "answer": self.answer,
            "citations": [c.to_dict() for c in self.citations],
            "route": self.route.value,
            "trace_id": self.trace_id,
            "flags": list(self.flags),
        }
