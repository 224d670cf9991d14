"""Reading the trace log (clearance.trace.log): list, show, purge, audit and statistics."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import MetadataError
from clearance.store.sqlite import SQLiteStore
from clearance.trace.log import TraceLog, outcome, parse_since, percentile
from clearance.trace.record import TraceRecord, TraceWriter, timestamp

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def rec(trace_id: str, minutes_ago: float, **fields: Any) -> dict[str, Any]:
    data = TraceRecord(
        trace_id=trace_id, created_at=timestamp(NOW - timedelta(minutes=minutes_ago))
    ).to_dict()
    data.update(user=f"pseudo-{trace_id}", status="answered", route="narrative")
    data.update(fields)
    return data


RECORDS = [
    rec(
        "a",
        50,
        assistant="general",
        cited=["d1", "d2"],
        retrieved=["d1", "d2", "d3"],
        latency_ms={"total": 100.0},
        cited_past_review=1,
    ),
    rec("b", 40, assistant="general", status="not_found", latency_ms={"total": 200.0}),
    rec("c", 30, status="no_authorized_source", retrieved=["d3"], latency_ms={"total": 300.0}),
    rec(
        "d",
        20,
        status="degraded",
        provider_errors=["provider_error"],
        latency_ms={"total": 400.0},
        guard_fired=True,
    ),
    rec(
        "e",
        10,
        status="out_of_scope_entity",
        latency_ms={"total": 50.0},
        denied_retrieved=1,
        fabrication_guard_triggered=True,
    ),
]


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TraceLog]:
    with SQLiteStore(tmp_path / "log.db") as store:
        writer = TraceWriter(store, b"k")
        for r in RECORDS:
            writer.write(r)
        yield TraceLog(store)


def test_entries_are_newest_first_and_honour_since_and_limit(log: TraceLog) -> None:
    assert [r["trace_id"] for r in log.entries()] == ["e", "d", "c", "b", "a"]
    assert [r["trace_id"] for r in log.entries(limit=2)] == ["e", "d"]
    since = NOW - timedelta(minutes=35)
    assert [r["trace_id"] for r in log.entries(since=since)] == ["e", "d", "c"]
    assert log.get("c") == RECORDS[2]
    assert log.get("zzz") is None


def test_audit_lists_every_request_that_retrieved_or_cited_a_document(log: TraceLog) -> None:
    events = log.audit("d3")

    assert [(e["trace_id"], e["retrieved"], e["cited"]) for e in events] == [
        ("a", True, False),
        ("c", True, False),
    ]
    assert events[0] == {
        "trace_id": "a",
        "created_at": RECORDS[0]["created_at"],
        "user": "pseudo-a",
        "assistant": "general",
        "status": "answered",
        "retrieved": True,
        "cited": False,
    }
    assert [e["trace_id"] for e in log.audit("d1")] == ["a"]
    assert log.audit("nobody-read-this") == []
    assert log.audit("d") == []  # exact ids, not substrings


def test_purge_deletes_records_older_than_the_cutoff(log: TraceLog) -> None:
    purged, cutoff = log.purge(25 * 60, NOW)

    assert purged == 3
    assert cutoff == NOW - timedelta(minutes=25)
    assert [r["trace_id"] for r in log.entries()] == ["e", "d"]


def test_stats_per_assistant_rates_citations_and_latency(log: TraceLog) -> None:
    stats = log.stats()

    assert stats == {
        "since": None,
        "requests": 5,
        "assistants": {
            "(default)": {
                "requests": 3,
                "answered": 0,
                "refused": 1,
                "not_found": 1,
                "degraded": 1,
                "citations": 0,
            },
            "general": {
                "requests": 2,
                "answered": 1,
                "refused": 0,
                "not_found": 1,
                "degraded": 0,
                "citations": 2,
            },
        },
        "by_status": {
            "answered": 1,
            "degraded": 1,
            "no_authorized_source": 1,
            "not_found": 1,
            "out_of_scope_entity": 1,
        },
        "denied_source_requests": 1,
        "denied_source_rate": 0.2,
        "stale_source_requests": 1,
        "stale_source_ratio": 0.2,
        "citations": {"total": 2, "per_answered": 2.0, "by_doc": {"d1": 1, "d2": 1}},
        "latency_ms": {"p50": 200.0, "p95": 400.0},
        "guard_fired": 1,
        "fabrication_guard_triggered": 1,
        "provider_error_requests": 1,
    }


def test_stats_since_and_of_an_empty_log(log: TraceLog) -> None:
    recent = log.stats(since=NOW - timedelta(minutes=15))
    assert recent["requests"] == 1
    assert recent["since"] == timestamp(NOW - timedelta(minutes=15))

    empty = log.stats(since=NOW)
    assert empty["requests"] == 0
    assert empty["denied_source_rate"] == 0.0
    assert empty["latency_ms"] == {"p50": None, "p95": None}


def test_outcome_classes() -> None:
    assert outcome("answered") == "answered"
    assert outcome("no_authorized_source") == "not_found"
    assert outcome("degraded") == "degraded"
    assert outcome("clarify") == "refused"
    assert outcome("anything new") == "refused"


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([7.0], 95) == 7.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7d", NOW - timedelta(days=7)),
        ("90m", NOW - timedelta(minutes=90)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01T10:00:00+09:00", datetime(2026, 3, 1, 1, tzinfo=UTC)),
    ],
)
def test_parse_since(value: str, expected: datetime) -> None:
    assert parse_since(value, NOW) == expected


def test_parse_since_rejects_garbage_naming_the_option() -> None:
    with pytest.raises(MetadataError, match="--since: expected a duration"):
        parse_since("last tuesday", NOW)
