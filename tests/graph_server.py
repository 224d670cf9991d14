"""A fake Microsoft Graph on 127.0.0.1: the subset the ``graph`` connector uses, no more.

* ``POST /{tenant}/oauth2/v2.0/token`` — client credentials, the app proving itself with its
  client secret or a client assertion (``client_assertion_type`` jwt-bearer): one signed with
  a certificate registered on the app (:meth:`FakeGraph.register_certificate`; ``RS256`` or
  ``PS256``, ``x5t#S256`` or ``x5t``; signature, ``aud`` = this endpoint, ``iss`` = ``sub``
  = the client id, ``exp``/``nbf`` and an unused ``jti`` checked), or a federated token
  matching a federated identity credential (:meth:`FakeGraph.federate`: its issuer's key,
  subject and the audience ``api://AzureADTokenExchange``). Refusals are Entra's
  ``invalid_client`` with an ``AADSTS`` code. A token is issued for one resource (the
  ``scope``'s host) and is refused by the other; every call must carry a token it issued
  (401 otherwise; :meth:`FakeGraph.revoke_tokens` makes the issued ones invalid, as a
  revoked token is).
* ``GET /v1.0/drives/{drive}/root/delta`` — enumeration without a token, changes since a
  token with one (deleted items as ``{"id", "deleted": {}}``), ``@odata.nextLink`` every
  :attr:`FakeGraph.page_size` items, ``@odata.deltaLink`` last; a token older than
  :attr:`FakeGraph.expired_before` is answered ``410 Gone`` (``resyncRequired``). As on
  OneDrive for Business, delta items carry no ``cTag``.
* ``GET /v1.0/drives/{drive}/root/delta`` with ``Prefer: deltashowsharingchanges`` (refused
  with 400 without ``deltashowremovedasdeleted`` and ``deltatraversepermissiongaps``, which
  Graph requires with it) also lists items whose own sharing changed (:meth:`share`), files
  marked ``"@microsoft.graph.sharedChanged": "True"`` and folders not (as Graph is observed
  to do); a folder's sharing change is reported on the folder alone, as with
  ``hierarchicalsharing``. Changes since a token come with their ancestors up to the root,
  as Graph lists them; ``token=latest`` answers no items and the present ``@odata.deltaLink``.
* ``GET /v1.0/drives/{drive}/items/{id}/children`` — the folder's items, paged.
* ``POST /v1.0/subscriptions`` — a subscription on ``/drives/{drive}/root`` (``changeType``
  ``updated`` only, ``clientState`` of at most 128 characters, an expiration in the future
  and at most 42300 minutes away), created only after the validation handshake: Graph POSTs
  ``?validationToken=…`` to ``notificationUrl`` (and ``lifecycleNotificationUrl``) and wants
  ``200`` ``text/plain`` with the token within 10 s, else answers 400; ``PATCH`` and
  ``DELETE /v1.0/subscriptions/{id}`` renew (``expirationDateTime`` alone) and delete it, 404
  for one it does not have (:meth:`drop_subscription`). Every change of the drive POSTs a
  change notification to each subscription (``delivered`` records the answers);
  :meth:`lifecycle` sends a lifecycle event.
* ``GET /v1.0/drives/{drive}/items/{id}`` — the item with its ``@microsoft.graph.downloadUrl``
  (``/download/{id}``, pre-authenticated: it needs no token, and records whether one came).
* ``GET /v1.0/drives/{drive}/items/{id}/permissions`` — the item's own permissions and, unless
  it breaks inheritance, every ancestor's (with ``inheritedFrom``), paged.
* ``GET /v1.0/groups/{id}/transitiveMembers`` — users of the group and of groups nested in
  it, and the nested groups themselves, paged; ``GET /v1.0/users/{id or upn}`` — with
  ``accountEnabled``, both honouring ``$select``; a user that does not exist (never did, or
  deleted) is ``404 Request_ResourceNotFound``.
* SharePoint's REST API on the site :attr:`FakeGraph.site_url` (host ``localhost``, so its
  token is for another resource than Graph's): ``GET /sites/finance/_api/web/sitegroups/
  GetById(n)/users`` (``odata=nometadata``: ``value``, paged by ``odata.nextLink``), the
  members as SharePoint has them — users by their claims login name, Entra groups as
  ``c:0t.c|tenant|<id>``; an unknown group is 404. As SharePoint Online does, it refuses an
  app-only token obtained with a client secret (401, "Unsupported app only token.").

Tests change the drive between syncs (:meth:`add_file`, :meth:`move`, :meth:`share`,
:meth:`remove_member`, :meth:`delete` …) and script faults on matching paths
(:meth:`fault`: a 429 with ``Retry-After``, a 5xx, every request after the first n).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Self
from urllib.parse import parse_qs, quote, unquote, urlencode

import httpx
import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)

from loopback_server import (
    FakeService,
    Fault,
    RecordedRequest,
    Reply,
    ScriptedServer,
    _Handler,
    json_reply,
)

TENANT = "contoso"
DRIVE = "b!drive1"
CLIENT_ID = "app-1"
CLIENT_SECRET = "s3cret-client-value"
USER = "#microsoft.graph.user"
GROUP = "#microsoft.graph.group"
SITE = "/sites/finance"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"  # what a federated token must be issued for
FEDERATED_ISSUER = "https://oidc.cluster.example"
FEDERATED_SUBJECT = "system:serviceaccount:clearance:indexer"
RESOURCE = f"/drives/{DRIVE}/root"
MAX_SUBSCRIPTION = timedelta(minutes=42300)  # the longest a driveItem subscription may last
SHARING_PREFER = ("deltashowremovedasdeleted", "deltatraversepermissiongaps")


@cache
def rsa_key(name: str) -> rsa.RSAPrivateKey:
    """A 2048-bit RSA key per ``name`` (made once per test run)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@cache
