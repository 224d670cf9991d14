"""``clearance mcp --user U``: ``search`` and ``ask`` as MCP tools for other assistants."""

from __future__ import annotations

import click

from clearance.cli.context import ASSISTANT_HELP, AppContext, pass_app

__all__ = ["register"]


def register(cli: click.Group) -> None:
    @cli.command("mcp")
    @click.option("--user", "user_id", required=True, help="Every tool call asks as this user.")
    @click.option(
        "--assistant",
        help="Bind the server to one assistant; tools then cannot name another. " + ASSISTANT_HELP,
    )
    @pass_app
    def mcp(app_ctx: AppContext, user_id: str, assistant: str | None) -> None:
        """Serve the Model Context Protocol over stdio until the client disconnects.

        Tools: search(query, k) and ask(question), plus assistant when --assistant is not
        given (it only narrows). The user is fixed here: no tool argument can change it.
        Results are the JSON of 'clearance search --json' and 'clearance ask --json'.
        """
        import anyio  # only this command needs the MCP runtime
        from mcp.server.stdio import stdio_server

        from clearance.api.mcp_server import create_server, fixed_user

        with app_ctx.open() as engine:
            server = create_server(engine, fixed_user(user_id), assistant=assistant)

            async def serve() -> None:
                async with stdio_server() as (read_stream, write_stream):
                    options = server.create_initialization_options()
                    await server.run(read_stream, write_stream, options)

            anyio.run(serve)
