"""MCP over HTTP with the company's sign-in, per the MCP authorization specification
(modelcontextprotocol.io/specification/2025-06-18/basic/authorization): a client that
gets a 401 reads ``WWW-Authenticate: Bearer resource_metadata=…``, fetches the protected
resource metadata (RFC 9728) naming the configured OIDC provider as the authorization
server, signs the user in there and comes back with a bearer JWT, which the same verifier
as the API's checks — issuer, signature, expiry and audience (RFC 8707: a token issued for
another resource is refused, never passed through). API tokens still work. A real MCP
client over a real loopback server; the configurations docs/mcp.md gives for Claude
Desktop and Cursor are parsed and checked against what the server serves.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.conftest import create_token, make_project, serving_app
from clearance.api.auth import default_authenticators
from clearance.api.mcp_server import MCP_PATH, create_http_app
from clearance.app import Clearance
from clearance.config import load_settings

ISSUER = "https://login.example.test/tenant/v2.0"
AUDIENCE = "api://clearance-mcp"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
DOCS = Path(__file__).parents[2] / "docs" / "mcp.md"


def jwt_for(user: str, audience: str = AUDIENCE, expires_in: int = 600) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": audience, "sub": user, "iat": now, "nbf": now,
              "exp": now + expires_in}  # fmt: skip
    return jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("mcp-oauth")
    config = make_project(root)
    jwk = {**RSAAlgorithm.to_jwk(KEY.public_key(), as_dict=True), "kid": "k1"}
    (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}), encoding="utf-8")
    with config.open("a", encoding="utf-8") as fh:
        fh.write(
            f'\n[server.oidc]\nissuer = "{ISSUER}"\naudience = "{AUDIENCE}"\n'
            'jwks = "jwks.json"\nscopes = ["openid", "profile"]\n'
        )
    token = create_token(config, "ann")["token"]
    settings = load_settings(config)
    engine = Clearance.open(settings)
    app = create_http_app(engine, default_authenticators(settings.server, engine))
    try:
        with serving_app(app) as url:
            yield {"url": url, "token": token, "config": config}
    finally:
        engine.close()


def tools_list(url: str, bearer: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    return httpx.post(
        url + MCP_PATH,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers=headers,
    )


def test_a_401_leads_the_client_to_the_company_sign_in(mcp_url: dict[str, Any]) -> None:
    url = mcp_url["url"]
    refused = tools_list(url, None)
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    found = re.fullmatch(r'Bearer resource_metadata="([^"]+)"', challenge)
    assert found is not None, challenge
    metadata = httpx.get(found.group(1)).json()
    assert metadata["resource"] == url + MCP_PATH
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["bearer_methods_supported"] == ["header"]
    assert metadata["scopes_supported"] == ["openid", "profile"]
    assert httpx.get(url + "/.well-known/oauth-protected-resource").json() == metadata
    redirect = httpx.get(url + "/.well-known/oauth-authorization-server")
    assert redirect.status_code == 302
    assert redirect.headers["location"] == ISSUER + "/.well-known/openid-configuration"


def test_the_companys_token_and_an_api_token_both_sign_in(mcp_url: dict[str, Any]) -> None:
    url = mcp_url["url"]
    for bearer in (jwt_for("ann"), mcp_url["token"]):
        reply = tools_list(url, bearer)
        assert reply.status_code == 200, reply.text
        assert [t["name"] for t in reply.json()["result"]["tools"]] == ["search", "ask"]
    seen: dict[str, Any] = {}

    async def main() -> None:
        headers = {"Authorization": f"Bearer {jwt_for('ann')}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url + MCP_PATH, http_client=http)) as client,
        ):
            seen["search"] = await client.call_tool("search", {"query": "Tokyo trains"})
            seen["as_root"] = await client.call_tool(
                "search", {"query": "Tokyo trains", "user": "root"}
            )

    anyio.run(main)
    result = json.loads(seen["search"].content[0].text)
    assert result["user"] == "ann"  # who the token names, nothing the client sends
    assert seen["as_root"].is_error  # a remote server never lets the client pick the user


@pytest.mark.parametrize(
    "bearer",
    [
        pytest.param(jwt_for("ann", audience="api://another-resource"), id="another audience"),
        pytest.param(jwt_for("ann", expires_in=-120), id="expired"),
    ],
)
def test_a_token_for_another_resource_or_expired_is_refused(
    mcp_url: dict[str, Any], bearer: str
) -> None:
    refused = tools_list(mcp_url["url"], bearer)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].endswith(', error="invalid_token"')


def test_reverse_proof_a_verifier_without_the_audience_check_is_caught(
    mcp_url: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token passthrough — accepting a token issued for another resource — is what the
    test above rules out; a verifier that skips the audience lets it in."""
    real = jwt.decode

    def no_audience(*args: Any, **kwargs: Any) -> Any:
        kwargs["options"] = {**(kwargs.get("options") or {}), "verify_aud": False}
        return real(*args, **kwargs)

    monkeypatch.setattr(jwt, "decode", no_audience)
    assert tools_list(mcp_url["url"], jwt_for("ann", audience="api://other")).status_code == 200


