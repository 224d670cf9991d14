"""Google Workspace (Admin SDK Directory API) as a directory source: ``kind = "google"``.

Reads ``GET /admin/directory/v1/users?customer=my_customer&maxResults=500``,
``GET /admin/directory/v1/groups?customer=my_customer`` and, per group,
``GET /admin/directory/v1/groups/{groupKey}/members``, each through its ``nextPageToken``
pages. The service account (``credentials.service_account``, its JSON key) acts, by
domain-wide delegation, as ``subject`` — an administrator — with the scopes
``admin.directory.user.readonly`` and ``admin.directory.group.readonly``.

Ids follow the Drive connector (:mod:`clearance.sources.gdrive`): a user is
``user:<primaryEmail>``, a group ``group:<group email>``, so Drive's ACLs and the directory
name the same principals. A user's ``aliases`` (and ``nonEditableAliases``) and its numeric
``id`` are aliases. ``suspended`` or ``archived`` is inactive. A member of ``type`` ``USER``
whose ``status`` is not ``ACTIVE`` grants nothing; a ``GROUP`` member is the nested group
``group:<email>``; a ``CUSTOMER`` member (everyone in the account) stands for every user read.
Google's 403 rate-limit answers are retried as 429s are (the Drive connector's rule).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

import httpx
from pydantic import PlainValidator

from clearance.access.directory import DirectoryDoc, Group, User
from clearance.sources.directory.base import DirectoryRead, Progress
from clearance.sources.directory.registry import DirectoryContext, register_directory_reader
from clearance.sources.gdrive import (
    DEFAULT_DIRECTORY_URL,
    DEFAULT_TOKEN_URL,
    DelegatedToken,
    GoogleErrors,
    ServiceAccount,
    parse_service_account,
)
from clearance.sources.http import SourceClient
from clearance.sources.options import OPTIONS, Positive, Text, Url, between, directory_options
from clearance.sources.rest import RestReader, objects, page_token
from clearance.validation import Invalid

__all__ = ["SCOPES", "GoogleOptions", "GoogleReader", "build", "google_reader"]

SCOPES = (
    "https://www.googleapis.com/auth/admin.directory.user.readonly",
    "https://www.googleapis.com/auth/admin.directory.group.readonly",
)


def _administrator(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("required")
    if "@" not in value:
        raise Invalid("expected the email address of an administrator")
    return value


@dataclass(frozen=True, slots=True)
class GoogleOptions:
    """``[directories.<name>.options]`` of the ``google`` kind."""

    __pydantic_config__ = OPTIONS

    subject: Annotated[str, PlainValidator(_administrator)]
    customer: Text = "my_customer"
    directory_url: Url = DEFAULT_DIRECTORY_URL
    token_url: Url = DEFAULT_TOKEN_URL
    page_size: Annotated[int, between(1, 500)] = 500
    max_concurrency: Positive = 4


def _email(value: object) -> str | None:
    return value.lower() if isinstance(value, str) and "@" in value else None


class GoogleReader(RestReader):
    """One Workspace account's users and groups (see the module docstring)."""

    def __init__(
        self, name: str, options: GoogleOptions, client: SourceClient, tokens: SourceClient
    ) -> None:
        self.source = name
        self.options = options
        self.client = client
        self._owned = (tokens,)
        self.base = options.directory_url.rstrip("/")

    def _all(self, path: str, key: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        url = f"{self.base}{path}"
        out: list[dict[str, Any]] = []
        for body in self.client.pages(url, page_token(url, params), params=params):
            items = objects(body, key, optional=True)
            if items is None:
                raise self._error(f"GET {path}: no '{key}' list")
            out.extend(items)
        return out

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        before = self._requests()
        size = {"maxResults": self.options.page_size}
        users: dict[str, User] = {}
        listing = self._all("/users", "users", {"customer": self.options.customer, **size})
        for raw in listing:
            email = _email(raw.get("primaryEmail"))
            if email is None:
                raise self._error("a user without a primaryEmail")
            names = [raw.get("id")]
            for key in ("aliases", "nonEditableAliases"):
                more = raw.get(key)
                names.extend(more if isinstance(more, list) else [])
            aliases = {str(n) for n in names if isinstance(n, str) and n and n.lower() != email}
            inactive = raw.get("suspended") is not False or raw.get("archived") is True
            users[email] = User(email, active=not inactive, aliases=tuple(sorted(aliases)))
        if progress is not None:
            progress("users", len(users))
        group_emails = []
        for raw in self._all("/groups", "groups", {"customer": self.options.customer, **size}):
            email = _email(raw.get("email"))
            if email is None:
                raise self._error("a group without an email")
            group_emails.append(email)
        everyone = frozenset(f"user:{u}" for u in users)

        def members(group: str) -> Group:
            path = f"/groups/{quote(group, safe='@')}/members"
            found: set[str] = set()
            for member in self._all(path, "members", {"maxResults": 200}):
                kind = member.get("type")
                if kind == "CUSTOMER":
                    found |= everyone
                    continue
                email = _email(member.get("email"))
                if email is None:
                    continue
                if kind == "GROUP":
                    found.add(f"group:{email}")
                elif kind == "USER" and member.get("status", "ACTIVE") == "ACTIVE":
                    found.add(f"user:{email}")
            return Group(group, frozenset(found))

        groups = {g.id: g for g in self.client.map(members, group_emails)}
        if progress is not None:
            progress("groups", len(groups))
        doc = DirectoryDoc(source=f"google:{self.source}", users=users, groups=groups)
        return DirectoryRead(doc, api_calls=self._requests() - before)


def google_reader(
    name: str,
    options: GoogleOptions,
    account: ServiceAccount,
    *,
    sleep: Callable[[float], None] = time.sleep,
    wall_clock: Callable[[], float] = time.time,
) -> GoogleReader:
    tokens = SourceClient(source=name, max_concurrency=1, sleep=sleep)
    auth: httpx.Auth = DelegatedToken(
        tokens,
        options.token_url,
        account.client_email,
        account.sign,
        options.subject,
        SCOPES,
        wall_clock=wall_clock,
    )
    client = SourceClient(
        source=name,
        auth=auth,
        max_concurrency=options.max_concurrency,
        sleep=sleep,
        retryable=GoogleErrors(),
    )
    return GoogleReader(name, options, client, tokens)


def parse_options(name: str, raw: Mapping[str, Any]) -> GoogleOptions:
    return directory_options(GoogleOptions, name, raw)


def build(name: str, options: Mapping[str, Any], context: DirectoryContext) -> GoogleReader:
    parsed = parse_options(name, options)
    account = parse_service_account(
        context.secret("service_account"), f"directories.{name}.credentials.service_account"
    )
    return google_reader(name, parsed, account)


register_directory_reader("google", build)
