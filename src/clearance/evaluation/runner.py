"""Running a suite through the engine, and judging each answer independently of it.

Every case is asked with :meth:`Clearance.ask` — the call ``clearance ask`` makes — as its
persona, through its assistant, on its request date, with the engine's clock set to the
case's ``now`` when it gives one. What the engine retrieved is read from the trace record it
hands its listeners (document ids only); everything else comes from the result.

The judgement does not ask the engine again. On top of the measures of
:mod:`~clearance.evaluation.scoring` (outcome, figure, citations, fabricated numbers) it
re-checks, per case:

* **denied sources** — every retrieved document against the store and the access rules,
  one document at a time (:meth:`AccessControl.decide`, ``retrieve``, under the case's
  assistant), not through the compiled search filter the engine searched with: a document
  the persona may not retrieve, or one the store does not hold, is denied;
* **stale sources** — cited documents whose ``review_at`` is before the engine's clock;
* **forbidden sources** — documents of ``not_cite`` that are cited, or whose title the
  answer writes;
* **usefulness** — an answer expected with ``cite`` is useful when it is answered and
  cites one of them.

A leak is a denied retrieved document, a citation the persona may not read, or a forbidden
source: the suite's leak count must be 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from clearance.access.policy import AccessControl, Action
from clearance.answer.result import AnswerResult
from clearance.app import Clearance
from clearance.errors import EvaluationError, QuestionError
from clearance.evaluation.scoring import CaseScore, Outcome, score_case
from clearance.evaluation.suite import Suite, SuiteCase
from clearance.ingest.facts import Vocabulary
from clearance.retrieval.spelling import statement
from clearance.trace.record import TraceRecord

__all__ = ["CaseRun", "denied_sources", "run_suite"]

_UNREADABLE = "may not read it"


@dataclass(frozen=True, slots=True)
class CaseRun:
    """One case asked and judged."""

    case: SuiteCase
    score: CaseScore
    result: AnswerResult
    latency_ms: float
    retrieved: tuple[str, ...]
    denied: tuple[str, ...]
    stale: tuple[str, ...]
    forbidden: tuple[str, ...]

    @property
    def useful(self) -> bool | None:
        """Answered with one of the expected sources cited; ``None`` when no answer with a
        source is expected."""
        if self.case.case.expected is not Outcome.ANSWERED or not self.case.cite:
            return None
        cited = {c.doc_id for c in self.result.citations}
        return self.score.actual is Outcome.ANSWERED and bool(cited & set(self.case.cite))

    @property
    def status_right(self) -> bool:
        if self.case.status is None:
            return self.score.actual is Outcome.REFUSED
        return self.result.status is self.case.status

    @property
    def denied_citations(self) -> tuple[str, ...]:
        return tuple(
            c.citation.doc_id
            for c in self.score.citations
            if c.problem is not None and c.problem.endswith(_UNREADABLE)
        )

    @property
    def leaks(self) -> int:
        return len(self.denied) + len(self.denied_citations) + len(self.forbidden)

    def problems(self) -> list[str]:
        out = self.score.problems()
        if not self.status_right and self.case.status is not None:
            wanted = self.case.status.value
            if not out or not out[0].startswith("expected"):
                out.insert(0, f"expected status {wanted}, got {self.result.status.value}")
        if self.useful is False:
            out.append(f"none of {', '.join(self.case.cite)} is cited")
        out += [f"retrieved {d}, which {self.case.case.user} may not retrieve" for d in self.denied]
        out += [f"{d} is cited or named, and must not be" for d in self.forbidden]
        return list(dict.fromkeys(out))

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.score.to_dict(),
            "stage": self.case.stage,
            "corpus": self.case.corpus,
            "user": self.case.case.user,
            "assistant": self.case.case.assistant,
            "question": self.case.case.question,
            "expected_status": self.case.status.value if self.case.status else "refused",
            "route": self.result.route.value,
            "answer": self.result.answer,
            "latency_ms": round(self.latency_ms, 3),
            "useful": self.useful,
            "retrieved": list(self.retrieved),
            "denied": list(self.denied),
            "stale": list(self.stale),
            "forbidden": list(self.forbidden),
            "leaks": self.leaks,
            "problems": self.problems(),
        }


def denied_sources(
    doc_ids: tuple[str, ...], user_id: str, assistant: str | None, app: Clearance
) -> tuple[str, ...]:
    """The documents of ``doc_ids`` that ``user_id`` may not retrieve through ``assistant``
    now, each decided on its own against the store (module docstring)."""
    access: AccessControl = app.access()
    principal = access.principal(user_id)
    scope = access.assistant(assistant) if assistant is not None else None
    denied: list[str] = []
    for doc_id in doc_ids:
        document = app.store.get_document(doc_id)
        if document is None or not access.decide(principal, Action.RETRIEVE, document, scope).allow:
            denied.append(doc_id)
    return tuple(denied)


@contextmanager
def _clock(app: Clearance, now: datetime | None) -> Iterator[None]:
    if now is None:
        yield
        return
    saved = app.clock
    app.clock = lambda: now
    try:
        yield
    finally:
        app.clock = saved


@contextmanager
def _traces(app: Clearance) -> Iterator[list[TraceRecord]]:
    records: list[TraceRecord] = []
    app.trace_listeners.append(records.append)
    try:
        yield records
    finally:
        app.trace_listeners.remove(records.append)


def _forbidden(case: SuiteCase, result: AnswerResult, app: Clearance) -> tuple[str, ...]:
    cited = {c.doc_id for c in result.citations}
    # How the question was read names the asker's words, not a document.
    answer = result.answer.removeprefix(statement(result.corrections)).casefold()
    out: list[str] = []
    for doc_id in case.not_cite:
        document = app.store.get_document(doc_id)
        named = document is not None and document.title.casefold() in answer
        if doc_id in cited or named:
            out.append(doc_id)
    return tuple(out)


def run_case(app: Clearance, case: SuiteCase, periods: Vocabulary) -> CaseRun:
    """Ask one case and judge the answer (module docstring)."""
    question, user, assistant = case.case.question, case.case.user, case.case.assistant
    with _clock(app, case.now), _traces(app) as records:
        start = time.perf_counter()
        try:
            result = app.ask(question, user, assistant=assistant, today=case.today)
        except QuestionError as exc:
            raise EvaluationError(f"case {case.id}: {exc.message}") from None
        latency_ms = (time.perf_counter() - start) * 1000
        retrieved = tuple(sorted({d for r in records for d in r.retrieved}))
        denied = denied_sources(retrieved, user, assistant, app)
        score = score_case(
            case.case, result, evidence=app.store, access=app.access(), periods=periods
        )
        now = app.clock()
        stale = [
            doc_id
            for doc_id in dict.fromkeys(c.doc_id for c in result.citations)
            for document in [app.store.get_document(doc_id)]
            if document is not None and document.review_at is not None
            if document.review_at < now
        ]
    return CaseRun(
        case=case,
        score=score,
        result=result,
        latency_ms=latency_ms,
        retrieved=retrieved,
        denied=denied,
        stale=tuple(stale),
        forbidden=_forbidden(case, result, app),
    )


def run_suite(
    app: Clearance,
    suite: Suite,
    *,
    assistant: str | None = None,
    on_cases: Callable[[int], None] | None = None,
    on_case: Callable[[CaseRun], None] | None = None,
) -> list[CaseRun]:
    """Every case of ``suite`` (only those asked through ``assistant`` when given), in
    order."""
    cases = [c for c in suite.cases if assistant is None or c.case.assistant == assistant]
    if on_cases is not None:
        on_cases(len(cases))
    periods = Vocabulary(app.settings.facts)
    runs: list[CaseRun] = []
    for case in cases:
        run = run_case(app, case, periods)
        runs.append(run)
        if on_case is not None:
            on_case(run)
    return runs
