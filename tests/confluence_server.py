"""A fake Confluence Cloud on 127.0.0.1: the subset the ``confluence`` connector uses, no more.

Shapes follow Atlassian's published contracts (the Confluence Cloud REST v2 OpenAPI, the v1
content restrictions API, the OAuth 2.0 (3LO) token endpoint), not the connector's reading of
them. Every request must carry basic auth of :data:`EMAIL` and the current
:attr:`FakeConfluence.token`, or — under ``/ex/confluence/{cloudId}`` — a bearer token the fake
OAuth endpoint issued (401 otherwise). v2 listings page with a ``cursor`` and a relative
``_links.next``; v1 lists page with ``start``/``limit`` (capped at :attr:`v1_cap`) and a
``_links.next`` unless :attr:`v1_next_links` is off (a server that caps without saying so).

* ``GET /wiki/api/v2/spaces?keys=`` — the space by key.
* ``GET /wiki/api/v2/spaces/{id}/pages`` and ``…/blogposts`` — its current pages (``parentId``,
  ``parentType``: ``page`` or ``folder``) and blog posts (no parent).
* ``GET /wiki/api/v2/pages/{id}`` and ``/blogposts/{id}`` (``?body-format=storage``).
* ``GET /wiki/api/v2/folders/{id}`` — a folder (``parentId``, ``parentType``).
* ``GET /wiki/api/v2/pages/{id}/attachments``, ``/blogposts/{id}/attachments``, and one
  attachment, ``/wiki/api/v2/attachments/{id}`` (with its ``pageId`` or ``blogPostId``).
* ``GET /wiki/api/v2/pages/{id}/footer-comments``, ``/blogposts/{id}/footer-comments`` (root
  comments), ``/footer-comments/{id}/children`` (replies) and ``/footer-comments/{id}`` (one
  comment, with its body for ``body-format=storage``).
* ``GET /wiki/download/attachments/{page}/{name}`` — an attachment's bytes, or a redirect to
  :attr:`FakeConfluence.media_url` when set (Confluence Cloud sends downloads to its media host);
  ``GET /wiki/rest/api/content/{page}/child/attachment/{id}/download`` — the same bytes.
* ``GET /wiki/api/v2/spaces/{id}/permissions`` — space permission assignments, principals of type
  ``user``, ``group``, ``role`` or ``access_class``.
* ``GET /wiki/api/v2/spaces/{id}/role-assignments?role-id=`` — who holds a space role
  (``principal.principalType`` ``USER``/``GROUP``/``ACCESS_CLASS``); 404 without RBAC.
* ``GET /wiki/rest/api/content/{id}/restriction/byOperation/{operation}`` — one operation's
  restrictions; ``restrictions.user`` and ``restrictions.group`` carry ``results`` only when
  ``expand`` names them (else they are listed in ``_expandable``), paged together with
  ``start``/``limit``; each list has ``size`` (this page) and ``totalSize`` (0: not computed).
* ``GET /wiki/rest/api/group/{id}/membersByGroupId`` — a group's members.
* ``POST /oauth/token`` (``grant_type=refresh_token``, JSON or form) — a new access token and a
  new refresh token; the refresh token used is refused from then on (rotation), with
  ``403 invalid_grant``. ``GET /oauth/token/accessible-resources`` — the sites the token reaches.

:meth:`FakeConfluence.webhook` makes the delivery Confluence Cloud sends a Connect app's
webhook: the body of the event (the content under ``page``, ``blog``, ``comment``,
``attachments`` or ``content``; the space under ``space``; no event name), posted to the
webhook's URL below the app's base URL with ``Authorization: JWT …`` — HS256 under the app's
:attr:`FakeConfluence.shared_secret`, ``iss`` the client key, expiring three minutes after
``iat``, ``qsh`` the SHA-256 of ``POST&<path>&<sorted, percent-encoded query>``.

Tests change the space between syncs (:meth:`add_page`, :meth:`restrict`, :meth:`delete` …),
reshape restriction answers (:attr:`reshape`) and script faults on matching paths (:meth:`fault`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from loopback_server import (
    FakeService,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedServer,
    json_reply,
)

EMAIL = "sync@acme.example"
TOKEN = "atlassian-api-token-value"
SPACE_KEY = "ENG"
SPACE_ID = "98304"
CLOUD_ID = "11111111-2222-3333-4444-555555555555"
CLIENT_ID = "oauth-client-id"
CLIENT_SECRET = "oauth-client-secret-value"
FIRST_REFRESH_TOKEN = "refresh-token-0"
V1_CAP = 200
SHARED_SECRET = "connect-app-shared-secret-value"
CLIENT_KEY = "connect-client-key"
ACTOR = "acc-admin"

#: ``reshape[content_id](body) -> body``: what a restriction answer becomes before it is sent.
Reshape = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Page:
    id: str
    title: str
    body: str
    parent: str | None
    kind: str = "page"  # or "blogpost"
    parent_type: str | None = None
    version: int = 1
    attachments: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)


@dataclass(frozen=True)
class Delivery:
    """One webhook request: what the receiving route hands its connector."""

    headers: dict[str, str]
    query: dict[str, str]
    body: bytes


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def query_hash(method: str, path: str, query: dict[str, str]) -> str:
    """Atlassian Connect's ``qsh``: the canonical request, hashed."""
    pairs = sorted((quote(k, safe=""), quote(v, safe="")) for k, v in query.items() if k != "jwt")
    canonical = "&".join(f"{k}={v}" for k, v in pairs)
    return hashlib.sha256(f"{method.upper()}&{path}&{canonical}".encode()).hexdigest()


