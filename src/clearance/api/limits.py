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
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from clearance.api.errors import HttpError
from clearance.config import Rate

__all__ = ["RateLimited", "RateLimiter"]

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
