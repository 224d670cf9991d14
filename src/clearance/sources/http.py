"""What every HTTP connector shares: retries, paging and a concurrency limit.

Source APIs throttle (429 with ``Retry-After``), fail transiently (502/503/504, reset
connections) and page their results. Each connector handling that on its own would get it
subtly wrong somewhere, so :class:`SourceClient` does it once:

* **Bounded retries.** A 429, a 5xx or a transport error (timeout, refused or reset
  connection) is retried up to ``max_retries`` times, and so is a response the connector's
  ``retryable`` recognises as throttling (Google answers some rate limits with 403); every
  other status fails at once.
* **Retry-After honoured, within the SLA.** A ``Retry-After`` (seconds or an HTTP date) is
  waited for as long as the source's :class:`ThrottleBudget` allows: during a permission
  sync, until the moment its result would already be past the corpus's revocation SLA
  (waiting longer cannot produce a fresh corpus); during a content sync, at most one
  permission interval, so content work never holds the next permission sync back by more.
  A source asking for longer fails the sync at once, saying so. Every wait is counted in
  the budget, and the sync report says how long the source held it back. Outside a sync
  (no budget begun) the limit is ``max_retry_after_s``.
  Without one, the wait is exponential backoff with full jitter (``backoff_s · 2ⁿ``, capped
  at ``max_backoff_s``), so many workers do not retry in lockstep.
* **Concurrency limit.** At most ``max_concurrency`` requests of one source are in flight at
  once, whichever threads send them (``[sources.<name>] max_concurrency``);
  :meth:`SourceClient.map` runs a function over many items inside that limit.
* **Paging.** :meth:`SourceClient.pages` follows next links (``@odata.nextLink``,
  ``nextPageToken``, ``_links.next`` — the connector says where) and refuses a link it has
  already followed, so a looping API cannot keep a sync running forever.
* **Errors.** Everything that goes wrong becomes a :class:`~clearance.errors.SourceError`
  naming the method, the URL without its query string (queries can carry tokens) and the
  status. Credentials travel in :class:`BearerAuth`, revealed only into the request header;
  no header, body or query string is ever put in an error or a log line.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from clearance.errors import SourceError
from clearance.secrets import Secret

__all__ = ["BearerAuth", "SourceClient", "ThrottleBudget", "retry_after_seconds", "throttle_budget"]

T = TypeVar("T")
R = TypeVar("R")

_RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class BearerAuth(httpx.Auth):
    """``Authorization: Bearer <secret>`` (or another ``scheme``: Okta's ``SSWS``), revealed
    at the last moment, per request."""

    def __init__(self, token: Secret, scheme: str = "Bearer") -> None:
        self._token = token
        self._scheme = scheme

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"{self._scheme} {self._token.reveal()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(Secret('****'))"


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header (delay-seconds or an HTTP date) in seconds, or ``None``
    when absent or unreadable. A date in the past means "now" (0)."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _shown_url(url: httpx.URL | str) -> str:
    """The URL for an error message: scheme, host and path, never the query or userinfo."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class ThrottleBudget:
    """How long one source's throttling may hold its syncs back, shared by every client of
    that source in the process (content and permission work draw on the same quota at the
    source, so they draw on the same budget here).

    The sync engine calls :meth:`begin` when a sync starts: ``limit_s`` is the longest the
    sync may still wait in all. Clients ask :meth:`allow` before each wait and
    :meth:`record` it after; :meth:`end` returns what the sync waited."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._started = 0.0
        self._limit_s: float | None = None
        self._kind = ""
        self.waits = 0
        self.waited_s = 0.0
        self.longest_s = 0.0

    def begin(self, kind: str, limit_s: float) -> None:
        with self._lock:
            self._kind = kind
            self._started = self._monotonic()
            self._limit_s = max(0.0, limit_s)
            self.waits, self.waited_s, self.longest_s = 0, 0.0, 0.0

    def end(self) -> tuple[int, float, float]:
        """``(waits, seconds waited, longest wait)`` of the sync that began last."""
        with self._lock:
            self._limit_s = None
            return self.waits, self.waited_s, self.longest_s

    def remaining(self) -> float | None:
        """Seconds the running sync may still wait, or ``None`` outside a sync. Time spent
        is what the clock says, or what was waited if more (a wait is at least its length)."""
        with self._lock:
            if self._limit_s is None:
                return None
            spent = max(self._monotonic() - self._started, self.waited_s)
            return max(0.0, self._limit_s - spent)

    def describe(self) -> str:
        return f"the {self._kind} sync's throttling budget" if self._kind else "the budget"

    def record(self, seconds: float) -> None:
        with self._lock:
            self.waits += 1
            self.waited_s += seconds
            self.longest_s = max(self.longest_s, seconds)


_BUDGETS: dict[str, ThrottleBudget] = {}
_BUDGETS_LOCK = threading.Lock()


def throttle_budget(source: str) -> ThrottleBudget:
    """The process-wide :class:`ThrottleBudget` of the source named ``source``."""
    with _BUDGETS_LOCK:
        return _BUDGETS.setdefault(source, ThrottleBudget())


class SourceClient:
    """An ``httpx.Client`` for one source, with the guarantees of the module docstring.

    ``sleep`` and ``random`` are injectable so tests run retries without waiting; the
    counters (``requests``, ``retries``) feed sync statistics and benchmarks."""

    def __init__(
        self,
        base_url: str = "",
        *,
        source: str,
        auth: httpx.Auth | None = None,
        headers: Mapping[str, str] | None = None,
        max_concurrency: int = 4,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        timeout: httpx.Timeout | float = _TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = random.random,
        retryable: Callable[[httpx.Response], bool] | None = None,
    ) -> None:
        self.source = source
        self._retryable = retryable
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.max_concurrency = max_concurrency
        self._sleep = sleep
        self._random = random
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._counter_lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self._client = httpx.Client(
            base_url=base_url,
            auth=auth,
            headers=dict(headers or {}),
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
            trust_env=False,  # a proxy from the environment must not see source credentials
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SourceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send one request with retries; return a 2xx response or raise ``SourceError``."""
        attempt = 0
        failure = ""
        while True:
            with self._slots:
                self._count("requests")
                try:
                    response = self._client.request(method, url, **kwargs)
                    response.read()
                except httpx.TransportError as exc:
                    failure = f"{type(exc).__name__}"
                    response = None
                except httpx.HTTPError as exc:  # an invalid URL or request: not transient
                    raise SourceError(
                        f"source {self.source!r}: {method} {_shown_url(url)}: {exc}"
                    ) from exc
            if response is not None and response.is_success:
                return response
            if response is not None and not self._transient(response):
                raise self._refused(method, response)
            if attempt >= self.max_retries:
                what = failure if response is None else f"HTTP {response.status_code}"
                raise SourceError(
                    f"source {self.source!r}: {method} {_shown_url(url)} failed "
                    f"({what}) after {attempt + 1} attempts",
                    status=None if response is None else response.status_code,
                )
            self._sleep(self._wait(attempt, response, method, url))
            self._count("retries")
            attempt += 1

    def _transient(self, response: httpx.Response) -> bool:
        if response.status_code in _RETRIED_STATUSES:
            return True
        return self._retryable is not None and self._retryable(response)

    def _count(self, name: str) -> None:
        with self._counter_lock:
            setattr(self, name, getattr(self, name) + 1)

    def _wait(self, attempt: int, response: httpx.Response | None, method: str, url: str) -> float:
        asked = (
            None if response is None else retry_after_seconds(response.headers.get("Retry-After"))
        )
        budget = throttle_budget(self.source)
        remaining = budget.remaining()
        if asked is not None:
            limit = self.max_retry_after_s if remaining is None else remaining
            if asked > limit:
                within = (
                    f"longer than {limit:g}s"
                    if remaining is None
                    else f"longer than the {limit:.0f}s left in {budget.describe()} "
                    "(the revocation SLA)"
                )
                raise SourceError(
                    f"source {self.source!r}: {method} {_shown_url(url)}: the source asked to "
                    f"wait {asked:g}s (Retry-After), {within}"
                )
            budget.record(asked)
            return asked
        ceiling = min(self.max_backoff_s, self.backoff_s * (2.0**attempt))
        wait = ceiling * self._random()
        if remaining is not None:
            wait = min(wait, remaining)
        budget.record(wait)
        return wait

    def _refused(self, method: str, response: httpx.Response) -> SourceError:
        status = response.status_code
        hint = ""
        if status in (401, 403):
            hint = (
                ": credentials refused or lacking permission (docs/sources.md lists what it needs)"
            )
        elif status == 404:
            hint = ": not found"
        return SourceError(
            f"source {self.source!r}: {method} {_shown_url(response.request.url)}: "
            f"HTTP {status}{hint}",
            status=status,
        )

    def get_json(self, url: str, **kwargs: Any) -> Any:
        """GET ``url`` and parse its JSON body (``SourceError`` when it is not JSON)."""
        response = self.request("GET", url, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise SourceError(
                f"source {self.source!r}: GET {_shown_url(response.request.url)}: "
                "the response is not JSON"
            ) from exc

    # ------------------------------------------------------------------ paging

    def pages(
        self,
        url: str,
        next_request: Callable[[Any], tuple[str, Mapping[str, Any] | None] | None],
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        max_pages: int = 1_000_000,
    ) -> Iterator[Any]:
        """JSON bodies of ``url`` and of every page after it, each asked with ``headers``.

        ``next_request(body)`` returns ``(url, params)`` of the next page — an absolute next
        link with ``None`` params (``@odata.nextLink``) or the same URL with a page token —
        or ``None`` after the last page. A page requested twice is a loop: ``SourceError``."""
        seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
        current: tuple[str, Mapping[str, Any] | None] | None = (url, params)
        count = 0
        while current is not None:
            page_url, page_params = current
            key = (page_url, tuple(sorted((k, str(v)) for k, v in (page_params or {}).items())))
            if key in seen:
                raise SourceError(
                    f"source {self.source!r}: {_shown_url(page_url)} returned a next page it "
                    "had already returned (the listing loops)"
                )
            seen.add(key)
            count += 1
            if count > max_pages:
                raise SourceError(f"source {self.source!r}: more than {max_pages} pages")
            body = self.get_json(
                page_url, params=dict(page_params) if page_params else None, headers=headers
            )
            yield body
            current = next_request(body)

    # ------------------------------------------------------------------ concurrency

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[function(item) for item in items]`` on up to ``max_concurrency`` threads, in
        order. The first exception is raised once every started call has ended."""
        listed = list(items)
        if len(listed) <= 1 or self.max_concurrency == 1:
            return [function(item) for item in listed]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(function, listed))
