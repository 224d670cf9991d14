"""Who is calling: the :class:`Authenticator` seam and the API-token authenticator.

An authenticator turns a request's credentials into an :class:`Identity` (a user id and
whether the credential grants the administrator routes) or ``None``. The app asks each
configured authenticator in turn; the first identity wins, and no identity is a 401.
OIDC bearer tokens and trusted proxy headers plug in as further authenticators.

An identity is only a claim about *who*; what that user may read, and whether the account
is active at all, is resolved from the synced directory on every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from clearance.api.tokens import TokenStore

__all__ = ["ApiTokenAuthenticator", "Authenticator", "Identity", "bearer_token"]


@dataclass(frozen=True, slots=True)
class Identity:
    user_id: str
    admin: bool
    method: str  # "api_token", later "oidc", "proxy"


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


class ApiTokenAuthenticator:
    """``Authorization: Bearer clr_…`` checked against the hashed tokens in the index."""

    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens

    def authenticate(self, headers: Mapping[str, str], peer: str | None) -> Identity | None:
        credential = bearer_token(headers)
        if credential is None:
            return None
        record = self.tokens.verify(credential)
        if record is None:
            return None
        return Identity(record.user_id, record.admin, "api_token")
