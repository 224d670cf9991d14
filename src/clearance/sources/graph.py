"""The Microsoft Graph connector: one SharePoint document library or OneDrive, kept in step.

Content comes from the drive's delta feed (``GET /drives/{id}/root/delta``): the first sync
enumerates the whole drive (a snapshot: what it does not list is deleted), later ones follow
the stored ``@odata.deltaLink`` and see only what changed, deletions as items with the
``deleted`` facet. A delta token the service no longer accepts (``410 Gone``) starts a fresh
enumeration, again as a snapshot. Only files are documents; folders shape inheritance only.
An item's version is its content hash, modification time, size, name and link — not its
eTag, which a sharing change may move — so a permission change never re-reads content.
Content is downloaded from the item's pre-authenticated ``@microsoft.graph.downloadUrl``,
without the Graph token.

Permissions are re-read in full by every permission sync: the delta feed does not say when
an item's *inherited* access changed (a folder shared, a file moved into a restricted
folder), so each file's ``/permissions`` — which lists inherited entries too — is listed
again, on up to ``max_concurrency`` requests at once. Each permission maps as follows:

* a user (``grantedToV2.user``) → ``user:<id>`` by ``user_id``: the Entra object id, the
  ``upn`` or the ``mail`` (looked up once per sync); a user that no longer exists, or has
  no such attribute, grants nobody;
* an Entra group (``grantedToV2.group``) → ``group:<object id>``; its transitive members
  (nested groups flattened) are synced into the directory by :meth:`GraphConnector.groups`;
* a SharePoint group (``siteGroup``) → what ``site_groups`` maps its id or name to, else the
  item is visible to nobody; a SharePoint user (``siteUser``) without an Entra user →
  looked up by the UPN of its claims login name, else visible to nobody;
* a sharing link scoped to ``organization`` → ``organization_principal`` (e.g. the group of
  all employees), or nobody when unset; to ``users`` → the people it names
  (``grantedToIdentitiesV2``); ``anonymous`` → ``Access.anyone_with_link`` (visible to
  nobody in a corpus above PUBLIC); ``existingAccess`` and upload-only links grant nothing;
* an application or device grants no person access; an expired permission or an invitation
  not yet redeemed grants nothing yet;
* anything else — an unknown role, link scope or identity type, permissions that cannot be
  read (403) — makes the item visible to nobody, and ``source status`` says why.

Credentials: a client-credentials token from the Microsoft identity platform
(``{login_url}/{tenant_id}/oauth2/v2.0/token``), the client secret from the environment
variable named by ``credentials.client_secret``. Secret and token are held as
:class:`~clearance.secrets.Secret` and sent only in the token request and the
``Authorization`` header; no link outside ``graph_url`` is ever followed with the token.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources import rest
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
from clearance.sources.rest import (
    RenewingToken,
    Unrepresentable,
    access_from,
    bool_option,
    combine,
    principal,
    principal_option,
    principal_table,
    snapshot_pages,
    string_option,
    text,
    timestamp,
    url_option,
)
from clearance.sources.sync import MEDIA_SUFFIXES

__all__ = ["ClientCredentials", "GraphConnector", "GraphOptions", "graph_connector"]

DEFAULT_GRAPH_URL = "https://graph.microsoft.com/v1.0"
DEFAULT_LOGIN_URL = "https://login.microsoftonline.com"
USER_IDS = ("id", "upn", "mail")
_OPTIONS = frozenset(
    {
        "tenant_id",
        "client_id",
        "drive_id",
        "graph_url",
        "login_url",
        "user_id",
        "organization_principal",
        "site_groups",
        "sync_groups",
    }
)
# Roles that let a person read the item. Every documented role does; one not documented
# here might not, and is not guessed at.
_READ_ROLES = frozenset({"read", "write", "owner", "sp.owner", "sp.member"})
_CLAIMS_PREFIX = "i:0#.f|membership|"  # a SharePoint login name that carries the UPN
_USER_SELECT = "id,userPrincipalName,mail"


@dataclass(frozen=True, slots=True)
class GraphOptions:
    """``[sources.<name>.options]`` of the ``graph`` kind, validated."""

    tenant_id: str
    client_id: str
    drive_id: str
    graph_url: str = DEFAULT_GRAPH_URL
    login_url: str = DEFAULT_LOGIN_URL
    user_id: str = "id"
    organization_principal: str | None = None
    site_groups: Mapping[str, str] | None = None
    sync_groups: bool = True


class ClientCredentials(RenewingToken):
    """An app-only token from the Microsoft identity platform (client credentials)."""

    def __init__(
        self,
        tokens: SourceClient,
        token_url: str,
        client_id: str,
        secret: Secret,
        scope: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(tokens, token_url, clock)
        self._client_id = client_id
        self._secret = secret
        self._scope = scope

    def grant(self) -> dict[str, str]:
        return {
            "grant_type": "client_credentials",
            "client_id": self._client_id,
            "client_secret": self._secret.reveal(),
            "scope": self._scope,
        }


def _facet(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A facet of a Graph object (``file``, ``hashes`` …), or an empty one."""
    value = raw.get(name)
    return value if isinstance(value, dict) else {}


