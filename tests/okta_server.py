"""A fake Okta org on 127.0.0.1: the parts of the Management API a directory source reads.

Written from Okta's published documentation:

* Users API, list users — ``GET /api/v1/users?limit=``; a JSON array of users with ``id``,
  ``status`` (``STAGED``, ``PROVISIONED``, ``ACTIVE``, ``RECOVERY``, ``PASSWORD_EXPIRED``,
  ``LOCKED_OUT``, ``SUSPENDED``, ``DEPROVISIONED``) and ``profile.login`` / ``profile.email``;
  deprovisioned users are left out of the default listing:
  https://developer.okta.com/docs/reference/api/users/#list-users
* User lifecycle, deactivate a user — asynchronous (``Prefer: respond-async``): while it runs
  the user keeps its status and carries ``transitioningToStatus: DEPROVISIONED``; the status
  is ``DEPROVISIONED`` once it completes. Activation likewise carries
  ``transitioningToStatus: ACTIVE`` (the Management API's ``User`` schema: "the target status
  of an in-progress asynchronous status transition", one of ``ACTIVE``, ``DEPROVISIONED``,
  ``PROVISIONED``, returned only while the user's state is transitioning):
  https://developer.okta.com/docs/api/openapi/okta-management/management/tag/UserLifecycle/
* Groups API — ``GET /api/v1/groups`` and ``GET /api/v1/groups/{groupId}/users`` (a group's
  member users): https://developer.okta.com/docs/reference/api/groups/
* Pagination — every page carries a ``Link: <…>; rel="self"`` header and, unless it is the
  last, a second ``Link: <…>; rel="next"`` header (absolute, on the org's host) with an opaque
  ``after`` cursor:
  https://developer.okta.com/docs/reference/core-okta-api/#pagination
* Authentication — ``Authorization: SSWS {api_token}``; a bad token is 401 with an error
  object (``errorCode`` ``E0000011``):
  https://developer.okta.com/docs/reference/core-okta-api/#authentication
* Rate limits — 429 with ``X-Rate-Limit-Limit``, ``X-Rate-Limit-Remaining`` and
  ``X-Rate-Limit-Reset`` (UTC epoch seconds), error code ``E0000047``:
  https://developer.okta.com/docs/reference/rl-best-practices/
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "okta-test-token"


@dataclass
class OktaOrg:
    """The org's state: ``users`` as Okta returns them, ``groups`` id → member user ids."""

    users: list[dict[str, Any]] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)
    throttle: int = 0  # the next n requests are answered 429
    reset_in: int = 1  # seconds until the rate-limit window resets
    fail_path: str | None = None  # a path answered 500
    foreign_next: str | None = None  # every next link points there instead (hostile or broken)
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_user(self, uid: str, login: str, status: str = "ACTIVE", email: str = "") -> None:
        profile = {"login": login, "email": email or login}
        self.users.append({"id": uid, "status": status, "profile": profile})

    def deactivate(self, uid: str, *, finished: bool = False) -> None:
        """Deactivate a user asynchronously: ``transitioningToStatus`` is ``DEPROVISIONED``
        while it runs (its status unchanged); ``finished``: the status is ``DEPROVISIONED``."""
        (user,) = [u for u in self.users if u["id"] == uid]
        if finished:
            user.pop("transitioningToStatus", None)
            user["status"] = "DEPROVISIONED"
        else:
            user["transitioningToStatus"] = "DEPROVISIONED"


def _page(
    items: list[Any], query: dict[str, list[str]], path: str, host: str
) -> tuple[list[Any], list[str]]:
    """One page and its ``Link`` headers: ``self``, then ``next`` unless it is the last."""
    limit = int(query.get("limit", ["200"])[0])
    start = int(query.get("after", ["0"])[0])
    chunk = items[start : start + limit]
    here = f"http://{host}{path}?limit={limit}" + (f"&after={start}" if start else "")
    links = [f'<{here}>; rel="self"']
    following = start + limit
    if following < len(items):
        links.append(f'<http://{host}{path}?limit={limit}&after={following}>; rel="next"')
    return chunk, links


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(
        self,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        links: Sequence[str] = (),
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        for link in links:  # one Link header each, as Okta sends them
            self.send_header("Link", link)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        org = self.server.org
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        with org.lock:
            org.requests.append(self.path)
            throttled = org.throttle > 0
            if throttled:
                org.throttle -= 1
        if self.headers.get("Authorization") != f"SSWS {TOKEN}":
            self._reply(401, {"errorCode": "E0000011", "errorSummary": "Invalid token provided"})
            return
        if throttled:
            reset = str(int(time.time()) + org.reset_in)
            self._reply(
                429,
                {"errorCode": "E0000047", "errorSummary": "API call exceeded rate limit"},
                {
                    "X-Rate-Limit-Limit": "600",
                    "X-Rate-Limit-Remaining": "0",
                    "X-Rate-Limit-Reset": reset,
                },
            )
            return
        if org.fail_path is not None and parts.path == org.fail_path:
            self._reply(500, {"errorCode": "E0000009", "errorSummary": "Internal Server Error"})
            return
        host = self.headers.get("Host", "")
        if parts.path == "/api/v1/users":
            listed = [u for u in org.users if u["status"] != "DEPROVISIONED"]
        elif parts.path == "/api/v1/groups":
            listed = [{"id": g, "profile": {"name": g}} for g in org.groups]
        elif parts.path.startswith("/api/v1/groups/") and parts.path.endswith("/users"):
            gid = parts.path.split("/")[4]
            if gid not in org.groups:
                self._reply(404, {"errorCode": "E0000007", "errorSummary": "Not found"})
                return
            ids = set(org.groups[gid])
            listed = [u for u in org.users if u["id"] in ids]
        else:
            self._reply(404, {"errorCode": "E0000007", "errorSummary": "Not found"})
            return
        chunk, links = _page(listed, query, parts.path, host)
        if org.foreign_next is not None:
            links = [links[0], f'<{org.foreign_next}>; rel="next"']
        self._reply(200, chunk, links=links)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, org: OktaOrg) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.org = org


@contextmanager
def okta_server(org: OktaOrg) -> Iterator[str]:
    """Serve ``org``; yields the org URL."""
    server = _Server(org)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
