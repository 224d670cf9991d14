"""The ``Connector`` protocol: what a source system must tell Clearance, and what it gets back.

A connector turns one source system (a folder, a SharePoint site, a Google shared drive, a
Confluence space) into Clearance documents, principal strings and directory groups. It only
*reads* the source; everything that writes the index is the sync engine's
(:mod:`clearance.sources.sync`), so every connector gets the same guarantees for free.

What a connector author implements
----------------------------------
Four reading methods and ``close`` (see :class:`Connector`):

``content_changes(cursor)``
    Pages of :class:`ItemRef` (an item that exists, with an opaque ``version`` that changes
    whenever its content or its content-side metadata — title, sensitivity label, dates —
    changes) and :class:`Tombstone` (an item that was deleted, or left the synced scope).
    ``cursor`` is what the last completed listing returned (``None``: never synced, list
    everything). A source with a change feed (Graph delta, Drive changes) returns only what
    changed, with ``snapshot=False``; a source without one lists every item it holds with
    ``snapshot=True``. A cursor the source no longer accepts (expired delta token) is the
    connector's to detect: it then lists everything as a snapshot.
``fetch(item)``
    The :class:`SourceDocument` of one listed item: content (bytes, text or a local file)
    with its media type, title, link, ACL and sensitivity hint. Called only for items whose
    ``version`` differs from the stored one.
``permission_changes(cursor)``
    Pages of :class:`PermissionChange` — the current :class:`Access` of each item — with
    the same cursor and ``snapshot`` rules as content. Never fetches content.
``groups()``
    A :class:`GroupSnapshot` of the groups the source defines itself (Entra groups, Google
    Groups, Confluence groups) with their direct members, or ``None`` when its ACLs only name
    groups the directory already syncs from the identity provider.

Two optional capabilities let a source's change notifications reach the index in seconds
instead of at the next full re-listing (docs/notifications.md):

:class:`ItemPermissions` — ``permissions_of(doc_ids)``
    The current :class:`Access` of just the named items, one :class:`PermissionChange` each
    (an item whose permissions could not be read is ``Access.nobody(why)``; an item the source
    no longer has may be left out). Raise :class:`~clearance.errors.SourceError` when the
    source cannot be read at all. Without it, a notification runs a full permission sync.
:class:`Notifiable` — ``notification(headers, query, body)``
    Checks one HTTP notification the source sent to ``POST /v1/sources/<name>/notifications``
    and returns a :class:`Notice`: what to answer the sender, and which items changed. It
    authenticates the sender itself (a subscription's client state, a channel token, a
    webhook secret — a credential read through ``SourceContext.secret``, compared in constant
    time) and refuses anything unauthenticated or malformed with :meth:`Notice.refuse`,
    which changes nothing. It must not call the source (the sender is waiting for the
    answer, sometimes for a few seconds at most) and must be safe to call from several
    threads at once.

Access is stated as the source has it, in the principal grammar of :mod:`clearance.model`
(``user:<id>``, ``group:<id>``, ``everyone``). What cannot be stated that way is flagged, not
approximated: anonymous links are ``Access.anyone_with_link``; anything else the connector
cannot map safely (an unknown principal type, a sharing mode it does not understand, item
permissions it could not read) is ``Access.nobody("why")``. When in doubt, a connector states
*less* access than the source grants, never more.

Connectors raise :class:`~clearance.errors.SourceError` when the source cannot be read
(unreachable, refused credentials, retries exhausted). HTTP connectors build their client
with :mod:`clearance.sources.http` (bounded retries on 429 and 5xx with ``Retry-After`` and
jittered backoff, paging, a per-source concurrency limit) instead of writing their own.

What the sync engine guarantees
-------------------------------
* **One owner per document.** A document a source wrote is changed only by that source: a
  folder or manifest ingest, ``clearance acl sync`` or ``clearance remove`` that touches it is
  refused with an error naming the source. Two sources listing the same ``doc_id`` are
  refused the same way.
* **Permission-only changes never re-fetch or re-embed content.** ``fetch`` is called only
  when an item's ``version`` changed; a permission change rewrites ACL rows alone. When a
  fetched item's text is unchanged, its stored vectors are reused.
* **Deletions are tombstones.** A :class:`Tombstone`, or an item missing from a complete
  snapshot listing, removes the document (chunks, vectors, facts) from the index.
* **Permission syncs are all or nothing.** The changes of one permission sync are collected
  first and applied in one transaction; a sync that fails midway changes nothing, keeps the
  old cursor and does not advance the corpus's ACL-sync time. A complete permission sync
  advances it — only when every document of the corpus is accounted for (every source
  feeding the corpus has completed one, and documents from manual ingests were covered by
  the corpus's previous sync).
* **Content cursors resume.** Documents of a content sync are written one by one, each in
  its own transaction; a delta listing's cursor is stored after each page, so a sync that
  fails midway resumes after the last page it completed. A snapshot listing is resumed from
  the start (deletions are only known once it is complete).
* **Unrepresentable access fails closed.** An item with ``Access.nobody(reason)`` — or an
  anonymous link in a corpus whose ``max_sensitivity`` is above PUBLIC — is stored visible to
  nobody, and ``clearance source status`` and ``clearance explain`` give the reason.
* **Unknown principals are kept and reported.** An ACL naming a user or group the directory
  does not know is stored as written (it matches nobody) and reported by the sync, by
  ``source status`` and by ``explain`` (``group:employes is not in the directory``).
* **Notified syncs only ever narrow what they cannot read.** A targeted sync re-reads the
  named items' access and applies it in one transaction; when the source cannot answer, the
  named items become visible to nobody (with the reason) until a sync reads them, rather
  than keep an ACL the notification said had changed. A targeted sync never advances the
  source's permission-sync time or the corpus's ACL-sync time (it says nothing about the
  other items): the scheduled full permission sync remains what keeps a corpus serving.
* **Credentials** come from environment variables named in ``[sources.<name>]``; a
  connector receives them as :class:`~clearance.secrets.Secret` values, which never print,
  log or serialise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from clearance.model import Sensitivity, parse_principal

if TYPE_CHECKING:
    from clearance.config import CorpusSettings, Settings, SourceSettings
    from clearance.secrets import Secret

__all__ = [
    "Access",
    "ChangeFeed",
    "Connector",
    "ConnectorFactory",
    "ContentPage",
    "GroupSnapshot",
    "ItemPermissions",
    "ItemRef",
    "Notice",
    "Notifiable",
    "PermissionChange",
    "PermissionPage",
    "SourceContext",
    "SourceDocument",
    "Subscribing",
    "Subscription",
    "Tombstone",
    "snapshot_pages",
]


@dataclass(frozen=True, slots=True)
class Access:
    """Who may read an item, as the source states it.

    ``principals``: principal strings (validated on construction). ``anyone_with_link``: an
    anonymous sharing link exists — the engine grants ``everyone`` only in a corpus whose
    ``max_sensitivity`` is PUBLIC, and nobody elsewhere. ``unrepresentable``: why the item's
    access cannot be stated safely; the item is then visible to nobody, whatever else is set.
    """

    principals: frozenset[str] = frozenset()
    anyone_with_link: bool = False
    unrepresentable: str | None = None

    def __post_init__(self) -> None:
        for principal in self.principals:
            parse_principal(principal)

    @classmethod
    def of(cls, *principals: str) -> Access:
        return cls(frozenset(principals))

    @classmethod
    def nobody(cls, reason: str) -> Access:
        """Access that must not be approximated: the item is visible to nobody, for
        ``reason`` (shown by ``source status`` and ``explain``)."""
        return cls(frozenset(), unrepresentable=reason)


@dataclass(frozen=True, slots=True)
class ItemRef:
    """One item that exists at the source, as a content listing names it.

    ``doc_id`` is the stable Clearance id (``<system>:<native id>``). ``version`` is opaque
    and must change whenever the content or content-side metadata changes (an ETag, a
    revision id, a modification time with a size); the engine fetches the item only when it
    differs from the stored one. ``ref`` is the connector's own handle for :meth:`fetch`."""

    doc_id: str
    version: str
    ref: str = ""


