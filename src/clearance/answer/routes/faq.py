"""The FAQ route (stage 5): a vetted answer, served before retrieval to the people its ACL
admits. A vetted answer may be shared more widely than the documents it cites: only the
citations the caller may see are shown, so a title never leaks through the FAQ, and an
entry left with no citation is not served (every answer carries lineage)."""

from __future__ import annotations

from clearance.answer.context import AnswerContext
from clearance.answer.request import AnswerRequest
from clearance.answer.result import AnswerResult, Route, Status

__all__ = ["FaqRoute"]


class FaqRoute:
    def __init__(self, ctx: AnswerContext) -> None:
        self.ctx = ctx

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        trace = request.trace
        assert request.flt is not None and request.principal is not None
        trace.start("faq")
        entry = self.ctx.faq.match(
            request.masked,
            request.principal.principals,
            request.flt.now,
            out_of_scope=request.out_of_scope,
            has_slots=request.intent is not None and request.intent.slots_present,
            ceiling=request.flt.max_sensitivity,
        )
        trace.stop("faq")
        if entry is None:
            return None
        citations = tuple(c for c in entry.citations if self.ctx.may_view(request, c.doc_id))
        if not citations:
            return None
        trace.reason = "faq"
        return AnswerResult(Status.ANSWERED, entry.answer, Route.FAQ, citations)
