"""Per-user rate limits: ``[server] rate_limit = "60/m"``, a token bucket per signed-in user.

Why per user and not per address: behind a reverse proxy every caller shares one address,
and a user must not be able to exhaust another user's allowance (nor escape their own by
moving). The key is the user id an authenticator vouched for, so an unauthenticated request
is refused (401) before it can touch any bucket, and the probes (``/healthz``, ``/readyz``),
which need no sign-in, are never limited.

What is guaranteed:

* each user starts with ``count`` requests and regains them evenly over ``per_s`` seconds;
* a refused request takes nothing from the bucket and says, in ``Retry-After``, the whole
  number of seconds after which one request will be admitted again (at least 1);
* buckets are shared safely between the server's threads (one lock; the work under it is a
  few arithmetic operations), and buckets that have refilled completely are forgotten, so
  memory stays bounded by the users active within one period.

:class:`RateLimiter` keeps its buckets in the process. The server uses
:class:`SharedRateLimiter`, the same bucket kept in the index, so one allowance covers the
API, the browser UI and MCP, in every ``clearance serve`` worker and in a ``clearance mcp``
process on the same index:

* each check is one small write transaction — an atomic upsert of the key's row, refused
  or admitted by the database under that row's lock (SQLite: the file's write lock), so
  two processes can never both take the last request;
* the row holds one number, the bucket's *theoretical arrival time* (GCRA, which admits
  exactly what the token bucket above admits); the key is stored as its SHA-256, and a row
  whose time has passed is a full bucket, so such rows are deleted now and then;
* the clock is the host's wall clock: processes on several hosts (PostgreSQL) must keep
  their clocks in step, as they already must for token expiry.

Sign-in attempts (``[server] signin_rate_limit``) are counted per client address
(:func:`client_address`), in the same table under their own keys.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from clearance.api.auth import Network, in_networks, ip_address
from clearance.api.errors import HttpError
from clearance.config import Rate
from clearance.store.side_tables import create_table

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = [
    "Limiter",
    "RateLimited",
    "RateLimiter",
    "SharedRateLimiter",
    "client_address",
    "limiter_of",
    "signin_key",
    "user_key",
]

#: Buckets kept before full ones are swept.
SWEEP_AT = 4096


class RateLimited(HttpError):
    """429: the caller's allowance is used up; ``retry_after`` seconds until the next."""

    status = 429
    code = "rate_limited"

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many requests; retry after {retry_after} s")
        self.retry_after = retry_after


class RateLimiter:
    """Token buckets keyed by an opaque string (the user id); see the module docstring."""

    def __init__(
        self,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.monotonic,
        key: Callable[[str, str | None], str] = lambda user_id, peer: user_id,
    ) -> None:
        self.rate = rate
        self.key = key
        self._refill_per_s = rate.count / rate.per_s
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, updated at)

    def admit(self, user_id: str, peer: str | None) -> None:
        """Take one request from the caller's bucket (keyed by ``key(user_id, peer)``: the
        user id), or raise :class:`RateLimited`."""
        self.check(self.key(user_id, peer))

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket, or raise :class:`RateLimited`."""
        with self._lock:
            now = self._clock()
            tokens, updated = self._buckets.get(key, (float(self.rate.count), now))
            tokens = min(float(self.rate.count), tokens + (now - updated) * self._refill_per_s)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self._refill_per_s
                raise RateLimited(max(1, math.ceil(wait)))
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > SWEEP_AT:
                self._sweep(now)

    def _sweep(self, now: float) -> None:
        """Forget buckets that are full again: they are indistinguishable from new ones."""
        full = float(self.rate.count)
        self._buckets = {
            k: (t, u)
            for k, (t, u) in self._buckets.items()
            if t + (now - u) * self._refill_per_s < full
        }


def limiter_of(store: Store, rate: Rate | None) -> SharedRateLimiter | None:
    """A :class:`SharedRateLimiter` of ``rate`` in ``store``; ``None`` when no rate is set."""
    return None if rate is None else SharedRateLimiter(store, rate)


class Limiter(Protocol):
    """What the doors ask of a limiter: one request taken for a key, or :class:`RateLimited`."""

    def admit(self, user_id: str, peer: str | None) -> None: ...

    def check(self, key: str) -> None: ...


def user_key(user_id: str, peer: str | None = None) -> str:
    """The key of a signed-in user's allowance: the same for every door and process."""
    return f"user:{user_id}"