@dataclass(frozen=True, slots=True)
class Tombstone:
    """An item deleted at the source, or moved out of the synced scope."""

    doc_id: str


@dataclass(frozen=True, slots=True)
class ContentPage:
    """One page of a content listing. ``cursor`` resumes after this page (delta listings);
    the last page's cursor is where the next sync starts. ``snapshot``: the listing names
    every item the source holds, so documents of this source it did not name are deleted
    once its last page (``last=True``) has been processed."""

    items: Sequence[ItemRef | Tombstone]
    cursor: str | None
    snapshot: bool
    last: bool = True


@dataclass(frozen=True, slots=True)
class PermissionChange:
    doc_id: str
    access: Access


@dataclass(frozen=True, slots=True)
class PermissionPage:
    """One page of a permission listing (same ``cursor``/``snapshot``/``last`` rules as
    :class:`ContentPage`). In a snapshot, a document of this source that no page names is
    left visible to nobody until a later sync names it."""

    items: Sequence[PermissionChange]
    cursor: str | None
    snapshot: bool
    last: bool = True


_Page = TypeVar("_Page", ContentPage, PermissionPage)


def snapshot_pages(page: type[_Page], items: Sequence[Any], size: int = 200) -> Iterator[_Page]:
    """``items`` as the pages (``ContentPage`` or ``PermissionPage``) of one snapshot listing,
    ``size`` to a page, and at least one page, so that an empty source still completes a
    sync."""
    for start in range(0, max(len(items), 1), size):
        last = start + size >= len(items)
        yield page(items[start : start + size], None, snapshot=True, last=last)


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """What :meth:`Connector.fetch` returns: one item's content and metadata.

    Exactly one of ``data`` (bytes, read by the loader for ``media_type``), ``text`` (plain
    text) or ``path`` (a local file, read in place) carries the content. ``file_name`` is the
    item's name or path at the source, which ``[sensitivity] restricted_filename_patterns``
    match (default: the title). ``content_hash`` is informative; the engine hashes the
    content it reads itself. ``sensitivity`` is
    the source's own label (classification may raise it, never lower it). ``metadata`` may
    carry further keys of docs/metadata.md, typed as :func:`clearance.ingest.metadata.
    parse_metadata` returns them (``expires_at``, ``review_at``, ``ai_allowed``,
    ``personal_data``, ``origin_chain``)."""

    doc_id: str
    version: str
    title: str
    uri: str
    access: Access
    media_type: str = "text/plain"
    data: bytes | None = None
    text: str | None = None
    path: Path | None = None
    origin: str | None = None
    sensitivity: Sensitivity | None = None
    owner: str | None = None
    created_at: datetime | None = None
    modified_at: datetime | None = None
    content_hash: str | None = None
    file_name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        given = sum(x is not None for x in (self.data, self.text, self.path))
        if given != 1:
            raise ValueError(f"{self.doc_id}: give exactly one of data, text or path")


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """Every group the source defines, with its direct members (principal strings: a member
    group is ``group:<id>``). Groups this source reported before and no longer lists are
    removed from the directory. ``warnings``: what the operator should know about groups the
    source could not read (they are left out: they match nobody), one line each, shown in
    the sync's report."""

    groups: Mapping[str, frozenset[str]]
    warnings: Sequence[str] = ()


