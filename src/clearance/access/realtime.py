"""Stage 8 of the request path: ask the source system, per document, "may this user read it now?".

Why this exists: synced ACLs are only as fresh as the last sync. For corpora that demand it
(``realtime_check = true``), the source system is asked at query time, after retrieval and before
anything reaches a prompt, so a permission revoked a second ago is honoured (docs/design.md §1 stage 8, §7).

What is guaranteed (invariant 5, docs/design.md §10):

* **Fail closed.** Only an explicit, well-formed ``true`` from the source system makes a document
  ALLOWED. A ``false`` is DENIED; every other situation — timeout, connection error, non-200 status,
  a reply that is not JSON, has the wrong shape, carries a non-boolean value or leaves the document
  out — is an ERROR. Anything that is not ALLOWED is dropped.
* **No ordinary failure raises.** A :class:`PermissionChecker` reports failures as ERROR results
  with a reason code, one entry for every document it was asked about. :func:`filter_allowed`
  additionally survives a checker that raises or breaks that contract: every affected document is
  dropped, and the fault is logged.
* **Every drop is logged** on the ``clearance.access.realtime`` logger (user id and doc id at INFO;
  no text content exists at this stage).
* **The cache cannot outlive the SLA.** :class:`CachedPermissionChecker` keeps only ALLOWED and
  DENIED answers (never errors), for at most ``ttl_s`` measured from *before* the question was
  asked, and refuses a TTL longer than the corpus revocation SLA it counts against.

Reason codes (stable; traces count drops per reason): ``allowed``, ``denied``, ``timeout``,
``http_<status>``, ``connection_error``, ``request_error``, ``malformed_reply``,
``reply_too_large``, ``missing_from_reply``, ``missing_from_checker``, ``checker_exception``.

Wire format of :class:`HttpPermissionChecker`::

    POST <url>            Content-Type: application/json, Accept-Encoding: identity
    {"user": "<user_id>", "doc_ids": ["<doc_id>", ...]}

    200 OK
    {"decisions": {"<doc_id>": true | false, ...}}
"""

from __future__ import annotations

import enum
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from clearance import jsonio
from clearance.config import CorpusSettings
from clearance.errors import ConfigError
from clearance.lifecycle import Closing

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CachedPermissionChecker",
    "FakePermissionChecker",
    "HttpPermissionChecker",
    "PermissionChecker",
    "RealtimeOutcome",
    "RealtimeResult",
    "checker_for_corpus",
    "filter_allowed",
]

log = logging.getLogger("clearance.access.realtime")

# Reason codes that are not derived from a status code.
REASON_ALLOWED = "allowed"
REASON_DENIED = "denied"
REASON_TIMEOUT = "timeout"
REASON_CONNECTION_ERROR = "connection_error"
REASON_REQUEST_ERROR = "request_error"
REASON_MALFORMED_REPLY = "malformed_reply"
REASON_REPLY_TOO_LARGE = "reply_too_large"
REASON_MISSING_FROM_REPLY = "missing_from_reply"
REASON_MISSING_FROM_CHECKER = "missing_from_checker"
REASON_CHECKER_EXCEPTION = "checker_exception"


class RealtimeOutcome(enum.Enum):
    """What the source system said about one document. Only ALLOWED lets a document through."""

    ALLOWED = "allowed"
    DENIED = "denied"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class RealtimeResult:
    """The outcome for one ``(user, doc)`` pair plus a stable reason code for logs and traces."""

    outcome: RealtimeOutcome
    reason: str

    @property
    def allowed(self) -> bool:
        """True only for ALLOWED: DENIED and ERROR are both drops (fail closed)."""
        return self.outcome is RealtimeOutcome.ALLOWED

    @classmethod
    def allow(cls) -> RealtimeResult:
        return cls(RealtimeOutcome.ALLOWED, REASON_ALLOWED)

    @classmethod
    def deny(cls) -> RealtimeResult:
        return cls(RealtimeOutcome.DENIED, REASON_DENIED)

    @classmethod
    def error(cls, reason: str) -> RealtimeResult:
        return cls(RealtimeOutcome.ERROR, reason)


class PermissionChecker(Protocol):
    """Anything that can ask a source system about documents for one user.

    Contract: return an entry for **every** doc id asked (duplicates collapse to one key), and never
    raise for an ordinary failure (network, timeout, bad reply) — report an ERROR result with a
    reason instead. Callers treat anything not ALLOWED as a drop.
    """

    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]: ...


