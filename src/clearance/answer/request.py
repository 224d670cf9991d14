"""One question on its way through the answer routes, and the texts they share.

An :class:`AnswerRequest` is built by the orchestrator for one question and filled in by
its stages (identify, scope gate, assistant, candidate filter, route): the routes read the
caller, the filter and the parsed intent from it and record what they did in its trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from clearance.access.caller import Caller
from clearance.access.policy import AccessControl, Principal
from clearance.answer.intent import Intent
from clearance.answer.result import AnswerResult, Route, Status
from clearance.config import AssistantSettings
from clearance.ingest.facts import Vocabulary
from clearance.retrieval.spelling import Correction
from clearance.store.base import SearchFilter
from clearance.trace.record import TraceRecord

__all__ = [
    "ALL_CHANNELS",
    "CLARIFY",
    "CLARIFY_OPTIONS",
    "MAX_OPTIONS",
    "AnswerRequest",
    "refusal",
]

CLARIFY = "Please say which {missing} you mean."
CLARIFY_OPTIONS = " For example: {options}."
#: ``channel`` of :meth:`AnswerContext.readable_facts` for the facts of every channel.
ALL_CHANNELS = "*"
#: How many readable values a clarifying question offers at most.
MAX_OPTIONS = 5


@dataclass
class AnswerRequest:
    question: str
    user_id: str
    trace: TraceRecord
    principal: Principal | None = None
    assistant: AssistantSettings | None = None
    access: AccessControl | None = None
    flt: SearchFilter | None = None
    masked: str = ""
    # ``masked`` whole: a long question's context, which ``masked`` narrows to the part
    # that asks (answer/focus.py) and a language model's prompt still carries.
    whole: str = ""
    # A corpus in the assistant's scope is failing closed (past its revocation SLA).
    unavailable: bool = False
    today: date | None = None
    # The vocabulary with the names of the facts this caller may read (structured.py).
    vocab: Vocabulary | None = None
    # What the question asks (stage 6), and whether the scope gate matched an entity.
    intent: Intent | None = None
    out_of_scope: bool = False
    # Phrases equivalent to the question's words in the language it is read in, when it is
    # asked again across languages (answer/routes/crosslingual.py): searched for and
    # judged as the organisation's own equivalences are.
    renderings: tuple[tuple[str, ...], ...] = ()
    # Misspelt words of the question read as words the caller's chunks hold (stage 4b),
    # already written into ``masked`` and ``whole``; ``written`` is ``whole`` as it was.
    corrections: tuple[Correction, ...] = ()
    written: str = ""

    @property
    def caller(self) -> Caller:
        """The caller this request answers, once identified (stage 1) and scoped (stage 3)."""
        assert self.access is not None and self.principal is not None
        return Caller(self.user_id, self.principal, self.assistant, self.access)


def refusal(status: Status, text: str, route: Route = Route.NONE) -> AnswerResult:
    """A refusal: a fixed text, no citation."""
    return AnswerResult(status, text, route)
