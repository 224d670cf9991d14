"""The scheduler: every configured source synced on its own intervals, for as long as it runs.

``clearance sync --watch`` runs it in the foreground; ``clearance serve`` runs the same one
on a background thread when sources are configured. Each source has two clocks: permissions
every ``permission_interval`` (shorter than its corpus's revocation SLA, which the
configuration enforces) and content every ``content_interval``. A sync that fails is tried
again at its next interval, and the source is reported failing until one succeeds; the
corpus's ACL-sync time is not advanced meanwhile, so a source that stops answering makes its
corpus fail closed once the SLA has passed — never serve permissions nobody re-read.

Change notifications (:mod:`clearance.sources.notifications`) bring a change in sooner:
:meth:`Scheduler.notify` queues a source's accepted notice and wakes the loop at once; notices
gather for ``debounce_s`` after the first into one targeted permission sync (or one full
permission sync, when a notice did not say what changed), which runs before any scheduled
sync of the tick and again between sources' scheduled syncs. A notice that says content
changed too makes the source's content sync due after that permission work. The scheduled
syncs run on their intervals regardless: notified work is never what keeps a corpus serving.

Directory sources (``[directories.<name>]``) are read every ``interval`` at the start of a
tick, before any document source, so the ACLs synced after them resolve against the newest
directory; a failed read leaves the directory in place and is tried again at the next interval
(past its ``sla`` the directory fails closed, :mod:`clearance.sources.directory.service`).

The clock, and the wait between ticks, are injectable: tests drive :meth:`Scheduler.tick`
with a clock they move themselves and never sleep.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from clearance.errors import ClearanceError
from clearance.runtime import Runtime
from clearance.sources.base import Notice
from clearance.sources.directory.base import DirectoryReader
from clearance.sources.directory.service import DirectorySyncReport, sync_directory_source
from clearance.sources.notifications import DEBOUNCE_S, NoticeQueue, Pending
from clearance.sources.service import (
    notified_sync,
    renew_subscription,
    subscription_due,
    sync_source,
)
from clearance.sources.sync import Kind, SyncReport

__all__ = ["BackgroundScheduler", "Scheduler"]

log = logging.getLogger("clearance.sources")

#: The longest the loop sleeps, so a stop request or a clock change is noticed.
_MAX_WAIT_S = 30.0
#: How long after a failed subscription attempt the next one is made.
_SUBSCRIBE_RETRY = timedelta(minutes=5)


class Scheduler:
    """Decides which syncs are due and runs them, one at a time."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        sources: Sequence[str] | None = None,
        clock: Callable[[], datetime] | None = None,
        on_report: Callable[[SyncReport], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
        debounce_s: float = DEBOUNCE_S,
    ) -> None:
        self.runtime = runtime
        self.names = list(sources if sources is not None else sorted(runtime.settings.sources))
        self.clock = clock or runtime.clock
        self.on_report = on_report
        self.on_progress = on_progress
        self.notices = NoticeQueue(debounce_s)
        self._next: dict[tuple[str, Kind], datetime] = {}
        self.directories = sorted(runtime.settings.directories) if sources is None else []
        self._next_directory: dict[str, datetime] = {}
        self._directory_readers: dict[str, DirectoryReader] = {}  # kept: delta readers' state
        self.directory_reports: list[DirectorySyncReport] = []  # the last tick's
        self._subscribe_after: dict[str, datetime] = {}  # after a failed attempt
        self._wake = threading.Event()
        self._notice = threading.Event()

    def notify(self, name: str, notice: Notice) -> bool:
        """Queue an accepted notice for source ``name`` and wake the loop; false when this
        scheduler does not sync ``name``. Safe to call from any thread."""
        if name not in self.names:
            return False
        self.notices.add(name, notice, self.clock())
        self._wake.set()
        self._notice.set()
        return True

    def wake(self) -> None:
        """End the loops' current waits now."""
        self._wake.set()
        self._notice.set()

    def _interval(self, name: str, kind: Kind) -> timedelta:
        source = self.runtime.settings.sources[name]
        seconds = source.content_interval_s if kind == "content" else source.permission_interval_s
        return timedelta(seconds=seconds)

    def due(self, now: datetime) -> list[tuple[str, Kind]]:
        """The syncs whose time has come; every sync is due at the first tick."""
        kinds: tuple[Kind, ...] = ("content", "permissions")
        return [
            (name, kind)
            for name in self.names
            for kind in kinds
            if self._next.get((name, kind), now) <= now
        ]

    def tick(self) -> list[SyncReport]:
        """Run notified work that is due, then every due sync (content before permissions,
        per source, with notified work that came due in between), and schedule the next."""
        reports = self._notified()
        now = self.clock()
        self._directories(now)
        self._subscriptions(now)
        due = self.due(now)
        for name in self.names:
            kinds = [kind for n, kind in due if n == name]
            if not kinds:
                continue
            for kind in kinds:
                self._next[(name, kind)] = now + self._interval(name, kind)
            done = self._sync(name, kinds, now)
            self._report(done)
            reports.extend(done)
            reports.extend(self._notified())
        return reports

    def _directories(self, now: datetime) -> None:
        """Read every directory source that is due; a failure is logged, never raised."""
        self.directory_reports = []
        for name in self.directories:
            if self._next_directory.get(name, now) > now:
                continue
            interval = self.runtime.settings.directories[name].interval_s
            self._next_directory[name] = now + timedelta(seconds=interval)
            report = sync_directory_source(self.runtime, name, keep=self._directory_readers)
            self.directory_reports.append(report)
            if report.ok:
                log.info(
                    "directory source %s: %d users, %d groups", name, report.users, report.groups
                )
            else:
                log.warning("directory source %s: sync failed: %s", name, report.error)

    def close_directory_readers(self) -> None:
        """Close the directory readers kept between syncs (when the scheduler stops)."""
        readers, self._directory_readers = self._directory_readers, {}
        for reader in readers.values():
            reader.close()

    def _subscriptions(self, now: datetime) -> None:
        """Create or renew the notification subscriptions that are due. A failure is logged
        and tried again after :data:`_SUBSCRIBE_RETRY`; the scheduled syncs go on meanwhile."""
        for name in self.names:
            if self._subscribe_after.get(name, now) > now:
                continue
            if not subscription_due(self.runtime, name, now):
                continue
            try:
                made = renew_subscription(self.runtime, name)
            except ClearanceError as exc:
                log.warning("source %s: notification subscription: %s", name, exc.message)
                self._subscribe_after[name] = now + _SUBSCRIBE_RETRY
                continue
            if made is None:  # the operator registers this source's webhook
                self._subscribe_after[name] = now + timedelta(days=365)
            else:
                log.info("source %s: notifications until %s", name, made.expires_at.isoformat())

    def _notified(self) -> list[SyncReport]:
        """Run the notified work whose gathering time has passed, and report it."""
        now = self.clock()
        reports: list[SyncReport] = []
        for name, pending in self.notices.take_due(now):
            reports.append(self._notified_sync(name, pending, now))
            if pending.content:
                self._next[(name, "content")] = now
                self._wake.set()
        self._report(reports)
        return reports

    def _notified_sync(self, name: str, pending: Pending, now: datetime) -> SyncReport:
        doc_ids = None if pending.full else sorted(pending.doc_ids)
        try:
            return notified_sync(self.runtime, name, doc_ids, on_progress=self.on_progress)
        except ClearanceError as exc:
            kind: Kind = "permissions" if doc_ids is None else "notified"
            return _failed(name, [kind], now, exc)[0]

    def _report(self, reports: list[SyncReport]) -> None:
        for report in reports:
            if self.on_report is not None:
                self.on_report(report)

    def _sync(self, name: str, kinds: list[Kind], now: datetime) -> list[SyncReport]:
        try:
            return sync_source(
                self.runtime,
                name,
                content="content" in kinds,
                permissions="permissions" in kinds,
                on_progress=self.on_progress,
            )
        except ClearanceError as exc:  # the connector could not be built: recorded failing
            return _failed(name, kinds, now, exc)

    def next_due(self) -> datetime | None:
        times = [*self._next.values(), *self._next_directory.values()]
        notified = self.notices.next_due()
        if notified is not None:
            times.append(notified)
        return min(times, default=None)

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop`` is set, sleeping until the next sync is due in between; a
        notice (or :meth:`wake`) ends the sleep at once."""
        self._loop(stop, self._wake, self.tick, self.next_due)

    def run_notified(self, stop: threading.Event) -> None:
        """Run notified work as it comes due until ``stop`` is set — beside :meth:`run`, so
        that a notice need not wait for a long scheduled sync to end. (The engine applies one
        source's syncs in turn, and a full sync never overwrites what a notified sync read
        after it began.)"""
        self._loop(stop, self._notice, self._notified, self.notices.next_due)

    def _loop(
        self,
        stop: threading.Event,
        woken: threading.Event,
        step: Callable[[], object],
        next_due: Callable[[], datetime | None],
    ) -> None:
        """``step`` until ``stop`` is set, sleeping until ``next_due`` (at most
        :data:`_MAX_WAIT_S`) in between, or until ``woken`` is set."""
        while not stop.is_set():
            woken.clear()
            step()
            following = next_due()
            wait = _MAX_WAIT_S if following is None else (following - self.clock()).total_seconds()
            if not stop.is_set():
                woken.wait(min(max(wait, 0.0), _MAX_WAIT_S))


class BackgroundScheduler:
    """:class:`Scheduler` on daemon threads (``clearance serve``): one for the scheduled
    syncs, one for notified work; :meth:`stop` ends them after the syncs in progress."""

    def __init__(self, runtime: Runtime) -> None:
        self._stop = threading.Event()
        self.scheduler = Scheduler(runtime, on_report=_log_report)
        self._threads = [
            threading.Thread(target=self._run, args=(run,), name=name, daemon=True)
            for run, name in (
                (self.scheduler.run, "clearance-sources"),
                (self.scheduler.run_notified, "clearance-notifications"),
            )
        ]

    def _run(self, loop: Callable[[threading.Event], None]) -> None:
        try:
            loop(self._stop)
        except Exception:  # the server keeps serving; corpora fail closed past their SLA
            log.exception("the source scheduler stopped")

    def start(self) -> BackgroundScheduler:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        self.scheduler.wake()
        for thread in self._threads:
            thread.join(timeout_s)
        self.scheduler.close_directory_readers()


def _failed(name: str, kinds: list[Kind], now: datetime, exc: ClearanceError) -> list[SyncReport]:
    """The reports of syncs of source ``name`` that could not run, the failure logged."""
    log.warning("source %s: %s", name, exc.message)
    return [
        SyncReport(name, kind, started_at=now, finished_at=now, error=exc.message) for kind in kinds
    ]


def _log_report(report: SyncReport) -> None:
    if report.ok:
        log.info("source %s: %s sync done %s", report.source, report.kind, dict(report.counts))
    else:
        log.warning("source %s: %s sync failed: %s", report.source, report.kind, report.error)
