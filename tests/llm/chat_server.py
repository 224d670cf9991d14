"""A real chat-completions server on 127.0.0.1, for tests that must cross an actual socket.

Why: retries, timeouts, refused connections, headers and "what exactly left the process" can only
be shown over a real socket; a mocked transport would test the mock. This server speaks the
OpenAI chat-completions protocol (the dialect of Ollama, vLLM and llama.cpp too), records every
request, and can be switched at any time to misbehave. It starts in milliseconds and always
shuts down cleanly: the ``with`` block joins every handler thread, a hung reply is cut short at
shutdown, so ``filterwarnings = error`` never sees a ResourceWarning.

Usage::

    with ChatServer(answer="Economy only. [S1]") as server:
        provider = OpenAICompatibleProvider(server.base_url, "m", ...)
        server.fail(503, times=2)            # the next two requests fail, then it answers again
        server.hang(5.0)                     # every request waits 5 s (cut short at shutdown)
        server.answer_with(lambda body: …)   # a reply computed from the parsed request body
        server.requests[0].headers["authorization"]
        assert CANARY not in server.all_prompt_text()

Behaviours set *with* ``times=n`` apply to the next ``n`` requests and are queued in order;
without it they become the steady behaviour. :meth:`answer_with` restores normal answering.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["ChatServer", "RecordedRequest", "Reply", "closed_base_url"]

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The parsed body, or ``None`` if it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of a chat request (``[]`` if the body is not one)."""
        body = self.json
        messages = body.get("messages") if isinstance(body, dict) else None
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def prompt_text(self) -> str:
        """Every message content of this request, newline-joined."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


@dataclass(frozen=True)
class Reply:
    """What the server sends: ``delay_s`` before anything (a hung server, cut short at shutdown),
    ``chunk_delay_s`` between ``chunk_size``-byte pieces of the body (a trickling server)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    chunk_size: int = 1


Answer = str | Callable[[dict[str, Any]], str]
Responder = Callable[[RecordedRequest], Reply]


def closed_base_url() -> str:
    """A loopback base URL on which nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def completion_body(content: str, model: str, n: int) -> bytes:
    """A chat-completions reply as OpenAI-compatible servers send it."""
    return json.dumps(
        {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
    ).encode()


class _Server(ThreadingHTTPServer):
    # Handler threads are joined by server_close(): none outlives the ``with`` block.
    daemon_threads = False
    block_on_close = True
    owner: ChatServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client that gave up closed its socket; writing to it fails. Expected.


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5.0  # bounded reads: a silent client cannot pin a handler thread

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 16 << 20)) if length else b""
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        reply = owner._handle(request)
        if reply.delay_s and owner._stopping.wait(reply.delay_s):
            return  # stopping: drop the connection without answering
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
            return  # the client hung up (timeout tests)


class ChatServer:
    """A threaded chat-completions server on ``127.0.0.1:<free port>``; see the module docstring."""

    def __init__(self, answer: Answer = "OK [S1]", *, model: str = "loopback-model") -> None:
        self.model = model
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._queue: deque[Responder] = deque()
        self._steady: Responder = self._answering(answer)
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.responder_errors: list[str] = []

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
        self._stopping.set()  # wakes hung and trickling handlers
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
    def base_url(self) -> str:
        """What a provider is configured with, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ recording

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def bodies(self) -> list[Any]:
        """The parsed body of every request (``None`` where it was not JSON)."""
        return [r.json for r in self.requests]

    def all_prompt_text(self) -> str:
        """Every message content ever received, newline-joined — for canary leak checks."""
        return "\n".join(r.prompt_text for r in self.requests)

    def raw_text(self) -> str:
        """Every request body ever received, decoded leniently — the belt to the braces above."""
        return "\n".join(r.body.decode("utf-8", "replace") for r in self.requests)

    # ------------------------------------------------------------------ behaviours

    def _set(self, responder: Responder, times: int | None) -> None:
        with self._lock:
            if times is None:
                self._queue.clear()
                self._steady = responder
            else:
                self._queue.extend([responder] * times)

    def _handle(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            n = len(self._requests)
        if request.method != "POST" or request.path.split("?")[0] != CHAT_PATH:
            return Reply(status=404, body=b'{"error": "not found"}')
        if not isinstance(request.json, dict):
            return Reply(status=400, body=b'{"error": "body is not a JSON object"}')
        with self._lock:  # only chat requests consume queued behaviours
            responder = self._queue.popleft() if self._queue else self._steady
        try:
            return responder(request)
        except Exception as exc:  # a broken responder is a test bug: make it visible
            self.responder_errors.append(f"request {n}: {exc!r}")
            return Reply(status=599, body=b"responder error", content_type="text/plain")

    def _answering(self, answer: Answer, **extra: Any) -> Responder:
        def respond(request: RecordedRequest) -> Reply:
            text = answer if isinstance(answer, str) else answer(request.json)
            return Reply(body=completion_body(text, self.model, self.request_count), **extra)

        return respond

    def answer_with(self, answer: Answer, *, times: int | None = None) -> None:
        """Answer normally: a fixed string, or ``answer(parsed_body) -> str``."""
        self._set(self._answering(answer), times)

    def fail(
        self, status: int = 500, *, times: int | None = None, retry_after: str | None = None
    ) -> None:
        """Reply with ``status`` and an unhelpful body (429 and 503 are the usual ones)."""
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        reply = Reply(
            status=status, body=b'{"error": "failed"}', headers=headers, content_type="text/plain"
        )
        self._set(lambda r: reply, times)

    def echo_error(self, status: int = 400, *, times: int | None = None) -> None:
        """Reply with ``status`` and a body that quotes the whole prompt back, as some servers
        do — a client must never copy it into an error message."""
        self._set(lambda r: Reply(status=status, body=r.body), times)

    def hang(self, seconds: float = 5.0, *, times: int | None = None) -> None:
        """Wait ``seconds`` before answering (normally) — past any client timeout."""
        self._set(self._answering("too late [S1]", delay_s=seconds), times)

    def trickle(self, chunk_delay_s: float = 0.05, *, times: int | None = None) -> None:
        """Answer normally, one byte at a time with a pause between bytes: each read is quick,
        so only a whole-exchange deadline stops it."""
        self._set(self._answering("slow [S1]", chunk_delay_s=chunk_delay_s), times)

    def garbage(
        self, data: bytes = b"\x00\xff<html>not json{{", *, times: int | None = None
    ) -> None:
        """A 200 whose body is not JSON."""
        self._set(lambda r: Reply(body=data), times)

    def reply_json(self, payload: Any, *, status: int = 200, times: int | None = None) -> None:
        """Any JSON payload, e.g. one of the wrong shape."""
        body = json.dumps(payload).encode()
        self._set(lambda r: Reply(status=status, body=body), times)

    def reply_raw(self, reply: Reply, *, times: int | None = None) -> None:
        """Full control: exactly this reply."""
        self._set(lambda r: reply, times)
