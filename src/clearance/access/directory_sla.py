"""The directory SLA: when a directory source has not synced in time, nobody is served.

A directory source owns the whole directory (:mod:`clearance.sources.directory.service`
syncs it). Its state — last success, last attempt, cursor, the last error — is kept in the
index's metadata under ``directory_source:<name>``, so every process on the index judges
the same freshness. When the configured source has not synced successfully within its
``sla`` (or never has, or its last success lies in the future), every user it provides
resolves to the empty principal set until the next success: :func:`failing_closed` says
why, and ``status`` and ``explain`` show it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from clearance.config import DirectorySourceSettings, Settings
from clearance.store.base import Store

__all__ = ["STATE_PREFIX", "failing_closed", "moment", "source_state", "stale_reason"]

STATE_PREFIX = "directory_source:"


def source_state(store: Store, name: str) -> dict[str, Any]:
    """The stored state of directory source ``name`` (empty before its first sync)."""
    raw = store.get_meta(STATE_PREFIX + name)
    return dict(raw) if isinstance(raw, dict) else {}


def moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def stale_reason(
    settings: DirectorySourceSettings, state: dict[str, Any], now: datetime
) -> str | None:
    last = moment(state.get("last_success"))
    sla = timedelta(seconds=settings.sla_s)
    if last is None:
        return f"directory source {settings.name!r} has never synced successfully"
    if last > now:
        return f"directory source {settings.name!r} last synced in the future ({last.isoformat()})"
    if now - last > sla:
        return (
            f"directory source {settings.name!r} last synced successfully at "
            f"{last.isoformat()}, longer ago than its sla of {settings.sla_s:g}s"
        )
    return None


def failing_closed(settings: Settings, store: Store, now: datetime) -> str | None:
    """Why the directory serves nobody now (the configured source is past its SLA), or
    ``None`` while it is fresh or no directory source is configured."""
    for name, source in sorted(settings.directories.items()):
        reason = stale_reason(source, source_state(store, name), now)
        if reason is not None:
            return reason
    return None
