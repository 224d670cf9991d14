"""The composite route: "What was the deficit in FY2024, and why did it grow?" — the figure
from the figures route (numbers from facts only), the explanation from the narrative path
(numbers checked against its cited snippets). A part without a source is named, and the
other is still answered."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from clearance.answer.context import AnswerContext
from clearance.answer.intent import (
    Intent,
)
from clearance.answer.request import (
    AnswerRequest,
)
from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.answer.routes.figures import FiguresRoute

__all__ = ["CompositeRoute"]

NO_EXPLANATION = "I have no approved source I can use to answer the rest (“{part}”)."

_CITATION_MARKER = re.compile(r"\[S(\d{1,4})\]")


class CompositeRoute:
    """A figure and its explanation, each part with its own guarantees."""

    def __init__(
        self,
        ctx: AnswerContext,
        figures: FiguresRoute,
        narrate: Callable[..., AnswerResult],
    ) -> None:
        self.ctx = ctx
        self.figures = figures
        self.narrate = narrate

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        if request.intent is None or request.intent.kind != "composite":
            return None
        return self._composite(request, request.intent)

    def _composite(self, request: AnswerRequest, intent: Intent) -> AnswerResult:
        """A figure and an explanation: the figure from the structured path (its numbers
        from facts only), the explanation from the narrative path (its numbers checked
        against its cited snippets). Each part keeps its own guarantees; a part without a
        source is named, and the other is still answered."""
        trace = request.trace
        figure = self.figures.structured(request, intent) or self.narrate(request)
        figure_retrieved = set(trace.retrieved)
        # The explanation is searched for and judged on its own clause: the whole question's
        # metric and period words would rank the figure's own table rows first, and a row
        # of figures explains nothing (the figure itself is already answered from facts).
        story = self.narrate(
            replace(request, masked=intent.narrative_query or intent.narrative or request.masked),
            prose_only=True,
        )
        trace.retrieved = sorted(figure_retrieved | set(trace.retrieved))
        trace.denied_retrieved = self.ctx.count_denied(request, trace.retrieved)
        blocks = [figure.answer]
        flags = list(figure.flags)
        if figure.status is not Status.ANSWERED:
            flags.append("unanswered_part:figure")
        citations = tuple(dict.fromkeys((*figure.citations, *story.citations)))
        if story.status is Status.ANSWERED:
            # The explanation's markers count from its own first citation; here they
            # follow the figure's.
            blocks.append(_renumbered(story.answer, story.citations, citations))
            flags.extend(f for f in story.flags if f not in flags)
        else:
            blocks.append(NO_EXPLANATION.format(part=intent.narrative))
            flags.append("unanswered_part:narrative")
        answered = Status.ANSWERED in (figure.status, story.status)
        if answered:
            partial = any(f.startswith("unanswered_part:") for f in flags)
            trace.reason = "partial_answer" if partial else None
        return AnswerResult(
            Status.ANSWERED if answered else figure.status,
            "\n\n".join(blocks),
            Route.COMPOSITE,
            citations,
            flags=tuple(flags),
            assumptions=figure.assumptions,
            missing=figure.missing,
            options=figure.options,
            resolved_periods=figure.resolved_periods,
        )


def _renumbered(text: str, own: Sequence[Citation], listed: Sequence[Citation]) -> str:
    """``text``'s ``[S#]`` markers, numbered against ``own``, renumbered to ``listed``."""
    position = {c: i for i, c in enumerate(listed, start=1)}

    def number(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[S{position[own[n - 1]]}]" if 1 <= n <= len(own) else ""

    return _CITATION_MARKER.sub(number, text)