def certificate(name: str, key: str | None = None) -> x509.Certificate:
    """A self-signed certificate named ``name`` for the key named ``key`` (default: same),
    the same one every time."""
    private = rsa_key(key or name)
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .sign(private, hashes.SHA256())
    )


def certificate_pem(name: str) -> bytes:
    """A PEM holding the private key named ``name`` and its certificate, as an app
    registration's certificate credential is usually kept."""
    key = rsa_key(name).private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    return key + certificate(name).public_bytes(Encoding.PEM)


def federated_token(*, subject: str = FEDERATED_SUBJECT, lifetime_s: int = 3600) -> str:
    """A token the federated issuer (a cluster, say) would write to the token file."""
    now = int(time.time())
    claims = {
        "iss": FEDERATED_ISSUER,
        "sub": subject,
        "aud": EXCHANGE_AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + lifetime_s,
    }
    return jwt.encode(claims, rsa_key("cluster-issuer"), algorithm="RS256", headers={"kid": "k1"})


def _thumbprints(cert: x509.Certificate) -> tuple[str, str]:
    """``(x5t#S256, x5t)`` of ``cert``: base64url SHA-256 and SHA-1 of its DER encoding."""
    der = cert.public_bytes(Encoding.DER)
    return tuple(  # type: ignore[return-value]
        base64.urlsafe_b64encode(hashlib.new(h, der).digest()).rstrip(b"=").decode()
        for h in ("sha256", "sha1")
    )


class _GraphHandler(_Handler):
    """Graph renews subscriptions with PATCH and deletes them with DELETE."""

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()


@dataclass
class Item:
    id: str
    name: str
    parent: str | None
    folder: bool = False
    text: str = ""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    inherits: bool = True
    edits: int = 0
    deleted: bool = False
    seq: int = 0
    shared_seq: int = 0  # when its own sharing last changed


