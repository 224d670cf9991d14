"""The last route: nothing the caller may read answers, and no RESTRICTED source may be
named to them. The refusal is a fixed text (``[answer] no_source_message``), the same
whether a hidden document would have answered or none exists (docs/design.md §6)."""

from __future__ import annotations

from clearance.answer.context import AnswerContext
from clearance.answer.request import AnswerRequest, refusal
from clearance.answer.result import AnswerResult, Route, Status

__all__ = ["NoSourceRoute"]


class NoSourceRoute:
    def __init__(self, ctx: AnswerContext) -> None:
        self.ctx = ctx

    def answer(self, request: AnswerRequest) -> AnswerResult:
        request.trace.reason = "no_authorized_source"
        return refusal(
            Status.NO_AUTHORIZED_SOURCE, self.ctx.settings.answer.no_source_message, Route.NARRATIVE
        )
