"""The sync engine: one source's changes → the index, with the guarantees of
:mod:`clearance.sources.base`.

A content sync lists changed items, fetches only those whose version differs from the
stored one and writes each through the ingest pipeline (one transaction per document; the
pipeline reuses stored vectors when the text is unchanged). A permission sync collects the
source's groups and every permission change first, then applies the ACLs in one
transaction — together with the corpus's ACL-sync time, when this sync completes the corpus.
A targeted ("notified") sync re-reads the access of named items only, through the
connector's optional :class:`~clearance.sources.base.ItemPermissions`, and applies it in one
transaction: it never advances the source's or the corpus's sync time, and when the source
cannot answer, the named items become visible to nobody rather than keep an ACL the source
said had changed. Anything that fails is recorded in the source's state (``failing``) and
reported; it never widens an ACL and never advances a clock it did not earn.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from clearance.access.directory import unknown_principal_warning
from clearance.access.ownership import BLOCKED_KEY, VERSION_KEY, owner_of
from clearance.config import CorpusSettings, SourceSettings
from clearance.errors import ClearanceError, ItemUnavailable, LoaderError, SourceError
from clearance.ingest.metadata import Metadata
from clearance.ingest.pipeline import FileResult, Ingestor, Job
from clearance.model import EVERYONE, Document, Sensitivity
from clearance.runtime import Runtime
from clearance.sources.base import (
    Access,
    ChangeFeed,
    Connector,
    ContentPage,
    ItemPermissions,
    ItemRef,
    PermissionChange,
    PermissionPage,
    SourceDocument,
    Tombstone,
)
from clearance.sources.http import throttle_budget
from clearance.sources.state import StateTable

__all__ = ["MEDIA_SUFFIXES", "SourceSync", "SyncReport", "resolve_access"]

#: Media types a connector may hand over as bytes, and the loader each one goes to.
MEDIA_SUFFIXES: Mapping[str, str] = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/html": ".html",
    "text/csv": ".csv",
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}
# Metadata keys a connector may pass through SourceDocument.metadata.
_PASSED_KEYS = ("expires_at", "review_at", "ai_allowed", "personal_data", "origin_chain")
_PROGRESS_INTERVAL_S = 1.0
NOT_LISTED = "not in the source's latest permission listing"
NOT_ANSWERED = "its permissions changed at the source, which did not say who may now read it"
#: ``extra`` key: when a targeted sync read the document's access (a POSIX timestamp). A
#: permission sync that began reading before then leaves the fresher ACL in place.
READ_AT_KEY = "source_read_at"
#: Where in the source's state the change feed's position is kept (see ChangeFeed).
FEED_KEY = "feed_cursor"
_APPLY_LOCKS: dict[str, threading.Lock] = {}
_APPLY_LOCKS_LOCK = threading.Lock()

_Page = TypeVar("_Page", ContentPage, PermissionPage)

#: ``notified``: a targeted permission sync of the items a notification named.
Kind = Literal["content", "permissions", "notified"]


def resolve_access(access: Access, corpus: CorpusSettings) -> tuple[frozenset[str], str | None]:
    """``(ACL, why it is empty)`` for ``access`` in ``corpus``. Unrepresentable access and
    an anonymous link in a corpus above PUBLIC give the empty ACL — visible to nobody —
    with the reason; nothing is ever widened to approximate the source."""
    if access.unrepresentable is not None:
        return frozenset(), access.unrepresentable
    if access.anyone_with_link:
        if corpus.max_sensitivity > Sensitivity.PUBLIC:
            return frozenset(), (
                f"shared with anyone who has the link, which corpus {corpus.name!r} "
                f"(max_sensitivity {corpus.max_sensitivity.name}) does not allow"
            )
        return access.principals | {EVERYONE}, None
    return access.principals, None


@dataclass(slots=True)
class SyncReport:
    """What one sync of one source did. ``ok`` is false when it stopped on an error."""

    source: str
    kind: Kind
    started_at: datetime
    finished_at: datetime | None = None
    counts: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    item_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unknown_principals: list[str] = field(default_factory=list)
    cursor_advanced: bool = False
    corpus_sync_advanced: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "ok": self.ok,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "counts": dict(sorted(self.counts.items())),
            "error": self.error,
            "item_errors": list(self.item_errors),
            "warnings": list(self.warnings),
            "unknown_principals": list(self.unknown_principals),
            "cursor_advanced": self.cursor_advanced,
            "corpus_sync_advanced": self.corpus_sync_advanced,
        }


def _apply_lock(source: str) -> threading.Lock:
    """The lock one source's syncs hold while they write ACLs in this process, so that a
    notified sync and a full permission sync running side by side apply in turn, each
    seeing what the other wrote."""
    with _APPLY_LOCKS_LOCK:
        return _APPLY_LOCKS.setdefault(source, threading.Lock())


def _describe(exc: BaseException) -> str:
    """A failure's one-line text: ours as worded, anything else with its type (a connector
    bug must mark the source failing, not stop the scheduler)."""
    if isinstance(exc, ClearanceError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


class SourceSync:
    """Syncs one configured source into ``app``'s index."""

    def __init__(
        self,
        runtime: Runtime,
        source: SourceSettings,
        connector: Connector,
        *,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.source = source
        self.name = source.name
        self.connector = connector
        self.corpus = runtime.settings.corpus(source.corpus)
        self.states = StateTable(runtime.store)
        self._on_progress = on_progress
        self._last_progress = 0.0

    # ------------------------------------------------------------------ helpers

    def _progress(self, kind: Kind, counts: Counter[str], *, force: bool = False) -> None:
        if self._on_progress is None:
            return
        now = time.monotonic()
        if force or now - self._last_progress >= _PROGRESS_INTERVAL_S:
            self._last_progress = now
            shown = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()) if n)
            self._on_progress(f"{self.name} {kind}: {shown or 'listing'}")

    def owned(self) -> dict[str, Document]:
        """Every document this source owns, whatever its corpus."""
        return {
            d.doc_id: d for d in self.runtime.store.list_documents() if owner_of(d) == self.name
        }

    @contextmanager
    def _run(self, kind: Kind) -> Iterator[SyncReport]:
        """A report for one sync; a failure ends the sync, is recorded in the source's state
        (the source is failing until a sync succeeds) and is returned, not raised."""
        now = self.runtime.clock()
        report = SyncReport(self.name, kind, started_at=now)
        if kind != "notified":  # a targeted sync attempts no complete sync
            self.states.update(self.name, **{f"{kind.removesuffix('s')}_attempted_at": now})
        # A permission sync's result is stamped with its start, so waiting for the source is
        # worth it only while that stamp is inside the SLA; content work must not hold the
        # next permission sync back by more than one interval.
        limit = (
            self.source.permission_interval_s if kind == "content" else self.corpus.revocation_sla_s
        )
        # A targeted sync may run beside a full one: it leaves the source's budget to it.
        budget = throttle_budget(self.name) if kind != "notified" else None
        if budget is not None:
            budget.begin(kind, limit)
        try:
            yield report
        except Exception as exc:
            report.error = _describe(exc)
        finally:
            waits, waited, longest = budget.end() if budget is not None else (0, 0.0, 0.0)
        if waits:
            report.counts["throttled"] = waits
            report.warnings.append(
                f"the source throttled {waits} request(s): waited {waited:.0f}s in all "
                f"(longest {longest:.0f}s)"
            )
        report.finished_at = self.runtime.clock()
        if report.error is None:
            if kind != "notified":  # a few items read is no sign the source is healthy again
                self.states.succeeded(self.name)
        else:
            self.states.failed(self.name, f"{kind} sync: {report.error}", report.finished_at)
        self.states.update(self.name, stats={kind: report.to_dict()["counts"]})
        self._progress(kind, report.counts, force=True)

    # ------------------------------------------------------------------ content

    def content(self) -> SyncReport:
        """List changes since the stored cursor; fetch and write changed items; delete
        tombstoned ones (and, after a complete snapshot, every unlisted one)."""
        with self._run("content") as report:
            self._content(report)
        return report

    def _content(self, report: SyncReport) -> None:
        state = self.states.get(self.name)
        owned = self.owned()
        ingestor = Ingestor(
            self.runtime.settings,
            self.runtime.store,
            self.runtime.embedder,
            self.runtime.directory,
            source=self.name,
        )
        seen: set[str] = set()
        resumable = True  # every item so far is done: the cursor may move past it
        snapshot = False
        cursor: str | None = None
        for page in self._complete(self.connector.content_changes(state.content_cursor), "content"):
            snapshot = page.snapshot
            for item in page.items:
                if isinstance(item, Tombstone):
                    self._delete(item.doc_id, owned, report)
                    continue
                seen.add(item.doc_id)
                resumable = self._item(item, owned, ingestor, report) and resumable
                self._progress("content", report.counts)
            cursor = page.cursor
            if not page.last and not snapshot and resumable:
                self.states.update(self.name, content_cursor=cursor)
                report.cursor_advanced = True
        if snapshot:
            for doc_id in sorted(set(owned) - seen):
                self._delete(doc_id, owned, report)
        if resumable:
            self.states.update(
                self.name, content_cursor=cursor, content_synced_at=self.runtime.clock()
            )
            report.cursor_advanced = True
        else:
            report.warnings.append(
                "some items could not be fetched: the next sync lists them again"
            )

    def _complete(self, listing: Iterable[_Page], what: str) -> Iterator[_Page]:
        """The pages of a listing up to its last one (none after it is asked for); a
        listing that ends before its last page is an error."""
        for page in listing:
            yield page
            if page.last:
                return
        raise SourceError(f"source {self.name!r}: the {what} listing ended early")

    def _delete(self, doc_id: str, owned: dict[str, Document], report: SyncReport) -> None:
        """Remove a document this source owns; a tombstone for anything else (never
        indexed, or another owner's) changes nothing."""
        if doc_id in owned and self.runtime.store.delete(doc_id):
            del owned[doc_id]
            report.counts["deleted"] += 1

    def _item(
        self, item: ItemRef, owned: dict[str, Document], ingestor: Ingestor, report: SyncReport
    ) -> bool:
        """Fetch and write one listed item if its version changed. False when the source
        could not deliver it (the cursor must not move past it)."""
        report.counts["listed"] += 1
        stored = owned.get(item.doc_id)
        if (
            stored is not None
            and stored.extra.get(VERSION_KEY) == item.version
            and stored.corpus == self.corpus.name
        ):
            report.counts["unchanged"] += 1
            return True
        try:
            document = self.connector.fetch(item)
        except ItemUnavailable as exc:
            # Refused for good: say so per document, drop any earlier text rather than keep
            # it silently stale, and let the cursor move on (a new version is tried again).
            report.counts["unavailable"] += 1
            report.item_errors.append(f"{item.doc_id}: {exc.message}")
            self._delete(item.doc_id, owned, report)
            return True
        except SourceError as exc:
            report.counts["failed"] += 1
            report.item_errors.append(f"{item.doc_id}: {exc.message}")
            return False
        report.counts["fetched"] += 1
        result = self._write(document, ingestor)
        report.counts[result.status] += 1
        if result.status == "failed":
            report.item_errors.append(f"{item.doc_id}: {result.error}")
        report.warnings.extend(f"{item.doc_id}: {w}" for w in result.warnings)
        return True

    def _write(self, document: SourceDocument, ingestor: Ingestor) -> FileResult:
        """One fetched document through the ingest pipeline (its loaders, classifier,
        chunker, vector reuse and ownership check)."""
        acl, blocked = resolve_access(document.access, self.corpus)
        system, colon, native = document.doc_id.partition(":")
        if not colon or not system or not native:
            return FileResult(
                document.doc_id,
                "failed",
                error="the connector gave a doc_id that is not 'source_system:native_id'",
            )
        meta: Metadata = {
            "doc_id": document.doc_id,
            "title": document.title or native,
            "uri": document.uri,
            "source_system": system,
            "corpus": self.corpus.name,
            "acl": acl,
        }
        for key, value in (
            ("owner", document.owner),
            ("sensitivity", document.sensitivity),
            ("created_at", document.created_at),
            ("updated_at", document.modified_at),
            ("origin", document.origin),
        ):
            if value is not None:
                meta[key] = value
        meta.update({k: document.metadata[k] for k in _PASSED_KEYS if k in document.metadata})
        extra: dict[str, Any] = {VERSION_KEY: document.version}
        if blocked is not None:
            extra[BLOCKED_KEY] = blocked
        if document.text is not None:
            job = Job(document.doc_id, None, {**meta, "text": document.text}, extra=extra)
            return ingestor.run([job]).results[0]

        def run_file(path: Path) -> FileResult:
            """The file at ``path`` (read in its folder) as the document."""
            label = document.file_name or document.title
            job = Job(document.doc_id, path, meta, root=path.parent, label=label, extra=extra)
            return ingestor.run([job]).results[0]

        if document.path is not None:
            return run_file(document.path)
        suffix = MEDIA_SUFFIXES.get(document.media_type.partition(";")[0].strip().lower())
        if suffix is None:
            error = LoaderError(f"unsupported media type {document.media_type!r}")
            return FileResult(document.doc_id, "skipped", document.doc_id, error=error.message)
        assert document.data is not None
        with tempfile.TemporaryDirectory(prefix="clearance-source-") as folder:
            path = Path(folder) / f"content{suffix}"
            path.write_bytes(document.data)
            return run_file(path)

    # ------------------------------------------------------------------ permissions

    def permissions(self) -> SyncReport:
        """Sync groups, then collect every permission change and apply them in one
        transaction; advance the corpus's ACL-sync time when the corpus is complete."""
        with self._run("permissions") as report:
            # The SLA counts from the moment reading begins: a revocation made at the
            # source after an item was read is only seen by the next sync, so stamping the
            # end of a slow sync would stretch the revocation window by the sync's length.
            read_began = self.runtime.clock()
            feed = self._feed_position(report)
            self._groups(report)
            changes, cursor, snapshot = self._collect(report)
            with _apply_lock(self.name):
                self._apply(report, changes, cursor, snapshot, read_began)
            if feed is not None:
                # everything before this point was just read: a notice resolves from here
                self.states.update(self.name, stats={FEED_KEY: feed})
        return report

    def _feed_position(self, report: SyncReport) -> str | None:
        """The change feed's present end, taken before reading (``None``: no feed, or it
        could not be read — notices then fall back to full permission syncs)."""
        if not isinstance(self.connector, ChangeFeed):
            return None
        try:
            _, cursor = self.connector.changed_since(None)
        except SourceError as exc:
            report.warnings.append(
                f"change feed: {exc.message}; notices that name no items re-list everything"
            )
            return None
        return cursor

    def from_feed(self) -> SyncReport:
        """A notice that named no items: re-read just the items the change feed names since
        the position the last full permission sync (or notice) left, in a targeted sync. A
        full permission sync instead when the connector has no feed or cannot read single
        items, when no position is kept, or when the source no longer accepts it (410)."""
        connector = self.connector
        position = self.states.get(self.name).stats.get(FEED_KEY)
        if (
            not isinstance(connector, ChangeFeed)
            or not isinstance(connector, ItemPermissions)
            or not isinstance(position, str)
        ):
            return self.permissions()
        try:
            doc_ids, following = connector.changed_since(position)
        except SourceError as exc:
            if exc.status == 410:
                return self.permissions()
            with self._run("notified") as report:
                raise exc
            return report
        report = self.targeted(doc_ids)
        if report.ok:
            self.states.update(self.name, stats={FEED_KEY: following})
        return report

    def _groups(self, report: SyncReport) -> None:
        snapshot = self.connector.groups()
        if snapshot is None:
            return
        previous = set(self.states.get(self.name).groups)
        gone = sorted(previous - set(snapshot.groups))
        doc = {
            "groups": [
                {"id": gid, "members": sorted(members)}
                for gid, members in sorted(snapshot.groups.items())
            ],
            "removed_groups": gone,
        }
        self.runtime.sync_directory_data(json.dumps(doc), f"source {self.name} groups", delta=True)
        self.states.update(self.name, groups=tuple(snapshot.groups))
        report.warnings.extend(snapshot.warnings)
        report.counts["groups"] = len(snapshot.groups)
        report.counts["groups_removed"] = len(gone)

    def _collect(self, report: SyncReport) -> tuple[dict[str, PermissionChange], str | None, bool]:
        """Read the whole permission listing: ``(changes by doc_id, cursor, snapshot)``."""
        state = self.states.get(self.name)
        changes: dict[str, PermissionChange] = {}
        snapshot = False
        cursor: str | None = None
        listing = self.connector.permission_changes(state.permission_cursor)
        for page in self._complete(listing, "permission"):
            snapshot = page.snapshot
            for change in page.items:
                changes[change.doc_id] = change
                report.counts["listed"] += 1
            self._progress("permissions", report.counts)
            cursor = page.cursor
        return changes, cursor, snapshot

    def _apply(
        self,
        report: SyncReport,
        changes: Mapping[str, PermissionChange],
        cursor: str | None,
        snapshot: bool,
        read_began: datetime,
    ) -> None:
        """Write the collected ACLs in one transaction. The source and (when complete) the
        corpus are stamped ``read_began``: what was read is at least that fresh, no fresher."""
        owned = self.owned()
        wanted: dict[str, tuple[frozenset[str], str | None]] = {}
        for doc_id, change in changes.items():
            if doc_id in owned:
                wanted[doc_id] = resolve_access(change.access, self.corpus)
            else:
                report.counts["not_in_index"] += 1
        if snapshot:
            for doc_id in set(owned) - set(changes):
                wanted[doc_id] = (frozenset(), NOT_LISTED)
        acls: dict[str, frozenset[str]] = {}
        notes: dict[str, dict[str, Any]] = {}
        for doc_id, (acl, blocked) in wanted.items():
            stored = owned[doc_id]
            if stored.extra.get(READ_AT_KEY, 0.0) > read_began.timestamp():
                report.counts["read_since"] += 1  # a notified sync read it after we began
                continue
            if stored.acl != acl or stored.extra.get(BLOCKED_KEY) != blocked:
                acls[doc_id] = acl
                notes[doc_id] = {BLOCKED_KEY: blocked}
                report.counts["changed"] += 1
                report.counts["revoked"] += int(bool(stored.acl - acl))
        advance = self._corpus_sync_time(read_began)
        synced = None if advance is None else (self.corpus.name, advance)
        self.runtime.store.set_acls(acls, synced=synced, extra=notes)
        self.states.update(self.name, permission_cursor=cursor, permission_synced_at=read_began)
        report.cursor_advanced = True
        report.corpus_sync_advanced = synced is not None
        report.counts["blocked"] = sum(1 for _, blocked in wanted.values() if blocked)
        named = {p for d in owned.values() for p in (acls.get(d.doc_id, d.acl))}
        report.unknown_principals = self.runtime.directory.unknown_principals(named)
        report.warnings.extend(unknown_principal_warning(p) for p in report.unknown_principals)
        if synced is None:
            report.warnings.append(
                f"corpus {self.corpus.name!r}: ACL-sync time not advanced: other documents "
                "of the corpus (another source's, or ingested by hand) are not yet synced"
            )

    def _corpus_sync_time(self, now: datetime) -> datetime | None:
        """The corpus's new ACL-sync time once this sync completes, or ``None`` to leave it.

        The corpus is as fresh as its least fresh part: every other source owning documents
        of it must have completed a permission sync, and documents ingested by hand were
        last synced at the corpus's current time. Never moves the time backwards."""
        corpus = self.corpus.name
        current = self.runtime.store.last_acl_syncs().get(corpus)
        owners = {owner_of(d) for d in self.runtime.store.list_documents(corpus)} - {self.name}
        times = [now]
        if None in owners:
            if current is None:
                return None
            times.append(current)
        states = self.states.all()
        for owner in sorted(o for o in owners if o is not None):
            synced = states[owner].permission_synced_at if owner in states else None
            if synced is None:
                return None
            times.append(synced)
        new = min(times)
        return new if current is None or new >= current else None

    # ------------------------------------------------------------------ notified

    def targeted(self, doc_ids: Iterable[str]) -> SyncReport:
        """Re-read the access of ``doc_ids`` only and apply it in one transaction, leaving
        the source's and the corpus's sync times alone. A connector that cannot read single
        items' permissions gets a full permission sync instead (a ``permissions`` report)."""
        if not isinstance(self.connector, ItemPermissions):
            return self.permissions()
        with self._run("notified") as report:
            self._targeted(report, self.connector, sorted(set(doc_ids)))
        return report

    def _targeted(self, report: SyncReport, reader: ItemPermissions, named: list[str]) -> None:
        owned = self.owned()
        wanted = [doc_id for doc_id in named if doc_id in owned]
        report.counts["not_in_index"] = len(named) - len(wanted)
        if not wanted:
            return
        read_began = self.runtime.clock()
        changes: dict[str, PermissionChange] = {}
        failure: Exception | None = None
        try:
            for change in reader.permissions_of(wanted):
                if change.doc_id in owned and change.doc_id in wanted:
                    changes[change.doc_id] = change
                    report.counts["listed"] += 1
        except Exception as exc:
            # The notification said these items' access changed: keeping the old ACL could
            # keep a revoked reader in until the next full sync, so they close instead.
            failure = exc
            reason = (
                f"its permissions changed at the source and could not be read: {_describe(exc)}"
            )
            changes = {d: PermissionChange(d, Access.nobody(reason)) for d in wanted}
        for doc_id in wanted:
            changes.setdefault(doc_id, PermissionChange(doc_id, Access.nobody(NOT_ANSWERED)))
        acls: dict[str, frozenset[str]] = {}
        notes: dict[str, dict[str, Any]] = {}
        with _apply_lock(self.name):
            synced = self.states.get(self.name).permission_synced_at
            if synced is not None and synced > read_began:  # a full sync read them since
                report.counts["read_since"] = len(changes)
                changes = {}
            owned = self.owned()
            for doc_id, change in changes.items():
                acl, blocked = resolve_access(change.access, self.corpus)
                stored = owned.get(doc_id)
                if stored is None:  # deleted meanwhile
                    continue
                report.counts["blocked"] += int(blocked is not None)
                acls[doc_id] = acl
                notes[doc_id] = {BLOCKED_KEY: blocked, READ_AT_KEY: read_began.timestamp()}
                if stored.acl != acl or stored.extra.get(BLOCKED_KEY) != blocked:
                    report.counts["changed"] += 1
                    report.counts["revoked"] += int(bool(stored.acl - acl))
            self.runtime.store.set_acls(acls, synced=None, extra=notes)
        report.unknown_principals = self.runtime.directory.unknown_principals(
            p for acl in acls.values() for p in acl
        )
        report.warnings.extend(unknown_principal_warning(p) for p in report.unknown_principals)
        if failure is not None:
            raise failure

    # ------------------------------------------------------------------ both

    def run(self, *, content: bool = True, permissions: bool = True) -> list[SyncReport]:
        """Content first (new documents then get their permissions in the same run)."""
        reports: list[SyncReport] = []
        if content:
            reports.append(self.content())
        if permissions:
            reports.append(self.permissions())
        return reports
