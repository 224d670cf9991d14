"""Who is calling: the :class:`Authenticator` seam and the three ways to sign in.

An authenticator turns a request's credentials into an :class:`Identity` (a user id and
whether the credential grants the administrator routes) or ``None``. The app asks each
configured authenticator in turn; the first identity wins, and no identity is a 401.

* :class:`ApiTokenAuthenticator` — ``Authorization: Bearer clr_…`` (always on).
* :class:`OidcAuthenticator` — any other bearer credential, as a JWT from the identity
  provider (``[server.oidc]``).
* :class:`TrustedHeaderAuthenticator` — the user id in ``[server] user_header``, believed only
  when the TCP peer is one of ``[server] trusted_proxies`` (off while that list is empty).

An identity is only a claim about *who*; what that user may read, and whether the account
is active at all, is resolved from the synced directory on every request. Administrator
rights come from the API token's ``--admin`` flag, or — for OIDC and proxy identities — from
the directory (:class:`DirectoryAdmins`), never from anything the caller sent.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from clearance.api.oidc import JwtVerifier
from clearance.api.tokens import PREFIX, ApiToken, TokenStore
from clearance.errors import AuthError
from clearance.model import principal_id_problem

if TYPE_CHECKING:
    from clearance.access.policy import Principal
    from clearance.app import Clearance
    from clearance.config import ServerSettings

__all__ = [
    "READER_SCOPES",
    "ApiTokenAuthenticator",
    "Authenticator",
    "DirectoryAdmins",
    "Identity",
    "OidcAuthenticator",
    "ProvisioningTokenAuthenticator",
    "TrustedHeaderAuthenticator",
    "bearer_token",
    "default_authenticators",
    "request_headers",
]

log = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


#: What a signed-in person may do: read (search and ask) and, for an administrator, the
#: administrator routes. An API token may carry fewer (api/tokens.py ``SCOPES``).
READER_SCOPES = frozenset({"search", "ask"})


@dataclass(frozen=True, slots=True)
class Identity:
    user_id: str
    admin: bool
    method: str  # "api_token", "oidc" or "proxy"
    scopes: frozenset[str] = READER_SCOPES


def request_headers(fields: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A request's header fields by lower-case name, as authenticators take them. A name
    sent more than once maps to its values joined with ``", "`` (how HTTP combines repeated
    fields) and never to one of them: two ``X-Forwarded-User`` values are no user id, and
    two ``Authorization`` values no bearer credential, so such a request is refused."""
    found: dict[str, str] = {}
    for name, value in fields:
        key = name.lower()
        found[key] = f"{found[key]}, {value}" if key in found else value
    return found


class Authenticator(Protocol):
    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        """The caller's identity from these request headers (and the peer address, for
        proxy modes), or ``None`` when this authenticator does not accept them."""
        ...


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The credential of an ``Authorization: Bearer <token>`` header, else ``None``."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


def _presented_token(tokens: TokenStore, headers: Mapping[str, str]) -> ApiToken | None:
    """The live API token of an ``Authorization: Bearer`` header, else ``None``."""
    credential = bearer_token(headers)
    return None if credential is None else tokens.verify(credential)


@dataclass(eq=False)
class ApiTokenAuthenticator:
    """``Authorization: Bearer clr_…`` checked against the hashed tokens in the index."""

    tokens: TokenStore

    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        record = _presented_token(self.tokens, headers)
        if record is None or "scim" in record.scopes:
            # A provisioning token is no sign-in: it reaches /scim/v2 only, through its own
            # authenticator there, and is an unknown credential everywhere else.
            return None
        return Identity(record.user_id, record.admin, "api_token", record.scopes)


@dataclass(eq=False)
class ProvisioningTokenAuthenticator:
    """``/scim/v2``'s only door: an API token with the ``scim`` scope, nothing else — not a
    person's token, not an administrator's, not a single sign-on session."""

    tokens: TokenStore

    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        record = _presented_token(self.tokens, headers)
        if record is None or record.scopes != frozenset({"scim"}):
            return None
        return Identity(record.user_id, False, "scim_token", record.scopes)


