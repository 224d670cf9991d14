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
  ``upn`` or the ``mail``. Every user is looked up in Entra (``GET /users/{id}``, once per
  user per sync, forgotten between syncs), whatever ``user_id`` is: a user that no longer
  exists (404), whose account is disabled, or who lacks that attribute grants nobody; any
  other failure of the lookup fails the sync, so a user is never granted unverified;
* an Entra group (``grantedToV2.group``) → ``group:<object id>``; its transitive members
  (nested groups flattened) are synced into the directory by :meth:`GraphConnector.groups`;
* a SharePoint group (``siteGroup``) → what ``site_groups`` maps its id or name to; else,
  with ``sync_site_groups``, ``group:sharepoint/<site host and path>/<group id>``, whose
  members :meth:`GraphConnector.groups` reads from SharePoint each permission sync (a member
  that cannot be resolved grants nothing); else the item is visible to nobody. A SharePoint
  user (``siteUser``) without an Entra user → looked up by the UPN of its claims login name,
  else visible to nobody;
* a sharing link scoped to ``organization`` → ``organization_principal`` (e.g. the group of
  all employees), or nobody when unset; to ``users`` → the people it names
  (``grantedToIdentitiesV2``); ``anonymous`` → ``Access.anyone_with_link`` (visible to
  nobody in a corpus above PUBLIC); ``existingAccess`` and upload-only links grant nothing;
* an application or device grants no person access; an expired permission or an invitation
  not yet redeemed grants nothing yet;
* anything else — an unknown role, link scope or identity type, permissions that cannot be
  read (403) — makes the item visible to nobody, and ``source status`` says why.

Credentials: a client-credentials token from the Microsoft identity platform
(``{login_url}/{tenant_id}/oauth2/v2.0/token``), the app proving itself with exactly one of

* a client secret, from the environment variable named by ``credentials.client_secret``;
* a certificate: a client assertion (RFC 7523: ``PS256``, the certificate's ``x5t#S256``,
  ``aud`` the token endpoint, ``iss`` = ``sub`` = the client id, a fresh ``jti``, valid ten
  minutes) signed with its private key, from a PEM (private key and certificate) in the
  environment variable named by ``credentials.certificate`` or the file
  ``options.certificate_file``;
* workload identity federation: the token in ``options.federated_token_file`` (as
  ``AZURE_FEDERATED_TOKEN_FILE`` names it), sent as the client assertion and re-read at
  every renewal, since the platform rotates it.

Change notifications (docs/notifications.md): :meth:`GraphConnector.subscribe` keeps one
Graph subscription on the drive's root (``POST /subscriptions``, ``changeType`` ``updated``,
the notification endpoint as both ``notificationUrl`` and ``lifecycleNotificationUrl``, the
longest expiration Graph allows for a driveItem, and the ``notification_secret`` credential
as ``clientState``), renewed in place (``PATCH /subscriptions/{id}``) or made again when Graph
no longer has it. :meth:`GraphConnector.notification` answers Graph's validation handshake
and takes a notification only when every entry carries that ``clientState`` (compared in
constant time). A driveItem notification never says which items changed, so each accepted one
is resolved through :meth:`GraphConnector.changed_since`: the drive's delta read with
``Prefer: deltashowremovedasdeleted, deltatraversepermissiongaps, deltashowsharingchanges,
hierarchicalsharing`` from its own cursor (separate from the content cursor), naming every
file it lists and every file beneath a folder it lists; :meth:`GraphConnector.permissions_of`
then re-reads just those items, mapped exactly as a full permission sync maps them.

Secrets, keys and tokens are held as :class:`~clearance.secrets.Secret` (or a key object
that never prints) and sent only in the token request and the ``Authorization`` header; no
error names them; no link outside ``graph_url`` (or ``site_url``) is ever followed with a
token. SharePoint's own REST API (site group members) takes a token for the SharePoint
resource, which it refuses when it was obtained with a client secret.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import quote, urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key
from pydantic import AfterValidator, ValidationInfo

from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources import rest
from clearance.sources.base import (
    Access,
    Connector,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    Notice,
    PermissionChange,
    SourceContext,
    SourceDocument,
    Subscription,
    Tombstone,
)
from clearance.sources.http import SourceClient
from clearance.sources.options import (
    OPTIONS,
    FilePath,
    Flag,
    Principal,
    PrincipalTable,
    Text,
    Url,
)
from clearance.sources.options import parse as parse_table
from clearance.sources.registry import register_connector
from clearance.sources.rest import (
    RenewingToken,
    RestConnector,
    Unrepresentable,
    access_from,
    combine,
    facet,
    inside,
    principal,
    text,
    timestamp,
    unless_gone,
)
from clearance.validation import Invalid

