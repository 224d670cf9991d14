"""The Google Drive connector: one shared drive, or one user's My Drive, kept in step through
the Drive v3 API.

Content comes from the drive's changes feed. The first sync takes a start page token
(``changes.getStartPageToken``) and then lists every file (``files.list``, a snapshot: what
it does not list is deleted); later ones follow the stored token through ``changes.list``
(``nextPageToken`` per page, ``newStartPageToken`` at the end) and see only what changed. A
change that is ``removed``, a file that is ``trashed`` or has left the synced drive is a
tombstone; so is every descendant of a folder trashed or removed (Drive trashes them with it
without a change of their own): they are listed through ``files.list`` (``'<folder>' in
parents``, trashed included) and tombstoned with it. A change of a live folder lists what is
below it again (not trashed): a folder restored from the trash brings its descendants back
the same silent way, and what is listed unchanged keeps its version, so it is not fetched
again. A page token the service rejects (400,
404 or 410) is discarded, as the API asks, and the drive is listed again as a snapshot.
Folders and shortcuts shape nothing but inheritance; Google Docs, Sheets and Slides are
exported to docx, xlsx and pptx, other files downloaded (``alt=media``). A file's version is
its checksum, modification time, size, name and type — not its ``version`` number, which
every sharing change moves — so a permission change never re-reads content. A Google Doc
Drive refuses to export for good (``exportSizeLimitExceeded``) is :class:`ItemUnavailable`:
reported for that document, and the sync goes on past it.

Permissions are re-read in full by every permission sync: the changes feed does not say
when a file's *inherited* access changed (a folder shared, a file moved into a restricted
folder), so each file's ``permissions.list`` — which lists inherited entries too — is read
again, on up to ``max_concurrency`` requests at once. Each permission maps as follows:

* ``user`` → ``user:<email>``, or what ``users`` maps the address to (an owner, a pending
  owner, a writer, commenter or reader alike);
* ``group`` → ``group:<email>``; its members (users, and nested groups as members, followed
  down) are read from the Admin SDK Directory API by :meth:`DriveConnector.groups`. A group
  of another organisation, whose members the API refuses to list (403 ``forbidden`` or
  ``domainCannotUseApis``, for an address outside the organisation's domains, while the
  API answers for other groups), is left out of the directory — it matches nobody — and
  named in :attr:`DriveConnector.warnings`; any other refusal fails the sync;
* ``domain`` → what ``domains`` maps the domain to, else nobody;
* ``anyone`` → ``Access.anyone_with_link`` whether or not it is discoverable
  (``allowFileDiscovery``): visible to nobody in a corpus above PUBLIC;
* a permission of a deleted account, one that has expired, or one of the ``metadata`` view
  (the folder's name, not its content) grants nothing;
* anything else — an unknown type or role, a permission without its address, a permission
  list the service refuses to show (403) — makes the file visible to nobody, and
  ``source status`` says why.

Limited access: an item with ``inheritedPermissionsDisabled`` (or a folder above it that has
it) is read only by the entries Drive says apply there — each permission's
``permissionDetails`` rows: a row not ``inherited``, or inherited from a folder at or below
the nearest limited one. Drive may still list the entries it no longer applies; they grant
nothing. A permission whose rows cannot say (no ``permissionDetails`` on such an item) makes
the file visible to nobody; an item whose ``inheritedPermissionsDisabled`` is missing is
taken to be limited. The folders above an item are read with ``files.get`` when the listing
did not name them; a folder above that Drive refuses to show (403: a rate limit past the
retries, an app not authorised) or, in a shared drive, no longer finds (404) leaves its limit
unknown, and the item is visible to nobody until a sync reads it. In a My Drive, Drive
answers 404 for a folder the user cannot see (a colleague's folder above hers) — her view
ends there, as at the top of her own My Drive — and the walk stops: the entries Drive lists on
the item apply unless a folder she can see limits them (``inheritedFrom`` is given for
shared-drive items only, so an entry's origin above that folder cannot be told). What is read
of the tree, and the drive's restrictions, is kept for one read only: each permission read
(the full listing and ``permissions_of``) reads them afresh.

Shared-drive restrictions (``drives.get``, ``restrictions``; read once per permission read,
and again after a ``drive`` change in the feed). Drive keeps listing the entries a
restriction turned on later overrides. With ``driveMembersOnly`` only a permission with a
``permissionDetails`` row of ``permissionType`` ``member`` (its grantee is a member of the
drive) grants; one without rows makes the file visible to nobody. With ``domainUsersOnly``
only users, groups and domains of the organisation's domains (``subject``'s and
``org_domains``) grant, an ``anyone`` link grants nothing, and a group's members outside
those domains are left out of it. A flag ``drives.get`` leaves out counts as set.

Change notifications: ``subscribe`` opens a ``changes.watch`` channel on the synced drive to
the source's ``notification_url`` (a new UUID each time, for ``channel_hours``, a week at
most — Drive renews no channel in place, so the one it replaces is stopped with
``channels.stop``); its token is the ``credentials.notification_secret``, which never enters
the subscription's state. ``notification`` takes a channel message only with that token
(compared in constant time; 401 otherwise, 400 for a malformed message) and reads nothing
from Drive: ``sync`` changes nothing, any other state says the drive changed. The change feed
(``changed_since``) then names every file ``changes.list`` lists since the stored position —
removed ones, and everything below a folder it lists, whose sharing reaches its descendants
without a change of their own; a position Drive no longer accepts, and a change of the shared
drive itself (members, restrictions), is a 410, and a full permission sync runs instead.
``permissions_of`` reads those files as the permission listing does, their folders re-read.

Credentials: a service account with domain-wide delegation. Either its key (the JSON Google
issues), read from the environment variable named by ``credentials.service_account``, signs
a JWT (RS256) for ``token_url`` on behalf of ``subject``; or, keyless, the IAM Credentials
API signs it (``projects/-/serviceAccounts/<impersonate>:signJwt``) for a token of the
runtime's own account from the metadata server. Keys, signed JWTs and tokens are never
printed, logged or traced; the delegated token is sent only to ``drive_url`` and
``directory_url``, the runtime's token only to ``iam_url``. With ``my_drive``, Drive is read
as that user and the Directory API as ``subject``.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import AfterValidator, PlainValidator

from clearance.errors import ConfigError, ItemUnavailable, SourceError
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
from clearance.sources.options import OPTIONS, Email, Flag, PrincipalTable, Text, Url
from clearance.sources.options import parse as parse_table
from clearance.sources.registry import register_connector
from clearance.sources.rest import (
    RenewingToken,
    RestConnector,
    Unrepresentable,
    access_from,
    page_token,
    principal,
    text,
    timestamp,
)
from clearance.validation import Invalid

__all__ = [
    "DriveConnector",
    "DriveOptions",
    "GoogleErrors",
    "ItemUnavailable",
    "ServiceAccount",
    "drive_connector",
    "parse_options",
    "parse_service_account",
]

DEFAULT_DRIVE_URL = "https://www.googleapis.com/drive/v3"
DEFAULT_DIRECTORY_URL = "https://admin.googleapis.com/admin/directory/v1"
DEFAULT_TOKEN_URL = "https://oauth2.googleapis.com/token"
DEFAULT_IAM_URL = "https://iamcredentials.googleapis.com/v1"
DEFAULT_METADATA_URL = "http://metadata.google.internal/computeMetadata/v1"
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
GROUPS_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.member.readonly"
# Every documented role can read the file; one not documented here is not guessed at.
_READ_ROLES = frozenset({"owner", "organizer", "fileOrganizer", "writer", "commenter", "reader"})
_FOLDER = "application/vnd.google-apps.folder"
_SHORTCUT = "application/vnd.google-apps.shortcut"
_EXPORTS = {
    "application/vnd.google-apps.document": (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    ),
    "application/vnd.google-apps.spreadsheet": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    ),
    "application/vnd.google-apps.presentation": (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    ),
}
_TREE_FIELDS = "id,mimeType,trashed,driveId,ownedByMe,parents,inheritedPermissionsDisabled"
_FILE_FIELDS = f"{_TREE_FIELDS},name,md5Checksum,modifiedTime,createdTime,size,webViewLink"
_PERMISSION_FIELDS = (
    "nextPageToken,permissions(id,type,role,emailAddress,domain,allowFileDiscovery,deleted,"
    "expirationTime,pendingOwner,view,inheritedPermissionsDisabled,"
    "permissionDetails(permissionType,role,inherited,inheritedFrom))"
)
_REJECTED_TOKEN = frozenset({400, 404, 410})  # a page token the feed no longer accepts
_THROTTLED = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
# Drive's answers for an export it will never give: the document must change first.
_NEVER_EXPORTED = {"exportSizeLimitExceeded": "it is over Drive's export size limit (10 MB)"}
# The Directory API's answers for a group it will not show this organisation.
_NOT_OURS = frozenset({"forbidden", "domainCannotUseApis"})
_JWT_LIFETIME_S = 3600
_JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_MAX_DEPTH = 100  # folders above an item followed at most (Drive allows far fewer)
#: The longest a changes channel may live (Drive's limit for the changes resource: a week).
MAX_CHANNEL_HOURS = 7 * 24
_MAX_CHANNEL_TOKEN = 256  # characters Drive carries in a channel's token
_TOKEN_HEADER = "x-goog-channel-token"
_STATE_HEADER = "x-goog-resource-state"
_CHANNEL_HEADER = "x-goog-channel-id"
_MESSAGE_HEADER = "x-goog-message-number"
_STATE_WORD = frozenset("abcdefghijklmnopqrstuvwxyz_")

log = logging.getLogger("clearance.sources")


def _user_to_act_as(value: object) -> str:
    if not isinstance(value, str) or "@" not in value:
        raise Invalid("expected the email address of a user to act as")
    return value


def _lower_keys(table: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in table.items()}


def _domains(value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(
        isinstance(d, str) and d and "@" not in d for d in value
    ):
        raise Invalid("expected a list of domain names")
    return frozenset(d.lower() for d in value)


def _channel_hours(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CHANNEL_HOURS:
        raise Invalid(
            f"expected a whole number of hours from 1 to {MAX_CHANNEL_HOURS} "
            "(the longest Drive keeps a changes channel)"
        )
    return value


@dataclass(frozen=True, slots=True)
class DriveOptions:
    """``[sources.<name>.options]`` of the ``gdrive`` kind, validated. Exactly one of
    ``drive_id`` (a shared drive) and ``my_drive`` (a user's My Drive) is set."""

    __pydantic_config__ = OPTIONS

    drive_id: Text | None
    subject: Annotated[str, PlainValidator(_user_to_act_as)]
    my_drive: Email | None = None
    drive_url: Url = DEFAULT_DRIVE_URL
    directory_url: Url = DEFAULT_DIRECTORY_URL
    token_url: Url = DEFAULT_TOKEN_URL
    users: Annotated[PrincipalTable, AfterValidator(_lower_keys)] = field(default_factory=dict)
    domains: Annotated[PrincipalTable, AfterValidator(_lower_keys)] = field(default_factory=dict)
    org_domains: Annotated[frozenset[str], PlainValidator(_domains)] = frozenset()
    sync_groups: Flag = True
    impersonate: Email | None = None
    iam_url: Url = DEFAULT_IAM_URL
    metadata_url: Url = DEFAULT_METADATA_URL
    channel_hours: Annotated[int, PlainValidator(_channel_hours)] = MAX_CHANNEL_HOURS

    @property
    def space(self) -> str:
        """What doc ids and cursors are scoped by: the drive, or the My Drive's user."""
        return self.drive_id if self.drive_id is not None else f"users/{self.my_drive}"

    @property
    def drive_subject(self) -> str:
        """Who Drive is read as."""
        return self.my_drive or self.subject

    @property
    def organisation(self) -> frozenset[str]:
        """The organisation's own domains: the subject's, and ``org_domains``."""
        return self.org_domains | {self.subject.rpartition("@")[2].lower()}


@dataclass(frozen=True, slots=True)
class ServiceAccount:
    """The parts of a service-account key the connector uses. ``key`` never prints."""

    client_email: str
    key_id: str | None
    key: RSAPrivateKey = field(repr=False)

    def sign(self, claims: Mapping[str, Any]) -> str:
        headers = {"kid": self.key_id} if self.key_id else None
        return jwt.encode(dict(claims), self.key, algorithm="RS256", headers=headers)


class MetadataToken(RenewingToken):
    """The runtime's own token, from the metadata server (``Metadata-Flavor: Google``)."""

    def _request(self) -> tuple[Secret, float]:
        response = self._tokens.request(
            "GET", self._token_url, headers={"Metadata-Flavor": "Google"}
        )
        token, lifetime, _ = self._answer(response, "the metadata server", "an access token")
        return token, lifetime


@dataclass(frozen=True, slots=True)
class IamSigner:
    """Signs JWTs as ``account`` through the IAM Credentials API (``signJwt``), keyless:
    ``client`` carries the runtime's own token."""

    client: SourceClient
    iam_url: str
    account: str

    def sign(self, claims: Mapping[str, Any]) -> str:
        name = quote(f"projects/-/serviceAccounts/{self.account}", safe="/@-")
        response = self.client.request(
            "POST", f"{self.iam_url}/{name}:signJwt", json={"payload": json.dumps(dict(claims))}
        )
        try:
            signed = response.json()["signedJwt"]
            if not isinstance(signed, str) or not signed:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise SourceError(
                f"source {self.client.source!r}: signJwt answered without a signed JWT"
            ) from None
        return signed


class DelegatedToken(RenewingToken):
    """A token for ``subject``, obtained with a JWT signed as ``issuer`` (RS256) by ``sign``:
    the service account's key, or :class:`IamSigner`."""

    def __init__(
        self,
        tokens: SourceClient,
        token_url: str,
        issuer: str,
        sign: Callable[[Mapping[str, Any]], str],
        subject: str,
        scopes: Sequence[str],
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(tokens, token_url)
        self._issuer = issuer
        self._sign = sign
        self._subject = subject
        self._scopes = " ".join(scopes)
        self._wall_clock = wall_clock

    def grant(self) -> dict[str, str]:
        now = int(self._wall_clock())
        claims = {
            "iss": self._issuer,
            "sub": self._subject,
            "scope": self._scopes,
            "aud": self._token_url,
            "iat": now,
            "exp": now + _JWT_LIFETIME_S,
        }
        return {"grant_type": _JWT_GRANT, "assertion": self._sign(claims)}


class RoutedAuth(httpx.Auth):
    """``directory`` for requests to ``directory_url``, ``drive`` for every other."""

    def __init__(self, drive: httpx.Auth, directory: httpx.Auth, directory_url: str) -> None:
        self._drive = drive
        self._directory = directory
        self._directory_url = directory_url.rstrip("/") + "/"

    def __repr__(self) -> str:
        return f"RoutedAuth({self._drive!r}, {self._directory!r})"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        routed = str(request.url).startswith(self._directory_url)
        yield from (self._directory if routed else self._drive).auth_flow(request)


def _reasons(response: httpx.Response) -> frozenset[str]:
    """The ``reason`` of each error in Google's error body (none when it has no such body)."""
    try:
        errors = response.json()["error"]["errors"]
        return frozenset(str(e["reason"]) for e in errors if isinstance(e, dict) and "reason" in e)
    except (ValueError, KeyError, TypeError, AttributeError):
        return frozenset()


def throttled(response: httpx.Response) -> bool:
    """Whether a 403 is Google's rate limit (retried) rather than a refusal."""
    return response.status_code == 403 and bool(_reasons(response) & _THROTTLED)


class GoogleErrors:
    """The client's ``retryable``: Google's 403 rate limits are retried (:func:`throttled`).
    Every other refusal's status and reasons are kept for the thread that received it, so
    the connector can tell one item's lasting refusal from refused credentials:
    :meth:`clear` before a request, :meth:`refusal` after it failed."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self, response: httpx.Response) -> bool:
        if throttled(response):
            return True
        self._local.last = (response.status_code, _reasons(response))
        return False

    def clear(self) -> None:
        self._local.last = None

    def refusal(self, exc: SourceError) -> frozenset[str]:
        """The reasons Google gave for the refusal ``exc`` reports (none when ``exc`` is not
        the refusal last seen on this thread: retries exhausted, a transport error)."""
        last = getattr(self._local, "last", None)
        if last is None or exc.status != last[0]:
            return frozenset()
        return frozenset(last[1])


@dataclass(frozen=True, slots=True)
class _Node:
    """What the connector keeps of an item to follow inheritance: its parent and whether it
    has inherited permissions disabled (``None``: Drive did not say)."""

    parent: str | None
    limited: bool | None


@dataclass(frozen=True, slots=True)
class _Restrictions:
    """The shared drive's own settings that narrow who reads its items (``drives.get``,
    ``restrictions``); a flag Drive left out counts as set."""

    members_only: bool  # driveMembersOnly
    domain_only: bool  # domainUsersOnly


_UNRESTRICTED = _Restrictions(members_only=False, domain_only=False)


class DriveConnector(RestConnector):
    """See the module docstring. Built by the ``gdrive`` kind, or by :func:`drive_connector`."""

    def __init__(
        self,
        source: str,
        options: DriveOptions,
        client: SourceClient,
        *,
        token_clients: Sequence[SourceClient] = (),
        errors: GoogleErrors | None = None,
        notification_secret: Secret | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.source = source
        self.options = options
        self.client = client
        self._owned = tuple(token_clients)
        self._errors = errors or GoogleErrors()
        self._notification_secret = notification_secret
        self._wall_clock = wall_clock
        self._files = f"{options.drive_url}/files"
        self._scope = f"{options.space}/{options.drive_subject}"
        self._google_groups: set[str] = set()
        self._groups_lock = threading.Lock()
        self._nodes: dict[str, _Node] = {}
        self._nodes_lock = threading.Lock()
        self._restricted: _Restrictions | None = None  # read once per run (drives.get)
        self._restricted_lock = threading.Lock()
        #: What the last :meth:`groups` could not read, one line per group.
        self.warnings: list[str] = []

    # ------------------------------------------------------------------ plumbing

    def _drive_params(self) -> dict[str, str]:
        if self.options.drive_id is None:
            return {"supportsAllDrives": "true", "includeItemsFromAllDrives": "false"}
        return {
            "driveId": self.options.drive_id,
            "supportsAllDrives": "true",
            "includeItemsFromAllDrives": "true",
        }

    def _corpus(self) -> dict[str, str]:
        return {"corpora": "drive" if self.options.drive_id is not None else "user"}

    def _paged(self, url: str, key: str, params: Mapping[str, str], **kw: bool) -> Iterator[Any]:
        """The ``key`` lists of every page of ``url``, following ``nextPageToken``."""
        for body in self.client.pages(url, page_token(url, params), params=params):
            yield self._listed(body, key, url.rpartition("/")[2], **kw)

    def _files_where(self, query: str, fields: str) -> Iterator[list[dict[str, Any]]]:
        """The files of the synced drive that ``query`` selects, page by page."""
        params = {
            **self._drive_params(),
            **self._corpus(),
            "q": query,
            "pageSize": "1000",
            "fields": f"nextPageToken,files({fields})",
        }
        return self._paged(self._files, "files", params)

    def doc_id(self, file_id: str) -> str:
        return f"gdrive:{self.options.space}/{file_id}"

    def _remember(self, raw: Mapping[str, Any]) -> None:
        """Keep an item's parent and limited-access flag, for inheritance."""
        file_id = text(raw.get("id"))
        if file_id is None:
            return
        parents = raw.get("parents")
        parent = text(parents[0]) if isinstance(parents, list) and parents else None
        limited = raw.get("inheritedPermissionsDisabled")
        with self._nodes_lock:
            self._nodes[file_id] = _Node(parent, limited if isinstance(limited, bool) else None)

    # ------------------------------------------------------------------ content

    def _version(self, raw: Mapping[str, Any]) -> str:
        """Checksum, modification time, size, name and type: every content-side change
        moves it; a sharing change does not."""
        keys = ("md5Checksum", "modifiedTime", "size", "name", "mimeType")
        return rest.version("gdrive", (raw.get(k, "") for k in keys))

    def _in_scope(self, raw: Mapping[str, Any]) -> bool:
        """In the shared drive; or, for a My Drive, owned by its user and in no shared drive."""
        if self.options.drive_id is not None:
            return raw.get("driveId") == self.options.drive_id
        return raw.get("ownedByMe") is True and not raw.get("driveId")

    def _entry(self, raw: Mapping[str, Any]) -> ItemRef | Tombstone | None:
        """A listed file as an item, a tombstone (trashed, or out of the synced drive), or
        ``None`` for what is not a document (folders, shortcuts)."""
        file_id = text(raw.get("id"))
        if file_id is None:
            raise self._error("an item without an id")
        self._remember(raw)
        if raw.get("trashed") is True or not self._in_scope(raw):
            return Tombstone(self.doc_id(file_id))
        if raw.get("mimeType") in (_FOLDER, _SHORTCUT):
            return None
        return ItemRef(self.doc_id(file_id), self._version(raw), file_id)

    def _change(self, change: Mapping[str, Any]) -> ItemRef | Tombstone | None:
        if change.get("changeType", "file") != "file":
            with self._restricted_lock:  # the shared drive itself (renamed, restricted):
                self._restricted = None  # no document, but its restrictions are read again
            return None
        file_id = text(change.get("fileId"))
        if file_id is None:
            raise self._error("changes: a change without a fileId")
        raw = change.get("file")
        if change.get("removed") is True or not isinstance(raw, dict):
            return Tombstone(self.doc_id(file_id))
        return self._entry(raw)

    def _fallen(self, change: Mapping[str, Any]) -> list[Tombstone]:
        """Tombstones for what a folder trashed or removed took with it: its descendants,
        which Drive trashes without a change of their own. A removed item may have been a
        folder (the change no longer says), so its children are looked for too."""
        file_id = text(change.get("fileId"))
        raw = change.get("file")
        if file_id is None or change.get("changeType", "file") != "file":
            return []
        if isinstance(raw, dict) and change.get("removed") is not True:
            gone = raw.get("trashed") is True or not self._in_scope(raw)
            if not gone or raw.get("mimeType") != _FOLDER:
                return []
        return [Tombstone(self.doc_id(d)) for d in self._descendants(file_id)]

    def _risen(self, change: Mapping[str, Any]) -> list[ItemRef | Tombstone]:
        """What a change of a live folder brings back with it: everything below it that is
        not trashed, listed anew (``files.list``, ``'<folder>' in parents``, folder by
        folder). Drive restores a folder's descendants from the trash with it, as it trashed
        them, without a change of their own (and a folder moved into the synced drive brings
        its contents the same way), so whatever :meth:`_fallen` took is listed again. A
        document listed unchanged is not fetched again: its version is the same."""
        raw = change.get("file")
        if change.get("changeType", "file") != "file" or change.get("removed") is True:
            return []
        if not isinstance(raw, dict) or raw.get("mimeType") != _FOLDER:
            return []
        folder = text(change.get("fileId"))
        if folder is None or raw.get("trashed") is True or not self._in_scope(raw):
            return []
        found: list[ItemRef | Tombstone] = []
        pending, seen = [folder], {folder}
        while pending:
            parent = pending.pop()
            quoted = parent.replace("\\", "\\\\").replace("'", "\\'")
            for page in self._files_where(
                f"'{quoted}' in parents and trashed = false", _FILE_FIELDS
            ):
                for child in page:
                    child_id = text(child.get("id"))
                    if child_id is None or child_id in seen:
                        continue
                    seen.add(child_id)
                    entry = self._entry(child)
                    found += [] if entry is None else [entry]
                    if child.get("mimeType") == _FOLDER:
                        pending.append(child_id)
        return found

    def _descendants(self, folder: str) -> list[str]:
        """Every item below ``folder``, trashed ones included."""
        found: list[str] = []
        pending, seen = [folder], {folder}
        while pending:
            parent = pending.pop()
            quoted = parent.replace("\\", "\\\\").replace("'", "\\'")
            for page in self._files_where(f"'{quoted}' in parents", "id,mimeType"):
                for raw in page:
                    child = text(raw.get("id"))
                    if child is None or child in seen:
                        continue
                    seen.add(child)
                    found.append(child)
                    if raw.get("mimeType") == _FOLDER:
                        pending.append(child)
        return found

    def _start_token(self) -> str:
        params = {"supportsAllDrives": "true"}
        if self.options.drive_id is not None:
            params["driveId"] = self.options.drive_id
        body = self.client.get_json(
            f"{self.options.drive_url}/changes/startPageToken", params=params
        )
        token = text(body.get("startPageToken")) if isinstance(body, dict) else None
        if token is None:
            raise self._error("changes.getStartPageToken answered without a token")
        return token

    def _all_files(self, fields: str) -> Iterator[list[dict[str, Any]]]:
        query = "trashed = false" if self.options.drive_id else "'me' in owners and trashed = false"
        yield from self._files_where(query, fields)

    def _snapshot_listing(self) -> Iterator[ContentPage]:
        # The token is taken first: a change made while the drive is listed is seen again
        # by the next sync rather than lost between the listing and the token.
        cursor = f"{self._scope} {self._start_token()}"
        pages = self._all_files(_FILE_FIELDS)
        page = next(pages)
        for following in pages:
            yield ContentPage(self._entries(page), cursor, snapshot=True, last=False)
            page = following
        yield ContentPage(self._entries(page), cursor, snapshot=True, last=True)

    def _entries(self, raws: Sequence[Mapping[str, Any]]) -> list[ItemRef | Tombstone]:
        return [e for e in map(self._entry, raws) if e is not None]

    def _feed_params(self) -> dict[str, str]:
        """What ``changes.list`` and ``changes.watch`` are both asked for: the synced drive."""
        params = self._drive_params()
        if self.options.drive_id is None:
            params["restrictToMyDrive"] = "true"
        return params

    def _feed(self, token: str, file_fields: str) -> Iterator[tuple[list[Any], str, bool]]:
        """The changes feed from ``token``, page by page: ``(changes, token, last)``, where
        ``token`` resumes after the page (its ``nextPageToken``, or on the last page the
        ``newStartPageToken``)."""
        url = f"{self.options.drive_url}/changes"
        params = {
            **self._feed_params(),
            "pageSize": "1000",
            "fields": "nextPageToken,newStartPageToken,changes(changeType,fileId,removed,"
            f"file({file_fields}))",
        }
        following = page_token(url, params)
        for body in self.client.pages(url, following, params={**params, "pageToken": token}):
            changes = self._listed(body, "changes", "changes", optional=True)
            resume = following(body)
            if resume is not None:
                yield changes, str(resume[1]["pageToken"]), False
                continue
            new_start = text(body.get("newStartPageToken"))
            if new_start is None:
                raise self._error("the changes feed ended without a newStartPageToken")
            yield changes, new_start, True

    def _changes(self, token: str) -> Iterator[ContentPage]:
        for changes, resume, last in self._feed(token, _FILE_FIELDS):
            entries: list[ItemRef | Tombstone] = []
            for change in changes:
                entry = self._change(change)
                entries += [] if entry is None else [entry]
                entries += self._fallen(change)
                entries += self._risen(change)
            once = {e.doc_id: e for e in entries}  # a file and its folder may both change
            yield ContentPage(
                list(once.values()), f"{self._scope} {resume}", snapshot=False, last=last
            )

    def _token_of(self, cursor: str | None) -> str | None:
        """The page token a stored cursor holds (``"<drive>/<subject> <token>"``), or
        ``None`` when it was taken for another drive or subject (the configuration
        changed): the drive is then listed from scratch."""
        if cursor is None:
            return None
        scope, _, token = cursor.partition(" ")
        return token if scope == self._scope and token else None

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """The changes since ``cursor``; a snapshot without one, with one taken for another
        drive, or when the service rejects its token."""
        token = self._token_of(cursor)
        if token is None:
            yield from self._snapshot_listing()
            return
        try:
            yield from self._changes(token)
        except SourceError as exc:
            if exc.status not in _REJECTED_TOKEN:
                raise
            yield from self._snapshot_listing()

    def fetch(self, item: ItemRef) -> SourceDocument:
        url = f"{self._files}/{quote(item.ref, safe='')}"
        try:
            raw = self.client.get_json(
                url, params={"fields": _FILE_FIELDS, "supportsAllDrives": "true"}
            )
        except SourceError as exc:
            if exc.status == 404:
                raise self._error(f"{item.doc_id} is gone") from None
            raise
        if not isinstance(raw, dict) or not isinstance(self._entry(raw), ItemRef):
            raise self._error(f"{item.doc_id} is no longer a file of the drive")
        access = self._access(item.ref)
        if access is None:
            raise self._error(f"{item.doc_id} is gone")
        name = text(raw.get("name")) or item.ref
        declared = text(raw.get("mimeType"))
        exported = _EXPORTS.get(declared or "")
        media_type = exported or rest.media_type(declared, name)
        if exported is not None:
            data = self._export(url, exported, item)
        else:
            params = {"alt": "media", "supportsAllDrives": "true"}
            data = rest.content(
                media_type, lambda: self.client.request("GET", url, params=params).content
            )
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=name,
            uri=text(raw.get("webViewLink")) or "",
            access=access,
            media_type=media_type,
            data=data,
            created_at=timestamp(raw.get("createdTime")),
            modified_at=timestamp(raw.get("modifiedTime")),
            file_name=name,
        )

    def _export(self, url: str, media_type: str, item: ItemRef) -> bytes:
        """A Google Doc exported; :class:`ItemUnavailable` when Drive will never export it
        as it is."""
        self._errors.clear()
        try:
            return self.client.request(
                "GET", f"{url}/export", params={"mimeType": media_type}
            ).content
        except SourceError as exc:
            lasting = sorted(set(_NEVER_EXPORTED) & self._errors.refusal(exc))
            if exc.status != 403 or not lasting:
                raise
            raise ItemUnavailable(
                f"source {self.source!r}: {item.doc_id}: Drive refuses to export it "
                f"({lasting[0]}: {_NEVER_EXPORTED[lasting[0]]}); it is not in the index "
                "until it changes",
                status=exc.status,
            ) from None

    # ------------------------------------------------------------------ inheritance

    def _node(self, file_id: str) -> _Node | None:
        """What is known of ``file_id``, read from Drive when not yet listed. ``None`` ends
        the walk up: the shared drive's root, or in a My Drive a folder Drive answers 404
        for (one the user cannot see: a colleague's folder above hers, as the top of her
        own My Drive would be). Any other failure to read it is raised (:meth:`_limits`
        makes a folder above the item it cannot read fail closed)."""
        with self._nodes_lock:
            known = self._nodes.get(file_id)
        if known is not None or file_id == self.options.drive_id:
            return known
        try:
            raw = self._tree_entry(file_id)
        except SourceError as exc:
            if exc.status == 404 and self.options.drive_id is None:
                return None
            raise
        if not isinstance(raw, dict):
            raise self._error(f"files.get of {file_id} answered without a file")
        self._remember({**raw, "id": file_id})
        with self._nodes_lock:
            return self._nodes.get(file_id)

    def _tree_entry(self, file_id: str) -> Any:
        """What ``files.get`` says of ``file_id``'s place in the tree (:data:`_TREE_FIELDS`)."""
        params = {"fields": _TREE_FIELDS, "supportsAllDrives": "true"}
        return self.client.get_json(f"{self._files}/{quote(file_id, safe='')}", params=params)

    def _limits(self, file_id: str) -> frozenset[str] | None:
        """Where inherited entries of ``file_id`` may still come from: ``None`` when no item
        from it up has inherited permissions disabled (every entry applies); else the folders
        between it and the nearest limited item, that one included (none when ``file_id``
        itself is limited). A flag Drive left out counts as set. A folder above the item
        that Drive refuses to show (403: a rate limit past the retries, a refusal) or, in a
        shared drive, no longer finds (404) is :class:`Unrepresentable`: whether it limits
        what reaches the item is unknown, so the item is visible to nobody. Failing to read
        the item itself is raised as it came."""
        node = self._node(file_id)
        if node is None:
            return None
        if node.limited is not False:
            return frozenset()
        above: list[str] = []
        parent = node.parent
        while parent is not None and parent not in above and len(above) < _MAX_DEPTH:
            try:
                folder = self._node(parent)
            except SourceError as exc:
                if exc.status not in (403, 404):
                    raise
                raise Unrepresentable(
                    f"folder {parent} above it cannot be read (HTTP {exc.status}): whether "
                    "it limits inherited access is unknown"
                ) from None
            if folder is None:
                return None
            above.append(parent)
            if folder.limited is not False:
                return frozenset(above)
            parent = folder.parent
        return None

    def _applies(
        self, permission: Mapping[str, Any], limits: frozenset[str] | None
    ) -> Mapping[str, Any] | None:
        """The permission as it applies to the item — with the role of the rows that still
        apply on a limited-access item — or ``None`` when it grants nothing there."""
        if permission.get("view") == "metadata":
            return None  # the folder's name is visible, not its content
        if limits is None:
            return permission
        rows = permission.get("permissionDetails")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise Unrepresentable(
                f"permission {permission.get('id', '?')}: Drive did not say whether it is "
                "inherited, on an item with inherited permissions disabled"
            )
        applying = [
            r
            for r in rows
            if r.get("inherited") is False
            or (r.get("inherited") is True and r.get("inheritedFrom") in limits)
        ]
        if not applying:
            return None
        roles = [r.get("role") or permission.get("role") for r in applying]
        unknown = [r for r in roles if r not in _READ_ROLES]
        return {**permission, "role": unknown[0] if unknown else roles[0]}

    # ------------------------------------------------------------------ permissions

    def _access(self, file_id: str) -> Access | None:
        """The file's access from its permission list, or ``None`` when the file is gone."""
        url = f"{self._files}/{quote(file_id, safe='')}/permissions"
        params = {"supportsAllDrives": "true", "pageSize": "100", "fields": _PERMISSION_FIELDS}
        restrictions = self._restrictions()
        try:
            limits = self._limits(file_id)
        except Unrepresentable as exc:
            return Access.nobody(str(exc))
        except SourceError as exc:  # files.get of the file itself
            if exc.status == 404:
                return None
            if exc.status == 403:
                return Access.nobody("Drive refused to show the file (HTTP 403)")
            raise

        def read(permission: Mapping[str, Any]) -> set[str] | None:
            if not self._admitted(permission, restrictions):
                return set()
            applying = self._applies(permission, limits)
            return set() if applying is None else self._permission(applying)

        return access_from(
            lambda: [p for page in self._paged(url, "permissions", params) for p in page], read
        )

    def _restrictions(self) -> _Restrictions:
        """The shared drive's restrictions, read once per run (``drives.get``; a ``drive``
        change and each permission read read them again); none for a My Drive. A flag
        Drive leaves out counts as set; a drive Drive will not describe fails the sync."""
        if self.options.drive_id is None:
            return _UNRESTRICTED
        with self._restricted_lock:
            if self._restricted is None:
                url = f"{self.options.drive_url}/drives/{quote(self.options.drive_id, safe='')}"
                fields = "id,restrictions(driveMembersOnly,domainUsersOnly)"
                body = self.client.get_json(url, params={"fields": fields})
                raw = body.get("restrictions") if isinstance(body, dict) else None
                flags: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
                self._restricted = _Restrictions(
                    members_only=flags.get("driveMembersOnly") is not False,
                    domain_only=flags.get("domainUsersOnly") is not False,
                )
            return self._restricted

    def _ours(self, address: str) -> bool:
        """Whether an address (or a bare domain) is of the organisation's domains."""
        return address.rpartition("@")[2].lower() in self.options.organisation

    def _admitted(self, permission: Mapping[str, Any], restrictions: _Restrictions) -> bool:
        """Whether the drive's restrictions still let the permission's grantee in. Drive
        keeps listing the entries a restriction turned on later overrides; the restriction
        wins. ``driveMembersOnly``: only a grantee that is a member of the drive — a row of
        ``permissionType`` ``member`` (no rows: :class:`Unrepresentable`). ``domainUsersOnly``:
        only a user, group or domain of the organisation's domains (``subject``'s and
        ``org_domains``); an ``anyone`` link then reaches nobody this side can name."""
        if restrictions.members_only:
            rows = permission.get("permissionDetails")
            if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
                raise Unrepresentable(
                    f"permission {permission.get('id', '?')}: Drive did not say whether it is "
                    "a drive member's, in a drive open to its members only"
                )
            if not any(r.get("permissionType") == "member" for r in rows):
                return False
        if restrictions.domain_only:
            kind = permission.get("type")
            if kind in ("user", "group"):
                return self._ours(text(permission.get("emailAddress")) or "")
            if kind == "domain":
                return self._ours(text(permission.get("domain")) or "")
            if kind == "anyone":
                return False
        return True

    def _permission(self, permission: Mapping[str, Any]) -> set[str] | None:
        """The principals one permission lets read the file (``None``: anyone with the
        link); raises :class:`Unrepresentable` for what cannot be stated safely."""
        ident = permission.get("id", "?")
        role = permission.get("role")
        if role not in _READ_ROLES:
            raise Unrepresentable(f"permission {ident}: role {role!r} is not understood")
        if permission.get("deleted") is True:
            return set()  # the account was deleted: nobody signs in as it
        expires = timestamp(permission.get("expirationTime"))
        if expires is not None and expires <= datetime.now(UTC):
            return set()
        kind = permission.get("type")
        if kind == "anyone":
            return None  # discoverable (allowFileDiscovery) or not, it is still anyone
        if kind == "domain":
            domain = (text(permission.get("domain")) or "").lower()
            mapped = self.options.domains.get(domain)
            return {mapped} if mapped else set()
        if kind in ("user", "group"):
            email = (text(permission.get("emailAddress")) or "").lower()
            if not email:
                raise Unrepresentable(f"permission {ident}: a {kind} without an email address")
            if kind == "user":
                return {self._user(email)}
            with self._groups_lock:
                self._google_groups.add(email)
            return {principal(f"group:{email}")}
        raise Unrepresentable(f"a principal of type {kind!r} cannot be mapped")

    def _user(self, email: str) -> str:
        return self.options.users.get(email) or principal(f"user:{email}")

    def _forget(self) -> None:
        """Drop what was read of the tree and of the drive's restrictions: a folder may
        have been limited or moved, the drive restricted, since. Each permission read (the
        full listing, ``permissions_of``) starts here, so a sync never stamps access fresh
        as of its start from state an earlier read kept."""
        with self._nodes_lock:
            self._nodes.clear()
        with self._restricted_lock:
            self._restricted = None

    def _read_permissions(self) -> list[PermissionChange]:
        self._forget()
        with self._groups_lock:
            self._google_groups = set()
        files: list[str] = []
        for page in self._all_files(_TREE_FIELDS):
            files += [f.ref for f in self._entries(page) if isinstance(f, ItemRef)]
        return self._accesses(files, self._access)

    def permissions_of(self, doc_ids: Sequence[str]) -> list[PermissionChange]:
        """The current access of just these files, each read as the permission listing
        reads it (limited access and inheritance included, the folders above re-read). Left
        out: an id not of this drive, and a file gone, trashed, out of the drive or not a
        document. A file Drive refuses to show (403) is visible to nobody."""
        prefix = self.doc_id("")
        files = [d[len(prefix) :] for d in dict.fromkeys(doc_ids) if d.startswith(prefix)]
        files = [f for f in files if f and "/" not in f]
        self._forget()  # a folder above may have moved or been limited since
        return self._accesses(files, self._current_access)

    def _current_access(self, file_id: str) -> Access | None:
        """One file's access now, or ``None`` when it is no document of the drive."""
        try:
            raw = self._tree_entry(file_id)
        except SourceError as exc:
            if exc.status == 404:
                return None
            if exc.status == 403:
                return Access.nobody("Drive refused to show the file (HTTP 403)")
            raise
        if not isinstance(raw, dict):
            raise self._error(f"{self.doc_id(file_id)}: files.get answered without a file")
        if not isinstance(self._entry({**raw, "id": file_id}), ItemRef):
            return None
        return self._access(file_id)

    # ------------------------------------------------------------------ notifications

    def notification(
        self, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice:
        """One message of the drive's changes channel. It is taken only with the channel
        token ``subscribe`` gave Drive (``credentials.notification_secret``, compared in
        constant time; without one every message is refused). ``sync`` opens a channel and
        changes nothing; any other state says the drive changed without naming files, so
        the change feed says which. Reads nothing from Drive."""
        presented = headers.get(_TOKEN_HEADER, "")
        if self._notification_secret is None or not presented:
            return Notice.refuse(401, "the notification is not authenticated")
        if len(presented) > _MAX_CHANNEL_TOKEN or not _printable(presented):
            return Notice.refuse(400, "the channel token is malformed")
        expected = self._notification_secret.reveal().encode()
        if not hmac.compare_digest(presented.encode(), expected):
            return Notice.refuse(401, "the notification is not authenticated")
        state = headers.get(_STATE_HEADER, "")
        if not state or len(state) > 32 or not set(state) <= _STATE_WORD:
            return Notice.refuse(400, "the notification has no valid resource state")
        if not headers.get(_CHANNEL_HEADER):
            return Notice.refuse(400, "the notification names no channel")
        if not headers.get(_MESSAGE_HEADER, "1").isdigit():
            return Notice.refuse(400, "the notification's message number is not a number")
        if state == "sync":
            return Notice.reply("")
        return Notice.unknown_changes()

    def changed_since(self, cursor: str | None) -> tuple[frozenset[str], str]:
        """The documents whose access may have changed since ``cursor``: every file the
        changes feed names (removed ones too) and everything below a folder it names (a
        folder's sharing, limits or place change its descendants' access without a change
        of their own). ``None``: the feed's present end (``changes.getStartPageToken``).
        A position Drive no longer accepts, or one taken for another drive, is a
        :class:`SourceError` with status 410; so is a change of the shared drive itself
        (its members or restrictions), which only a full permission sync can follow."""
        if cursor is None:
            return frozenset(), f"{self._scope} {self._start_token()}"
        token = self._token_of(cursor)
        if token is None:
            raise SourceError(
                f"source {self.source!r}: the change feed position was taken for another "
                "drive or user",
                status=410,
            )
        changes: list[Any] = []
        end = token
        try:
            for page, resume, _ in self._feed(token, _TREE_FIELDS):
                changes += page
                end = resume
        except SourceError as exc:
            if exc.status not in _REJECTED_TOKEN:
                raise
            raise SourceError(
                f"source {self.source!r}: Drive no longer accepts the change feed position "
                f"(HTTP {exc.status})",
                status=410,
            ) from None
        named: set[str] = set()
        folders: set[str] = set()
        for change in changes:
            if change.get("changeType", "file") != "file":
                raise SourceError(
                    f"source {self.source!r}: the shared drive itself changed (its members "
                    "or restrictions): every file's access is read again",
                    status=410,
                )
            file_id = text(change.get("fileId"))
            if file_id is None:
                raise self._error("changes: a change without a fileId")
            named.add(file_id)
            raw = change.get("file")
            gone = change.get("removed") is True or not isinstance(raw, dict)
            if gone or raw.get("mimeType") == _FOLDER:
                folders.add(file_id)  # a removed item may have been a folder
        for below in self.client.map(self._descendants, sorted(folders)):
            named.update(below)
        return frozenset(self.doc_id(f) for f in named), f"{self._scope} {end}"

    def subscribe(self, url: str, current: Subscription | None) -> Subscription:
        """A new changes channel to ``url`` (``changes.watch`` from the feed's present end,
        its token the notification secret, for ``channel_hours``), then ``current`` stopped
        (``channels.stop``: Drive renews no channel in place). A channel that cannot be
        stopped ends at its expiration, and is logged. ``state`` keeps the channel's
        ``resource_id`` and the ``page_token`` it watches from, never the token."""
        token = self._channel_token()
        start = self._start_token()
        requested = int((self._wall_clock() + self.options.channel_hours * 3600) * 1000)
        channel_id = str(uuid.uuid4())
        made = self._send(
            "POST",
            f"{self.options.drive_url}/changes/watch",
            {
                "id": channel_id,
                "type": "web_hook",
                "address": url,
                "token": token.reveal(),
                "expiration": str(requested),
            },
            params={**self._feed_params(), "pageToken": start},
        )
        resource = text(made.get("resourceId")) if isinstance(made, dict) else None
        if resource is None or not isinstance(made, dict) or made.get("id") != channel_id:
            raise self._error("changes.watch answered without the channel it opened")
        granted = str(made.get("expiration", ""))
        ends = int(granted) if granted.isdigit() else requested
        if current is not None:
            self._stop(current)
        return Subscription(
            channel_id,
            datetime.fromtimestamp(ends / 1000, UTC),
            state={"resource_id": resource, "page_token": start},
        )

    def _channel_token(self) -> Secret:
        key = f"sources.{self.source}.credentials.notification_secret"
        secret = self._notification_secret
        if secret is None:
            raise ConfigError(f"{key}: needed to subscribe (it authenticates Drive's messages)")
        value = secret.reveal()
        if not value or len(value) > _MAX_CHANNEL_TOKEN or not _printable(value):
            raise ConfigError(
                f"{key}: Drive carries 1 to {_MAX_CHANNEL_TOKEN} printable ASCII characters "
                "as a channel token"
            )
        return secret

    def _stop(self, channel: Subscription) -> None:
        resource = channel.state.get("resource_id")
        ends = channel.expires_at.isoformat()
        if not isinstance(resource, str) or not resource:
            log.warning(
                "source %s: channel %s has no resource id to stop it by; it ends at %s",
                self.source,
                channel.id,
                ends,
            )
            return
        try:
            self.client.request(
                "POST",
                f"{self.options.drive_url}/channels/stop",
                json={"id": channel.id, "resourceId": resource},
            )
        except SourceError as exc:
            if exc.status == 404:
                return  # ended already
            log.warning(
                "source %s: channel %s could not be stopped (%s); it ends at %s",
                self.source,
                channel.id,
                exc.message,
                ends,
            )

    # ------------------------------------------------------------------ groups

    def groups(self) -> GroupSnapshot | None:
        """The Google Groups the drive's permissions name, and the groups nested in them,
        each with its direct members. Reads the permissions to learn which groups those
        are; the permission listing of the same sync then reuses what it read. A group of
        another organisation is left out (it matches nobody) and named in :attr:`warnings`
        — only while the Directory API answers for some group: when it refuses every one,
        the credentials are what it refuses, and the sync fails."""
        self.warnings = []
        if not self.options.sync_groups:
            return None
        self._snapshot = self._read_permissions()
        found: dict[str, frozenset[str]] = {}
        refused: list[str] = []
        pending = sorted(self._google_groups)
        while pending:
            members = self.client.map(self._members, pending)
            for email, listed in zip(pending, members, strict=True):
                if listed is None:
                    refused.append(email)
                else:
                    found[email] = listed
            nested = {
                m[len("group:") :] for ms in members if ms for m in ms if m.startswith("group:")
            }
            pending = sorted(nested - set(found) - set(refused))
        if refused and not found:
            raise self._error(
                "the Directory API refused every group's members (HTTP 403): the credentials "
                f"are refused or lack the groups privilege (first: {refused[0]})"
            )
        self.warnings = [
            f"group:{email}: the Directory API will not list its members (HTTP 403): a group "
            "of another organisation; it grants nobody here"
            for email in sorted(refused)
        ]
        return GroupSnapshot(found, warnings=tuple(self.warnings))

    def _members(self, email: str) -> frozenset[str] | None:
        """A group's direct members; ``None`` when the Directory API refuses a group outside
        the organisation's domains as not its own."""
        url = f"{self.options.directory_url}/groups/{quote(email, safe='@')}/members"
        self._errors.clear()
        try:
            pages = list(self._paged(url, "members", {"maxResults": "200"}, optional=True))
        except SourceError as exc:
            if exc.status == 404:
                return frozenset()  # deleted, or unknown to the directory: no members
            outside = email.rpartition("@")[2] not in self.options.organisation
            if exc.status == 403 and outside and self._errors.refusal(exc) & _NOT_OURS:
                return None
            raise
        out: set[str] = set()
        domain_only = self._restrictions().domain_only
        for member in (m for page in pages for m in page):
            address = (text(member.get("email")) or "").lower()
            if not address or member.get("status", "ACTIVE") != "ACTIVE":
                continue  # suspended or unknown-state members read nothing through it
            if domain_only and not self._ours(address):
                continue  # an outside member: the drive is closed to other domains
            try:
                if member.get("type") == "GROUP":
                    out.add(principal(f"group:{address}"))
                elif member.get("type") == "USER":
                    out.add(self._user(address))
            except Unrepresentable:
                continue  # an address that is no principal grants nothing
        return frozenset(out)


# ---------------------------------------------------------------------- building


def _printable(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _one_drive(raw: object) -> object:
    """``drive_id`` is read when ``my_drive`` is not given, and never beside it."""
    if not isinstance(raw, dict):
        return raw
    if "my_drive" in raw and "drive_id" in raw:
        raise Invalid("set drive_id (a shared drive) or my_drive (a user's), not both")
    return {**raw, "drive_id": None} if "my_drive" in raw else raw


def parse_options(name: str, raw: Mapping[str, Any]) -> DriveOptions:
    """Validate ``[sources.<name>.options]`` of a ``gdrive`` source."""
    return parse_table(DriveOptions, raw, f"sources.{name}.options", before=_one_drive)


def parse_service_account(secret: Secret, key: str) -> ServiceAccount:
    """The service account of a key file's JSON; a :class:`ConfigError` naming ``key``
    (never quoting the value) when it is not one."""
    try:
        data = json.loads(secret.reveal())
        client_email = data["client_email"]
        pem = data["private_key"]
        if data.get("type") != "service_account" or not isinstance(client_email, str):
            raise ValueError
        private = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ConfigError(
            f"{key}: not a service-account key (JSON with an RSA private key)"
        ) from None
    if not isinstance(private, RSAPrivateKey):
        raise ConfigError(f"{key}: the service-account key is not an RSA key")
    key_id = data.get("private_key_id")
    return ServiceAccount(client_email, key_id if isinstance(key_id, str) else None, private)


def drive_connector(
    name: str,
    options: DriveOptions,
    account: ServiceAccount | None,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
    notification_secret: Secret | None = None,
    wall_clock: Callable[[], float] = time.time,
) -> DriveConnector:
    """A connector for ``options``, acting as ``options.subject`` (and ``options.my_drive``
    for Drive) through ``account``'s key, or keyless through ``options.impersonate`` when
    ``account`` is ``None``; ``notification_secret`` authenticates its changes channel
    (``sleep`` and ``wall_clock``: injectable for tests)."""

    def token_client(auth: httpx.Auth | None = None) -> SourceClient:
        """A client for one token or signing endpoint, one request at a time."""
        return SourceClient(source=name, auth=auth, max_concurrency=1, sleep=sleep)

    tokens = token_client()
    token_clients = [tokens]
    if account is not None:
        issuer, sign = account.client_email, account.sign
    elif options.impersonate is not None:
        ambient = token_client()
        metadata = f"{options.metadata_url}/instance/service-accounts/default/token"
        iam = token_client(MetadataToken(ambient, metadata))
        token_clients += [ambient, iam]
        issuer, sign = (
            options.impersonate,
            IamSigner(iam, options.iam_url, options.impersonate).sign,
        )
    else:
        raise ConfigError(
            f"source {name!r}: a service-account key or options.impersonate is needed"
        )

    def delegated(subject: str, scopes: Sequence[str]) -> DelegatedToken:
        return DelegatedToken(tokens, options.token_url, issuer, sign, subject, scopes)

    groups = [GROUPS_SCOPE] if options.sync_groups else []
    auth: httpx.Auth
    if options.drive_subject == options.subject:
        auth = delegated(options.subject, [DRIVE_SCOPE, *groups])
    else:
        drive = delegated(options.drive_subject, [DRIVE_SCOPE])
        auth = RoutedAuth(
            drive, delegated(options.subject, groups or [DRIVE_SCOPE]), options.directory_url
        )
    errors = GoogleErrors()
    client = SourceClient(
        source=name,
        auth=auth,
        max_concurrency=max_concurrency,
        sleep=sleep,
        retryable=errors,
    )
    return DriveConnector(
        name,
        options,
        client,
        token_clients=token_clients,
        errors=errors,
        notification_secret=notification_secret,
        wall_clock=wall_clock,
    )


def _build(context: SourceContext) -> Connector:
    source = context.source
    options = parse_options(source.name, source.options)
    account = None
    if options.impersonate is None or "service_account" in source.credentials:
        account = parse_service_account(
            context.secret("service_account"),
            f"sources.{source.name}.credentials.service_account",
        )
    return drive_connector(
        source.name,
        options,
        account,
        max_concurrency=source.max_concurrency,
        notification_secret=context.secret_if_given("notification_secret"),
    )


register_connector("gdrive", _build)
