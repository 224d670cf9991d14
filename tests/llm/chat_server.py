"""A real chat-completions server on 127.0.0.1, for tests that must cross an actual socket.

Why: retries, timeouts, refused connections, headers and "what exactly left the process" can only
be shown over a real socket; a mocked transport would test the mock. This server speaks the
OpenAI chat-completions protocol (the dialect of Ollama, vLLM and llama.cpp too), records every
request, and can be switched at any time to misbehave. The socket, thread, recording and
clean-shutdown plumbing lives in ``loopback_server``; this module keeps the chat protocol, its
reply shapes and its scripted behaviours.

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
from collections.abc import Callable
from typing import Any

from loopback_server import RecordedRequest as BaseRecordedRequest
from loopback_server import Reply, ScriptedServer, closed_url

__all__ = ["ChatServer", "RecordedRequest", "Reply", "closed_base_url"]

CHAT_PATH = "/v1/chat/completions"


class RecordedRequest(BaseRecordedRequest):
    """One request as the server received it (header names lower-cased), with chat views."""

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


Answer = str | Callable[[dict[str, Any]], str]
Responder = Callable[[RecordedRequest], Reply]


def closed_base_url() -> str:
    """A loopback base URL on which nothing listens: connecting is refused."""
    return closed_url("/v1")


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


class ChatServer(ScriptedServer[RecordedRequest]):
    """A threaded chat-completions server on ``127.0.0.1:<free port>``; see the module docstring.

    Inherited: ``requests``, ``request_count``, ``bodies``, ``raw_text``, ``port``,
    ``responder_errors``, ``respond_with``, ``reply_with``, ``garbage``, ``reply_json``.
    """

    def __init__(self, answer: Answer = "OK [S1]", *, model: str = "loopback-model") -> None:
        self.model = model
        super().__init__(RecordedRequest, self._answering(answer))

    @property
    def base_url(self) -> str:
        """What a provider is configured with, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self.url_for("/v1")

    def all_prompt_text(self) -> str:
        """Every message content ever received, newline-joined — for canary leak checks."""
        return "\n".join(r.prompt_text for r in self.requests)

    # ------------------------------------------------------------------ behaviours

    def _refuse(self, request: RecordedRequest) -> Reply | None:
        # Only chat requests reach (and consume) the scripted behaviours.
        if request.method != "POST" or request.path.split("?")[0] != CHAT_PATH:
            return Reply(status=404, body=b'{"error": "not found"}')
        if not isinstance(request.json, dict):
            return Reply(status=400, body=b'{"error": "body is not a JSON object"}')
        return None

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
        self.reply_with(reply, times=times)

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

    def reply_raw(self, reply: Reply, *, times: int | None = None) -> None:
        """Full control: exactly this reply."""
        self.reply_with(reply, times=times)