# --------------------------------------------------------------------------- client configs


def json_blocks(title: str) -> list[dict[str, Any]]:
    """The JSON code blocks of one ``##`` section of docs/mcp.md."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [json.loads(b) for b in re.findall(r"```json\n(.*?)```", section, re.S)]


def test_the_documented_client_configurations_name_what_the_server_serves(
    mcp_url: dict[str, Any],
) -> None:
    """Every JSON block of docs/mcp.md's client sections is valid and names a real
    invocation: a `clearance mcp --user` command line (whose arguments the CLI accepts), an
    `mcp-remote` bridge to the /mcp endpoint, or the /mcp URL itself."""
    from click.testing import CliRunner

    from clearance.cli.main import cli as clearance_cli

    kinds: set[str] = set()
    for title in ("Claude Desktop", "Cursor"):
        blocks = json_blocks(title)
        assert blocks, title
        for block in blocks:
            ((name, server),) = block["mcpServers"].items()
            assert name == "clearance"
            if "url" in server:
                kinds.add("url")
                assert server["url"].endswith(MCP_PATH)
                header = server.get("headers", {}).get("Authorization", "Bearer x")
                assert header.startswith("Bearer ")
            elif server["command"].endswith("npx"):
                kinds.add("mcp-remote")
                assert "mcp-remote" in server["args"]
                assert server["args"][-1].endswith(MCP_PATH)
            else:
                kinds.add("stdio")
                assert server["command"].endswith("/clearance")
                args = server["args"]
                assert args[:2] == ["mcp", "--user"] and len(args) == 3
                # The same arguments parse as the real command's (help shows, no server).
                parsed = CliRunner().invoke(clearance_cli, [*args, "--help"])
                assert parsed.exit_code == 0, parsed.output
    assert kinds == {"url", "mcp-remote", "stdio"}
    # And the endpoint those URLs name is what the HTTP transport serves.
    assert tools_list(mcp_url["url"], mcp_url["token"]).status_code == 200


def test_a_token_reaches_only_the_tools_of_its_scopes(mcp_url: dict[str, Any]) -> None:
    """As on the HTTP API: a token made for searching cannot ask through MCP either.
    Reverse proof: the reader token of the same user asks."""
    searcher = create_token(mcp_url["config"], "ann", "--scope", "search")["token"]
    seen: dict[str, Any] = {}

    async def main(token: str, prefix: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(mcp_url["url"] + MCP_PATH, http_client=http)) as c,
        ):
            seen[prefix + "search"] = await c.call_tool("search", {"query": "Tokyo trains"})
            seen[prefix + "ask"] = await c.call_tool("ask", {"question": "Tokyo trains?"})

    anyio.run(main, searcher, "s_")
    anyio.run(main, mcp_url["token"], "r_")
    assert not seen["s_search"].is_error
    assert seen["s_ask"].is_error and "'ask' scope" in seen["s_ask"].content[0].text
    assert not seen["r_ask"].is_error
