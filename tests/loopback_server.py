"""Plumbing shared by the real HTTP servers that tests run on 127.0.0.1.

Why a real server: a mocked transport cannot show that timeouts, refused connections, trickled
bodies, retries or "what exactly left the process" are really handled — only a real socket can.
The servers built on :class:`ScriptedServer` start in milliseconds and always shut down cleanly:
the ``with`` block joins the serving thread and every handler thread, and a hung or trickling
reply is cut short at shutdown, so ``filterwarnings = error`` never sees a ResourceWarning.

What lives here is everything that does not depend on the protocol spoken:

* :class:`RecordedRequest` — one request as the server saw it (subclass it to add views of the
  body, e.g. the ``doc_ids`` of a permission check or the ``messages`` of a chat request);
* :class:`Reply` — what to send back, including a delay before it (a hung server) or a pause
  between pieces of the body (a trickling server);
* :class:`ScriptedServer` — lifecycle, request recording and scripted behaviours: a steady
  responder plus a queue of one-shot ones (``times=n``), switchable at any time;
* :class:`FakeService` — a fake cloud service's request loop, with the failures a test tells
  it to give on some paths, in its own error shape (``Retry-After``, after the first n);
* :func:`closed_url` — a loopback URL on which nothing listens.

A server subclasses :class:`ScriptedServer`, passes its request class and its default responder
to ``__init__``, adds its own URL properties and behaviours (each a call to :meth:`_set` with a
``RecordedRequest -> Reply`` function) and, if some requests must not reach the scripted
behaviours at all (a wrong path, say), overrides :meth:`_refuse`.
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
from typing import Any, ClassVar, Generic, Self, TypeVar
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "HOST",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptedServer",
    "closed_url",
    "json_reply",
]

HOST = "127.0.0.1"
MAX_BODY_BYTES = 16 << 20  # a runaway client cannot make a handler buffer without bound
GARBAGE = b"\x00\xff<html>not json{{"


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


@dataclass
class Fault:
    """A scripted failure: requests whose path contains ``path`` get ``reply``, ``times``
    times (``None``: for ever), after the first ``after`` of them went through."""

    path: str
    reply: Reply
    times: int | None
    after: int = 0
    seen: int = 0


def scripted_fault(faults: list[Fault], path: str) -> Reply | None:
    """The reply of the first fault in ``faults`` that applies to ``path`` now, if any."""
    for fault in faults:
        if fault.path in path and fault.times != 0:
            fault.seen += 1
            if fault.seen > fault.after:
                if fault.times is not None:
                    fault.times -= 1
                return fault.reply
    return None


class FakeService:
    """A fake cloud service, mixed into a :class:`ScriptedServer` that responds with
    :meth:`_route`: requests are answered one at a time (under ``_mutex``), a scripted fault
    on the path first (``faults``, see :meth:`fault`), else by the service's :meth:`_answer`.
    The service says how its errors look (:meth:`fault_body`), and which reason they give
    unless a test names one."""

    faults: list[Fault]
    _mutex: threading.Lock
    fault_reason: ClassVar[str] = "scripted fault"

    def _route(self, request: RecordedRequest) -> Reply:
        with self._mutex:
            parts = urlsplit(request.path)
            scripted = scripted_fault(self.faults, parts.path)
            if scripted is not None:
                return scripted
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            return self._answer(request, parts.path, query)

    def _answer(self, request: RecordedRequest, path: str, query: dict[str, str]) -> Reply:
        raise NotImplementedError

    def fault(
        self,
        path: str,
        status: int,
        *,
        times: int | None = 1,
        after: int = 0,
        retry_after: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Answer ``status`` to requests whose path contains ``path`` (see :class:`Fault`),
        with a ``Retry-After`` header if ``retry_after`` is given."""
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        body = json.dumps(self.fault_body(status, reason or self.fault_reason)).encode()
        self.faults.append(Fault(path, Reply(status, body, headers=headers), times, after))

    def fault_body(self, status: int, reason: str) -> dict[str, Any]:
        raise NotImplementedError


RequestT = TypeVar("RequestT", bound=RecordedRequest)
Responder = Callable[[RequestT], Reply]


def json_reply(payload: Any, **extra: Any) -> Reply:
    """A reply whose body is ``payload`` as JSON; ``extra`` sets any other :class:`Reply` field."""
    return Reply(body=json.dumps(payload).encode(), **extra)


