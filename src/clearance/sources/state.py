"""Per-source sync state, kept in the index file next to the corpus sync times.

One row per source name: the content and permission cursors to resume from, when each kind
of sync last completed and was last attempted, the last error and since when the source has
been failing, the groups it put into the directory, and the counts of its last syncs. The
table (``source_state``) is created on first write; readers only look for it, so status
pages never take the index's write lock.

Error texts are stored as connectors and the engine word them — they name URLs without
query strings and never carry a credential (:mod:`clearance.sources.http`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store


__all__ = ["SourceState", "StateTable"]

_COLUMNS = (
    "name, content_cursor, permission_cursor, content_synced_at, permission_synced_at, "
    "content_attempted_at, permission_attempted_at, last_error, failing_since, groups, stats"
)


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _is_time(column: str) -> bool:
    """Whether ``column`` holds a moment (a POSIX timestamp in the table)."""
    return column.endswith(("_at", "_since"))


@dataclass(frozen=True, slots=True)
class SourceState:
    name: str
    content_cursor: str | None = None
    permission_cursor: str | None = None
    content_synced_at: datetime | None = None
    permission_synced_at: datetime | None = None
    content_attempted_at: datetime | None = None
    permission_attempted_at: datetime | None = None
    last_error: str | None = None
    failing_since: datetime | None = None
    groups: tuple[str, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def failing(self) -> bool:
        return self.failing_since is not None


class StateTable:
    """Reads and writes ``source_state`` rows of one index."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _exists(self) -> bool:
        return self.store.has_tables("source_state")

    def get(self, name: str) -> SourceState:
        """The state of ``name`` (an empty one for a source that never synced)."""
        return self.all().get(name, SourceState(name))

    def all(self) -> dict[str, SourceState]:
        if not self._exists():
            return {}
        with self.store.reading() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM source_state").fetchall()
        states: dict[str, SourceState] = {}
        for row in rows:
            values = dict(zip(_COLUMNS.split(", "), row, strict=True))
            for key in values:
                if _is_time(key):
                    values[key] = _dt(values[key])
            values["groups"] = tuple(json.loads(values["groups"]))
            values["stats"] = json.loads(values["stats"])
            states[str(row[0])] = SourceState(**values)
        return states

    def update(self, name: str, **values: Any) -> None:
        """Set columns of ``name``'s row (created if missing). Datetimes, tuples and dicts
        are stored as the table keeps them; ``stats`` merges into the stored counts."""
        unknown = set(values) - set(_COLUMNS.split(", ")[1:])
        if unknown:
            raise ValueError(f"source_state has no column {sorted(unknown)[0]!r}")
        row: dict[str, Any] = {}
        for key, value in values.items():
            if isinstance(value, datetime) or (value is None and _is_time(key)):
                row[key] = _ts(value)
            elif key == "groups":
                row[key] = json.dumps(sorted(value))
            elif key != "stats":
                row[key] = value
        with self.store.transaction() as db:
            create_table(db, "source_state")
            db.execute(
                "INSERT INTO source_state (name) VALUES (?) ON CONFLICT (name) DO NOTHING", (name,)
            )
            if "stats" in values:
                found = db.execute("SELECT stats FROM source_state WHERE name = ?", (name,))
                stats = json.loads(found.fetchone()[0])
                stats.update(values["stats"])
                row["stats"] = json.dumps(stats, sort_keys=True)
            if row:
                assignments = ", ".join(f"{key} = ?" for key in row)
                db.execute(
                    f"UPDATE source_state SET {assignments} WHERE name = ?", (*row.values(), name)
                )

    def failed(self, name: str, error: str, at: datetime) -> None:
        """Record a failed sync: the error, and since when the source fails (kept from the
        first failure until a sync succeeds)."""
        current = self.get(name)
        self.update(name, last_error=error, failing_since=current.failing_since or at)

    def succeeded(self, name: str) -> None:
        self.update(name, last_error=None, failing_since=None)
