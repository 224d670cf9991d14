"""API tokens: bearer credentials for the HTTP API, stored hashed in the index file.

A token reads ``clr_<id>_<secret>``: ``id`` (12 hex digits) finds the row, ``secret`` (32
random bytes from :mod:`secrets`) is what proves possession. Only the SHA-256 of the secret
is stored — the secret has 256 bits of entropy, so a slow password hash would add nothing —
and a presented secret is compared with :func:`hmac.compare_digest` against that hash.
The token itself is shown once, when it is created, and never again.

Every check reads the table, so a revocation or an expiry takes effect on the next request.
A token names a user; it grants nothing by itself. Whether that user is active, and what it
may read, is resolved from the directory on every request, whatever the credential says.

The table (``api_tokens``) is created on first write; readers only look for it, so a server
answering requests never takes the index's write lock for authentication.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from clearance.errors import NotFoundError
from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = ["PREFIX", "SCOPES", "ApiToken", "TokenStore", "parse_token"]

#: Every token starts with this, so a leaked one is recognisable (and scannable) as ours.
PREFIX = "clr_"
_TOKEN = re.compile(r"clr_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")

#: What a token may be used for. ``search`` and ``ask`` are the API's reading routes,
#: ``admin`` its administrator routes; ``scim`` is a provisioning credential that reaches
#: ``/scim/v2`` and nothing else, and never goes with another scope.
SCOPES = ("search", "ask", "admin", "scim")
_READER = frozenset({"search", "ask"})

_COLUMNS = "id, user_id, admin, secret_sha256, created_at, expires_at, revoked_at, scopes"


def _scopes_of(admin: bool, stored: str | None) -> frozenset[str]:
    """A token's scopes: as stored, or — for a token made before scopes existed — what it
    could do then (reading, and the administrator routes when ``admin``)."""
    if stored is None:
        return _READER | {"admin"} if admin else _READER
    return frozenset(s for s in stored.split(",") if s)


def check_scopes(scopes: frozenset[str], *, admin: bool) -> None:
    """Refuse a scope set no token may have: an unknown scope, none at all, ``scim`` beside
    another scope, or ``admin`` without the administrator flag (and the reverse)."""
    unknown = sorted(scopes - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope {unknown[0]!r} (known: {', '.join(SCOPES)})")
    if not scopes:
        raise ValueError("a token needs at least one scope")
    if "scim" in scopes and len(scopes) > 1:
        raise ValueError("a 'scim' token provisions only: it cannot have another scope")
    if ("admin" in scopes) != admin:
        raise ValueError("the 'admin' scope and the administrator flag go together")


@dataclass(frozen=True, slots=True)
class ApiToken:
    """One token's record; never holds the secret (nor its hash, outside this module)."""

    id: str
    user_id: str
    admin: bool
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    scopes: frozenset[str] = _READER

    def valid(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "user": self.user_id,
            "admin": self.admin,
            "created": self.created_at.isoformat(),
            "expires": None if self.expires_at is None else self.expires_at.isoformat(),
            "revoked": None if self.revoked_at is None else self.revoked_at.isoformat(),
            "scopes": sorted(self.scopes, key=SCOPES.index),
        }


