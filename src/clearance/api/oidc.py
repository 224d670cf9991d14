"""OIDC / JWT bearer tokens: who is asking, proven by the identity provider's signature.

What is guaranteed:

* A token is accepted only if PyJWT verifies its signature with a key from the configured
  JWKS, using one of the pinned asymmetric algorithms, and its ``exp``, ``iss`` and ``aud``
  are present and right (``nbf`` and ``iat`` are checked when present). ``none`` and every
  HMAC algorithm are refused when the settings are built, and a JWKS holding a symmetric
  (``oct``) key is refused when it is loaded: with no shared secret anywhere, the classic
  HS/RS confusion (an HS256 token "signed" with the public key) has nothing to verify against.
* The result is the user id from ``user_claim`` and nothing else. Group membership comes from
  the synced directory, never from the token, so a ``groups`` claim cannot widen access.
* Every rejection is one :class:`AuthError` whose ``reason`` is a short code and whose message
  never quotes the token or its claims.
* The JWKS is fetched (or read) lazily, cached, and refetched at most once per
  ``jwks_refresh_s``: on an unknown ``kid`` (key rotation) or when the keys are older than
  ``jwks_max_age_s`` (key withdrawal). A flood of tokens with made-up kids therefore costs
  at most one fetch per interval, and a failed fetch keeps serving the last good keys.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import jwt
from jwt import PyJWK

from clearance import jsonio
from clearance.errors import AuthError
from clearance.model import principal_id_problem
from clearance.oidc_settings import KEY_FOR_ALGORITHM, OidcSettings, is_url, parse_oidc_settings

__all__ = [
    "AuthError",
    "JwksCache",
    "JwtVerifier",
    "OidcSettings",
    "parse_oidc_settings",
]

log = logging.getLogger(__name__)

_MAX_JWKS_BYTES = 1 << 20  # a JWKS is a few kilobytes; a huge reply is refused, not buffered
_NO_KID = ""  # the key slot of a JWK without a "kid"


class JwksError(Exception):
    """The JWKS could not be loaded; internal to this module (the cache keeps its old keys)."""


def _usable_keys(document: Any, algorithms: tuple[str, ...]) -> dict[tuple[str, str], PyJWK]:
    """``{(kid, alg): key}`` for every key of ``document`` fit for a pinned algorithm.

    A key whose ``kty``/``crv``/``alg``/``use`` does not fit is skipped (an IdP publishes
    encryption keys too); a symmetric key refuses the whole document."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksError('not a JWKS: expected an object with a "keys" list')
    found: dict[tuple[str, str], PyJWK] = {}
    ambiguous: set[tuple[str, str]] = set()
    for entry in document["keys"]:
        if not isinstance(entry, dict):
            continue
        kty = entry.get("kty")
        if kty == "oct":
            raise JwksError("the JWKS holds a symmetric (oct) key; refusing it")
        kid = entry.get("kid", _NO_KID)
        if not isinstance(kid, str):
            continue
        if entry.get("use", "sig") != "sig":
            continue
        ops = entry.get("key_ops")
        if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
            continue
        declared = entry.get("alg")
        for alg in algorithms:
            want_kty, want_crv = KEY_FOR_ALGORITHM[alg]
            if kty != want_kty or (want_crv is not None and entry.get("crv") != want_crv):
                continue
            if declared is not None and declared != alg:
                continue
            try:
                key = PyJWK(entry, algorithm=alg)
            except jwt.PyJWTError as exc:
                log.warning("JWKS key %r skipped: %s", kid, type(exc).__name__)
                continue
            if (kid, alg) in found:
                ambiguous.add((kid, alg))
            found[(kid, alg)] = key
    for slot in ambiguous:  # two keys under one kid: neither can be trusted to be the one
        log.warning("JWKS kid %r appears more than once for %s; ignoring it", *slot)
        del found[slot]
    return found