def signin_key(address: str) -> str:
    """The key of the sign-in attempts from one client address."""
    return f"signin:{address}"


# GCRA in one statement: a new key is admitted (its bucket is full); a known one is admitted
# while its arrival time is at most `tolerance` ahead of now, and then moves one interval on.
# A refusal updates nothing and so returns no row.
_TAKE = (
    "INSERT INTO rate_limits (key, tat) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET "
    "tat = (CASE WHEN rate_limits.tat > ? THEN rate_limits.tat ELSE ? END) + ? "
    "WHERE rate_limits.tat - ? <= ? "
    "RETURNING tat"
)


class SharedRateLimiter:
    """The token bucket of :class:`RateLimiter`, kept in the index's ``rate_limits`` table
    so that every process on the index shares it; see the module docstring."""

    def __init__(
        self,
        store: Store,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.time,
        key: Callable[[str, str | None], str] = user_key,
    ) -> None:
        self.store = store
        self.rate = rate
        self.key = key
        self._clock = clock
        self._interval = rate.per_s / rate.count
        # The last of `count` requests sent at one instant lands exactly on the tolerance;
        # a rounding error in the sum of intervals must not refuse it.
        self._tolerance = rate.per_s - self._interval + 1e-6
        self._ready = False
        self._swept_at = 0.0

    def admit(self, user_id: str, peer: str | None) -> None:
        """Take one request from the caller's bucket (keyed by ``key(user_id, peer)``), or
        raise :class:`RateLimited`."""
        self.check(self.key(user_id, peer))

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket, or raise :class:`RateLimited`. Nothing is
        raised inside the transaction: a refusal commits too (it wrote nothing)."""
        self._ensure()
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        now = self._clock()
        interval, tolerance = self._interval, self._tolerance
        with self.store.transaction() as db:
            if now - self._swept_at >= self.rate.per_s:
                db.execute("DELETE FROM rate_limits WHERE tat < ?", (now,))
                self._swept_at = now
            taken = db.execute(
                _TAKE, (digest, now + interval, now, now, interval, now, tolerance)
            ).fetchall()
            tat = None
            if not taken:
                row = db.execute("SELECT tat FROM rate_limits WHERE key = ?", (digest,)).fetchone()
                tat = None if row is None else float(row[0])
        if tat is not None:
            raise RateLimited(max(1, math.ceil(tat - now - tolerance)))

    def _ensure(self) -> None:
        """Create the table once (the PostgreSQL schema has it from its migrations)."""
        if not self._ready:
            if not self.store.has_tables("rate_limits"):
                with self.store.transaction() as db:
                    create_table(db, "rate_limits")
            self._ready = True


def client_address(headers: Mapping[str, str], peer: str | None, proxies: Sequence[Network]) -> str:
    """The client address a sign-in attempt counts against: the TCP peer, unless that peer is
    one of ``[server] trusted_proxies`` — then the nearest ``X-Forwarded-For`` hop that is not
    a trusted proxy. Hops a client wrote itself lie to the left of the first untrusted one and
    are never read; a hop that is not an address stops the walk at the proxy before it."""
    parsed = ip_address(peer)
    address = str(parsed) if parsed is not None else peer or ""
    hops = [h.strip() for h in headers.get("x-forwarded-for", "").split(",") if h.strip()]
    while in_networks(address, proxies) and hops:
        hop = ip_address(hops.pop())
        if hop is None:
            break
        address = str(hop)
    return address