__all__ = [
    "AssertionCredentials",
    "ClientCertificate",
    "ClientCredentials",
    "FederatedTokenFile",
    "GraphConnector",
    "GraphOptions",
    "graph_connector",
    "parse_certificate",
]

T = TypeVar("T")

DEFAULT_GRAPH_URL = "https://graph.microsoft.com/v1.0"
DEFAULT_LOGIN_URL = "https://login.microsoftonline.com"
USER_IDS = ("id", "upn", "mail")
# Roles that let a person read the item. Every documented role does; one not documented
# here might not, and is not guessed at.
_READ_ROLES = frozenset({"read", "write", "owner", "sp.owner", "sp.member"})
_CLAIMS_PREFIX = "i:0#.f|membership|"  # a SharePoint login name that carries the UPN
_USER_SELECT = "id,accountEnabled,userPrincipalName,mail"
# SharePoint login names of Entra groups: a security group, a Microsoft 365 group's members.
_GROUP_CLAIMS = ("c:0t.c|tenant|", "c:0o.c|federateddirectoryclaimprovider|")
# SharePoint's claims for everyone in the organisation (with guests, and without).
_EVERYONE_CLAIMS = ("c:0(.s|true", "c:0-.f|rolemanager|spo-grid-all-users/")
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_ASSERTION_LIFETIME_S = 600
# The delta's sharing changes: Graph requires the first two with the third; with the fourth
# it reports the folder whose sharing changed, not every item that inherits from it.
_SHARING_DELTA = {
    "Prefer": "deltashowremovedasdeleted, deltatraversepermissiongaps, deltashowsharingchanges, "
    "hierarchicalsharing"
}
_SHARED_CHANGED = "@microsoft.graph.sharedChanged"
# The longest a driveItem subscription may last (Graph refuses longer), less a margin for
# the difference between this clock and Graph's.
_SUBSCRIPTION_LIFETIME = timedelta(minutes=42300) - timedelta(minutes=1)
_CLIENT_STATE_CHARS = 128  # the longest clientState Graph keeps
_MAX_HANDSHAKE_CHARS = 1024
_LIFECYCLE_EVENTS = frozenset({"missed", "reauthorizationRequired", "subscriptionRemoved"})


def _user_id(value: str) -> str:
    if value not in USER_IDS:
        raise Invalid(f"expected one of {', '.join(USER_IDS)}, got {value!r}")
    return value


def _needs_site_url(value: bool, info: ValidationInfo) -> bool:
    if value and info.data.get("site_url") is None:
        at = (info.context or {}).get("at", "options")
        raise Invalid(f"needs {at}.site_url (the site's URL)")
    return value


def _one_credential_file(value: str | None, info: ValidationInfo) -> str | None:
    if value is not None and info.data.get("certificate_file") is not None:
        raise Invalid("give it or certificate_file, not both")
    return value


@dataclass(frozen=True, slots=True)
class GraphOptions:
    """``[sources.<name>.options]`` of the ``graph`` kind, validated."""

    __pydantic_config__ = OPTIONS

    tenant_id: Text
    client_id: Text
    drive_id: Text
    graph_url: Url = DEFAULT_GRAPH_URL
    login_url: Url = DEFAULT_LOGIN_URL
    user_id: Annotated[str, AfterValidator(_user_id)] = "id"
    organization_principal: Principal | None = None
    site_groups: PrincipalTable | None = None
    sync_groups: Flag = True
    site_url: Url | None = None
    sync_site_groups: Annotated[Flag, AfterValidator(_needs_site_url)] = False
    certificate_file: FilePath | None = None
    federated_token_file: Annotated[FilePath | None, AfterValidator(_one_credential_file)] = None


@dataclass(frozen=True, slots=True)
class ClientCertificate:
    """An app registration's certificate credential: the private key (never printed) and
    the certificate's SHA-256 thumbprint, which tells Entra which certificate to check."""

    thumbprint: str
    key: RSAPrivateKey = field(repr=False)

    def assertion(self, client_id: str, audience: str, now: float) -> str:
        """A client assertion for the token endpoint ``audience`` (RFC 7523)."""
        claims = {
            "aud": audience,
            "iss": client_id,
            "sub": client_id,
            "jti": str(uuid.uuid4()),
            "nbf": int(now),
            "iat": int(now),
            "exp": int(now) + _ASSERTION_LIFETIME_S,
        }
        headers = {"typ": "JWT", "x5t#S256": self.thumbprint}
        return jwt.encode(claims, self.key, algorithm="PS256", headers=headers)


