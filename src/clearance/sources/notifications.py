"""Change notifications: what a source pushes, checked by its connector, queued per source.

A source that can push (Microsoft Graph subscriptions, Google Drive channels, Confluence
webhooks) posts to ``POST /v1/sources/<name>/notifications``. :class:`NotificationReceiver`
hands the request to the source's connector (:class:`~clearance.sources.base.Notifiable`),
which authenticates the sender and says what changed; an accepted notice goes to the
scheduler's :class:`NoticeQueue`, and the request is answered at once — no sync runs while
the sender waits.

What is guaranteed:

* **A refused notification changes nothing.** Only a notice the connector accepted (a status
  below 400) reaches the queue; a refusal never names items (:class:`~clearance.sources.base.
  Notice` enforces it).
* **Nothing is revealed to an unauthenticated sender.** An unknown source, a source whose
  connector takes no notifications and one whose connector cannot be built get the same
  answer (``None`` here, one 404 body at the route).
* **Bursts are coalesced and memory is bounded.** Notices for one source gather for
  ``debounce_s`` after the first (never longer, however many follow) into one targeted sync;
  past :data:`MAX_PENDING_ITEMS` named items, or on a notice that does not say what changed,
  the pending work becomes one full permission sync.
* **Notified work never replaces the scheduled syncs.** The full re-listing on its interval
  stays what advances the corpus's ACL-sync time; a notice only brings a change in sooner.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from clearance.errors import ClearanceError
from clearance.runtime import Runtime
from clearance.sources.base import Notice, Notifiable
from clearance.sources.registry import build_connector

__all__ = [
    "DEBOUNCE_S",
    "MAX_PENDING_ITEMS",
    "NoticeQueue",
    "NotificationReceiver",
    "Pending",
]

log = logging.getLogger("clearance.sources")

#: How long notices for one source gather before their sync runs.
DEBOUNCE_S = 1.0
#: Items one source may have waiting; past it, a full permission sync runs instead.
MAX_PENDING_ITEMS = 10_000


@dataclass(slots=True)
class Pending:
    """One source's notified work: items to re-read (``full``: every item, in a full
    permission sync), whether its content changed too, and when the first notice came."""

    since: datetime
    doc_ids: set[str] = field(default_factory=set)
    full: bool = False
    content: bool = False


class NoticeQueue:
    """Accepted notices per source, coalesced until they are due. Thread-safe: the server's
    request threads add, the scheduler's thread takes."""

    def __init__(self, debounce_s: float = DEBOUNCE_S) -> None:
        self.debounce = timedelta(seconds=debounce_s)
        self._lock = threading.Lock()
        self._pending: dict[str, Pending] = {}

    def add(self, name: str, notice: Notice, now: datetime) -> None:
        if notice.refused or not notice.changes:
            return
        with self._lock:
            pending = self._pending.setdefault(name, Pending(since=now))
            if notice.doc_ids is None:
                pending.full = True
            elif not pending.full:
                pending.doc_ids |= notice.doc_ids
                if len(pending.doc_ids) > MAX_PENDING_ITEMS:
                    pending.full = True
            if pending.full:
                pending.doc_ids.clear()
            pending.content = pending.content or notice.content

    def take_due(self, now: datetime) -> list[tuple[str, Pending]]:
        """The work whose gathering time has passed, removed from the queue (a notice that
        arrives while it runs starts a new gathering)."""
        with self._lock:
            due = sorted(n for n, p in self._pending.items() if p.since + self.debounce <= now)
            return [(name, self._pending.pop(name)) for name in due]

    def next_due(self) -> datetime | None:
        with self._lock:
            return min((p.since + self.debounce for p in self._pending.values()), default=None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


class NotificationReceiver:
    """Checks notifications with each source's connector and forwards accepted ones.

    Connectors that take notifications are built once per source and kept (checking a
    notification must be quick; it never calls the source), and closed by :meth:`close`.
    ``forward(name, notice)`` is the scheduler's :meth:`~clearance.sources.scheduler.
    Scheduler.notify`, set by :meth:`attach` while a scheduler runs."""

    def __init__(self, runtime: Runtime, env: Mapping[str, str] | None = None) -> None:
        self.runtime = runtime
        self.env = env
        self._lock = threading.Lock()
        self._checkers: dict[str, Notifiable | None] = {}
        self._closers: list[Callable[[], None]] = []
        self._forward: Callable[[str, Notice], bool] | None = None

    def attach(self, forward: Callable[[str, Notice], bool] | None) -> None:
        self._forward = forward

    def _checker(self, name: str) -> Notifiable | None:
        source = self.runtime.settings.sources.get(name)
        if source is None:
            return None
        with self._lock:
            if name in self._checkers:
                return self._checkers[name]
            try:
                connector = build_connector(self.runtime.settings, source, self.env)
            except ClearanceError as exc:  # not kept: a fixed environment is picked up
                log.warning("source %s: cannot check notifications: %s", name, exc.message)
                return None
            if isinstance(connector, Notifiable):
                self._checkers[name] = connector
                self._closers.append(connector.close)
            else:
                connector.close()
                self._checkers[name] = None
            return self._checkers[name]

    def receive(
        self, name: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice | None:
        """The connector's notice for one notification, forwarded when it asks for a sync;
        ``None`` when ``name`` takes no notifications. A connector that fails to check it
        refuses it (400); an accepted notice with no scheduler to take it is a 503, which
        senders retry."""
        checker = self._checker(name)
        if checker is None:
            return None
        try:
            notice = checker.notification(headers, query, body)
        except Exception as exc:  # a connector bug refuses the notification, nothing more
            log.warning("source %s: a notification could not be checked: %s", name, exc)
            return Notice.refuse(400, "the notification could not be read")
        if notice.refused or not notice.changes:
            return notice
        forward = self._forward
        if forward is None or not forward(name, notice):
            return Notice.refuse(503, "notifications are not being taken now; retry later")
        return notice

    def close(self) -> None:
        with self._lock:
            closers, self._closers = self._closers, []
            self._checkers.clear()
        for close in closers:
            close()
