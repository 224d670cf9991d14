"""Okta as a directory source: ``[directories.<name>] kind = "okta"``.

Reads ``GET /api/v1/users`` and ``GET /api/v1/groups`` and, per group,
``GET /api/v1/groups/{id}/users``, each followed through its ``Link: <…>; rel="next"``
pages, with ``Authorization: SSWS <token>`` (the ``token`` credential; an API token of an
administrator who may read users and groups, or an OAuth service app granted
``okta.users.read`` and ``okta.groups.read``). A next link is followed only below
``org_url`` (the token goes nowhere else); one that points elsewhere fails the read.

Which users get access
----------------------
``ACTIVE``, ``PASSWORD_EXPIRED`` and ``RECOVERY`` are active: the person is a current member
of the organisation who must change a password before Okta lets them sign in again.
``STAGED`` and ``PROVISIONED`` (never activated), ``SUSPENDED``, ``DEPROVISIONED`` and
``LOCKED_OUT`` (locked after failed sign-ins, possibly an attack in progress) are inactive,
and so is every status this reader does not know. (Okta's user listing leaves deprovisioned
users out; they are then absent from the snapshot and removed.)

A user in the middle of an asynchronous status change carries ``transitioningToStatus``, the
status it is moving to, beside the status it still has: a deactivation shows
``status: ACTIVE, transitioningToStatus: DEPROVISIONED`` until Okta finishes deprovisioning
it from every app, which can take a while. Such a user is active only when both statuses are:
a leaver is inactive from the moment the deactivation starts, not when Okta completes it.

Ids
---
``user_id = "login"`` (default) makes ``profile.login`` the user id, ``"id"`` Okta's user id;
either way the other, and ``profile.email``, are aliases. A group is ``group:<Okta group id>``;
Okta groups do not nest.

Throttling
----------
A 429 is retried through :class:`~clearance.sources.http.SourceClient`; Okta says when its
window resets in ``X-Rate-Limit-Reset`` (UTC epoch seconds) rather than ``Retry-After``, and
that moment is what is waited for, within the client's limit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
from pydantic import Field, PlainValidator

from clearance.access.directory import DirectoryDoc, Group, User
from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources.directory.base import DirectoryRead, Progress
from clearance.sources.directory.registry import DirectoryContext, register_directory_reader
from clearance.sources.http import BearerAuth, SourceClient
from clearance.sources.options import OPTIONS, Positive, between, choice, directory_options
from clearance.sources.rest import inside
from clearance.validation import Invalid

__all__ = ["ACTIVE_STATUSES", "OktaReader", "active", "build"]

ACTIVE_STATUSES = frozenset({"ACTIVE", "PASSWORD_EXPIRED", "RECOVERY"})


def active(item: Mapping[str, Any]) -> bool:
    """Whether an Okta user object is an active user: its ``status`` is one of
    :data:`ACTIVE_STATUSES` and so is the ``transitioningToStatus`` of a status change in
    progress, when it has one (``null`` or absent: none)."""
    moving_to = item.get("transitioningToStatus")
    return item.get("status") in ACTIVE_STATUSES and (
        moving_to is None or moving_to in ACTIVE_STATUSES
    )


class _OktaClient(SourceClient):
    """:class:`SourceClient` that reads Okta's ``X-Rate-Limit-Reset`` as a Retry-After."""

    def __init__(self, *args: Any, clock: Callable[[], float] = time.time, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clock = clock

    def _wait(self, attempt: int, response: httpx.Response | None, method: str, url: str) -> float:
        if (
            response is not None
            and response.status_code == 429
            and "Retry-After" not in response.headers
        ):
            reset = response.headers.get("X-Rate-Limit-Reset", "")
            if reset.isdigit():
                seconds = max(0, math.ceil(int(reset) - self._clock()))
                response.headers["Retry-After"] = str(seconds)
        return super()._wait(attempt, response, method, url)


class OktaReader:
    """One Okta org's users and groups (see the module docstring)."""

    def __init__(
        self,
        name: str,
        org_url: str,
        token: Secret,
        *,
        user_id: str = "login",
        page_size: int = 200,
        max_concurrency: int = 4,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.user_id = user_id
        self.page_size = page_size
        self.org_url = org_url.rstrip("/")
        self.client = _OktaClient(
            self.org_url,
            source=name,
            auth=BearerAuth(token, scheme="SSWS"),
            headers={"Accept": "application/json"},
            max_concurrency=max_concurrency,
            transport=transport,
            sleep=sleep,
            clock=clock,
        )

    def close(self) -> None:
        self.client.close()

    def _list(self, path: str) -> Iterator[Mapping[str, Any]]:
        """Every item of a listing, through its ``Link: rel="next"`` pages."""
        url: str | None = path
        params: dict[str, Any] | None = {"limit": self.page_size}
        seen: set[str] = set()
        while url is not None:
            if url in seen:
                raise SourceError(f"source {self.name!r}: {path} returned a page twice")
            seen.add(url)
            response = self.client.request("GET", url, params=params)
            try:
                body = response.json()
            except ValueError as exc:
                raise SourceError(f"source {self.name!r}: GET {path}: not JSON") from exc
            if not isinstance(body, list):
                raise SourceError(f"source {self.name!r}: GET {path}: expected a JSON array")
            for item in body:
                if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                    raise SourceError(f"source {self.name!r}: GET {path}: an item without an id")
                yield item
            following = response.links.get("next", {}).get("url")
            if following and not self._ours(following):
                raise SourceError(
                    f"source {self.name!r}: GET {path}: a next link points outside org_url; "
                    "it is not followed"
                )
            url, params = (following, None) if following else (None, None)

    def _ours(self, link: str) -> bool:
        """Whether ``link`` points below ``org_url``'s API (the only links followed with the
        token)."""
        return inside(link, f"{self.org_url}/api")

    def _user(self, item: Mapping[str, Any]) -> User:
        profile = item.get("profile") if isinstance(item.get("profile"), Mapping) else {}
        assert isinstance(profile, Mapping)
        login = profile.get("login")
        okta_id = str(item["id"])
        if self.user_id == "login":
            if not isinstance(login, str) or not login:
                raise SourceError(f"source {self.name!r}: user {okta_id} has no profile.login")
            ident = login
        else:
            ident = okta_id
        names = {okta_id, *(v for v in (login, profile.get("email")) if isinstance(v, str) and v)}
        names.discard(ident)
        return User(ident, active=active(item), aliases=tuple(sorted(names)))

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        before = self.client.requests
        users: dict[str, User] = {}
        by_okta_id: dict[str, str] = {}
        for item in self._list("/api/v1/users"):
            user = self._user(item)
            users[user.id] = user
            by_okta_id[str(item["id"])] = user.id
            if progress is not None and len(users) % 1000 == 0:
                progress("users", len(users))
        if progress is not None:
            progress("users", len(users))
        group_ids = [str(g["id"]) for g in self._list("/api/v1/groups")]

        def members(group_id: str) -> Group:
            found = {
                f"user:{by_okta_id.get(str(u['id']), str(u['id']))}"
                for u in self._list(f"/api/v1/groups/{group_id}/users")
            }
            return Group(group_id, frozenset(found))

        groups = {g.id: g for g in self.client.map(members, group_ids)}
        if progress is not None:
            progress("groups", len(groups))
        doc = DirectoryDoc(source=f"okta:{self.name}", users=users, groups=groups)
        return DirectoryRead(doc, api_calls=self.client.requests - before)


def _org_url(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("required (https://<org>.okta.com)")
    parts = urlsplit(value)
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise Invalid(f"expected an https:// URL, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class OktaOptions:
    """``[directories.<name>.options]`` of the ``okta`` kind."""

    __pydantic_config__ = OPTIONS

    org_url: Annotated[str, PlainValidator(_org_url), Field(validate_default=True)] = ""
    user_id: Annotated[str, choice("login", "id")] = "login"
    page_size: Annotated[int, between(1, 200)] = 200
    max_concurrency: Positive = 4


def build(name: str, options: Mapping[str, Any], context: DirectoryContext) -> OktaReader:
    parsed = directory_options(OktaOptions, name, options)
    return OktaReader(
        name,
        parsed.org_url,
        context.secret("token"),
        user_id=parsed.user_id,
        page_size=parsed.page_size,
        max_concurrency=parsed.max_concurrency,
    )


register_directory_reader("okta", build)
