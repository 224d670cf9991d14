"""Browser sign-in with the identity provider: the OIDC authorization-code flow with PKCE.

The flow (RFC 6749 §4.1, RFC 7636, OpenID Connect Core §3.1):

1. :meth:`BrowserLogin.start` makes a fresh ``state`` (binds the callback to this browser),
   ``nonce`` (binds the ID token to this sign-in) and PKCE ``code_verifier``, and the URL of
   the provider's authorization endpoint carrying ``code_challenge = S256(code_verifier)``.
   The three secrets travel in a short-lived ``HttpOnly`` cookie of this browser only.
2. The provider signs the user in and redirects back with ``code`` and ``state``.
3. :meth:`BrowserLogin.finish` checks ``state`` against the cookie, redeems the code at the
   token endpoint with the ``code_verifier`` (a stolen code is useless without it), and
   verifies the returned ID token exactly as a bearer token is verified
   (:class:`~clearance.api.oidc.JwtVerifier`: pinned algorithms, JWKS, issuer, audience =
   client id, expiry) plus its ``nonce``.

The result is a user id and the token's expiry, nothing more: groups and administrator rights
come from the directory, as for every other sign-in. Endpoints come from ``[server.oidc]`` or,
when unset, from the issuer's discovery document, which must name the configured issuer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import httpx

from clearance import jsonio
from clearance.api.oidc import JwtVerifier, OidcSettings
from clearance.errors import AuthError

__all__ = ["BrowserLogin", "Pending", "code_challenge"]

_MAX_REPLY_BYTES = 1 << 20  # a token or discovery reply is a few kilobytes


def code_challenge(verifier: str) -> str:
    """The PKCE ``S256`` challenge of ``verifier`` (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class Pending:
    """What the browser keeps between leaving for the provider and coming back."""

    state: str
    nonce: str
    verifier: str

    def to_cookie(self) -> str:
        return f"{self.state}.{self.nonce}.{self.verifier}"

    @classmethod
    def from_cookie(cls, value: str | None) -> Pending | None:
        parts = (value or "").split(".")
        if len(parts) != 3 or not all(0 < len(p) <= 128 for p in parts):
            return None
        return cls(*parts)


class BrowserLogin:
    """The authorization-code flow against one provider, for one client id."""

    def __init__(
        self,
        settings: OidcSettings,
        verifier: JwtVerifier,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.verifier = verifier
        self._transport = transport
        self._lock = threading.Lock()
        self._endpoints: tuple[str, str] | None = None

    def endpoints(self) -> tuple[str, str]:
        """``(authorization endpoint, token endpoint)``, discovered once when not configured."""
        s = self.settings
        if s.authorization_endpoint and s.token_endpoint:
            return s.authorization_endpoint, s.token_endpoint
        with self._lock:
            if self._endpoints is None:
                found = self._discover()
                self._endpoints = (
                    s.authorization_endpoint or _endpoint(found, "authorization_endpoint"),
                    s.token_endpoint or _endpoint(found, "token_endpoint"),
                )
            return self._endpoints

    def start(self, redirect_uri: str) -> tuple[str, Pending]:
        """The provider URL to send the browser to, and what to keep for the way back."""
        pending = Pending(
            state=secrets.token_urlsafe(24),
            nonce=secrets.token_urlsafe(24),
            verifier=secrets.token_urlsafe(48),  # 64 characters, inside RFC 7636's 43..128
        )
        query = {
            "response_type": "code",
            "client_id": self.settings.browser_client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.settings.scopes),
            "state": pending.state,
            "nonce": pending.nonce,
            "code_challenge": code_challenge(pending.verifier),
            "code_challenge_method": "S256",
        }
        authorize, _ = self.endpoints()
        separator = "&" if "?" in authorize else "?"
        return f"{authorize}{separator}{urlencode(query)}", pending

    def finish(
        self, code: str, state: str, pending: Pending | None, redirect_uri: str
    ) -> tuple[str, datetime]:
        """``(user id, when the ID token expires)`` for a provider's redirect back, or
        :class:`AuthError` (the reason is logged; the browser sees one fixed message)."""
        if pending is None or not state or not hmac.compare_digest(state, pending.state):
            raise AuthError("bad_state", "the sign-in was not started by this browser")
        if not code:
            raise AuthError("no_code", "the identity provider sent no authorization code")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.settings.browser_client_id,
            "code_verifier": pending.verifier,
        }
        auth = None
        if self.settings.client_secret_env:
            secret = os.environ.get(self.settings.client_secret_env)
            if not secret:
                raise AuthError(
                    "no_client_secret",
                    f"the environment variable {self.settings.client_secret_env} is not set",
                )
            auth = (self.settings.browser_client_id, secret)
        _, token_endpoint = self.endpoints()
        reply = self._post(token_endpoint, form, auth)
        id_token = reply.get("id_token")
        if not isinstance(id_token, str):
            raise AuthError("no_id_token", "the token endpoint sent no ID token")
        user_id, claims = self.verifier.verify_claims(id_token)
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(nonce, pending.nonce):
            raise AuthError("bad_nonce", "the ID token was not issued for this sign-in")
        expires = datetime.fromtimestamp(float(claims["exp"]), UTC)
        return user_id, expires

    # ------------------------------------------------------------------ HTTP

    def _client(self) -> httpx.Client:
        return httpx.Client(
            timeout=httpx.Timeout(self.settings.jwks_timeout_s),
            transport=self._transport,
            follow_redirects=False,
        )

    def _discover(self) -> Mapping[str, Any]:
        url = self.settings.issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            with self._client() as client:
                found = _json(client.get(url, headers={"Accept": "application/json"}))
        except httpx.HTTPError as exc:
            raise AuthError("discovery_failed", "the identity provider cannot be reached") from exc
        if found.get("issuer") != self.settings.issuer:
            raise AuthError("discovery_failed", "the discovery document names another issuer")
        return found

    def _post(
        self, url: str, form: Mapping[str, str], auth: tuple[str, str] | None
    ) -> Mapping[str, Any]:
        try:
            with self._client() as client:
                reply = client.post(
                    url,
                    data=form,
                    auth=httpx.BasicAuth(*auth) if auth is not None else httpx.USE_CLIENT_DEFAULT,
                    headers={"Accept": "application/json"},
                )
                return _json(reply)
        except httpx.HTTPError as exc:
            raise AuthError(
                "token_endpoint_failed", "the token endpoint cannot be reached"
            ) from exc


def _json(reply: httpx.Response) -> Mapping[str, Any]:
    if reply.status_code != 200:
        raise AuthError("provider_refused", f"the identity provider answered {reply.status_code}")
    if len(reply.content) > _MAX_REPLY_BYTES:
        raise AuthError("provider_refused", "the identity provider's reply is too large")
    try:
        found = jsonio.loads(reply.content)
    except jsonio.JSONInputError as exc:
        raise AuthError("provider_refused", "the identity provider's reply is not JSON") from exc
    if not isinstance(found, dict):
        raise AuthError("provider_refused", "the identity provider's reply is not an object")
    return found


def _endpoint(found: Mapping[str, Any], name: str) -> str:
    value = found.get(name)
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise AuthError("discovery_failed", f"the discovery document has no {name}")
    return value
