"""A fake Confluence Cloud on 127.0.0.1: the subset the ``confluence`` connector uses, no more.

Every request must carry basic auth of :data:`EMAIL` and the current :attr:`FakeConfluence.token`
(401 otherwise). v2 listings page with a ``cursor`` and a relative ``_links.next``; v1 lists
page with ``start``/``limit`` (capped at 200, as Confluence caps them) and a ``_links.next``.

* ``GET /wiki/api/v2/spaces?keys=`` — the space by key.
* ``GET /wiki/api/v2/spaces/{id}/pages`` — its current pages (``parentId``, ``version.number``).
* ``GET /wiki/api/v2/pages/{id}?body-format=storage`` — one page with its storage body.
* ``GET /wiki/api/v2/pages/{id}/attachments`` — its attachments (``downloadLink``).
* ``GET /wiki/download/attachments/{page}/{name}`` — an attachment's bytes, or a redirect to
  :attr:`FakeConfluence.media_url` when set (Confluence Cloud sends downloads to its media host).
* ``GET /wiki/api/v2/spaces/{id}/permissions`` — space permission assignments.
* ``GET /wiki/rest/api/content/{id}/restriction/byOperation/read`` — read restrictions,
  users and groups paged together.
* ``GET /wiki/rest/api/group/{id}/membersByGroupId`` — a group's members.

Tests change the space between syncs (:meth:`add_page`, :meth:`restrict`, :meth:`delete` …)
and script faults on matching paths (:meth:`fault`).
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

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
V1_CAP = 200


@dataclass
class Page:
    id: str
    title: str
    body: str
    parent: str | None
    version: int = 1
    users: list[dict[str, Any]] = field(default_factory=list)  # read restriction
    groups: list[dict[str, Any]] = field(default_factory=list)
    attachments: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)


class FakeConfluence(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.token = TOKEN
        self.pages: dict[str, Page] = {}
        self.space_permissions: list[dict[str, Any]] = []
        self.groups: dict[str, list[str]] = {}  # group id -> member account ids
        self.faults: list[Fault] = []
        self.media_url: str | None = None  # downloads redirect there, as to Atlassian's media host
        self.foreign_next_link: str | None = None  # a hostile or broken next link of pages
        self._mutex = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.url_for("")

    # ------------------------------------------------------------------ the space

    def add_page(self, page_id: str, body: str, parent: str | None = None) -> None:
        self.pages[page_id] = Page(page_id, f"Page {page_id}", body, parent)

    def edit(self, page_id: str, body: str) -> None:
        self.pages[page_id].body = body
        self.pages[page_id].version += 1

    def delete(self, page_id: str) -> None:
        self.pages.pop(page_id)

    def attach(self, page_id: str, att_id: str, name: str, media: str, data: bytes) -> None:
        self.pages[page_id].attachments[att_id] = (name, media, data)

    def restrict(
        self, page_id: str, *, users: tuple[str, ...] = (), groups: tuple[str, ...] = ()
    ) -> None:
        """Set the page's read restriction (empty: none). A restriction change leaves the
        page's version alone, as in Confluence."""
        page = self.pages[page_id]
        page.users = [{"type": "known", "accountId": a, "accountType": "atlassian"} for a in users]
        page.groups = [{"type": "group", "name": f"name-{g}", "id": g} for g in groups]

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

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return {"statusCode": status, "message": reason}

    # ------------------------------------------------------------------ json shapes

    def _page_json(self, page: Page, *, body: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": page.id,
            "status": "current",
            "title": page.title,
            "spaceId": SPACE_ID,
            "parentId": page.parent,
            "parentType": "page" if page.parent else None,
            "createdAt": "2025-01-01T00:00:00.000Z",
            "version": {"number": page.version, "createdAt": "2025-01-02T00:00:00.000Z"},
            "_links": {"webui": f"/spaces/{SPACE_KEY}/pages/{page.id}"},
        }
        if body:
            out["body"] = {"storage": {"representation": "storage", "value": page.body}}
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
            "pageId": page.id,
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
        limit = min(int(query.get("limit", "25")), V1_CAP)
        chunk = values[start : start + limit]
        out: dict[str, Any] = {"results": chunk, "start": start, "limit": limit, "size": len(chunk)}
        out["_links"] = {"next": f"?start={start + limit}"} if start + limit < len(values) else {}
        return out

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        expected = base64.b64encode(f"{EMAIL}:{self.token}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return json_reply({"statusCode": 401, "message": "Unauthorized"}, status=401)
        return self._confluence(path, query)

    def _confluence(self, path: str, query: dict[str, str]) -> Reply:
        not_found = json_reply({"statusCode": 404, "message": "not found"}, status=404)
        space = f"/wiki/api/v2/spaces/{SPACE_ID}"
        if path == "/wiki/api/v2/spaces":
            found = [{"id": SPACE_ID, "key": SPACE_KEY, "name": "Engineering"}]
            return self._v2_page(found if query.get("keys") == SPACE_KEY else [], path, query)
        if path == f"{space}/pages":
            if self.foreign_next_link is not None:
                return json_reply({"results": [], "_links": {"next": self.foreign_next_link}})
            values = [self._page_json(p) for p in self.pages.values()]
            return self._v2_page(values, path, query)
        if path == f"{space}/permissions":
            return self._v2_page(self.space_permissions, path, query)
        if path.startswith("/wiki/api/v2/pages/"):
            page_id, _, tail = path.removeprefix("/wiki/api/v2/pages/").partition("/")
            page = self.pages.get(page_id)
            if page is None:
                return not_found
            if tail == "":
                return json_reply(self._page_json(page, body=query.get("body-format") == "storage"))
            if tail == "attachments":
                values = [self._attachment_json(page, a) for a in page.attachments]
                return self._v2_page(values, path, query)
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
        if path.startswith("/wiki/rest/api/content/") and path.endswith(
            "/restriction/byOperation/read"
        ):
            page = self.pages.get(path.split("/")[5])
            if page is None:
                return not_found
            restrictions = {
                "user": self._v1_slice(page.users, query),
                "group": self._v1_slice(page.groups, query),
            }
            return json_reply({"operation": "read", "restrictions": restrictions})
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