class FakeGraph(FakeService, ScriptedServer[RecordedRequest]):
    page_size = 2

    def __init__(self) -> None:
        super().__init__(RecordedRequest, self._route)
        self.items: dict[str, Item] = {"root": Item("root", "root", None, folder=True)}
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, set[str]] = {}  # group id -> member user and group ids
        self.site_groups: dict[int, list[str]] = {}  # SharePoint group -> login names
        self.certificates: list[x509.Certificate] = []
        self.federated: dict[str, tuple[str, rsa.RSAPublicKey]] = {}  # issuer -> subject, key
        self.assertions: list[str] = []  # client assertions received, in order
        self._jtis: set[str] = set()
        self.seq = 0
        self.expired_before = 0
        self.faults: list[Fault] = []
        self._tokens: dict[str, tuple[str, str]] = {}  # token -> (resource, credential)
        self.issued = 0
        self.downloads: list[RecordedRequest] = []
        self.foreign_next_link: str | None = None  # a hostile or broken delta next link
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.validations: list[tuple[str, int, str]] = []  # url, status, whether echoed
        self.delivered: list[tuple[str, int]] = []  # subscription id, status answered
        self._mutex = threading.Lock()

    def __enter__(self) -> Self:
        super().__enter__()
        assert self._httpd is not None
        self._httpd.RequestHandlerClass = _GraphHandler
        return self

    # ------------------------------------------------------------------ urls

    @property
    def graph_url(self) -> str:
        return self.url_for("/v1.0")

    @property
    def login_url(self) -> str:
        return self.url_for("")

    @property
    def token_url(self) -> str:
        return self.url_for(f"/{TENANT}/oauth2/v2.0/token")

    @property
    def site_url(self) -> str:
        return f"http://localhost:{self.port}{SITE}"

    @property
    def resources(self) -> dict[str, str]:
        """The resources a token can be issued for, by the scope's host."""
        return {self.url_for(""): "graph", f"http://localhost:{self.port}": "sharepoint"}

    # ------------------------------------------------------------------ the drive

    def _touch(self, item: Item) -> None:
        self.seq += 1
        item.seq = self.seq
        self._notify()

    def add_folder(self, item_id: str, parent: str = "root", *, inherits: bool = True) -> None:
        item = Item(item_id, item_id, parent, folder=True, inherits=inherits)
        self.items[item_id] = item
        self._touch(item)

    def add_file(self, item_id: str, text: str, parent: str = "root", name: str = "") -> None:
        item = Item(item_id, name or f"{item_id}.txt", parent, text=text)
        self.items[item_id] = item
        self._touch(item)

    def edit(self, item_id: str, text: str) -> None:
        item = self.items[item_id]
        item.text = text
        item.edits += 1
        self._touch(item)

    def move(self, item_id: str, parent: str) -> None:
        item = self.items[item_id]
        item.parent = parent
        self._touch(item)

    def delete(self, item_id: str) -> None:
        item = self.items[item_id]
        item.deleted = True
        self._touch(item)

    def share(self, item_id: str, *permissions: dict[str, Any], inherits: bool = True) -> None:
        """Replace the item's own permissions (a sharing change: the delta feed and the
        item's version are untouched, as on SharePoint)."""
        item = self.items[item_id]
        item.permissions = [
            {"id": f"{item_id}-p{n}", **p} for n, p in enumerate(permissions, start=1)
        ]
        item.inherits = inherits
        self.seq += 1
        item.shared_seq = self.seq
        self._notify()

    def add_user(self, user_id: str, upn: str, mail: str | None = None) -> None:
        self.users[user_id] = {
            "id": user_id,
            "accountEnabled": True,
            "userPrincipalName": upn,
            "mail": mail or upn,
        }

    def disable_user(self, user_id: str) -> None:
        self.users[user_id]["accountEnabled"] = False

    def delete_user(self, user_id: str) -> None:
        """Delete the user from Entra (soft-deleted users are not found at ``/users``)."""
        del self.users[user_id]

    def add_site_group(self, number: int, *members: str) -> None:
        """SharePoint group ``number`` of the site, with ``members``: Entra user ids (shown
        by their claims login name), Entra group ids, or login names as they are."""
        self.site_groups[number] = list(members)

    def register_certificate(self, cert: x509.Certificate) -> None:
        self.certificates.append(cert)

    def federate(self, subject: str = FEDERATED_SUBJECT) -> None:
        """Trust tokens of the federated issuer for ``subject`` (a federated identity
        credential on the app)."""
        self.federated[FEDERATED_ISSUER] = (subject, rsa_key("cluster-issuer").public_key())

    def remove_member(self, group_id: str, member_id: str) -> None:
        self.groups[group_id].discard(member_id)

    def revoke_tokens(self) -> None:
        self._tokens.clear()

    def drop_subscription(self, subscription_id: str) -> None:
        """Forget a subscription (expired, or removed by the service)."""
        del self.subscriptions[subscription_id]

    # ------------------------------------------------------------------ notifications

    def _post(self, subscription: dict[str, Any], entry: dict[str, Any], url_key: str) -> int:
        entry = {
            "subscriptionId": subscription["id"],
            "subscriptionExpirationDateTime": subscription["expirationDateTime"],
            "clientState": subscription.get("clientState"),
            "tenantId": "2a8ba9d4-0d86-4c3e-b4a3-8f9d2c6e1f10",
            **entry,
        }
        try:
            response = httpx.post(subscription[url_key], json={"value": [entry]}, timeout=10.0)
        except httpx.HTTPError:
            return 0
        return response.status_code

    def _notify(self) -> None:
        """A change notification to every subscription, as Graph sends one for a change
        anywhere beneath the subscribed root (it names no item)."""
        for subscription in list(self.subscriptions.values()):
            entry = {"changeType": "updated", "resource": subscription["resource"]}
            status = self._post(subscription, entry, "notificationUrl")
            self.delivered.append((subscription["id"], status))

    def lifecycle(self, subscription_id: str, event: str) -> int:
        """Send the lifecycle event ``event`` of a subscription; the status answered."""
        subscription = self.subscriptions[subscription_id]
        return self._post(subscription, {"lifecycleEvent": event}, "lifecycleNotificationUrl")

    def _validate(self, url: str) -> bool:
        """Graph's validation handshake with a notification endpoint."""
        token = f"Validation: Testing client application reachability {uuid.uuid4()}"
        try:
            response = httpx.post(
                url,
                params={"validationToken": token},
                headers={"Content-Type": "text/plain; charset=utf-8"},
                timeout=10.0,
            )
        except httpx.HTTPError:
            self.validations.append((url, 0, "unreachable"))
            return False
        echoed = (
            response.status_code == 200
            and response.headers.get("content-type", "").startswith("text/plain")
            and response.text == token
        )
        self.validations.append((url, response.status_code, "echoed" if echoed else "wrong"))
        return echoed

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        return {"error": {"code": "scripted", "message": reason}}

    # ------------------------------------------------------------------ json shapes

    def _path(self, item: Item) -> str:
        parts = []
        current: Item | None = item
        while current is not None and current.parent is not None:
            parts.append(current.name)
            current = self.items.get(current.parent)
        return "/".join(reversed(parts))

    def _json(self, item: Item, *, delta: bool) -> dict[str, Any]:
        if item.deleted:
            return {"id": item.id, "deleted": {"state": "deleted"}}
        out: dict[str, Any] = {
            "id": item.id,
            "name": item.name,
            "eTag": f'"{{{item.id}}},{item.seq}"',
            "createdDateTime": "2025-01-01T00:00:00Z",
            "lastModifiedDateTime": f"2025-01-02T00:00:{item.edits:02d}Z",
            "webUrl": f"https://contoso.example/sites/x/{quote(self._path(item))}",
            "size": len(item.text.encode()),
        }
        if item.parent is None:
            out["root"] = {}
        else:
            out["parentReference"] = {"driveId": DRIVE, "id": item.parent}
        if item.folder:
            out["folder"] = {"childCount": sum(i.parent == item.id for i in self.items.values())}
        else:
            digest = hashlib.sha1(item.text.encode()).hexdigest()
            out["file"] = {"mimeType": "text/plain", "hashes": {"quickXorHash": digest}}
            if not delta:
                out["cTag"] = f'"c:{{{item.id}}},{item.edits}"'
                out["@microsoft.graph.downloadUrl"] = self.url_for(
                    f"/download/{item.id}?tempauth=signed{item.edits}"
                )
        return out

    def _effective(self, item: Item) -> list[dict[str, Any]]:
        out = list(item.permissions)
        current = item
        while current.inherits and current.parent is not None:
            parent = self.items[current.parent]
            reference = {"driveId": DRIVE, "id": parent.id, "path": f"/drive/root:/{parent.id}"}
            out.extend({**p, "inheritedFrom": reference} for p in parent.permissions)
            current = parent
        return out

    def _members(self, group_id: str, seen: set[str], select: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for member in sorted(self.groups.get(group_id, ())):
            if member in self.groups and member not in seen:
                seen.add(member)
                out.append({"@odata.type": GROUP, "id": member})
                out.extend(self._members(member, seen, select))
            elif member in self.users:
                out.append({"@odata.type": USER, **_selected(self.users[member], select)})
        return out

    def _site_member(self, n: int, member: str) -> dict[str, Any]:
        """A member of a SharePoint group as ``/_api/web/sitegroups/GetById(n)/users``
        shows it."""
        common = {"Id": 10 + n, "IsHiddenInUI": False, "IsSiteAdmin": False, "Expiration": ""}
        user = self.users.get(member)
        if user is not None:
            upn = user["userPrincipalName"]
            return {
                **common,
                "LoginName": f"i:0#.f|membership|{upn}",
                "Title": upn,
                "PrincipalType": 1,
                "Email": user["mail"],
                "UserPrincipalName": upn,
                "UserId": {"NameId": user["id"], "NameIdIssuer": "urn:federation:microsoftonline"},
            }
        if member in self.groups:
            login = f"c:0t.c|tenant|{member}"
            return {**common, "LoginName": login, "Title": member, "PrincipalType": 4}
        return {**common, "LoginName": member, "Title": member, "PrincipalType": 1}

    # ------------------------------------------------------------------ routing

    def _page(
        self,
        values: list[Any],
        url: str,
        query: dict[str, str],
        next_key: str = "@odata.nextLink",
        **last: Any,
    ) -> Reply:
        skip = int(query.get("skip", "0"))
        page = values[skip : skip + self.page_size]
        body: dict[str, Any] = {"value": page}
        if skip + self.page_size < len(values):
            following = {**query, "skip": str(skip + self.page_size)}
            body[next_key] = f"{url}?{urlencode(following)}"
        else:
            body.update(last)
        return json_reply(body)

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        if request.method == "POST" and path == f"/{TENANT}/oauth2/v2.0/token":
            return self._token(request)
        if path.startswith("/download/"):
            self.downloads.append(request)
            item = self.items.get(path.removeprefix("/download/"))
            if item is None or item.deleted:
                return Reply(404)
            return Reply(body=item.text.encode(), content_type="text/plain")
        auth = request.headers.get("authorization", "")
        resource, credential = self._tokens.get(auth.removeprefix("Bearer "), ("", ""))
        if path.startswith(f"{SITE}/_api/"):
            if resource != "sharepoint":
                return json_reply({"error_description": "Invalid audience"}, status=401)
            if credential == "secret":
                return Reply(401, b"Unsupported app only token.", content_type="text/plain")
            return self._sharepoint(path.removeprefix(SITE), query)
        if resource != "graph":
            return json_reply({"error": {"code": "InvalidAuthenticationToken"}}, status=401)
        if path.startswith("/v1.0/subscriptions"):
            return self._subscriptions(request, path.removeprefix("/v1.0/subscriptions"))
        return self._graph(path.removeprefix("/v1.0"), query, request)

    def _token(self, request: RecordedRequest) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            return _refusal(400, "unsupported_grant_type", "AADSTS70003: unsupported grant")
        if form.get("client_id") != CLIENT_ID:
            return _refusal(400, "unauthorized_client", "AADSTS700016: application not found")
        scope = form.get("scope", "")
        resource = self.resources.get(scope.removesuffix("/.default"))
        if resource is None or not scope.endswith("/.default"):
            return _refusal(400, "invalid_scope", "AADSTS1002012: invalid scope")
        if "client_secret" in form:
            if form["client_secret"] != CLIENT_SECRET:
                return _refusal(401, "invalid_client", "AADSTS7000215: invalid client secret")
            credential = "secret"
        elif form.get("client_assertion_type") == ASSERTION_TYPE:
            assertion = form.get("client_assertion", "")
            self.assertions.append(assertion)
            credential, problem = self._check_assertion(assertion)
            if problem is not None:
                return _refusal(401, "invalid_client", problem)
        else:
            return _refusal(401, "invalid_client", "AADSTS7000218: no client credential")
        self.issued += 1
        token = f"token-{self.issued}"
        self._tokens[token] = (resource, credential)
        return json_reply({"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    def _check_assertion(self, assertion: str) -> tuple[str, str | None]:
        """``(credential kind, why it is refused or None)`` for a client assertion."""
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.InvalidTokenError:
            return "", "AADSTS50027: the client assertion is not a JWT"
        algorithm = header.get("alg")
        if algorithm not in ("RS256", "PS256"):
            return "", "AADSTS5002730: unsupported signing algorithm"
        if "x5t#S256" in header or "x5t" in header:
            return "certificate", self._check_certificate_assertion(assertion, header)
        return "federated", self._check_federated_token(assertion, algorithm)

    def _check_certificate_assertion(self, assertion: str, header: dict[str, Any]) -> str | None:
        wanted = (header.get("x5t#S256"), 0) if "x5t#S256" in header else (header["x5t"], 1)
        found = [c for c in self.certificates if _thumbprints(c)[wanted[1]] == wanted[0]]
        if not found:
            return "AADSTS700027: the certificate is not registered on the application"
        try:
            claims = jwt.decode(
                assertion,
                found[0].public_key(),  # type: ignore[arg-type]
                algorithms=[header["alg"]],
                audience=self.token_url,
                options={"require": ["aud", "exp", "nbf", "iss", "sub", "jti"]},
            )
        except jwt.ExpiredSignatureError:
            return "AADSTS700024: the client assertion is not within its valid time range"
        except jwt.InvalidAudienceError:
            return "AADSTS700212: the client assertion's audience is not this endpoint"
        except jwt.InvalidTokenError as exc:
            return f"AADSTS700027: the client assertion failed signature validation ({exc})"
        if claims["iss"] != CLIENT_ID or claims["sub"] != CLIENT_ID:
            return "AADSTS700023: the client assertion's issuer or subject is not the client"
        if claims["jti"] in self._jtis:
            return "AADSTS700025: the client assertion was already used"
        self._jtis.add(claims["jti"])
        return None

    def _check_federated_token(self, assertion: str, algorithm: str) -> str | None:
        try:
            issuer = jwt.decode(assertion, options={"verify_signature": False}).get("iss")
            subject, key = self.federated[issuer]
            claims = jwt.decode(
                assertion,
                key,
                algorithms=[algorithm],
                audience=EXCHANGE_AUDIENCE,
                issuer=issuer,
                options={"require": ["aud", "exp", "iss", "sub"]},
            )
        except (KeyError, TypeError):
            return "AADSTS70021: no matching federated identity record found"
        except jwt.ExpiredSignatureError:
            return "AADSTS700024: the federated token has expired"
        except jwt.InvalidTokenError as exc:
            return f"AADSTS700213: the federated token is not valid ({exc})"
        if claims["sub"] != subject:
            return "AADSTS70021: no matching federated identity record found"
        return None

    def _sharepoint(self, path: str, query: dict[str, str]) -> Reply:
        prefix, suffix = "/_api/web/sitegroups/GetById(", ")/users"
        number = path.removeprefix(prefix).removesuffix(suffix)
        if not (path.startswith(prefix) and path.endswith(suffix) and number.isdigit()):
            return _sharepoint_error(404, "-1, Microsoft.SharePoint.Client.ResourceNotFound")
        members = self.site_groups.get(int(number))
        if members is None:
            return _sharepoint_error(404, "-2146232832, Microsoft.SharePoint.SPException")
        values = [self._site_member(n, m) for n, m in enumerate(members)]
        url = f"{self.site_url}{path}"
        return self._page(values, url, query, next_key="odata.nextLink")

    def _subscriptions(self, request: RecordedRequest, rest: str) -> Reply:
        body = request.json
        if request.method == "POST" and rest == "":
            return self._subscribe(body if isinstance(body, dict) else {})
        subscription = self.subscriptions.get(unquote(rest.removeprefix("/")))
        if subscription is None or not rest.startswith("/"):
            return _graph_error(404, "ResourceNotFound", "The object was not found.")
        if request.method == "DELETE":
            del self.subscriptions[subscription["id"]]
            return Reply(204, b"")
        if request.method == "PATCH":
            if not isinstance(body, dict) or set(body) != {"expirationDateTime"}:
                return _graph_error(400, "InvalidRequest", "Only the expiration is renewed.")
            problem = _expiry_problem(body["expirationDateTime"])
            if problem is not None:
                return _graph_error(400, "InvalidRequest", problem)
            subscription["expirationDateTime"] = body["expirationDateTime"]
            return json_reply(subscription)
        return _graph_error(405, "MethodNotAllowed", "Not allowed.")

    def _subscribe(self, body: dict[str, Any]) -> Reply:
        if body.get("changeType") != "updated":
            return _graph_error(400, "InvalidRequest", "driveItem supports 'updated' only.")
        if body.get("resource") != RESOURCE:
            return _graph_error(400, "InvalidRequest", "The resource is not supported.")
        state = body.get("clientState")
        if state is not None and (not isinstance(state, str) or len(state) > 128):
            return _graph_error(400, "InvalidRequest", "clientState is too long.")
        problem = _expiry_problem(body.get("expirationDateTime"))
        if problem is not None:
            return _graph_error(400, "InvalidRequest", problem)
        urls = [body.get("notificationUrl"), body.get("lifecycleNotificationUrl")]
        if not isinstance(urls[0], str) or not all(self._validate(u) for u in urls if u):
            return _graph_error(
                400,
                "ValidationError",
                "Subscription validation request failed. Notification endpoint must respond "
                "with 200 OK to validation request.",
            )
        made = {
            "@odata.context": f"{self.graph_url}/$metadata#subscriptions/$entity",
            "id": str(uuid.uuid4()),
            "resource": RESOURCE,
            "applicationId": CLIENT_ID,
            "changeType": "updated",
            "clientState": state,
            "notificationUrl": urls[0],
            "lifecycleNotificationUrl": urls[1],
            "expirationDateTime": body["expirationDateTime"],
            "creatorId": "8ee44408-0679-472c-bc2a-692812af3437",
            "latestSupportedTlsVersion": "v1_2",
        }
        self.subscriptions[made["id"]] = made
        return json_reply(made, status=201)

    def _graph(self, path: str, query: dict[str, str], request: RecordedRequest) -> Reply:
        drive = f"/drives/{quote(DRIVE, safe='')}"
        base = self.graph_url
        not_found = json_reply({"error": {"code": "itemNotFound"}}, status=404)
        if path == f"{drive}/root/delta":
            prefer = {p.strip().lower() for p in request.headers.get("prefer", "").split(",") if p}
            return self._delta(base + path, query, prefer)
        if path.startswith(f"{drive}/items/"):
            rest = path.removeprefix(f"{drive}/items/")
            item_id, _, tail = rest.partition("/")
            item = self.items.get(item_id)
            if item is None or item.deleted:
                return not_found
            if tail == "":
                return json_reply(self._json(item, delta=False))
            if tail == "permissions":
                return self._page(self._effective(item), base + path, query)
            if tail == "children":
                children = [
                    self._json(i, delta=False)
                    for i in self.items.values()
                    if i.parent == item.id and not i.deleted
                ]
                return self._page(children, base + path, query)
        if path.startswith("/groups/") and path.endswith("/transitiveMembers"):
            group_id = path.split("/")[2]
            if group_id not in self.groups:
                return not_found
            members = self._members(group_id, {group_id}, query.get("$select"))
            return self._page(members, base + path, query)
        if path.startswith("/users/"):
            key = unquote(path.removeprefix("/users/"))
            for user in self.users.values():
                if key == user["id"] or key.lower() == user["userPrincipalName"].lower():
                    return json_reply(_selected(user, query.get("$select")))
            message = (
                f"Resource '{key}' does not exist or one of its queried reference-property "
                "objects are not present."
            )
            body = {"error": {"code": "Request_ResourceNotFound", "message": message}}
            return json_reply(body, status=404)
        return not_found

    def _delta(self, url: str, query: dict[str, str], prefer: set[str]) -> Reply:
        token = query.get("token")
        sharing = "deltashowsharingchanges" in prefer
        if sharing and not all(p in prefer for p in SHARING_PREFER):
            return _graph_error(400, "invalidRequest", "deltashowsharingchanges needs the others.")
        if token == "latest":
            return json_reply({"value": [], "@odata.deltaLink": f"{url}?token={self.seq}"})
        if token is not None and token != "full" and int(token) < self.expired_before:
            return Reply(
                410,
                json.dumps({"error": {"code": "resyncRequired", "message": "resync"}}).encode(),
                headers=(("Location", f"{url}"),),
            )
        shared: set[str] = set()
        if token is None or token == "full":
            # an enumeration lists what exists, parents before children
            chosen = [i for i in self.items.values() if not i.deleted]
            query = {**query, "token": "full"}
        else:
            since = int(token)
            shared = {i.id for i in self.items.values() if sharing and i.shared_seq > since}
            changed = {i.id for i in self.items.values() if i.seq > since} | shared
            for item_id in list(changed):  # with their ancestors, as Graph lists them
                parent = self.items[item_id].parent
                while parent is not None:
                    changed.add(parent)
                    parent = self.items[parent].parent
            chosen = [self.items[i] for i in changed]
        chosen.sort(key=lambda i: (i.parent is not None, i.seq))
        values = [self._json(i, delta=True) for i in chosen]
        for item, value in zip(chosen, values, strict=True):
            if item.id in shared and not item.folder and not item.deleted:
                value["@microsoft.graph.sharedChanged"] = "True"
        if self.foreign_next_link is not None:
            return json_reply({"value": values, "@odata.nextLink": self.foreign_next_link})
        return self._page(values, url, query, **{"@odata.deltaLink": f"{url}?token={self.seq}"})


def _selected(user: dict[str, Any], select: str | None) -> dict[str, Any]:
    """``user`` with only the ``$select``-ed properties (and its id), as Graph answers."""
    if select is None:
        return dict(user)
    wanted = set(select.split(",")) | {"id"}
    return {k: v for k, v in user.items() if k in wanted}


def _graph_error(status: int, code: str, message: str) -> Reply:
    return json_reply({"error": {"code": code, "message": message}}, status=status)


def _expiry_problem(value: Any) -> str | None:
    """Why Graph refuses ``value`` as a driveItem subscription's expiration, or ``None``."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return "expirationDateTime is not a date and time."
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    now = datetime.now(UTC)
    if moment <= now:
        return "Subscription expiration can only be in the future."
    if moment > now + MAX_SUBSCRIPTION:
        return "Subscription expiration exceeds the maximum allowed for driveItem."
    return None


def _refusal(status: int, error: str, description: str) -> Reply:
    """The token endpoint's refusal: an OAuth error with Entra's ``AADSTS`` code."""
    code = int(description.split(":")[0].removeprefix("AADSTS"))
    body = {"error": error, "error_description": description, "error_codes": [code]}
    return json_reply(body, status=status)


def _sharepoint_error(status: int, code: str) -> Reply:
    body = {"odata.error": {"code": code, "message": {"lang": "en-US", "value": "Not found."}}}
    return json_reply(body, status=status)
