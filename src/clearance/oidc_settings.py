"""The ``[server.oidc]`` settings: how bearer tokens are verified, checked when the
configuration is read (the verifier itself is :mod:`clearance.api.oidc`).

``none`` and every HMAC algorithm are refused here, so the HS/RS confusion has nothing to
verify against; a JWKS URL must be HTTPS unless it names a loopback host.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import ConfigDict, PlainValidator

from clearance.errors import ConfigError
from clearance.validation import Invalid, non_empty, validate

__all__ = ["KEY_FOR_ALGORITHM", "OidcSettings", "is_url", "parse_oidc_settings"]

# The asymmetric algorithms a token may use, each with the key type (and curve) it needs.
# HMAC is deliberately absent: a shared secret in a JWKS is an HS/RS confusion waiting to happen.
KEY_FOR_ALGORITHM: Mapping[str, tuple[str, str | None]] = {
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


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list | tuple)
        or not value
        or not all(isinstance(v, str) and v for v in value)
    ):
        raise Invalid("must be a string or a non-empty list of strings")
    return tuple(value)


def _audience(value: object) -> str | tuple[str, ...]:
    audience = _strings(value)
    return audience[0] if len(audience) == 1 else audience


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid("must be a number")
    if not math.isfinite(value) or value < 0:
        raise Invalid("must be a finite number >= 0")
    return float(value)


def _positive(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Invalid("must be a positive integer")
    return value


_Text = Annotated[str, non_empty("must be a non-empty string")]
_Strings = Annotated[tuple[str, ...], PlainValidator(_strings)]
_Seconds = Annotated[float, PlainValidator(_seconds)]


@dataclass(frozen=True)
class OidcSettings:
    """How bearer tokens are verified (the ``[server.oidc]`` table).

    ``jwks`` is a file path or an ``https://`` URL (``http://`` only to a loopback host: a JWKS
    fetched in clear text from elsewhere lets anyone on the path mint tokens).
    """

    __pydantic_config__ = ConfigDict(extra="forbid")

    issuer: _Text
    audience: Annotated[str | tuple[str, ...], PlainValidator(_audience)]
    jwks: _Text
    algorithms: _Strings = ("RS256", "ES256")
    user_claim: _Text = "sub"
    leeway_s: _Seconds = 30.0
    jwks_refresh_s: _Seconds = 300.0
    jwks_max_age_s: _Seconds = 3600.0
    jwks_timeout_s: _Seconds = 5.0
    max_token_bytes: Annotated[int, PlainValidator(_positive)] = 8192
    # Browser sign-in (authorization-code flow with PKCE). The client id defaults to the
    # audience when there is one; the endpoints, when unset, come from the issuer's
    # ``/.well-known/openid-configuration``. A confidential client's secret is read from the
    # environment variable named here, never from the file.
    client_id: _Text | None = None
    client_secret_env: _Text | None = None
    authorization_endpoint: _Text | None = None
    token_endpoint: _Text | None = None
    scopes: _Strings = ("openid",)

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
            if alg not in KEY_FOR_ALGORITHM:
                raise ConfigError(
                    f"{p}.algorithms: {alg!r} is not supported; use one of "
                    + ", ".join(KEY_FOR_ALGORITHM)
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
        return is_url(self.jwks)


def is_url(source: str) -> bool:
    return source.startswith(("https://", "http://"))


def _check_jwks_source(source: str, key: str) -> None:
    if not source:
        raise ConfigError(f"{key} must be a file path or an https:// URL")
    if not is_url(source):
        if "://" in source:
            raise ConfigError(f"{key} must be a file path or an https:// URL")
        return
    _check_https(source, key)


def _check_https(source: str, key: str) -> None:
    """``source`` is an https:// URL, or http:// to a loopback host (tests, a local IdP)."""
    if not is_url(source):
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
    try:
        oidc: OidcSettings = validate(OidcSettings, dict(data), at="server.oidc")
    except ConfigError as exc:
        if key_prefix == "server.oidc":
            raise
        found = [p.replace("server.oidc.", f"{key_prefix}.") for p in exc.problems]
        raise ConfigError(found[0], problems=found) from exc
    return oidc
