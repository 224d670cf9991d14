"""The Google Drive connector: one shared drive, kept in step through the Drive v3 API.

Content comes from the drive's changes feed. The first sync takes a start page token
(``changes.getStartPageToken``) and then lists every file (``files.list``, a snapshot: what
it does not list is deleted); later ones follow the stored token through ``changes.list``
(``nextPageToken`` per page, ``newStartPageToken`` at the end) and see only what changed. A
change that is ``removed``, a file that is ``trashed`` or has left the drive is a tombstone.
A page token the service rejects (400, 404 or 410) is discarded, as the API asks, and the
drive is listed again as a snapshot. Folders and shortcuts shape nothing but inheritance;
Google Docs, Sheets and Slides are exported to docx, xlsx and pptx, other files downloaded
(``alt=media``). A file's version is its checksum, modification time, size, name and type —
not its ``version`` number, which every sharing change moves — so a permission change never
re-reads content.

Permissions are re-read in full by every permission sync: the changes feed does not say
when a file's *inherited* access changed (a folder shared, a file moved into a restricted
folder), so each file's ``permissions.list`` — which lists inherited entries too — is read
again, on up to ``max_concurrency`` requests at once. Each permission maps as follows:

* ``user`` → ``user:<email>``, or what ``users`` maps the address to;
* ``group`` → ``group:<email>``; its members (users, and nested groups as members, followed
  down) are read from the Admin SDK Directory API by :meth:`DriveConnector.groups`;
* ``domain`` → what ``domains`` maps the domain to, else nobody;
* ``anyone`` → ``Access.anyone_with_link`` whether or not it is discoverable
  (``allowFileDiscovery``): visible to nobody in a corpus above PUBLIC;
* a permission of a deleted account, or one that has expired, grants nothing;
* anything else — an unknown type or role, a permission without its address, a permission
  list the service refuses to show (403) — makes the file visible to nobody, and
  ``source status`` says why.

Credentials: a service account with domain-wide delegation. Its key (the JSON Google issues)
is read from the environment variable named by ``credentials.service_account``; it signs a
JWT (RS256) for ``token_url`` on behalf of ``subject``. Key and token are never printed,
logged or traced, and the token is sent only to ``drive_url`` and ``directory_url``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

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
    principal,
    principal_table,
    snapshot_pages,
    string_option,
    text,
    timestamp,
    url_option,
)
from clearance.sources.sync import MEDIA_SUFFIXES

__all__ = [
    "DriveConnector",
    "DriveOptions",
    "ServiceAccount",
    "drive_connector",
    "parse_options",
    "parse_service_account",
]

DEFAULT_DRIVE_URL = "https://www.googleapis.com/drive/v3"
DEFAULT_DIRECTORY_URL = "https://admin.googleapis.com/admin/directory/v1"
DEFAULT_TOKEN_URL = "https://oauth2.googleapis.com/token"
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
GROUPS_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.member.readonly"
_OPTIONS = frozenset(
    {
        "drive_id",
        "subject",
        "drive_url",
        "directory_url",
        "token_url",
        "users",
        "domains",
        "sync_groups",
    }
)
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
_FILE_FIELDS = (
    "id,name,mimeType,md5Checksum,modifiedTime,createdTime,size,webViewLink,trashed,driveId"
)
_PERMISSION_FIELDS = (
    "nextPageToken,permissions(id,type,role,emailAddress,domain,allowFileDiscovery,deleted,"
    "expirationTime,permissionDetails)"
)
_REJECTED_TOKEN = frozenset({400, 404, 410})  # a page token the feed no longer accepts
_THROTTLED = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
_JWT_LIFETIME_S = 3600
_JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@dataclass(frozen=True, slots=True)
class DriveOptions:
    """``[sources.<name>.options]`` of the ``gdrive`` kind, validated."""

    drive_id: str
    subject: str
    drive_url: str = DEFAULT_DRIVE_URL
    directory_url: str = DEFAULT_DIRECTORY_URL
    token_url: str = DEFAULT_TOKEN_URL
    users: Mapping[str, str] = field(default_factory=dict)
    domains: Mapping[str, str] = field(default_factory=dict)
    sync_groups: bool = True


@dataclass(frozen=True, slots=True)
class ServiceAccount:
    """The parts of a service-account key the connector uses. ``key`` never prints."""

    client_email: str
    key_id: str | None
    key: RSAPrivateKey = field(repr=False)


class DelegatedToken(RenewingToken):
    """A token for ``subject``, obtained with a JWT the service account signs (RS256)."""

    def __init__(
        self,
        tokens: SourceClient,
        token_url: str,
        account: ServiceAccount,
        subject: str,
        scopes: Sequence[str],
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(tokens, token_url)
        self._account = account
        self._subject = subject
        self._scopes = " ".join(scopes)
        self._wall_clock = wall_clock

    def grant(self) -> dict[str, str]:
        now = int(self._wall_clock())
        claims = {
            "iss": self._account.client_email,
            "sub": self._subject,
            "scope": self._scopes,
            "aud": self._token_url,
            "iat": now,
            "exp": now + _JWT_LIFETIME_S,
        }
        headers = {"kid": self._account.key_id} if self._account.key_id else None
        assertion = jwt.encode(claims, self._account.key, algorithm="RS256", headers=headers)
        return {"grant_type": _JWT_GRANT, "assertion": assertion}


def throttled(response: httpx.Response) -> bool:
    """Whether a 403 is Google's rate limit (retried) rather than a refusal."""
    if response.status_code != 403:
        return False
    try:
        errors = response.json()["error"]["errors"]
        return any(e.get("reason") in _THROTTLED for e in errors)
    except (ValueError, KeyError, TypeError, AttributeError):
        return False


