"""A fake Google Drive (v3), Admin SDK Directory, IAM Credentials and metadata server on
127.0.0.1: the subset the ``gdrive`` connector uses, shaped as Google documents it.

* ``POST /token`` — the JWT-bearer grant: the assertion must be an RS256 JWT signed by the
  service account's key (by the connector, or by ``signJwt`` below), for this audience, acting
  as a user the service account may impersonate (:data:`SUBJECT` or one of
  :attr:`FakeDrive.users`) with scopes domain-wide delegation allows; every other Drive or
  Directory call must carry a token it issued (401 otherwise; :meth:`FakeDrive.revoke_tokens`
  voids them).
* ``GET /computeMetadata/v1/instance/service-accounts/default/token`` — the runtime's own
  token, only with ``Metadata-Flavor: Google``; ``POST /iam/v1/projects/-/serviceAccounts/
  {email}:signJwt`` — ``{"payload": "<claims JSON>"}`` signed with the service account's key
  (``{"keyId", "signedJwt"}``), only with a metadata token, for :data:`CLIENT_EMAIL`, with an
  ``exp`` at most 12 hours ahead (:attr:`FakeDrive.sign_requests` records each payload).
* ``GET /drive/v3/changes/startPageToken`` and ``GET /drive/v3/changes`` — the change log of
  the shared drive (``driveId``) or of the caller's My Drive (without it),
  :attr:`FakeDrive.page_size` changes a page, ``nextPageToken`` then ``newStartPageToken``; a
  token older than :attr:`FakeDrive.expired_before` is refused (400 ``invalid``). Trashing a
  folder logs the folder alone: its descendants are trashed with it, silently, as on Drive.
* ``POST /drive/v3/changes/watch`` — a changes channel (``pageToken`` as for ``changes``;
  body ``{id, type: "web_hook", address, token, expiration}``): ``id`` unique, at most 64
  characters; ``address`` HTTPS (400 ``push.webhookUrlNotHttps``); ``token`` at most 256
  characters; ``expiration`` in epoch milliseconds, one hour when left out and at most a
  week ahead, the longest Drive keeps a changes channel (longer is refused here). Answers
  the ``api#channel`` with an opaque ``resourceId``. ``POST /drive/v3/channels/stop``
  (``{id, resourceId}``; no ``supportsAllDrives``) ends one: 204, or 404 for a channel it
  does not know. Each channel's messages are queued in :attr:`FakeDrive.outbox` as Drive
  would POST them to ``address`` (``X-Goog-Channel-ID``, ``-Token``, ``-Expiration``,
  ``X-Goog-Resource-ID``, ``-URI``, ``-State``, ``X-Goog-Message-Number``, no body): ``sync``
  when it opens, ``change`` for every change logged in its drive while it lives.
  :meth:`FakeDrive.restrict` changes the shared drive itself (a ``drive`` change).
* ``GET /drive/v3/files`` — ``corpora=drive`` with ``driveId``, or ``corpora=user``; ``q``
  of ``trashed = false``, ``'<id>' in parents`` and ``'me' in owners`` joined by ``and``;
  paged. ``GET /drive/v3/files/{id}`` (metadata, or the bytes with ``alt=media``),
  ``GET /drive/v3/files/{id}/export`` (a Google Doc as a real docx; 403
  ``exportSizeLimitExceeded`` for one marked too large).
* ``GET /drive/v3/files/{id}/permissions`` — one permission per grantee, merging the file's
  own, every ancestor folder's and (in a shared drive) the drive members' entries, with a
  ``permissionDetails`` row for each (``permissionType``, ``role``, ``inherited``,
  ``inheritedFrom`` in a shared drive) and ``inheritedPermissionsDisabled``. A
  limited-access item (:meth:`FakeDrive.limit`) still lists its inherited entries: only the
  rows say they no longer apply. :attr:`FakeDrive.withheld` names fields left out of every
  file and permission (a Drive that does not return them).
* ``GET /admin/directory/v1/groups/{email}/members`` — direct members (``USER`` or
  ``GROUP``), paged; no ``members`` key for an empty group, as the API answers; 404
  ``notFound`` for an unknown group, 403 ``forbidden`` ("Not Authorized to access this
  resource/api") for a group of another organisation (:attr:`FakeDrive.external_groups`)
  and, when :attr:`FakeDrive.directory_refused`, for every group.

Every answer honours ``fields`` (partial response: ``a,b(c,d)``, ``a/b``, ``*``); without it a
resource has Google's default fields only. Shared-drive calls without
``supportsAllDrives=true`` answer 404, as Drive does (except ``files.export``, which has no
such parameter). Tests change the drive between syncs (:meth:`add_file`, :meth:`move`,
:meth:`share`, :meth:`trash` …) and script faults on matching paths (:meth:`fault`: a 429 with
``Retry-After``, Google's 403 ``rateLimitExceeded``, a 5xx, every request after the first n).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qs, unquote

import docx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from loopback_server import (
    FakeService,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedServer,
    json_reply,
)

DRIVE = "0AbcSharedDrive"
MY_ROOT = "0AMyDriveRoot"  # the root folder of every My Drive here
SUBJECT = "sync-admin@example.com"
CLIENT_EMAIL = "clearance-sync@project.iam.gserviceaccount.com"
FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DRIVE_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
GROUPS_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.member.readonly"
METADATA_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
_DELEGATED = frozenset({DRIVE_SCOPE, GROUPS_SCOPE})  # what domain-wide delegation allows
_ROLES = ("reader", "commenter", "writer", "fileOrganizer", "organizer", "owner")
_NOT_AUTHORIZED = "Not Authorized to access this resource/api"

_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
_PEM = _KEY.private_bytes(
    serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption(),
).decode()
#: The service-account key file, as Google issues it (what the environment variable holds).
KEY_JSON = json.dumps(
    {
        "type": "service_account",
        "project_id": "project",
        "private_key_id": "kid-1",
        "private_key": _PEM,
        "client_email": CLIENT_EMAIL,
        "token_uri": "https://oauth2.googleapis.com/token",
    }
)
# Google's default fields when a request names none.
_DEFAULT_FIELDS = {
    "file": "kind,id,name,mimeType",
    "permission": "kind,id,type,role",
}


@dataclass
class File:
    id: str
    name: str
    parent: str
    mime: str = "text/plain"
    text: str = ""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    edits: int = 0
    trashed: bool = False
    limited: bool = False  # inheritedPermissionsDisabled
    owner: str | None = None  # a My Drive file's owner; None: in the shared drive
    too_large: bool = False  # files.export refuses it (exportSizeLimitExceeded)

    @property
    def scope(self) -> str:
        return DRIVE if self.owner is None else self.owner


@dataclass
class Channel:
    """A changes channel ``changes.watch`` opened, as Drive keeps it."""

    id: str
    resource_id: str
    address: str
    token: str | None
    expiration_ms: int
    scope: str  # the shared drive, or the My Drive's user
    messages: int = 0
    stopped: bool = False

    @property
    def uri(self) -> str:
        return f"https://www.googleapis.com/drive/v3/changes?alt=json&driveId={self.scope}"

    def live(self) -> bool:
        return not self.stopped and time.time() * 1000 < self.expiration_ms


@dataclass(frozen=True)
class Message:
    """One notification Drive POSTs to a channel's address (header names lower-case)."""

    address: str
    headers: dict[str, str]
    body: bytes = b""