@runtime_checkable
class Connector(Protocol):
    """A source system, read incrementally. See the module docstring for the contract."""

    def content_changes(self, cursor: str | None) -> Iterable[ContentPage]: ...

    def fetch(self, item: ItemRef) -> SourceDocument: ...

    def permission_changes(self, cursor: str | None) -> Iterable[PermissionPage]: ...

    def groups(self) -> GroupSnapshot | None: ...

    def close(self) -> None: ...


@runtime_checkable
class ItemPermissions(Protocol):
    """Optional: the current access of named items, without listing the others."""

    def permissions_of(self, doc_ids: Sequence[str]) -> Iterable[PermissionChange]: ...


@dataclass(frozen=True, slots=True)
class Notice:
    """What :meth:`Notifiable.notification` made of one HTTP notification.

    ``status``, ``content_type`` and ``body`` are the answer to the sender. ``doc_ids`` are
    the items whose permissions changed — ``None`` when the source said something changed
    without saying what (a full permission sync then runs). ``content``: their content may
    have changed too, so a content sync runs after the permission work. A refusal (status
    400 or above) names no items: it changes nothing."""

    status: int = 202
    content_type: str = "text/plain"
    body: str = ""
    doc_ids: frozenset[str] | None = frozenset()
    content: bool = False

    def __post_init__(self) -> None:
        if not 200 <= self.status <= 599:
            raise ValueError(f"a notice's status must be an HTTP status, not {self.status}")
        if self.refused and (self.doc_ids != frozenset() or self.content):
            raise ValueError("a refused notice cannot name changes")

    @property
    def refused(self) -> bool:
        return self.status >= 400

    @property
    def changes(self) -> bool:
        """Whether the notice asks for any sync at all."""
        return self.doc_ids is None or bool(self.doc_ids) or self.content

    @classmethod
    def changed(cls, doc_ids: Iterable[str], *, content: bool = False) -> Notice:
        """These items' permissions (and, with ``content``, their content) changed."""
        return cls(doc_ids=frozenset(doc_ids), content=content)

    @classmethod
    def unknown_changes(cls, *, content: bool = False) -> Notice:
        """Something changed at the source, and the notification does not say what."""
        return cls(doc_ids=None, content=content)

    @classmethod
    def reply(cls, body: str, *, content_type: str = "text/plain", status: int = 200) -> Notice:
        """An answer that changes nothing (a subscription's validation handshake, a sync
        message announcing a channel)."""
        return cls(status=status, content_type=content_type, body=body)

    @classmethod
    def refuse(cls, status: int, message: str) -> Notice:
        """401 (unauthenticated), 400 (malformed) or 503 (try again later): ``message`` is
        one fixed line that says nothing about what was expected."""
        if status < 400:
            raise ValueError("a refusal has a 4xx or 5xx status")
        code = {401: "unauthenticated", 503: "unavailable"}.get(status, "invalid_request")
        body = json.dumps({"error": code, "message": message})
        return cls(status=status, content_type="application/json", body=body)