class DriveConnector:
    """See the module docstring. Built by the ``gdrive`` kind, or by :func:`drive_connector`."""

    def __init__(
        self,
        source: str,
        options: DriveOptions,
        client: SourceClient,
        *,
        token_client: SourceClient | None = None,
    ) -> None:
        self.source = source
        self.options = options
        self.client = client
        self._token_client = token_client
        self._files = f"{options.drive_url}/files"
        self._scope = f"{options.drive_id}/{options.subject}"
        self._snapshot: list[PermissionChange] | None = None
        self._google_groups: set[str] = set()
        self._groups_lock = threading.Lock()

    def close(self) -> None:
        self.client.close()
        if self._token_client is not None:
            self._token_client.close()

    # ------------------------------------------------------------------ plumbing

    def _error(self, message: str) -> SourceError:
        return SourceError(f"source {self.source!r}: {message}")

    def _drive_params(self) -> dict[str, str]:
        return {
            "driveId": self.options.drive_id,
            "supportsAllDrives": "true",
            "includeItemsFromAllDrives": "true",
        }

    def _list(self, body: Any, key: str, what: str, *, optional: bool = False) -> list[Any]:
        values = body.get(key, [] if optional else None) if isinstance(body, dict) else None
        if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
            raise self._error(f"{what}: the response has no '{key}' list")
        return values

    def _paged(self, url: str, key: str, params: Mapping[str, str], **kw: bool) -> Iterator[Any]:
        """The ``key`` lists of every page of ``url``, following ``nextPageToken``."""

        def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
            token = text(body.get("nextPageToken")) if isinstance(body, dict) else None
            return None if token is None else (url, {**params, "pageToken": token})

        for body in self.client.pages(url, following, params=params):
            yield self._list(body, key, url.rpartition("/")[2], **kw)

    def doc_id(self, file_id: str) -> str:
        return f"gdrive:{self.options.drive_id}/{file_id}"

    # ------------------------------------------------------------------ content

    def _version(self, raw: Mapping[str, Any]) -> str:
        """Checksum, modification time, size, name and type: every content-side change
        moves it; a sharing change does not."""
        keys = ("md5Checksum", "modifiedTime", "size", "name", "mimeType")
        digest = hashlib.sha256("\x1f".join(str(raw.get(k, "")) for k in keys).encode())
        return f"gdrive:{digest.hexdigest()[:24]}"

    def _entry(self, raw: Mapping[str, Any]) -> ItemRef | Tombstone | None:
        """A listed file as an item, a tombstone (trashed, or moved to another drive), or
        ``None`` for what is not a document (folders, shortcuts)."""
        file_id = text(raw.get("id"))
        if file_id is None:
            raise self._error("an item without an id")
        if raw.get("trashed") is True or raw.get("driveId") != self.options.drive_id:
            return Tombstone(self.doc_id(file_id))
        if raw.get("mimeType") in (_FOLDER, _SHORTCUT):
            return None
        return ItemRef(self.doc_id(file_id), self._version(raw), file_id)

    def _change(self, change: Mapping[str, Any]) -> ItemRef | Tombstone | None:
        if change.get("changeType", "file") != "file":
            return None  # the shared drive itself (renamed, restricted): no document
        file_id = text(change.get("fileId"))
        if file_id is None:
            raise self._error("changes: a change without a fileId")
        raw = change.get("file")
        if change.get("removed") is True or not isinstance(raw, dict):
            return Tombstone(self.doc_id(file_id))
        return self._entry(raw)

    def _start_token(self) -> str:
        body = self.client.get_json(
            f"{self.options.drive_url}/changes/startPageToken",
            params={"driveId": self.options.drive_id, "supportsAllDrives": "true"},
        )
        token = text(body.get("startPageToken")) if isinstance(body, dict) else None
        if token is None:
            raise self._error("changes.getStartPageToken answered without a token")
        return token

    def _all_files(self, fields: str) -> Iterator[list[dict[str, Any]]]:
        params = {
            **self._drive_params(),
            "corpora": "drive",
            "q": "trashed = false",
            "pageSize": "1000",
            "fields": f"nextPageToken,files({fields})",
        }
        yield from self._paged(self._files, "files", params)

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

    def _changes(self, token: str) -> Iterator[ContentPage]:
        url = f"{self.options.drive_url}/changes"
        params = {
            **self._drive_params(),
            "pageSize": "1000",
            "fields": f"nextPageToken,newStartPageToken,changes(changeType,fileId,removed,"
            f"file({_FILE_FIELDS}))",
        }

        def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
            token = text(body.get("nextPageToken")) if isinstance(body, dict) else None
            return None if token is None else (url, {**params, "pageToken": token})

        for body in self.client.pages(url, following, params={**params, "pageToken": token}):
            changes = self._list(body, "changes", "changes", optional=True)
            entries = [e for e in map(self._change, changes) if e is not None]
            resume = following(body)
            if resume is not None:
                next_token = str(resume[1]["pageToken"])
                yield ContentPage(
                    entries, f"{self._scope} {next_token}", snapshot=False, last=False
                )
                continue
            new_start = text(body.get("newStartPageToken"))
            if new_start is None:
                raise self._error("the changes feed ended without a newStartPageToken")
            yield ContentPage(entries, f"{self._scope} {new_start}", snapshot=False, last=True)

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
        data = b""
        if exported is not None:
            data = self.client.request(
                "GET", f"{url}/export", params={"mimeType": exported}
            ).content
        elif media_type in MEDIA_SUFFIXES:  # anything else is skipped by the engine unread
            data = self.client.request(
                "GET", url, params={"alt": "media", "supportsAllDrives": "true"}
            ).content
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

    # ------------------------------------------------------------------ permissions

    def _access(self, file_id: str) -> Access | None:
        """The file's access from its permission list, or ``None`` when the file is gone."""
        url = f"{self._files}/{quote(file_id, safe='')}/permissions"
        params = {"supportsAllDrives": "true", "pageSize": "100", "fields": _PERMISSION_FIELDS}
        return access_from(
            lambda: [p for page in self._paged(url, "permissions", params) for p in page],
            self._permission,
        )

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

    def _read_permissions(self) -> list[PermissionChange]:
        with self._groups_lock:
            self._google_groups = set()
        files: list[str] = []
        for page in self._all_files("id,mimeType,trashed,driveId"):
            files += [f.ref for f in self._entries(page) if isinstance(f, ItemRef)]
        accesses = self.client.map(self._access, files)
        return [
            PermissionChange(self.doc_id(file_id), access)
            for file_id, access in zip(files, accesses, strict=True)
            if access is not None
        ]

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every file's access, re-read (a snapshot: see the module docstring)."""
        changes = self._snapshot if self._snapshot is not None else self._read_permissions()
        self._snapshot = None
        yield from snapshot_pages(changes)

    # ------------------------------------------------------------------ groups

    def groups(self) -> GroupSnapshot | None:
        """The Google Groups the drive's permissions name, and the groups nested in them,
        each with its direct members. Reads the permissions to learn which groups those
        are; the permission listing of the same sync then reuses what it read."""
        if not self.options.sync_groups:
            return None
        self._snapshot = self._read_permissions()
        found: dict[str, frozenset[str]] = {}
        pending = sorted(self._google_groups)
        while pending:
            members = self.client.map(self._members, pending)
            found.update(zip(pending, members, strict=True))
            nested = {m[len("group:") :] for ms in members for m in ms if m.startswith("group:")}
            pending = sorted(nested - set(found))
        return GroupSnapshot(found)

    def _members(self, email: str) -> frozenset[str]:
        url = f"{self.options.directory_url}/groups/{quote(email, safe='@')}/members"
        try:
            pages = list(self._paged(url, "members", {"maxResults": "200"}, optional=True))
        except SourceError as exc:
            if exc.status != 404:
                raise
            return frozenset()  # deleted, or not a group of this organisation: no members
        out: set[str] = set()
        for member in (m for page in pages for m in page):
            address = (text(member.get("email")) or "").lower()
            if not address or member.get("status", "ACTIVE") != "ACTIVE":
                continue  # suspended or unknown-state members read nothing through it
            try:
                if member.get("type") == "GROUP":
                    out.add(principal(f"group:{address}"))
                elif member.get("type") == "USER":
                    out.add(self._user(address))
            except Unrepresentable:
                continue  # an address that is no principal grants nothing
        return frozenset(out)


