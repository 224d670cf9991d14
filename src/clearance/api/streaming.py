"""``POST /v1/ask`` under a deadline, as JSON or as server-sent events.

Why the stream is built this way: an answer may only be shown after it has passed every check
of the orchestrator (citations enforced, every number verified, conflicts and review dates
noted — docs/design.md §5). Model tokens have passed none of them, so they are never streamed. The
whole, checked answer is computed first by the same ``Clearance.ask`` as the JSON route; the
stream then carries that answer's sentences, one event each, and a final event with exactly
the JSON body of the non-streaming route. A client that shows the sentences as they arrive
shows only checked text, and the final event is the single source of truth.

Events (``Accept: text/event-stream``), each ``data`` one line of JSON:

``event: sentence``
    ``{"index": i, "text": "…"}`` — for an answered question only, in order. Each text is a
    consecutive piece of the final answer with its citation markers (``[S1]``) and trailing
    space: their concatenation is the ``answer`` of the final event, character for character.
``event: answer``
    ``{"status", "answer", "citations", "route", "trace_id", "flags", …}``, the body of
    the JSON route (``AnswerResult.to_dict()``). A refusal sends this event only.
``event: rendered``
    ``{"html": "…"}`` — only on the browser UI's stream, after ``answer``: the same answer as
    the UI renders it server-side (escaped by the template engine), so the page's script
    never builds markup from data.
``event: error``
    ``{"error", "message"}``, the one error shape, with the same HTTP status as the JSON
    route would have. Sent alone: nothing partial precedes it.

A user holds at most ``[server] streams_per_user`` answer streams open at once (one more is
429 ``too_many_streams``, as one ``error`` event), counted from before the ask runs until the
last event is written, and a stream whose client reads nothing for ``[server]
stream_idle_timeout`` is ended (:mod:`clearance.api.streams`).

The deadline (``[server] request_timeout``): an ask that has not finished in time is answered
503 with the fixed ``[answer] degraded_message``, as is a model provider that fails. The ask
itself is not killed (a thread cannot be); it is abandoned and finishes in the background,
bounded by ``[llm] timeout_s``, and writes its trace as every ask does.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import ExitStack
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from clearance.answer.result import AnswerResult, Status
from clearance.api.errors import error_body, status_of
from clearance.api.streams import StreamGuard, TooManyStreams
from clearance.errors import ClearanceError, ProviderError
from clearance.llm.extractive import split_sentences

__all__ = ["EVENT_STREAM", "Asker", "event", "event_stream", "sentence_pieces", "wants_stream"]

EVENT_STREAM = "text/event-stream"

#: The error code of every 503 that carries ``[answer] degraded_message``.
DEGRADED = "degraded"

AskFn = Callable[[str, str, str | None], AnswerResult]

# Citation markers (and the space around them) after a sentence belong to it; a marker run
# followed by more words ends a sentence ("… economy [S1] Next …"), as the orchestrator's
# checks read it.
_TRAILING_MARKERS = re.compile(r"(?:\s*\[S\d{1,4}\])*\s*")
_MARKERS_THEN_WORDS = re.compile(r"(?:\[S\d{1,4}\])+(?=\s+\w)")


def sentence_pieces(text: str) -> list[str]:
    """``text`` cut after each sentence (as :func:`~clearance.llm.extractive.split_sentences`
    finds them: abbreviations and decimals kept, CJK and line breaks handled) with the
    citation markers and whitespace that follow it, so ``"".join(sentence_pieces(t)) == t``
    always holds."""
    cuts: set[int] = set()
    position = 0
    for sentence in split_sentences(text):
        position = text.index(sentence, position) + len(sentence)
        cuts.add(position)
    cuts.update(m.end() for m in _MARKERS_THEN_WORDS.finditer(text))
    pieces: list[str] = []
    start = 0
    for cut in sorted(cuts):
        end = _TRAILING_MARKERS.match(text, cut)
        stop = end.end() if end else cut
        if stop > start and text[start:stop].strip():
            pieces.append(text[start:stop])
            start = stop
    if start < len(text):
        if pieces and not text[start:].strip():
            pieces[-1] += text[start:]
        else:
            pieces.append(text[start:])
    return pieces


def wants_stream(request: Request) -> bool:
    """Whether ``Accept`` names ``text/event-stream`` (with a non-zero quality)."""
    for item in request.headers.get("accept", "").split(","):
        media, *params = (p.strip() for p in item.split(";"))
        if media.lower() != EVENT_STREAM:
            continue
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


def event(name: str, data: dict[str, Any]) -> bytes:
    """One server-sent event; JSON escapes newlines, so ``data`` is always one line."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class Asker:
    """Runs asks under the deadline and answers them as JSON or as an event stream."""

    def __init__(
        self,
        ask: AskFn,
        *,
        timeout_s: float,
        degraded_message: str,
        streams: StreamGuard | None = None,
    ) -> None:
        self._ask = ask
        self.timeout_s = timeout_s
        self.degraded_message = degraded_message
        self.streams = streams
        self._running = 0
        self._idle = threading.Condition()

    def _tracked(self, question: str, user_id: str, assistant: str | None) -> AnswerResult:
        """``ask``, counted while it runs — abandoned asks included — so shutdown can wait
        for them to write their traces before the index is closed."""
        with self._idle:
            self._running += 1
        try:
            return self._ask(question, user_id, assistant)
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no ask is running (``True``) or ``timeout_s`` passed (``False``)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout=timeout_s)

    async def respond(
        self,
        request: Request,
        question: str,
        user_id: str,
        assistant: str | None,
        *,
        render: Callable[[AnswerResult], str] | None = None,
    ) -> Response:
        """The answer as JSON, or — when the request accepts an event stream — as events;
        ``render`` (the browser UI's) adds a ``rendered`` event after ``answer``. A stream
        holds one of the user's stream slots from before the ask until its end."""
        stream = wants_stream(request)
        if not stream or self.streams is None:
            return await self._respond(question, user_id, assistant, stream, render)
        try:
            with ExitStack() as slot:
                slot.enter_context(self.streams.slot(user_id))
                response = await self._respond(question, user_id, assistant, stream, render)
                # The slot goes with the response, given back when its last event is sent.
                return _Bounded(response, self.streams, slot.pop_all())
        except TooManyStreams as exc:
            refused = self._error(exc, stream)
            refused.headers["Retry-After"] = str(exc.retry_after)
            return refused

    async def _respond(
        self,
        question: str,
        user_id: str,
        assistant: str | None,
        stream: bool,
        render: Callable[[AnswerResult], str] | None,
    ) -> Response:
        try:
            result = await self.run(question, user_id, assistant)
        except ClearanceError as exc:
            return self._error(exc, stream)
        if result.status is Status.DEGRADED:  # the orchestrator caught a provider failure
            return self._error(ProviderError(self.degraded_message), stream)
        body = result.to_dict()
        if not stream:
            return JSONResponse(body)
        pieces = sentence_pieces(result.answer) if result.status is Status.ANSWERED else []
        events = [event("sentence", {"index": i, "text": t}) for i, t in enumerate(pieces)]
        events.append(event("answer", body))
        if render is not None:
            events.append(event("rendered", {"html": render(result)}))
        return event_stream(events)

    async def run(self, question: str, user_id: str, assistant: str | None) -> AnswerResult:
        """``ask`` in a worker thread; past the deadline, :class:`ProviderError` (the ask is
        abandoned, not stopped: it finishes, and writes its trace, in the background)."""
        with anyio.move_on_after(self.timeout_s):
            return await anyio.to_thread.run_sync(
                self._tracked, question, user_id, assistant, abandon_on_cancel=True
            )
        raise ProviderError(f"the answer took longer than {self.timeout_s:g} s")

    def failure(self, exc: ClearanceError) -> tuple[int, dict[str, Any]]:
        """The HTTP status and body of ``exc``: a provider failure or a passed deadline is
        the fixed degraded text, never the provider's details."""
        if isinstance(exc, ProviderError):
            return 503, error_body(DEGRADED, self.degraded_message)
        return status_of(exc), exc.to_dict()

    def _error(self, exc: ClearanceError, stream: bool) -> Response:
        status, body = self.failure(exc)
        if not stream:
            return JSONResponse(body, status)
        return event_stream([event("error", body)], status)


class _Bounded(Response):
    """``inner`` sent under the stream guard's idle timeout, giving its slot back at the end."""

    def __init__(self, inner: Response, guard: StreamGuard, slot: ExitStack) -> None:
        self.inner = inner
        self.guard = guard
        self.slot = slot
        self.status_code = inner.status_code
        self.background = None
        self.raw_headers = inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self.slot:
            await self.guard.run(self.inner, scope, receive, send)
        if self.background is not None:
            await self.background()


def event_stream(events: Iterable[bytes], status: int = 200) -> StreamingResponse:
    async def send() -> AsyncIterator[bytes]:
        for item in events:
            yield item

    return StreamingResponse(
        send(),
        status_code=status,
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
