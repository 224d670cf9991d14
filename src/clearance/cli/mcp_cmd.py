"""``clearance mcp``: ``search`` and ``ask`` as MCP tools for other assistants, over stdio
(``--user U``) or streamable HTTP (``--http``, bearer tokens like the API)."""

from __future__ import annotations

import click

from clearance.cli.context import ASSISTANT_HELP, AppContext, err_console, pass_app
from clearance.cli.safe import safe
from clearance.errors import ConfigError

__all__ = ["register"]


def register(cli: click.Group) -> None:
    @cli.command("mcp")
    @click.option("--user", "user_id", help="stdio: every tool call asks as this user.")
    @click.option(
        "--assistant",
        help="Bind the server to one assistant; tools then cannot name another. " + ASSISTANT_HELP,
    )
    @click.option(
        "--http",
        "http",
        is_flag=True,
        help="Serve streamable HTTP at /mcp instead of stdio; callers sign in with API tokens.",
    )
    @click.option("--host", help="--http: address to listen on. Default: [server] host.")
    @click.option(
        "--port",
        type=click.IntRange(1, 65535),
        help="--http: port. Default: [server] port (8080).",
    )
    @pass_app
    def mcp(
        app_ctx: AppContext,
        user_id: str | None,
        assistant: str | None,
        http: bool,
        host: str | None,
        port: int | None,
    ) -> None:
        """Serve search and ask as MCP tools, over stdio or streamable HTTP.

        Over stdio (--user U) until the client disconnects; over streamable HTTP at /mcp
        (--http, callers sign in with API tokens) until interrupted.

        Tools: search(query, k) and ask(question), plus assistant when --assistant is not
        given (it only narrows). Who is asking is fixed by the server — --user, or the
        bearer token of each HTTP request — and no tool argument can change it. Results
        are the JSON of 'clearance search --json' and 'clearance ask --json'.
        """
        if http and user_id is not None:
            raise ConfigError("--user is for stdio: over --http each request's token says who")
        if not http and user_id is None:
            raise ConfigError("--user is required (or --http, where tokens say who is asking)")
        if not http and (host or port):
            raise ConfigError("--host and --port go with --http")

        import anyio  # only this command needs the MCP runtime

        from clearance.api.mcp_server import (
            create_http_app,
            create_server,
            fixed_user,
            serve_stdio,
            shared_limiter,
        )

        with app_ctx.open() as engine:
            if http:
                import uvicorn

                from clearance.api.auth import default_authenticators

                settings = engine.settings
                host = host or settings.server.host
                port = port or settings.server.port
                # The API's sign-in modes: API tokens, and OIDC / trusted proxy when configured.
                authenticators = default_authenticators(settings.server, engine)
                app = create_http_app(engine, authenticators, assistant=assistant)
                err_console.print(f"serving MCP on http://{safe(host)}:{port}/mcp")
                # proxy_headers=False: the peer address must be the TCP peer, or any local
                # client could pose as a trusted proxy by sending X-Forwarded-For.
                uvicorn.run(
                    app,
                    host=host,
                    port=port,
                    log_level="info",
                    server_header=False,
                    proxy_headers=False,
                )
                return

            assert user_id is not None
            # Tool calls spend the user's one allowance, kept in the index with the API's.
            server = create_server(
                engine, fixed_user(user_id), assistant=assistant, limiter=shared_limiter(engine)
            )
            anyio.run(serve_stdio, server)