class GraphConnector:
    """See the module docstring. Built by the ``graph`` kind, or by :func:`graph_connector`."""

    def __init__(
        self,
        source: str,
        options: GraphOptions,
        client: SourceClient,
        *,
        token_client: SourceClient | None = None,
    ) -> None:
        self.source = source
        self.options = options
        self.client = client
        self._token_client = token_client
        self._base = options.graph_url.rstrip("/")
        self._drive = f"{self._base}/drives/{quote(options.drive_id, safe='')}"
        self._users: dict[str, str | None] = {}
        self._users_lock = threading.Lock()
        self._snapshot: list[PermissionChange] | None = None
        self._entra_groups: set[str] = set()

    def close(self) -> None:
        self.client.close()
        if self._token_client is not None:
            self._token_client.close()

    # ------------------------------------------------------------------ plumbing

    def _error(self, message: str) -> SourceError:
        return SourceError(f"source {self.source!r}: {message}")

    def _ours(self, link: str) -> bool:
        """Whether ``link`` points into the configured Graph API: only such links are
        followed with the token."""
        parts, base = urlsplit(link), urlsplit(self._base)
        return (
            (parts.scheme, parts.netloc) == (base.scheme, base.netloc)
            and parts.path.startswith(base.path + "/")
            and "/../" not in parts.path + "/"
        )

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        link = body.get("@odata.nextLink") if isinstance(body, dict) else None
        if link is None:
            return None
        if not isinstance(link, str) or not self._ours(link):
            raise self._error("a next link points outside graph_url; it is not followed")
        return link, None

    def _values(self, body: Any, what: str) -> list[dict[str, Any]]:
        values = body.get("value") if isinstance(body, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
            raise self._error(f"{what}: the response has no 'value' list")
        return values

    def _all(self, url: str, what: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        out: list[Any] = []
        for body in self.client.pages(url, self._next, params=params):
            out.extend(self._values(body, what))
        return out

    def doc_id(self, item_id: str) -> str:
        return f"graph:{self.options.drive_id}/{item_id}"

    # ------------------------------------------------------------------ content

    def _delta(self, cursor: str | None) -> Iterator[tuple[list[dict[str, Any]], str, bool]]:
        """``(items, cursor, last)`` per delta page; the last page's cursor is the
        ``@odata.deltaLink``, every other page's the link that resumes after it."""
        url = cursor or f"{self._drive}/root/delta"
        for body in self.client.pages(url, self._next):
            items = self._values(body, "delta")
            following = self._next(body)  # checked before its page's cursor is stored
            if following is not None:
                yield items, following[0], False
                continue
            delta = body.get("@odata.deltaLink")
            if not isinstance(delta, str) or not self._ours(delta):
                raise self._error("the delta feed ended without a usable @odata.deltaLink")
            yield items, delta, True

    def _version(self, raw: Mapping[str, Any]) -> str:
        """Content hash, modification time, size, name and link: every content-side change
        moves it; a sharing change does not."""
        hashes = _facet(_facet(raw, "file"), "hashes")
        parts = [
            str(hashes.get(k, "")) for k in ("quickXorHash", "sha256Hash", "sha1Hash", "crc32Hash")
        ]
        parts += [str(raw.get(k, "")) for k in ("lastModifiedDateTime", "size", "name", "webUrl")]
        digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]
        return f"graph:{digest}"

    def _entry(self, raw: dict[str, Any]) -> ItemRef | Tombstone | None:
        item_id = text(raw.get("id"))
        if item_id is None:
            raise self._error("delta: an item without an id")
        if "deleted" in raw:
            return Tombstone(self.doc_id(item_id))
        if "file" not in raw:
            return None  # folders, the root, notebooks: not documents
        return ItemRef(self.doc_id(item_id), self._version(raw), item_id)

    def _listing(self, link: str | None) -> Iterator[ContentPage]:
        snapshot = link is None
        for items, next_link, last in self._delta(link):
            entries = [e for e in map(self._entry, items) if e is not None]
            cursor = f"{self.options.drive_id} {next_link}"
            yield ContentPage(entries, cursor=cursor, snapshot=snapshot, last=last)

    def _delta_link(self, cursor: str | None) -> str | None:
        """The delta link a stored cursor holds (``"<drive id> <link>"``), or ``None`` when
        it belongs to another drive or another Graph URL (the configuration changed): the
        listing then starts from scratch rather than follow another drive's feed."""
        if cursor is None:
            return None
        drive, _, link = cursor.partition(" ")
        return link if drive == self.options.drive_id and self._ours(link) else None

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """The delta feed since ``cursor``; from scratch (a snapshot) without one, with one
        that is not this drive's, or when the service answers 410 (token expired)."""
        link = self._delta_link(cursor)
        try:
            yield from self._listing(link)
        except SourceError as exc:
            if exc.status != 410 or link is None:
                raise
            yield from self._listing(None)

    def fetch(self, item: ItemRef) -> SourceDocument:
        raw = self.client.get_json(f"{self._drive}/items/{quote(item.ref, safe='')}")
        if not isinstance(raw, dict) or "file" not in raw or "deleted" in raw:
            raise self._error(f"{item.doc_id} is no longer a file")
        name = text(raw.get("name")) or item.ref
        media_type = rest.media_type(text(_facet(raw, "file").get("mimeType")), name)
        access = self._access(item.ref)
        if access is None:
            raise self._error(f"{item.doc_id} is gone")
        data = b""
        if media_type in MEDIA_SUFFIXES:  # anything else is skipped by the engine unread
            data = self._download(raw, item.doc_id)
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=name,
            uri=text(raw.get("webUrl")) or "",
            access=access,
            media_type=media_type,
            data=data,
            created_at=timestamp(raw.get("createdDateTime")),
            modified_at=timestamp(raw.get("lastModifiedDateTime")),
            file_name=name,
        )

    def _download(self, raw: Mapping[str, Any], doc_id: str) -> bytes:
        """The content, from the pre-authenticated download URL — sent without the token,
        which that host must never see."""
        url = text(raw.get("@microsoft.graph.downloadUrl"))
        if url is None or urlsplit(url).scheme not in ("https", "http"):
            raise self._error(f"{doc_id}: no download URL")
        return self.client.request("GET", url, auth=None).content

    # ------------------------------------------------------------------ permissions

    def _access(self, item_id: str) -> Access | None:
        """The item's access from its permission list, or ``None`` when the item is gone."""
        url = f"{self._drive}/items/{quote(item_id, safe='')}/permissions"
        return access_from(lambda: self._all(url, "permissions"), self._permission)

    def _map(self, permissions: Sequence[Mapping[str, Any]]) -> Access:
        return combine(permissions, self._permission)

    def _permission(self, permission: Mapping[str, Any]) -> set[str] | None:
        """The principals one permission lets read the item (``None``: anyone with the
        link); raises :class:`Unrepresentable` for what cannot be stated safely."""
        ident = permission.get("id", "?")
        roles = permission.get("roles")
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise Unrepresentable(f"permission {ident}: its roles cannot be read")
        if not set(roles) & _READ_ROLES:
            if roles:
                raise Unrepresentable(
                    f"permission {ident}: role {', '.join(sorted(roles))} is not understood"
                )
            return set()
        expires = timestamp(permission.get("expirationDateTime"))
        if expires is not None and expires.year > 1 and expires <= datetime.now(UTC):
            return set()  # expired (year 1 is .NET's "never expires")
        link = permission.get("link")
        if link is not None:
            return self._link(ident, link, permission)
        identity = permission.get("grantedToV2") or permission.get("grantedTo")
        if identity is None:
            if "invitation" in permission:
                return set()  # not redeemed yet: nobody can use it until someone signs in
            raise Unrepresentable(f"permission {ident} names no one")
        return self._identity(identity)

    def _link(self, ident: Any, link: Any, permission: Mapping[str, Any]) -> set[str] | None:
        if not isinstance(link, dict):
            raise Unrepresentable(f"permission {ident}: its sharing link cannot be read")
        if link.get("type") == "createOnly":
            return set()  # an upload-only link lets nobody read
        scope = link.get("scope")
        people = permission.get("grantedToIdentitiesV2") or permission.get("grantedToIdentities")
        if scope == "anonymous":
            return None
        if scope == "organization":
            organization = self.options.organization_principal
            return {organization} if organization else set()
        if scope == "existingAccess":
            return set()
        if scope == "users" or (scope is None and people):
            if people is None:
                return set()
            if not isinstance(people, list):
                raise Unrepresentable(f"permission {ident}: its recipients cannot be read")
            out: set[str] = set()
            for person in people:
                out |= self._identity(person)
            return out
        raise Unrepresentable(f"a sharing link of scope {scope!r} is not understood")

    def _identity(self, identity: Any) -> set[str]:
        """The principals of one (SharePoint) identity set."""
        if not isinstance(identity, dict):
            raise Unrepresentable("an identity that cannot be read")
        group = identity.get("group")
        if isinstance(group, dict) and text(group.get("id")):
            gid = str(group["id"])
            self._entra_groups.add(gid)
            return {principal(f"group:{gid}")}
        user = identity.get("user")
        if isinstance(user, dict) and text(user.get("id")):
            found = self._user(str(user["id"]))
            return set() if found is None else {found}
        site_group = identity.get("siteGroup")
        if isinstance(site_group, dict):
            return {self._site_group(site_group)}
        site_user = identity.get("siteUser")
        if isinstance(site_user, dict):
            login = text(site_user.get("loginName")) or ""
            if login.lower().startswith(_CLAIMS_PREFIX):
                found = self._user(login[len(_CLAIMS_PREFIX) :])
                return set() if found is None else {found}
            raise Unrepresentable(
                f"SharePoint user {site_user.get('displayName') or login!r} has no Entra account"
            )
        if "application" in identity or "device" in identity:
            return set()  # an app or a device: no person reads through it
        kinds = ", ".join(sorted(k for k in identity if not k.startswith("@"))) or "none"
        raise Unrepresentable(f"a principal of type {kinds} cannot be mapped")

    def _site_group(self, site_group: Mapping[str, Any]) -> str:
        table = self.options.site_groups or {}
        for key in (site_group.get("id"), site_group.get("displayName")):
            if isinstance(key, (str, int)) and str(key) in table:
                return table[str(key)]
        raise Unrepresentable(
            f"SharePoint group {site_group.get('displayName') or site_group.get('id')!r} is not "
            "mapped to a principal (options.site_groups)"
        )

    def _user_principal(self, user: Mapping[str, Any]) -> str | None:
        key = {"id": "id", "upn": "userPrincipalName", "mail": "mail"}[self.options.user_id]
        value = text(user.get(key))
        return None if value is None else principal(f"user:{value}")

    def _user(self, key: str) -> str | None:
        """``user:<id>`` for an Entra user (object id or UPN), by ``user_id``; ``None``
        for a user that no longer exists or lacks that attribute (grants nobody)."""
        if self.options.user_id == "id" and "@" not in key:
            return principal(f"user:{key}")
        with self._users_lock:
            if key in self._users:
                return self._users[key]
        try:
            raw = self.client.get_json(
                f"{self._base}/users/{quote(key, safe='@')}", params={"$select": _USER_SELECT}
            )
        except SourceError as exc:
            if exc.status != 404:
                raise
            raw = {}
        found = self._user_principal(raw) if isinstance(raw, dict) else None
        with self._users_lock:
            self._users[key] = found
        return found

    def _files(self) -> list[str]:
        """Every file of the drive now, by a fresh enumeration (deleted ones left out)."""
        latest: dict[str, bool] = {}
        for items, _, _ in self._delta(None):
            for raw in items:
                entry = self._entry(raw)
                if entry is not None:
                    latest[str(raw["id"])] = isinstance(entry, ItemRef)
        return [item_id for item_id, alive in latest.items() if alive]

    def _read_permissions(self) -> list[PermissionChange]:
        self._entra_groups = set()
        files = self._files()
        accesses = self.client.map(self._access, files)
        return [
            PermissionChange(self.doc_id(item_id), access)
            for item_id, access in zip(files, accesses, strict=True)
            if access is not None
        ]

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every file's access, re-read (a snapshot: see the module docstring)."""
        changes = self._snapshot if self._snapshot is not None else self._read_permissions()
        self._snapshot = None
        yield from snapshot_pages(changes)

    def groups(self) -> GroupSnapshot | None:
        """The Entra groups the drive's permissions name, each with its transitive user
        members. Reads the permissions to learn which groups those are; the permission
        listing of the same sync then reuses what it read."""
        if not self.options.sync_groups:
            return None
        self._snapshot = self._read_permissions()
        ids = sorted(self._entra_groups)
        members = self.client.map(self._members, ids)
        return GroupSnapshot(dict(zip(ids, members, strict=True)))

    def _members(self, group_id: str) -> frozenset[str]:
        url = f"{self._base}/groups/{quote(group_id, safe='')}/transitiveMembers"
        try:
            objects = self._all(url, "transitiveMembers", params={"$select": _USER_SELECT})
        except SourceError as exc:
            if exc.status != 404:
                raise
            return frozenset()  # the group was deleted: it has no members
        out: set[str] = set()
        for member in objects:
            if member.get("@odata.type") != "#microsoft.graph.user":
                continue  # nested groups are flattened already; devices and apps read nothing
            try:
                found = self._user_principal(member)
            except Unrepresentable:
                found = None
            if found is not None:
                out.add(found)
        return frozenset(out)