@dataclass(frozen=True, slots=True)
class FederatedTokenFile:
    """Workload identity federation: a token another issuer (a Kubernetes cluster, a CI
    system) writes to ``path`` and rotates; read afresh for every renewal."""

    path: Path
    key: str  # the setting that names it, for errors

    def read(self, source: str) -> str:
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            token = ""
        if not token:
            raise SourceError(f"source {source!r}: {self.key}: the federated token cannot be read")
        return token


#: How the app proves itself: a client secret, a certificate or a federated token.
Credential = Secret | ClientCertificate | FederatedTokenFile


class ClientCredentials(RenewingToken):
    """An app-only token from the Microsoft identity platform (client credentials), the app
    proving itself (``proof``) with its client secret, or with a client assertion: one it
    signs with its certificate, or a federated token."""

    def __init__(
        self,
        tokens: SourceClient,
        token_url: str,
        client_id: str,
        proof: Credential,
        scope: str,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(tokens, token_url, clock)
        self._client_id = client_id
        self._proof = proof
        self._scope = scope
        self._wall_clock = wall_clock

    def grant(self) -> dict[str, str]:
        form = {"grant_type": "client_credentials", "client_id": self._client_id}
        if isinstance(self._proof, Secret):
            form["client_secret"] = self._proof.reveal()
        else:
            if isinstance(self._proof, ClientCertificate):
                now = self._wall_clock()
                assertion = self._proof.assertion(self._client_id, self._token_url, now)
            else:
                assertion = self._proof.read(self._tokens.source)
            form["client_assertion_type"] = _ASSERTION_TYPE
            form["client_assertion"] = assertion
        form["scope"] = self._scope
        return form


#: The same credentials, by the name of the assertion it sends with a certificate or a
#: federated token.
AssertionCredentials = ClientCredentials


class _PerSync:
    """Answers computed at most once per key until :meth:`clear` (one lookup per user per
    sync), however many threads ask at once; a failure is kept like an answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[str, Future[Any]] = {}

    def clear(self) -> None:
        with self._lock:
            self._answers = {}

    def get(self, key: str, compute: Callable[[str], T]) -> T:
        with self._lock:
            answer = self._answers.get(key)
            mine = answer is None
            if answer is None:
                answer = self._answers[key] = Future()
        if mine:
            try:
                answer.set_result(compute(key))
            except Exception as exc:
                answer.set_exception(exc)
        result: T = answer.result()
        return result


class GraphConnector(RestConnector):
    """See the module docstring. Built by the ``graph`` kind, or by :func:`graph_connector`."""

    def __init__(
        self,
        source: str,
        options: GraphOptions,
        client: SourceClient,
        *,
        token_client: SourceClient | None = None,
        sharepoint: SourceClient | None = None,
        notification_secret: Secret | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.source = source
        self.options = options
        self.client = client
        self.sharepoint = sharepoint
        self._notification_secret = notification_secret
        self._now = now
        self._owned = tuple(c for c in (sharepoint, token_client) if c is not None)
        self._base = options.graph_url.rstrip("/")
        self._drive = f"{self._base}/drives/{quote(options.drive_id, safe='')}"
        self._site = (options.site_url or "").rstrip("/")
        self._users = _PerSync()
        self._groups_lock = threading.Lock()
        self._entra_groups: set[str] = set()
        self._site_groups: set[str] = set()

    # ------------------------------------------------------------------ plumbing

    def _ours(self, link: str) -> bool:
        """Whether ``link`` points into the configured Graph API: only such links are
        followed with the token."""
        return inside(link, self._base)

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        return self._next_link(body, "@odata.nextLink", self._ours, "graph_url")

    def _site_next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        return self._next_link(
            body, "odata.nextLink", lambda link: inside(link, self._site), "site_url"
        )

    def _all(self, url: str, what: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        return self._every(url, "value", what, params)

    def doc_id(self, item_id: str) -> str:
        return f"graph:{self.options.drive_id}/{item_id}"

    # ------------------------------------------------------------------ content

    def _delta(
        self, cursor: str | None, headers: Mapping[str, str] | None = None
    ) -> Iterator[tuple[list[dict[str, Any]], str, bool]]:
        """``(items, cursor, last)`` per delta page, each asked with ``headers``; the last
        page's cursor is the ``@odata.deltaLink``, every other page's the link that resumes
        after it."""
        url = cursor or f"{self._drive}/root/delta"
        for body in self.client.pages(url, self._next, headers=headers):
            items = self._listed(body, "value", "delta")
            following = self._next(body)  # checked before its page's cursor is stored
            if following is not None:
                yield items, following[0], False
                continue
            yield items, self._delta_end(body), True

    def _delta_end(self, body: Any) -> str:
        """The ``@odata.deltaLink`` of a delta feed's last page, checked like a next link."""
        delta = body.get("@odata.deltaLink")
        if not isinstance(delta, str) or not self._ours(delta):
            raise self._error("the delta feed ended without a usable @odata.deltaLink")
        return delta

    def _version(self, raw: Mapping[str, Any]) -> str:
        """Content hash, modification time, size, name and link: every content-side change
        moves it; a sharing change does not."""
        hashes = facet(facet(raw, "file"), "hashes")
        parts = [hashes.get(k, "") for k in ("quickXorHash", "sha256Hash", "sha1Hash", "crc32Hash")]
        parts += [raw.get(k, "") for k in ("lastModifiedDateTime", "size", "name", "webUrl")]
        return rest.version("graph", parts)

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
        self._users.clear()
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
        media_type = rest.media_type(text(facet(raw, "file").get("mimeType")), name)
        access = self._access(item.ref)
        if access is None:
            raise self._error(f"{item.doc_id} is gone")
        data = rest.content(media_type, lambda: self._download(raw, item.doc_id))
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
            return {self._entra_group(str(group["id"]))}
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

    def _entra_group(self, group_id: str) -> str:
        """``group:<object id>``, remembered so that :meth:`groups` syncs its members."""
        found = principal(f"group:{group_id}")
        with self._groups_lock:
            self._entra_groups.add(group_id)
        return found

    def _site_group(self, site_group: Mapping[str, Any]) -> str:
        """What ``site_groups`` maps a SharePoint group to; else, with ``sync_site_groups``,
        the group whose members :meth:`groups` reads from SharePoint."""
        table = self.options.site_groups or {}
        for key in (site_group.get("id"), site_group.get("displayName")):
            if isinstance(key, (str, int)) and str(key) in table:
                return table[str(key)]
        number = site_group.get("id")
        if self.options.sync_site_groups and isinstance(number, str) and number.isdigit():
            with self._groups_lock:
                self._site_groups.add(number)
            return principal(f"group:{self._site_group_id(number)}")
        raise Unrepresentable(
            f"SharePoint group {site_group.get('displayName') or site_group.get('id')!r} is not "
            "mapped to a principal (options.site_groups, or options.sync_site_groups)"
        )

    def _site_group_id(self, number: str) -> str:
        """The directory id of SharePoint group ``number`` of ``site_url``: unique across
        sites (a group's number is unique only within its site)."""
        parts = urlsplit(self._site)
        return f"sharepoint/{parts.hostname}{parts.path}/{number}"

    def _user_principal(self, user: Mapping[str, Any]) -> str | None:
        key = {"id": "id", "upn": "userPrincipalName", "mail": "mail"}[self.options.user_id]
        value = text(user.get(key))
        return None if value is None else principal(f"user:{value}")

    def _user(self, key: str) -> str | None:
        """``user:<id>`` for an Entra user (object id or UPN), by ``user_id``; ``None`` for a
        user that does not exist, is disabled or lacks that attribute (grants nobody). Asked
        of Entra once per user per sync; a failed lookup other than 404 raises."""
        answer = self._users.get(key, self._lookup)
        if isinstance(answer, Unrepresentable):
            raise Unrepresentable(str(answer))
        return answer

    def _lookup(self, key: str) -> str | Unrepresentable | None:
        try:
            raw = self.client.get_json(
                f"{self._base}/users/{quote(key, safe='@')}", params={"$select": _USER_SELECT}
            )
        except SourceError as exc:
            if exc.status != 404:
                raise
            return None  # deleted (Request_ResourceNotFound): grants nobody
        if not isinstance(raw, dict):
            return Unrepresentable(f"Entra answered user {key!r} with something unreadable")
        enabled = raw.get("accountEnabled")
        if enabled is False:
            return None  # disabled: nobody can sign in as this user
        if enabled is not True:
            return Unrepresentable(f"Entra did not say whether user {key!r} is enabled")
        try:
            return self._user_principal(raw)
        except Unrepresentable as exc:
            return exc

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
        """Every file's access, read afresh: users are looked up again, and the groups the
        permissions name are collected again for :meth:`groups`."""
        self._users.clear()
        with self._groups_lock:
            self._entra_groups, self._site_groups = set(), set()
        return self._accesses(self._files(), self._access)

    def groups(self) -> GroupSnapshot | None:
        """The groups the drive's permissions name, with their members: SharePoint groups
        (with ``sync_site_groups``), read from SharePoint, and Entra groups (with
        ``sync_groups``, also those that are members of a SharePoint group) with their
        transitive user members. Reads the permissions to learn which groups those are; the
        permission listing of the same sync then reuses what it read."""
        if not self.options.sync_groups and not self.options.sync_site_groups:
            return None
        self._snapshot = self._read_permissions()
        out: dict[str, frozenset[str]] = {}
        warnings: list[str] = []
        numbers = sorted(self._site_groups, key=int)
        for number, (members, problems) in zip(
            numbers, self.client.map(self._site_members, numbers), strict=True
        ):
            out[self._site_group_id(number)] = members
            warnings.extend(problems)
        if self.options.sync_groups:
            ids = sorted(self._entra_groups)
            out.update(zip(ids, self.client.map(self._members, ids), strict=True))
        return GroupSnapshot(out, warnings)

    def _members(self, group_id: str) -> frozenset[str]:
        url = f"{self._base}/groups/{quote(group_id, safe='')}/transitiveMembers"
        select = {"$select": _USER_SELECT}
        # a group that was deleted has no members
        objects: list[dict[str, Any]] = unless_gone(
            lambda: self._all(url, "transitiveMembers", select), []
        )
        out: set[str] = set()
        for member in objects:
            if member.get("@odata.type") != "#microsoft.graph.user":
                continue  # nested groups are flattened already; devices and apps read nothing
            enabled = member.get("accountEnabled")
            try:
                if enabled is True:
                    found = self._user_principal(member)
                elif enabled is False:
                    found = None  # disabled: grants nothing
                else:  # not shown with the group: asked of Entra itself
                    found = self._user(str(member.get("id")))
            except Unrepresentable:
                found = None
            if found is not None:
                out.add(found)
        return frozenset(out)

    def _site_members(self, number: str) -> tuple[frozenset[str], list[str]]:
        """The members of SharePoint group ``number`` (``/_api/web/sitegroups/GetById(n)/
        users``) as principals, and a warning for each member that cannot be resolved (it
        grants nothing). A group SharePoint no longer has has no members."""
        assert self.sharepoint is not None  # sync_site_groups requires it (parse_options)
        url = f"{self._site}/_api/web/sitegroups/GetById({number})/users"
        sharepoint, what = self.sharepoint, "SharePoint group members"
        users: list[dict[str, Any]] = unless_gone(
            lambda: self._every(url, "value", what, client=sharepoint, following=self._site_next),
            [],
        )
        out: set[str] = set()
        problems: list[str] = []
        for member in users:
            try:
                found = self._site_member(member)
            except Unrepresentable as exc:
                found, reason = None, str(exc)
            else:
                reason = "it cannot be mapped to a principal"
            if found is None:
                shown = member.get("Title") or member.get("LoginName") or member.get("Id")
                problems.append(
                    f"SharePoint group {number} of {self._site}: member {shown!r} grants "
                    f"nothing ({reason})"
                )
            elif found:
                out.add(found)
        return frozenset(out), problems

    def _site_member(self, member: Mapping[str, Any]) -> str | None:
        """The principal of one SharePoint group member: an Entra user (looked up like any
        user; ``""`` when deleted or disabled), an Entra group, or the organisation's
        everyone claims as ``organization_principal``; ``None`` when none of those."""
        login = text(member.get("LoginName")) or ""
        lowered = login.lower()
        if lowered.startswith(_CLAIMS_PREFIX):
            return self._user(login[len(_CLAIMS_PREFIX) :]) or ""
        for prefix in _GROUP_CLAIMS:
            if lowered.startswith(prefix):
                group_id = login[len(prefix) :]
                return self._entra_group(group_id) if "_" not in group_id else None
        if any(lowered.startswith(claim) for claim in _EVERYONE_CLAIMS):
            return self.options.organization_principal
        return None

    # ------------------------------------------------------------------ notifications

    def permissions_of(self, doc_ids: Sequence[str]) -> Iterator[PermissionChange]:
        """The current access of just these items, read and mapped as a full permission
        sync reads them (every user looked up in Entra afresh). An item that is gone, or
        belongs to another drive, is left out; one whose permissions cannot be read is
        visible to nobody; a source that cannot be read raises :class:`SourceError`."""
        prefix = self.doc_id("")
        item_ids = [d.removeprefix(prefix) for d in doc_ids if d.startswith(prefix)]
        item_ids = [i for i in item_ids if i and "/" not in i]
        self._users.clear()
        yield from self._accesses(item_ids, self._access)

    def notification(
        self, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice:
        """One request Graph sent to the notification endpoint, checked without calling
        Graph (safe from any thread).

        A ``validationToken`` is the handshake of a new subscription: echoed as text. Any
        other request must be a change notification collection whose every entry carries
        the ``notification_secret`` as ``clientState`` (else 401, changing nothing). Graph's
        ``subscriptionId`` cannot be checked here (the subscriptions this source made are
        kept by the scheduler, not by the connector that checks notifications): the
        ``clientState`` is what authenticates. A driveItem notification does not name the
        items that changed, nor whether content or sharing did, so an accepted one is
        unknown changes of both; so are the lifecycle events ``missed`` (changes were not
        delivered), ``reauthorizationRequired`` and ``subscriptionRemoved`` (changes may go
        undelivered from now on: the scheduler renews, or re-creates, the subscription at
        its renewal time, and the scheduled re-listing covers the gap meanwhile)."""
        handshake = query.get("validationToken")
        if handshake is not None:
            if not 0 < len(handshake) <= _MAX_HANDSHAKE_CHARS or not handshake.isprintable():
                return Notice.refuse(400, "the validation token is not valid")
            return Notice.reply(handshake)
        try:
            message = json.loads(body)
        except ValueError:
            return Notice.refuse(400, "the notification is not valid JSON")
        entries = message.get("value") if isinstance(message, dict) else None
        if not isinstance(entries, list) or not entries:
            return Notice.refuse(400, "the notification has no 'value' list")
        if not all(isinstance(e, dict) and self._authentic(e.get("clientState")) for e in entries):
            return Notice.refuse(401, "the notification is not authenticated")
        for entry in entries:
            if text(entry.get("subscriptionId")) is None:
                return Notice.refuse(400, "a notification names no subscription")
            event = entry.get("lifecycleEvent")
            if event is not None and event not in _LIFECYCLE_EVENTS:
                return Notice.refuse(400, "a notification's lifecycle event is not understood")
            if event is None and text(entry.get("changeType")) is None:
                return Notice.refuse(400, "a notification names no change type")
        return Notice.unknown_changes(content=True)

    def _authentic(self, presented: Any) -> bool:
        if self._notification_secret is None or not isinstance(presented, str) or not presented:
            return False
        expected = self._notification_secret.reveal().encode()
        return hmac.compare_digest(presented.encode(), expected)

    def _feed(self, url: str) -> tuple[list[dict[str, Any]], str]:
        """Every item of the delta with sharing changes from ``url``, and the feed's new end
        (``"<drive id> <deltaLink>"``)."""
        items: list[dict[str, Any]] = []
        end = ""
        for page, resume, _ in self._delta(url, _SHARING_DELTA):
            items += page
            end = resume  # the last page's is the deltaLink
        return items, f"{self.options.drive_id} {end}"

    def changed_since(self, cursor: str | None) -> tuple[frozenset[str], str]:
        """The files whose access may have changed since ``cursor``, and the feed's new end
        (``"<drive id> <deltaLink>"``, kept apart from the content cursor).

        ``None`` asks for the present end (``token=latest``). Otherwise the delta with
        sharing changes is followed from ``cursor``: every file it lists is named (shared,
        moved, edited or deleted alike), and so is every file beneath a folder it lists — a
        folder shared, unshared or moved changes what inherits from it, and Graph reports
        the folder alone (nor does it mark folders ``sharedChanged`` reliably). The drive's
        root is listed as the ancestor of any change, so its files are named only when it
        is marked ``sharedChanged`` or is all the feed lists. A cursor Graph no longer
        accepts, or one of another drive, raises :class:`SourceError` with ``status=410``."""
        if cursor is None:
            _, end = self._feed(f"{self._drive}/root/delta?token=latest")
            return frozenset(), end
        link = self._delta_link(cursor)
        if link is None:
            raise SourceError(
                f"source {self.source!r}: the change feed's position is not this drive's",
                status=410,
            )
        items, end = self._feed(link)
        files: set[str] = set()
        folders: set[str] = set()
        roots: list[dict[str, Any]] = []
        for raw in items:
            item_id = text(raw.get("id"))
            if item_id is None:
                raise self._error("delta: an item without an id")
            if "root" in raw:
                roots.append(raw)
            elif "folder" in raw or "package" in raw:
                folders.add(item_id)
            else:
                files.add(item_id)  # a file, or a deleted item of either kind
        for root in roots:
            if _shared_changed(root) or len(roots) == len(items):
                folders.add(str(root["id"]))
        files |= self._descendants(folders)
        return frozenset(self.doc_id(i) for i in files), end

    def _descendants(self, folders: set[str]) -> set[str]:
        """Every file beneath ``folders`` now (``/children``, level by level)."""
        files: set[str] = set()
        seen: set[str] = set()
        level = sorted(folders)
        while level:
            seen.update(level)
            found: set[str] = set()
            for children in self.client.map(self._children, level):
                for child in children:
                    child_id = text(child.get("id"))
                    if child_id is None:
                        raise self._error("children: an item without an id")
                    if "folder" in child or "package" in child:
                        found.add(child_id)
                    else:
                        files.add(child_id)
            level = sorted(found - seen)
        return files

    def _children(self, folder_id: str) -> list[dict[str, Any]]:
        url = f"{self._drive}/items/{quote(folder_id, safe='')}/children"
        select = {"$select": "id,file,folder,package"}
        # deleted meanwhile: its files are named as deleted themselves
        return unless_gone(lambda: self._all(url, "children", params=select), [])

    def subscribe(self, url: str, current: Subscription | None) -> Subscription:
        """A subscription on the drive's root sending to ``url``, lasting as long as Graph
        allows: ``current`` renewed in place, or a new one when there is none, Graph no
        longer has it (404), or it watches another drive (then deleted). Its ``clientState``
        is the ``notification_secret``, which the returned state never holds."""
        resource = f"/drives/{self.options.drive_id}/root"
        expires = self._now() + _SUBSCRIPTION_LIFETIME
        stamp = expires.astimezone(UTC).isoformat().replace("+00:00", "Z")
        if current is not None and current.state.get("resource") == resource:
            try:
                raw = self._send(
                    "PATCH", self._subscription_url(current.id), {"expirationDateTime": stamp}
                )
            except SourceError as exc:
                if exc.status != 404:
                    raise
            else:
                return self._subscription(raw, resource, expires)
        secret = self._client_state()
        body = {
            "changeType": "updated",
            "notificationUrl": url,
            "lifecycleNotificationUrl": url,
            "resource": resource,
            "expirationDateTime": stamp,
            "clientState": secret.reveal(),
        }
        made = self._subscription(
            self._send("POST", f"{self._base}/subscriptions", body), resource, expires
        )
        if current is not None and current.state.get("resource") != resource:
            self._unsubscribe(current.id)
        return made

    def _client_state(self) -> Secret:
        secret = self._notification_secret
        if secret is None:
            raise self._error("subscribing needs credentials.notification_secret")
        if not 0 < len(secret.reveal()) <= _CLIENT_STATE_CHARS:
            raise self._error(
                f"credentials.notification_secret must be 1 to {_CLIENT_STATE_CHARS} characters"
            )
        return secret

    def _subscription_url(self, subscription_id: str) -> str:
        return f"{self._base}/subscriptions/{quote(subscription_id, safe='')}"

    def _subscription(self, raw: Any, resource: str, asked: datetime) -> Subscription:
        if not isinstance(raw, dict) or text(raw.get("id")) is None:
            raise self._error("Graph answered a subscription request without a subscription id")
        expires = timestamp(raw.get("expirationDateTime")) or asked
        return Subscription(str(raw["id"]), expires, {"resource": resource})

    def _unsubscribe(self, subscription_id: str) -> None:
        """Stop a subscription replaced by a new one; one Graph will not delete now ends at
        its expiration (its notifications only cost a read of the change feed)."""
        with contextlib.suppress(SourceError):
            self.client.request("DELETE", self._subscription_url(subscription_id))


def _shared_changed(raw: Mapping[str, Any]) -> bool:
    value = raw.get(_SHARED_CHANGED)
    return value is True or (isinstance(value, str) and value.lower() == "true")


# ---------------------------------------------------------------------- building


def parse_options(name: str, raw: Mapping[str, Any]) -> GraphOptions:
    """Validate ``[sources.<name>.options]`` of a ``graph`` source."""
    return parse_table(GraphOptions, raw, f"sources.{name}.options")


def parse_certificate(pem: bytes, key: str) -> ClientCertificate:
    """The certificate credential in ``pem`` (an unencrypted RSA private key and its
    certificate, in either order); a :class:`ConfigError` naming ``key`` (never quoting the
    value) when it is not one."""
    try:
        private = load_pem_private_key(pem, password=None)
        certificates = x509.load_pem_x509_certificates(pem)
    except (ValueError, TypeError):
        raise ConfigError(
            f"{key}: expected a PEM with an unencrypted RSA private key and its certificate"
        ) from None
    if not isinstance(private, RSAPrivateKey):
        raise ConfigError(f"{key}: the private key is not an RSA key")
    numbers = private.public_key().public_numbers()
    mine = [
        c
        for c in certificates
        if isinstance(public := c.public_key(), RSAPublicKey) and public.public_numbers() == numbers
    ]
    if not mine:
        raise ConfigError(f"{key}: no certificate in it belongs to its private key")
    digest = hashlib.sha256(mine[0].public_bytes(Encoding.DER)).digest()
    thumbprint = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return ClientCertificate(thumbprint, private)


def graph_connector(
    name: str,
    options: GraphOptions,
    credential: Credential,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
    notification_secret: Secret | None = None,
) -> GraphConnector:
    """A connector for ``options``, authenticating with ``credential`` (a client secret, a
    certificate or a federated token file; ``sleep``: injectable for tests of throttling),
    and checking notifications and subscribing with ``notification_secret``."""
    token_url = f"{options.login_url}/{quote(options.tenant_id, safe='')}/oauth2/v2.0/token"
    tokens = SourceClient(source=name, max_concurrency=1, sleep=sleep)

    def token_for(resource: str) -> RenewingToken:
        parts = urlsplit(resource)
        scope = f"{parts.scheme}://{parts.netloc}/.default"
        return ClientCredentials(tokens, token_url, options.client_id, credential, scope)

    auth = token_for(options.graph_url)
    client = SourceClient(source=name, auth=auth, max_concurrency=max_concurrency, sleep=sleep)
    sharepoint = None
    if options.sync_site_groups and options.site_url is not None:
        sharepoint = SourceClient(
            source=name,
            auth=token_for(options.site_url),
            headers={"Accept": "application/json;odata=nometadata"},
            max_concurrency=max_concurrency,
            sleep=sleep,
        )
    return GraphConnector(
        name,
        options,
        client,
        token_client=tokens,
        sharepoint=sharepoint,
        notification_secret=notification_secret,
    )


def read_credential(
    key: str,
    credentials: Mapping[str, str],
    secret: Callable[[str], Secret],
    certificate_file: str | None,
    federated_token_file: str | None,
    *,
    refusing_secrets: str | None = None,
) -> Credential:
    """The one credential the table at ``key`` configures (``[sources.<name>]`` of the
    ``graph`` kind, ``[directories.<name>]`` of the ``entra`` kind): a client secret or a
    certificate among ``credentials`` (read through ``secret``), or one of the two files. A
    :class:`ConfigError` naming the keys when it configures none or several, and, when the
    one is a client secret, the error ``refusing_secrets`` says why none will do."""
    given = [f"credentials.{r}" for r in ("client_secret", "certificate") if r in credentials]
    files = {"certificate_file": certificate_file, "federated_token_file": federated_token_file}
    given += [f"options.{name}" for name, path in files.items() if path is not None]
    if len(given) != 1:
        raise ConfigError(
            f"{key}: give exactly one of credentials.client_secret, credentials.certificate, "
            f"options.certificate_file and options.federated_token_file"
            + (f" (got {', '.join(given)})" if given else "")
        )
    (chosen,) = given
    if chosen == "credentials.client_secret" and refusing_secrets is not None:
        raise ConfigError(refusing_secrets)
    if chosen == "credentials.client_secret":
        return secret("client_secret")
    if chosen == "credentials.certificate":
        return parse_certificate(secret("certificate").reveal().encode(), f"{key}.{chosen}")
    path = Path(str(files[chosen.removeprefix("options.")]))
    if chosen == "options.federated_token_file":
        return FederatedTokenFile(path, f"{key}.{chosen}")
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{key}.{chosen}: cannot read it ({exc.strerror or type(exc).__name__})"
        ) from None
    return parse_certificate(pem, f"{key}.{chosen}")


def _build(context: SourceContext) -> Connector:
    source = context.source
    options = parse_options(source.name, source.options)
    key = f"sources.{source.name}"
    refusing_secrets = (
        f"{key}.options.sync_site_groups: SharePoint refuses app-only tokens obtained with "
        "a client secret; use a certificate or a federated token"
    )
    credential = read_credential(
        key,
        source.credentials,
        context.secret,
        options.certificate_file,
        options.federated_token_file,
        refusing_secrets=refusing_secrets if options.sync_site_groups else None,
    )
    return graph_connector(
        source.name,
        options,
        credential,
        max_concurrency=source.max_concurrency,
        notification_secret=context.secret_if_given("notification_secret"),
    )


register_connector("graph", _build)