class JwksCache:
    """The identity provider's signing keys, loaded lazily and refreshed with a bound.

    Thread-safe: concurrent requests that all miss a kid cause one fetch, not one each.
    ``clock`` is injectable so tests can move time without sleeping.
    """

    def __init__(
        self,
        settings: OidcSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._transport = transport
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[tuple[str, str], PyJWK] = {}
        self._loaded_at: float | None = None  # last successful load
        self._attempted_at: float | None = None  # last load attempt, good or bad
        self.fetches = 0  # load attempts so far (for operations and tests)

    def key_for(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key for ``kid`` and ``alg``, refreshing the set at most once per interval.

        A token without a ``kid`` is matched only when exactly one key fits ``alg``. A known
        key is found without taking the lock, so a slow fetch never holds up tokens signed
        with keys already cached (the key set is replaced whole, never edited in place)."""
        if not self._stale():
            key = self._lookup(self._keys, kid, alg)
            if key is not None:
                return key
        with self._lock:
            if self._stale():
                self._refresh()
            key = self._lookup(self._keys, kid, alg)
            if key is None and self._may_refetch():
                self._refresh()
                key = self._lookup(self._keys, kid, alg)
            return key

    @staticmethod
    def _lookup(keys: Mapping[tuple[str, str], PyJWK], kid: str | None, alg: str) -> PyJWK | None:
        if kid is not None:
            return keys.get((kid, alg))
        fitting = [key for (_, a), key in keys.items() if a == alg]
        return fitting[0] if len(fitting) == 1 else None

    def _may_refetch(self) -> bool:
        return (
            self._attempted_at is None
            or self._clock() - self._attempted_at >= self._settings.jwks_refresh_s
        )

    def _stale(self) -> bool:
        if self._loaded_at is None:
            return self._attempted_at is None
        too_old = self._clock() - self._loaded_at >= self._settings.jwks_max_age_s
        return too_old and self._may_refetch()

    def _refresh(self) -> None:
        self._attempted_at = self._clock()
        self.fetches += 1
        try:
            keys = _usable_keys(jsonio.loads(self._read()), self._settings.algorithms)
        except (JwksError, jsonio.JSONInputError, OSError, httpx.HTTPError) as exc:
            # Keep serving the last good keys: an IdP hiccup must not sign everybody out.
            log.warning("JWKS not loaded from the configured source: %s", _describe(exc))
            return
        if not keys:
            log.warning(
                "JWKS loaded but holds no key fit for %s", ", ".join(self._settings.algorithms)
            )
        self._keys = keys
        self._loaded_at = self._attempted_at

    def _read(self) -> bytes:
        source = self._settings.jwks
        if not is_url(source):
            path = Path(source)
            if path.stat().st_size > _MAX_JWKS_BYTES:
                raise JwksError(f"the JWKS file is larger than {_MAX_JWKS_BYTES} bytes")
            return path.read_bytes()
        timeout = httpx.Timeout(self._settings.jwks_timeout_s)
        with (
            httpx.Client(
                timeout=timeout, transport=self._transport, follow_redirects=False
            ) as client,
            client.stream("GET", source, headers={"Accept": "application/json"}) as reply,
        ):
            if reply.status_code != 200:
                raise JwksError(f"the JWKS URL answered HTTP {reply.status_code}")
            body = bytearray()
            for piece in reply.iter_bytes():
                body += piece
                if len(body) > _MAX_JWKS_BYTES:
                    raise JwksError(f"the JWKS reply is larger than {_MAX_JWKS_BYTES} bytes")
            return bytes(body)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# --------------------------------------------------------------------------- tokens


_REJECTIONS: tuple[tuple[type[jwt.PyJWTError], str, str], ...] = (
    # Most specific first: several of these subclass DecodeError / InvalidTokenError. A
    # missing claim is answered before these, naming the claim (JwtVerifier.verify_claims).
    (jwt.ExpiredSignatureError, "expired", "the token has expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid", "the token is not valid yet"),
    (jwt.InvalidIssuerError, "wrong_issuer", "the token was issued by another issuer"),
    (jwt.InvalidAudienceError, "wrong_audience", "the token is meant for another audience"),
    (jwt.InvalidSignatureError, "bad_signature", "the token's signature does not verify"),
    (jwt.InvalidAlgorithmError, "algorithm_not_allowed", "the token's algorithm is not allowed"),
    (jwt.InvalidKeyError, "bad_key", "the signing key cannot verify this token"),
    (jwt.DecodeError, "malformed", "the token is not a well-formed JWT"),
    (jwt.InvalidTokenError, "invalid", "the token is not valid"),
)


class JwtVerifier:
    """Turns a bearer token into a user id, or raises :class:`AuthError`."""

    def __init__(self, settings: OidcSettings, cache: JwksCache | None = None) -> None:
        self.settings = settings
        self.cache = cache if cache is not None else JwksCache(settings)

    def verify(self, token: str) -> str:
        """The user id the token proves (the ``user_claim`` value, checked against the
        principal grammar). Groups are never read from the token."""
        return self.verify_claims(token)[0]

    def verify_claims(self, token: str) -> tuple[str, Mapping[str, Any]]:
        """``(user id, verified claims)``: for the browser sign-in, which also checks the
        ``nonce`` it sent and ends the session no later than ``exp``."""
        s = self.settings
        if not isinstance(token, str) or not token:
            raise AuthError("malformed", "the token is empty")
        if len(token.encode("utf-8", "surrogatepass")) > s.max_token_bytes:
            raise AuthError("too_large", f"the token is longer than {s.max_token_bytes} bytes")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthError("malformed", "the token is not a well-formed JWT") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in s.algorithms:
            raise AuthError("algorithm_not_allowed", "the token's algorithm is not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise AuthError("malformed", "the token's key id is not a string")
        key = self.cache.key_for(kid, alg)
        if key is None:
            raise AuthError("unknown_key", "the token was signed with an unknown key")
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=list(s.algorithms),
                audience=list(s.audiences),
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={
                    "require": ["exp", "iss", "aud"],
                    "verify_signature": True,
                    "enforce_minimum_key_length": True,
                },
            )
        except jwt.PyJWTError as exc:
            if isinstance(exc, jwt.MissingRequiredClaimError):
                raise AuthError(
                    "missing_claim", f"the token lacks the {exc.claim!r} claim"
                ) from exc
            for kind, reason, message in _REJECTIONS:
                if isinstance(exc, kind):
                    raise AuthError(reason, message) from exc
            raise AuthError("invalid", "the token is not valid") from exc
        return self._user_id(claims), claims

    def _user_id(self, claims: Mapping[str, Any]) -> str:
        name = self.settings.user_claim
        value = claims.get(name)
        if value is None or value == "":
            raise AuthError("bad_user_claim", f"the token has no {name!r} claim")
        if not isinstance(value, str) or principal_id_problem(value) is not None:
            # The value is not quoted: it came from the token.
            raise AuthError("bad_user_claim", f"the token's {name!r} claim is not a valid user id")
        return value
