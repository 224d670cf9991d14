"""Entra ID (through Microsoft Graph) as a directory source: ``kind = "entra"``.

Reads ``GET /users?$select=id,userPrincipalName,mail,accountEnabled,
onPremisesSamAccountName,otherMails``, ``GET /groups?$select=id`` and, per group,
``GET /groups/{id}/members`` (direct members: a ``#microsoft.graph.user`` is a user, a
``#microsoft.graph.group`` the nested group ``group:<id>``; devices, contacts and service
principals read nothing), each through its ``@odata.nextLink`` pages. The app needs the
application permissions ``User.Read.All`` and ``GroupMember.Read.All``.

Authentication is the Graph document connector's own (:mod:`clearance.sources.graph`): an
app-only token from the Microsoft identity platform with ``credentials.client_secret``,
``credentials.certificate``, ``options.certificate_file`` or ``options.federated_token_file``.

Ids match the Graph connector's ACLs: ``user_id`` is the same option with the same values
(``id``, the object id, by default; ``upn``; ``mail``), so a document shared with a user and the
directory's user are the same principal. Every other name (object id, UPN, mail, otherMails,
onPremisesSamAccountName) is an alias. A user without the chosen id (no mail, with
``user_id = "mail"``) cannot be represented: it is left out (it gets nothing) with a warning.
``accountEnabled`` false — or missing — is inactive. A 429 waits for its ``Retry-After``
(:class:`~clearance.sources.http.SourceClient`).

Delta (``delta = true``, the default from the configuration): the first read is the initial
round of ``/users/delta`` and ``/groups/delta`` (members as ``members@delta``) and later reads
follow the ``@odata.deltaLink`` of the round before, merging added, changed and ``@removed``
users, groups and memberships into the snapshot the reader keeps, and returning it whole. A
reader without that snapshot (a new process) starts a fresh initial round: the stored cursor
alone is never trusted to stand for users it did not see.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

import httpx

from clearance.access.directory import DirectoryDoc, Group, User
from clearance.errors import SourceError
from clearance.sources.directory.base import DirectoryRead, Progress
from clearance.sources.directory.registry import DirectoryContext, register_directory_reader
from clearance.sources.graph import (
    DEFAULT_GRAPH_URL,
    DEFAULT_LOGIN_URL,
    USER_IDS,
    ClientCredentials,
    Credential,
    read_credential,
)
from clearance.sources.http import SourceClient
from clearance.sources.options import (
    OPTIONS,
    FilePath,
    Flag,
    Positive,
    Text,
    Url,
    between,
    choice,
    directory_options,
)
from clearance.sources.rest import RestReader, inside, objects

__all__ = ["EntraOptions", "EntraReader", "build", "entra_reader"]

_USER_SELECT = "id,userPrincipalName,mail,accountEnabled,onPremisesSamAccountName,otherMails"
_ID_KEYS = {"id": "id", "upn": "userPrincipalName", "mail": "mail"}


@dataclass(frozen=True, slots=True)
class EntraOptions:
    """``[directories.<name>.options]`` of the ``entra`` kind. Read from the file, ``delta``
    is on unless turned off (:func:`parse_options`); built by hand, it is off."""

    __pydantic_config__ = OPTIONS

    tenant_id: Text
    client_id: Text
    graph_url: Url = DEFAULT_GRAPH_URL
    login_url: Url = DEFAULT_LOGIN_URL
    user_id: Annotated[str, choice(*USER_IDS)] = "id"
    page_size: Annotated[int, between(1, 999)] = 999
    max_concurrency: Positive = 4
    delta: Flag = False
    certificate_file: FilePath | None = None
    federated_token_file: FilePath | None = None


class EntraReader(RestReader):
    """One tenant's users and groups (see the module docstring)."""

    def __init__(
        self, name: str, options: EntraOptions, client: SourceClient, tokens: SourceClient | None
    ) -> None:
        self.source = name
        self.options = options
        self.client = client
        self._owned = () if tokens is None else (tokens,)
        self.base = options.graph_url.rstrip("/")
        # delta state: raw users and group members by object id, and the round's links
        self._users: dict[str, dict[str, Any]] = {}
        self._members: dict[str, set[tuple[str, str]]] = {}
        self._links: tuple[str, str] | None = None

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        return self._next_link(
            body, "@odata.nextLink", lambda link: inside(link, self.base), "graph_url"
        )

    def _all(self, path: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._every(f"{self.base}{path}", "value", f"GET {path}", params)

    def _round(
        self, url: str, params: Mapping[str, Any] | None
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item of one delta round and the round's ``@odata.deltaLink``."""
        items: list[dict[str, Any]] = []
        link: str | None = None

        def following(body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
            nonlocal link
            if isinstance(body, dict) and "@odata.deltaLink" in body:
                link = str(body["@odata.deltaLink"])
                self._next({"@odata.nextLink": link})  # the same origin check
                return None
            found = self._next(body)
            if found is None:
                raise self._error(f"GET {url}: a delta page with neither next nor delta link")
            return found

        for body in self.client.pages(url, following, params=params):
            values = objects(body, "value")
            if values is None:
                raise self._error("a delta page has no 'value' list")
            items.extend(values)
        assert link is not None
        return items, link

    def _read_delta(self, cursor: str | None) -> None:
        users = dict(self._users) if self._links and cursor else {}
        members = {g: set(m) for g, m in self._members.items()} if self._links and cursor else {}
        if self._links and cursor:
            try:
                user_items, user_link = self._round(self._links[0], None)
                group_items, group_link = self._round(self._links[1], None)
            except SourceError:
                self._links = None  # an expired or refused delta link: start afresh next time
                raise
        else:
            top = {"$top": self.options.page_size}
            user_items, user_link = self._round(
                f"{self.base}/users/delta", {"$select": _USER_SELECT, **top}
            )
            group_items, group_link = self._round(
                f"{self.base}/groups/delta", {"$select": "id,members", **top}
            )
        for raw in user_items:
            ident = str(raw.get("id"))
            if "@removed" in raw:
                users.pop(ident, None)
            else:
                users[ident] = {**users.get(ident, {}), **raw}
        for raw in group_items:
            ident = str(raw.get("id"))
            if "@removed" in raw:
                members.pop(ident, None)
                continue
            current = members.setdefault(ident, set())
            changes = raw.get("members@delta")
            for member in changes if isinstance(changes, list) else []:
                entry = (str(member.get("@odata.type")), str(member.get("id")))
                if "@removed" in member:
                    current.discard(entry)
                else:
                    current.add(entry)
        # applied only once both rounds were read whole
        self._users, self._members, self._links = users, members, (user_link, group_link)

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        before = self._requests()
        top = {"$top": self.options.page_size}
        warnings: list[str] = []
        users: dict[str, User] = {}
        by_object: dict[str, str] = {}
        key = _ID_KEYS[self.options.user_id]
        if self.options.delta:
            self._read_delta(cursor)
            listing = list(self._users.values())
        else:
            listing = self._all("/users", {"$select": _USER_SELECT, **top})
        for raw in listing:
            object_id = raw.get("id")
            if not isinstance(object_id, str) or not object_id:
                raise self._error("GET /users: a user without an id")
            ident = raw.get(key)
            if not isinstance(ident, str) or not ident:
                warnings.append(f"user {object_id} has no {key}: left out (user_id = {key!r})")
                continue
            names = [object_id, raw.get("userPrincipalName"), raw.get("mail")]
            names.append(raw.get("onPremisesSamAccountName"))
            other = raw.get("otherMails")
            names.extend(other if isinstance(other, list) else [])
            aliases = {n for n in names if isinstance(n, str) and n and n != ident}
            users[ident] = User(
                ident, active=raw.get("accountEnabled") is True, aliases=tuple(sorted(aliases))
            )
            by_object[object_id] = ident
        if progress is not None:
            progress("users", len(users))
        if self.options.delta:
            found: Iterable[tuple[str, set[tuple[str, str]]]] = self._members.items()
        else:
            group_ids = [str(g["id"]) for g in self._all("/groups", {"$select": "id", **top})]

            def members(group_id: str) -> tuple[str, set[tuple[str, str]]]:
                path = f"/groups/{quote(group_id, safe='')}/members"
                listed = self._all(path, {"$select": "id", **top})
                return group_id, {(str(m.get("@odata.type")), str(m.get("id"))) for m in listed}

            found = self.client.map(members, group_ids)
        groups = {
            gid: Group(
                gid, frozenset(_member(kind, ident, by_object) for kind, ident in pairs) - {""}
            )
            for gid, pairs in found
        }
        if progress is not None and not self.options.delta:
            progress("groups", len(groups))
        doc = DirectoryDoc(source=f"entra:{self.source}", users=users, groups=groups)
        return DirectoryRead(
            doc,
            api_calls=self._requests() - before,
            cursor="delta" if self.options.delta else None,
            warnings=tuple(warnings),
        )


def _member(kind: str, ident: str, by_object: Mapping[str, str]) -> str:
    """The principal a Graph directory object is, or ``""`` for one that grants nothing
    (a device, a contact, a service principal)."""
    if kind == "#microsoft.graph.user":
        return f"user:{by_object.get(ident, ident)}"
    if kind == "#microsoft.graph.group":
        return f"group:{ident}"
    return ""


def _delta_by_default(raw: object) -> object:
    return {"delta": True, **raw} if isinstance(raw, dict) else raw


def entra_reader(
    name: str,
    options: EntraOptions,
    credential: Credential,
    *,
    sleep: Callable[[float], None] = time.sleep,
    transport: httpx.BaseTransport | None = None,
) -> EntraReader:
    """A reader authenticating as the Graph connector does (``sleep``: for throttling tests)."""
    token_url = f"{options.login_url}/{quote(options.tenant_id, safe='')}/oauth2/v2.0/token"
    tokens = SourceClient(source=name, max_concurrency=1, sleep=sleep, transport=transport)
    parts = urlsplit(options.graph_url)
    scope = f"{parts.scheme}://{parts.netloc}/.default"
    # a client secret, or an assertion from a certificate or a federated token file
    auth = ClientCredentials(tokens, token_url, options.client_id, credential, scope)
    client = SourceClient(
        source=name,
        auth=auth,
        max_concurrency=options.max_concurrency,
        sleep=sleep,
        transport=transport,
    )
    return EntraReader(name, options, client, tokens)


def parse_options(name: str, raw: Mapping[str, Any]) -> EntraOptions:
    return directory_options(EntraOptions, name, raw, before=_delta_by_default)


def build(name: str, options: Mapping[str, Any], context: DirectoryContext) -> EntraReader:
    parsed = parse_options(name, options)
    credential = read_credential(
        f"directories.{name}",
        context.source.credentials,
        context.secret,
        parsed.certificate_file,
        parsed.federated_token_file,
    )
    return entra_reader(name, parsed, credential)


register_directory_reader("entra", build)
