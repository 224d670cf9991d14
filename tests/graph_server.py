"""A fake Microsoft Graph on 127.0.0.1: the subset the ``graph`` connector uses, no more.

* ``POST /{tenant}/oauth2/v2.0/token`` — client credentials; every Graph call must carry a
  token it issued (401 otherwise; :meth:`FakeGraph.revoke_tokens` makes the issued ones
  invalid, as a revoked token is).
* ``GET /v1.0/drives/{drive}/root/delta`` — enumeration without a token, changes since a
  token with one (deleted items as ``{"id", "deleted": {}}``), ``@odata.nextLink`` every
  :attr:`FakeGraph.page_size` items, ``@odata.deltaLink`` last; a token older than
  :attr:`FakeGraph.expired_before` is answered ``410 Gone`` (``resyncRequired``). As on
  OneDrive for Business, delta items carry no ``cTag``.
* ``GET /v1.0/drives/{drive}/items/{id}`` — the item with its ``@microsoft.graph.downloadUrl``
  (``/download/{id}``, pre-authenticated: it needs no token, and records whether one came).
* ``GET /v1.0/drives/{drive}/items/{id}/permissions`` — the item's own permissions and, unless
  it breaks inheritance, every ancestor's (with ``inheritedFrom``), paged.
* ``GET /v1.0/groups/{id}/transitiveMembers`` — users of the group and of groups nested in
  it, and the nested groups themselves, paged; ``GET /v1.0/users/{id or upn}``.

Tests change the drive between syncs (:meth:`add_file`, :meth:`move`, :meth:`share`,
:meth:`remove_member`, :meth:`delete` …) and script faults on matching paths
(:meth:`fault`: a 429 with ``Retry-After``, a 5xx, every request after the first n).
"""

from __future__ import annotations

import hashlib
import json
import threading
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

TENANT = "contoso"
DRIVE = "b!drive1"
CLIENT_ID = "app-1"
CLIENT_SECRET = "s3cret-client-value"
USER = "#microsoft.graph.user"
GROUP = "#microsoft.graph.group"


@dataclass
class Item:
    id: str
    name: str
    parent: str | None
    folder: bool = False
    text: str = ""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    inherits: bool = True
    edits: int = 0
    deleted: bool = False
    seq: int = 0


