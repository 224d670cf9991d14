"""A real HTTP server on 127.0.0.1 for tests that must cross an actual socket.

Why: a mocked transport cannot show that timeouts, refused connections, trickled bodies or a
server that hangs are really handled — only a real socket can. This helper stays small, starts in
milliseconds and always shuts down cleanly (no thread or socket outlives the ``with`` block, so
``filterwarnings = error`` never sees a ResourceWarning).

Usage::

    with LoopbackServer() as server:
        server.deny("doc:2")                 # switch behaviour at any time
        ...POST to server.url...
        server.requests[0].json              # every request body is recorded

The default behaviour answers a permission-check POST (``{"user": ..., "doc_ids": [...]}``) with
``{"decisions": {doc: true, ...}}`` for every doc asked.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["LoopbackServer", "RecordedRequest", "Reply", "closed_port_url"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def doc_ids(self) -> list[str]:
        """The ``doc_ids`` of a permission-check body, or ``[]`` if the body is not one."""
        try:
            ids = self.json.get("doc_ids", [])
        except (ValueError, AttributeError):
            return []
        return [d for d in ids if isinstance(d, str)] if isinstance(ids, list) else []


@dataclass(frozen=True)
class Reply:
    """What the server sends back.

    ``delay_s`` waits before sending anything (a hung server); ``chunk_delay_s`` sends the body in
    ``chunk_size`` pieces with that pause between them (a trickling server). Both waits end early
    when the server stops, so a test never waits for them at teardown.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    chunk_size: int = 1


Responder = Callable[[RecordedRequest], Reply]


def decisions_reply(decisions: dict[str, Any], **extra: Any) -> Reply:
    return Reply(body=json.dumps({"decisions": decisions}).encode(), **extra)


def closed_port_url(path: str = "/check") -> str:
    """A loopback URL on which nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


class _Server(ThreadingHTTPServer):
    # Handler threads are joined by server_close(), so none outlives the ``with`` block.
    daemon_threads = False
    block_on_close = True

    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) closes its socket; writing to it then fails. Expected.
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5.0  # bounded socket reads: a silent client cannot pin a handler thread

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        owner._record(request)
        try:
            reply = owner._responder(request)
        except Exception as exc:  # a broken responder is a test bug: make it visible as a 599
            reply = Reply(status=599, body=repr(exc).encode(), content_type="text/plain")
        if reply.delay_s and owner._stopping.wait(reply.delay_s):
            return  # server is stopping: drop the connection without answering
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            if not reply.chunk_delay_s:
                self.wfile.write(reply.body)
                return
            step = max(1, reply.chunk_size)
            for start in range(0, len(reply.body), step):
                self.wfile.write(reply.body[start : start + step])
                self.wfile.flush()
                if owner._stopping.wait(reply.chunk_delay_s):
                    return
        except OSError:
            return  # the client hung up; expected for timeout tests


class LoopbackServer:
    """A threaded HTTP server on ``127.0.0.1:<free port>`` whose behaviour tests switch at will."""

    def __init__(self, path: str = "/check") -> None:
        self.path = path
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._responder: Responder = self._allow_all
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()  # wakes hung / trickling handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd.server_close()  # joins handler threads
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    # ------------------------------------------------------------------ recording

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    # ------------------------------------------------------------------ behaviours

    def respond_with(self, responder: Responder) -> None:
        """Any behaviour at all: ``responder(request) -> Reply``."""
        self._responder = responder

    @staticmethod
    def _allow_all(request: RecordedRequest) -> Reply:
        return decisions_reply(dict.fromkeys(request.doc_ids, True))

    def allow_all(self) -> None:
        """``true`` for every doc asked (the default)."""
        self._responder = self._allow_all

    def deny(self, *doc_ids: str) -> None:
        """``false`` for the listed docs, ``true`` for the rest."""
        denied = set(doc_ids)
        self._responder = lambda r: decisions_reply({d: d not in denied for d in r.doc_ids})

    def omit(self, *doc_ids: str) -> None:
        """Leave the listed docs out of ``decisions``; ``true`` for the rest."""
        omitted = set(doc_ids)
        self._responder = lambda r: decisions_reply(
            {d: True for d in r.doc_ids if d not in omitted}
        )

    def decide(self, decisions: dict[str, Any], extra: Iterable[tuple[str, Any]] = ()) -> None:
        """Exactly these decisions (any JSON values), whatever was asked."""
        payload = dict(decisions)
        payload.update(extra)
        self._responder = lambda r: decisions_reply(payload)

    def fail(self, status: int = 500, body: bytes = b"internal error") -> None:
        """Reply with a status code (and a body that says nothing useful)."""
        self._responder = lambda r: Reply(status=status, body=body, content_type="text/plain")

    def hang(self, seconds: float = 1.5) -> None:
        """Wait ``seconds`` (bounded; cut short at shutdown), then answer allow-all — too late."""
        self._responder = lambda r: decisions_reply(dict.fromkeys(r.doc_ids, True), delay_s=seconds)

    def trickle(self, chunk_delay_s: float = 0.05, padding: int = 40) -> None:
        """Answer allow-all, but send the body one byte at a time with a pause between bytes.

        Each single read is quick, so only a whole-exchange deadline catches it.
        """
        self._responder = lambda r: Reply(
            body=json.dumps({"decisions": dict.fromkeys(r.doc_ids, True)}).encode()
            + b" " * padding,
            chunk_delay_s=chunk_delay_s,
        )

    def garbage(self, data: bytes = b"\x00\xff<html>not json{{") -> None:
        """A 200 whose body is not JSON."""
        self._responder = lambda r: Reply(body=data)

    def reply_json(self, payload: Any, status: int = 200) -> None:
        """A 200 (by default) with any JSON payload, e.g. one of the wrong shape."""
        body = json.dumps(payload).encode()
        self._responder = lambda r: Reply(status=status, body=body)

    def reply_raw(self, body: bytes, status: int = 200, **extra: Any) -> None:
        """Raw bytes with full control over the reply (headers, delays)."""
        self._responder = lambda r: Reply(status=status, body=body, **extra)
