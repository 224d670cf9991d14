"""An OpenID provider on loopback for the browser sign-in tests: discovery, an authorization
endpoint that signs in a chosen user without a login form, a token endpoint that enforces
PKCE, and a JWKS.

It behaves as the specification says a provider must, so the client is tested against the
protocol, not against itself: the authorization code is single-use, bound to the client id,
the redirect URI and the PKCE ``code_challenge``; the token endpoint refuses a missing or
wrong ``code_verifier``; the ID token carries the ``nonce`` of the authorization request.
``misbehave`` makes it send a deliberately wrong ID token (another nonce, another audience)
for the tests that show the client refuses it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from loopback_server import RecordedRequest, Reply, ScriptedServer, json_reply

__all__ = ["CLIENT_ID", "Provider"]

CLIENT_ID = "clearance-ui"
_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
_KID = "idp-1"


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class Provider(ScriptedServer[RecordedRequest]):
    """``with Provider() as idp:`` — ``idp.issuer`` is its URL; ``idp.user`` who signs in."""

    def __init__(self, user: str = "ann") -> None:
        super().__init__(RecordedRequest, self._respond)
        self.user = user
        self.misbehave: str | None = None  # "nonce" or "audience": a wrong ID token
        self._codes: dict[str, dict[str, str]] = {}
        self._codes_lock = threading.Lock()
        self.token_errors: list[str] = []

    @property
    def issuer(self) -> str:
        return self.url_for("")

    def settings(self) -> str:
        """The ``[server.oidc]`` table of a Clearance config that trusts this provider."""
        return (
            "[server.oidc]\n"
            f'issuer = "{self.issuer}"\n'
            f'audience = "{CLIENT_ID}"\n'
            f'jwks = "{self.url_for("/jwks")}"\n'
        )

    # ------------------------------------------------------------------ endpoints

    def _respond(self, request: RecordedRequest) -> Reply:
        path = urlsplit(request.path).path
        if path == "/.well-known/openid-configuration":
            return json_reply(
                {
                    "issuer": self.issuer,
                    "authorization_endpoint": self.url_for("/authorize"),
                    "token_endpoint": self.url_for("/token"),
                    "jwks_uri": self.url_for("/jwks"),
                    "code_challenge_methods_supported": ["S256"],
                }
            )
        if path == "/jwks":
            jwk = {**RSAAlgorithm.to_jwk(_KEY.public_key(), as_dict=True), "kid": _KID}
            return json_reply({"keys": [jwk]})
        if path == "/authorize" and request.method == "GET":
            return self._authorize(request)
        if path == "/token" and request.method == "POST":
            return self._token(request)
        return json_reply({"error": "not_found"}, status=404)

    def _authorize(self, request: RecordedRequest) -> Reply:
        query = {k: v[-1] for k, v in parse_qs(urlsplit(request.path).query).items()}
        wanted = ("response_type", "client_id", "redirect_uri", "state", "nonce", "code_challenge")
        if any(not query.get(k) for k in wanted) or query.get("code_challenge_method") != "S256":
            return json_reply({"error": "invalid_request"}, status=400)
        code = secrets.token_urlsafe(16)
        with self._codes_lock:
            self._codes[code] = query
        target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        return Reply(
            status=302, body=b"", content_type="text/plain", headers=(("Location", target),)
        )

    def _token(self, request: RecordedRequest) -> Reply:
        form = {k: v[-1] for k, v in parse_qs(request.body.decode()).items()}
        with self._codes_lock:
            grant = self._codes.pop(form.get("code", ""), None)  # single use
        problem = None
        if grant is None:
            problem = "unknown or used code"
        elif form.get("grant_type") != "authorization_code":
            problem = "grant_type"
        elif form.get("client_id") != grant["client_id"]:
            problem = "client_id"
        elif form.get("redirect_uri") != grant["redirect_uri"]:
            problem = "redirect_uri"
        elif _s256(form.get("code_verifier", "")) != grant["code_challenge"]:
            problem = "code_verifier"
        if problem is not None or grant is None:
            self.token_errors.append(problem or "grant")
            return json_reply({"error": "invalid_grant"}, status=400)
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": grant["client_id"],
            "sub": self.user,
            "iat": now,
            "exp": now + 600,
            "nonce": grant["nonce"],
        }
        if self.misbehave == "nonce":
            claims["nonce"] = "not-the-nonce-that-was-sent"
        elif self.misbehave == "audience":
            claims["aud"] = "another-client"
        id_token = jwt.encode(claims, _KEY, algorithm="RS256", headers={"kid": _KID})
        return json_reply({"access_token": "opaque", "token_type": "Bearer", "id_token": id_token})
