"""The Confluence Cloud connector: one space's pages, blog posts, comments and attachments.

Content: every sync lists the pages (``GET /wiki/api/v2/spaces/{id}/pages``) and blog posts
(``…/blogposts``) of the space (``_links.next`` cursor paging) and, per page or blog post, its
attachments (``/wiki/api/v2/{pages|blogposts}/{id}/attachments``) and footer comments
(``…/footer-comments``, replies through ``/wiki/api/v2/footer-comments/{id}/children``).
Confluence has no change feed for a space, so the listing is a snapshot: an item it no longer
names (deleted, trashed, moved to another space) is removed from the index. An item's version
is its ``version.number``, which every edit moves and a restriction change does not, so a
permission change never re-reads content. Bodies are read in storage format (XHTML) by the HTML
loader; an attachment is downloaded and read by the loader of its media type. A footer comment
is a document of its own (its edits re-read it alone); inline comments are not indexed.

Permissions are re-read in full by every permission sync. Who may read a page or blog post is:

* the space's **view** permission (``GET /wiki/api/v2/spaces/{id}/permissions``, operation
  ``read`` on ``space``): users → ``user:<accountId>``, groups → ``group:<groupId>``; a space
  **role** → whoever holds it (``/wiki/api/v2/spaces/{id}/role-assignments?role-id=``, users
  and groups); the access class ``anonymous-users`` → ``Access.anyone_with_link`` (visible to
  nobody in a corpus above PUBLIC);
* narrowed by the **read restrictions** of the content *and of every ancestor*, folders
  included (``/wiki/rest/api/content/{id}/restriction/byOperation/read``, users and groups
  paged with ``start``/``limit``): a reader must pass each restricted level. An intersection of
  groups cannot be stated as principals, so a restricted page's access is spelled out as the
  users who pass every level, groups expanded through their members (read in the same sync);
* anything that cannot be mapped safely makes the content visible to nobody, and ``source
  status`` says why: a principal type or access class other than those above, a parent that is
  neither a page of the space nor a folder, restrictions that cannot be read (403), and a
  restriction answer whose shape is not the documented one — lists missing (not expanded), an
  entry count (``size``, ``totalSize``) that differs from the entries read, a next link that
  leads nowhere, or another operation than ``read``.

Attachments and comments are readable by exactly who may read their page or blog post.
:meth:`ConfluenceConnector.groups` syncs the members of every group the space permissions,
roles and restrictions name (Confluence groups do not nest).

Credentials, one of:

* an Atlassian **API token**, sent as HTTP basic auth with the account's e-mail; read from the
  variable named by ``credentials.api_token`` and sent only to ``base_url``;
* **OAuth 2.0 (3LO)**: ``credentials.client_id``, ``client_secret`` and ``refresh_token`` name
  the variables of the app's client and of a refresh token it was granted. Atlassian rotates
  refresh tokens: each renewal returns a new one and refuses the old one from then on, so the
  newest is kept in a file only its owner can read (``token_file``; never in the index, whose
  readers must never see a credential) and used by the next sync. Requests go to
  ``https://api.atlassian.com/ex/confluence/{cloudId}``, the cloud id configured or found
  through ``accessible-resources`` by the site's URL.

Tokens are held as :class:`~clearance.secrets.Secret` values, revealed only into the
``Authorization`` header, never logged or stored in the index. Next links are followed only
inside the API base's REST API; an attachment download redirected to another host
(Atlassian's media service) goes there without the header.

Change notifications
--------------------
Confluence Cloud pushes events to the webhooks of an Atlassian Connect app (the descriptor's
``webhooks`` module; Cloud has no administrator-configured webhooks and no webhook REST
endpoint for an API-token user). Each event's webhook URL is
``/v1/sources/<name>/notifications?event=<event>`` below the app's ``baseUrl`` (Clearance's
root), because a Cloud event body does not name its event. Every delivery carries
``Authorization: JWT <token>``, signed with HS256 by the app's shared secret (handed to the
app when it is installed, configured as ``credentials.notification_secret``).
:meth:`ConfluenceConnector.notification` takes a delivery only when the signature matches
(compared in constant time), the token has not expired and its ``qsh`` claim is the hash of
this very request (``POST``, the source's notification path, the sorted query with the
event): a token lifted from another request, another source or another event is refused.
Without a secret every notification is refused.

* ``content_permissions_updated``, ``page_moved``, ``page_trashed``, ``page_restored``,
  ``page_removed`` and the ``blog_…`` equivalents change who may read the content, and so
  its attachments, comments and every page below it: they are named from the hierarchy the
  last listing in this process read (no source call while the sender waits). Content that
  listing did not hold, or no listing yet, asks for a full permission sync instead.
* ``space_permissions_updated`` for this space may change every item: a full permission sync.
* Other page, blog post, comment and attachment events name what they carry and make the
  content sync due; any other event changes nothing.

:meth:`ConfluenceConnector.permissions_of` re-reads just the named items the way a full
permission sync does (space permissions, the restrictions of the content and of every
ancestor, folders included), listing the space's pages and blog posts but not every page's
attachments and comments; an item no longer in the space is left out.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import hmac
import html
import json
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urljoin, urlsplit

import httpx
from pydantic import Field, PlainValidator, ValidationInfo

from clearance.errors import SourceError
from clearance.model import parse_principal
from clearance.secrets import Secret
from clearance.sources import rest
from clearance.sources.base import (
    Access,
    Connector,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    Notice,
    PermissionChange,
    SourceContext,
    SourceDocument,
    Tombstone,
    snapshot_pages,
)
from clearance.sources.http import SourceClient
from clearance.sources.options import OPTIONS, Flag, Text, Url
from clearance.sources.options import parse as parse_table
from clearance.sources.options import url as _url
from clearance.sources.registry import register_connector
from clearance.sources.rest import (
    RenewingToken,
    RestConnector,
    Unrepresentable,
    facet,
    inside,
    text,
    timestamp,
    unless_gone,
)
from clearance.validation import Invalid, non_empty

__all__ = [
    "ConfluenceConnector",
    "ConfluenceOptions",
    "RefreshTokenFile",
    "RotatingRefreshToken",
    "confluence_connector",
    "confluence_oauth_connector",
    "parse_options",
]

_V2 = "/wiki/api/v2"
_V1 = "/wiki/rest/api"
_LIST_LIMIT = 250  # the largest page v2 listings accept
_V1_LIMIT = 200  # users and groups asked per page of a restriction or a group's members
_ATTACHMENT = "att:"
_COMMENT = "comment:"
_BLOGPOST = "blogpost:"
_AUTH_URL = "https://auth.atlassian.com"
_API_URL = "https://api.atlassian.com"
_ANONYMOUS = "anonymous-users"
_JWT_LEEWAY_S = 30.0  # clock skew tolerated on a notification token's exp and iat
_CONTENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Events after which the content's access, and that of everything below it, is re-read.
_ACCESS_EVENTS = frozenset(
    {
        "content_permissions_updated",
        "page_moved",
        "page_trashed",
        "page_restored",
        "page_removed",
        "blog_trashed",
        "blog_restored",
        "blog_removed",
    }
)
#: Events whose content the content sync must read again.
_CONTENT_EVENTS = frozenset(
    {
        *(f"page_{what}" for what in ("created", "updated", "moved", "trashed", "restored")),
        "page_removed",
        *(f"blog_{what}" for what in ("created", "updated", "trashed", "restored", "removed")),
        *(f"comment_{what}" for what in ("created", "updated", "removed")),
        *(
            f"attachment_{what}"
            for what in ("created", "updated", "trashed", "restored", "removed")
        ),
    }
)
_SPACE_EVENTS = frozenset({"space_permissions_updated"})


def _site_url(value: object) -> str:
    url = _url(value)
    if urlsplit(url).path.endswith("/wiki"):
        raise Invalid(f"give the site URL without /wiki, got {url!r}")
    return url


def _email(value: object, info: ValidationInfo) -> str:
    """Required, except for a source that signs in with OAuth 2.0."""
    if value == "" and (info.context or {}).get("oauth"):
        return ""
    if not isinstance(value, str) or not value.strip():
        raise Invalid("required")
    return value


@dataclass(frozen=True, slots=True)
class ConfluenceOptions:
    """``[sources.<name>.options]`` of the ``confluence`` kind, validated."""

    __pydantic_config__ = OPTIONS

    base_url: Annotated[str, PlainValidator(_site_url)]
    space_key: Text
    email: Annotated[str, PlainValidator(_email), Field(validate_default=True)] = ""
    attachments: Flag = True
    blogposts: Flag = True
    comments: Flag = True
    cloud_id: Annotated[str | None, non_empty("expected the site's cloud id")] = None
    auth_url: Url = _AUTH_URL
    api_url: Url = _API_URL
    token_file: Annotated[str | None, non_empty("expected a path")] = None


class TokenBasicAuth(httpx.Auth):
    """``Authorization: Basic <email:token>``, the token revealed at the last moment."""

    def __init__(self, email: str, token: Secret) -> None:
        self._email = email
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        pair = f"{self._email}:{self._token.reveal()}".encode()
        request.headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        yield request

    def __repr__(self) -> str:
        return "TokenBasicAuth(Secret('****'))"


class RefreshTokenFile:
    """The newest refresh token of one source, in a file only its owner may read or write.

    The file remembers a digest of the configured refresh token it descends from: when the
    operator configures a new one (a new authorisation), the configured one wins again. Every
    renewal holds an exclusive lock on the file's ``.lock`` neighbour, so two processes syncing
    the same source never spend the same refresh token."""

    def __init__(self, path: Path, configured: Secret) -> None:
        self.path = path
        self._configured = configured
        self._seed = hashlib.sha256(configured.reveal().encode()).hexdigest()

    def __repr__(self) -> str:
        return f"RefreshTokenFile({str(self.path)!r})"

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(
            self.path.with_name(self.path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600
        )
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def current(self) -> Secret:
        """The refresh token to spend next."""
        try:
            kept = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return self._configured
        if not isinstance(kept, dict) or kept.get("seed") != self._seed:
            return self._configured
        token = kept.get("refresh_token")
        if not isinstance(token, str) or not token:
            return self._configured
        return Secret(token)

    def replace(self, token: Secret) -> None:
        """Keep ``token`` as the one to spend next (written whole, then renamed into place)."""
        fresh = self.path.with_name(self.path.name + ".new")
        data = json.dumps({"seed": self._seed, "refresh_token": token.reveal()})
        descriptor = os.open(fresh, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, self.path)


class RotatingRefreshToken(RenewingToken):
    """OAuth 2.0 (3LO) access tokens from a refresh token Atlassian rotates: every renewal
    spends the kept refresh token and keeps the new one the token endpoint returns, before its
    access token is used."""

    def __init__(
        self,
        tokens: SourceClient,
        token_url: str,
        client_id: Secret,
        client_secret: Secret,
        kept: RefreshTokenFile,
        *,
        variable: str = "the refresh token variable",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(tokens, token_url, clock)
        self._client_id = client_id
        self._client_secret = client_secret
        self._kept = kept
        self._variable = variable

    def _request(self) -> tuple[Secret, float]:
        source = self._tokens.source
        with self._kept.locked():
            spent = self._kept.current()
            form = {
                "grant_type": "refresh_token",
                "client_id": self._client_id.reveal(),
                "client_secret": self._client_secret.reveal(),
                "refresh_token": spent.reveal(),
            }
            try:
                response = self._tokens.request("POST", self._token_url, json=form)
            except SourceError as exc:
                if exc.status in (400, 401, 403):
                    raise SourceError(
                        f"source {source!r}: the token endpoint refused the refresh token "
                        f"(HTTP {exc.status}): it was spent or revoked; authorise the app "
                        f"again and set {self._variable}",
                        status=exc.status,
                    ) from None
                raise
            lacking = "an access token and a new refresh token"
            token, lifetime, (renewed,) = self._answer(
                response, "the token endpoint", lacking, "refresh_token"
            )
            try:
                self._kept.replace(renewed)
            except OSError as exc:
                raise SourceError(
                    f"source {source!r}: the new refresh token cannot be kept in "
                    f"{self._kept.path} ({exc.strerror}); authorise the app again"
                ) from None
        return token, lifetime


@dataclass(frozen=True, slots=True)
class _Page:
    """A page or a blog post (``kind``)."""

    id: str
    title: str
    version: str
    parent: str | None
    parent_type: str | None
    webui: str
    kind: str = "page"


@dataclass(slots=True)
class _Listing:
    pages: dict[str, _Page] = field(default_factory=dict)
    attachments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def ids_below(self, page_id: str) -> list[str]:
        """The ids of a page's (or blog post's) attachments, then of its comments."""
        below = self.attachments.get(page_id, []) + self.comments.get(page_id, [])
        return [str(raw["id"]) for raw in below]


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    """What one listing read of a space's tree: the pages and folders below each page or
    folder, and the attachments and comments of each page or blog post."""

    children: Mapping[str, tuple[str, ...]]
    items: Mapping[str, tuple[str, ...]]
    owner: Mapping[str, str]

    def below(self, content_id: str) -> frozenset[str] | None:
        """The content, everything below it and their attachments and comments; ``None``
        when the listing did not hold it."""
        if content_id not in self.children and content_id not in self.items:
            return None
        found: set[str] = set()
        pending = [content_id]
        while pending:
            current = pending.pop()
            if current in found:
                continue
            found.add(current)
            found.update(self.items.get(current, ()))
            pending.extend(self.children.get(current, ()))
        return frozenset(found)


_known_lock = threading.Lock()
_known: dict[tuple[str, str, str], _Hierarchy] = {}


def _number(raw: Mapping[str, Any]) -> str:
    version = raw.get("version")
    number = version.get("number") if isinstance(version, dict) else None
    return str(number) if isinstance(number, int) else ""


class ConfluenceConnector(RestConnector):
    """See the module docstring. Built by the ``confluence`` kind, :func:`confluence_connector`
    or :func:`confluence_oauth_connector`.

    One instance serves one run of syncs. The page tree, restrictions and group members read
    by a content sync are shared by its fetches; a permission sync reads them all again.
    ``api_base`` finds the REST API's base URL (default: ``base_url``), once; ``tokens`` is
    the token endpoint's client, closed with the connector. ``notification_secret`` is the
    Connect app's shared secret that signs notifications (none: every one is refused);
    ``clock`` tells their tokens' expiry."""

    def __init__(
        self,
        source: str,
        options: ConfluenceOptions,
        client: SourceClient,
        api_base: Callable[[SourceClient], str] | None = None,
        tokens: SourceClient | None = None,
        *,
        notification_secret: Secret | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.source = source
        self._notification_secret = notification_secret
        self._clock = clock
        self._owned = () if tokens is None else (tokens,)
        self.options = options
        self.client = client
        self._site = options.base_url.rstrip("/")
        self._find_api = api_base
        self._api: str | None = None if api_base is not None else self._site
        self._api_lock = threading.Lock()
        self._space_id: str | None = None
        self._pages: dict[str, _Page] | None = None
        self._listing: _Listing | None = None
        self._view: Access | None = None
        self._restrictions: dict[str, frozenset[str] | None] = {}
        self._folders: dict[str, tuple[str | None, str | None]] = {}
        self._members: dict[str, frozenset[str]] = {}

    # ------------------------------------------------------------------ plumbing

    @property
    def _base(self) -> str:
        """The REST API's base URL: the site, or the OAuth gateway's for its cloud id."""
        with self._api_lock:
            if self._api is None:
                assert self._find_api is not None
                self._api = self._find_api(self.client).rstrip("/")
            return self._api

    def _ours(self, link: str) -> str | None:
        """``link`` made absolute when it points into the API base's v2 REST API (the only
        links followed with the credentials), else ``None``. Confluence's relative links start
        at ``/wiki``, below the API base."""
        base = self._base
        relative = link.startswith("/wiki/") and not link.startswith("//")
        absolute = base + link if relative else urljoin(base + "/", link)
        return absolute if inside(absolute, base + _V2) else None

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        links = body.get("_links") if isinstance(body, dict) else None
        link = links.get("next") if isinstance(links, dict) else None
        if link is None:
            return None
        absolute = self._ours(link) if isinstance(link, str) else None
        if absolute is None:
            raise self._error("a next link points outside base_url; it is not followed")
        return absolute, None

    def _all(self, path: str, what: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        return self._every(self._base + path, "results", what, params)

    def doc_id(self, native_id: str) -> str:
        return f"confluence:{self.options.space_key}/{native_id}"

    def _space(self) -> str:
        if self._space_id is None:
            found = self._all(f"{_V2}/spaces", "spaces", {"keys": self.options.space_key})
            ids = [s.get("id") for s in found if s.get("key") == self.options.space_key]
            if len(ids) != 1 or not isinstance(ids[0], (str, int)):
                raise self._error(f"space {self.options.space_key!r} not found")
            self._space_id = str(ids[0])
        return self._space_id

    # ------------------------------------------------------------------ content

    def _page(self, raw: Mapping[str, Any], kind: str = "page") -> _Page:
        page_id = raw.get("id")
        if not isinstance(page_id, (str, int)):
            raise self._error(f"{kind}s: an item without an id")
        parent = raw.get("parentId") if kind == "page" else None
        return _Page(
            id=str(page_id),
            title=text(raw.get("title")) or str(page_id),
            version=_number(raw),
            parent=rest.ident(parent),
            parent_type=text(raw.get("parentType")),
            webui=_webui(raw),
            kind=kind,
        )

    def _containers(self) -> dict[str, _Page]:
        """The space's current pages and blog posts, read once per instance."""
        if self._pages is None:
            space = quote(self._space(), safe="")
            params = {"limit": _LIST_LIMIT, "status": "current"}
            kinds = ("page", "blogpost") if self.options.blogposts else ("page",)
            pages: list[_Page] = []
            for kind in kinds:
                raw = self._all(f"{_V2}/spaces/{space}/{kind}s", f"{kind}s", params)
                current = (r for r in raw if r.get("status", "current") == "current")
                pages.extend(self._page(r, kind) for r in current)
            self._pages = {p.id: p for p in pages}
        return self._pages

    def _list(self) -> _Listing:
        """The space's current pages and blog posts with their attachments and comments,
        read once per instance."""
        if self._listing is None:
            listing = _Listing(dict(self._containers()))
            containers = list(listing.pages.values())
            if self.options.attachments:
                found = self.client.map(self._attachments_of, containers)
                listing.attachments = {p.id: f for p, f in zip(containers, found, strict=True)}
            if self.options.comments:
                found = self.client.map(self._comments_of, containers)
                listing.comments = {p.id: f for p, f in zip(containers, found, strict=True)}
            self._listing = listing
            self._publish()
        return self._listing

    @property
    def _known_key(self) -> tuple[str, str, str]:
        return (self.source, self._site, self.options.space_key)

    def _publish(self) -> None:
        """Make the tree this instance listed (and the folders it read) what notifications
        of this source are named from."""
        listing = self._listing
        if listing is None:
            return
        children: dict[str, list[str]] = {}
        for page in listing.pages.values():
            children.setdefault(page.id, [])
            if page.parent is not None:
                children.setdefault(page.parent, []).append(page.id)
        for folder, (parent, _) in self._folders.items():
            children.setdefault(folder, [])
            if parent is not None:
                children.setdefault(parent, []).append(folder)
        items: dict[str, tuple[str, ...]] = {}
        owner: dict[str, str] = {}
        for page_id in listing.pages:
            items[page_id] = tuple(listing.ids_below(page_id))
            owner.update((item, page_id) for item in items[page_id])
        tree = _Hierarchy({k: tuple(v) for k, v in children.items()}, items, owner)
        with _known_lock:
            _known[self._known_key] = tree

    def _attachments_of(self, page: _Page) -> list[dict[str, Any]]:
        path = f"{_V2}/{page.kind}s/{quote(page.id, safe='')}/attachments"
        # none when the page went away while the space was listed
        found: list[dict[str, Any]] = unless_gone(
            lambda: self._all(path, "attachments", {"limit": _LIST_LIMIT}), []
        )
        return [a for a in found if a.get("status", "current") == "current" and a.get("id")]

    def _comments_of(self, page: _Page) -> list[dict[str, Any]]:
        """The footer comments of a page or blog post, replies (at any depth) included."""
        # none when the page (or a comment) went away while the space was listed
        return unless_gone(lambda: self._read_comments(page), [])

    def _read_comments(self, page: _Page) -> list[dict[str, Any]]:
        params = {"limit": _LIST_LIMIT}
        path = f"{_V2}/{page.kind}s/{quote(page.id, safe='')}/footer-comments"
        out: list[dict[str, Any]] = []
        pending = self._all(path, "footer comments", params)
        seen: set[str] = set()
        while pending:
            raw = pending.pop()
            comment_id = raw.get("id")
            if not isinstance(comment_id, (str, int)) or str(comment_id) in seen:
                continue
            seen.add(str(comment_id))
            if raw.get("status", "current") == "current":
                out.append(raw)
            children = f"{_V2}/footer-comments/{quote(str(comment_id), safe='')}/children"
            pending.extend(self._all(children, "comment replies", params))
        return sorted(out, key=lambda c: str(c["id"]))

    def _items(self, listing: _Listing) -> list[ItemRef | Tombstone]:
        items: list[ItemRef | Tombstone] = []
        for page in listing.pages.values():
            ref = page.id if page.kind == "page" else f"{_BLOGPOST}{page.id}"
            items.append(ItemRef(self.doc_id(page.id), f"v{page.version}", ref))
            for raw in listing.attachments.get(page.id, []):
                att = str(raw["id"])
                version = f"v{_number(raw)}:{raw.get('fileId', '')}"
                items.append(ItemRef(self.doc_id(att), version, f"{_ATTACHMENT}{page.id}/{att}"))
            for raw in listing.comments.get(page.id, []):
                comment = str(raw["id"])
                ref = f"{_COMMENT}{page.id}/{comment}"
                items.append(ItemRef(self.doc_id(comment), f"v{_number(raw)}", ref))
        return items

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """Every page, blog post, comment and attachment of the space, as one snapshot."""
        yield from snapshot_pages(ContentPage, self._items(self._list()))

    def fetch(self, item: ItemRef) -> SourceDocument:
        if item.ref.startswith(_ATTACHMENT):
            page_id, _, att_id = item.ref.removeprefix(_ATTACHMENT).partition("/")
            return self._fetch_attachment(item, page_id, att_id)
        if item.ref.startswith(_COMMENT):
            page_id, _, comment_id = item.ref.removeprefix(_COMMENT).partition("/")
            return self._fetch_comment(item, page_id, comment_id)
        if item.ref.startswith(_BLOGPOST):
            return self._fetch_page(item, item.ref.removeprefix(_BLOGPOST), "blogpost")
        return self._fetch_page(item, item.ref, "page")

    def _fetch_page(self, item: ItemRef, page_id: str, kind: str) -> SourceDocument:
        raw = self._storage_format(f"{kind}s", page_id)
        if not isinstance(raw, dict):
            raise self._error(f"{item.doc_id}: the {kind} cannot be read")
        page = self._page(raw, kind)
        value = _storage(raw)
        if value is None:
            raise self._error(f"{item.doc_id}: the {kind} has no storage-format body")
        created = timestamp(raw.get("createdAt"))
        return self._html_document(item, page, page.title, raw, value, created)

    def _fetch_comment(self, item: ItemRef, page_id: str, comment_id: str) -> SourceDocument:
        page = self._list().pages.get(page_id)
        raw = self._storage_format("footer-comments", comment_id)
        value = _storage(raw) if isinstance(raw, dict) else None
        if page is None or value is None:
            raise self._error(f"{item.doc_id}: the comment cannot be read")
        return self._html_document(item, page, f"Comment on {page.title}", raw, value)

    def _storage_format(self, kind: str, content_id: str) -> Any:
        """One page, blog post or comment (``kind``) with its body in storage format."""
        url = f"{self._base}{_V2}/{kind}/{quote(content_id, safe='')}"
        return self.client.get_json(url, params={"body-format": "storage"})

    def _html_document(
        self,
        item: ItemRef,
        page: _Page,
        title: str,
        raw: Mapping[str, Any],
        body: str,
        created_at: datetime | None = None,
    ) -> SourceDocument:
        """A page, blog post or comment (``raw``, its storage-format ``body``) as an HTML
        document, readable by who may read ``page``."""
        html_page = (
            f"<html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>"
        )
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=title,
            uri=self._web(page.webui),
            access=self._access(page.id),
            media_type="text/html",
            data=html_page.encode(),
            created_at=created_at,
            modified_at=timestamp(facet(raw, "version").get("createdAt")),
            file_name=title,
        )

    def _fetch_attachment(self, item: ItemRef, page_id: str, att_id: str) -> SourceDocument:
        listed = self._list().attachments.get(page_id, [])
        raw = next((a for a in listed if str(a.get("id")) == att_id), None)
        if raw is None:
            raise self._error(f"{item.doc_id} is gone")
        title = text(raw.get("title")) or att_id
        media_type = rest.media_type(text(raw.get("mediaType")), title)
        data = rest.content(media_type, lambda: self._download(raw, item.doc_id, page_id))
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=title,
            uri=self._web(_webui(raw)),
            access=self._access(page_id),
            media_type=media_type,
            data=data,
            created_at=timestamp(raw.get("createdAt")),
            file_name=title,
        )

    def _web(self, webui: str) -> str:
        return f"{self._site}/wiki{webui}" if webui.startswith("/") else ""

    def _download(self, raw: Mapping[str, Any], doc_id: str, page_id: str) -> bytes:
        """The attachment's bytes from under the API base. Confluence redirects to its media
        service; httpx drops the ``Authorization`` header on a redirect to another host, so
        the credentials stay with the API base. Through the OAuth gateway the documented v1
        download is used; with an API token, the attachment's own download link."""
        if self._base != self._site:
            att = quote(str(raw.get("id")), safe="")
            url = f"{self._base}{_V1}/content/{quote(page_id, safe='')}/child/attachment/{att}/download"
        else:
            link = text(raw.get("downloadLink")) or text(facet(raw, "_links").get("download"))
            if link is None or not link.startswith("/") or link.startswith("//"):
                raise self._error(f"{doc_id}: no download link under base_url")
            url = f"{self._base}/wiki{link}"
        return self.client.request("GET", url, follow_redirects=True).content

    # ------------------------------------------------------------------ permissions

    def _space_view(self) -> Access:
        """Who the space's ``read`` permission names (with anonymous access, or why it
        cannot be said), read once per instance."""
        if self._view is None:
            path = f"{_V2}/spaces/{quote(self._space(), safe='')}/permissions"
            principals: set[str] = set()
            anyone, unrepresentable = False, None
            for raw in self._all(path, "space permissions", {"limit": _LIST_LIMIT}):
                operation = facet(raw, "operation")
                if (operation.get("key"), operation.get("targetType")) != ("read", "space"):
                    continue
                principal = facet(raw, "principal")
                try:
                    granted, anonymous = self._grantee(principal.get("type"), principal.get("id"))
                except Unrepresentable as exc:
                    unrepresentable = unrepresentable or str(exc)
                    continue
                principals |= granted
                anyone = anyone or anonymous
            self._view = Access(frozenset(principals), anyone, unrepresentable)
        return self._view

    def _grantee(self, kind: Any, ident: Any) -> tuple[set[str], bool]:
        """The principals (and whether anonymous access) one space view permission grants."""
        space = self.options.space_key
        if kind in ("user", "group") and isinstance(ident, str) and ident:
            return {rest.principal(f"{kind}:{ident}")}, False
        if kind == "access_class" and isinstance(ident, str):
            return self._access_class(ident)
        if kind == "role" and isinstance(ident, str) and ident:
            return self._role_holders(ident)
        raise Unrepresentable(
            f"space {space}: a view permission for a principal of type {kind!r} cannot be mapped"
        )

    def _access_class(self, ident: str) -> tuple[set[str], bool]:
        if ident == _ANONYMOUS:
            return set(), True
        raise Unrepresentable(
            f"space {self.options.space_key}: a view permission for the access class "
            f"{ident!r} cannot be stated as principals"
        )

    def _role_holders(self, role_id: str) -> tuple[set[str], bool]:
        """Who holds the space role ``role_id``: its users and groups, anonymous access for
        the access class of anonymous users; anything else cannot be mapped."""
        space = self.options.space_key
        path = f"{_V2}/spaces/{quote(self._space(), safe='')}/role-assignments"
        try:
            found = self._all(path, "role assignments", {"role-id": role_id, "limit": _LIST_LIMIT})
        except SourceError as exc:
            if exc.status in (403, 404):
                raise Unrepresentable(
                    f"space {space}: the holders of role {role_id} cannot be read "
                    f"(HTTP {exc.status})"
                ) from None
            raise
        principals: set[str] = set()
        anonymous = False
        for assignment in found:
            held = assignment.get("roleId")
            if held != role_id:
                if isinstance(held, str) and held:
                    continue  # another role's holder
                raise Unrepresentable(f"space {space}: a holder of role {role_id} names no role")
            principal = facet(assignment, "principal")
            kind, ident = principal.get("principalType"), principal.get("principalId")
            if kind in ("USER", "GROUP") and isinstance(ident, str) and ident:
                principals.add(rest.principal(f"{str(kind).lower()}:{ident}"))
            elif kind == "ACCESS_CLASS" and isinstance(ident, str):
                anonymous = self._access_class(ident)[1] or anonymous
            else:
                raise Unrepresentable(
                    f"space {space}: role {role_id} is held by a principal of type {kind!r}, "
                    "which cannot be mapped"
                )
        return principals, anonymous

    def _restriction(self, content_id: str) -> frozenset[str] | None:
        """The principals of the content's read restriction, ``None`` when unrestricted.
        Users and groups are paged together (``start``/``limit``) until neither has more:
        a next link, or a page as full as the server's own ``limit``. An answer that is not
        the documented shape is :class:`Unrepresentable`."""
        if content_id in self._restrictions:
            return self._restrictions[content_id]
        path = (
            f"{self._base}{_V1}/content/{quote(content_id, safe='')}/restriction/byOperation/read"
        )
        params = {"expand": "restrictions.user,restrictions.group", "limit": _V1_LIMIT, "start": 0}
        read: dict[str, set[str]] = {"user": set(), "group": set()}
        totals: dict[str, int] = {}
        more = {"user": True, "group": True}
        start = 0

        def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
            if not any(more.values()):
                return None
            return path, {**params, "start": start}

        for body in self.client.pages(path, following, params=params):
            parts = self._restriction_parts(content_id, body)
            steps: list[int] = []
            for kind, part in parts.items():
                if not more[kind]:
                    continue  # this list ended on an earlier page
                results = part["results"]
                first = part.get("start")
                if isinstance(first, int) and first != start and results:
                    raise Unrepresentable(
                        f"content {content_id}: its restriction answered from entry {first} "
                        f"when asked from {start}"
                    )
                read[kind].update(self._restricted(content_id, kind, e) for e in results)
                total = part.get("totalSize")
                if isinstance(total, int) and total > 0:
                    totals[kind] = total
                limit = part.get("limit")
                full = isinstance(limit, int) and 0 < limit <= len(results)
                linked = "next" in facet(part, "_links")
                more[kind] = bool(results) and (
                    linked or full or len(read[kind]) < totals.get(kind, 0)
                )
                if results and more[kind]:
                    steps.append(len(results))
                elif linked or len(read[kind]) < totals.get(kind, 0):
                    raise Unrepresentable(
                        f"content {content_id}: its read restriction's {kind} list says there "
                        f"is more than the {len(read[kind])} entries it returned, and gives none"
                    )
            start += min(steps, default=0)
        for kind, total in totals.items():
            if total != len(read[kind]):
                raise Unrepresentable(
                    f"content {content_id}: its read restriction counts {total} {kind}s, "
                    f"{len(read[kind])} were returned"
                )
        found = frozenset(read["user"]) | frozenset(read["group"])
        result = found if found else None
        self._restrictions[content_id] = result
        return result

    def _restriction_parts(self, content_id: str, body: Any) -> dict[str, Mapping[str, Any]]:
        """The ``user`` and ``group`` lists of one restriction answer, checked against the
        documented shape (any difference is :class:`Unrepresentable`)."""
        if not isinstance(body, dict) or body.get("operation") != "read":
            operation = body.get("operation") if isinstance(body, dict) else None
            raise Unrepresentable(
                f"content {content_id}: its restriction answer is for the operation "
                f"{operation!r}, not read"
            )
        restrictions = body.get("restrictions")
        parts: dict[str, Mapping[str, Any]] = {}
        for kind in ("user", "group"):
            part = restrictions.get(kind) if isinstance(restrictions, dict) else None
            results = part.get("results") if isinstance(part, dict) else None
            if not isinstance(part, dict) or not isinstance(results, list):
                raise Unrepresentable(
                    f"content {content_id}: its read restriction came without its {kind} list "
                    "(not expanded); who it admits is unknown"
                )
            size = part.get("size")
            if size is not None and size != len(results):
                raise Unrepresentable(
                    f"content {content_id}: its read restriction's {kind} list says {size} "
                    f"entries and holds {len(results)}"
                )
            parts[kind] = part
        return parts

    def _restricted(self, content_id: str, kind: str, entry: Any) -> str:
        """The principal of one entry of a read restriction."""
        if not isinstance(entry, dict):
            raise Unrepresentable(f"content {content_id}: a restriction entry cannot be read")
        if (
            kind == "user"
            and entry.get("type") in ("known", "user")
            and text(entry.get("accountId"))
        ):
            return rest.principal(f"user:{entry['accountId']}")
        if kind == "group" and entry.get("type") == "group" and text(entry.get("id")):
            return rest.principal(f"group:{entry['id']}")
        raise Unrepresentable(
            f"content {content_id}: a read restriction on a principal of type "
            f"{entry.get('type')!r} cannot be mapped"
        )

    def _folder(self, folder_id: str, page_id: str) -> tuple[str | None, str | None]:
        """A folder's parent and its type (``GET /wiki/api/v2/folders/{id}``)."""
        if folder_id not in self._folders:
            try:
                raw = self.client.get_json(f"{self._base}{_V2}/folders/{quote(folder_id, safe='')}")
            except SourceError as exc:
                if exc.status not in (403, 404):
                    raise
                raise Unrepresentable(
                    f"page {page_id}: its ancestor folder {folder_id} cannot be read "
                    f"(HTTP {exc.status})"
                ) from None
            parent = raw.get("parentId") if isinstance(raw, dict) else None
            self._folders[folder_id] = (
                rest.ident(parent),
                text(raw.get("parentType")) if isinstance(raw, dict) else None,
            )
        return self._folders[folder_id]

    def _chain(self, page_id: str) -> list[str]:
        """The page (or blog post) and its ancestors, pages and folders, from the space's
        page tree and the folders it names."""
        pages = self._containers()
        chain: list[str] = []
        current: str | None = page_id
        kind: str | None = "page"
        while current is not None:
            if current in chain:
                raise Unrepresentable(f"page {page_id}: its ancestors form a loop at {current}")
            chain.append(current)
            if kind == "folder":
                current, kind = self._folder(current, page_id)
            else:
                page = pages.get(current)
                if page is None:
                    raise Unrepresentable(
                        f"page {page_id}: ancestor {current} is not a page of space "
                        f"{self.options.space_key} (its restrictions cannot be followed)"
                    )
                current, kind = page.parent, page.parent_type
            if current is not None and kind not in (None, "page", "folder"):
                raise Unrepresentable(
                    f"page {page_id}: its ancestor {current} is a {kind}, "
                    "whose restrictions are not read"
                )
            kind = kind or "page"
        return chain

    def _users(self, principals: frozenset[str]) -> frozenset[str]:
        """``principals`` with every group replaced by its member users."""
        out: set[str] = set()
        for principal in principals:
            if principal.startswith("group:"):
                out |= self._group_members(principal.removeprefix("group:"))
            else:
                out.add(principal)
        return frozenset(out)

    def _access(self, page_id: str) -> Access:
        """Space view ∩ the read restriction of the page and of each ancestor."""
        try:
            view = self._space_view()
            if view.unrepresentable is not None:
                return Access.nobody(view.unrepresentable)
            levels = [r for r in map(self._restriction, self._chain(page_id)) if r is not None]
            if not levels:
                return view
            allowed = None if view.anyone_with_link else self._users(view.principals)
            for level in levels:
                users = self._users(level)
                allowed = users if allowed is None else allowed & users
            return Access(frozenset(allowed or ()))
        except Unrepresentable as exc:
            return Access.nobody(str(exc))
        except SourceError as exc:
            if exc.status in (403, 404):
                return Access.nobody(
                    f"page {page_id}: its permissions cannot be read (HTTP {exc.status})"
                )
            raise

    def _group_members(self, group_id: str) -> frozenset[str]:
        if group_id not in self._members:
            self._members[group_id] = self._read_members(group_id)
        return self._members[group_id]

    def _read_members(self, group_id: str) -> frozenset[str]:
        path = f"{self._base}{_V1}/group/{quote(group_id, safe='')}/membersByGroupId"
        params = {"limit": _V1_LIMIT, "start": 0}

        def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
            size = len(body.get("results") or []) if isinstance(body, dict) else 0
            limit = body.get("limit") if isinstance(body, dict) else None
            full = size >= (limit if isinstance(limit, int) and limit > 0 else _V1_LIMIT)
            if size == 0 or (not full and "next" not in facet(body, "_links")):
                return None
            return path, {**params, "start": int(body.get("start") or 0) + size}

        # a group that was deleted has no members
        found: list[dict[str, Any]] = unless_gone(
            lambda: self._every(path, "results", "group members", params, following=following), []
        )
        out: set[str] = set()
        for member in found:
            account = text(member.get("accountId"))
            if account and member.get("accountType", "atlassian") == "atlassian":
                try:
                    out.add(parse_principal(f"user:{account}"))
                except ValueError:
                    continue  # an id no principal can carry grants no one
        return frozenset(out)

    def _forget(self) -> None:
        """Drop what this instance read of the space (the space id aside): a permission
        sync must state the access of *now*, not of when an earlier content sync of the
        same run read it — the corpus's ACL-sync time is set when it completes."""
        self._pages = None
        self._listing = None
        self._view = None
        self._restrictions = {}
        self._folders = {}
        self._members = {}

    def _read_permissions(self) -> list[PermissionChange]:
        self._forget()
        listing = self._list()
        page_ids = list(listing.pages)
        self.client.map(self._restriction_or_none, page_ids)  # fill the cache concurrently
        changes: list[PermissionChange] = []
        for page_id in page_ids:
            access = self._access(page_id)
            for content_id in (page_id, *listing.ids_below(page_id)):
                changes.append(PermissionChange(self.doc_id(content_id), access))
        self._publish()
        return changes

    def _restriction_or_none(self, content_id: str) -> None:
        try:
            self._restriction(content_id)
        except Unrepresentable:
            pass  # stated again, as the page's reason, when its access is computed
        except SourceError as exc:
            if exc.status not in (403, 404):
                raise

    def permissions_of(self, doc_ids: Sequence[str]) -> list[PermissionChange]:
        """The current access of the named pages, blog posts, attachments and comments,
        read as a full permission sync reads it. An attachment or comment takes its page's
        access; one this process has not listed is looked up at the source. An item no
        longer in the space is left out."""
        self._forget()
        pages = self._containers()
        with _known_lock:
            tree = _known.get(self._known_key)
        prefix = self.doc_id("")
        changes: list[PermissionChange] = []
        for doc_id in dict.fromkeys(doc_ids):
            native = doc_id.removeprefix(prefix)
            if not doc_id.startswith(prefix) or not native:
                continue
            try:
                container = native if native in pages else self._container_of(native, tree)
            except Unrepresentable as exc:
                changes.append(PermissionChange(doc_id, Access.nobody(str(exc))))
                continue
            if container is not None and container in pages:
                changes.append(PermissionChange(doc_id, self._access(container)))
        return changes

    def _container_of(self, content_id: str, tree: _Hierarchy | None) -> str | None:
        """The page or blog post an attachment or footer comment belongs to: from the last
        listing, else from the source (``None``: no such current item)."""
        if tree is not None and content_id in tree.owner:
            return tree.owner[content_id]
        for kind in ("footer-comments", "attachments"):
            path = f"{self._base}{_V2}/{kind}/{quote(content_id, safe='')}"
            try:
                raw = self.client.get_json(path)
            except SourceError as exc:
                if exc.status == 404:
                    continue
                if exc.status == 403:
                    raise Unrepresentable(
                        f"content {content_id}: it cannot be read (HTTP {exc.status})"
                    ) from None
                raise
            if not isinstance(raw, dict) or raw.get("status", "current") != "current":
                return None
            return rest.ident(raw.get("pageId") or raw.get("blogPostId"))
        return None

    # ------------------------------------------------------------------ notifications

    def notification(
        self, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice:
        """One Connect webhook delivery, checked and mapped to what changed (see the module
        docstring). Never calls the source."""
        if not self._authentic(headers.get("authorization", ""), query):
            return Notice.refuse(401, "the notification is not authenticated")
        event = query.get("event", "")
        if not event:
            return Notice.refuse(400, "the notification names no event")
        try:
            message = json.loads(body)
        except ValueError:
            return Notice.refuse(400, "the notification is not valid JSON")
        if not isinstance(message, dict):
            return Notice.refuse(400, "the notification is not a JSON object")
        if event in _SPACE_EVENTS:
            key = facet(message, "space").get("key")
            if isinstance(key, str) and key != self.options.space_key:
                return Notice()  # another space's permissions
            return Notice.unknown_changes()
        content = event in _CONTENT_EVENTS
        if event not in _ACCESS_EVENTS and not content:
            return Notice()
        carried = _carried(message)
        if event not in _ACCESS_EVENTS:
            return Notice.changed(map(self.doc_id, carried), content=True)
        with _known_lock:
            tree = _known.get(self._known_key)
        named: set[str] = set()
        for content_id in carried:
            below = tree.below(content_id) if tree is not None else None
            if below is None:
                return Notice.unknown_changes(content=content)
            named |= below
        if not named:
            return Notice.unknown_changes(content=content)
        return Notice.changed(map(self.doc_id, sorted(named)), content=content)

    def _authentic(self, authorization: str, query: Mapping[str, str]) -> bool:
        """Whether ``authorization`` is a Connect JWT for this request: HS256 under the
        shared secret, unexpired, its ``qsh`` the hash of this request."""
        scheme, _, token = authorization.partition(" ")
        if self._notification_secret is None or scheme != "JWT" or token.count(".") != 2:
            return False
        encoded_header, encoded_claims, encoded_signature = token.strip().split(".")
        try:
            header = json.loads(_unbase64(encoded_header))
            claims = json.loads(_unbase64(encoded_claims))
            signature = _unbase64(encoded_signature)
        except (ValueError, binascii.Error):
            return False
        if not isinstance(header, dict) or header.get("alg") != "HS256":
            return False
        expected = hmac.new(
            self._notification_secret.reveal().encode(),
            f"{encoded_header}.{encoded_claims}".encode(),
            hashlib.sha256,
        ).digest()
        if not hmac.compare_digest(signature, expected) or not isinstance(claims, dict):
            return False
        now = self._clock()
        expires, issued = _seconds(claims.get("exp")), _seconds(claims.get("iat"))
        if expires is None or expires + _JWT_LEEWAY_S < now:
            return False
        if issued is not None and issued - _JWT_LEEWAY_S > now:
            return False
        qsh = claims.get("qsh")
        return isinstance(qsh, str) and hmac.compare_digest(qsh, self._query_hash(query))

    def _query_hash(self, query: Mapping[str, str]) -> str:
        """Connect's query string hash of a ``POST`` of ``query`` to this source's
        notification path (relative to the app's base URL)."""
        path = f"/v1/sources/{quote(self.source, safe='')}/notifications"
        pairs = sorted((quote(k, safe=""), quote(v, safe="")) for k, v in query.items())
        canonical = "&".join(f"{k}={v}" for k, v in pairs if k != "jwt")
        return hashlib.sha256(f"POST&{path}&{canonical}".encode()).hexdigest()

    def groups(self) -> GroupSnapshot:
        """The Confluence groups the space permissions, roles and restrictions name, with
        their members. Reads the permissions to learn which those are; the permission listing
        of the same sync then reuses what it read."""
        self._snapshot = self._read_permissions()
        named = set(self._space_view().principals)
        for level in self._restrictions.values():
            named |= level or frozenset()
        ids = sorted(p.removeprefix("group:") for p in named if p.startswith("group:"))
        members = self.client.map(self._group_members, ids)
        return GroupSnapshot(dict(zip(ids, members, strict=True)))


def _unbase64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _seconds(value: Any) -> float | None:
    """A JWT NumericDate claim, or ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _content_id(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    value = raw.get("idAsString", raw.get("id"))
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    found = str(value)
    return found if _CONTENT_ID.fullmatch(found) else None


def _carried(message: Mapping[str, Any]) -> list[str]:
    """The ids of the content a webhook body carries: its page, blog post or content, its
    comment, its attachments."""
    found: list[str] = []
    for key in ("content", "page", "blog", "comment", "attachment"):
        found.append(_content_id(message.get(key)) or "")
    attachments = message.get("attachments")
    for raw in attachments if isinstance(attachments, list) else ():
        found.append(_content_id(raw) or "")
    return [content_id for content_id in dict.fromkeys(found) if content_id]


def _webui(raw: Mapping[str, Any]) -> str:
    """The content's web UI path (``_links.webui``), or ``""``."""
    return text(facet(raw, "_links").get("webui")) or ""


def _storage(raw: Mapping[str, Any]) -> str | None:
    value = facet(facet(raw, "body"), "storage").get("value")
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- building


def parse_options(name: str, raw: Mapping[str, Any], *, oauth: bool = False) -> ConfluenceOptions:
    """Validate ``[sources.<name>.options]`` of a ``confluence`` source (``oauth``: the
    source authenticates with OAuth 2.0, so no e-mail is needed)."""
    return parse_table(ConfluenceOptions, raw, f"sources.{name}.options", oauth=oauth)


def _client(
    name: str, auth: httpx.Auth | None, max_concurrency: int, sleep: Callable[[float], None]
) -> SourceClient:
    """A client of source ``name`` that asks Confluence for JSON."""
    return SourceClient(
        source=name,
        auth=auth,
        headers={"Accept": "application/json"},
        max_concurrency=max_concurrency,
        sleep=sleep,
    )


def confluence_connector(
    name: str,
    options: ConfluenceOptions,
    token: Secret,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
    notification_secret: Secret | None = None,
    clock: Callable[[], float] = time.time,
) -> ConfluenceConnector:
    """A connector for ``options``, authenticating with the API ``token`` (``sleep``:
    injectable for tests of throttling) and checking notifications signed with
    ``notification_secret``."""
    client = _client(name, TokenBasicAuth(options.email, token), max_concurrency, sleep)
    return ConfluenceConnector(
        name, options, client, notification_secret=notification_secret, clock=clock
    )


def confluence_oauth_connector(
    name: str,
    options: ConfluenceOptions,
    *,
    client_id: Secret,
    client_secret: Secret,
    refresh_token: Secret,
    token_file: Path,
    variable: str = "the refresh token variable",
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
    notification_secret: Secret | None = None,
) -> ConfluenceConnector:
    """A connector for ``options`` through Atlassian's OAuth 2.0 (3LO) gateway, renewing its
    access token with the newest refresh token kept in ``token_file`` (``refresh_token``, the
    configured one, until a renewal replaced it). ``variable`` names the configured one's
    environment variable in errors."""
    tokens = _client(name, None, 1, sleep)
    auth = RotatingRefreshToken(
        tokens,
        f"{options.auth_url}/oauth/token",
        client_id,
        client_secret,
        RefreshTokenFile(token_file, refresh_token),
        variable=variable,
    )
    client = _client(name, auth, max_concurrency, sleep)

    def api_base(client: SourceClient) -> str:
        cloud_id = options.cloud_id
        if cloud_id is None:
            found = client.get_json(f"{options.api_url}/oauth/token/accessible-resources")
            sites = found if isinstance(found, list) else []
            matches = [
                s.get("id")
                for s in sites
                if isinstance(s, dict)
                and isinstance(s.get("url"), str)
                and s["url"].rstrip("/") == options.base_url
            ]
            if len(matches) != 1 or not isinstance(matches[0], str) or not matches[0]:
                raise SourceError(
                    f"source {name!r}: {options.base_url} is not among the sites the OAuth "
                    "grant reaches (accessible-resources); set options.cloud_id or authorise "
                    "the app for that site"
                )
            cloud_id = matches[0]
        return f"{options.api_url}/ex/confluence/{quote(cloud_id, safe='')}"

    return ConfluenceConnector(
        name, options, client, api_base, tokens, notification_secret=notification_secret
    )


def _build(context: SourceContext) -> Connector:
    source = context.source
    oauth = "refresh_token" in source.credentials
    options = parse_options(source.name, source.options, oauth=oauth)
    notification_secret = context.secret_if_given("notification_secret")
    if not oauth:
        return confluence_connector(
            source.name,
            options,
            context.secret("api_token"),
            max_concurrency=source.max_concurrency,
            notification_secret=notification_secret,
        )
    settings = context.settings
    if options.token_file is not None:
        token_file = Path(options.token_file).expanduser()
        token_file = token_file if token_file.is_absolute() else settings.root / token_file
    else:
        token_file = settings.db_path.parent / f"{source.name}.confluence-oauth.json"
    return confluence_oauth_connector(
        source.name,
        options,
        client_id=context.secret("client_id"),
        client_secret=context.secret("client_secret"),
        refresh_token=context.secret("refresh_token"),
        token_file=token_file,
        variable=source.credentials["refresh_token"],
        max_concurrency=source.max_concurrency,
        notification_secret=notification_secret,
    )


register_connector("confluence", _build)
