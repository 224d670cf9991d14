"""``clearance serve``: the HTTP API (docs/server.md) under uvicorn, one hot index."""

from __future__ import annotations

import click

from clearance.cli.context import AppContext, console, pass_app
from clearance.cli.safe import safe

__all__ = ["register"]


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @click.option("--host", help="Address to listen on. Default: [server] host (127.0.0.1).")
    @click.option(
        "--port", type=click.IntRange(1, 65535), help="Port. Default: [server] port (8080)."
    )
    @pass_app
    def serve(app_ctx: AppContext, host: str | None, port: int | None) -> None:
        """Serve the HTTP API until interrupted. Callers sign in with API tokens
        ('clearance token create'); put TLS on a reverse proxy in front of it."""
        import uvicorn  # only this command needs the server

        from clearance.api.app import create_app
        from clearance.api.metrics import serve_log_config

        settings = app_ctx.settings()
        host = host or settings.server.host
        port = port or settings.server.port
        app = create_app(settings)
        console.print(f"serving the Clearance API on http://{safe(host)}:{port}")
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="info",
            server_header=False,
            proxy_headers=False,  # the peer is the TCP peer: trusted_proxies rely on it
            access_log=False,  # it prints client addresses and full paths: ours replaces it
            log_config=serve_log_config(uvicorn.config.LOGGING_CONFIG),
        )
