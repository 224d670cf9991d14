"""Reading the trace log: list, show, purge, "who saw this document?" and statistics.

Traces are operator data, readable by administrators only (the CLI is an operator tool;
the HTTP service will enforce it). Nothing here can reveal text, because no record holds
any (see :mod:`clearance.trace.record`) — only ids, pseudonyms, counts and timings.

Statistics, per request unless said otherwise:

* ``answered`` / ``refused`` / ``not_found`` / ``degraded`` per assistant (see
  :data:`OUTCOMES`; ``by_status`` keeps the raw statuses);
* ``denied_source_rate``: the share of requests in which the egress guard's independent
  re-check denied at least one retrieved document (``denied_retrieved > 0``) — must be 0;
* ``stale_source_ratio``: the share of requests citing at least one document past its
  review date;
* citation counts and the p50 / p95 of total latency (nearest rank).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from clearance.config import parse_duration
from clearance.errors import ClearanceError, MetadataError
from clearance.trace.record import apply_retention, ensure_table, purge_before, timestamp

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = ["OUTCOMES", "TraceLog", "outcome", "parse_since", "percentile"]

#: How a status counts in ``stats``: a refusal that is really "nothing to answer from" is
#: ``not_found``; a provider or guard failure is ``degraded``; the rest are refusals.
OUTCOMES: dict[str, str] = {
    "answered": "answered",
    "not_found": "not_found",
    "no_authorized_source": "not_found",
    "degraded": "degraded",
    "unrecognized_param": "refused",
    "out_of_scope_entity": "refused",
    "clarify": "refused",
    "account_disabled": "refused",
    "unknown_assistant": "refused",
}

DEFAULT_ASSISTANT = "(default)"


def outcome(status: str) -> str:
    return OUTCOMES.get(status, "refused")


def parse_since(value: str, now: datetime, option: str = "--since") -> datetime:
    """``"7d"`` (that long before ``now``) or an ISO 8601 date or time (naive = UTC)."""
    text = value.strip()
    try:
        seconds = parse_duration(text, option)
    except ClearanceError:
        pass
    else:
        return now - timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise MetadataError(
            f"{option}: expected a duration such as '7d' or an ISO 8601 date, got {value!r}"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


class TraceLog:
    """The ``traces`` table of one index. Opening it applies the retention period (once per
    process and index, like the writer)."""

    def __init__(
        self, store: Store, *, retention_s: float = 0.0, now: datetime | None = None
    ) -> None:
        self.store = store
        ensure_table(store)
        apply_retention(store, retention_s, now or datetime.now(UTC))

    @property
    def _order(self) -> str:
        """The column that orders records written in the same microsecond: insertion order."""
        return "rowid" if self.store.dialect == "sqlite" else "seq"

    def _records(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        with self.store.reading() as db:
            rows = db.execute(sql, tuple(params)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def entries(
        self, *, since: datetime | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Records, newest first."""
        sql = "SELECT record FROM traces"
        params: list[Any] = []
        if since is not None:
            sql += " WHERE created_at >= ?"
            params.append(timestamp(since))
        sql += f" ORDER BY created_at DESC, {self._order} DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return self._records(sql, params)

    def get(self, trace_id: str) -> dict[str, Any] | None:
        found = self._records("SELECT record FROM traces WHERE trace_id = ?", [trace_id])
        return found[0] if found else None

    def purge(self, older_than_s: float, now: datetime) -> tuple[int, datetime]:
        """Delete records created more than ``older_than_s`` before ``now``."""
        cutoff = now - timedelta(seconds=older_than_s)
        return purge_before(self.store, cutoff), cutoff

    def audit(self, doc_id: str) -> list[dict[str, Any]]:
        """Every request that retrieved or cited ``doc_id``: when, which pseudonymous user,
        which assistant, with what outcome — oldest first."""
        if self.store.dialect == "sqlite":
            named = (
                "EXISTS (SELECT 1 FROM json_each(traces.record, '$.retrieved') WHERE value = ?) "
                "OR EXISTS (SELECT 1 FROM json_each(traces.record, '$.cited') WHERE value = ?)"
            )
        else:
            named = (
                "jsonb_exists(record::jsonb -> 'retrieved', ?) "
                "OR jsonb_exists(record::jsonb -> 'cited', ?)"
            )
        records = self._records(
            f"SELECT record FROM traces WHERE {named} ORDER BY created_at, {self._order}",
            [doc_id, doc_id],
        )
        return [
            {
                "trace_id": r["trace_id"],
                "created_at": r["created_at"],
                "user": r["user"],
                "assistant": r.get("assistant"),
                "status": r.get("status"),
                "retrieved": doc_id in r.get("retrieved", []),
                "cited": doc_id in r.get("cited", []),
            }
            for r in records
        ]

    def stats(self, *, since: datetime | None = None) -> dict[str, Any]:
        records = self.entries(since=since)
        n = len(records)
        assistants: dict[str, Counter[str]] = {}
        by_status: Counter[str] = Counter()
        cited_docs: Counter[str] = Counter()
        latencies: list[float] = []
        denied = stale = guard = fabrication = provider_errors = 0
        for r in records:
            status = str(r.get("status", ""))
            by_status[status] += 1
            counts = assistants.setdefault(r.get("assistant") or DEFAULT_ASSISTANT, Counter())
            counts["requests"] += 1
            counts[outcome(status)] += 1
            cited = r.get("cited", [])
            counts["citations"] += len(cited)
            cited_docs.update(cited)
            denied += int(r.get("denied_retrieved", 0) > 0)
            stale += int(r.get("cited_past_review", 0) > 0)
            guard += int(bool(r.get("guard_fired")))
            fabrication += int(bool(r.get("fabrication_guard_triggered")))
            provider_errors += int(bool(r.get("provider_errors")))
            total = r.get("latency_ms", {}).get("total")
            if isinstance(total, int | float):
                latencies.append(float(total))
        answered = sum(c["answered"] for c in assistants.values())
        keys = ("requests", "answered", "refused", "not_found", "degraded", "citations")
        return {
            "since": None if since is None else timestamp(since),
            "requests": n,
            "assistants": {
                name: {k: counts[k] for k in keys} for name, counts in sorted(assistants.items())
            },
            "by_status": dict(sorted(by_status.items())),
            "denied_source_requests": denied,
            "denied_source_rate": denied / n if n else 0.0,
            "stale_source_requests": stale,
            "stale_source_ratio": stale / n if n else 0.0,
            "citations": {
                "total": sum(cited_docs.values()),
                "per_answered": sum(cited_docs.values()) / answered if answered else 0.0,
                "by_doc": dict(cited_docs.most_common(20)),
            },
            "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
            "guard_fired": guard,
            "fabrication_guard_triggered": fabrication,
            "provider_error_requests": provider_errors,
        }