class FakeGraph(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.items: dict[str, Item] = {"root": Item("root", "root", None, folder=True)}
        self.users: dict[str, dict[str, str]] = {}
        self.groups: dict[str, set[str]] = {}  # group id -> member user and group ids
        self.seq = 0
        self.expired_before = 0
        self.faults: list[Fault] = []
        self._tokens: set[str] = set()
        self.issued = 0
        self.downloads: list[RecordedRequest] = []
        self.foreign_next_link: str | None = None  # a hostile or broken delta next link
        self._mutex = threading.Lock()

    # ------------------------------------------------------------------ urls

    @property
    def graph_url(self) -> str:
        return self.url_for("/v1.0")

    @property
    def login_url(self) -> str:
        return self.url_for("")

    # ------------------------------------------------------------------ the drive

    def _touch(self, item: Item) -> None:
        self.seq += 1
        item.seq = self.seq

    def add_folder(self, item_id: str, parent: str = "root", *, inherits: bool = True) -> None:
        item = Item(item_id, item_id, parent, folder=True, inherits=inherits)
        self.items[item_id] = item
        self._touch(item)

    def add_file(self, item_id: str, text: str, parent: str = "root", name: str = "") -> None:
        item = Item(item_id, name or f"{item_id}.txt", parent, text=text)
        self.items[item_id] = item
        self._touch(item)

    def edit(self, item_id: str, text: str) -> None:
        item = self.items[item_id]
        item.text = text
        item.edits += 1
        self._touch(item)

    def move(self, item_id: str, parent: str) -> None:
        item = self.items[item_id]
        item.parent = parent
        self._touch(item)

    def delete(self, item_id: str) -> None:
        item = self.items[item_id]
        item.deleted = True
        self._touch(item)

    def share(self, item_id: str, *permissions: dict[str, Any], inherits: bool = True) -> None:
        """Replace the item's own permissions (a sharing change: the delta feed and the
        item's version are untouched, as on SharePoint)."""
        item = self.items[item_id]
        item.permissions = [
            {"id": f"{item_id}-p{n}", **p} for n, p in enumerate(permissions, start=1)
        ]
        item.inherits = inherits

    def add_user(self, user_id: str, upn: str, mail: str | None = None) -> None:
        self.users[user_id] = {"id": user_id, "userPrincipalName": upn, "mail": mail or upn}

    def remove_member(self, group_id: str, member_id: str) -> None:
        self.groups[group_id].discard(member_id)

    def revoke_tokens(self) -> None:
        self._tokens.clear()

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return {"error": {"code": "scripted", "message": reason}}

    # ------------------------------------------------------------------ json shapes

    def _path(self, item: Item) -> str:
        parts = []
        current: Item | None = item
        while current is not None and current.parent is not None:
            parts.append(current.name)
            current = self.items.get(current.parent)
        return "/".join(reversed(parts))

    def _json(self, item: Item, *, delta: bool) -> dict[str, Any]:
        if item.deleted:
            return {"id": item.id, "deleted": {"state": "deleted"}}
        out: dict[str, Any] = {
            "id": item.id,
            "name": item.name,
            "eTag": f'"{{{item.id}}},{item.seq}"',
            "createdDateTime": "2025-01-01T00:00:00Z",
            "lastModifiedDateTime": f"2025-01-02T00:00:{item.edits:02d}Z",
            "webUrl": f"https://contoso.example/sites/x/{quote(self._path(item))}",
            "size": len(item.text.encode()),
        }
        if item.parent is None:
            out["root"] = {}
        else:
            out["parentReference"] = {"driveId": DRIVE, "id": item.parent}
        if item.folder:
            out["folder"] = {"childCount": sum(i.parent == item.id for i in self.items.values())}
        else:
            digest = hashlib.sha1(item.text.encode()).hexdigest()
            out["file"] = {"mimeType": "text/plain", "hashes": {"quickXorHash": digest}}
            if not delta:
                out["cTag"] = f'"c:{{{item.id}}},{item.edits}"'
                out["@microsoft.graph.downloadUrl"] = self.url_for(
                    f"/download/{item.id}?tempauth=signed{item.edits}"
                )
        return out

    def _effective(self, item: Item) -> list[dict[str, Any]]:
        out = list(item.permissions)
        current = item
        while current.inherits and current.parent is not None:
            parent = self.items[current.parent]
            reference = {"driveId": DRIVE, "id": parent.id, "path": f"/drive/root:/{parent.id}"}
            out.extend({**p, "inheritedFrom": reference} for p in parent.permissions)
            current = parent
        return out

    def _members(self, group_id: str, seen: set[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for member in sorted(self.groups.get(group_id, ())):
            if member in self.groups and member not in seen:
                seen.add(member)
                out.append({"@odata.type": GROUP, "id": member, "displayName": member})
                out.extend(self._members(member, seen))
            elif member in self.users:
                out.append({"@odata.type": USER, **self.users[member]})
        return out

    # ------------------------------------------------------------------ routing

    def _page(self, values: list[Any], url: str, query: dict[str, str], **last: Any) -> Reply:
        skip = int(query.get("skip", "0"))
        page = values[skip : skip + self.page_size]
        body: dict[str, Any] = {"value": page}
        if skip + self.page_size < len(values):
            following = {**query, "skip": str(skip + self.page_size)}
            body["@odata.nextLink"] = f"{url}?{urlencode(following)}"
        else:
            body.update(last)
        return json_reply(body)

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        if request.method == "POST" and path == f"/{TENANT}/oauth2/v2.0/token":
            return self._token(request)
        if path.startswith("/download/"):
            self.downloads.append(request)
            item = self.items.get(path.removeprefix("/download/"))
            if item is None or item.deleted:
                return Reply(404)
            return Reply(body=item.text.encode(), content_type="text/plain")
        auth = request.headers.get("authorization", "")
        if auth.removeprefix("Bearer ") not in self._tokens:
            return json_reply({"error": {"code": "InvalidAuthenticationToken"}}, status=401)
        return self._graph(path.removeprefix("/v1.0"), query)

    def _token(self, request: RecordedRequest) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if (
            form.get("client_id") != CLIENT_ID
            or form.get("client_secret") != CLIENT_SECRET
            or form.get("grant_type") != "client_credentials"
            or form.get("scope") != f"{self.url_for('')}/.default"
        ):
            return json_reply({"error": "invalid_client"}, status=401)
        self.issued += 1
        token = f"token-{self.issued}"
        self._tokens.add(token)
        return json_reply({"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    def _graph(self, path: str, query: dict[str, str]) -> Reply:
        drive = f"/drives/{quote(DRIVE, safe='')}"
        base = self.graph_url
        not_found = json_reply({"error": {"code": "itemNotFound"}}, status=404)
        if path == f"{drive}/root/delta":
            return self._delta(base + path, query)
        if path.startswith(f"{drive}/items/"):
            rest = path.removeprefix(f"{drive}/items/")
            item_id, _, tail = rest.partition("/")
            item = self.items.get(item_id)
            if item is None or item.deleted:
                return not_found
            if tail == "":
                return json_reply(self._json(item, delta=False))
            if tail == "permissions":
                return self._page(self._effective(item), base + path, query)
        if path.startswith("/groups/") and path.endswith("/transitiveMembers"):
            group_id = path.split("/")[2]
            if group_id not in self.groups:
                return not_found
            return self._page(self._members(group_id, {group_id}), base + path, query)
        if path.startswith("/users/"):
            key = path.removeprefix("/users/")
            for user in self.users.values():
                if key in (user["id"], user["userPrincipalName"]):
                    return json_reply(user)
            return not_found
        return not_found

    def _delta(self, url: str, query: dict[str, str]) -> Reply:
        token = query.get("token")
        if token is not None and token != "full" and int(token) < self.expired_before:
            return Reply(
                410,
                json.dumps({"error": {"code": "resyncRequired", "message": "resync"}}).encode(),
                headers=(("Location", f"{url}"),),
            )
        if token is None or token == "full":
            # an enumeration lists what exists, parents before children
            chosen = [i for i in self.items.values() if not i.deleted]
            query = {**query, "token": "full"}
        else:
            chosen = [i for i in self.items.values() if i.seq > int(token)]
        chosen.sort(key=lambda i: (i.parent is not None, i.seq))
        values = [self._json(i, delta=True) for i in chosen]
        if self.foreign_next_link is not None:
            return json_reply({"value": values, "@odata.nextLink": self.foreign_next_link})
        return self._page(values, url, query, **{"@odata.deltaLink": f"{url}?token={self.seq}"})
