"""Browser sessions: a random cookie that stands for a sign-in, stored hashed in the index.

A session is created when someone signs in to the UI (an API token pasted into the form, or
the OIDC authorization-code flow) and names the user and how they proved it. The cookie holds
only a random id (32 bytes from :mod:`secrets`); the index holds its SHA-256, so a copy of the
index file signs nobody in. Sessions live in the index, not in the process, so every server
process sharing the index honours the same sign-ins and sign-outs.

A session never outlives its credential: it ends at ``[server] session_lifetime`` after
sign-in, at the identity provider's ``exp`` for an OIDC sign-in, and — for a pasted API
token — as soon as that token is revoked or expires (the UI re-checks the token on every
request). What the user may read is resolved from the directory on every request, as for
the API.

Each session carries its own CSRF token, which every form and script request must send back
(:mod:`clearance.api.ui`).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store


__all__ = ["Session", "SessionStore", "SessionSweeper"]

log = logging.getLogger(__name__)

_COLUMNS = "user_id, method, token_id, csrf, created_at, expires_at"


@dataclass(frozen=True, slots=True)
class Session:
    user_id: str
    method: str  # "api_token" or "oidc"
    token_id: str | None  # the API token signed in with, re-checked on every request
    csrf: str
    created_at: datetime
    expires_at: datetime


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


class SessionStore:
    """Create, find and end browser sessions in one index file."""

    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self.store = store
        self.clock = clock

    def _exists(self) -> bool:
        return self.store.has_tables("ui_sessions")

    def create(
        self, user_id: str, method: str, expires_at: datetime, *, token_id: str | None = None
    ) -> tuple[str, Session]:
        """A new session: ``(the cookie value, the session)``. Expired sessions are removed
        on the way, so the table holds only live ones and those since expired."""
        now = self.clock()
        session_id = secrets.token_urlsafe(32)
        session = Session(
            user_id=user_id,
            method=method,
            token_id=token_id,
            csrf=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=expires_at,
        )
        with self.store.transaction() as db:
            create_table(db, "ui_sessions")
            db.execute("DELETE FROM ui_sessions WHERE expires_at <= ?", (now.isoformat(),))
            db.execute(
                f"INSERT INTO ui_sessions (id_sha256, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    _digest(session_id),
                    user_id,
                    method,
                    token_id,
                    session.csrf,
                    now.isoformat(),
                    expires_at.astimezone(UTC).isoformat(),
                ),
            )
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of a cookie value, else ``None`` (unknown, ended or expired)."""
        if not session_id or len(session_id) > 128 or not self._exists():
            return None
        digest = _digest(session_id)
        with self.store.reading() as db:
            row = db.execute(
                f"SELECT id_sha256, {_COLUMNS} FROM ui_sessions WHERE id_sha256 = ?", (digest,)
            ).fetchone()
        if row is None or not hmac.compare_digest(str(row[0]), digest):
            return None
        session = _session(tuple(row[1:]))
        return session if self.clock() < session.expires_at else None

    def sweep(self) -> int:
        """Delete every expired session; how many there were."""
        if not self._exists():
            return 0
        with self.store.transaction() as db:
            cursor = db.execute(
                "DELETE FROM ui_sessions WHERE expires_at <= ?", (self.clock().isoformat(),)
            )
            return max(int(getattr(cursor, "rowcount", 0) or 0), 0)

    def end(self, session_id: str | None) -> None:
        """Sign out: the cookie value no longer names a session."""
        if session_id and self._exists():
            with self.store.transaction() as db:
                db.execute("DELETE FROM ui_sessions WHERE id_sha256 = ?", (_digest(session_id),))


def _session(row: tuple[Any, ...]) -> Session:
    return Session(
        user_id=str(row[0]),
        method=str(row[1]),
        token_id=None if row[2] is None else str(row[2]),
        csrf=str(row[3]),
        created_at=datetime.fromisoformat(row[4]),
        expires_at=datetime.fromisoformat(row[5]),
    )


class SessionSweeper:
    """Deletes expired sessions every ``interval_s`` while the server runs, so the table
    holds live sign-ins only (an expired one never signs in either way: :meth:`get`)."""

    def __init__(self, sessions: SessionStore, interval_s: float) -> None:
        self.sessions = sessions
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="session-sweeper", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                swept = self.sessions.sweep()
            except Exception:  # a busy index now is tried again next time
                log.warning("expired sessions could not be swept", exc_info=True)
                continue
            if swept:
                log.info("swept %d expired browser session(s)", swept)

    def start(self) -> SessionSweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
