"""The two sign-in modes beside API tokens, end to end against a real uvicorn server.

OIDC: JWTs minted here with a test RSA key, the JWKS served by a real loopback server (as in
``test_oidc``). Trusted header: the server trusts only 127.0.0.2, and a real client binds
that local address to be the proxy. In both modes the token or header names the user and
nothing more: groups and administrator rights come from the synced directory, where
``clearance-admins`` holds ``ops`` (which holds root) and the disabled bob.

The peer check carries a reverse proof: with the check made to accept any peer, the very
request the real server refuses signs in.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import (
    DIRECTORY,
    create_token,
    free_port,
    make_project,
    serving,
    wait_until_serving,
)
from api.test_oidc import (
    AUDIENCE,
    ISSUER,
    JWKS,
    RSA_NEXT,
    RSA_OTHER,
    JwksServer,
    confusion_token,
    mint,
    rsa_jwk,
)
from clearance.api import app as app_module
from clearance.api import ui as ui_module
from clearance.api.auth import TrustedHeaderAuthenticator
from clearance.api.errors import status_of
from clearance.config import settings_from_dict
from clearance.errors import AuthError, ConfigError
from clitools import cli

PROXY = "127.0.0.2"  # the one trusted proxy; every loopback address reaches the server
UNAUTHENTICATED = 401

ADMIN_DIRECTORY = {
    "users": DIRECTORY["users"],
    "groups": [
        *DIRECTORY["groups"],
        {"id": "ops", "members": ["user:root"]},
        {"id": "clearance-admins", "members": ["group:ops", "user:bob"]},
    ],
}


def configure(root: Path, server_toml: str) -> Path:
    """The API test project with these ``[server]`` keys (and tables) and the directory
    above, where administrators are members of ``clearance-admins``."""
    config = make_project(root)
    text = config.read_text(encoding="utf-8")
    keys, _, tables = server_toml.partition("\n[")
    tables = f"\n[{tables}" if tables else ""
    if "\n[server]\n" in text:
        text = text.replace("\n[server]\n", f"\n[server]\n{keys}\n", 1) + tables
    else:
        text += f"\n[server]\n{keys}\n{tables}"
    config.write_text(text, encoding="utf-8")
    directory = root / "admins.json"
    directory.write_text(json.dumps(ADMIN_DIRECTORY), encoding="utf-8")
    rc, _, err = cli("--config", config, "directory", "sync", directory)
    assert rc == 0, err
    return config


def assert_unauthenticated(response: httpx.Response) -> None:
    """The one 401: same status, header and body whatever was wrong with the credential."""
    assert response.status_code == UNAUTHENTICATED, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    body = response.json()
    assert set(body) == {"error", "message"} and body["error"] == "unauthenticated"


# --------------------------------------------------------------------------- OIDC


@pytest.fixture(scope="module")
def jwks() -> Iterator[JwksServer]:
    with JwksServer() as server:
        yield server


@dataclass(frozen=True)
class Served:
    url: str
    config: Path


@pytest.fixture(scope="module")
def oidc_server(tmp_path_factory: pytest.TempPathFactory, jwks: JwksServer) -> Iterator[Served]:
    config = configure(
        tmp_path_factory.mktemp("oidc"),
        f"""admin_groups = ["clearance-admins"]
