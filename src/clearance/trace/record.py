"""Privacy-preserving traces (DESIGN §8): one record per request, no text by default.

A record holds ids, counts, codes and timings — never the question, a chunk, a fact value,
a prompt or an answer. :func:`validate_record` rejects any record carrying a text field
(or any field it does not know), so a careless caller cannot write text into the log.
The user is pseudonymous: an HMAC of the user id under a key from the configuration or
the environment, which is never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clearance.errors import StoreError
from clearance.store.sqlite import SQLiteStore

__all__ = [
    "ALLOWED_FIELDS",
    "TraceRecord",
    "TraceWriter",
    "pseudonymise",
    "validate_record",
]

#: Fields a trace may carry. Anything else — in particular ``question``, ``answer``,
#: ``prompt``, ``text``, ``chunk``, ``value`` — is rejected.
ALLOWED_FIELDS: frozenset[str] = frozenset(
    {
        "trace_id",
        "created_at",
        "user",
        "assistant",
        "route",
        "status",
        "reason",
        "retrieved",
        "cited",
        "filter_counts",
        "realtime_dropped",
        "fabrication_guard_triggered",
        "guard_fired",
        "latency_ms",
        "provider_errors",
        "answer_id",
        "question_text",  # only when an operator enabled it for every corpus involved
    }
)


def pseudonymise(user_id: str, key: bytes) -> str:
    return hmac.new(key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


@dataclass(slots=True)
class TraceRecord:
    trace_id: str = field(default_factory=lambda: secrets.token_hex(8))
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    user: str = ""
    assistant: str | None = None
    route: str = "none"
    status: str = ""
    reason: str | None = None
    retrieved: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    filter_counts: dict[str, int] = field(default_factory=dict)
    realtime_dropped: dict[str, str] = field(default_factory=dict)
    fabrication_guard_triggered: bool = False
    guard_fired: bool = False
    latency_ms: dict[str, float] = field(default_factory=dict)
    provider_errors: list[str] = field(default_factory=list)
    _started: dict[str, float] = field(default_factory=dict)

    def start(self, stage: str) -> None:
        self._started[stage] = time.perf_counter()

    def stop(self, stage: str) -> None:
        began = self._started.pop(stage, None)
        if began is not None:
            self.latency_ms[stage] = round((time.perf_counter() - began) * 1000, 3)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "created_at": self.created_at,
            "user": self.user,
            "assistant": self.assistant,
            "route": self.route,
            "status": self.status,
            "reason": self.reason,
            "retrieved": self.retrieved,
            "cited": self.cited,
            "filter_counts": self.filter_counts,
            "realtime_dropped": self.realtime_dropped,
            "fabrication_guard_triggered": self.fabrication_guard_triggered,
            "guard_fired": self.guard_fired,
            "latency_ms": self.latency_ms,
            "provider_errors": self.provider_errors,
        }


def validate_record(record: Mapping[str, Any]) -> None:
    """Raise :class:`StoreError` for any unknown field (text fields are unknown)."""
    unknown = sorted(set(record) - ALLOWED_FIELDS)
    if unknown:
        raise StoreError(f"trace record rejected: field {unknown[0]!r} may not be traced")


class TraceWriter:
    """Writes validated records into the index file's ``traces`` table."""

    def __init__(self, store: SQLiteStore, key: bytes | None) -> None:
        self.store = store
        self.key = key or secrets.token_bytes(32)  # no key: pseudonyms are per-process
        with store.transaction() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS traces (trace_id TEXT PRIMARY KEY, "
                "created_at TEXT NOT NULL, record TEXT NOT NULL)"
            )

    def pseudonym(self, user_id: str) -> str:
        return pseudonymise(user_id, self.key)

    def write(self, record: Mapping[str, Any]) -> None:
        validate_record(record)
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO traces (trace_id, created_at, record) VALUES (?, ?, ?)",
                (record["trace_id"], record["created_at"], json.dumps(record, sort_keys=True)),
            )
