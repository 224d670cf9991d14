"""A deterministic, scriptable provider for tests.

Why: tests of the orchestrator, the guard and the answer checks need a "model" whose output they
choose — a good answer, an answer citing a snippet it should not, an invented number, an outage —
and they need to see exactly what was sent to it. :class:`MockProvider` is that model.

What is guaranteed:

* every request is appended to :attr:`MockProvider.requests` *before* anything else happens, so
  a request that ends in a simulated outage is recorded too;
* without a script the output is a pure function of the request (see :meth:`default_reply`);
* a simulated outage raises :class:`~clearance.errors.ProviderError`, exactly as a real provider
  does; a script that runs out raises :class:`ScriptExhausted` (*not* a ``ProviderError``), so a
  test that makes more calls than it planned fails loudly instead of looking like an outage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeAlias

from clearance.errors import ProviderError
from clearance.llm.base import ChatRequest, ChatResponse
from clearance.llm.extractive import split_sentences

__all__ = ["MockProvider", "Script", "ScriptExhausted"]

Step: TypeAlias = str | BaseException
Script: TypeAlias = str | Sequence[Step] | Callable[[ChatRequest], str]
"""A fixed reply · replies (or exceptions to raise) consumed in order · a function of the request."""


class ScriptExhausted(AssertionError):
    """The test made more calls than its scripted list of replies covers (a test bug)."""


class MockProvider:
    """A provider whose replies a test scripts.

    ``script`` may be:

    * ``None`` — :meth:`default_reply` (cite the first sentence of ``S1``; identity rerank);
    * a ``str`` — that reply to every request;
    * a sequence — one item per call, in order; an item that is an exception is raised instead
      of replying (e.g. ``["ok [S1]", ProviderError("down")]``); more calls than items raise
      :class:`ScriptExhausted`;
    * a callable ``(ChatRequest) -> str`` — called per request; it may raise ``ProviderError``.

    :meth:`fail` switches on a simulated outage for every following call (until :meth:`recover`);
    ``fail=`` in the constructor starts in that state. Safe to share between threads.
    """

    name = "mock"

    def __init__(
        self,
        script: Script | None = None,
        *,
        fail: ProviderError | str | None = None,
        model: str = "mock",
    ) -> None:
        self.model = model
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._fixed: str | None = None
        self._steps: list[Step] | None = None
        self._func: Callable[[ChatRequest], str] | None = None
        self._outage: ProviderError | None = None
        self._cursor = 0
        if isinstance(script, str):
            self._fixed = script
        elif callable(script):
            self._func = script
        elif script is not None:
            self._steps = list(script)
        if fail is not None:
            self.fail(fail)

    # ------------------------------------------------------------------ control

    def fail(self, error: ProviderError | str = "simulated provider outage") -> None:
        """Make every following call raise ``error`` (a ``ProviderError``, or its message)."""
        with self._lock:
            self._outage = error if isinstance(error, ProviderError) else ProviderError(error)

    def recover(self) -> None:
        """End a simulated outage started by :meth:`fail`."""
        with self._lock:
            self._outage = None

    @property
    def calls(self) -> int:
        """How many requests were received (including failed ones)."""
        with self._lock:
            return len(self.requests)

    # ------------------------------------------------------------------ provider

    def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            self.requests.append(request)
            outage = self._outage
            step: Step | None = None
            if outage is None and self._steps is not None:
                # Calls during an outage do not consume scripted replies.
                if self._cursor >= len(self._steps):
                    raise ScriptExhausted(
                        f"MockProvider script has {len(self._steps)} replies; "
                        f"call {self._cursor + 1} was not scripted"
                    )
                step = self._steps[self._cursor]
                self._cursor += 1
        if outage is not None:
            raise outage
        if isinstance(step, BaseException):
            raise step
        if step is not None:
            text = step
        elif self._fixed is not None:
            text = self._fixed
        elif self._func is not None:
            text = self._func(request)
        else:
            text = self.default_reply(request)
        return ChatResponse(text=text, model=self.model)

    @staticmethod
    def default_reply(request: ChatRequest) -> str:
        """``answer``: ``"<first sentence of S1> [S1]"`` (``""`` without snippets);
        ``rerank``: the refs in the order given, ``"S1 > S2 > …"``."""
        if request.purpose == "rerank":
            return " > ".join(s.ref for s in request.snippets)
        if not request.snippets:
            return ""
        first = request.snippets[0]
        sentences = split_sentences(first.text)
        return f"{sentences[0]} [{first.ref}]" if sentences else ""
