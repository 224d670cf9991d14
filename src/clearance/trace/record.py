"""Privacy-preserving traces (docs/design.md §8): one record per request, no text by default.

A record holds ids, counts, codes and timings — never the question, a chunk, a fact value,
a prompt or an answer. :func:`validate_record` rejects any record carrying a text field
(or any field it does not know), so a careless caller cannot write text into the log.
The user is pseudonymous: an HMAC of the user id under a key from the configuration or
the environment, which is never logged.

``question_text`` is the one text field, and only an operator can turn it on
(``[trace] question_text_corpora``): a writer opened without that permission rejects it.
Records older than ``[trace] retention`` are purged when the first writer of a process
opens the index. Reading, auditing and statistics live in :mod:`clearance.trace.log`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from clearance.errors import StoreError
from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = [
    "ALLOWED_FIELDS",
    "TraceRecord",
    "TraceWriter",
    "apply_retention",
    "ensure_table",
    "pseudonymise",
    "purge_before",
    "timestamp",
    "validate_record",
]


def pseudonymise(user_id: str, key: bytes) -> str:
    return hmac.new(key, user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def timestamp(moment: datetime) -> str:
    """The one timestamp format of traces (UTC, microseconds), so strings sort as times."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(slots=True)
class TraceRecord:
    trace_id: str = field(default_factory=lambda: secrets.token_hex(8))
    created_at: str = field(default_factory=lambda: timestamp(datetime.now(UTC)))
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
    denied_retrieved: int = 0
    cited_past_review: int = 0
    question_text: str | None = None  # set only under [trace] question_text_corpora
    _started: dict[str, float] = field(default_factory=dict)

    def start(self, stage: str) -> None:
        self._started[stage] = time.perf_counter()

    def stop(self, stage: str) -> None:
        began = self._started.pop(stage, None)
        if began is not None:
            self.latency_ms[stage] = round((time.perf_counter() - began) * 1000, 3)

    def to_dict(self) -> dict[str, Any]:
        """Every field but the stage timers; ``question_text`` only when it is set."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
        if self.question_text is None:
            del out["question_text"]
        return out


def _is(*kinds: type) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)

    return check


def _list_of_str(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _map_of(*kinds: type) -> Callable[[object], bool]:
    item = _is(*kinds)

    def check(value: object) -> bool:
        return isinstance(value, dict) and all(
            isinstance(k, str) and item(v) for k, v in value.items()
        )

    return check


#: The shape of every allowed field, so no text can ride inside, say, a count.
_SHAPES: Mapping[str, Callable[[object], bool]] = {
    "trace_id": _is(str),
    "created_at": _is(str),
    "user": _is(str),
    "assistant": _is(str, type(None)),
    "route": _is(str),
    "status": _is(str),
    "reason": _is(str, type(None)),
    "retrieved": _list_of_str,
    "cited": _list_of_str,
    "filter_counts": _map_of(int),
    "realtime_dropped": _map_of(str),
    "fabrication_guard_triggered": _is(bool),
    "guard_fired": _is(bool),
    "latency_ms": _map_of(int, float),
    "provider_errors": _list_of_str,
    "denied_retrieved": _is(int),  # retrieved documents the egress re-check denies: must stay 0
    "cited_past_review": _is(int),  # cited documents past their review date
    "answer_id": _is(str, type(None)),
    "question_text": _is(str),  # only when an operator enabled it for every corpus involved
}

#: Fields a trace may carry. Anything else — in particular ``question``, ``answer``,
#: ``prompt``, ``text``, ``chunk``, ``value`` — is rejected.
ALLOWED_FIELDS: frozenset[str] = frozenset(_SHAPES)


def validate_record(record: Mapping[str, Any]) -> None:
    """Raise :class:`StoreError` for any unknown field (text fields are unknown) and for a
    known field of the wrong shape (so no text can ride inside, say, a count)."""
    unknown = sorted(set(record) - ALLOWED_FIELDS)
    if unknown:
        raise StoreError(f"trace record rejected: field {unknown[0]!r} may not be traced")
    for name, value in record.items():
        if not _SHAPES[name](value):
            raise StoreError(f"trace record rejected: field {name!r} has the wrong shape")


def ensure_table(store: Store) -> None:
    """Create the traces table once. An index that has it is only read here: opening a trace
    writer or log must not wait for another process's long write."""
    if store.has_tables("traces", "traces_created"):
        return
    with store.transaction() as db:
        create_table(db, "traces")


def purge_before(store: Store, cutoff: datetime) -> int:
    """Delete every record created before ``cutoff``; returns how many went."""
    ensure_table(store)
    with store.transaction() as db:
        cursor = db.execute("DELETE FROM traces WHERE created_at < ?", (timestamp(cutoff),))
        return int(cursor.rowcount)


_retention_lock = threading.Lock()
_retention_applied: set[str] = set()


def apply_retention(store: Store, retention_s: float, now: datetime) -> int | None:
    """Purge records older than ``retention_s`` — at most once per process and index file
    (``None`` when it already ran, or when ``retention_s`` is 0: keep everything)."""
    if retention_s <= 0:
        return None
    where = store.identity
    with _retention_lock:
        if where in _retention_applied:
            return None
        _retention_applied.add(where)
    return purge_before(store, now - timedelta(seconds=retention_s))


class TraceWriter:
    """Writes validated records into the index file's ``traces`` table.

    Opening the first writer of a process on an index applies the retention period
    (``retention_s``; 0 keeps everything). ``allow_question_text`` is what the operator
    configured: without it a record carrying ``question_text`` is rejected too."""

    def __init__(
        self,
        store: Store,
        key: bytes | None,
        *,
        retention_s: float = 0.0,
        now: datetime | None = None,
        allow_question_text: bool = False,
    ) -> None:
        self.store = store
        self.key = key or secrets.token_bytes(32)  # no key: pseudonyms are per-process
        self.allow_question_text = allow_question_text
        ensure_table(store)
        apply_retention(store, retention_s, now or datetime.now(UTC))

    def __repr__(self) -> str:  # never show the key
        return f"TraceWriter({self.store.location})"

    def pseudonym(self, user_id: str) -> str:
        return pseudonymise(user_id, self.key)

    def write(self, record: Mapping[str, Any]) -> None:
        validate_record(record)
        if "question_text" in record and not self.allow_question_text:
            raise StoreError(
                "trace record rejected: field 'question_text' is not enabled "
                "([trace] question_text_corpora)"
            )
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO traces (trace_id, created_at, record) VALUES (?, ?, ?)",
                (record["trace_id"], record["created_at"], json.dumps(record, sort_keys=True)),
            )
