"""The request path of docs/design.md §1, in order. Each stage is its own module; this one only
sequences them, records the trace and turns refusals into fixed texts. After stage 6 the
question goes to the answer routes (:mod:`clearance.answer.routes`) in order — FAQ,
composite, figures, narrative, the narrative again across languages, restricted naming,
refusal — and the first that answers answers.

====  ===================  ===========================================================
 #    stage                module
====  ===================  ===========================================================
 1    identify             :mod:`clearance.access.policy` (principal from the directory)
 2    scope gate           :mod:`clearance.answer.scope`
 3    assistant            :mod:`clearance.access.policy` (``AccessControl.assistant``)
 4    candidate filter     :mod:`clearance.access.policy` (``search_filter``)
 4b   spelling             :mod:`clearance.retrieval.spelling`
 5    FAQ short-circuit    :mod:`clearance.answer.faq`
 6    route                :mod:`clearance.answer.intent`
 7/8  retrieve + realtime  :mod:`clearance.retrieval.hybrid` via ``Runtime.search``
 9    rerank               :mod:`clearance.retrieval.rerank`
 10   link exit            :mod:`clearance.retrieval.link_exit`
 11   prompt assembly      :mod:`clearance.answer.prompt`
 12   egress guard         :mod:`clearance.llm.guard`
 13   synthesise           :mod:`clearance.answer.structured` / :mod:`clearance.answer.narrative`
 14   trace                :mod:`clearance.trace.record`
====  ===================  ===========================================================

Before stage 1, the question's length is checked against ``[answer] max_question_chars``
(:mod:`clearance.bounds`): a longer one raises
:class:`~clearance.errors.QuestionError` and no stage runs, so none writes a trace.

Refusals never depend on documents the caller cannot read: every text below is fixed or
built from the question and authorised material only.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from clearance.access.policy import AccessControl, Action
from clearance.answer.context import AnswerContext
from clearance.answer.focus import question_focus
from clearance.answer.intent import (
    IntentParser,
    RuleIntentParser,
)
from clearance.answer.request import ALL_CHANNELS, AnswerRequest, refusal
from clearance.answer.result import AnswerResult, Status
from clearance.answer.routes import AnswerRoute
from clearance.answer.routes.composite import CompositeRoute
from clearance.answer.routes.crosslingual import CrossLingualRoute
from clearance.answer.routes.faq import FaqRoute
from clearance.answer.routes.figures import FiguresRoute
from clearance.answer.routes.narrative import NarrativeRoute
from clearance.answer.routes.refusal import NoSourceRoute
from clearance.answer.routes.restricted import RestrictedNamingRoute
from clearance.answer.structured import names_in_katakana, readable_vocabulary
from clearance.bounds import check_question
from clearance.errors import ConfigError
from clearance.ingest.facts import ENTITY_NAMES_KEY
from clearance.llm.base import Provider
from clearance.model import Document, is_restricted
from clearance.retrieval.spelling import Correction, corrected, statement
from clearance.runtime import Runtime
from clearance.store.base import SearchFilter
from clearance.trace.record import TraceRecord, timestamp

__all__ = ["Orchestrator"]

log = logging.getLogger("clearance.answer")

NO_ACCESS = "This account has no access."
UNKNOWN_ASSISTANT = "There is no such assistant."
OUT_OF_SCOPE = "I can only answer questions about our own organisation, not about {entities}."
#: The flag of a refusal given while a corpus in the assistant's scope is failing closed.
UNAVAILABLE_FLAG = "sources_unavailable"
_NOTHING_FOUND = frozenset({Status.NO_AUTHORIZED_SOURCE, Status.NOT_FOUND})


class Orchestrator:
    """Answers one question for one user, through every stage in order."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        provider: Provider,
        judge: Provider | None = None,
        intent_parser: IntentParser | None = None,
    ) -> None:
        self.runtime = runtime
        self.ctx = AnswerContext(
            runtime, provider=provider, judge=judge, intent_parser=intent_parser
        )
        self.narrative = NarrativeRoute(self.ctx)
        figures = FiguresRoute(
            self.ctx,
            lambda request: self.narrative.passages(request, prose_only=True, quoting=True),
        )
        self.figures = figures
        self.restricted = RestrictedNamingRoute(self.ctx)
        self.no_source = NoSourceRoute(self.ctx)
        #: Tried in this order; the first that answers answers (the last always does).
        self.routes: tuple[AnswerRoute, ...] = (
            FaqRoute(self.ctx),
            CompositeRoute(self.ctx, figures, self.narrate),
            figures,
            self.narrative,
            CrossLingualRoute(self.ctx, self.narrative),
            self.restricted,
            self.no_source,
        )

    def providers(self) -> tuple[Provider, ...]:
        """The providers behind the guards (for their owner to close)."""
        return self.ctx.providers()

    def narrate(self, request: AnswerRequest, *, prose_only: bool = False) -> AnswerResult:
        """The narrative path alone, with its own fallbacks: a cited answer from passages,
        else the RESTRICTED sources the caller may view named, else the refusal."""
        found = self.narrative.passages(request, prose_only=prose_only)
        if found is None:
            found = self.restricted.answer(request)
        return found if found is not None else self.no_source.answer(request)

    def ask(
        self,
        question: str,
        user_id: str,
        assistant: str | None = None,
        *,
        today: date | None = None,
    ) -> AnswerResult:
        """Answer one question (see the module docstring); a question past
        ``[answer] max_question_chars`` raises :class:`~clearance.errors.QuestionError`.
        ``today`` is the date relative periods ("last year") are read against; by default
        the runtime clock's date (UTC)."""
        check_question(question, self.ctx.settings.answer.max_question_chars)
        now = self.ctx.runtime.clock()
        trace = TraceRecord(assistant=assistant, created_at=timestamp(now))
        request = AnswerRequest(
            question=question, user_id=user_id, trace=trace, today=today or now.date()
        )
        trace.start("total")
        try:
            result = self._run(request, assistant)
        finally:
            trace.stop("total")
        trace.status = result.status.value
        trace.route = result.route.value
        if result.status in _NOTHING_FOUND and request.unavailable:
            # A system state shown to everyone in this scope, whatever the question.
            notice = self.ctx.settings.answer.unavailable_notice
            result = replace(
                result,
                answer=f"{result.answer} {notice}",
                flags=(*result.flags, UNAVAILABLE_FLAG),
            )
        if request.corrections:
            # How the question was read is said before anything that was answered to it.
            result = replace(
                result,
                answer=f"{statement(request.corrections)} {result.answer}",
                corrections=request.corrections,
            )
        trace.cited = sorted({c.doc_id for c in result.citations})
        self._finish_trace(request)
        self.ctx.runtime.write_trace(user_id, trace)
        return replace(result, trace_id=trace.trace_id)

    def _finish_trace(self, request: AnswerRequest) -> None:
        """Counts that need the final result: real-time drops per reason, cited documents
        past review, and — only where the operator allowed it — the question text."""
        trace = request.trace
        for reason, n in sorted(Counter(trace.realtime_dropped.values()).items()):
            trace.filter_counts[f"realtime_{reason}"] = n
        if not trace.cited:
            return
        cited = [self.ctx.runtime.store.get_document(doc_id) for doc_id in trace.cited]
        now = request.flt.now if request.flt is not None else self.ctx.runtime.clock()
        trace.cited_past_review = sum(
            1 for d in cited if d is not None and d.review_at is not None and d.review_at <= now
        )
        if self._may_record_question(request, cited):
            trace.question_text = request.written or request.whole or request.masked

    def _may_record_question(
        self, request: AnswerRequest, cited: Sequence[Document | None]
    ) -> bool:
        """Only when every cited document's corpus is in ``[trace] question_text_corpora``,
        and nothing RESTRICTED was retrieved, cited or dropped at the link exit."""
        allowed = set(self.ctx.settings.trace.question_text_corpora)
        if not allowed or not cited or not (request.whole or request.masked):
            return False
        if request.trace.filter_counts.get("link_exit_restricted", 0):
            return False
        for document in cited:
            if document is None or document.corpus not in allowed:
                return False
            if is_restricted(document.sensitivity):
                return False
        for doc_id in request.trace.retrieved:
            retrieved = self.ctx.runtime.store.get_document(doc_id)
            if retrieved is None or is_restricted(retrieved.sensitivity):
                return False
        return True

    def _run(self, request: AnswerRequest, assistant_name: str | None) -> AnswerResult:
        trace = request.trace
        # 1 identify
        trace.start("identify")
        access = self.ctx.runtime.access()
        principal = access.principal(request.user_id)
        request.access, request.principal = access, principal
        trace.stop("identify")
        if not principal.active:
            trace.reason = "account_disabled" if principal.known else "unauthenticated"
            return refusal(Status.ACCOUNT_DISABLED, NO_ACCESS)

        # 2 scope gate — on the raw question, before anything else sees it
        trace.start("scope")
        scope = self.ctx.scope.check(request.question)
        request.masked = scope.masked
        trace.stop("scope")
        if scope.entities:
            if not self._allowed_narrative(request, access, assistant_name, scope.entities):
                trace.reason = "out_of_scope_entity"
                return refusal(
                    Status.OUT_OF_SCOPE_ENTITY,
                    OUT_OF_SCOPE.format(entities=", ".join(scope.entities)),
                )
            request.masked = self._named_plainly(request.question, scope.spans)
        request.whole = request.masked
        request.masked = question_focus(request.masked)

        # 3 assistant
        try:
            request.assistant = access.assistant(assistant_name)
        except ConfigError:
            trace.reason = "unknown_assistant"
            return refusal(Status.UNKNOWN_ASSISTANT, UNKNOWN_ASSISTANT)

        # 4 candidate filter
        trace.start("filter")
        known = self.ctx.runtime.store.corpora()
        request.flt = request.caller.filter(Action.RETRIEVE, known)
        serving = request.flt.corpora or {}
        considered = (
            set(request.assistant.corpora)
            if request.assistant is not None
            else set(known) | set(self.ctx.settings.corpora)
        )
        trace.filter_counts = {
            "corpora_serving": len(serving),
            "corpora_stale": len(considered - set(serving)),
        }
        request.unavailable = bool(considered - set(serving))
        trace.stop("filter")

        # 4b spelling: a misspelt word read as a word of the caller's readable chunks
        trace.start("spelling")
        self._read_spelling(request, scope.entities)
        trace.stop("spelling")

        # 6 route (parsed before the FAQ, which must know whether the question has slots)
        trace.start("route")
        parser = self.ctx.intent_parser
        if type(parser) is RuleIntentParser:
            # Names the caller's readable tables use are read as the vocabulary's own.
            rows = self.ctx.readable_facts(request, channel=ALL_CHANNELS)
            names: dict[str, set[str]] = {}
            for _, document in rows:
                for entity, others in document.extra.get(ENTITY_NAMES_KEY, {}).items():
                    names.setdefault(entity, set()).update(others)
            # ... and the katakana a Japanese question writes a company's Latin name in
            for entity, spelt in names_in_katakana(
                request.masked, (f.entity for f, _ in rows)
            ).items():
                names.setdefault(entity, set()).update(spelt)
            request.vocab = readable_vocabulary(self.ctx.vocab, (f for f, _ in rows), names)
            parser = RuleIntentParser(request.vocab, self.ctx.calendar)
        intent = parser.parse(request.masked, today=request.today)
        trace.stop("route")

        request.intent = intent
        request.out_of_scope = bool(scope.entities)
        for route in self.routes:
            result = route.answer(request)
            if result is None:
                continue
            if route is self.figures and result.status is Status.NOT_FOUND and not result.flags:
                # No readable table holds the figure ("the purchase price for Lindqvist"
                # beside a table of house prices): RESTRICTED documents the caller may view
                # that bear on the question are named, as when no route answers. Whoever may
                # view none gets the same "not found" whether they exist or not.
                named = self.restricted.answer(request)
                if named is not None:
                    return named
            return result
        raise AssertionError("the last route always answers")

    def _read_spelling(self, request: AnswerRequest, entities: Sequence[str]) -> None:
        """Read the question's misspelt words (:mod:`clearance.retrieval.spelling`) in the
        chunks the caller may retrieve outside real-time corpora (whose documents are
        confirmed only once retrieved), and write the readings into ``masked`` and
        ``whole``. A question that names an entity the scope gate let through is read as
        asked: the gate judged it as written. A reading that would name one is not taken,
        and none is where they would name one together."""
        flt = request.flt
        if flt is None or not flt.principals or entities:
            return
        store = self.ctx.runtime.store
        flt = self._confirmed_without_asking(flt)
        found = self.ctx.speller.corrections(
            request.whole,
            lambda terms: store.term_statistics(terms, flt),
            lambda word: [
                c.text for c, _ in store.hits([i for i, _ in store.lexical_search(word, flt, 3)])
            ],
        )
        if not found:
            return
        named = set(self.ctx.scope.check(request.whole).entities)

        def names_more(readings: tuple[Correction, ...]) -> bool:
            return (
                not set(self.ctx.scope.check(corrected(request.whole, readings)).entities) <= named
            )

        found = tuple(c for c in found if not names_more((c,)))
        if not found or names_more(found):  # "Nimbuss Clowd" names one only read together
            return
        request.written = request.whole
        request.whole, request.masked = (
            corrected(request.whole, found),
            corrected(request.masked, found),
        )
        request.corrections = found
        request.trace.filter_counts["spelling_read"] = len(found)

    def _confirmed_without_asking(self, flt: SearchFilter) -> SearchFilter:
        """``flt`` without the corpora whose documents a real-time check confirms, which
        is only asked once a document is retrieved: what stage 4b reads before then."""
        checked = set(self.ctx.runtime.checkers)
        if not checked:
            return flt
        corpora = flt.corpora
        if corpora is None:
            corpora = {c: flt.max_sensitivity for c in self.ctx.runtime.store.corpora()}
        return replace(flt, corpora={c: s for c, s in corpora.items() if c not in checked})

    def _allowed_narrative(
        self,
        request: AnswerRequest,
        access: AccessControl,
        assistant_name: str | None,
        entities: Sequence[str],
    ) -> bool:
        """Whether a question naming ``entities`` may go on, unmasked: only when it asks
        for no figure — not a metric, multi or composite question, nor one the parser
        finds a metric in — and every entity is either allowed by the requested
        assistant (``allow_entities``) or named in material the caller may read through
        it (:meth:`_named_in_readable`). The names were found by the gate, so every
        spelling it matches (aliases, spaced, full-width) is treated alike."""
        try:
            assistant = access.assistant(assistant_name)
        except ConfigError:
            return False
        allowed = set(assistant.allow_entities) if assistant is not None else set()
        others = [e for e in entities if e not in allowed]
        if others:
            assert request.principal is not None
            readable = access.search_filter(
                request.principal, assistant, self.ctx.runtime.store.corpora()
            )
            if not all(self._named_in_readable(request, readable, e) for e in others):
                return False
        intent = self.ctx.intent_parser.parse(request.question, today=request.today)
        asks_figure = (
            intent.kind != "narrative"
            or intent.uncertain
            or any(part.metric is not None for part in intent.parts)
        )
        return not asks_figure

    def _named_in_readable(
        self, request: AnswerRequest, readable: SearchFilter, entity: str
    ) -> bool:
        """Whether a chunk the caller may read names ``entity``, as the scope gate matches
        it, in its title or text: an entity of the caller's own material is in scope for
        them. Only chunks ``readable`` admits are searched (documents in real-time corpora
        confirmed), so for a caller who may read none the answer is the same whether or
        not hidden documents name it, and the refusal that follows is unchanged."""
        aliases = (entity, *self.ctx.settings.scope.entities.get(entity, ()))
        limit = self.ctx.settings.retrieval.candidates
        for alias in dict.fromkeys(aliases):
            ranked = self.ctx.runtime.store.lexical_search(alias, readable, limit)
            rows = self.ctx.runtime.store.hits([chunk_id for chunk_id, _ in ranked])
            naming = {
                d.doc_id: d
                for c, d in rows
                if entity in self.ctx.scope.check(f"{d.title}\n{c.text}").entities
            }
            if self.ctx.confirmed_ids(request, naming.values()):
                return True
        return False

    def _named_plainly(self, question: str, spans: Sequence[tuple[int, int]]) -> str:
        """``question`` with each entity the gate matched written as its canonical name,
        so a spaced or full-width spelling ("N i m b u s") finds what the name finds."""
        out: list[str] = []
        done = 0
        for start, end in spans:
            names = self.ctx.scope.check(question[start:end]).entities
            out += (question[done:start], names[0] if names else question[start:end])
            done = end
        out.append(question[done:])
        return "".join(out)
