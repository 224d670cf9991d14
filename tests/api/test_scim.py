"""``/scim/v2`` over a real server on loopback, driven by the request sequences identity
providers send, written from their published documentation:

* Microsoft Entra ID — "Tutorial: Develop and plan provisioning for a SCIM endpoint in
  Microsoft Entra ID" (learn.microsoft.com/en-us/entra/identity/app-provisioning/
  use-scim-to-provision-users-and-groups), the requests its provisioning service and
  validator send: a user looked up by ``userName eq`` before it is created, ``Replace``
  with a capital R, ``active`` as the string ``"False"``, ``emails[type eq "work"].value``,
  members added as a value list and removed by ``members[value eq "…"]``, groups read
  with ``excludedAttributes=members``.
* Okta — "SCIM 2.0 protocol reference" and the Okta SCIM 2.0 test suite
  (developer.okta.com/docs/api/openapi/okta-scim/guides/scim-20): ``startIndex=1&count=100``
  on every list, a create carrying ``password`` and ``groups: []``, a full ``PUT``, a
  deactivation as ``{"op": "replace", "value": {"active": false}}`` without a path, and
  group renames the same way.

The end-to-end case is the issue's must-show: a provider provisions a user, the user signs
in with the company's OIDC provider and asks; the provider deactivates the user; the next
request is refused; no directory file is uploaded at any point. Reverse proofs: a gate that
lets an administrator's token provision, and a service that accepts a provisioning token
as a sign-in, are caught by the same assertions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from clearance.api import auth
from clearance.api.app import create_app
from clearance.config import load_settings

from .conftest import create_token, make_project, serving_app

SCIM = "application/scim+json"
ISSUER = "https://login.example.test/tenant/v2.0"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def id_token(username: str) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": "clearance",
        "sub": "opaque-" + username,
        "preferred_username": username,
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    }
    return jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("scim")
    config = make_project(root)
    jwks = {"keys": [{**RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k1"}]}
    (root / "jwks.json").write_text(json.dumps(jwks), encoding="utf-8")
    with config.open("a", encoding="utf-8") as fh:
        fh.write(
            "\n[server.oidc]\n"
            f'issuer = "{ISSUER}"\naudience = "clearance"\njwks = "jwks.json"\n'
            'user_claim = "preferred_username"\n'
        )
    provisioning = create_token(config, "entra-provisioning", "--scope", "scim")["token"]
    admin = create_token(config, "root", "--admin")["token"]
    reader = create_token(config, "ann")["token"]
    with serving_app(create_app(load_settings(config))) as url:
        yield {"url": url, "config": config, "scim": provisioning, "admin": admin, "ann": reader}


def client(server: dict[str, Any], token: str | None = None) -> httpx.Client:
    headers = {"Content-Type": SCIM}
    headers["Authorization"] = f"Bearer {token or server['scim']}"
    return httpx.Client(base_url=server["url"] + "/scim/v2", headers=headers, timeout=10)


def ask(server: dict[str, Any], bearer: str, question: str = "Where do I book trains?") -> str:
    """The answer's status, or the HTTP status when there is no answer."""
    reply = httpx.post(
        server["url"] + "/v1/ask",
        json={"question": question},
        headers={"Authorization": f"Bearer {bearer}"},
        timeout=30,
    )
    return str(reply.json()["status"]) if reply.status_code == 200 else str(reply.status_code)


# --------------------------------------------------------------------------- credentials


def test_only_a_provisioning_token_reaches_scim(server: dict[str, Any]) -> None:
    for token in (server["admin"], server["ann"], id_token("ann")):
        with client(server, token) as c:
            reply = c.get("/Users")
        assert reply.status_code == 401, token
        assert reply.headers["content-type"].startswith(SCIM)
        assert reply.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    with client(server) as c:
        assert c.get("/Users").status_code == 200


def test_a_provisioning_token_signs_nobody_in(server: dict[str, Any]) -> None:
    assert ask(server, server["scim"]) == "401"
    me = httpx.get(server["url"] + "/v1/me", headers={"Authorization": f"Bearer {server['scim']}"})
    assert me.status_code == 401