class DirectoryAdmins:
    """Whether a user is an administrator when the credential cannot say so (OIDC, proxy):
    an active directory user who is — directly or through nested groups — a member of one of
    ``[server] admin_groups``. With no admin groups configured, nobody is."""

    def __init__(self, principal: Callable[[str], Principal], groups: Iterable[str]) -> None:
        self._principal = principal
        self._admin_principals = frozenset(f"group:{g}" for g in groups)

    def __call__(self, user_id: str) -> bool:
        if not self._admin_principals:
            return False
        found = self._principal(user_id)
        return found.active and not self._admin_principals.isdisjoint(found.principals)


def _directory_identity(user_id: str, is_admin: Callable[[str], bool], method: str) -> Identity:
    """A user a credential names that cannot say more (OIDC, a proxy): reading, and the
    administrator routes when the directory says so."""
    admin = is_admin(user_id)
    return Identity(user_id, admin, method, READER_SCOPES | {"admin"} if admin else READER_SCOPES)


@dataclass(eq=False)
class OidcAuthenticator:
    """A bearer credential that is not an API token, verified as a JWT of the configured
    identity provider. The token names the user and nothing more: groups and administrator
    rights come from the directory, whatever claims it carries. A refused token is no
    identity (so the same 401 as any bad credential); why it was refused is logged as a
    short reason, never the token."""

    verifier: JwtVerifier
    is_admin: Callable[[str], bool]
    resolve: Callable[[str], str] = lambda name: name

    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        credential = bearer_token(headers)
        if credential is None or credential.startswith(PREFIX):
            return None  # no bearer credential, or an API token (whose authenticator said no)
        try:
            claimed = self.verifier.verify(credential)
        except AuthError as exc:
            log.info("bearer token refused: %s", exc.reason)
            return None
        # The claim may be any of the user's names: UPN, mail, object id.
        return _directory_identity(self.resolve(claimed), self.is_admin, "oidc")


class TrustedHeaderAuthenticator:
    """The user id an authenticating reverse proxy put in ``header`` — believed only when the
    TCP peer is one of ``proxies``. From any other peer the header is ignored, so a client
    that reaches the server directly cannot name itself. The proxy must *set* the header
    (replacing any the client sent), as nginx's ``proxy_set_header`` does; a request that
    carries it twice is refused (:func:`request_headers`), never read as either value."""

    def __init__(
        self,
        proxies: Sequence[Network],
        header: str,
        is_admin: Callable[[str], bool],
        resolve: Callable[[str], str] = lambda name: name,
    ) -> None:
        self.proxies = tuple(proxies)
        self.header = header.lower()
        self.is_admin = is_admin
        self.resolve = resolve

    def trusted(self, peer: str | None) -> bool:
        """Whether ``peer`` (the TCP peer address) is one of the proxies."""
        return in_networks(peer, self.proxies)

    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        if not self.trusted(peer):
            return None
        user_id = headers.get(self.header)
        if user_id is None:
            return None
        if principal_id_problem(user_id) is not None:
            log.info("%s from a trusted proxy is not a valid user id; refused", self.header)
            return None
        return _directory_identity(self.resolve(user_id), self.is_admin, "proxy")


def ip_address(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as an IP address, an IPv4-mapped IPv6 address (``::ffff:10.0.0.2``, as a
    dual-stack socket reports an IPv4 peer) as the IPv4 address it is; ``None`` when it is
    none."""
    try:
        address = ipaddress.ip_address(text or "")
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def in_networks(text: str | None, networks: Sequence[Network]) -> bool:
    """Whether the address ``text`` (see :func:`ip_address`) is in one of ``networks``."""
    address = ip_address(text)
    return address is not None and any(address in network for network in networks)


def default_authenticators(server: ServerSettings, engine: Clearance) -> list[Authenticator]:
    """API tokens from ``engine``'s index, then OIDC and trusted-header sign-in when
    configured. One JWKS cache per call, that is per app."""
    admins = DirectoryAdmins(engine.principal, server.admin_groups)
    found: list[Authenticator] = [
        ApiTokenAuthenticator(TokenStore(engine.store, clock=engine.clock))
    ]
    if server.oidc is not None:
        found.append(OidcAuthenticator(JwtVerifier(server.oidc), admins, engine.resolve_user))
    if server.trusted_proxies:
        found.append(
            TrustedHeaderAuthenticator(
                server.trusted_proxies, server.user_header, admins, engine.resolve_user
            )
        )
    return found
