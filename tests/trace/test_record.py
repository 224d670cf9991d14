"""The trace record and writer (clearance.trace.record): allowed fields and shapes, the
operator's question-text switch, pseudonyms, timestamps and automatic retention."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from clearance.config import settings_from_dict, trace_key
from clearance.errors import StoreError
from clearance.store.sqlite import SQLiteStore
from clearance.trace.log import TraceLog
from clearance.trace.record import (
    ALLOWED_FIELDS,
    TraceRecord,
    TraceWriter,
    apply_retention,
    pseudonymise,
    timestamp,
    validate_record,
)

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "traces.db") as store:
        yield store


def record(**fields: Any) -> dict[str, Any]:
    data = TraceRecord(created_at=timestamp(NOW), user="u" * 32).to_dict()
    data.update(fields)
    return data


def stored(store: SQLiteStore) -> list[dict[str, Any]]:
    with store.reading() as con:
        return [json.loads(r[0]) for r in con.execute("SELECT record FROM traces")]


class NaiveWriter(TraceWriter):
    """The reverse proof: a writer that skips ``validate_record`` and stores anything."""

    def write(self, record: Mapping[str, Any]) -> None:
        with self.store.transaction() as con:
            con.execute(
                "INSERT INTO traces (trace_id, created_at, record) VALUES (?, ?, ?)",
                (record["trace_id"], record["created_at"], json.dumps(dict(record))),
            )


# --------------------------------------------------------------------------- fields


def test_a_default_record_has_every_field_of_design_section_8() -> None:
    data = TraceRecord().to_dict()

    assert set(data) == ALLOWED_FIELDS - {"answer_id", "question_text"}
    assert data["denied_retrieved"] == 0
    assert data["cited_past_review"] == 0
    validate_record(data)


@pytest.mark.parametrize(
    "field", ["question", "answer", "prompt", "text", "chunk", "value", "snippets", "messages"]
)
def test_text_fields_are_rejected_and_a_writer_without_validation_would_accept_them(
    db: SQLiteStore, field: str
) -> None:
    leaky = record(**{field: "what is the board salary decision?"})

    with pytest.raises(StoreError, match=f"field '{field}' may not be traced"):
        TraceWriter(db, b"k").write(leaky)
    assert stored(db) == []

    # Reverse proof: without validate_record the same record goes straight into the log.
    NaiveWriter(db, b"k").write(leaky)
    assert stored(db)[0][field] == "what is the board salary decision?"


def test_question_and_answer_fields_together_reverse_proof(db: SQLiteStore) -> None:
    leaky = record(question="Q-CANARY", answer="A-CANARY")

    with pytest.raises(StoreError):
        TraceWriter(db, b"k").write(leaky)
    NaiveWriter(db, b"k").write(leaky)

    assert "Q-CANARY" in json.dumps(stored(db)) and "A-CANARY" in json.dumps(stored(db))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("filter_counts", {"the question text": "1"}),
        ("filter_counts", {"x": True}),
        ("retrieved", ["ok", 3]),
        ("retrieved", "a whole answer as one string"),
        ("latency_ms", {"total": "fast"}),
        ("denied_retrieved", "0"),
        ("denied_retrieved", False),
        ("guard_fired", 1),
        ("realtime_dropped", {"doc": 1}),
        ("question_text", 42),
    ],
)
def test_known_fields_of_the_wrong_shape_are_rejected(field: str, value: object) -> None:
    with pytest.raises(StoreError, match=f"field '{field}' has the wrong shape"):
        validate_record(record(**{field: value}))


def test_question_text_needs_the_operators_permission(db: SQLiteStore) -> None:
    with_text = record(question_text="where is the VPN portal?")

    with pytest.raises(StoreError, match="question_text"):
        TraceWriter(db, b"k").write(with_text)
    TraceWriter(db, b"k", allow_question_text=True).write(with_text)

    assert stored(db)[0]["question_text"] == "where is the VPN portal?"


def test_a_record_without_question_text_carries_no_such_key() -> None:
    assert "question_text" not in TraceRecord().to_dict()
    assert TraceRecord(question_text="q").to_dict()["question_text"] == "q"


# --------------------------------------------------------------------------- pseudonyms


def test_pseudonyms_are_a_keyed_hmac_from_the_configured_environment_variable(
    db: SQLiteStore,
) -> None:
    settings = settings_from_dict({"trace": {"hmac_key_env": "MY_TRACE_KEY"}})
    key = trace_key(settings, {"MY_TRACE_KEY": "s3cret-key"})
    assert key == b"s3cret-key"
    assert trace_key(settings, {"CLEARANCE_TRACE_KEY": "other"}) is None

    writer = TraceWriter(db, key)
    expected = hmac.new(b"s3cret-key", b"ann", hashlib.sha256).hexdigest()[:32]
    assert writer.pseudonym("ann") == expected == pseudonymise("ann", b"s3cret-key")
    assert TraceWriter(db, key).pseudonym("ann") == expected  # stable across writers
    assert TraceWriter(db, b"another key").pseudonym("ann") != expected
    assert writer.pseudonym("bob") != expected


def test_without_a_key_pseudonyms_use_a_random_per_writer_key(db: SQLiteStore) -> None:
    a, b = TraceWriter(db, None), TraceWriter(db, None)
    assert a.pseudonym("ann") != b.pseudonym("ann")
    assert a.pseudonym("ann") == a.pseudonym("ann")


def test_the_key_never_appears_in_the_writer_repr_or_the_log(db: SQLiteStore) -> None:
    writer = TraceWriter(db, b"KEY-CANARY-123")
    writer.write(record(user=writer.pseudonym("ann")))

    assert "KEY-CANARY" not in repr(writer)
    assert "KEY-CANARY" not in json.dumps(stored(db))
    assert "KEY-CANARY" not in db.path.read_bytes().decode("latin-1")


# --------------------------------------------------------------------------- time


def test_timestamps_sort_as_times_whatever_the_offset_or_precision() -> None:
    moments = [
        datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 3, 2, 18, 30, tzinfo=timezone(timedelta(hours=9))),  # 09:30 UTC
        datetime(2026, 3, 2, 10, 0),  # naive = UTC
    ]
    stamps = [timestamp(m) for m in moments]

    assert sorted(stamps) == stamps
    assert all(s.endswith("+00:00") and len(s) == len(stamps[0]) for s in stamps)


def test_retention_purges_expired_records_once_per_process_and_index(db: SQLiteStore) -> None:
    writer = TraceWriter(db, b"k")  # retention 0: keeps everything
    for days in (40, 31, 29, 1):
        writer.write(record(trace_id=f"t{days}", created_at=timestamp(NOW - timedelta(days=days))))

    TraceWriter(db, b"k", retention_s=30 * 86400, now=NOW)

    assert sorted(r["trace_id"] for r in stored(db)) == ["t1", "t29"]

    # Already applied in this process: a new old record survives the next opening.
    writer.write(record(trace_id="t50", created_at=timestamp(NOW - timedelta(days=50))))
    TraceWriter(db, b"k", retention_s=30 * 86400, now=NOW)
    TraceLog(db, retention_s=30 * 86400, now=NOW)
    assert "t50" in {r["trace_id"] for r in stored(db)}
    assert apply_retention(db, 30 * 86400, NOW) is None


def test_the_trace_log_applies_retention_when_it_opens_first(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "other.db") as store:
        TraceWriter(store, b"k").write(
            record(trace_id="old", created_at=timestamp(NOW - timedelta(days=8)))
        )
        TraceWriter(store, b"k").write(record(trace_id="new"))

        log = TraceLog(store, retention_s=7 * 86400, now=NOW)

        assert [r["trace_id"] for r in log.entries()] == ["new"]


def test_retention_zero_keeps_everything(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "keep.db") as store:
        TraceWriter(store, b"k").write(
            record(trace_id="ancient", created_at=timestamp(NOW - timedelta(days=3650)))
        )
        TraceWriter(store, b"k", retention_s=0, now=NOW)
        assert apply_retention(store, 0, NOW) is None
        assert [r["trace_id"] for r in stored(store)] == ["ancient"]
