"""A fake Entra ID tenant on 127.0.0.1: the token endpoint and the Graph reads of users,
groups and group members that a directory source makes.

Written from Microsoft's published documentation:

* Client credentials grant — ``POST /{tenant}/oauth2/v2.0/token`` with ``grant_type=
  client_credentials``, ``client_id``, ``client_secret``, ``scope=…/.default``; answers
  ``token_type``, ``expires_in``, ``access_token``:
  https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow
* List users — ``GET /v1.0/users`` with ``$select`` and ``$top`` (up to 999), ``accountEnabled``,
  ``userPrincipalName``, ``mail``, ``otherMails``, ``onPremisesSamAccountName``:
  https://learn.microsoft.com/en-us/graph/api/user-list?view=graph-rest-1.0
* List groups and a group's direct members — ``GET /v1.0/groups``,
  ``GET /v1.0/groups/{id}/members``, each member with its ``@odata.type``
  (``#microsoft.graph.user``, ``#microsoft.graph.group``, ``#microsoft.graph.device`` …):
  https://learn.microsoft.com/en-us/graph/api/group-list?view=graph-rest-1.0 and
  https://learn.microsoft.com/en-us/graph/api/group-list-members?view=graph-rest-1.0
* Paging — ``@odata.nextLink``, an absolute URL with an opaque ``$skiptoken``, absent on
  the last page: https://learn.microsoft.com/en-us/graph/paging
* Delta queries — ``GET /v1.0/users/delta`` and ``/v1.0/groups/delta`` (``$select=id,members``):
  the initial round returns every object, the last page an ``@odata.deltaLink`` (with a
  ``$deltatoken``); following it returns only what changed since, a deleted object as
  ``{"id": …, "@removed": {"reason": "changed"}}``, a group's membership changes in
  ``members@delta`` (a removed member with ``@removed``):
  https://learn.microsoft.com/en-us/graph/delta-query-overview,
  https://learn.microsoft.com/en-us/graph/api/user-delta?view=graph-rest-1.0 and
  https://learn.microsoft.com/en-us/graph/api/group-delta?view=graph-rest-1.0
* Throttling — 429 with ``Retry-After`` (seconds) and an ``error`` object whose code is
  ``TooManyRequests``: https://learn.microsoft.com/en-us/graph/throttling
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TENANT = "contoso"
CLIENT_ID = "app-1"
SECRET = "entra-test-secret"
ACCESS_TOKEN = "graph-access-token"


@dataclass
class Tenant:
    """``users`` as Graph returns them; ``groups``: id → members as ``("user"|"group"|"device", id)``."""

    users: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    throttle: int = 0
    retry_after: int = 3
    fail_path: str | None = None
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # the state each issued $deltatoken stands for
    tokens: list[tuple[dict[str, dict[str, Any]], dict[str, set[tuple[str, str]]]]] = field(
        default_factory=list
    )

    def state(self) -> tuple[dict[str, dict[str, Any]], dict[str, set[tuple[str, str]]]]:
        return (
            {u["id"]: dict(u) for u in self.users},
            {g: set(m) for g, m in self.groups.items()},
        )


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        with self.server.tenant.lock:
            self.server.tenant.requests.append(self.path)
        ok = (
            self.path == f"/{TENANT}/oauth2/v2.0/token"
            and form.get("grant_type") == ["client_credentials"]
            and form.get("client_id") == [CLIENT_ID]
            and form.get("client_secret") == [SECRET]
            and form.get("scope", [""])[0].endswith("/.default")
        )
        if not ok:
            self._reply(401, {"error": "invalid_client", "error_description": "AADSTS7000215"})
            return
        self._reply(200, {"token_type": "Bearer", "expires_in": 3599, "access_token": ACCESS_TOKEN})

    def do_GET(self) -> None:
        tenant = self.server.tenant
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        with tenant.lock:
            tenant.requests.append(self.path)
            throttled = tenant.throttle > 0
            if throttled:
                tenant.throttle -= 1
        if self.headers.get("Authorization") != f"Bearer {ACCESS_TOKEN}":
            self._reply(401, _error("InvalidAuthenticationToken", "Access token is empty."))
            return
        if throttled:
            self._reply(
                429,
                _error("TooManyRequests", "Too many requests"),
                {"Retry-After": str(tenant.retry_after)},
            )
            return
        if parts.path == tenant.fail_path:
            self._reply(503, _error("serviceNotAvailable", "Service unavailable"))
            return
        path = parts.path.removeprefix("/v1.0")
        if path in ("/users/delta", "/groups/delta"):
            self._delta(path, query)
            return
        if path == "/users":
            fields = query.get("$select", [""])[0].split(",")
            items = [{k: u.get(k) for k in fields if k in u} for u in tenant.users]
        elif path == "/groups":
            items = [{"id": g} for g in tenant.groups]
        elif path.startswith("/groups/") and path.endswith("/members"):
            gid = path.split("/")[2]
            if gid not in tenant.groups:
                self._reply(404, _error("Request_ResourceNotFound", "Resource not found"))
                return
            items = [
                {"@odata.type": f"#microsoft.graph.{kind}", "id": ident}
                for kind, ident in tenant.groups[gid]
            ]
        else:
            self._reply(400, _error("BadRequest", "Unsupported segment"))
            return
        top = int(query.get("$top", ["100"])[0])
        start = int(query.get("$skiptoken", ["0"])[0])
        body: dict[str, Any] = {"value": items[start : start + top]}
        if start + top < len(items):
            host = self.headers.get("Host", "")
            rest = "&".join(f"{k}={v[0]}" for k, v in query.items() if k != "$skiptoken")
            body["@odata.nextLink"] = f"http://{host}{parts.path}?{rest}&$skiptoken={start + top}"
        self._reply(200, body)

    def _delta(self, path: str, query: dict[str, list[str]]) -> None:
        tenant = self.server.tenant
        with tenant.lock:
            users, groups = tenant.state()
            token = query.get("$deltatoken", [None])[0]
            if token is not None and not (token.isdigit() and int(token) < len(tenant.tokens)):
                self._reply(410, _error("syncStateNotFound", "The delta token has expired."))
                return
            old_users, old_groups = tenant.tokens[int(token)] if token else ({}, {})
        removed = {"@removed": {"reason": "changed"}}
        items: list[dict[str, Any]] = []
        if path == "/users/delta":
            fields = ["id", *_USER_FIELDS]
            for uid, user in users.items():
                if old_users.get(uid) != user:
                    items.append({k: user.get(k) for k in fields if k in user})
            items += [{"id": uid, **removed} for uid in old_users if uid not in users]
        else:
            for gid, members in groups.items():
                before = old_groups.get(gid, set())
                if gid in old_groups and before == members:
                    continue
                change = [
                    {"@odata.type": f"#microsoft.graph.{k}", "id": i} for k, i in members - before
                ] + [
                    {
                        "@odata.type": f"#microsoft.graph.{k}",
                        "id": i,
                        "@removed": {"reason": "deleted"},
                    }
                    for k, i in before - members
                ]
                items.append({"id": gid, "members@delta": change})
            items += [{"id": gid, **removed} for gid in old_groups if gid not in groups]
        top = int(query.get("$top", ["100"])[0])
        start = int(query.get("$skiptoken", ["0"])[0])
        body: dict[str, Any] = {"value": items[start : start + top]}
        host = self.headers.get("Host", "")
        base = f"http://{host}/v1.0{path}"
        if start + top < len(items):
            rest = "&".join(f"{k}={v[0]}" for k, v in query.items() if k != "$skiptoken")
            body["@odata.nextLink"] = f"{base}?{rest}&$skiptoken={start + top}"
        else:
            with tenant.lock:
                tenant.tokens.append((users, groups))
                issued = len(tenant.tokens) - 1
            body["@odata.deltaLink"] = f"{base}?$deltatoken={issued}"
        self._reply(200, body)


_USER_FIELDS = (
    "userPrincipalName",
    "mail",
    "accountEnabled",
    "onPremisesSamAccountName",
    "otherMails",
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tenant: Tenant) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tenant = tenant


@contextmanager
def entra_server(tenant: Tenant) -> Iterator[str]:
    """Serve ``tenant``; yields the base URL (login at it, Graph at ``<url>/v1.0``)."""
    server = _Server(tenant)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