# ---------------------------------------------------------------------- building


def parse_options(name: str, raw: Mapping[str, Any]) -> DriveOptions:
    """Validate ``[sources.<name>.options]`` of a ``gdrive`` source."""
    key = f"sources.{name}.options"
    options = dict(raw)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigError(f"unknown setting '{key}.{unknown[0]}'")
    subject = string_option(options, "subject", key)
    if "@" not in subject:
        raise ConfigError(f"{key}.subject: expected the email address of a user to act as")
    users = principal_table(options, "users", key)
    domains = principal_table(options, "domains", key)
    return DriveOptions(
        drive_id=string_option(options, "drive_id", key),
        subject=subject,
        drive_url=url_option(options, "drive_url", key, DEFAULT_DRIVE_URL),
        directory_url=url_option(options, "directory_url", key, DEFAULT_DIRECTORY_URL),
        token_url=url_option(options, "token_url", key, DEFAULT_TOKEN_URL),
        users={k.lower(): v for k, v in users.items()},
        domains={k.lower(): v for k, v in domains.items()},
        sync_groups=bool_option(options, "sync_groups", key, True),
    )


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
    account: ServiceAccount,
    *,
    max_concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
) -> DriveConnector:
    """A connector for ``options``, acting as ``options.subject`` through ``account``
    (``sleep``: injectable for tests of throttling)."""
    scopes = [DRIVE_SCOPE] + ([GROUPS_SCOPE] if options.sync_groups else [])
    tokens = SourceClient(source=name, max_concurrency=1, sleep=sleep)
    auth = DelegatedToken(tokens, options.token_url, account, options.subject, scopes)
    client = SourceClient(
        source=name,
        auth=auth,
        max_concurrency=max_concurrency,
        sleep=sleep,
        retryable=throttled,
    )
    return DriveConnector(name, options, client, token_client=tokens)


def _build(context: SourceContext) -> Connector:
    source = context.source
    options = parse_options(source.name, source.options)
    account = parse_service_account(
        context.secret("service_account"), f"sources.{source.name}.credentials.service_account"
    )
    return drive_connector(source.name, options, account, max_concurrency=source.max_concurrency)


register_connector("gdrive", _build)