def _unique(doc_ids: Iterable[str]) -> list[str]:
    """Doc ids once each, in order of first appearance."""
    return list(dict.fromkeys(doc_ids))


def _log_drops(user_id: str, results: Mapping[str, RealtimeResult]) -> None:
    for doc_id, result in results.items():
        if not result.allowed:
            log.info(
                "realtime check %s: user=%s doc=%s reason=%s",
                result.outcome.value,
                user_id,
                doc_id,
                result.reason,
            )


def _missing(checker: object, user_id: str, doc_id: str) -> RealtimeResult:
    """The ERROR for a document ``checker`` gave no result for, logged as a drop."""
    log.warning(
        "realtime checker %s returned no result for a document; dropping it",
        type(checker).__name__,
    )
    result = RealtimeResult.error(REASON_MISSING_FROM_CHECKER)
    _log_drops(user_id, {doc_id: result})
    return result


# --------------------------------------------------------------------------- HTTP


class HttpPermissionChecker(Closing):
    """Asks a source system over HTTP, in one POST per call, with a hard deadline.

    ``timeout_s`` is applied twice: as httpx's per-phase timeout (connect, write, each read, pool)
    and as a deadline for the whole exchange. A reply that completes after the deadline — for
    example a server trickling its body byte by byte — is discarded as ``timeout`` and reading
    stops as soon as the deadline is seen. Wall-clock time is therefore bounded by a small multiple
    of ``timeout_s`` even against a hostile server, and the *result* is never based on an answer
    that took longer than ``timeout_s``.

    Other guarantees: redirects are never followed (a 3xx is ``http_3xx``); the reply body is read
    uncompressed and capped at :attr:`MAX_REPLY_BYTES`; an owned client ignores proxy environment
    variables (the environment is read by ``clearance.config`` only). A client passed in is used as
    is and is not closed by :meth:`close`.
    """

    MAX_REPLY_BYTES = 1 << 20

    def __init__(
        self, url: str, *, timeout_s: float = 1.0, client: httpx.Client | None = None
    ) -> None:
        import httpx  # loaded with the first HTTP checker, not with every command

        if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
            raise ConfigError(
                f"realtime.timeout: must be a positive number of seconds, got {timeout_s!r}"
            )
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise ConfigError(f"realtime.url: not a valid URL: {url!r} ({exc})") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ConfigError(f"realtime.url: expected an http:// or https:// URL, got {url!r}")
        self.url = url
        self.timeout_s = float(timeout_s)
        self._timeout = httpx.Timeout(self.timeout_s)
        self._owns_client = client is None
        self._client = (
            client if client is not None else httpx.Client(trust_env=False, follow_redirects=False)
        )

    def check(self, user_id: str, doc_ids: Sequence[str]) -> dict[str, RealtimeResult]:
        """One POST for all ``doc_ids``; an entry for each of them; never raises on I/O failure."""
        ids = _unique(doc_ids)
        if not ids:
            return {}
        reply = self._ask(user_id, ids)
        results: dict[str, RealtimeResult] = {}
        if isinstance(reply, str):
            log.warning("realtime check failed for %d document(s): reason=%s", len(ids), reply)
            failure = RealtimeResult.error(reply)
            results = dict.fromkeys(ids, failure)
        else:
            for doc_id in ids:
                if doc_id not in reply:
                    results[doc_id] = RealtimeResult.error(REASON_MISSING_FROM_REPLY)
                elif reply[doc_id] is True:
                    results[doc_id] = RealtimeResult.allow()
                elif reply[doc_id] is False:
                    results[doc_id] = RealtimeResult.deny()
                else:
                    results[doc_id] = RealtimeResult.error(REASON_MALFORMED_REPLY)
        _log_drops(user_id, results)
        return results

    def _ask(self, user_id: str, ids: list[str]) -> Mapping[str, Any] | str:
        """The ``decisions`` object of a good reply, or the reason code of a failure."""
        import httpx

        deadline = time.monotonic() + self.timeout_s
        body = bytearray()
        try:
            with self._client.stream(
                "POST",
                self.url,
                json={"user": user_id, "doc_ids": ids},
                headers={"Accept": "application/json", "Accept-Encoding": "identity"},
                timeout=self._timeout,
                follow_redirects=False,
            ) as response:
                if response.status_code != 200:
                    return f"http_{response.status_code}"
                if response.headers.get("content-encoding", "identity").lower() != "identity":
                    return REASON_MALFORMED_REPLY
                # Identity-encoded (checked above), so decoded bytes are the wire bytes.
                for chunk in response.iter_bytes():
                    body += chunk
                    if time.monotonic() > deadline:
                        return REASON_TIMEOUT
                    if len(body) > self.MAX_REPLY_BYTES:
                        return REASON_REPLY_TOO_LARGE
        except httpx.TimeoutException:
            return REASON_TIMEOUT
        except httpx.TransportError:
            return REASON_CONNECTION_ERROR
        except (httpx.HTTPError, httpx.StreamError):
            return REASON_REQUEST_ERROR
        if time.monotonic() > deadline:
            return REASON_TIMEOUT
        try:
            payload = jsonio.loads(bytes(body))
        except jsonio.JSONInputError:
            return REASON_MALFORMED_REPLY
        if not isinstance(payload, dict):
            return REASON_MALFORMED_REPLY
        decisions = payload.get("decisions")
        if not isinstance(decisions, dict):
            return REASON_MALFORMED_REPLY
        return decisions

    def close(self) -> None:
        """Close the HTTP client if this checker created it."""
        if self._owns_client:
            self._client.close()