@runtime_checkable
class ChangeFeed(Protocol):
    """Optional: which items' access may have changed since ``cursor``, read from the
    source's own change feed (Graph's delta with sharing changes, Drive's changes list).

    It resolves a notification that does not name items (:meth:`Notice.unknown_changes`)
    into a targeted sync of just those items instead of a full re-listing. ``cursor=None``
    asks for a cursor at the feed's present end (and no items). The engine takes one at the
    start of every full permission sync, so the feed covers everything after the last
    complete read; a cursor the source no longer accepts raises
    :class:`~clearance.errors.SourceError` with ``status=410``, and the engine falls back to
    a full permission sync. An item the feed names as changed in any way (its sharing, its
    parent's, a move) must be named: naming too many costs reads, too few keeps access."""

    def changed_since(self, cursor: str | None) -> tuple[frozenset[str], str]: ...


@dataclass(frozen=True, slots=True)
class Subscription:
    """A notification subscription at the source (a Graph subscription, a Drive channel):
    ``id`` as the source names it, when it ends, and what the connector needs to renew or
    stop it (``state``: JSON-serialisable, never a secret)."""

    id: str
    expires_at: datetime
    state: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Subscribing(Protocol):
    """Optional: the connector creates and renews its own notification subscription.

    ``subscribe(url, current)`` makes sure the source sends notifications to ``url`` (the
    public address of ``POST /v1/sources/<name>/notifications``) past the next renewal:
    it renews ``current`` when the source allows, or creates a new subscription (and stops
    ``current``). The scheduler calls it when a source with ``notification_url`` has no
    subscription, or when the current one ends within a quarter of its lifetime. A failure
    is reported and retried; the scheduled re-listing keeps the corpus fresh meanwhile."""

    def subscribe(self, url: str, current: Subscription | None) -> Subscription: ...


@runtime_checkable
class Notifiable(Protocol):
    """Optional: the source pushes change notifications (see the module docstring).

    ``headers`` have lower-case names; ``query`` holds the first value of each parameter;
    ``body`` is the raw request body (bounded by the server)."""

    def notification(
        self, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice: ...


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What a connector factory gets besides its own ``[sources.<name>]`` table.

    ``secret(role)`` returns the credential configured as ``credentials.<role>`` (the name
    of an environment variable) as a :class:`~clearance.secrets.Secret`, read once, when
    called; a role that is not configured, or a variable that is unset, is a
    :class:`~clearance.errors.ConfigError` naming the key and the variable, never a value."""

    settings: Settings
    source: SourceSettings
    corpus: CorpusSettings
    secret: Callable[[str], Secret]

    def secret_if_given(self, role: str) -> Secret | None:
        """``secret(role)`` when ``credentials.<role>`` is configured, else ``None``."""
        return self.secret(role) if role in self.source.credentials else None


#: ``factory(context) -> Connector``, registered per ``kind`` with
#: :func:`clearance.sources.registry.register_connector`.
ConnectorFactory = Callable[[SourceContext], Connector]
