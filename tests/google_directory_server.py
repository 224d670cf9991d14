"""A fake Google Workspace account on 127.0.0.1: OAuth's token endpoint for a delegated
service account, and the Admin SDK Directory API reads of users, groups and members.

Written from Google's published documentation:

* Service account with domain-wide delegation — ``POST /token`` with ``grant_type=
  urn:ietf:params:oauth:grant-type:jwt-bearer`` and an RS256 ``assertion`` whose ``iss`` is
  the service account, ``sub`` the user to act as, ``scope`` space-separated, ``aud`` the token
  URL: https://developers.google.com/identity/protocols/oauth2/service-account
* users.list — ``GET /admin/directory/v1/users?customer=my_customer&maxResults=`` (up to 500),
  ``pageToken``/``nextPageToken``; users carry ``id``, ``primaryEmail``, ``aliases``,
  ``nonEditableAliases``, ``suspended``, ``archived``:
  https://developers.google.com/admin-sdk/directory/reference/rest/v1/users/list
* groups.list — ``GET /admin/directory/v1/groups?customer=my_customer``:
  https://developers.google.com/admin-sdk/directory/reference/rest/v1/groups/list
* members.list — ``GET /admin/directory/v1/groups/{groupKey}/members`` (``maxResults`` up to
  200); members carry ``email``, ``id``, ``type`` (``USER``, ``GROUP``, ``CUSTOMER``) and
  ``status``: https://developers.google.com/admin-sdk/directory/reference/rest/v1/members/list
* Errors — a JSON ``error`` object with ``code``, ``message`` and ``errors[].reason``; rate
  limits answer 403 ``userRateLimitExceeded`` or 429:
  https://developers.google.com/admin-sdk/directory/v1/limits
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jwt

from gdrive_server import _KEY, CLIENT_EMAIL, KEY_JSON

__all__ = ["ADMIN", "KEY_JSON", "Workspace", "workspace_server"]

ADMIN = "admin@example.com"
ACCESS_TOKEN = "directory-access-token"
_SCOPES = {
    "https://www.googleapis.com/auth/admin.directory.user.readonly",
    "https://www.googleapis.com/auth/admin.directory.group.readonly",
}


@dataclass
class Workspace:
    """``users`` as the API returns them; ``groups``: email → members as the API returns them."""

    users: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    throttle: int = 0  # the next n requests: 403 userRateLimitExceeded
    fail_path: str | None = None
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _error(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "errors": [{"reason": reason}]}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
        with self.server.workspace.lock:
            self.server.workspace.requests.append(self.path)
        try:
            claims = jwt.decode(
                form["assertion"][0],
                _KEY.public_key(),
                algorithms=["RS256"],
                audience=f"http://{self.headers.get('Host')}/token",
            )
            ok = (
                form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
                and claims["iss"] == CLIENT_EMAIL
                and claims["sub"] == ADMIN
                and set(claims["scope"].split()) <= _SCOPES
            )
        except (KeyError, jwt.InvalidTokenError):
            ok = False
        if not ok:
            self._reply(400, {"error": "unauthorized_client"})
            return
        self._reply(200, {"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})

    def do_GET(self) -> None:
        ws = self.server.workspace
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        with ws.lock:
            ws.requests.append(self.path)
            throttled = ws.throttle > 0
            if throttled:
                ws.throttle -= 1
        if self.headers.get("Authorization") != f"Bearer {ACCESS_TOKEN}":
            self._reply(401, _error(401, "authError", "Invalid Credentials"))
            return
        if throttled:
            self._reply(403, _error(403, "userRateLimitExceeded", "User Rate Limit Exceeded"))
            return
        if parts.path == ws.fail_path:
            self._reply(503, _error(503, "backendError", "Backend Error"))
            return
        path = parts.path.removeprefix("/admin/directory/v1")
        if path in ("/users", "/groups") and query.get("customer") != ["my_customer"]:
            self._reply(400, _error(400, "badRequest", "Bad Request"))
            return
        if path == "/users":
            key, items = "users", ws.users
        elif path == "/groups":
            key, items = "groups", [{"email": g, "id": f"id-{g}"} for g in ws.groups]
        elif path.startswith("/groups/") and path.endswith("/members"):
            group = unquote(path.split("/")[2])
            if group not in ws.groups:
                self._reply(404, _error(404, "notFound", "Resource Not Found: groupKey"))
                return
            key, items = "members", ws.groups[group]
        else:
            self._reply(404, _error(404, "notFound", "Not Found"))
            return
        size = int(query.get("maxResults", ["100"])[0])
        start = int(query.get("pageToken", ["0"])[0])
        body: dict[str, Any] = {"kind": f"admin#directory#{key}"}
        if items[start : start + size]:
            body[key] = items[start : start + size]  # an empty page has no list at all
        if start + size < len(items):
            body["nextPageToken"] = str(start + size)
        self._reply(200, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.workspace = workspace


@contextmanager
def workspace_server(workspace: Workspace) -> Iterator[str]:
    """Serve ``workspace``; yields the base URL (token at ``/token``, API under it)."""
    server = _Server(workspace)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