def parse_token(presented: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed token, else ``None`` (nothing is looked up)."""
    match = _TOKEN.fullmatch(presented)
    return None if match is None else (match.group(1), match.group(2))


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _from_iso(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class TokenStore:
    """Create, list, revoke and verify API tokens in one index file."""

    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    ) -> None:
        self.store = store
        self.clock = clock
        self._has_scopes: bool | None = None

    def _read_columns(self) -> str:
        """The columns to read: an index whose table predates scopes reads none (``NULL``),
        so a server answering requests never writes to authenticate."""
        if self._has_scopes is None and self._scopes_column():
            self._has_scopes = True
        return _COLUMNS if self._has_scopes else _COLUMNS.replace(", scopes", ", NULL")

    def _scopes_column(self) -> bool:
        """Whether the token table has the ``scopes`` column (read, never written)."""
        try:
            with self.store.reading() as db:
                db.execute("SELECT scopes FROM api_tokens LIMIT 0").fetchall()
        except Exception:  # the backend's "no such column", whichever backend
            return False
        return True

    def _exists(self) -> bool:
        return self.store.has_tables("api_tokens")

    def _ensure(self) -> None:
        if not self._exists():
            with self.store.transaction() as db:
                create_table(db, "api_tokens")
            return
        self._add_scopes_column()
        self._has_scopes = True

    def _add_scopes_column(self) -> None:
        """An index whose token table predates scopes gets the column (SQLite; PostgreSQL
        has it from its migrations). Rows without scopes keep what they could do."""
        if not self._scopes_column():
            with self.store.transaction() as db:
                db.execute("ALTER TABLE api_tokens ADD COLUMN scopes TEXT")

    @staticmethod
    def _row(row: tuple[Any, ...]) -> ApiToken:
        created = _from_iso(row[4])
        assert created is not None
        return ApiToken(
            id=row[0],
            user_id=row[1],
            admin=bool(row[2]),
            created_at=created,
            expires_at=_from_iso(row[5]),
            revoked_at=_from_iso(row[6]),
            scopes=_scopes_of(bool(row[2]), row[7]),
        )

    def create(
        self,
        user_id: str,
        *,
        admin: bool = False,
        expires_in_s: float | None = None,
        scopes: frozenset[str] | None = None,
    ) -> tuple[str, ApiToken]:
        """A new token for ``user_id``: ``(the token, its record)``. The token is not
        stored and cannot be recovered: show it to the operator once. ``scopes`` default
        to reading (``search``, ``ask``), and ``admin`` with the administrator flag."""
        if not user_id.strip():
            raise ValueError("a token needs a user id")
        chosen = _scopes_of(admin, None) if scopes is None else frozenset(scopes)
        check_scopes(chosen, admin=admin)
        now = self.clock()
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        expires = None if expires_in_s is None else now + timedelta(seconds=expires_in_s)
        record = ApiToken(token_id, user_id, admin, now, expires, None, chosen)
        self._ensure()
        with self.store.transaction() as db:
            db.execute(
                f"INSERT INTO api_tokens ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                (
                    token_id,
                    user_id,
                    int(admin),
                    _digest(secret),
                    _iso(now),
                    _iso(expires),
                    ",".join(sorted(chosen, key=SCOPES.index)),
                ),
            )
        return f"{PREFIX}{token_id}_{secret}", record

    def list(self) -> list[ApiToken]:
        if not self._exists():
            return []
        with self.store.reading() as db:
            rows = db.execute(
                f"SELECT {self._read_columns()} FROM api_tokens ORDER BY created_at, id"
            )
            return [self._row(tuple(r)) for r in rows.fetchall()]

    def revoke(self, token_id: str) -> ApiToken:
        """Revoke a token (from the next request on); revoking twice keeps the first time."""
        if self._exists():
            with self.store.transaction() as db:
                db.execute(
                    "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    (_iso(self.clock()), token_id),
                )
            row = self._find(token_id)
            if row is not None:
                return self._row(row)
        raise NotFoundError(f"no API token with id {token_id!r}")

    def current(self, token_id: str) -> ApiToken | None:
        """The record of token ``token_id`` if it is unrevoked and unexpired right now: what
        a browser session signed in with this token re-checks on every request."""
        row = self._find(token_id) if self._exists() else None
        return None if row is None else self._live(row)

    def verify(self, presented: str) -> ApiToken | None:
        """The record of a presented token that is well formed, known, matching, unrevoked
        and unexpired right now; ``None`` otherwise (the caller cannot tell which)."""
        parsed = parse_token(presented)
        if parsed is None or not self._exists():
            return None
        token_id, secret = parsed
        row = self._find(token_id)
        if row is None or not hmac.compare_digest(_digest(secret), str(row[3])):
            return None
        return self._live(row)

    def _find(self, token_id: str) -> tuple[Any, ...] | None:
        """The stored row of token ``token_id``, or ``None``."""
        with self.store.reading() as db:
            row = db.execute(
                f"SELECT {self._read_columns()} FROM api_tokens WHERE id = ?", (token_id,)
            ).fetchone()
        return None if row is None else tuple(row)

    def _live(self, row: tuple[Any, ...]) -> ApiToken | None:
        """The record of ``row`` if it is unrevoked and unexpired right now."""
        record = self._row(row)
        return record if record.valid(self.clock()) else None
