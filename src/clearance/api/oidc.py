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

import ipaddress
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
from jwt import PyJWK

from clearance import jsonio
from clearance.errors import AuthError, ConfigError
from clearance.model import principal_id_problem

__all__ = [
    "AuthError",
    "JwksCache",
    "JwtVerifier",
    "OidcSettings",
    "parse_oidc_settings",
]

log = logging.getLogger(__name__)

# The asymmetric algorithms a token may use, each with the key type (and curve) it needs.
# HMAC is deliberately absent: a shared secret in a JWKS is an HS/RS confusion waiting to happen.
_KEY_FOR_ALGORITHM: Mapping[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", "Ed25519"),
}
_MAX_JWKS_BYTES = 1 << 20  # a JWKS is a few kilobytes; a huge reply is refused, not buffered
_NO_KID = ""  # the key slot of a JWK without a "kid"


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class OidcSettings:
    """How bearer tokens are verified (the ``[server.oidc]`` table).

    ``jwks`` is a file path or an ``https://`` URL (``http://`` only to a loopback host: a JWKS
    fetched in clear text from elsewhere lets anyone on the path mint tokens).
    """

    issuer: str
    audience: str | tuple[str, ...]
    jwks: str
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    user_claim: str = "sub"
    leeway_s: float = 30.0
    jwks_refresh_s: float = 300.0
    jwks_max_age_s: float = 3600.0
    jwks_timeout_s: float = 5.0
    max_token_bytes: int = 8192
    # Browser sign-in (authorization-code flow with PKCE). The client id defaults to the
    # audience when there is one; the endpoints, when unset, come from the issuer's
    # ``/.well-known/openid-configuration``. A confidential client's secret is read from the
    # environment variable named here, never from the file.
    client_id: str | None = None
    client_secret_env: str | None = None
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    scopes: tuple[str, ...] = ("openid",)

    def __post_init__(self) -> None:
        p = "server.oidc"
        if not self.issuer:
            raise ConfigError(f"{p}.issuer must not be empty")
        audiences = (self.audience,) if isinstance(self.audience, str) else self.audience
        if not audiences or not all(audiences):
            raise ConfigError(f"{p}.audience must name at least one non-empty audience")
        _check_jwks_source(self.jwks, f"{p}.jwks")
        if not self.algorithms:
            raise ConfigError(f"{p}.algorithms must name at least one algorithm")
        for alg in self.algorithms:
            if alg.lower() == "none":
                raise ConfigError(f"{p}.algorithms must not contain 'none' (unsigned tokens)")
            if alg.upper().startswith("HS"):
                raise ConfigError(
                    f"{p}.algorithms must not contain {alg!r}: symmetric algorithms allow "
                    "HS/RS key confusion; use RS*, PS*, ES* or EdDSA"
                )
            if alg not in _KEY_FOR_ALGORITHM:
                raise ConfigError(
                    f"{p}.algorithms: {alg!r} is not supported; use one of "
                    + ", ".join(_KEY_FOR_ALGORITHM)
                )
        if not self.user_claim:
            raise ConfigError(f"{p}.user_claim must not be empty")
        for name in ("leeway_s", "jwks_refresh_s", "jwks_max_age_s", "jwks_timeout_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"{p}.{name} must be a finite number >= 0")
        if self.jwks_timeout_s <= 0:
            raise ConfigError(f"{p}.jwks_timeout_s must be > 0")
        if self.max_token_bytes <= 0:
            raise ConfigError(f"{p}.max_token_bytes must be > 0")
        for name in ("authorization_endpoint", "token_endpoint"):
            endpoint = getattr(self, name)
            if endpoint is not None:
                _check_https(endpoint, f"{p}.{name}")
        if "openid" not in self.scopes:
            raise ConfigError(f"{p}.scopes must include 'openid'")

    @property
    def browser_client_id(self) -> str:
        """The client id of the browser sign-in: ``client_id``, else the only audience."""
        if self.client_id:
            return self.client_id
        return self.audiences[0]

    @property
    def audiences(self) -> tuple[str, ...]:
        return (self.audience,) if isinstance(self.audience, str) else self.audience

    @property
    def jwks_is_url(self) -> bool:
        return _is_url(self.jwks)


def _is_url(source: str) -> bool:
    return source.startswith(("https://", "http://"))


def _check_jwks_source(source: str, key: str) -> None:
    if not source:
        raise ConfigError(f"{key} must be a file path or an https:// URL")
    if not _is_url(source):
        if "://" in source:
            raise ConfigError(f"{key} must be a file path or an https:// URL")
        return
    _check_https(source, key)


def _check_https(source: str, key: str) -> None:
    """``source`` is an https:// URL, or http:// to a loopback host (tests, a local IdP)."""
    if not _is_url(source):
        raise ConfigError(f"{key} must be an https:// URL")
    parts = urlsplit(source)
    if not parts.hostname:
        raise ConfigError(f"{key} is a URL without a host")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ConfigError(
            f"{key} must use https:// (http:// is allowed only to a loopback host): "
            "keys fetched in clear text can be replaced on the way"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_oidc_settings(data: Mapping[str, Any], key_prefix: str = "server.oidc") -> OidcSettings:
    """The ``[server.oidc]`` table → :class:`OidcSettings`; every error names its key."""

    def key(name: str) -> str:
        return f"{key_prefix}.{name}"

    known = {
        "issuer",
        "audience",
        "jwks",
        "algorithms",
        "user_claim",
        "leeway_s",
        "jwks_refresh_s",
        "jwks_max_age_s",
        "jwks_timeout_s",
        "max_token_bytes",
        "client_id",
        "client_secret_env",
        "authorization_endpoint",
        "token_endpoint",
        "scopes",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown setting {key(unknown[0])} (known: {', '.join(sorted(known))})")

    def text(name: str) -> str:
        value = data.get(name)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{key(name)} must be a non-empty string")
        return value

    def number(name: str, default: float) -> float:
        value = data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key(name)} must be a number")
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{key(name)} must be a finite number >= 0")
        return float(value)

    def strings(name: str) -> tuple[str, ...]:
        value = data[name]
        if isinstance(value, str):
            value = [value]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise ConfigError(f"{key(name)} must be a string or a non-empty list of strings")
        return tuple(value)

    audience = strings("audience") if "audience" in data else text("audience")
    max_token = data.get("max_token_bytes", 8192)
    if isinstance(max_token, bool) or not isinstance(max_token, int) or max_token <= 0:
        raise ConfigError(f"{key('max_token_bytes')} must be a positive integer")
    try:
        return OidcSettings(
            issuer=text("issuer"),
            audience=audience[0] if len(audience) == 1 else audience,
            jwks=text("jwks"),
            algorithms=strings("algorithms") if "algorithms" in data else ("RS256", "ES256"),
            user_claim=text("user_claim") if "user_claim" in data else "sub",
            leeway_s=number("leeway_s", 30.0),
            jwks_refresh_s=number("jwks_refresh_s", 300.0),
            jwks_max_age_s=number("jwks_max_age_s", 3600.0),
            jwks_timeout_s=number("jwks_timeout_s", 5.0),
            max_token_bytes=max_token,
            client_id=text("client_id") if "client_id" in data else None,
            client_secret_env=text("client_secret_env") if "client_secret_env" in data else None,
            authorization_endpoint=(
                text("authorization_endpoint") if "authorization_endpoint" in data else None
            ),
            token_endpoint=text("token_endpoint") if "token_endpoint" in data else None,
            scopes=strings("scopes") if "scopes" in data else ("openid",),
        )
    except ConfigError as exc:
        if key_prefix == "server.oidc":
            raise
        raise ConfigError(exc.message.replace("server.oidc.", f"{key_prefix}.")) from exc


# --------------------------------------------------------------------------- keys


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
            want_kty, want_crv = _KEY_FOR_ALGORITHM[alg]
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
        if not _is_url(source):
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
    # Most specific first: several of these subclass DecodeError / InvalidTokenError.
    (jwt.ExpiredSignatureError, "expired", "the token has expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid", "the token is not valid yet"),
    (jwt.InvalidIssuerError, "wrong_issuer", "the token was issued by another issuer"),
    (jwt.InvalidAudienceError, "wrong_audience", "the token is meant for another audience"),
    (jwt.MissingRequiredClaimError, "missing_claim", "the token lacks a required claim"),
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