# --------------------------------------------------------------------------- cache


@dataclass(frozen=True, slots=True)
class _Entry:
    asked_at: float
    result: RealtimeResult


class CachedPermissionChecker(Closing):
    """A short-TTL, bounded LRU cache of real-time answers in front of any checker.

    Why: a page of results often names the same documents again within seconds; asking the source
    system each time costs latency and load. The TTL counts against the corpus revocation SLA
    (docs/design.md §7), so construction refuses ``ttl_s > sla_s``.

    Guarantees: only ALLOWED and DENIED are cached — an ERROR is asked again next time; entries are
    keyed by ``(user_id, doc_id)`` so one user's answer never serves another; an entry's age is
    measured from the clock reading taken *before* the inner checker was asked (conservative), and
    an entry is used only while ``asked_at <= now < asked_at + ttl_s`` (a clock that jumps backwards
    does not extend it); uncached ids go to the inner checker in a single call; at most
    ``max_entries`` are kept, least recently used evicted first. ``ttl_s = 0`` disables caching.
    Safe to share between threads. An exception from the inner checker propagates unchanged
    (:func:`filter_allowed` turns it into drops); a missing entry becomes ERROR
    ``missing_from_checker``.
    """

    def __init__(
        self,
        inner: PermissionChecker,
        *,
        sla_s: float,
        ttl_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 10_000,
    ) -> None:
        if not (isinstance(ttl_s, int | float) and 0 <= ttl_s <= sla_s):
            raise ConfigError(
                f"realtime.cache_ttl: {ttl_s!r}s must be between 0 and the corpus revocation_sla "
                f"of {sla_s!r}s, which it counts against"
            )
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries <= 0:
            raise ConfigError(
                f"realtime cache max_entries: must be a positive integer, got {max_entries!r}"
            )
        self._inner = inner
        self.ttl_s = float(ttl_s)
        self.sla_s = float(sla_s)
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def check(self, user_id: str, doc_ids: Sequence[str]) -> dict[str, RealtimeResult]:
        """Serve fresh cached answers; ask the inner checker once for the rest."""
        ids = _unique(doc_ids)
        now = self._clock()
        results: dict[str, RealtimeResult] = {}
        uncached: list[str] = []
        with self._lock:
            for doc_id in ids:
                hit = self._lookup((user_id, doc_id), now)
                if hit is None:
                    uncached.append(doc_id)
                else:
                    results[doc_id] = hit
        if uncached:
            fetched = self._inner.check(user_id, uncached)
            with self._lock:
                for doc_id in uncached:
                    result = fetched.get(doc_id)
                    if not isinstance(result, RealtimeResult):
                        result = _missing(self._inner, user_id, doc_id)
                    results[doc_id] = result
                    if result.outcome is not RealtimeOutcome.ERROR and self.ttl_s > 0:
                        self._store((user_id, doc_id), _Entry(now, result))
        return {doc_id: results[doc_id] for doc_id in ids}

    def _lookup(self, key: tuple[str, str], now: float) -> RealtimeResult | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.asked_at <= now < entry.asked_at + self.ttl_s:
            self._entries.move_to_end(key)
            return entry.result
        del self._entries[key]
        return None

    def _store(self, key: tuple[str, str], entry: _Entry) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every cached answer (e.g. after a revocation event from the source system)."""
        with self._lock:
            self._entries.clear()

    def close(self) -> None:
        """Close the inner checker if it can be closed."""
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()


# --------------------------------------------------------------------------- fake


class FakePermissionChecker:
    """A scriptable in-process checker for unit tests of the stages around stage 8.

    ``decisions[(user, doc)]`` is the source system's answer; a pair that is not scripted is
    DENIED (default deny). A doc id in ``errors`` is an ERROR with ``error_reason`` for every user.
    Every call is recorded in :attr:`calls` as ``(user_id, tuple(doc_ids))``.
    """

    def __init__(
        self,
        decisions: Mapping[tuple[str, str], bool] | None = None,
        *,
        errors: Iterable[str] = (),
        error_reason: str = REASON_CONNECTION_ERROR,
    ) -> None:
        self.decisions: dict[tuple[str, str], bool] = dict(decisions or {})
        self.errors: set[str] = set(errors)
        self.error_reason = error_reason
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def check(self, user_id: str, doc_ids: Sequence[str]) -> dict[str, RealtimeResult]:
        self.calls.append((user_id, tuple(doc_ids)))
        results: dict[str, RealtimeResult] = {}
        for doc_id in _unique(doc_ids):
            if doc_id in self.errors:
                results[doc_id] = RealtimeResult.error(self.error_reason)
            elif self.decisions.get((user_id, doc_id)) is True:
                results[doc_id] = RealtimeResult.allow()
            else:
                results[doc_id] = RealtimeResult.deny()
        return results


# --------------------------------------------------------------------------- stage 8 entry points


def filter_allowed(
    checker: PermissionChecker, user_id: str, doc_ids: Sequence[str]
) -> tuple[list[str], dict[str, RealtimeResult]]:
    """Split ``doc_ids`` into the ALLOWED ones (input order, each once) and the dropped ones.

    This is the fail-closed boundary of stage 8: whatever the checker does — returns DENIED or
    ERROR, leaves a document out, returns something that is not a result, or raises — the document
    is dropped with a reason. A raising checker drops every document with ``checker_exception`` and
    is logged with its traceback; the exception never propagates into the request.
    """
    ids = _unique(doc_ids)
    if not ids:
        return [], {}
    try:
        results = checker.check(user_id, ids)
        resolved: dict[str, object] = {doc_id: results.get(doc_id) for doc_id in ids}
    except Exception:
        log.exception(
            "realtime checker %s raised; dropping all %d document(s) (reason=%s)",
            type(checker).__name__,
            len(ids),
            REASON_CHECKER_EXCEPTION,
        )
        failure = RealtimeResult.error(REASON_CHECKER_EXCEPTION)
        dropped = dict.fromkeys(ids, failure)
        _log_drops(user_id, dropped)
        return [], dropped
    allowed: list[str] = []
    dropped = {}
    for doc_id in ids:
        result = resolved[doc_id]
        if not isinstance(result, RealtimeResult):
            result = _missing(checker, user_id, doc_id)
        if result.allowed:
            allowed.append(doc_id)
        else:
            dropped[doc_id] = result
    return allowed, dropped


def checker_for_corpus(
    settings: CorpusSettings,
    *,
    client: httpx.Client | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> CachedPermissionChecker | None:
    """The stage-8 checker a corpus asks for, or ``None`` when it needs no real-time check.

    Builds ``CachedPermissionChecker(HttpPermissionChecker(url, timeout_s), ttl_s=cache_ttl_s,
    sla_s=revocation_sla_s)``. The caller owns the result and must ``close()`` it (or use it as a
    context manager). Misconfiguration raises :class:`ConfigError` naming the corpus key.
    """
    if not settings.realtime_check:
        return None
    rt = settings.realtime
    prefix = f"corpora.{settings.name}.realtime"
    if not rt.url:
        raise ConfigError(f"{prefix}.url: required when realtime_check = true")
    try:
        inner = HttpPermissionChecker(rt.url, timeout_s=rt.timeout_s, client=client)
    except ConfigError as exc:
        raise ConfigError(f"corpora.{settings.name}.{exc.message}") from None
    try:
        return CachedPermissionChecker(
            inner, ttl_s=rt.cache_ttl_s, sla_s=settings.revocation_sla_s, clock=clock
        )
    except ConfigError as exc:
        inner.close()
        raise ConfigError(f"corpora.{settings.name}.{exc.message}") from None
