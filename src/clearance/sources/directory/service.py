"""Syncing a directory source, and the directory SLA that makes it fail closed.

Ownership
---------
A directory source owns the **whole** directory: its snapshot is applied with
:meth:`~clearance.access.directory.Directory.replace` semantics, so a user or group it no
longer reports is removed, and at most one ``[directories.<name>]`` may be configured
(:func:`clearance.config.load` refuses two). A directory uploaded by hand (``clearance
directory sync``, ``POST /v1/directory``) while a source is configured lasts only until the
source's next sync.

Guarantees
----------
* **All or nothing.** A read that raises applies nothing: the previous version stays, the
  error and attempt time are recorded, and the last success time does not move. A snapshot
  without any user is refused as a failed read (it would disable every account at once).
* **One version per sync.** A successful read is applied as one new directory version.
* **Fail closed past the SLA.** When the configured source has not synced successfully
  within its ``sla`` (or never has, or its last success lies in the future), every user it
  provides — the whole directory — has the empty principal set, until the next success.
  :func:`clearance.access.directory_sla.failing_closed` says why, and ``status``/``explain`` show it.
* **State.** Last success, last attempt, API calls, the last error and the reader's cursor
  are kept in the index's metadata (``directory_source:<name>``), on SQLite and PostgreSQL
  alike, so every process on the index sees the same freshness.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from clearance.access.directory_sla import (
    STATE_PREFIX,
    moment,
    source_state,
    stale_reason,
)
from clearance.config import DirectorySourceSettings
from clearance.errors import ClearanceError, DirectoryError, NotFoundError
from clearance.runtime import Runtime
from clearance.sources.directory.base import DirectoryReader, Progress

__all__ = [
    "DirectorySyncReport",
    "configured_directory_source",
    "directory_source_status",
    "sync_directory_source",
]


@dataclass(frozen=True, slots=True)
class DirectorySyncReport:
    source: str
    kind: str
    ok: bool
    users: int = 0
    groups: int = 0
    api_calls: int = 0
    seconds: float = 0.0
    version: int | None = None
    error: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "ok": self.ok,
            "users": self.users,
            "groups": self.groups,
            "api_calls": self.api_calls,
            "seconds": round(self.seconds, 3),
            "directory_version": self.version,
            "error": self.error,
            "warnings": list(self.warnings),
        }


def configured_directory_source(runtime: Runtime, name: str) -> DirectorySourceSettings:
    found = runtime.settings.directories.get(name)
    if found is None:
        known = ", ".join(sorted(runtime.settings.directories)) or "none"
        raise NotFoundError(f"no directory source {name!r} is configured (configured: {known})")
    return found


def sync_directory_source(
    runtime: Runtime,
    name: str,
    *,
    reader: DirectoryReader | None = None,
    progress: Progress | None = None,
    keep: dict[str, DirectoryReader] | None = None,
) -> DirectorySyncReport:
    """Read source ``name`` once and apply what it read as one directory version.

    ``reader`` replaces the configured one (tests, the benchmark). ``keep`` holds readers
    between syncs (the scheduler's), so a reader that reads deltas keeps its snapshot; without
    it the reader is built for this sync and closed after it. Never raises for the source's
    own failures: they are the report's ``error`` and are recorded in state."""
    from clearance.sources.directory.registry import build_directory_reader

    settings = configured_directory_source(runtime, name)
    state = source_state(runtime.store, name)
    started = time.monotonic()
    attempt = runtime.clock()
    state["last_attempt"] = attempt.isoformat()
    if reader is None and keep is not None:
        reader = keep.get(name)
    owned = reader is None and keep is None
    try:
        if reader is None:
            reader = build_directory_reader(runtime.settings, settings, clock=runtime.clock)
            if keep is not None:
                keep[name] = reader
        try:
            read = reader.read(state.get("cursor"), progress)
        finally:
            if owned:
                reader.close()
        if read.doc.delta:
            raise DirectoryError(f"directories.{name}: the reader returned a delta, not a snapshot")
        if not read.doc.users:
            raise DirectoryError(
                f"directories.{name}: the read found no users, so applying it would disable "
                "every account; nothing was changed"
            )
        updated = runtime.replace_directory(read.doc)
    except ClearanceError as exc:
        state["last_error"] = str(exc)
        runtime.store.set_meta(STATE_PREFIX + name, state)
        return DirectorySyncReport(
            name, settings.kind, ok=False, seconds=time.monotonic() - started, error=str(exc)
        )
    state.update(
        last_success=attempt.isoformat(),
        last_error=None,
        api_calls=read.api_calls,
        cursor=read.cursor,
        users=len(read.doc.users),
        groups=len(read.doc.groups),
        seconds=round(time.monotonic() - started, 3),
    )
    runtime.store.set_meta(STATE_PREFIX + name, state)
    return DirectorySyncReport(
        name,
        settings.kind,
        ok=True,
        users=len(read.doc.users),
        groups=len(read.doc.groups),
        api_calls=read.api_calls,
        seconds=time.monotonic() - started,
        version=updated.version,
        warnings=read.warnings,
    )


def directory_source_status(runtime: Runtime) -> list[dict[str, Any]]:
    """One row per configured directory source (never credentials)."""
    now = runtime.clock()
    rows = []
    for name, settings in sorted(runtime.settings.directories.items()):
        state = source_state(runtime.store, name)
        reason = stale_reason(settings, state, now)
        last = moment(state.get("last_success"))
        rows.append(
            {
                "source": name,
                "kind": settings.kind,
                "interval_seconds": settings.interval_s,
                "sla_seconds": settings.sla_s,
                "last_success": state.get("last_success"),
                "last_attempt": state.get("last_attempt"),
                "lag_seconds": None if last is None else (now - last).total_seconds(),
                "api_calls": state.get("api_calls"),
                "users": state.get("users"),
                "groups": state.get("groups"),
                "last_error": state.get("last_error"),
                "failing_closed": reason is not None,
                "reason": reason,
            }
        )
    return rows