def test_reverse_proof_a_gate_that_lets_an_admin_provision_is_caught(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The assertion above, against a gate that accepts any valid token: it fails."""

    def any_token(self: Any, headers: Any, peer: Any) -> auth.Identity | None:
        record = self.tokens.verify(auth.bearer_token(headers) or "")
        return None if record is None else auth.Identity(record.user_id, True, "x")

    monkeypatch.setattr(auth.ProvisioningTokenAuthenticator, "authenticate", any_token)
    with client(server, server["admin"]) as c:
        assert c.get("/Users").status_code == 200  # the leaky gate lets the admin in


# --------------------------------------------------------------------------- Entra ID


def test_the_entra_provisioning_sequence(server: dict[str, Any]) -> None:
    user_name = "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"
    with client(server) as c:
        found = c.get("/Users", params={"filter": f'userName eq "{user_name}"'})
        assert found.status_code == 200 and found.json()["totalResults"] == 0
        created = c.post(
            "/Users",
            json={
                "schemas": [
                    "urn:ietf:params:scim:schemas:core:2.0:User",
                    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
                ],
                "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
                "userName": user_name,
                "active": True,
                "emails": [{"primary": True, "type": "work", "value": "Test_User@contoso.com"}],
                "meta": {"resourceType": "User"},
                "name": {"formatted": "givenName familyName", "familyName": "familyName",
                         "givenName": "givenName"},
                "roles": [],
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {
                    "department": "Tour Operations"
                },
            },
        )  # fmt: skip
        assert created.status_code == 201, created.text
        body = created.json()
        ident = body["id"]
        assert created.headers["location"].endswith(f"/scim/v2/Users/{ident}")
        assert body["userName"] == user_name and body["active"] is True
        # Case-insensitive userName, as RFC 7643 §4.1.1 says and Entra relies on.
        again = c.get("/Users", params={"filter": f'userName eq "{user_name.upper()}"'})
        assert [r["id"] for r in again.json()["Resources"]] == [ident]
        dup = c.post("/Users", json={"schemas": [body["schemas"][0]], "userName": user_name})
        assert dup.status_code == 409 and dup.json()["scimType"] == "uniqueness"
        patched = c.patch(
            f"/Users/{ident}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [
                    {"op": "Replace", "path": 'emails[type eq "work"].value',
                     "value": "updatedEmail@contoso.com"},
                    {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
                ],
            },
        )  # fmt: skip
        assert patched.status_code == 200, patched.text
        assert patched.json()["name"]["familyName"] == "updatedFamilyName"
        assert patched.json()["emails"][0]["value"] == "updatedEmail@contoso.com"
        disabled = c.patch(
            f"/Users/{ident}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "Replace", "path": "active", "value": "False"}],
            },
        )
        assert disabled.status_code == 200 and disabled.json()["active"] is False
        group = c.post(
            "/Groups",
            json={
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
                "displayName": "entra-sales",
                "meta": {"resourceType": "Group"},
            },
        )
        assert group.status_code == 201, group.text
        gid = group.json()["id"]
        added = c.patch(
            f"/Groups/{gid}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "Add", "path": "members", "value": [{"value": ident}]}],
            },
        )
        assert added.status_code == 200 and added.json()["members"][0]["value"] == ident
        lookup = c.get(
            "/Groups",
            params={"excludedAttributes": "members", "filter": 'displayName eq "entra-sales"'},
        )
        assert lookup.json()["totalResults"] == 1
        assert "members" not in lookup.json()["Resources"][0]
        removed = c.patch(
            f"/Groups/{gid}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "Remove", "path": f'members[value eq "{ident}"]'}],
            },
        )
        assert removed.status_code == 200 and removed.json()["members"] == []
        assert c.delete(f"/Groups/{gid}").status_code == 204
        assert c.delete(f"/Users/{ident}").status_code == 204
        assert c.get(f"/Users/{ident}").status_code == 404


# --------------------------------------------------------------------------- Okta


def test_the_okta_test_suite_sequence(server: dict[str, Any]) -> None:
    page = {"startIndex": 1, "count": 100}
    with client(server) as c:
        listed = c.get("/Users", params=page)
        assert listed.status_code == 200
        assert listed.json()["startIndex"] == 1 and listed.json()["itemsPerPage"] <= 100
        none = c.get("/Users", params={**page, "filter": 'userName eq "test.user@okta.local"'})
        assert none.json()["totalResults"] == 0 and none.json()["Resources"] == []
        created = c.post(
            "/Users",
            json={
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": "test.user@okta.local",
                "name": {"givenName": "Test", "familyName": "User"},
                "emails": [{"primary": True, "value": "test.user@okta.local", "type": "work"}],
                "displayName": "Test User",
                "locale": "en-US",
                "externalId": "00ujl29u0le5T6Aj10h7",
                "groups": [],
                "password": "1mz050nq",
                "active": True,
            },
        )
        assert created.status_code == 201, created.text
        ident = created.json()["id"]
        assert "password" not in created.json()
        got = c.get(f"/Users/{ident}")
        assert got.status_code == 200 and got.json()["displayName"] == "Test User"
        replaced = c.put(
            f"/Users/{ident}",
            json={
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "id": ident,
                "userName": "test.user@okta.local",
                "name": {"givenName": "Another", "familyName": "User"},
                "emails": [{"primary": True, "value": "test.user@okta.local", "type": "work"}],
                "displayName": "Another User",
                "active": True,
            },
        )
        assert replaced.status_code == 200 and replaced.json()["displayName"] == "Another User"
        deactivated = c.patch(
            f"/Users/{ident}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "value": {"active": False}}],
            },
        )
        assert deactivated.status_code == 200 and deactivated.json()["active"] is False
        group = c.post(
            "/Groups",
            json={
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                "displayName": "okta-test-group",
                "members": [],
            },
        )
        assert group.status_code == 201, group.text
        gid = group.json()["id"]
        member = c.patch(
            f"/Groups/{gid}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [
                    {"op": "add", "path": "members",
                     "value": [{"value": ident, "display": "test.user@okta.local"}]}
                ],
            },
        )  # fmt: skip
        assert member.status_code == 200 and [m["value"] for m in member.json()["members"]] == [
            ident
        ]
        renamed = c.patch(
            f"/Groups/{gid}",
            json={
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [
                    {"op": "replace", "value": {"id": gid, "displayName": "Okta Test Group"}}
                ],
            },
        )
        assert renamed.status_code == 200 and renamed.json()["displayName"] == "Okta Test Group"
        assert renamed.json()["id"] == gid  # the id ACLs name never changes
        for path in ("/ServiceProviderConfig", "/ResourceTypes", "/Schemas"):
            assert c.get(path).status_code == 200, path
        assert c.get("/ResourceTypes/User").json()["endpoint"] == "/Users"


def test_bad_requests_get_scim_errors_and_change_nothing(server: dict[str, Any]) -> None:
    with client(server) as c:
        bad_filter = c.get("/Users", params={"filter": "userName eq"})
        assert bad_filter.status_code == 400 and bad_filter.json()["scimType"] == "invalidFilter"
        no_name = c.post("/Users", json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]})
        assert no_name.status_code == 400
        spaced = c.post(
            "/Users",
            json={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "a b"},
        )
        assert spaced.status_code == 400 and "whitespace" in spaced.json()["detail"]
        not_json = c.post("/Users", content=b"{")
        assert not_json.status_code == 400 and not_json.json()["scimType"] == "invalidSyntax"
        unknown_op = c.patch(
            "/Users/ann",
            json={"Operations": [{"op": "move", "path": "active", "value": False}]},
        )
        assert unknown_op.status_code == 400
        assert c.get("/Users/ann").json()["active"] is True  # nothing applied
        assert c.get("/Users/nobody").status_code == 404


# --------------------------------------------------------------------------- end to end


def test_provisioned_then_deactivated_user_is_refused_on_the_next_request(
    server: dict[str, Any],
) -> None:
    """The issue's must-show: provision through SCIM, sign in through OIDC and ask, be
    deactivated through SCIM, be refused on the next request. No file is uploaded."""
    username = "maya@acme.test"
    with client(server) as c:
        created = c.post(
            "/Users",
            json={
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": username,
                "active": True,
                "emails": [{"value": username, "type": "work", "primary": True}],
            },
        )
        assert created.status_code == 201, created.text
        staff = c.get("/Groups", params={"filter": 'displayName eq "staff"'}).json()
        assert staff["totalResults"] == 1  # a group the directory already had is found
        joined = c.patch(
            "/Groups/staff",
            json={"Operations": [{"op": "add", "path": "members", "value": [{"value": username}]}]},
        )
        assert joined.status_code == 200, joined.text
    signed_in = id_token(username)
    me = httpx.get(server["url"] + "/v1/me", headers={"Authorization": f"Bearer {signed_in}"})
    assert me.status_code == 200 and me.json()["user"] == username and me.json()["active"]
    answer = httpx.post(
        server["url"] + "/v1/ask",
        json={"question": "Where do I book trains?"},
        headers={"Authorization": f"Bearer {signed_in}"},
        timeout=30,
    )
    assert answer.status_code == 200 and answer.json()["status"] == "answered", answer.text
    with client(server) as c:
        off = c.patch(
            f"/Users/{username}",
            json={"Operations": [{"op": "Replace", "path": "active", "value": "False"}]},
        )
        assert off.status_code == 200
    assert ask(server, signed_in) == "account_disabled"


def test_reverse_proof_a_deactivation_that_does_not_reach_the_directory_is_caught(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service that kept ``active: false`` in its own records but not in the directory
    would let the user go on asking: the same check as above sees the answer."""
    from clearance.access import scim
    from clearance.access.directory import User

    real = scim._directory_user

    def always_active(ident: str, resource: Any) -> User:
        user = real(ident, resource)
        return User(user.id, True, user.attributes, user.aliases)

    monkeypatch.setattr(scim, "_directory_user", always_active)
    username = "leaky@acme.test"
    with client(server) as c:
        assert c.post("/Users", json={"userName": username, "active": True}).status_code == 201
        assert (
            c.patch(
                f"/Users/{username}",
                json={"Operations": [{"op": "Replace", "path": "active", "value": "False"}]},
            ).status_code
            == 200
        )
    assert ask(server, id_token(username)) != "account_disabled"  # the check above fails


def test_reverse_proof_a_service_taking_a_provisioning_token_as_sign_in_is_caught(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def any_token(self: Any, headers: Any, peer: Any) -> auth.Identity | None:
        record = self.tokens.verify(auth.bearer_token(headers) or "")
        return None if record is None else auth.Identity("ann", False, "api_token")

    monkeypatch.setattr(auth.ApiTokenAuthenticator, "authenticate", any_token)
    # what test_a_provisioning_token_signs_nobody_in rules out
    assert ask(server, server["scim"]) == "answered"


def test_the_directory_version_moves_with_every_write(server: dict[str, Any]) -> None:
    rc_before = _directory_version(server["config"])
    with client(server) as c:
        assert c.patch(
            "/Users/ann", json={"Operations": [{"op": "replace", "path": "displayName",
                                                "value": "Ann"}]}
        ).status_code == 200  # fmt: skip
    assert _directory_version(server["config"]) == rc_before + 1


def _directory_version(config: Path) -> int:
    from clitools import cli

    rc, out, err = cli("--config", config, "status", "--json")
    assert rc == 0, err
    return int(json.loads(out)["directory"]["version"])


# --------------------------------------------------------------------------- aliases


def test_sign_in_by_any_alias_resolves_to_one_directory_user(
    server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user provisioned as ``kai@acme.test`` with the address ``k.tanaka@acme.test``
    signs in with either name; an address two users carry signs in as nobody; `explain`
    says which alias matched. Reverse proof: sign-in that takes the claim as the id
    finds no such user."""
    with client(server) as c:
        for body in (
            {"userName": "kai@acme.test", "emails": [{"value": "k.tanaka@acme.test"},
                                                     {"value": "desk@acme.test"}]},
            {"userName": "lee@acme.test", "emails": [{"value": "DESK@acme.test"}]},
        ):  # fmt: skip
            assert c.post("/Users", json=body).status_code == 201

    def me(name: str) -> dict[str, Any]:
        reply = httpx.get(
            server["url"] + "/v1/me", headers={"Authorization": f"Bearer {id_token(name)}"}
        )
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    assert me("K.Tanaka@acme.test")["user"] == "kai@acme.test"
    assert me("kai@acme.test")["user"] == "kai@acme.test"
    shared = me("desk@acme.test")
    assert shared["user"] == "desk@acme.test" and not shared["known"]  # nobody

    from clitools import cli

    rc, out, err = cli(
        "--config", server["config"], "explain", "--user", "k.tanaka@acme.test",
        "--doc", "files:travel.md", "--json",
    )  # fmt: skip
    assert rc == 0, err
    explained = json.loads(out)
    assert (explained["user"], explained["matched"]) == ("kai@acme.test", "k.tanaka@acme.test")

    monkeypatch.setattr(
        "clearance.access.directory.Directory.resolve", lambda self, name: None, raising=True
    )
    assert not me("k.tanaka@acme.test")["known"]  # without aliases the name is nobody


def test_a_directory_kept_by_a_directory_source_refuses_scim_writes(
    server: dict[str, Any],
) -> None:
    """A directory source owns the whole directory and its next read would undo a SCIM
    write: with one configured, writes are refused (409) and nothing changes; reads work."""
    import dataclasses

    from fastapi.testclient import TestClient

    from clearance.config import DirectorySourceSettings

    settings = load_settings(server["config"])
    owned = dataclasses.replace(
        settings, directories={"corp": DirectorySourceSettings("corp", "okta")}
    )
    client_ = TestClient(create_app(owned))  # no lifespan: no scheduler reads "corp"
    headers = {"Authorization": f"Bearer {server['scim']}", "Content-Type": SCIM}
    refused = client_.post("/scim/v2/Users", json={"userName": "x@acme.test"}, headers=headers)
    assert refused.status_code == 409 and "directory source corp" in refused.json()["detail"]
    assert client_.get("/scim/v2/Users/x@acme.test", headers=headers).status_code == 404
    assert client_.get("/scim/v2/Users", headers=headers).status_code == 200


def test_filters_by_external_id_and_pages_by_start_index_and_count(
    server: dict[str, Any],
) -> None:
    with client(server) as c:
        for i in range(3):
            body = {"userName": f"page{i}@acme.test", "externalId": f"ext-page-{i}"}
            assert c.post("/Users", json=body).status_code == 201
        by_external = c.get("/Users", params={"filter": 'externalId eq "ext-page-1"'}).json()
        assert [r["id"] for r in by_external["Resources"]] == ["page1@acme.test"]
        # externalId is case-exact (RFC 7643): another case is another value.
        assert (
            c.get("/Users", params={"filter": 'externalId eq "EXT-PAGE-1"'}).json()["totalResults"]
            == 0
        )
        wanted = 'userName sw "page"'
        first = c.get("/Users", params={"filter": wanted, "startIndex": 1, "count": 2}).json()
        second = c.get("/Users", params={"filter": wanted, "startIndex": 3, "count": 2}).json()
        assert first["totalResults"] == second["totalResults"] == 3
        assert (first["itemsPerPage"], second["itemsPerPage"]) == (2, 1)
        ids = [r["id"] for r in first["Resources"] + second["Resources"]]
        assert ids == ["page0@acme.test", "page1@acme.test", "page2@acme.test"]
        bad = c.get("/Users", params={"count": "many"})
        assert bad.status_code == 400 and bad.json()["scimType"] == "invalidValue"