#: The longest a changes channel lives, and how long one lives when the request says not.
CHANNEL_MAX_MS = 7 * 24 * 3600 * 1000
CHANNEL_DEFAULT_MS = 3600 * 1000


def _error_body(status: int, reason: str, message: str | None = None) -> dict[str, Any]:
    text = message or reason
    return {
        "error": {
            "code": status,
            "message": text,
            "errors": [{"domain": "global", "reason": reason, "message": text}],
        }
    }


def _error(status: int, reason: str, message: str | None = None) -> Reply:
    return json_reply(_error_body(status, reason, message), status=status)


# ---------------------------------------------------------------------- partial responses


def parse_fields(spec: str) -> dict[str, Any]:
    """A ``fields`` selector as a tree: name -> sub-selection (``None``: everything)."""

    def add(into: dict[str, Any], name: str, sub: dict[str, Any] | None) -> None:
        head, _, rest = name.strip().partition("/")
        if not head:
            return
        if rest:
            nested = into.get(head) or {}
            add(nested, rest, sub)
            into[head] = nested
        else:
            into[head] = sub

    def parse(at: int) -> tuple[dict[str, Any], int]:
        selection: dict[str, Any] = {}
        name = ""
        while at < len(spec):
            char = spec[at]
            if char == ",":
                add(selection, name, None)
                name, at = "", at + 1
            elif char == "(":
                sub, at = parse(at + 1)
                add(selection, name, sub)
                name = ""
            elif char == ")":
                add(selection, name, None)
                return selection, at + 1
            else:
                name, at = name + char, at + 1
        add(selection, name, None)
        return selection, at

    return parse(0)[0]


