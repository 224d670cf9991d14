"""``clearance mcp``: search and ask as MCP tools, driven by the SDK's own client.

Over stdio the identity is ``--user``; over streamable HTTP it is the bearer token of each
request, checked like the API's (401 without one). The project is the API tests' (conftest): ann (staff) may read travel.md, not salaries.md
(hr only); bob is disabled. The identity is bound to the server — ``--user`` on stdio —
and no tool argument can change it: the schemas refuse extra arguments, and a leaky
variant that honours a ``user`` argument fails the same assertion (the reverse proof).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext

from api.conftest import create_token, serving_app
from clearance.api.auth import ApiTokenAuthenticator
from clearance.api.mcp_server import MCP_PATH, create_http_app, create_server, fixed_user
from clearance.api.tokens import TokenStore
from clearance.app import Clearance
from clearance.cli.search_cmd import search_json
from clearance.config import Rate, load_settings
from clitools import cli

#: Words of both documents: a search for them as an hr member finds salaries.md too.
QUERY = "travel allowance hotels"


def payload(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON a tool returned (its one text block)."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data


def assert_only_ann_may_read(search: dict[str, Any], ask: dict[str, Any] | None = None) -> None:
    """The invariant: every result and citation is a document ann may read."""
    found = {row["doc_id"] for row in search["results"]}
    assert found, "the search found nothing: the test proves nothing"
    assert all("salaries" not in doc_id for doc_id in found), found
    if ask is not None:
        cited = {c["doc_id"] for c in ask["citations"]}
        assert all("salaries" not in doc_id for doc_id in cited), cited
        assert "900" not in ask["answer"]


def cli_json(config: Path, *args: str) -> dict[str, Any]:
    rc, out, err = cli("--config", config, *args, "--json")
    assert rc == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def talk(server: Any, body: Callable[[Client], Awaitable[None]]) -> None:
    """Runs ``body`` with an SDK client connected to ``server`` (in-process or stdio)."""

    async def main() -> None:
        async with Client(server) as client:
            await body(client)

    anyio.run(main)


@pytest.fixture
def engine(project: Path) -> Iterator[Clearance]:
    app = Clearance.open(load_settings(project))
    try:
        yield app
    finally:
        app.close()


# --------------------------------------------------------------------------- stdio


def test_stdio_server_answers_only_from_what_its_user_may_read(project: Path) -> None:
    """A real ``clearance mcp --user ann`` subprocess, spoken to over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "clearance.cli.main", "--config", str(project), "mcp", "--user", "ann"],
    )
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        listed = await client.list_tools()
        seen["tools"] = {t.name: t.input_schema for t in listed.tools}
        seen["search"] = await client.call_tool("search", {"query": QUERY})
        seen["ask"] = await client.call_tool("ask", {"question": "Hotels limits"})
        seen["as_root"] = await client.call_tool("search", {"query": QUERY, "user": "root"})
        seen["as_root_id"] = await client.call_tool("ask", {"question": "x", "user_id": "root"})

    talk(params, body)

    assert set(seen["tools"]) == {"search", "ask"}
    for schema in seen["tools"].values():
        assert schema["additionalProperties"] is False
        assert not {"user", "user_id"} & set(schema["properties"])
    assert seen["tools"]["search"]["required"] == ["query"]
    assert seen["tools"]["ask"]["required"] == ["question"]

    search, ask = payload(seen["search"]), payload(seen["ask"])
    assert not seen["search"].is_error and not seen["ask"].is_error
    assert_only_ann_may_read(search, ask)
    # Exactly the CLI's JSON, and structured content says the same.
    assert search == cli_json(project, "search", QUERY, "--user", "ann")
    assert seen["search"].structured_content == search
    cli_ask = cli_json(project, "ask", "Hotels limits", "--user", "ann")
    assert {k: v for k, v in ask.items() if k != "trace_id"} == {
        k: v for k, v in cli_ask.items() if k != "trace_id"
    }
    assert ask["status"] == "answered" and ask["citations"]

    # Naming another user is refused by the schema, before anything runs.
    for key, argument in (("as_root", "user"), ("as_root_id", "user_id")):
        refused = seen[key]
        assert refused.is_error
        error = payload(refused)
        assert error["error"] == "invalid_request"
        assert argument in error["message"] and "root" not in error["message"]