[server.oidc]
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
jwks = "{jwks.url}"
jwks_refresh_s = 0  # every unknown kid refetches: rotation is visible at once
""",
    )
    with serving(config) as url:
        yield Served(url, config)


@pytest.fixture(scope="module")
def oidc(oidc_server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=oidc_server.url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_jwt_signs_in_as_its_user_for_me_and_ask(oidc: httpx.Client) -> None:
    headers = bearer(mint(sub="ann"))

    me = oidc.get("/v1/me", headers=headers)
    ask = oidc.post("/v1/ask", json={"question": "Hotels limits"}, headers=headers)

    assert me.status_code == 200
    assert me.json()["user"] == "ann" and me.json()["groups"] == ["staff"]
    assert me.json()["admin"] is False
    assert ask.status_code == 200 and ask.json()["status"] == "answered"
    assert ask.json()["citations"]


def test_api_tokens_still_sign_in_beside_oidc(oidc: httpx.Client, oidc_server: Served) -> None:
    token = create_token(oidc_server.config, "ann")["token"]

    assert oidc.get("/v1/me", headers=bearer(token)).json()["user"] == "ann"
    assert_unauthenticated(oidc.get("/v1/me", headers=bearer(token[:-2] + "xx")))


def expired() -> str:
    now = int(time.time())
    return mint(iat=now - 7200, nbf=now - 7200, exp=now - 3600)


BAD_TOKENS = {
    "expired": expired,
    "rotated_out": lambda: mint(RSA_OTHER, kid="rsa-0"),  # the IdP no longer publishes it
    "wrong_issuer": lambda: mint(iss="https://evil.example.test/"),
    "wrong_audience": lambda: mint(aud="another-app"),
    "alg_confusion": confusion_token,
    "alg_outside_pinned": lambda: mint(alg="RS512"),
    "garbage": lambda: "not.a.jwt",
}


@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
def test_a_refused_jwt_is_the_one_401(oidc: httpx.Client, kind: str) -> None:
    token = BAD_TOKENS[kind]()

    for response in (
        oidc.get("/v1/me", headers=bearer(token)),
        oidc.post("/v1/ask", json={"question": "Hotels limits"}, headers=bearer(token)),
    ):
        assert_unauthenticated(response)
        assert response.content == oidc.get("/v1/me").content  # same bytes as no credential


def test_a_key_rotated_in_is_accepted_and_one_rotated_out_refused(
    oidc: httpx.Client, jwks: JwksServer
) -> None:
    old = mint()
    assert oidc.get("/v1/me", headers=bearer(old)).status_code == 200
    jwks.serve({"keys": [rsa_jwk(RSA_NEXT, "rsa-2")]})
    try:
        new = oidc.get("/v1/me", headers=bearer(mint(RSA_NEXT, kid="rsa-2")))
        assert new.status_code == 200 and new.json()["user"] == "ann"
        assert_unauthenticated(oidc.get("/v1/me", headers=bearer(old)))  # its key is gone
    finally:
        jwks.serve(JWKS)


def test_claims_of_admin_and_groups_grant_nothing(oidc: httpx.Client) -> None:
    token = mint(
        sub="ann",
        groups=["hr", "clearance-admins"],
        roles=["admin"],
        admin=True,
        is_admin=True,
    )

    me = oidc.get("/v1/me", headers=bearer(token))
    status = oidc.get("/v1/status", headers=bearer(token))
    search = oidc.post("/v1/search", json={"query": "allowance"}, headers=bearer(token))

    assert me.json()["admin"] is False and me.json()["groups"] == ["staff"]
    assert status.status_code == 403 and status.json()["error"] == "forbidden"
    assert search.json()["results"] == []  # the hr document stays out of reach


def test_an_administrator_is_one_by_nested_directory_group(oidc: httpx.Client) -> None:
    root = bearer(mint(sub="root"))

    assert oidc.get("/v1/me", headers=root).json()["admin"] is True
    assert oidc.get("/v1/status", headers=root).status_code == 200
    assert oidc.get("/v1/status", headers=bearer(mint(sub="ann"))).status_code == 403


def test_a_disabled_user_gets_account_disabled_with_a_valid_jwt(oidc: httpx.Client) -> None:
    headers = bearer(mint(sub="bob"))  # bob is disabled, though in clearance-admins

    me = oidc.get("/v1/me", headers=headers)
    ask = oidc.post("/v1/ask", json={"question": "Hotels limits"}, headers=headers)

    assert me.json()["active"] is False and me.json()["admin"] is False
    assert ask.json()["status"] == "account_disabled" and ask.json()["citations"] == []
    assert oidc.get("/v1/status", headers=headers).status_code == 403


def test_a_user_id_claim_outside_the_principal_grammar_is_refused(oidc: httpx.Client) -> None:
    assert_unauthenticated(oidc.get("/v1/me", headers=bearer(mint(sub="group:hr"))))


def test_auth_error_is_401_at_http() -> None:
    assert status_of(AuthError("expired", "the token has expired")) == 401


# --------------------------------------------------------------------------- trusted header


@pytest.fixture(scope="module")
def proxy_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = configure(
        tmp_path_factory.mktemp("proxy"),
        f'trusted_proxies = ["{PROXY}"]\nadmin_groups = ["clearance-admins"]',
    )
    with serving(config) as url:
        yield url


@pytest.fixture(scope="module")
def via_proxy(proxy_url: str) -> Iterator[httpx.Client]:
    """A client whose connections come from the trusted proxy's address."""
    transport = httpx.HTTPTransport(local_address=PROXY)
    with httpx.Client(base_url=proxy_url, transport=transport, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def direct(proxy_url: str) -> Iterator[httpx.Client]:
    """A client connecting from 127.0.0.1: not a proxy."""
    transport = httpx.HTTPTransport(local_address="127.0.0.1")
    with httpx.Client(base_url=proxy_url, transport=transport, timeout=30) as client:
        yield client


def as_user(user: str) -> dict[str, str]:
    return {"X-Forwarded-User": user}


def test_the_header_from_the_proxy_signs_in_as_that_user(via_proxy: httpx.Client) -> None:
    me = via_proxy.get("/v1/me", headers=as_user("ann"))
    ask = via_proxy.post("/v1/ask", json={"question": "Hotels limits"}, headers=as_user("ann"))

    assert me.status_code == 200 and me.json()["user"] == "ann"
    assert me.json()["groups"] == ["staff"] and me.json()["admin"] is False
    assert ask.json()["status"] == "answered"


def assert_header_ignored_from_a_non_proxy(client: httpx.Client) -> None:
    """The invariant: from a peer that is not a proxy the header is ignored (401)."""
    assert_unauthenticated(client.get("/v1/me", headers=as_user("ann")))
    assert_unauthenticated(client.get("/v1/status", headers=as_user("root")))


def test_the_header_from_any_other_peer_is_ignored(direct: httpx.Client) -> None:
    assert_header_ignored_from_a_non_proxy(direct)


def test_reverse_proof_a_peer_check_accepting_anyone_lets_the_header_in(
    direct: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TrustedHeaderAuthenticator, "trusted", lambda self, peer: True)

    with pytest.raises(AssertionError):
        assert_header_ignored_from_a_non_proxy(direct)


def test_a_forwarded_for_header_does_not_make_a_peer_a_proxy(direct: httpx.Client) -> None:
    headers = {**as_user("ann"), "X-Forwarded-For": PROXY, "Forwarded": f"for={PROXY}"}

    assert_unauthenticated(direct.get("/v1/me", headers=headers))


@pytest.mark.parametrize("value", ["", "user:ann", "ann, root", "ann root", "ann\u200b".encode()])
def test_a_header_value_outside_the_principal_grammar_is_refused(
    via_proxy: httpx.Client, value: str | bytes
) -> None:
    assert_unauthenticated(via_proxy.get("/v1/me", headers={"X-Forwarded-User": value}))


def assert_a_repeated_header_is_refused(client: httpx.Client) -> None:
    """The invariant: a request carrying the user header twice signs in as neither value."""
    twice = [("X-Forwarded-User", "ann"), ("X-Forwarded-User", "root")]
    assert_unauthenticated(client.get("/v1/me", headers=twice))
    assert_unauthenticated(client.get("/v1/status", headers=twice))
    page = client.get("/", headers=[*twice, ("Accept", "text/html")])
    assert page.status_code == 303 and page.headers["location"] == "/signin", page.text


def test_the_user_header_sent_twice_is_refused(via_proxy: httpx.Client) -> None:
    assert_a_repeated_header_is_refused(via_proxy)


def test_reverse_proof_headers_read_last_one_wins_sign_in_as_the_second(
    via_proxy: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def last_wins(fields: Iterable[tuple[str, str]]) -> dict[str, str]:
        return {name.lower(): value for name, value in fields}

    monkeypatch.setattr(app_module, "request_headers", last_wins)
    monkeypatch.setattr(ui_module, "request_headers", last_wins)

    with pytest.raises(AssertionError):
        assert_a_repeated_header_is_refused(via_proxy)


def test_without_the_header_the_proxy_itself_is_nobody(via_proxy: httpx.Client) -> None:
    assert_unauthenticated(via_proxy.get("/v1/me"))


def test_proxy_users_are_administrators_by_directory_group_only(via_proxy: httpx.Client) -> None:
    assert via_proxy.get("/v1/status", headers=as_user("root")).status_code == 200
    assert via_proxy.get("/v1/status", headers=as_user("ann")).status_code == 403
    assert via_proxy.get("/v1/status", headers=as_user("bob")).status_code == 403


def test_a_disabled_user_behind_the_proxy_gets_account_disabled(via_proxy: httpx.Client) -> None:
    ask = via_proxy.post("/v1/ask", json={"question": "Hotels limits"}, headers=as_user("bob"))

    assert ask.json()["status"] == "account_disabled" and ask.json()["citations"] == []


def test_the_peer_check_takes_ipv4_mapped_addresses_and_networks() -> None:
    check = TrustedHeaderAuthenticator(
        [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")],
        "X-Forwarded-User",
        lambda user: False,
    )

    assert check.trusted("10.1.2.3") and check.trusted("::ffff:10.1.2.3")
    assert check.trusted("::1")
    assert not check.trusted("11.0.0.1") and not check.trusted(None)
    assert not check.trusted("not an address")


def test_clearance_serve_takes_the_peer_from_the_connection(tmp_path: Path) -> None:
    """``clearance serve`` ignores X-Forwarded-For: uvicorn would otherwise rewrite the
    peer from it for connections from 127.0.0.1, making any local client a proxy."""
    config = configure(tmp_path, f'trusted_proxies = ["{PROXY}"]')
    port = free_port()
    command = ["-m", "clearance.cli.main", "--config", str(config), "serve", "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process)
        spoofed = {**as_user("ann"), "X-Forwarded-For": PROXY}
        assert_unauthenticated(httpx.get(f"{url}/v1/me", headers=spoofed, timeout=5))
        transport = httpx.HTTPTransport(local_address=PROXY)
        with httpx.Client(transport=transport, timeout=5) as proxy:
            assert proxy.get(f"{url}/v1/me", headers=as_user("ann")).json()["user"] == "ann"
    finally:
        process.terminate()
        process.wait(15)
        if process.stdout:
            process.stdout.close()


# --------------------------------------------------------------------------- settings


def test_sign_in_settings_default_to_off() -> None:
    server = settings_from_dict({}).server

    assert server.oidc is None and server.trusted_proxies == () and server.admin_groups == ()
    assert server.user_header == "X-Forwarded-User"


def test_sign_in_settings_parse(tmp_path: Path) -> None:
    server = settings_from_dict(
        {
            "server": {
                "trusted_proxies": ["127.0.0.2", "10.0.0.0/8", "::1"],
                "user_header": "X-Auth-Request-User",
                "admin_groups": ["clearance-admins"],
                "oidc": {"issuer": ISSUER, "audience": AUDIENCE, "jwks": "keys/jwks.json"},
            }
        },
        root=tmp_path,
    ).server

    assert [str(n) for n in server.trusted_proxies] == ["127.0.0.2/32", "10.0.0.0/8", "::1/128"]
    assert server.user_header == "X-Auth-Request-User"
    assert server.admin_groups == ("clearance-admins",)
    assert server.oidc is not None
    assert server.oidc.jwks == str(tmp_path.resolve() / "keys" / "jwks.json")


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"trusted_proxies": ["10.0.0.1/8"]}, "server.trusted_proxies"),
        ({"trusted_proxies": ["proxy.internal"]}, "server.trusted_proxies"),
        ({"trusted_proxies": "127.0.0.1"}, "server.trusted_proxies"),
        ({"user_header": "X User"}, "server.user_header"),
        ({"user_header": "Authorization"}, "server.user_header"),
        ({"admin_groups": [""]}, "server.admin_groups"),
        ({"oidc": {"issuer": ISSUER, "audience": AUDIENCE}}, "server.oidc.jwks"),
        (
            {
                "oidc": {
                    "issuer": ISSUER,
                    "audience": AUDIENCE,
                    "jwks": "x",
                    "algorithms": ["HS256"],
                }
            },
            "server.oidc.algorithms",
        ),
    ],
)
def test_bad_sign_in_settings_name_their_key(bad: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        settings_from_dict({"server": bad})
