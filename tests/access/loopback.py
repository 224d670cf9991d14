"""A real source-system permission-check server on 127.0.0.1, for real-time check tests.

Why: a mocked transport cannot show that timeouts, refused connections, trickled bodies or a
server that hangs are really handled — only a real socket can. The socket, thread, recording and
clean-shutdown plumbing lives in ``loopback_server``; this module keeps the permission-check
protocol and its scripted behaviours.

Usage::

    with LoopbackServer() as server:
        server.deny("doc:2")                 # switch behaviour at any time
        ...POST to server.url...
        server.requests[0].json              # every request body is recorded

The default behaviour answers a permission-check POST (``{"user": ..., "doc_ids": [...]}``) with
``{"decisions": {doc: true, ...}}`` for every doc asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from loopback_server import RecordedRequest as BaseRecordedRequest
from loopback_server import Reply, ScriptedServer, closed_url, json_reply

__all__ = ["LoopbackServer", "RecordedRequest", "Reply", "closed_port_url"]


class RecordedRequest(BaseRecordedRequest):
    """One request as the server saw it, with a view of its permission-check body."""

    @property
    def doc_ids(self) -> list[str]:
        """The ``doc_ids`` of a permission-check body, or ``[]`` if the body is not one."""
        body = self.json
        ids = body.get("doc_ids") if isinstance(body, dict) else None
        return [d for d in ids if isinstance(d, str)] if isinstance(ids, list) else []


Responder = Callable[[RecordedRequest], Reply]


def decisions_reply(decisions: dict[str, Any], **extra: Any) -> Reply:
    return json_reply({"decisions": decisions}, **extra)


def closed_port_url(path: str = "/check") -> str:
    """A loopback URL on which nothing listens: connecting is refused."""
    return closed_url(path)


class LoopbackServer(ScriptedServer[RecordedRequest]):
    """A permission-check server on ``127.0.0.1:<free port>`` whose behaviour tests switch at will.

    Every request, whatever its method or path, is recorded and answered by the current behaviour.
    Inherited: ``requests``, ``request_count``, ``port``, ``respond_with``, ``garbage``,
    ``reply_json``, ``responder_errors``.
    """

    def __init__(self, path: str = "/check") -> None:
        super().__init__(RecordedRequest, self._allow_all)
        self.path = path

    @property
    def url(self) -> str:
        return self.url_for(self.path)

    # ------------------------------------------------------------------ behaviours

    @staticmethod
    def _allow_all(request: RecordedRequest) -> Reply:
        return decisions_reply(dict.fromkeys(request.doc_ids, True))

    def allow_all(self) -> None:
        """``true`` for every doc asked (the default)."""
        self._set(self._allow_all)

    def deny(self, *doc_ids: str) -> None:
        """``false`` for the listed docs, ``true`` for the rest."""
        denied = set(doc_ids)
        self._set(lambda r: decisions_reply({d: d not in denied for d in r.doc_ids}))

    def omit(self, *doc_ids: str) -> None:
        """Leave the listed docs out of ``decisions``; ``true`` for the rest."""
        omitted = set(doc_ids)
        self._set(lambda r: decisions_reply({d: True for d in r.doc_ids if d not in omitted}))

    def decide(self, decisions: dict[str, Any], extra: Iterable[tuple[str, Any]] = ()) -> None:
        """Exactly these decisions (any JSON values), whatever was asked."""
        payload = dict(decisions)
        payload.update(extra)
        self.reply_with(decisions_reply(payload))

    def fail(self, status: int = 500, body: bytes = b"internal error") -> None:
        """Reply with a status code (and a body that says nothing useful)."""
        self.reply_with(Reply(status=status, body=body, content_type="text/plain"))

    def hang(self, seconds: float = 1.5) -> None:
        """Wait ``seconds`` (bounded; cut short at shutdown), then answer allow-all — too late."""
        self._set(lambda r: replace(self._allow_all(r), delay_s=seconds))

    def trickle(self, chunk_delay_s: float = 0.05, padding: int = 40) -> None:
        """Answer allow-all, but send the body one byte at a time with a pause between bytes.

        Each single read is quick, so only a whole-exchange deadline catches it.
        """

        def respond(request: RecordedRequest) -> Reply:
            reply = self._allow_all(request)
            return replace(reply, body=reply.body + b" " * padding, chunk_delay_s=chunk_delay_s)

        self._set(respond)

    def reply_raw(self, body: bytes, status: int = 200, **extra: Any) -> None:
        """Raw bytes with full control over the reply (headers, delays)."""
        self.reply_with(Reply(status=status, body=body, **extra))