def test_stdio_server_refuses_an_unknown_bound_assistant(project: Path) -> None:
    rc, _, err = cli("--config", project, "mcp", "--user", "ann", "--assistant", "nope")
    assert rc == 3
    assert "unknown assistant 'nope'" in err


# --------------------------------------------------------------------------- the identity


def leaky_server(engine: Clearance) -> Server[Any]:
    """A deliberately wrong server whose search honours a ``user`` argument."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"query": {"type": "string"}}}
        return types.ListToolsResult(tools=[types.Tool(name="search", input_schema=schema)])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = params.arguments or {}
        user = str(args.get("user", "ann"))
        data = search_json(user, args["query"], engine.search(user, args["query"]))
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))])

    return Server("leaky", on_list_tools=list_tools, on_call_tool=call_tool)


def test_a_tool_argument_never_changes_who_is_asking(engine: Clearance) -> None:
    results: dict[str, types.CallToolResult] = {}

    async def body(client: Client) -> None:
        results["plain"] = await client.call_tool("search", {"query": QUERY})
        results["as_root"] = await client.call_tool("search", {"query": QUERY, "user": "root"})

    talk(create_server(engine, fixed_user("ann")), body)
    assert_only_ann_may_read(payload(results["plain"]))
    assert results["as_root"].is_error

    # Reverse proof: the same assertion rejects a server that lets the argument through.
    talk(leaky_server(engine), body)
    assert_only_ann_may_read(payload(results["plain"]))
    with pytest.raises(AssertionError):
        assert_only_ann_may_read(payload(results["as_root"]))


def test_a_disabled_account_gets_account_disabled(engine: Clearance) -> None:
    results: dict[str, types.CallToolResult] = {}

    async def body(client: Client) -> None:
        results["search"] = await client.call_tool("search", {"query": QUERY})
        results["ask"] = await client.call_tool("ask", {"question": "Hotels limits"})

    talk(create_server(engine, fixed_user("bob")), body)
    search, ask = payload(results["search"]), payload(results["ask"])
    assert search["refused"] == "account_disabled" and search["results"] == []
    assert ask["status"] == "account_disabled" and ask["citations"] == []


# --------------------------------------------------------------------------- refusals


def test_an_over_long_question_is_a_tool_error_with_the_bad_question_message(
    engine: Clearance,
) -> None:
    limit = engine.settings.answer.max_question_chars
    results: dict[str, types.CallToolResult] = {}

    async def body(client: Client) -> None:
        results["ask"] = await client.call_tool("ask", {"question": "x" * (limit + 1)})
        results["search"] = await client.call_tool("search", {"query": "x" * (limit + 1)})

    talk(create_server(engine, fixed_user("ann")), body)
    for name, what in (("ask", "question"), ("search", "query")):
        assert results[name].is_error
        error = payload(results[name])
        assert error["error"] == "bad_question"
        assert error["message"].startswith(f"the {what} is {limit + 1:,} characters long")
        assert "xxx" not in error["message"]


def test_an_assistant_argument_only_narrows_and_an_unknown_one_is_refused(
    engine: Clearance,
) -> None:
    results: dict[str, Any] = {}

    async def body(client: Client) -> None:
        results["tools"] = await client.list_tools()
        results["general"] = await client.call_tool(
            "search", {"query": QUERY, "assistant": "general"}
        )
        results["search"] = await client.call_tool("search", {"query": QUERY, "assistant": "x"})
        results["ask"] = await client.call_tool("ask", {"question": "hotels?", "assistant": "x"})

    talk(create_server(engine, fixed_user("ann")), body)
    assert all("assistant" in t.input_schema["properties"] for t in results["tools"].tools)
    assert_only_ann_may_read(payload(results["general"]))
    for name in ("search", "ask"):
        assert results[name].is_error
        assert payload(results[name]) == {
            "error": "not_found",
            "message": "unknown assistant 'x' (configured: general)",
        }

    # Bound to an assistant, the tools cannot name another one.
    talk(create_server(engine, fixed_user("ann"), assistant="general"), body)
    assert all("assistant" not in t.input_schema["properties"] for t in results["tools"].tools)
    assert payload(results["general"])["error"] == "invalid_request"


def test_an_engine_failure_is_the_fixed_internal_error(
    engine: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(engine, "search", broken)
    results: dict[str, types.CallToolResult] = {}

    async def body(client: Client) -> None:
        results["search"] = await client.call_tool("search", {"query": QUERY})

    talk(create_server(engine, fixed_user("ann")), body)
    assert results["search"].is_error
    assert payload(results["search"]) == {"error": "internal_error", "message": "internal error"}


# --------------------------------------------------------------------------- streamable HTTP


@contextmanager
def serving_mcp(engine: Clearance) -> Iterator[str]:
    """The MCP HTTP app under a real uvicorn on a free loopback port; yields its URL."""
    tokens = ApiTokenAuthenticator(TokenStore(engine.store, clock=engine.clock))
    app = create_http_app(engine, [tokens])
    with serving_app(app, MCP_PATH) as url:
        yield url


def test_http_server_takes_the_identity_from_the_bearer_token(
    project: Path, engine: Clearance
) -> None:
    ann = create_token(project, "ann")["token"]
    bob = create_token(project, "bob")["token"]
    results: dict[str, types.CallToolResult] = {}

    def as_(token: str, prefix: str, url: str) -> None:
        async def main() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                results[f"{prefix}search"] = await client.call_tool("search", {"query": QUERY})
                results[f"{prefix}as_root"] = await client.call_tool(
                    "search", {"query": QUERY, "user": "root"}
                )
                results[f"{prefix}ask"] = await client.call_tool(
                    "ask", {"question": "Hotels limits"}
                )

        anyio.run(main)

    with serving_mcp(engine) as url:
        # No token, or a wrong one: 401 in the API's error shape, before any MCP work.
        for headers in ({}, {"Authorization": "Bearer clr_nope_nope"}):
            response = httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream", **headers},
            )
            assert response.status_code == 401
            challenge = response.headers["WWW-Authenticate"]
            assert challenge.startswith('Bearer resource_metadata="http://127.0.0.1:')
            assert challenge.endswith('/.well-known/oauth-protected-resource/mcp"') == (
                not headers
            )  # a refused token adds error="invalid_token"
            assert response.json()["error"] == "unauthenticated"
        # Behind a proxy the Host is the public name: a valid token is all it takes.
        response = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {ann}",
                "Host": "clearance.example.com",
            },
        )
        assert response.status_code == 200
        assert [t["name"] for t in response.json()["result"]["tools"]] == ["search", "ask"]
        as_(ann, "ann_", url)
        as_(bob, "bob_", url)

    search, ask = payload(results["ann_search"]), payload(results["ann_ask"])
    assert search["user"] == "ann"
    assert_only_ann_may_read(search, ask)
    assert ask["status"] == "answered"
    assert results["ann_as_root"].is_error
    assert payload(results["ann_as_root"])["error"] == "invalid_request"
    # A disabled account's valid token still gets account_disabled and no data.
    assert payload(results["bob_search"])["refused"] == "account_disabled"
    assert payload(results["bob_ask"])["status"] == "account_disabled"


def test_http_mode_takes_no_user(project: Path) -> None:
    rc, _, err = cli("--config", project, "mcp", "--http", "--user", "root")
    assert rc == 2
    assert "--user is for stdio" in err
    rc, _, err = cli("--config", project, "mcp")
    assert rc == 2
    assert "--user is required" in err


def test_http_server_applies_the_api_rate_limit_and_body_limit(project: Path) -> None:
    settings = load_settings(project)
    server = replace(settings.server, rate_limit=Rate(2, 60.0), max_body_bytes=4096)
    engine = Clearance.open(replace(settings, server=server))
    token = create_token(project, "ann")["token"]
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    try:
        with serving_mcp(engine) as url:
            big = {**listing, "params": {"_meta": {"pad": "x" * 5000}}}
            too_big = httpx.post(url, json=big, headers=headers)
            statuses = [httpx.post(url, json=listing, headers=headers) for _ in range(3)]
    finally:
        engine.close()
    assert too_big.status_code == 413
    assert too_big.json()["error"] == "payload_too_large"
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert statuses[2].json()["error"] == "rate_limited"
    assert int(statuses[2].headers["Retry-After"]) >= 1
