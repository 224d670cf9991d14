"""The log of administrator actions: who changed the directory, ACLs, the index or tokens.

Every directory sync, ACL sync, ingestion, token creation and revocation and SCIM write
made through the CLI or the HTTP API is one row: when, who (``cli:<os user>`` on the
command line, the signed-in user or the provisioning token's name over HTTP), what, on
what, with what outcome, and a few counts. Never a secret, a token, a document's text or a
directory's contents. ``clearance audit --actor …`` and ``GET /v1/admin/actions`` read it.

The table (``admin_actions``) is created on first write in SQLite, like the token table;
PostgreSQL has it from its migrations. Recording is part of the action: a write that
cannot be recorded makes the action fail loudly rather than go unlogged.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = ["AdminActions", "Recorder"]

_FIELDS = ("at", "actor", "action", "target", "outcome")
_COLUMNS = f"id, {', '.join(_FIELDS)}, detail"
_MAX_LIMIT = 10_000


@dataclass
class Recorder:
    """What an action adds to its row while it runs (counts, a version)."""

    detail: dict[str, Any]


class AdminActions:
    """Record and read administrator actions in one index."""

    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self.store = store
        self.clock = clock

    def _exists(self) -> bool:
        return self.store.has_tables("admin_actions")

    def record(
        self,
        actor: str,
        action: str,
        target: str,
        outcome: str = "ok",
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        if not self._exists():
            with self.store.transaction() as db:
                create_table(db, "admin_actions")
        with self.store.transaction() as db:
            db.execute(
                f"INSERT INTO admin_actions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    uuid.uuid4().hex,
                    self.clock().astimezone(UTC).isoformat(),
                    actor,
                    action,
                    target,
                    outcome,
                    json.dumps(dict(detail or {}), sort_keys=True, default=str),
                ),
            )

    @contextmanager
    def action(self, actor: str | None, action: str, target: str) -> Iterator[Recorder]:
        """Run an action and record it, with ``ok`` or the failure's one-line message.
        Without an actor (a library call, a test) nothing is recorded."""
        recorder = Recorder({})
        if actor is None:
            yield recorder
            return
        try:
            yield recorder
        except Exception as exc:
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            self.record(actor, action, target, f"failed: {message}", recorder.detail)
            raise
        self.record(actor, action, target, "ok", recorder.detail)

    def entries(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        limit: int = 50,
    ) -> list[dict[str, Any]]:
        """Recorded actions, newest first, filtered by exact actor, by action (a prefix:
        ``scim`` matches ``scim.users.patch``) and by time."""
        if not self._exists():
            return []
        where: list[str] = []
        args: list[Any] = []
        if actor is not None:
            where.append("actor = ?")
            args.append(actor)
        if action is not None:
            prefix = action + "."
            where.append("(action = ? OR substr(action, 1, ?) = ?)")
            args += [action, len(prefix), prefix]
        if since is not None:
            where.append("at >= ?")
            args.append(since.astimezone(UTC).isoformat())
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        limit = max(1, min(limit, _MAX_LIMIT))
        with self.store.reading() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM admin_actions{clause} ORDER BY at DESC, id DESC "
                f"LIMIT {limit}",
                tuple(args),
            ).fetchall()
        # The columns after the id, the last (detail) decoded from JSON.
        return [
            {**dict(zip(_FIELDS, r[1:6], strict=True)), "detail": json.loads(r[6])} for r in rows
        ]
