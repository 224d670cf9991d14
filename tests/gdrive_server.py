"""A fake Google Drive (v3) and Admin SDK Directory on 127.0.0.1: the subset the ``gdrive``
connector uses, no more.

* ``POST /token`` — the JWT-bearer grant: the assertion must be an RS256 JWT signed by the
  service account's key, for this audience, acting as :data:`SUBJECT`; every other call must
  carry a token it issued (401 otherwise; :meth:`FakeDrive.revoke_tokens` voids them).
* ``GET /drive/v3/changes/startPageToken`` and ``GET /drive/v3/changes`` — the shared drive's
  change log, :attr:`FakeDrive.page_size` changes a page, ``nextPageToken`` then
  ``newStartPageToken``; a token older than :attr:`FakeDrive.expired_before` is refused
  (400 ``invalid``), as a rejected token is.
* ``GET /drive/v3/files`` (``corpora=drive``, ``q=trashed = false``, paged),
  ``GET /drive/v3/files/{id}`` (metadata, or the bytes with ``alt=media``),
  ``GET /drive/v3/files/{id}/export`` (a Google Doc as a real docx).
* ``GET /drive/v3/files/{id}/permissions`` — the file's own permissions and every
  ancestor folder's, inherited ones with ``permissionDetails``, then the drive's members.
* ``GET /admin/directory/v1/groups/{email}/members`` — direct members (``USER`` or
  ``GROUP``), paged; no ``members`` key for an empty group, as the API answers.

Shared-drive calls without ``supportsAllDrives=true`` answer 404, as Drive does (except
``files.export``, which has no such parameter). Tests change
the drive between syncs (:meth:`add_file`, :meth:`move`, :meth:`share`, :meth:`trash` …) and
script faults on matching paths (:meth:`fault`: a 429 with ``Retry-After``, Google's 403
``rateLimitExceeded``, a 5xx, every request after the first n).
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from dataclasses import dataclass, field
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
SUBJECT = "sync-admin@example.com"
CLIENT_EMAIL = "clearance-sync@project.iam.gserviceaccount.com"
FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
GROUPS_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.member.readonly"

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


def _error_body(status: int, reason: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": reason, "errors": [{"reason": reason}]}}


def _error(status: int, reason: str) -> Reply:
    return json_reply(_error_body(status, reason), status=status)


class FakeDrive(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2
    fault_reason = "backendError"

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.files: dict[str, File] = {}
        self.members: list[dict[str, Any]] = []  # the shared drive's own members
        self.groups: dict[str, set[str]] = {}  # group email -> member emails
        self.log: list[str] = []  # file ids, one entry per change; a token is a position
        self.expired_before = 0
        self.faults: list[Fault] = []
        self._tokens: dict[str, str] = {}  # token -> the scopes it was granted
        self.issued = 0
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

    # ------------------------------------------------------------------ the drive

    def _changed(self, file_id: str) -> None:
        self.log.append(file_id)

    def add_folder(self, file_id: str, parent: str = DRIVE) -> None:
        self.files[file_id] = File(file_id, file_id, parent, mime=FOLDER)
        self._changed(file_id)

    def add_file(
        self, file_id: str, text: str, parent: str = DRIVE, *, mime: str = "text/plain"
    ) -> None:
        suffix = ".txt" if mime == "text/plain" else ""
        self.files[file_id] = File(file_id, f"{file_id}{suffix}", parent, mime=mime, text=text)
        self._changed(file_id)

    def edit(self, file_id: str, text: str) -> None:
        self.files[file_id].text = text
        self.files[file_id].edits += 1
        self._changed(file_id)

    def move(self, file_id: str, parent: str) -> None:
        self.files[file_id].parent = parent
        self._changed(file_id)

    def trash(self, file_id: str) -> None:
        self.files[file_id].trashed = True
        self._changed(file_id)

    def purge(self, file_id: str) -> None:
        """Delete for ever: the change log says ``removed``."""
        del self.files[file_id]
        self._changed(file_id)

    def share(self, file_id: str, *permissions: dict[str, Any]) -> None:
        """Replace the file's own permissions (a change in the feed, as on Drive)."""
        self.files[file_id].permissions = [
            {"kind": "drive#permission", "id": f"{file_id}-p{n}", **p}
            for n, p in enumerate(permissions, start=1)
        ]
        self._changed(file_id)

    def revoke_tokens(self) -> None:
        self._tokens.clear()

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return _error_body(status, reason)

    # ------------------------------------------------------------------ json shapes

    def _json(self, item: File) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "drive#file",
            "id": item.id,
            "name": item.name,
            "mimeType": item.mime,
            "driveId": DRIVE,
            "parents": [item.parent],
            "trashed": item.trashed,
            "createdTime": "2025-01-01T00:00:00.000Z",
            "modifiedTime": f"2025-01-02T00:00:{item.edits:02d}.000Z",
            "webViewLink": f"https://drive.google.com/file/d/{item.id}/view",
            "version": str(len(self.log)),  # moves with every change, sharing included
        }
        if item.mime != FOLDER and not item.mime.startswith("application/vnd.google-apps"):
            out["md5Checksum"] = hashlib.md5(item.text.encode()).hexdigest()
            out["size"] = str(len(item.text.encode()))
        return out

    def _effective(self, item: File) -> list[dict[str, Any]]:
        out = list(item.permissions)
        parent = self.files.get(item.parent)
        while parent is not None:
            details = [{"permissionType": "file", "inherited": True, "inheritedFrom": parent.id}]
            out += [{**p, "permissionDetails": details} for p in parent.permissions]
            parent = self.files.get(parent.parent)
        member = [{"permissionType": "member", "inherited": True, "inheritedFrom": DRIVE}]
        out += [{**m, "permissionDetails": member} for m in self.members]
        return out

    # ------------------------------------------------------------------ routing

    def _page(self, values: list[Any], key: str, query: dict[str, str], **last: Any) -> Reply:
        start = int(query.get("pageToken", "0") or "0")
        page = values[start : start + self.page_size]
        body: dict[str, Any] = {key: page} if page or key != "members" else {}
        if start + self.page_size < len(values):
            body["nextPageToken"] = str(start + self.page_size)
        else:
            body.update(last)
        return json_reply(body)

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        if request.method == "POST" and path == "/token":
            return self._token(request)
        scopes = self._tokens.get(request.headers.get("authorization", "").removeprefix("Bearer "))
        if scopes is None:
            return _error(401, "authError")
        if path.startswith("/admin/directory/v1/groups/"):
            if GROUPS_SCOPE not in scopes.split():
                return _error(403, "insufficientPermissions")
            return self._group(unquote(path.split("/")[5]), query)
        if query.get("supportsAllDrives") != "true" and not path.endswith("/export"):
            return _error(404, "notFound")  # files.export takes no supportsAllDrives
        return self._drive(path.removeprefix("/drive/v3"), query)

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
        if (
            form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer"
            or claims.get("sub") != SUBJECT
            or "https://www.googleapis.com/auth/drive.readonly" not in claims["scope"].split()
        ):
            return json_reply({"error": "unauthorized_client"}, status=401)
        self.issued += 1
        token = f"ya29.token-{self.issued}"
        self._tokens[token] = claims["scope"]
        return json_reply({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _drive(self, path: str, query: dict[str, str]) -> Reply:
        if path == "/changes/startPageToken":
            if query.get("driveId") != DRIVE:
                return _error(404, "notFound")
            return json_reply(
                {"kind": "drive#startPageToken", "startPageToken": str(len(self.log))}
            )
        if path == "/changes":
            return self._changes(query)
        if path == "/files":
            if query.get("driveId") != DRIVE or query.get("corpora") != "drive":
                return _error(400, "invalid")
            listed = [self._json(f) for f in self.files.values() if not f.trashed]
            return self._page(listed, "files", query)
        file_id, _, tail = path.removeprefix("/files/").partition("/")
        item = self.files.get(file_id)
        if not path.startswith("/files/") or item is None:
            return _error(404, "notFound")
        if tail == "permissions":
            return self._page(self._effective(item), "permissions", query)
        if tail == "export":
            if item.mime != GOOGLE_DOC or query.get("mimeType") != DOCX:
                return _error(400, "badRequest")
            document = docx.Document()
            document.add_paragraph(item.text)
            out = io.BytesIO()
            document.save(out)
            return Reply(body=out.getvalue(), content_type=DOCX)
        if query.get("alt") == "media":
            if item.mime.startswith("application/vnd.google-apps"):
                return _error(403, "fileNotDownloadable")
            return Reply(body=item.text.encode(), content_type=item.mime)
        return json_reply(self._json(item))

    def _changes(self, query: dict[str, str]) -> Reply:
        token = query.get("pageToken", "")
        if not token.isdigit() or int(token) < self.expired_before or query.get("driveId") != DRIVE:
            return _error(400, "invalid")
        start = int(token)
        page = self.log[start : start + self.page_size]
        changes = []
        for file_id in page:
            item = self.files.get(file_id)
            change: dict[str, Any] = {"kind": "drive#change", "changeType": "file"}
            change.update(fileId=file_id, removed=item is None, driveId=DRIVE)
            if item is not None:
                change["file"] = self._json(item)
            changes.append(change)
        body: dict[str, Any] = {"kind": "drive#changeList", "changes": changes}
        if start + self.page_size < len(self.log):
            body["nextPageToken"] = str(start + self.page_size)
        else:
            body["newStartPageToken"] = str(len(self.log))
        return json_reply(body)

    def _group(self, email: str, query: dict[str, str]) -> Reply:
        if email not in self.groups:
            return _error(404, "notFound")
        members = [
            {
                "kind": "admin#directory#member",
                "email": m,
                "role": "MEMBER",
                "type": "GROUP" if m in self.groups else "USER",
                "status": "ACTIVE",
            }
            for m in sorted(self.groups[email])
        ]
        return self._page(members, "members", query)
