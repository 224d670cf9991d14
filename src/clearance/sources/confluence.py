"""The Confluence Cloud connector: one space's pages and attachments, kept in step.

Content: every sync lists the pages of the space (``GET /wiki/api/v2/spaces/{id}/pages``,
``_links.next`` cursor paging) and, per page, its attachments
(``/wiki/api/v2/pages/{id}/attachments``). Confluence has no change feed for a space, so the
listing is a snapshot: a page or attachment it no longer names (deleted, trashed, moved to
another space) is removed from the index. An item's version is its ``version.number``, which
every edit moves and a restriction change does not, so a permission change never re-reads
content. A page's body is fetched in storage format (XHTML) and read by the HTML loader; an
attachment is downloaded and read by the loader of its media type.

Permissions are re-read in full by every permission sync. Who may read a page is:

* the space's **view** permission (``GET /wiki/api/v2/spaces/{id}/permissions``, operation
  ``read`` on ``space``): users → ``user:<accountId>``, groups → ``group:<groupId>``; anonymous
  access → ``Access.anyone_with_link`` (visible to nobody in a corpus above PUBLIC);
* narrowed by the **read restrictions** of the page *and of every ancestor*
  (``/wiki/rest/api/content/{id}/restriction/byOperation/read``, users and groups paged past
  200): a reader must pass each restricted level. An intersection of groups cannot be stated
  as principals, so a restricted page's access is spelled out as the users who pass every
  level, groups expanded through their members (read in the same sync);
* anything that cannot be mapped safely — a principal type other than user or group, a
  parent that is not a page of the space, restrictions that cannot be read (403) — makes the
  page visible to nobody, and ``source status`` says why.

An attachment is readable by exactly who may read its page. :meth:`ConfluenceConnector.groups`
syncs the members of every group the space permissions and restrictions name (Confluence
groups do not nest).

Credentials: an Atlassian API token, sent as HTTP basic auth with the account's e-mail; the
token is read from the variable named by ``credentials.api_token``, held as a
:class:`~clearance.secrets.Secret` and revealed only into the ``Authorization`` header of
requests to ``base_url``. Next links are followed only inside ``base_url``'s REST API; an
attachment download redirected to another host (Atlassian's media service) goes there
without the header.
"""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import httpx

from clearance.errors import ConfigError, SourceError
from clearance.model import parse_principal
from clearance.secrets import Secret
from clearance.sources.base import (
    Access,
    Connector,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    PermissionChange,
    PermissionPage,
    SourceContext,
    SourceDocument,
    Tombstone,
)
from clearance.sources.http import SourceClient
from clearance.sources.registry import register_connector
from clearance.sources.rest import Unrepresentable, string_option, text, timestamp
from clearance.sources.sync import MEDIA_SUFFIXES

__all__ = ["ConfluenceConnector", "ConfluenceOptions", "confluence_connector", "parse_options"]

_OPTIONS = frozenset({"base_url", "email", "space_key", "attachments"})
_V2 = "/wiki/api/v2"
_V1 = "/wiki/rest/api"
_LIST_LIMIT = 250  # the largest page v2 listings accept
_V1_LIMIT = 200  # users and groups per page of a restriction or a group's members
_PAGE = 200  # permission changes per page handed to the engine
_SUFFIX_MEDIA = {suffix: media for media, suffix in MEDIA_SUFFIXES.items()}
_ATTACHMENT = "att:"


@dataclass(frozen=True, slots=True)
class ConfluenceOptions:
    """``[sources.<name>.options]`` of the ``confluence`` kind, validated."""

    base_url: str
    email: str
    space_key: str
    attachments: bool = True


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


@dataclass(frozen=True, slots=True)
class _Page:
    id: str
    title: str
    version: str
    parent: str | None
    parent_type: str | None
    webui: str


@dataclass(slots=True)
class _SpaceView:
    """Who may view the space: principals, anonymous access, or why it cannot be said."""

    principals: frozenset[str] = frozenset()
    anonymous: bool = False
    unrepresentable: str | None = None


@dataclass(slots=True)
class _Listing:
    pages: dict[str, _Page] = field(default_factory=dict)
    attachments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _number(raw: Mapping[str, Any]) -> str:
    version = raw.get("version")
    number = version.get("number") if isinstance(version, dict) else None
    return str(number) if isinstance(number, int) else ""


