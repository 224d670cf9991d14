"""The answer routes, tried in order by :class:`clearance.answer.orchestrator.Orchestrator`.

A route answers one question or passes it on::

    class AnswerRoute(Protocol):
        def answer(self, request: AnswerRequest) -> AnswerResult | None: ...

It reads the caller, the filter and the parsed intent from the request and records what
it did in the request's trace; ``None`` hands the question to the next route. Adding a
route is adding a module here and its place in :data:`Orchestrator.routes`
(docs/extending.md).
"""

from __future__ import annotations

from typing import Protocol

from clearance.answer.request import AnswerRequest
from clearance.answer.result import AnswerResult

__all__ = ["AnswerRoute"]


class AnswerRoute(Protocol):
    def answer(self, request: AnswerRequest) -> AnswerResult | None: ...
