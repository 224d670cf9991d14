"""The per-provider sign-in recipes of docs/server.md, each checked by feeding that
provider's documented ID-token shape through the verifier with the recipe's settings and
resolving the claim to a directory user through its aliases.

The token shapes are the providers' published ones:

* Microsoft Entra ID v2.0 ID tokens — learn.microsoft.com/en-us/entra/identity-platform/
  id-token-claims-reference: ``iss`` ``https://login.microsoftonline.com/{tid}/v2.0``,
  ``aud`` the application (client) id, ``tid``, ``oid`` (the user's immutable object id),
  ``preferred_username`` (mutable, not for authorization), ``ver`` ``"2.0"``, RS256 with a
  ``kid``; keys at ``https://login.microsoftonline.com/{tid}/discovery/v2.0/keys``.
* Okta — developer.okta.com/docs/reference/api/oidc/#id-token: ``iss``
  ``https://{domain}/oauth2/default`` (a custom authorization server) or
  ``https://{domain}`` (the org server), ``sub`` the Okta user id (``00u…``),
  ``preferred_username`` the Okta login, ``ver`` 1; keys at ``{iss}/v1/keys``.
* Google — developers.google.com/identity/openid-connect/openid-connect#an-id-tokens-payload:
  ``iss`` ``https://accounts.google.com``, ``sub`` the account's unique id, ``email``,
  ``email_verified``, ``hd`` the Workspace domain; keys at
  ``https://www.googleapis.com/oauth2/v3/certs``.
* Keycloak — www.keycloak.org/docs (OIDC endpoints): ``iss``
  ``https://{host}/realms/{realm}``, ``sub`` a UUID, ``preferred_username``, ``azp``,
  ``typ`` ``"ID"``; keys at ``{iss}/protocol/openid-connect/certs``.

Each recipe also has a negative: a token of another tenant, server or realm is refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from clearance.access.directory import Directory, parse_directory
from clearance.api.oidc import AuthError, JwtVerifier, parse_oidc_settings

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT = "6731de76-14a6-49ae-97bc-6eba6914391e"
OBJECT_ID = "00000000-0000-0000-66f3-3332eca7ea81"

DIRECTORY = Directory().replace(
    parse_directory(
        {
            "users": [
                {
                    "id": "alice@contoso.com",
                    "active": True,
                    # what the directory sources and SCIM record: object id, mail, login,
                    # the Okta and Google user ids
                    "aliases": [
                        OBJECT_ID,
                        "00ub0oNGTSWTBKOLGLNR",
                        "110169484474386276334",
                        "alice@contoso.com",
                    ],
                }
            ],
            "groups": [],
        },
        source="directory.json",
    )
)

RECIPES: dict[str, dict[str, Any]] = {
    "entra": {
        "settings": {
            "issuer": f"https://login.microsoftonline.com/{TENANT}/v2.0",
            "audience": CLIENT,
            "user_claim": "oid",
            "scopes": ["openid", "profile", "email"],
        },
        "claims": {
            "iss": f"https://login.microsoftonline.com/{TENANT}/v2.0",
            "aud": CLIENT,
            "tid": TENANT,
            "oid": OBJECT_ID,
            "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
            "preferred_username": "alice@contoso.com",
            "name": "Alice Example",
            "ver": "2.0",
        },
        "other": {"iss": "https://login.microsoftonline.com/another-tenant/v2.0"},
    },
    "okta": {
        "settings": {
            "issuer": "https://contoso.okta.com/oauth2/default",
            "audience": "0oabucvyc38HLL1ef0h7",
            "user_claim": "sub",
            "scopes": ["openid", "profile", "email"],
        },
        "claims": {
            "iss": "https://contoso.okta.com/oauth2/default",
            "aud": "0oabucvyc38HLL1ef0h7",
            "sub": "00ub0oNGTSWTBKOLGLNR",
            "preferred_username": "alice@contoso.com",
            "email": "alice@contoso.com",
            "ver": 1,
            "idp": "00ob0oNGTSWTBKOLGLNR",
            "amr": ["pwd"],
        },
        # The org authorization server's tokens are another issuer.
        "other": {"iss": "https://contoso.okta.com"},
    },
    "google": {
        "settings": {
            "issuer": "https://accounts.google.com",
            "audience": "1234987819200.apps.googleusercontent.com",
            "user_claim": "sub",
            "scopes": ["openid", "email"],
        },
        "claims": {
            "iss": "https://accounts.google.com",
            "aud": "1234987819200.apps.googleusercontent.com",
            "azp": "1234987819200.apps.googleusercontent.com",
            "sub": "110169484474386276334",
            "email": "alice@contoso.com",
            "email_verified": True,
            "hd": "contoso.com",
        },
        "other": {"aud": "someone-elses-app.apps.googleusercontent.com"},
    },
    "keycloak": {
        "settings": {
            "issuer": "https://sso.contoso.com/realms/contoso",
            "audience": "clearance",
            "user_claim": "preferred_username",
            "scopes": ["openid"],
        },
        "claims": {
            "iss": "https://sso.contoso.com/realms/contoso",
            "aud": "clearance",
            "azp": "clearance",
            "typ": "ID",
            "sub": "f1d6a2a4-3c1e-4c5b-9b0e-0b3e0c6f2d11",
            "preferred_username": "alice@contoso.com",
        },
        "other": {"iss": "https://sso.contoso.com/realms/master"},
    },
}


def mint(claims: dict[str, Any]) -> str:
    now = int(time.time())
    body = {"iat": now, "nbf": now, "exp": now + 3600, **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": "recipe-key"})


@pytest.fixture
def verifier(tmp_path: Path) -> Callable[[dict[str, Any]], JwtVerifier]:
    jwks = tmp_path / "jwks.json"
    jwk = {**RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "recipe-key"}
    jwks.write_text(json.dumps({"keys": [jwk]}), encoding="utf-8")

    def build(settings: dict[str, Any]) -> JwtVerifier:
        return JwtVerifier(parse_oidc_settings({**settings, "jwks": str(jwks)}, "server.oidc"))

    return build


@pytest.mark.parametrize("provider", sorted(RECIPES))
def test_each_recipe_signs_the_documented_token_in_as_the_directory_user(
    provider: str, verifier: Callable[[dict[str, Any]], JwtVerifier]
) -> None:
    recipe = RECIPES[provider]
    claim = verifier(recipe["settings"]).verify(mint(recipe["claims"]))
    match = DIRECTORY.resolve(claim)
    assert match is not None and match.user_id == "alice@contoso.com", (provider, claim)


@pytest.mark.parametrize("provider", sorted(RECIPES))
def test_each_recipe_refuses_a_token_of_another_tenant_or_client(
    provider: str, verifier: Callable[[dict[str, Any]], JwtVerifier]
) -> None:
    recipe = RECIPES[provider]
    with pytest.raises(AuthError):
        verifier(recipe["settings"]).verify(mint({**recipe["claims"], **recipe["other"]}))


def test_the_recipes_in_the_docs_are_the_ones_tested() -> None:
    """docs/server.md shows each recipe's issuer form and claim as tested here."""
    text = (Path(__file__).parents[2] / "docs" / "server.md").read_text(encoding="utf-8")
    for name, (issuer, claim) in {
        "Entra ID": ("https://login.microsoftonline.com/{tenant-id}/v2.0", "oid"),
        "Okta": ("https://{your-domain}.okta.com/oauth2/default", "sub"),
        "Google Workspace": ("https://accounts.google.com", "sub"),
        "Keycloak": ("https://{host}/realms/{realm}", "preferred_username"),
    }.items():
        section = text.split(f"### {name}", 1)[1].split("\n### ", 1)[0]
        assert f'issuer = "{issuer}"' in section, name
        assert f'user_claim = "{claim}"' in section, name


def test_reverse_proof_the_mutable_entra_name_is_not_the_recipes_claim(
    verifier: Callable[[dict[str, Any]], JwtVerifier],
) -> None:
    """The Entra recipe reads ``oid``: a token whose ``preferred_username`` was reassigned
    to another person still signs in its own object id, never the name's old owner."""
    recipe = RECIPES["entra"]
    reassigned = {**recipe["claims"], "oid": "11111111-2222-3333-4444-555555555555"}
    claim = verifier(recipe["settings"]).verify(mint(reassigned))
    assert DIRECTORY.resolve(claim) is None
    # The same token read by its name would have signed in as alice.
    by_name = verifier({**recipe["settings"], "user_claim": "preferred_username"})
    assert DIRECTORY.resolve(by_name.verify(mint(reassigned))) is not None