def closed_url(path: str = "") -> str:
    """A loopback URL on which nothing listens: connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port = sock.getsockname()[1]
    return f"http://{HOST}:{port}{path}"


class _HTTPServer(ThreadingHTTPServer):
    # Handler threads are joined by server_close(), so none outlives the ``with`` block.
    daemon_threads = False
    block_on_close = True

    owner: ScriptedServer[Any]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) closes its socket; writing to it then fails. Expected.
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
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
        body = self.rfile.read(min(length, MAX_BODY_BYTES)) if length else b""
        request = owner._request_type(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        reply = owner._dispatch(request)
        if reply.delay_s and owner._stopping.wait(reply.delay_s):
            return  # the server is stopping: drop the connection without answering
        try:
            self._send(reply, owner._stopping)
        except OSError:
            return  # the client hung up; expected in timeout tests

    def _send(self, reply: Reply, stopping: threading.Event) -> None:
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
            if stopping.wait(reply.chunk_delay_s):
                return


class ScriptedServer(Generic[RequestT]):
    """A threaded HTTP server on ``127.0.0.1:<free port>`` whose replies tests script at will.

    Every request is recorded (as ``request_type``) and answered by the next queued responder,
    or by the steady one when the queue is empty. A responder that raises is a test bug: the
    error is kept in :attr:`responder_errors` and the client gets a 599.
    """

    def __init__(self, request_type: type[RequestT], responder: Responder[RequestT]) -> None:
        self._request_type = request_type
        self._lock = threading.Lock()
        self._requests: list[RequestT] = []
        self._queue: deque[Responder[RequestT]] = deque()
        self._steady: Responder[RequestT] = responder
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.responder_errors: list[str] = []

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        httpd = _HTTPServer((HOST, 0), _Handler)
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

    def url_for(self, path: str) -> str:
        """``http://127.0.0.1:<port><path>``."""
        return f"http://{HOST}:{self.port}{path}"

    # ------------------------------------------------------------------ recording

    @property
    def requests(self) -> list[RequestT]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def calls(self, fragment: str) -> int:
        """Requests so far whose path contains ``fragment``."""
        return sum(fragment in r.path for r in self.requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def bodies(self) -> list[Any]:
        """The parsed body of every request (``None`` where it was not JSON)."""
        return [r.json for r in self.requests]

    def raw_text(self) -> str:
        """Every request body ever received, decoded leniently."""
        return "\n".join(r.body.decode("utf-8", "replace") for r in self.requests)

    # ------------------------------------------------------------------ dispatch

    def _refuse(self, request: RequestT) -> Reply | None:
        """A reply for a request the scripted behaviours must not see, or ``None`` (the default:
        every request is theirs). Refused requests are recorded but consume no queued behaviour."""
        return None

    def _dispatch(self, request: RequestT) -> Reply:
        with self._lock:
            self._requests.append(request)
            n = len(self._requests)
        refusal = self._refuse(request)
        if refusal is not None:
            return refusal
        with self._lock:
            responder = self._queue.popleft() if self._queue else self._steady
        try:
            return responder(request)
        except Exception as exc:  # a broken responder is a test bug: make it visible
            with self._lock:
                self.responder_errors.append(f"request {n}: {exc!r}")
            return Reply(status=599, body=b"responder error", content_type="text/plain")

    # ------------------------------------------------------------------ behaviours

    def _set(self, responder: Responder[RequestT], times: int | None = None) -> None:
        """``responder`` for the next ``times`` requests (queued after any already queued), or,
        with ``times=None``, from now on (dropping the queue)."""
        with self._lock:
            if times is None:
                self._queue.clear()
                self._steady = responder
            else:
                self._queue.extend([responder] * times)

    def respond_with(self, responder: Responder[RequestT], *, times: int | None = None) -> None:
        """Any behaviour at all: ``responder(request) -> Reply``."""
        self._set(responder, times)

    def reply_with(self, reply: Reply, *, times: int | None = None) -> None:
        """Full control: exactly this reply, whatever was asked."""
        self._set(lambda r: reply, times)

    def reply_json(self, payload: Any, status: int = 200, *, times: int | None = None) -> None:
        """A 200 (by default) with any JSON payload, e.g. one of the wrong shape."""
        self.reply_with(json_reply(payload, status=status), times=times)

    def garbage(self, data: bytes = GARBAGE, *, times: int | None = None) -> None:
        """A 200 whose body is not JSON."""
        self.reply_with(Reply(body=data), times=times)