def select(value: Any, selection: dict[str, Any] | None) -> Any:
    """``value`` cut down to ``selection`` (``parse_fields``)."""
    if selection is None or "*" in selection:
        return value
    if isinstance(value, list):
        return [select(v, selection) for v in value]
    if isinstance(value, dict):
        return {k: select(value[k], sub) for k, sub in selection.items() if k in value}
    return value


class FakeDrive(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2
    fault_reason = "backendError"

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.files: dict[str, File] = {}
        self.members: list[dict[str, Any]] = []  # the shared drive's own members
        self.groups: dict[str, set[str]] = {}  # group email -> member emails
        self.external_groups: set[str] = set()  # groups of another organisation
        self.directory_refused = False  # the subject may not read groups: 403 on every one
        self.withheld: set[str] = set()  # fields left out of every file and permission
        self.users: set[str] = set()  # users (besides SUBJECT) the service account may act as
        self.log: list[tuple[str, str]] = []  # (file id, scope) per change; a token: a position
        self.expired_before = 0
        self.faults: list[Fault] = []
        self._tokens: dict[str, tuple[str, str]] = {}  # token -> (subject, scopes)
        self._ambient: set[str] = set()  # metadata-server tokens
        self.sign_requests: list[dict[str, Any]] = []  # the claims signJwt was asked to sign
        self.issued = 0
        self.channels: dict[str, Channel] = {}
        self.outbox: list[Message] = []  # what Drive would have POSTed to channel addresses
        # the shared drive's own settings; None: a flag drives.get leaves out of its answer
        self.restrictions: dict[str, bool | None] = {}
        self._resource_ids = itertools.count(1)
        self._mutex = threading.Lock()

    @property
    def drive_url(self) -> str:
        return self.url_for("/drive/v3")

    @property
    def directory_url(self) -> str:
        return self.url_for("/admin/directory/v1")

    @property
    def token_url(self) -> str:
        return self.url_for("/token")

    @property
    def iam_url(self) -> str:
        return self.url_for("/iam/v1")

    @property
    def metadata_url(self) -> str:
        return self.url_for("/computeMetadata/v1")

    # ------------------------------------------------------------------ the drive

    def _changed(self, file_id: str, scope: str | None = None) -> None:
        where = scope or self.files[file_id].scope
        self.log.append((file_id, where))
        for channel in list(self.channels.values()):
            if channel.scope == where and channel.live():
                self._notify(channel, "change")

    def _notify(self, channel: Channel, state: str) -> None:
        channel.messages += 1
        headers = {
            "x-goog-channel-id": channel.id,
            "x-goog-channel-expiration": formatdate(channel.expiration_ms / 1000, usegmt=True),
            "x-goog-resource-id": channel.resource_id,
            "x-goog-resource-uri": channel.uri,
            "x-goog-resource-state": state,
            "x-goog-message-number": str(channel.messages),
        }
        if channel.token is not None:
            headers["x-goog-channel-token"] = channel.token
        self.outbox.append(Message(channel.address, headers))

    def take_messages(self) -> list[Message]:
        """The notifications queued since the last call, oldest first."""
        taken, self.outbox = self.outbox, []
        return taken

    def restrict(self, **restrictions: bool | None) -> None:
        """Change the shared drive's own restrictions (``domainUsersOnly`` …): the feed logs
        a change of the drive, not of its files."""
        self.restrictions.update(restrictions)
        self._changed(DRIVE, DRIVE)

    def add_folder(self, file_id: str, parent: str = DRIVE, *, owner: str | None = None) -> None:
        parent = MY_ROOT if owner is not None and parent == DRIVE else parent
        folder = File(file_id, file_id, parent, mime=FOLDER, owner=owner)
        if owner is not None:
            folder.permissions = [self._permission(file_id, {**_user(owner), "role": "owner"})]
        self.files[file_id] = folder
        self._changed(file_id)

    def add_file(
        self,
        file_id: str,
        text: str,
        parent: str = DRIVE,
        *,
        mime: str = "text/plain",
        owner: str | None = None,
    ) -> None:
        """A file in the shared drive, or (``owner``) in that user's My Drive, owned by them."""
        suffix = ".txt" if mime == "text/plain" else ""
        parent = MY_ROOT if owner is not None and parent == DRIVE else parent
        item = File(file_id, f"{file_id}{suffix}", parent, mime=mime, text=text, owner=owner)
        if owner is not None:
            item.permissions = [self._permission(file_id, {**_user(owner), "role": "owner"})]
        self.files[file_id] = item
        self._changed(file_id)

    def edit(self, file_id: str, text: str) -> None:
        self.files[file_id].text = text
        self.files[file_id].edits += 1
        self._changed(file_id)

    def move(self, file_id: str, parent: str) -> None:
        self.files[file_id].parent = parent
        self._changed(file_id)

    def trash(self, file_id: str) -> None:
        """Trash a file or a folder; a folder's descendants go with it, unlogged."""
        self.files[file_id].trashed = True
        self._changed(file_id)

    def purge(self, file_id: str) -> None:
        """Delete for ever: the change log says ``removed``."""
        scope = self.files.pop(file_id).scope
        self._changed(file_id, scope)

    def limit(self, file_id: str, limited: bool = True) -> None:
        """Disable (or re-enable) inherited permissions: a limited-access item."""
        self.files[file_id].limited = limited
        self._changed(file_id)

    def share(self, file_id: str, *permissions: dict[str, Any]) -> None:
        """Replace the file's own permissions (a change in the feed, as on Drive); an owner
        entry of a My Drive file is kept."""
        item = self.files[file_id]
        kept = [p for p in item.permissions if p.get("role") == "owner" and item.owner]
        item.permissions = kept + [self._permission(file_id, p) for p in permissions]
        self._changed(file_id)

    def _permission(self, file_id: str, permission: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "drive#permission", "id": _grantee_id(permission), **permission}

    def revoke_tokens(self) -> None:
        self._tokens.clear()

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return _error_body(status, reason)

    # ------------------------------------------------------------------ json shapes

    def _ancestors(self, item: File) -> list[File]:
        out: list[File] = []
        parent = self.files.get(item.parent)
        while parent is not None and parent not in out:
            out.append(parent)
            parent = self.files.get(parent.parent)
        return out

    def _trashed(self, item: File) -> bool:
        return item.trashed or any(a.trashed for a in self._ancestors(item))

    def _json(self, item: File, subject: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "drive#file",
            "id": item.id,
            "name": item.name,
            "mimeType": item.mime,
            "parents": [item.parent],
            "trashed": self._trashed(item),
            "explicitlyTrashed": item.trashed,
            "inheritedPermissionsDisabled": item.limited,
            "createdTime": "2025-01-01T00:00:00.000Z",
            "modifiedTime": f"2025-01-02T00:00:{item.edits:02d}.000Z",
            "webViewLink": f"https://drive.google.com/file/d/{item.id}/view",
            "version": str(len(self.log)),  # moves with every change, sharing included
        }
        if item.owner is None:
            out["driveId"] = DRIVE
        else:
            out["ownedByMe"] = item.owner == subject
            out["owners"] = [{"kind": "drive#user", "emailAddress": item.owner}]
        if item.mime != FOLDER and not item.mime.startswith("application/vnd.google-apps"):
            out["md5Checksum"] = hashlib.md5(item.text.encode()).hexdigest()
            out["size"] = str(len(item.text.encode()))
        return {k: v for k, v in out.items() if k not in self.withheld}

    def _effective(self, item: File) -> list[dict[str, Any]]:
        """One permission per grantee with a details row per source of it, as Drive lists
        them: the item's own, each ancestor folder's, the shared drive's members'."""
        shared = item.owner is None
        sources: list[tuple[list[dict[str, Any]], str, str | None]] = [
            (item.permissions, "file", None)
        ]
        sources += [(a.permissions, "file", a.id) for a in self._ancestors(item)]
        if shared:
            sources.append((self.members, "member", DRIVE))
        merged: dict[str, dict[str, Any]] = {}
        for permissions, kind, origin in sources:
            for permission in permissions:
                row: dict[str, Any] = {
                    "permissionType": kind,
                    "role": permission.get("role"),
                    "inherited": origin is not None,
                }
                if origin is not None and shared:
                    row["inheritedFrom"] = origin
                key = _grantee_id(permission)
                if key not in merged:
                    merged[key] = {
                        "kind": "drive#permission",
                        **permission,
                        "id": key,
                        "permissionDetails": [],
                        "inheritedPermissionsDisabled": item.limited,
                    }
                entry = merged[key]
                entry["permissionDetails"].append(row)
                entry["role"] = max(
                    (r["role"] for r in entry["permissionDetails"]), key=_rank, default=None
                )
        return [{k: v for k, v in p.items() if k not in self.withheld} for p in merged.values()]

    # ------------------------------------------------------------------ routing

    def _page(
        self,
        values: list[Any],
        key: str,
        query: dict[str, str],
        resource: str | None = None,
        **last: Any,
    ) -> Reply:
        start = int(query.get("pageToken", "0") or "0")
        page = values[start : start + self.page_size]
        body: dict[str, Any] = {key: page} if page or key != "members" else {}
        if start + self.page_size < len(values):
            body["nextPageToken"] = str(start + self.page_size)
        else:
            body.update(last)
        return self._fielded(body, query, {key: resource} if resource else {})

    def _fielded(
        self, body: dict[str, Any], query: dict[str, str], defaults: dict[str, str]
    ) -> Reply:
        """``body`` as partial response selects it: ``fields``, else Google's defaults."""
        spec = query.get("fields")
        if spec is not None:
            return json_reply(select(body, parse_fields(spec)))
        for key, resource in defaults.items():
            default = parse_fields(_DEFAULT_FIELDS[resource])
            if key == "":
                return json_reply(select(body, default))
            if key in body:
                body = {**body, key: select(body[key], default)}
        return json_reply(body)

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        if request.method == "POST" and path == "/token":
            return self._token(request)
        if path == METADATA_PATH:
            return self._metadata_token(request)
        if path.startswith("/iam/v1/"):
            return self._sign_jwt(request, unquote(path))
        granted = self._tokens.get(request.headers.get("authorization", "").removeprefix("Bearer "))
        if granted is None:
            return _error(401, "authError", "Invalid Credentials")
        subject, scopes = granted
        if path == "/drive/v3/channels/stop":  # channels.stop takes no supportsAllDrives
            return self._stop(request)
        if path.startswith("/admin/directory/v1/groups/"):
            if GROUPS_SCOPE not in scopes.split():
                return _error(403, "insufficientPermissions", "Insufficient Permission")
            if subject != SUBJECT or self.directory_refused:
                return _error(403, "forbidden", _NOT_AUTHORIZED)
            return self._group(unquote(path.split("/")[5]), query)
        if DRIVE_SCOPE not in scopes.split():
            return _error(403, "insufficientPermissions", "Insufficient Permission")
        if path == f"/drive/v3/drives/{DRIVE}":  # drives.get: no supportsAllDrives
            body = {
                "kind": "drive#drive",
                "id": DRIVE,
                "name": "Shared",
                "restrictions": {
                    k: v
                    for k, v in {
                        "adminManagedRestrictions": False,
                        "copyRequiresWriterPermission": False,
                        "domainUsersOnly": False,
                        "driveMembersOnly": False,
                        "sharingFoldersRequiresOrganizerPermission": False,
                        **self.restrictions,
                    }.items()
                    if v is not None
                },
            }
            return self._fielded(body, query, {})
        if query.get("supportsAllDrives") != "true" and not path.endswith("/export"):
            return _error(404, "notFound")  # files.export takes no supportsAllDrives
        return self._drive(request, path.removeprefix("/drive/v3"), query, subject)

    def _token(self, request: RecordedRequest) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        try:
            claims = jwt.decode(
                form.get("assertion", ""),
                _KEY.public_key(),
                algorithms=["RS256"],
                audience=self.token_url,
                issuer=CLIENT_EMAIL,
            )
        except jwt.PyJWTError:
            return json_reply({"error": "invalid_grant"}, status=400)
        scopes = str(claims.get("scope", "")).split()
        if (
            form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer"
            or claims.get("sub") not in self.users | {SUBJECT}
            or not scopes
            or not set(scopes) <= _DELEGATED
        ):
            return json_reply({"error": "unauthorized_client"}, status=401)
        self.issued += 1
        token = f"ya29.token-{self.issued}"
        self._tokens[token] = (str(claims["sub"]), " ".join(scopes))
        return json_reply({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _metadata_token(self, request: RecordedRequest) -> Reply:
        if request.method != "GET" or request.headers.get("metadata-flavor") != "Google":
            return Reply(status=403, body=b"Missing Metadata-Flavor:Google header.")
        token = f"ya29.ambient-{len(self._ambient) + 1}"
        self._ambient.add(token)
        return json_reply({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _sign_jwt(self, request: RecordedRequest, path: str) -> Reply:
        name, _, method = path.removeprefix("/iam/v1/").partition(":")
        if request.method != "POST" or method != "signJwt":
            return _error(404, "notFound")
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self._ambient:
            return _error(401, "UNAUTHENTICATED", "Request had invalid authentication")
        if name != f"projects/-/serviceAccounts/{CLIENT_EMAIL}":
            return _error(
                403, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.signJwt' denied"
            )
        body = request.json
        try:
            claims = json.loads(body["payload"])
            if not isinstance(claims, dict) or set(body) - {"payload", "delegates"}:
                raise ValueError
        except (TypeError, KeyError, ValueError):
            return _error(400, "INVALID_ARGUMENT", "Invalid JWT payload")
        if not isinstance(claims.get("exp"), int) or claims["exp"] > time.time() + 12 * 3600:
            return _error(400, "INVALID_ARGUMENT", "Invalid JWT payload: exp")
        self.sign_requests.append(claims)
        signed = jwt.encode(claims, _KEY, algorithm="RS256", headers={"kid": "kid-1"})
        return json_reply({"keyId": "kid-1", "signedJwt": signed})

    def _drive(
        self, request: RecordedRequest, path: str, query: dict[str, str], subject: str
    ) -> Reply:
        scope = query.get("driveId") or subject
        if scope not in (DRIVE, subject) or (scope == DRIVE and subject != SUBJECT):
            return _error(404, "notFound", f"Shared drive not found: {scope}")
        if path == "/changes/startPageToken":
            body = {"kind": "drive#startPageToken", "startPageToken": str(len(self.log))}
            return self._fielded(body, query, {})
        if path == "/changes/watch" and request.method == "POST":
            return self._watch(request, query, scope)
        if path == "/changes":
            return self._changes(query, scope, subject)
        if path == "/files":
            return self._list(query, scope, subject)
        file_id, _, tail = path.removeprefix("/files/").partition("/")
        item = self.files.get(file_id)
        if not path.startswith("/files/") or item is None or not self._visible(item, subject):
            return _error(404, "notFound", f"File not found: {file_id}.")
        if tail == "permissions":
            return self._page(self._effective(item), "permissions", query, "permission")
        if tail == "export":
            if item.mime != GOOGLE_DOC or query.get("mimeType") != DOCX:
                return _error(400, "badRequest")
            if item.too_large:
                return _error(
                    403, "exportSizeLimitExceeded", "This file is too large to be exported."
                )
            document = docx.Document()
            document.add_paragraph(item.text)
            out = io.BytesIO()
            document.save(out)
            return Reply(body=out.getvalue(), content_type=DOCX)
        if query.get("alt") == "media":
            if item.mime.startswith("application/vnd.google-apps"):
                return _error(403, "fileNotDownloadable")
            return Reply(body=item.text.encode(), content_type=item.mime)
        return self._fielded(self._json(item, subject), query, {"": "file"})

    def _visible(self, item: File, subject: str) -> bool:
        """Whether ``subject`` sees the item: a member sees the shared drive, a user their
        own My Drive and what is shared with them directly."""
        if item.owner is None:
            return subject == SUBJECT
        return item.owner == subject or any(
            p.get("emailAddress") == subject for p in item.permissions
        )

    def _list(self, query: dict[str, str], scope: str, subject: str) -> Reply:
        corpora = query.get("corpora")
        if (scope == DRIVE) != (corpora == "drive") or corpora not in ("drive", "user"):
            return _error(400, "invalid", "Invalid value for corpora")
        listed = [f for f in self.files.values() if self._visible(f, subject)]
        listed = [f for f in listed if (f.owner is None) == (scope == DRIVE)]
        for clause in filter(None, (c.strip() for c in query.get("q", "").split(" and "))):
            if clause == "trashed = false":
                listed = [f for f in listed if not self._trashed(f)]
            elif clause == "'me' in owners":
                listed = [f for f in listed if f.owner == subject]
            elif clause.endswith(" in parents") and clause.count("'") == 2:
                parent = clause.split("'")[1]
                listed = [f for f in listed if f.parent == parent]
            else:
                return _error(400, "invalid", f"Invalid Value: {clause}")
        files = [self._json(f, subject) for f in listed]
        return self._page(files, "files", query, "file")

    def _changes(self, query: dict[str, str], scope: str, subject: str) -> Reply:
        token = query.get("pageToken", "")
        if not token.isdigit() or int(token) < self.expired_before:
            return _error(400, "invalid", "Invalid Value: pageToken")
        start = int(token)
        page = self.log[start : start + self.page_size]
        changes = []
        for file_id, where in page:
            if where != scope:
                continue
            if file_id == DRIVE:
                changes.append(
                    {
                        "kind": "drive#change",
                        "changeType": "drive",
                        "driveId": DRIVE,
                        "drive": {"kind": "drive#drive", "id": DRIVE, "name": "Shared"},
                    }
                )
                continue
            item = self.files.get(file_id)
            change: dict[str, Any] = {"kind": "drive#change", "changeType": "file"}
            change.update(fileId=file_id, removed=item is None)
            if scope == DRIVE:
                change["driveId"] = DRIVE
            if item is not None:
                change["file"] = self._json(item, subject)
            changes.append(change)
        body: dict[str, Any] = {"kind": "drive#changeList", "changes": changes}
        if start + self.page_size < len(self.log):
            body["nextPageToken"] = str(start + self.page_size)
        else:
            body["newStartPageToken"] = str(len(self.log))
        return self._fielded(body, query, {"changes": "file"})

    def _watch(self, request: RecordedRequest, query: dict[str, str], scope: str) -> Reply:
        token = query.get("pageToken", "")
        if not token.isdigit() or int(token) < self.expired_before:
            return _error(400, "invalid", "Invalid Value: pageToken")
        body = request.json
        if not isinstance(body, dict):
            return _error(400, "parseError", "Parse Error")
        channel_id, address, secret = body.get("id"), body.get("address"), body.get("token")
        if not isinstance(channel_id, str) or not 0 < len(channel_id) <= 64:
            return _error(400, "required", "Required: id")
        if channel_id in self.channels:
            return _error(400, "channelIdNotUnique", "Channel id not unique")
        if body.get("type") not in ("web_hook", "webhook"):
            return _error(400, "invalid", "Invalid value for: type")
        if not isinstance(address, str) or not address.startswith("https://"):
            return _error(
                400, "push.webhookUrlNotHttps", f"WebHook callback must be HTTPS: {address}"
            )
        if secret is not None and (not isinstance(secret, str) or len(secret) > 256):
            return _error(400, "invalid", "Invalid value for: token")
        now_ms = int(time.time() * 1000)
        expiration = body.get("expiration", now_ms + CHANNEL_DEFAULT_MS)
        if isinstance(expiration, str) and expiration.isdigit():
            expiration = int(expiration)
        if not isinstance(expiration, int) or isinstance(expiration, bool):
            return _error(400, "invalid", "Invalid value for: expiration")
        if not now_ms < expiration <= now_ms + CHANNEL_MAX_MS:
            return _error(400, "invalid", "Invalid expiration: at most a week ahead")
        resource_id = f"o3hgv{next(self._resource_ids):06d}sdjfh"
        channel = Channel(channel_id, resource_id, address, secret, expiration, scope)
        self.channels[channel_id] = channel
        self._notify(channel, "sync")
        made = {
            "kind": "api#channel",
            "id": channel_id,
            "resourceId": resource_id,
            "resourceUri": channel.uri,
            "expiration": str(expiration),
        }
        if secret is not None:
            made["token"] = secret
        return json_reply(made)

    def _stop(self, request: RecordedRequest) -> Reply:
        body = request.json
        if request.method != "POST" or not isinstance(body, dict):
            return _error(400, "parseError", "Parse Error")
        channel = self.channels.get(str(body.get("id")))
        if channel is None or channel.stopped or channel.resource_id != body.get("resourceId"):
            return _error(404, "notFound", f"Channel '{body.get('id')}' not found")
        channel.stopped = True
        return Reply(status=204, body=b"")

    def _group(self, email: str, query: dict[str, str]) -> Reply:
        if email in self.external_groups:
            return _error(403, "forbidden", _NOT_AUTHORIZED)
        if email not in self.groups:
            return _error(404, "notFound", "Resource Not Found: groupKey")
        members = [
            {
                "kind": "admin#directory#member",
                "email": m,
                "role": "MEMBER",
                "type": "GROUP" if m in self.groups or m in self.external_groups else "USER",
                "status": "ACTIVE",
            }
            for m in sorted(self.groups[email])
        ]
        return self._page(members, "members", query)


def _user(email: str) -> dict[str, Any]:
    return {"type": "user", "emailAddress": email}


def _grantee_id(permission: dict[str, Any]) -> str:
    """Drive's permission id names the grantee, whichever item the permission is on."""
    kind = permission.get("type")
    if kind == "anyone":
        return "anyoneWithLink"
    address = permission.get("emailAddress") or permission.get("domain") or ""
    digest = hashlib.sha256(f"{kind}:{address}".lower().encode()).hexdigest()[:20]
    return f"{kind}-{digest}"


def _rank(role: Any) -> int:
    return _ROLES.index(role) if role in _ROLES else len(_ROLES)