class ConfluenceConnector:
    """See the module docstring. Built by the ``confluence`` kind or :func:`confluence_connector`.

    One instance serves one run of syncs. The page tree, restrictions and group members read
    by a content sync are shared by its fetches; a permission sync reads them all again."""

    def __init__(self, source: str, options: ConfluenceOptions, client: SourceClient) -> None:
        self.source = source
        self.options = options
        self.client = client
        self._base = options.base_url.rstrip("/")
        self._space_id: str | None = None
        self._listing: _Listing | None = None
        self._view: _SpaceView | None = None
        self._restrictions: dict[str, frozenset[str] | None] = {}
        self._members: dict[str, frozenset[str]] = {}
        self._snapshot: list[PermissionChange] | None = None

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------ plumbing

    def _error(self, message: str) -> SourceError:
        return SourceError(f"source {self.source!r}: {message}")

    def _ours(self, link: str) -> str | None:
        """``link`` made absolute when it points into ``base_url``'s v2 REST API (the only
        links followed with the token), else ``None``."""
        absolute = urljoin(self._base + "/", link)
        parts, base = urlsplit(absolute), urlsplit(self._base)
        inside = (parts.scheme, parts.netloc) == (
            base.scheme,
            base.netloc,
        ) and parts.path.startswith(base.path + _V2 + "/")
        return absolute if inside and "/../" not in parts.path + "/" else None

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        links = body.get("_links") if isinstance(body, dict) else None
        link = links.get("next") if isinstance(links, dict) else None
        if link is None:
            return None
        absolute = self._ours(link) if isinstance(link, str) else None
        if absolute is None:
            raise self._error("a next link points outside base_url; it is not followed")
        return absolute, None

    def _results(self, body: Any, what: str) -> list[dict[str, Any]]:
        values = body.get("results") if isinstance(body, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
            raise self._error(f"{what}: the response has no 'results' list")
        return values

    def _all(self, path: str, what: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        out: list[Any] = []
        for body in self.client.pages(self._base + path, self._next, params=params):
            out.extend(self._results(body, what))
        return out

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

    def _page(self, raw: Mapping[str, Any]) -> _Page:
        page_id = raw.get("id")
        if not isinstance(page_id, (str, int)):
            raise self._error("pages: a page without an id")
        parent = raw.get("parentId")
        links = raw.get("_links")
        webui = links.get("webui") if isinstance(links, dict) else None
        return _Page(
            id=str(page_id),
            title=text(raw.get("title")) or str(page_id),
            version=_number(raw),
            parent=str(parent) if isinstance(parent, (str, int)) and parent != "" else None,
            parent_type=text(raw.get("parentType")),
            webui=webui if isinstance(webui, str) else "",
        )

    def _list(self) -> _Listing:
        """The space's current pages (and their attachments), read once per instance."""
        if self._listing is None:
            raw = self._all(
                f"{_V2}/spaces/{quote(self._space(), safe='')}/pages",
                "pages",
                {"limit": _LIST_LIMIT, "status": "current"},
            )
            pages = [self._page(r) for r in raw if r.get("status", "current") == "current"]
            listing = _Listing({p.id: p for p in pages})
            if self.options.attachments:
                found = self.client.map(self._attachments_of, list(listing.pages))
                listing.attachments = dict(zip(listing.pages, found, strict=True))
            self._listing = listing
        return self._listing

    def _attachments_of(self, page_id: str) -> list[dict[str, Any]]:
        path = f"{_V2}/pages/{quote(page_id, safe='')}/attachments"
        try:
            found = self._all(path, "attachments", {"limit": _LIST_LIMIT})
        except SourceError as exc:
            if exc.status != 404:
                raise
            return []  # the page went away while the space was listed
        return [a for a in found if a.get("status", "current") == "current" and a.get("id")]

    def _items(self, listing: _Listing) -> list[ItemRef | Tombstone]:
        items: list[ItemRef | Tombstone] = []
        for page in listing.pages.values():
            items.append(ItemRef(self.doc_id(page.id), f"v{page.version}", page.id))
            for raw in listing.attachments.get(page.id, []):
                att = str(raw["id"])
                version = f"v{_number(raw)}:{raw.get('fileId', '')}"
                items.append(ItemRef(self.doc_id(att), version, f"{_ATTACHMENT}{page.id}/{att}"))
        return items

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """Every page and attachment of the space, as one snapshot (no change feed)."""
        items = self._items(self._list())
        for start in range(0, max(len(items), 1), _PAGE):
            last = start + _PAGE >= len(items)
            yield ContentPage(items[start : start + _PAGE], None, snapshot=True, last=last)

    def fetch(self, item: ItemRef) -> SourceDocument:
        if item.ref.startswith(_ATTACHMENT):
            page_id, _, att_id = item.ref.removeprefix(_ATTACHMENT).partition("/")
            return self._fetch_attachment(item, page_id, att_id)
        return self._fetch_page(item)

    def _fetch_page(self, item: ItemRef) -> SourceDocument:
        raw = self.client.get_json(
            f"{self._base}{_V2}/pages/{quote(item.ref, safe='')}",
            params={"body-format": "storage"},
        )
        if not isinstance(raw, dict):
            raise self._error(f"{item.doc_id}: the page cannot be read")
        page = self._page(raw)
        body = raw.get("body")
        storage = body.get("storage") if isinstance(body, dict) else None
        value = storage.get("value") if isinstance(storage, dict) else None
        if not isinstance(value, str):
            raise self._error(f"{item.doc_id}: the page has no storage-format body")
        title = html.escape(page.title)
        document = f"<html><head><title>{title}</title></head><body>{value}</body></html>"
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=page.title,
            uri=self._web(page.webui),
            access=self._access(page.id),
            media_type="text/html",
            data=document.encode(),
            created_at=timestamp(raw.get("createdAt")),
            modified_at=timestamp(_facet(raw, "version").get("createdAt")),
            file_name=page.title,
        )

    def _fetch_attachment(self, item: ItemRef, page_id: str, att_id: str) -> SourceDocument:
        listed = self._list().attachments.get(page_id, [])
        raw = next((a for a in listed if str(a.get("id")) == att_id), None)
        if raw is None:
            raise self._error(f"{item.doc_id} is gone")
        title = text(raw.get("title")) or att_id
        declared = (text(raw.get("mediaType")) or "").partition(";")[0].strip().lower()
        media_type = (
            declared
            if declared in MEDIA_SUFFIXES
            else _SUFFIX_MEDIA.get(PurePosixPath(title).suffix.lower(), declared or "unknown")
        )
        data = b""
        if media_type in MEDIA_SUFFIXES:  # anything else is skipped by the engine unread
            data = self._download(raw, item.doc_id)
        links = raw.get("_links")
        webui = links.get("webui") if isinstance(links, dict) else None
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=title,
            uri=self._web(webui if isinstance(webui, str) else ""),
            access=self._access(page_id),
            media_type=media_type,
            data=data,
            created_at=timestamp(raw.get("createdAt")),
            file_name=title,
        )

    def _web(self, webui: str) -> str:
        return f"{self._base}/wiki{webui}" if webui.startswith("/") else ""

    def _download(self, raw: Mapping[str, Any], doc_id: str) -> bytes:
        """The attachment's bytes from its download link under ``base_url``. Confluence
        redirects to its media service; httpx drops the ``Authorization`` header on a
        redirect to another host, so the token stays with ``base_url``."""
        link = text(raw.get("downloadLink")) or text(_facet(raw, "_links").get("download"))
        if link is None or not link.startswith("/") or link.startswith("//"):
            raise self._error(f"{doc_id}: no download link under base_url")
        url = f"{self._base}/wiki{link}"
        return self.client.request("GET", url, follow_redirects=True).content

    # ------------------------------------------------------------------ permissions

    def _space_view(self) -> _SpaceView:
        """Who the space's ``read`` permission names, read once per instance."""
        if self._view is None:
            path = f"{_V2}/spaces/{quote(self._space(), safe='')}/permissions"
            view = _SpaceView()
            principals: set[str] = set()
            for raw in self._all(path, "space permissions", {"limit": _LIST_LIMIT}):
                operation = _facet(raw, "operation")
                if (operation.get("key"), operation.get("targetType")) != ("read", "space"):
                    continue
                principal = _facet(raw, "principal")
                kind, ident = principal.get("type"), principal.get("id")
                if kind == "anonymous":
                    view.anonymous = True
                elif kind in ("user", "group") and isinstance(ident, str) and ident:
                    try:
                        principals.add(parse_principal(f"{kind}:{ident}"))
                    except ValueError as exc:
                        view.unrepresentable = f"space permission: {exc}"
                else:
                    view.unrepresentable = (
                        f"space {self.options.space_key}: a view permission for a principal "
                        f"of type {kind!r} cannot be mapped"
                    )
            view.principals = frozenset(principals)
            self._view = view
        return self._view

    def _restriction(self, content_id: str) -> frozenset[str] | None:
        """The principals of the content's read restriction, ``None`` when unrestricted.
        Users and groups are paged together (``start``/``limit``) until both run out."""
        if content_id in self._restrictions:
            return self._restrictions[content_id]
        path = (
            f"{self._base}{_V1}/content/{quote(content_id, safe='')}/restriction/byOperation/read"
        )
        params = {"expand": "restrictions.user,restrictions.group", "limit": _V1_LIMIT, "start": 0}

        def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
            parts = [_facet(_facet(body, "restrictions"), k) for k in ("user", "group")]
            sizes = [len(p.get("results") or []) for p in parts]
            more = any(
                s >= _V1_LIMIT or "next" in _facet(p, "_links")
                for p, s in zip(parts, sizes, strict=True)
            )
            if not more or not any(sizes):
                return None
            start = int(parts[0].get("start") or parts[1].get("start") or 0)
            return path, {**params, "start": start + max(sizes)}

        found: set[str] = set()
        restricted = False
        for body in self.client.pages(path, following, params=params):
            restrictions = _facet(body, "restrictions")
            for kind in ("user", "group"):
                results = _facet(restrictions, kind).get("results") or []
                if not isinstance(results, list):
                    raise Unrepresentable(f"content {content_id}: its restrictions cannot be read")
                for entry in results:
                    restricted = True
                    found.add(self._restricted(content_id, kind, entry))
        result = frozenset(found) if restricted else None
        self._restrictions[content_id] = result
        return result

    def _restricted(self, content_id: str, kind: str, entry: Any) -> str:
        """The principal of one entry of a read restriction."""
        if not isinstance(entry, dict):
            raise Unrepresentable(f"content {content_id}: a restriction entry cannot be read")
        if (
            kind == "user"
            and entry.get("type") in ("known", "user")
            and text(entry.get("accountId"))
        ):
            return self._principal(f"user:{entry['accountId']}")
        if kind == "group" and entry.get("type") == "group" and text(entry.get("id")):
            return self._principal(f"group:{entry['id']}")
        raise Unrepresentable(
            f"content {content_id}: a read restriction on a principal of type "
            f"{entry.get('type')!r} cannot be mapped"
        )

    def _principal(self, value: str) -> str:
        try:
            return parse_principal(value)
        except ValueError as exc:
            raise Unrepresentable(str(exc)) from None

    def _chain(self, page_id: str) -> list[str]:
        """The page and its ancestors, from the space's page tree."""
        pages = self._list().pages
        chain: list[str] = []
        current: str | None = page_id
        while current is not None:
            page = pages.get(current)
            if page is None or current in chain:
                raise Unrepresentable(
                    f"page {page_id}: ancestor {current} is not a page of space "
                    f"{self.options.space_key} (its restrictions cannot be followed)"
                )
            chain.append(current)
            if page.parent is not None and page.parent_type not in (None, "page"):
                raise Unrepresentable(
                    f"page {page_id}: its parent {page.parent} is a {page.parent_type}, "
                    "whose restrictions are not read"
                )
            current = page.parent
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
                return Access(view.principals, anyone_with_link=view.anonymous)
            allowed = None if view.anonymous else self._users(view.principals)
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
            if size == 0 or (size < _V1_LIMIT and "next" not in _facet(body, "_links")):
                return None
            return path, {**params, "start": int(body.get("start") or 0) + size}

        out: set[str] = set()
        try:
            for body in self.client.pages(path, following, params=params):
                for member in self._results(body, "group members"):
                    account = text(member.get("accountId"))
                    if account and member.get("accountType", "atlassian") == "atlassian":
                        try:
                            out.add(parse_principal(f"user:{account}"))
                        except ValueError:
                            continue  # an id no principal can carry grants no one
        except SourceError as exc:
            if exc.status != 404:
                raise
            return frozenset()  # the group was deleted: it has no members
        return frozenset(out)

    def _forget(self) -> None:
        """Drop what this instance read of the space (the space id aside): a permission
        sync must state the access of *now*, not of when an earlier content sync of the
        same run read it — the corpus's ACL-sync time is set when it completes."""
        self._listing = None
        self._view = None
        self._restrictions = {}
        self._members = {}

    def _read_permissions(self) -> list[PermissionChange]:
        self._forget()
        listing = self._list()
        page_ids = list(listing.pages)
        self.client.map(self._restriction_or_none, page_ids)  # fill the cache concurrently
        changes: list[PermissionChange] = []
        for page_id in page_ids:
            access = self._access(page_id)
            changes.append(PermissionChange(self.doc_id(page_id), access))
            for raw in listing.attachments.get(page_id, []):
                changes.append(PermissionChange(self.doc_id(str(raw["id"])), access))
        return changes

    def _restriction_or_none(self, content_id: str) -> None:
        try:
            self._restriction(content_id)
        except Unrepresentable:
            pass  # stated again, as the page's reason, when its access is computed
        except SourceError as exc:
            if exc.status not in (403, 404):
                raise

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every page's and attachment's access, re-read (a snapshot)."""
        changes = self._snapshot if self._snapshot is not None else self._read_permissions()
        self._snapshot = None
        for start in range(0, max(len(changes), 1), _PAGE):
            last = start + _PAGE >= len(changes)
            yield PermissionPage(changes[start : start + _PAGE], None, snapshot=True, last=last)

    def groups(self) -> GroupSnapshot:
        """The Confluence groups the space permissions and restrictions name, with their
        members. Reads the permissions to learn which those are; the permission listing of
        the same sync then reuses what it read."""
        self._snapshot = self._read_permissions()
        named = set(self._space_view().principals)
        for level in self._restrictions.values():
            named |= level or frozenset()
        ids = sorted(p.removeprefix("group:") for p in named if p.startswith("group:"))
        members = self.client.map(self._group_members, ids)
        return GroupSnapshot(dict(zip(ids, members, strict=True)))


def _facet(raw: Any, name: str) -> Mapping[str, Any]:
    value = raw.get(name) if isinstance(raw, dict) else None
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------------- building


def parse_options(name: str, raw: Mapping[str, Any]) -> ConfluenceOptions:
    """Validate ``[sources.<name>.options]`` of a ``confluence`` source."""
    key = f"sources.{name}.options"
    options = dict(raw)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigError(f"unknown setting '{key}.{unknown[0]}'")
    base_url = string_option(options, "base_url", key).rstrip("/")
    parts = urlsplit(base_url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query:
        raise ConfigError(
            f"{key}.base_url: expected an http(s) URL without a query, got {base_url!r}"
        )
    if parts.path.endswith("/wiki"):
        raise ConfigError(f"{key}.base_url: give the site URL without /wiki, got {base_url!r}")
    attachments = options.get("attachments", True)
    if not isinstance(attachments, bool):
        raise ConfigError(f"{key}.attachments: expected true or false")
    return ConfluenceOptions(
        base_url=base_url,
        email=string_option(options, "email", key),
        space_key=string_option(options, "space_key", key),
        attachments=attachments,
    )


def confluence_connector(
    name: str,
    options: ConfluenceOptions,
    token: Secret,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
) -> ConfluenceConnector:
    """A connector for ``options``, authenticating with the API ``token`` (``sleep``:
    injectable for tests of throttling)."""
    auth = TokenBasicAuth(options.email, token)
    client = SourceClient(
        source=name,
        auth=auth,
        headers={"Accept": "application/json"},
        max_concurrency=max_concurrency,
        sleep=sleep,
    )
    return ConfluenceConnector(name, options, client)


def _build(context: SourceContext) -> Connector:
    source = context.source
    options = parse_options(source.name, source.options)
    return confluence_connector(
        source.name,
        options,
        context.secret("api_token"),
        max_concurrency=source.max_concurrency,
    )


register_connector("confluence", _build)
