"""``clearance mcp``: search and ask as MCP tools, driven by the SDK's own client.

The project is the API tests' (conftest): ann (staff) may read travel.md, not salaries.md
(hr only); bob is disabled. The identity is bound to the server — ``--user`` on stdio —
and no tool argument can change it: the schemas refuse extra arguments, and a leaky
variant that honours a ``user`` argument fails the same assertion (the reverse proof).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.server import Server, ServerRequestContext

from clearance.api.mcp_server import create_server, fixed_user
from clearance.app import Clearance
from clearance.cli.search_cmd import search_json
from clearance.config import load_settings
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