# ---------------------------------------------------------------------- building


def parse_options(name: str, raw: Mapping[str, Any]) -> GraphOptions:
    """Validate ``[sources.<name>.options]`` of a ``graph`` source."""
    key = f"sources.{name}.options"
    options = dict(raw)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigError(f"unknown setting '{key}.{unknown[0]}'")
    user_id = options.get("user_id", "id")
    if user_id not in USER_IDS:
        raise ConfigError(f"{key}.user_id: expected one of {', '.join(USER_IDS)}, got {user_id!r}")
    organization = principal_option(options, "organization_principal", key)
    site_groups = principal_table(options, "site_groups", key)
    sync_groups = bool_option(options, "sync_groups", key, True)
    return GraphOptions(
        tenant_id=string_option(options, "tenant_id", key),
        client_id=string_option(options, "client_id", key),
        drive_id=string_option(options, "drive_id", key),
        graph_url=url_option(options, "graph_url", key, DEFAULT_GRAPH_URL),
        login_url=url_option(options, "login_url", key, DEFAULT_LOGIN_URL),
        user_id=user_id,
        organization_principal=organization,
        site_groups=site_groups,
        sync_groups=sync_groups,
    )


def graph_connector(
    name: str,
    options: GraphOptions,
    secret: Secret,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
) -> GraphConnector:
    """A connector for ``options``, authenticating with ``secret`` (``sleep``: injectable
    for tests of throttling)."""
    graph = urlsplit(options.graph_url)
    scope = f"{graph.scheme}://{graph.netloc}/.default"
    token_url = f"{options.login_url}/{quote(options.tenant_id, safe='')}/oauth2/v2.0/token"
    tokens = SourceClient(source=name, max_concurrency=1, sleep=sleep)
    auth = ClientCredentials(tokens, token_url, options.client_id, secret, scope)
    client = SourceClient(source=name, auth=auth, max_concurrency=max_concurrency, sleep=sleep)
    return GraphConnector(name, options, client, token_client=tokens)


def _build(context: SourceContext) -> Connector:
    source = context.source
    options = parse_options(source.name, source.options)
    return graph_connector(
        source.name,
        options,
        context.secret("client_secret"),
        max_concurrency=source.max_concurrency,
    )


register_connector("graph", _build)
