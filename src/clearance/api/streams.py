"""Bounds on long-lived responses: MCP's ``GET /mcp`` event stream and answers sent as
server-sent events.

A stream holds a connection, a file descriptor and a task for as long as it is open. MCP's
``GET`` stream in stateless mode carries nothing at all, so without a bound it never ends;
a client that stops reading holds any stream whose next write waits for it. What is
guaranteed, per process (``[server] streams_per_user``, ``stream_idle_timeout``):

* at most ``per_user`` streams of one user are open at once; one more is refused with 429
  ``too_many_streams`` in the one error shape before any work is done for it, and the slot
  is given back however the stream ends (finished, idle, the client gone, an error);
* a stream that has started and then sends nothing but keep-alive comments (SSE lines
  starting with ``:``) for ``idle_timeout_s``, or whose client has read nothing for that
  long, is ended: its task is cancelled and the response is closed. The time before the
  response starts is not idle time (an answer is bounded by ``[server] request_timeout``).

So one user holds at most ``per_user`` streams per process, each at most
``idle_timeout_s`` past its last event, whatever the client does.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearance.api.errors import HttpError

if TYPE_CHECKING:
    from clearance.config import ServerSettings

__all__ = ["StreamGuard", "TooManyStreams"]


class TooManyStreams(HttpError):
    """429: the caller already holds as many open streams as it may."""

    status = 429
    code = "too_many_streams"

    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(f"too many open streams (at most {limit}); close one first")
        self.retry_after = retry_after


def _keepalive(body: bytes) -> bool:
    """Whether ``body`` is only SSE comments (keep-alive pings): no event, no data."""
    lines = [line for line in body.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(b":") for line in lines)


class StreamGuard:
    """Counts each user's open streams and ends idle ones; see the module docstring."""

    def __init__(
        self,
        *,
        per_user: int,
        idle_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_user = per_user
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    @classmethod
    def of(cls, server: ServerSettings) -> StreamGuard:
        """The guard ``[server] streams_per_user`` and ``stream_idle_timeout`` configure."""
        return cls(per_user=server.streams_per_user, idle_timeout_s=server.stream_idle_timeout_s)

    @contextmanager
    def slot(self, user_id: str) -> Iterator[None]:
        """One of ``user_id``'s stream slots for the block, or :class:`TooManyStreams`."""
        with self._lock:
            held = self._open.get(user_id, 0)
            if held >= self.per_user:
                raise TooManyStreams(self.per_user, max(1, math.ceil(self.idle_timeout_s)))
            self._open[user_id] = held + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._open[user_id] - 1
                if left:
                    self._open[user_id] = left
                else:
                    del self._open[user_id]

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """``app`` answering one request, ended once its started response is idle for
        ``idle_timeout_s`` (keep-alive comments do not count; a write the client does not
        read never completes, so it does not count either)."""
        started = finished = idle = False
        last = self._clock()

        async def watched(message: Message) -> None:
            nonlocal started, finished, last
            kind = message["type"]
            if kind == "http.response.start":
                started = True
                last = self._clock()
            await send(message)
            if kind == "http.response.body":
                if not _keepalive(message.get("body", b"")):
                    last = self._clock()
                finished = finished or not message.get("more_body", False)

        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal idle
                while True:
                    wait = (last + self.idle_timeout_s) - self._clock()
                    if started and not finished and wait <= 0:
                        idle = True
                        group.cancel_scope.cancel()
                        return
                    await anyio.sleep(max(wait, 0.01) if started else self.idle_timeout_s)

            group.start_soon(watch)
            await app(scope, receive, watched)
            group.cancel_scope.cancel()
        if idle and not finished:
            # The end of the body; a client that reads nothing gets its connection closed.
            with anyio.move_on_after(1.0):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
