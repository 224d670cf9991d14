"""``clearance serve``: the HTTP API (docs/server.md) under uvicorn, one hot index.

With ``--workers N`` uvicorn starts N processes that share the listening socket. Each opens
the index and holds its own in-memory copy (docs/server.md gives the memory per worker);
everything a request is checked against — tokens, the directory, ACLs, sync times, each
user's ``[server] rate_limit`` allowance — is read from the index file, so a change made
through one worker (or the CLI) applies to the next request on every worker. Python runs one thread of a process at a time, so a single process
uses about one core whatever the load; workers are how the service uses more.
"""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING

import click

from clearance.cli.context import AppContext, console, pass_app
from clearance.cli.safe import safe
from clearance.errors import ClearanceError

if TYPE_CHECKING:
    import socket

    from fastapi import FastAPI

    from clearance.app import Clearance

__all__ = ["register", "worker_app"]

log = logging.getLogger(__name__)


def warmed(app: FastAPI) -> FastAPI:
    """``app`` with its engine's in-memory index built before it takes a request. Each
    worker holds its own copy, and a worker that built it on its first request would hold
    that request, and every one queued behind it, for seconds. An index that cannot be
    read is left to the requests (and ``/readyz``) to report."""
    engine: Clearance = app.state.engine
    try:
        engine.warm()
    except ClearanceError as exc:
        log.warning("the index was not loaded at start: %s", exc.message)
    return app


def no_delay(sock: socket.socket) -> socket.socket:
    """``sock`` (the shared listening socket of the workers) with Nagle's algorithm off.
    uvicorn creates it without the TCP protocol number, so asyncio does not turn Nagle off
    on the connections it accepts, as it does for a socket of its own: every response sent
    in two writes then waited for the client's delayed ACK (+40 ms a request, measured).
    Accepted connections inherit the option from the listening socket."""
    import socket

    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def listen(host: str, port: int) -> socket.socket:
    """The listening socket on ``host:port``, bound before anything says the server is
    serving: a port in use (or an address that is not this machine's) is a one-line error
    with exit code 1. Nagle's algorithm is off (:func:`no_delay`)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ClearanceError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return no_delay(sock)


def worker_app() -> FastAPI:
    """The app of one ``--workers`` process: uvicorn imports this factory by name in each."""
    from clearance.api.app import create_app
    from clearance.config import load_settings, serve_worker_config

    config, _ = serve_worker_config()
    return warmed(create_app(load_settings(config)))


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @click.option("--host", help="Address to listen on. Default: [server] host (127.0.0.1).")
    @click.option(
        "--port", type=click.IntRange(1, 65535), help="Port. Default: [server] port (8080)."
    )
    @click.option(
        "--workers",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help="Server processes; each holds its own copy of the index in memory.",
    )
    @pass_app
    def serve(app_ctx: AppContext, host: str | None, port: int | None, workers: int) -> None:
        """Serve the HTTP API until interrupted. Callers sign in with API tokens
        ('clearance token create'); put TLS on a reverse proxy in front of it."""
        import uvicorn  # only this command needs the server
        from uvicorn.supervisors import Multiprocess

        from clearance.api.app import create_app
        from clearance.api.metrics import serve_log_config
        from clearance.config import SERVE_WORKERS_ENV, find_config

        settings = app_ctx.settings()
        host = host or settings.server.host
        port = port or settings.server.port
        options = {
            "host": host,
            "port": port,
            "log_level": "info",
            "server_header": False,
            "proxy_headers": False,  # the peer is the TCP peer: trusted_proxies rely on it
            "access_log": False,  # it prints client addresses and full paths: ours replaces it
            "log_config": serve_log_config(uvicorn.config.LOGGING_CONFIG),
        }
        if workers == 1:
            sock = listen(host, port)
            app = warmed(create_app(settings))
            console.print(f"serving the Clearance API on http://{safe(host)}:{port}")
            server = uvicorn.Server(uvicorn.Config(app, **options))  # type: ignore[arg-type]
            server.run(sockets=[sock])
            if not server.started:
                raise ClearanceError("the server did not start (its log above says why)")
            return
        path = find_config(app_ctx.config).resolve()
        os.environ[SERVE_WORKERS_ENV] = json.dumps({"config": str(path), "workers": workers})
        config = uvicorn.Config(
            "clearance.cli.serve_cmd:worker_app",
            factory=True,
            workers=workers,
            **options,  # type: ignore[arg-type]
        )
        sock = listen(host, port)
        console.print(
            f"serving the Clearance API on http://{safe(host)}:{port} with {workers} workers"
        )
        Multiprocess(config, sockets=[sock]).run()