def connect_jwt(secret: str, claims: dict[str, Any], alg: str = "HS256") -> str:
    head = _b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    payload = _b64(json.dumps(claims).encode())
    signature = hmac.new(secret.encode(), f"{head}.{payload}".encode(), hashlib.sha256).digest()
    return f"{head}.{payload}.{_b64(signature)}"


@dataclass
class Folder:
    id: str
    title: str
    parent: str | None
    parent_type: str | None = None


@dataclass
class Comment:
    id: str
    container: str
    body: str
    parent: str | None = None  # the comment it answers
    version: int = 1


class FakeConfluence(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.token = TOKEN
        self.pages: dict[str, Page] = {}
        self.folders: dict[str, Folder] = {}
        self.comments: dict[str, Comment] = {}
        # content id -> operation -> (user entries, group entries)
        self.restrictions: dict[str, dict[str, tuple[list[Any], list[Any]]]] = {}
        self.space_permissions: list[dict[str, Any]] = []
        self.role_assignments: list[dict[str, Any]] | None = []  # None: the tenant has no RBAC
        self.groups: dict[str, list[str]] = {}  # group id -> member account ids
        self.reshape: dict[str, Reshape] = {}
        self.v1_cap = V1_CAP
        self.v1_next_links = True
        self.faults: list[Fault] = []
        self.media_url: str | None = None  # downloads redirect there, as to Atlassian's media host
        self.foreign_next_link: str | None = None  # a hostile or broken next link of pages
        self.refresh_token: str | None = FIRST_REFRESH_TOKEN  # the one the token endpoint takes
        self.used_refresh_tokens: list[str] = []
        self.access_tokens: set[str] = set()
        self.shared_secret = SHARED_SECRET
        self._issued = itertools.count(1)
        self._mutex = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.url_for("")

    # ------------------------------------------------------------------ the space

    def add_page(
        self, page_id: str, body: str, parent: str | None = None, *, parent_type: str = "page"
    ) -> None:
        kind = parent_type if parent is not None else None
        self.pages[page_id] = Page(page_id, f"Page {page_id}", body, parent, parent_type=kind)

    def add_blogpost(self, post_id: str, body: str) -> None:
        self.pages[post_id] = Page(post_id, f"Post {post_id}", body, None, kind="blogpost")

    def add_folder(
        self, folder_id: str, parent: str | None = None, parent_type: str = "page"
    ) -> None:
        kind = parent_type if parent is not None else None
        self.folders[folder_id] = Folder(folder_id, f"Folder {folder_id}", parent, kind)

    def comment(
        self, comment_id: str, container: str, body: str, parent: str | None = None
    ) -> None:
        self.comments[comment_id] = Comment(comment_id, container, body, parent)

    def edit(self, page_id: str, body: str) -> None:
        self.pages[page_id].body = body
        self.pages[page_id].version += 1

    def delete(self, page_id: str) -> None:
        self.pages.pop(page_id)

    def attach(self, page_id: str, att_id: str, name: str, media: str, data: bytes) -> None:
        self.pages[page_id].attachments[att_id] = (name, media, data)

    def restrict(
        self,
        content_id: str,
        *,
        users: tuple[str, ...] = (),
        groups: tuple[str, ...] = (),
        operation: str = "read",
    ) -> None:
        """Set one operation's restriction of a page, blog post or folder (empty: none). A
        restriction change leaves the content's version alone, as in Confluence."""
        user_entries = [
            {"type": "known", "accountId": a, "accountType": "atlassian"} for a in users
        ]
        group_entries = [{"type": "group", "name": f"name-{g}", "id": g} for g in groups]
        self.restrictions.setdefault(content_id, {})[operation] = (user_entries, group_entries)

    def restricted_users(self, content_id: str) -> list[Any]:
        """The read restriction's user entries of ``content_id``, to edit in place."""
        return self.restrictions.setdefault(content_id, {}).setdefault("read", ([], []))[0]

    def grant_space(self, kind: str, ident: str | None = None) -> None:
        principal: dict[str, Any] = {"type": kind}
        if ident is not None:
            principal["id"] = ident
        self.space_permissions.append(
            {
                "id": str(len(self.space_permissions) + 1),
                "principal": principal,
                "operation": {"key": "read", "targetType": "space"},
            }
        )

    def assign_role(self, role_id: str, principal_type: str, principal_id: str) -> None:
        assert self.role_assignments is not None
        self.role_assignments.append(
            {
                "principal": {"principalType": principal_type, "principalId": principal_id},
                "roleId": role_id,
            }
        )

    # ------------------------------------------------------------------ webhooks

    def _event_json(self, content_id: str) -> dict[str, Any]:
        """A content object as webhook bodies carry it."""
        if content_id in self.comments:
            comment = self.comments[content_id]
            kind, parent = "comment", self._event_json(comment.parent or comment.container)
        elif content_id in self.folders:
            kind, parent = "folder", None
        else:
            page = next((p for p in self.pages.values() if content_id in p.attachments), None)
            owner = self.pages.get(content_id, page)
            kind = "attachment" if page is not None else (owner.kind if owner else "page")
            parent = None
        out: dict[str, Any] = {
            "id": int(content_id) if content_id.isdigit() else content_id,
            "idAsString": content_id,
            "spaceKey": SPACE_KEY,
            "contentType": kind,
            "creatorAccountId": ACTOR,
            "lastModifierAccountId": ACTOR,
            "self": f"{self.base_url}/wiki/spaces/{SPACE_KEY}/pages/{content_id}",
            "creationDate": 1_700_000_000_000,
            "modificationDate": 1_700_000_000_000,
            "version": 1,
        }
        if parent is not None:
            out["parent"] = parent
        return out

    def webhook(
        self,
        event: str,
        content_id: str | None = None,
        *,
        path: str = "/v1/sources/wiki/notifications",
        space_key: str = SPACE_KEY,
        secret: str | None = None,
        now: float | None = None,
    ) -> Delivery:
        """The delivery of ``event`` about ``content_id`` (or about the space) to the webhook
        registered at ``path?event=<event>``, signed with ``secret`` (default: the app's)."""
        body: dict[str, Any] = {
            "userAccountId": ACTOR,
            "accountType": "customer",
            "timestamp": 1_700_000_000_000,
        }
        if event.startswith("space_"):
            body["space"] = {"key": space_key, "id": int(SPACE_ID), "title": "Engineering"}
        elif content_id is not None:
            carried = self._event_json(content_id)
            kind = carried["contentType"]
            if event == "content_permissions_updated":
                body["content"] = carried
            elif kind == "attachment":
                owner = next(p for p in self.pages.values() if content_id in p.attachments)
                body["attachments"] = [carried]
                body["attachedTo"] = self._event_json(owner.id)
            else:
                body[{"blogpost": "blog"}.get(kind, kind)] = carried
        query = {"event": event, "lic": "none"}
        issued = int(time.time() if now is None else now)
        claims = {
            "iss": CLIENT_KEY,
            "iat": issued,
            "exp": issued + 180,
            "qsh": query_hash("POST", path, query),
            "sub": ACTOR,
        }
        token = connect_jwt(self.shared_secret if secret is None else secret, claims)
        headers = {
            "authorization": f"JWT {token}",
            "content-type": "application/json",
            "atlassian-connect-version": "1.0",
        }
        return Delivery(headers, query, json.dumps(body).encode())

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return {"statusCode": status, "message": reason}

    # ------------------------------------------------------------------ json shapes

    def _page_json(self, page: Page, *, body: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": page.id,
            "status": "current",
            "title": page.title,
            "spaceId": SPACE_ID,
            "createdAt": "2025-01-01T00:00:00.000Z",
            "version": {"number": page.version, "createdAt": "2025-01-02T00:00:00.000Z"},
            "_links": {"webui": f"/spaces/{SPACE_KEY}/{page.kind}s/{page.id}"},
        }
        if page.kind == "page":
            out["parentId"] = page.parent
            out["parentType"] = page.parent_type
        if body:
            out["body"] = {"storage": {"representation": "storage", "value": page.body}}
        return out

    def _comment_json(self, comment: Comment, *, body: bool = False) -> dict[str, Any]:
        container = self.pages[comment.container]
        out: dict[str, Any] = {
            "id": comment.id,
            "status": "current",
            "title": f"Re: {container.title}",
            "version": {"number": comment.version, "createdAt": "2025-01-03T00:00:00.000Z"},
            "_links": {"webui": f"/spaces/{SPACE_KEY}/pages/{container.id}?focusedCommentId="},
        }
        out["blogPostId" if container.kind == "blogpost" else "pageId"] = container.id
        if comment.parent is not None:
            out["parentCommentId"] = comment.parent
        if body:
            out["body"] = {"storage": {"representation": "storage", "value": comment.body}}
        return out

    def _attachment_json(self, page: Page, att_id: str) -> dict[str, Any]:
        name, media, data = page.attachments[att_id]
        return {
            "id": att_id,
            "status": "current",
            "title": name,
            "mediaType": media,
            "fileSize": len(data),
            "fileId": f"file-{att_id}-{len(data)}",
            "pageId" if page.kind == "page" else "blogPostId": page.id,
            "version": {"number": 1},
            "downloadLink": f"/download/attachments/{page.id}/{quote(name)}?version=1&api=v2",
            "_links": {"webui": f"/pages/viewpageattachments.action?pageId={page.id}"},
        }

    # ------------------------------------------------------------------ routing

    def _v2_page(self, values: list[Any], path: str, query: dict[str, str]) -> Reply:
        start = int(query.get("cursor", "0"))
        body: dict[str, Any] = {"results": values[start : start + self.page_size], "_links": {}}
        if start + self.page_size < len(values):
            following = {**query, "cursor": str(start + self.page_size)}
            body["_links"]["next"] = f"{path}?{urlencode(following)}"
        return json_reply(body)

    def _v1_slice(self, values: list[Any], query: dict[str, str]) -> dict[str, Any]:
        start = int(query.get("start", "0"))
        limit = min(int(query.get("limit", "25")), self.v1_cap)
        chunk = values[start : start + limit]
        out: dict[str, Any] = {
            "results": chunk,
            "start": start,
            "limit": limit,
            "size": len(chunk),
            "totalSize": 0,  # computed only on request, as the v1 arrays document
        }
        more = start + limit < len(values) and self.v1_next_links
        out["_links"] = {"next": f"?start={start + limit}"} if more else {}
        return out

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        if path.startswith("/oauth/token"):
            return self._oauth(request, path)
        prefix = f"/ex/confluence/{CLOUD_ID}"
        if path.startswith("/ex/confluence/"):
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            if not path.startswith(prefix + "/") or bearer not in self.access_tokens:
                return json_reply({"code": 401, "message": "Unauthorized"}, status=401)
            return self._confluence(path.removeprefix(prefix), query)
        expected = base64.b64encode(f"{EMAIL}:{self.token}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return json_reply({"statusCode": 401, "message": "Unauthorized"}, status=401)
        return self._confluence(path, query)

    def _oauth(self, request: RecordedRequest, path: str) -> Reply:
        if path == "/oauth/token/accessible-resources":
            bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
            if bearer not in self.access_tokens:
                return json_reply({"code": 401, "message": "Unauthorized"}, status=401)
            site = {
                "id": CLOUD_ID,
                "url": self.base_url,
                "name": "acme",
                "scopes": ["read:confluence-content.all"],
                "avatarUrl": "",
            }
            other = {**site, "id": "99999999-0000-0000-0000-000000000000", "url": "https://x.y"}
            return json_reply([other, site])
        if request.method != "POST" or path != "/oauth/token":
            return json_reply({"error": "not_found"}, status=404)
        form = token_form(request.body)
        if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
            return json_reply({"error": "access_denied"}, status=401)
        given = form.get("refresh_token")
        if form.get("grant_type") != "refresh_token" or given is None:
            return json_reply({"error": "unsupported_grant_type"}, status=400)
        if given != self.refresh_token:
            return json_reply(
                {
                    "error": "invalid_grant",
                    "error_description": "Unknown or invalid refresh token.",
                },
                status=403,
            )
        self.used_refresh_tokens.append(given)
        n = next(self._issued)
        self.refresh_token = f"refresh-token-{n}"
        access = f"access-token-{n}"
        self.access_tokens.add(access)
        return json_reply(
            {
                "access_token": access,
                "refresh_token": self.refresh_token,
                "expires_in": 3600,
                "scope": "read:confluence-content.all offline_access",
                "token_type": "Bearer",
            }
        )

    def _restriction(self, content_id: str, operation: str, query: dict[str, str]) -> Reply:
        known = content_id in self.pages or content_id in self.folders
        if not known:
            return json_reply({"statusCode": 404, "message": "not found"}, status=404)
        users, groups = self.restrictions.get(content_id, {}).get(operation, ([], []))
        expand = set(query.get("expand", "").split(","))
        restrictions: dict[str, Any] = {"_expandable": {}}
        for kind, entries in (("user", users), ("group", groups)):
            if f"restrictions.{kind}" in expand:
                restrictions[kind] = self._v1_slice(entries, query)
            else:
                restrictions["_expandable"][kind] = ""
        body: dict[str, Any] = {
            "operation": operation,
            "restrictions": restrictions,
            "_expandable": {"content": f"/rest/api/content/{content_id}"},
            "_links": {"base": f"{self.base_url}/wiki"},
        }
        reshape = self.reshape.get(content_id)
        return json_reply(reshape(body) if reshape is not None else body)

    def _confluence(self, path: str, query: dict[str, str]) -> Reply:
        not_found = json_reply({"statusCode": 404, "message": "not found"}, status=404)
        space = f"/wiki/api/v2/spaces/{SPACE_ID}"
        if path == "/wiki/api/v2/spaces":
            found = [{"id": SPACE_ID, "key": SPACE_KEY, "name": "Engineering"}]
            return self._v2_page(found if query.get("keys") == SPACE_KEY else [], path, query)
        if path in (f"{space}/pages", f"{space}/blogposts"):
            if self.foreign_next_link is not None:
                return json_reply({"results": [], "_links": {"next": self.foreign_next_link}})
            kind = path.rsplit("/", 1)[1].removesuffix("s")
            values = [self._page_json(p) for p in self.pages.values() if p.kind == kind]
            return self._v2_page(values, path, query)
        if path == f"{space}/permissions":
            return self._v2_page(self.space_permissions, path, query)
        if path == f"{space}/role-assignments":
            if self.role_assignments is None:
                return not_found
            role = query.get("role-id")
            found = [a for a in self.role_assignments if role in (None, a["roleId"])]
            return self._v2_page(found, path, query)
        if path.startswith("/wiki/api/v2/folders/"):
            folder = self.folders.get(path.removeprefix("/wiki/api/v2/folders/"))
            if folder is None:
                return not_found
            return json_reply(
                {
                    "id": folder.id,
                    "type": "folder",
                    "status": "current",
                    "title": folder.title,
                    "parentId": folder.parent,
                    "parentType": folder.parent_type,
                    "spaceId": SPACE_ID,
                    "version": {"number": 1},
                }
            )
        if path.startswith("/wiki/api/v2/footer-comments/") and path.count("/") == 5:
            comment = self.comments.get(path.rsplit("/", 1)[1])
            if comment is None:
                return not_found
            return json_reply(
                self._comment_json(comment, body=query.get("body-format") == "storage")
            )
        if path.startswith("/wiki/api/v2/footer-comments/") and path.endswith("/children"):
            parent = path.split("/")[5]
            if parent not in self.comments:
                return not_found
            values = [self._comment_json(c) for c in self.comments.values() if c.parent == parent]
            return self._v2_page(values, path, query)
        if path.startswith("/wiki/api/v2/attachments/") and path.count("/") == 5:
            att_id = path.rsplit("/", 1)[1]
            for page in self.pages.values():
                if att_id in page.attachments:
                    return json_reply(self._attachment_json(page, att_id))
            return not_found
        for kind in ("pages", "blogposts"):
            if path.startswith(f"/wiki/api/v2/{kind}/"):
                page_id, _, tail = path.removeprefix(f"/wiki/api/v2/{kind}/").partition("/")
                page = self.pages.get(page_id)
                if page is None or f"{page.kind}s" != kind:
                    return not_found
                if tail == "":
                    storage = query.get("body-format") == "storage"
                    return json_reply(self._page_json(page, body=storage))
                if tail == "attachments":
                    values = [self._attachment_json(page, a) for a in page.attachments]
                    return self._v2_page(values, path, query)
                if tail == "footer-comments":
                    values = [
                        self._comment_json(c)
                        for c in self.comments.values()
                        if c.container == page.id and c.parent is None
                    ]
                    return self._v2_page(values, path, query)
                return not_found
        if path.startswith("/wiki/download/attachments/"):
            page_id, _, name = path.removeprefix("/wiki/download/attachments/").partition("/")
            page = self.pages.get(page_id)
            for att_name, media, data in page.attachments.values() if page else ():
                if quote(att_name) == name and self.media_url is not None:
                    location = f"{self.media_url}/file/{page_id}/{name}"
                    return Reply(302, b"", headers=(("Location", location),))
                if quote(att_name) == name:
                    return Reply(body=data, content_type=media)
            return not_found
        if path.startswith("/wiki/rest/api/content/") and "/child/attachment/" in path:
            page_id, _, tail = path.removeprefix("/wiki/rest/api/content/").partition("/")
            page = self.pages.get(page_id)
            att_id = tail.removeprefix("child/attachment/").removesuffix("/download")
            if page is None or att_id not in page.attachments or not tail.endswith("/download"):
                return not_found
            _, media, data = page.attachments[att_id]
            return Reply(body=data, content_type=media)
        if path.startswith("/wiki/rest/api/content/") and "/restriction/byOperation/" in path:
            parts = path.split("/")
            return self._restriction(parts[5], parts[8], query)
        if path.startswith("/wiki/rest/api/group/") and path.endswith("/membersByGroupId"):
            group_id = path.split("/")[5]
            if group_id not in self.groups:
                return not_found
            members = [
                {"type": "known", "accountId": a, "accountType": "atlassian"}
                for a in self.groups[group_id]
            ]
            return json_reply(self._v1_slice(members, query))
        return not_found


def token_form(body: bytes) -> dict[str, Any]:
    """A token request's fields, JSON or form-encoded."""
    try:
        found = json.loads(body)
    except ValueError:
        return {k: v[0] for k, v in parse_qs(body.decode()).items()}
    return found if isinstance(found, dict) else {}
