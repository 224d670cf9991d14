"""The request path of docs/design.md §1, in order. Each stage is its own module; this one only
sequences them, records the trace and turns refusals into fixed texts.

====  ===================  ===========================================================
 #    stage                module
====  ===================  ===========================================================
 1    identify             :mod:`clearance.access.policy` (principal from the directory)
 2    scope gate           :mod:`clearance.answer.scope`
 3    assistant            :mod:`clearance.access.policy` (``AccessControl.assistant``)
 4    candidate filter     :mod:`clearance.access.policy` (``search_filter``)
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

import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date

from clearance.access.policy import AccessControl, Action, Principal
from clearance.access.realtime import filter_allowed
from clearance.answer.faq import FaqMatcher, FaqRepository
from clearance.answer.focus import question_focus
from clearance.answer.intent import (
    MAX_PARTS,
    Intent,
    IntentParser,
    MetricQuery,
    RuleIntentParser,
)
from clearance.answer.narrative import (
    CheckedAnswer,
    check_answer,
    find_conflicts,
    render_sentences,
)
from clearance.answer.periods import FiscalCalendar
from clearance.answer.prompt import assemble_prompt
from clearance.answer.relevance import RelevanceGate
from clearance.answer.result import AnswerResult, Citation, ResolvedPeriod, Route, Status
from clearance.answer.scope import ScopeGate
from clearance.answer.structured import (
    ToolResult,
    query_metric,
    readable_vocabulary,
    render_found,
    render_multi,
    render_not_found,
    render_parts_of_year,
    render_unrecognized,
    sole_entity,
)
from clearance.bounds import check_question
from clearance.config import LATEST_PERIOD, AssistantSettings
from clearance.errors import ConfigError, GuardError, ProviderError
from clearance.ingest.facts import Vocabulary, normalize
from clearance.ingest.locator import is_tabular
from clearance.llm.base import ChatMessage, ChatRequest, Provider, Snippet
from clearance.llm.guard import AuthorizedSet, EgressGuard, Recheck, RecheckResult
from clearance.model import Document, Fact, SearchHit, Sensitivity, is_restricted
from clearance.retrieval.link_exit import to_snippets
from clearance.retrieval.rerank import rerank
from clearance.runtime import Runtime
from clearance.store.base import SearchFilter
from clearance.trace.record import TraceRecord, timestamp
from clearance.trust import Trust, resolve_trust

__all__ = ["Orchestrator"]

log = logging.getLogger("clearance.answer")

NO_ACCESS = "This account has no access."
UNKNOWN_ASSISTANT = "There is no such assistant."
OUT_OF_SCOPE = "I can only answer questions about our own organisation, not about {entities}."
CLARIFY = "Please say which {missing} you mean."
CLARIFY_OPTIONS = " For example: {options}."
MISSING_WORDS = {"metric": "figure"}
NO_EXPLANATION = "I have no approved source I can use to answer the rest (“{part}”)."
# The period of a part whose default "latest" period has no readable fact at all.
ANY_PERIOD = "any period"
CLARIFY_AMBIGUOUS = "“{text}” can mean {readings}; please say which period you mean."
#: ``channel`` of :meth:`Orchestrator._readable_facts` for the facts of every channel.
ALL_CHANNELS = "*"
#: How many readable values a clarifying question offers at most.
MAX_OPTIONS = 5
RESTRICTED_NAMED = (
    "The sources that answer this are restricted: they can be named to you, but not quoted "
    "or summarised. Open them to read what they say:"
)
#: The flag of a refusal given while a corpus in the assistant's scope is failing closed.
UNAVAILABLE_FLAG = "sources_unavailable"
_NOTHING_FOUND = frozenset({Status.NO_AUTHORIZED_SOURCE, Status.NOT_FOUND})
#: Flag of a figure answer that gives parts of the period asked about, not the period.
PARTS_OF_PERIOD = "parts_of_period"
#: The flag of an answer that only names RESTRICTED sources.
RESTRICTED_FLAG = "restricted_sources"
#: How many RESTRICTED documents such an answer names at most.
MAX_NAMED = 3
#: The heading of the block of inferences shown under ``[answer] inferred = "label"``.
INFERRED_LABEL = "Inferred, not stated in the sources:"
TOO_MANY_PARTS = (
    "That asks for more than {limit} figures at once; please ask about fewer metrics, "
    "entities, periods or channels."
)


@dataclass
class _Request:
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
        self.settings = runtime.settings
        self.guard = EgressGuard(provider)
        self.judge_guard = EgressGuard(judge) if judge is not None else None
        self._providers = tuple(dict.fromkeys(p for p in (provider, judge) if p is not None))
        self.scope = ScopeGate(self.settings.scope)
        # Compiled once: the structured tool runs once per part of a multi question.
        self.vocab = Vocabulary(self.settings.facts)
        self.calendar = FiscalCalendar.from_settings(self.settings.facts)
        self.intent_parser = intent_parser or RuleIntentParser(self.vocab, self.calendar)
        self.default_period = self._default_period()
        self.faq = FaqMatcher(FaqRepository(runtime.store))
        self.relevance = RelevanceGate(self.settings.answer.relevance, runtime.synonyms)

    def _periods_named(self, text: str) -> set[str]:
        """The absolute periods ``text`` names, canonical ("FY2025", "Q2 FY2025")."""
        return {m.canonical for m in self.vocab.find_periods(normalize(text))}

    def _default_period(self) -> str:
        """``[facts] default_period`` as a canonical period, ``"latest"`` or ``""``."""
        configured = self.settings.facts.default_period
        if not configured or configured == LATEST_PERIOD:
            return configured
        canonical = self.vocab.canonical_period(configured)
        if canonical is None:
            raise ConfigError(
                f"facts.default_period: {configured!r} is neither 'latest' nor a period the "
                "period forms recognise"
            )
        return canonical

    def providers(self) -> tuple[Provider, ...]:
        """The providers behind the guards (for their owner to close)."""
        return self._providers

    # ------------------------------------------------------------------ entry point

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
        check_question(question, self.settings.answer.max_question_chars)
        now = self.runtime.clock()
        trace = TraceRecord(assistant=assistant, created_at=timestamp(now))
        request = _Request(
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
            notice = self.settings.answer.unavailable_notice
            result = replace(
                result,
                answer=f"{result.answer} {notice}",
                flags=(*result.flags, UNAVAILABLE_FLAG),
            )
        trace.cited = sorted({c.doc_id for c in result.citations})
        self._finish_trace(request)
        self.runtime.write_trace(user_id, trace)
        return replace(result, trace_id=trace.trace_id)

    # ------------------------------------------------------------------ trace

    def _finish_trace(self, request: _Request) -> None:
        """Counts that need the final result: real-time drops per reason, cited documents
        past review, and — only where the operator allowed it — the question text."""
        trace = request.trace
        for reason, n in sorted(Counter(trace.realtime_dropped.values()).items()):
            trace.filter_counts[f"realtime_{reason}"] = n
        if not trace.cited:
            return
        cited = [self.runtime.store.get_document(doc_id) for doc_id in trace.cited]
        now = request.flt.now if request.flt is not None else self.runtime.clock()
        trace.cited_past_review = sum(
            1 for d in cited if d is not None and d.review_at is not None and d.review_at <= now
        )
        if self._may_record_question(request, cited):
            trace.question_text = request.whole or request.masked

    def _may_record_question(self, request: _Request, cited: Sequence[Document | None]) -> bool:
        """Only when every cited document's corpus is in ``[trace] question_text_corpora``,
        and nothing RESTRICTED was retrieved, cited or dropped at the link exit."""
        allowed = set(self.settings.trace.question_text_corpora)
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
            retrieved = self.runtime.store.get_document(doc_id)
            if retrieved is None or is_restricted(retrieved.sensitivity):
                return False
        return True

    def _independent_access(self) -> AccessControl:
        """Decisions from stored data alone, without the search's filter (the egress guard's
        re-check and the trace's ``denied_retrieved``)."""
        return AccessControl(
            self.settings,
            self.runtime.directory,
            self.runtime.store.last_acl_syncs(),
            clock=self.runtime.clock,
        )

    def _count_denied(self, request: _Request, doc_ids: Iterable[str]) -> int:
        """Retrieved documents the independent re-check denies (``denied_retrieved``): it
        must always be 0, and ``clearance stats`` reports the rate."""
        doc_ids = sorted(set(doc_ids))
        if not doc_ids:
            return 0
        access = self._independent_access()
        principal = access.principal(request.user_id)
        denied = 0
        for doc_id in doc_ids:
            stored = self.runtime.store.get_document(doc_id)
            if stored is None:
                denied += 1
                continue
            if not access.decide(principal, Action.RETRIEVE, stored, request.assistant).allow:
                denied += 1
        return denied

    # ------------------------------------------------------------------ stages

    def _run(self, request: _Request, assistant_name: str | None) -> AnswerResult:
        trace = request.trace
        # 1 identify
        trace.start("identify")
        access = self.runtime.access()
        principal = access.principal(request.user_id)
        request.access, request.principal = access, principal
        trace.stop("identify")
        if not principal.active:
            trace.reason = "account_disabled" if principal.known else "unauthenticated"
            return _refusal(Status.ACCOUNT_DISABLED, NO_ACCESS)

        # 2 scope gate — on the raw question, before anything else sees it
        trace.start("scope")
        scope = self.scope.check(request.question)
        request.masked = scope.masked
        trace.stop("scope")
        if scope.entities:
            if not self._allowed_narrative(request, access, assistant_name, scope.entities):
                trace.reason = "out_of_scope_entity"
                return _refusal(
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
            return _refusal(Status.UNKNOWN_ASSISTANT, UNKNOWN_ASSISTANT)

        # 4 candidate filter
        trace.start("filter")
        known = self.runtime.store.corpora()
        request.flt = access.search_filter(principal, request.assistant, known)
        serving = request.flt.corpora or {}
        considered = (
            set(request.assistant.corpora)
            if request.assistant is not None
            else set(known) | set(self.settings.corpora)
        )
        trace.filter_counts = {
            "corpora_serving": len(serving),
            "corpora_stale": len(considered - set(serving)),
        }
        request.unavailable = bool(considered - set(serving))
        trace.stop("filter")

        # 6 route (parsed before the FAQ, which must know whether the question has slots)
        trace.start("route")
        parser = self.intent_parser
        if type(parser) is RuleIntentParser:
            # Names the caller's readable tables use are read as the vocabulary's own.
            request.vocab = readable_vocabulary(
                self.vocab, (f for f, _ in self._readable_facts(request, channel=ALL_CHANNELS))
            )
            parser = RuleIntentParser(request.vocab, self.calendar)
        intent = parser.parse(request.masked, today=request.today)
        trace.stop("route")

        # 5 FAQ short-circuit
        trace.start("faq")
        ceiling = request.flt.max_sensitivity
        entry = self.faq.match(
            request.masked,
            principal.principals,
            request.flt.now,
            out_of_scope=bool(scope.entities),
            has_slots=intent.slots_present,
            ceiling=ceiling,
        )
        trace.stop("faq")
        # A vetted answer may be shared more widely than the documents it cites: only
        # citations the caller may see are shown, so a title never leaks through the FAQ,
        # and an entry left with no citation is not served (every answer carries lineage).
        citations = (
            tuple(c for c in entry.citations if self._may_view(request, c.doc_id))
            if entry is not None
            else ()
        )
        if entry is not None and citations:
            trace.reason = "faq"
            return AnswerResult(Status.ANSWERED, entry.answer, Route.FAQ, citations)

        if intent.kind == "composite":
            return self._composite(request, intent)
        if intent.kind in ("metric", "multi"):
            if intent.uncertain:
                # It names a metric but asks about something else as well: the documents
                # are the better judge, and a figure nobody asked for is never offered.
                return self._which_period_stated(request, intent, self._narrative(request))
            return self._structured(request, intent)
        return self._which_period_stated(request, intent, self._narrative(request))

    def _which_period_stated(
        self, request: _Request, intent: Intent, answer: AnswerResult
    ) -> AnswerResult:
        """A question that names no period ("What was the deficit?"), answered with amounts
        that the quoted sentences give for two or more different years: ask which period
        is meant, offering those years, rather than set several periods' figures side by
        side as if they answered one question. The years come from the quoted sentences,
        which the caller may read."""
        if answer.status is not Status.ANSWERED or intent.slots_present:
            return answer
        if _YEAR_IN_QUESTION.search(request.masked):
            return answer
        sentences = [s for s in _ANSWER_SENTENCE.split(answer.answer) if _AMOUNT.search(s)]
        if len(sentences) < 2:
            return answer
        # The years of the sections quoted ("Monthly Budget Review for May 2019") say which
        # period each amount is for; a sentence's own years may be the one it compares with.
        headed = {
            m.group(0): None
            for c in answer.citations
            for m in _YEAR_IN_QUESTION.finditer(c.locator)
        }
        years: dict[str, None] = headed if len(headed) >= 2 else {}
        if not years:
            vocab = request.vocab or self.vocab
            for sentence in sentences:
                for match in vocab.find_periods(sentence):
                    if m := re.search(r"\d{4}", match.canonical):
                        years[m.group(0)] = None
                for m in _YEAR_IN_QUESTION.finditer(sentence):
                    years[m.group(0)] = None
        if len(years) < 2:
            return answer
        request.trace.reason = "clarify"
        options = tuple(sorted(years, reverse=True)[:MAX_OPTIONS])
        text = CLARIFY.format(missing="period")
        text += CLARIFY_OPTIONS.format(options=", ".join(options))
        return AnswerResult(
            Status.CLARIFY, text, Route.NARRATIVE, missing=("period",), options=options
        )

    def _allowed_narrative(
        self,
        request: _Request,
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
                request.principal, assistant, self.runtime.store.corpora()
            )
            if not all(self._named_in_readable(request, readable, e) for e in others):
                return False
        intent = self.intent_parser.parse(request.question, today=request.today)
        asks_figure = (
            intent.kind != "narrative"
            or intent.uncertain
            or any(part.metric is not None for part in intent.parts)
        )
        return not asks_figure

    def _named_in_readable(self, request: _Request, readable: SearchFilter, entity: str) -> bool:
        """Whether a chunk the caller may read names ``entity``, as the scope gate matches
        it, in its title or text: an entity of the caller's own material is in scope for
        them. Only chunks ``readable`` admits are searched (documents in real-time corpora
        confirmed), so for a caller who may read none the answer is the same whether or
        not hidden documents name it, and the refusal that follows is unchanged."""
        aliases = (entity, *self.settings.scope.entities.get(entity, ()))
        limit = self.settings.retrieval.candidates
        for alias in dict.fromkeys(aliases):
            ranked = self.runtime.store.lexical_search(alias, readable, limit)
            rows = self.runtime.store.hits([chunk_id for chunk_id, _ in ranked])
            naming = {
                d.doc_id: d
                for c, d in rows
                if entity in self.scope.check(f"{d.title}\n{c.text}").entities
            }
            if self._confirmed_ids(request, naming.values()):
                return True
        return False

    def _named_plainly(self, question: str, spans: Sequence[tuple[int, int]]) -> str:
        """``question`` with each entity the gate matched written as its canonical name,
        so a spaced or full-width spelling ("N i m b u s") finds what the name finds."""
        out: list[str] = []
        done = 0
        for start, end in spans:
            names = self.scope.check(question[start:end]).entities
            out += (question[done:start], names[0] if names else question[start:end])
            done = end
        out.append(question[done:])
        return "".join(out)

    def _may_view(self, request: _Request, doc_id: str) -> bool:
        assert request.access is not None and request.principal is not None
        document = self.runtime.store.get_document(doc_id)
        if document is None:
            return False
        decision = request.access.decide(
            request.principal,
            Action.VIEW,
            document,
            request.assistant,
            now=request.flt.now if request.flt else None,
        )
        return decision.allow

    # ------------------------------------------------------------------ structured

    def _tool(self, request: _Request, part: MetricQuery) -> ToolResult:
        assert request.flt is not None
        authority = {n: c.authority for n, c in self.settings.corpora.items()}
        result = query_metric(
            self.runtime.store,
            request.flt,
            metric=part.metric,
            entity=part.entity,
            period=part.period,
            channel=part.channel,
            qualifier=part.qualifier,
            vocab=request.vocab or self.vocab,
            authority=authority,
        )
        if result.status != "found":
            return result
        kept = self._confirmed(request, result.facts)
        if not kept:
            return ToolResult("not_found", result.query, (), None)
        return ToolResult("found", result.query, tuple(kept), None)

    def _confirmed(
        self, request: _Request, rows: Iterable[tuple[Fact, Document]]
    ) -> list[tuple[Fact, Document]]:
        """Stage 8 for facts too: documents in real-time corpora are confirmed or dropped."""
        kept = []
        for fact, document in rows:
            checker = self.runtime.checkers.get(document.corpus)
            if checker is not None:
                allowed, dropped = filter_allowed(checker, request.user_id, [document.doc_id])
                if not allowed:
                    request.trace.realtime_dropped.update({d: r.reason for d, r in dropped.items()})
                    continue
            kept.append((fact, document))
        return kept

    def _readable_facts(
        self,
        request: _Request,
        *,
        metric: str | None = None,
        entity: str | None = None,
        period: str | None = None,
        channel: str | None = None,
    ) -> list[tuple[Fact, Document]]:
        """Facts the caller may read right now, as the structured tool sees them: inside
        the request's filter, never RESTRICTED, confirmed by real-time checks. The only
        source of a default period and of the options a clarifying question offers."""
        assert request.flt is not None
        capped = dataclasses.replace(
            request.flt,
            max_sensitivity=min(request.flt.max_sensitivity, Sensitivity.CONFIDENTIAL),
        )
        rows = self.runtime.store.query_facts(
            capped,
            metric=metric,
            entity=entity,
            period=period,
            channel=None
            if channel == ALL_CHANNELS
            else channel or self.settings.facts.default_channel,
        )
        rows = [(f, d) for f, d in rows if d.sensitivity < Sensitivity.RESTRICTED]
        return self._confirmed(request, rows)

    def _latest_period(self, request: _Request, part: MetricQuery) -> str | None:
        """The latest period with a readable fact for the part's metric, entity and channel:
        a fiscal (or calendar) year that has ended if there is one, else any period that
        has ended, else any that has begun. Periods of unknown shape are not considered."""
        assert request.today is not None
        today = request.today
        spans = []
        for fact, _ in self._readable_facts(
            request, metric=part.metric, entity=part.entity, channel=part.channel
        ):
            span = self.calendar.span(fact.period)
            if span is not None and span[0] <= today:
                spans.append((span, fact.period))
        ended = [s for s in spans if s[0][1] < today]
        years = [s for s in ended if s[1].startswith(("FY", "CY"))]
        pool = years or ended or spans
        if not pool:
            return None
        return max(pool, key=lambda s: (s[0][1], s[0][0], s[1]))[1]

    def _with_defaults(
        self,
        request: _Request,
        parts: Sequence[MetricQuery],
        *,
        configured: bool = True,
        names_left: bool = True,
    ) -> tuple[list[MetricQuery], list[str]]:
        """The parts with ``[facts] default_entity`` / ``default_period`` filled in where the
        question named neither (only when ``configured``: a question with words besides its
        slots gets no configured default), else the one entity whose figure the caller may
        read, and the assumptions made (each said once). A latest period nobody may read
        leaves the period ``None`` ("any period")."""
        facts = self.settings.facts
        filled: list[MetricQuery] = []
        assumptions: list[str] = []

        def assume(text: str) -> None:
            if text not in assumptions:
                assumptions.append(text)

        for part in parts:
            if not configured and part.qualifier is None:
                # Words the question has besides its slots may name what it left out; only
                # a name can name an entity ("How much revenue did Globex make?"), so with
                # nothing but ordinary words left the one entity holding the figure stands.
                if not names_left and part.entity is None and part.metric is not None:
                    sole = sole_entity(
                        self._readable_facts(request, metric=part.metric, channel=part.channel)
                    )
                    if sole is not None:
                        part = replace(part, entity=sole)
                        assume(f"entity: {sole} (the only one with this figure)")
                filled.append(part)
                continue
            if part.entity is None and facts.default_entity and configured and part.metric:
                part = replace(part, entity=facts.default_entity)
                assume(f"entity: {facts.default_entity}")
            elif part.entity is None and part.metric is not None:
                sole = sole_entity(
                    self._readable_facts(request, metric=part.metric, channel=part.channel)
                )
                if sole is not None:
                    part = replace(part, entity=sole)
                    assume(f"entity: {sole} (the only one with this figure)")
            if part.period is None and self.default_period and configured and part.metric:
                if self.default_period == LATEST_PERIOD:
                    if part.entity is not None:
                        latest = self._latest_period(request, part)
                        part = replace(part, period=latest or ANY_PERIOD)
                        if latest is not None:
                            assume(f"period: {latest} (the latest with a figure)")
                else:
                    part = replace(part, period=self.default_period)
                    assume(f"period: {self.default_period}")
            filled.append(part)
        return filled, assumptions

    def _options(self, request: _Request, part: MetricQuery, slot: str) -> tuple[str, ...]:
        """Up to :data:`MAX_OPTIONS` values for a missing slot, taken only from facts the
        caller may read that agree with the slots the question did name."""
        slots = {"metric": part.metric, "entity": part.entity, "period": part.period}
        slots[slot] = None
        rows = self._readable_facts(request, channel=part.channel, **slots)
        facts = (request.vocab or self.vocab).settings
        if slot == "metric":
            values = [m for m in facts.metrics if any(f.metric == m for f, _ in rows)]
        elif slot == "entity":
            values = [e for e in facts.entities if any(f.entity == e for f, _ in rows)]
        else:
            periods = {f.period for f, _ in rows}
            dated = sorted(
                (p for p in periods if self.calendar.span(p) is not None),
                key=lambda p: self.calendar.span(p) or (date.min, date.min),
                reverse=True,
            )
            values = dated + sorted(p for p in periods if self.calendar.span(p) is None)
        return tuple(values[:MAX_OPTIONS])

    def _clarify(
        self,
        request: _Request,
        part: MetricQuery,
        missing: Sequence[str],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> AnswerResult:
        request.trace.reason = "clarify"
        options = self._options(request, part, missing[0])
        words = [MISSING_WORDS.get(m, m) for m in missing]
        text = CLARIFY.format(missing=" and ".join(words))
        if options:
            text += CLARIFY_OPTIONS.format(options=", ".join(o.replace("_", " ") for o in options))
        return AnswerResult(
            Status.CLARIFY,
            _preamble(resolved, []) + text,
            Route.STRUCTURED,
            missing=tuple(missing),
            options=options,
            resolved_periods=resolved,
        )

    def _structured(self, request: _Request, intent: Intent) -> AnswerResult:
        trace = request.trace
        resolved = tuple(ResolvedPeriod(m.text, m.period) for m in intent.resolved)
        if intent.ambiguous:
            trace.reason = "clarify"
            first = intent.ambiguous[0]
            return AnswerResult(
                Status.CLARIFY,
                CLARIFY_AMBIGUOUS.format(text=first.text, readings=" or ".join(first.alternatives)),
                Route.STRUCTURED,
                missing=("period",),
                options=first.alternatives[:MAX_OPTIONS],
                resolved_periods=resolved,
            )
        if intent.unrecognized:
            trace.reason = "unrecognized_param"
            trace.fabrication_guard_triggered = True
            text = render_unrecognized(
                ToolResult(
                    "unrecognized_param",
                    intent.parts[0] if intent.parts else MetricQuery(None, None, None, None),
                    (),
                    ", ".join(intent.unrecognized),
                )
            )
            return AnswerResult(
                Status.UNRECOGNIZED_PARAM, text, Route.STRUCTURED, resolved_periods=resolved
            )
        if len(intent.parts) > MAX_PARTS:
            # Bounded whatever the parser: each part is a look-up and a line of the answer.
            trace.reason = "too_many_parts"
            return _refusal(Status.CLARIFY, TOO_MANY_PARTS.format(limit=MAX_PARTS), Route.MULTI)
        parts, assumptions = self._with_defaults(
            request,
            intent.parts,
            configured=not intent.unexplained,
            names_left=intent.names_left,
        )
        if intent.yearless and parts and parts[0].period is None:
            return self._which_year(request, parts[0], intent.yearless, resolved)
        missing = _missing_slots(parts)
        unknown = intent.unknown_entity or next((p.qualifier for p in parts if p.qualifier), "")
        if missing and unknown and "metric" not in missing:
            # An entity or line no readable fact holds: not found, never a list of others.
            trace.reason = "not_found"
            asked = parts[0]
            if asked.entity is None:
                asked = replace(asked, entity=unknown, qualifier=None)
            return AnswerResult(
                Status.NOT_FOUND,
                _preamble(resolved, assumptions) + render_not_found(asked),
                Route.STRUCTURED,
                resolved_periods=resolved,
            )
        if missing:
            clarify = self._clarify(request, parts[0], missing, resolved)
            if clarify.options or not intent.unexplained:
                return clarify
            # Nothing to offer, and the question says more than its slots ("今期の事業貢献
            # 利益の見通しは"): the documents are the better judge than an empty question.
            return self._narrative(request)
        answer = self._figures(
            request, parts, _preamble(resolved, assumptions), compare=intent.compare
        )
        return replace(answer, assumptions=tuple(assumptions), resolved_periods=resolved)

    def _which_year(
        self,
        request: _Request,
        part: MetricQuery,
        yearless: Sequence[str],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> AnswerResult:
        """A part of a year named without its year ("six months ended December 31"): ask
        which, offering the periods of that shape the caller's readable facts hold (latest
        first), or the usual clarification when none does. Never a guess at the year."""
        rows = self._readable_facts(
            request, metric=part.metric, entity=part.entity, channel=part.channel
        )
        periods = sorted(
            {f.period for f, _ in rows if any(f.period.startswith(y + " ") for y in yearless)},
            key=lambda p: (_period_order(p), p),
            reverse=True,
        )
        if not periods:
            return self._clarify(request, part, ["period"], resolved)
        request.trace.reason = "clarify"
        options = tuple(periods[:MAX_OPTIONS])
        text = CLARIFY.format(missing=MISSING_WORDS.get("period", "period"))
        text += CLARIFY_OPTIONS.format(options=", ".join(options))
        return AnswerResult(
            Status.CLARIFY,
            _preamble(resolved, []) + text,
            Route.STRUCTURED,
            missing=("period",),
            options=options,
            resolved_periods=resolved,
        )

    def _figures(
        self,
        request: _Request,
        parts: Sequence[MetricQuery],
        preamble: str,
        *,
        compare: bool = True,
    ) -> AnswerResult:
        """Look every part up and render the answer from fact values alone."""
        trace = request.trace
        trace.start("tool")
        results = [
            ToolResult("not_found", part)
            if part.period == ANY_PERIOD
            else self._tool(request, part)
            for part in parts
        ]
        trace.stop("tool")
        trace.retrieved = sorted({d.doc_id for r in results for _, d in r.facts})
        trace.denied_retrieved = self._count_denied(request, trace.retrieved)
        if not any(r.status == "found" for r in results):
            trace.fabrication_guard_triggered = True
        if len(results) > 1:
            text, citations = render_multi(results, compare=compare)
            status = (
                Status.ANSWERED if any(r.status == "found" for r in results) else Status.NOT_FOUND
            )
            if all(r.status == "unrecognized_param" for r in results):
                status = Status.UNRECOGNIZED_PARAM
            return AnswerResult(
                status,
                preamble + text,
                Route.MULTI,
                self._retrust(citations, results),
            )
        result = results[0]
        if result.status == "found":
            text, citations = render_found(result)
            return AnswerResult(
                Status.ANSWERED,
                preamble + text,
                Route.STRUCTURED,
                self._retrust(citations, results),
            )
        if result.status == "unrecognized_param":
            trace.reason = "unrecognized_param"
            return AnswerResult(
                Status.UNRECOGNIZED_PARAM,
                preamble + render_unrecognized(result),
                Route.STRUCTURED,
            )
        trace.reason = "not_found"
        parts_of_year = self._parts_of_year(request, result.query)
        if parts_of_year:
            # The whole year is not reported, but parts of it are: the year is not found
            # (the status says so, and the answer's first sentence), and each part is
            # given under its own label and source heading, never as the year's figure.
            trace.reason = "parts_of_period"
            text, citations = render_parts_of_year(result.query, parts_of_year)
            return AnswerResult(
                Status.NOT_FOUND,
                preamble + text,
                Route.STRUCTURED,
                self._retrust(citations, [result]),
                flags=(PARTS_OF_PERIOD,),
            )
        return AnswerResult(
            Status.NOT_FOUND,
            preamble + render_not_found(result.query),
            Route.STRUCTURED,
        )

    def _parts_of_year(self, request: _Request, query: MetricQuery) -> list[tuple[Fact, Document]]:
        """Readable facts of the query's metric, entity and channel for a part of the whole
        year it asks about (``Q1–Q3 FY2023``, ``9M FY2023``, ``H1 2023``), latest part first."""
        if query.period is None or query.metric is None or query.entity is None:
            return []
        year = re.fullmatch(r"(?:FY|CY)(\d{4})", query.period)
        if year is None or query.qualifier is not None:
            return []
        rows = self._readable_facts(
            request, metric=query.metric, entity=query.entity, channel=query.channel
        )
        parts = [
            (f, d)
            for f, d in rows
            if f.period != query.period
            and (
                f.period.endswith(" " + query.period)
                or re.fullmatch(rf"[HQ][1-4] {year.group(1)}", f.period) is not None
            )
        ]
        parts.sort(key=lambda row: (row[0].period, row[0].doc_id), reverse=True)
        return parts[:MAX_OPTIONS]

    def _composite(self, request: _Request, intent: Intent) -> AnswerResult:
        """A figure and an explanation: the figure from the structured path (its numbers
        from facts only), the explanation from the narrative path (its numbers checked
        against its cited snippets). Each part keeps its own guarantees; a part without a
        source is named, and the other is still answered."""
        trace = request.trace
        figure = self._structured(request, intent)
        figure_retrieved = set(trace.retrieved)
        # The explanation is searched for and judged on its own clause: the whole question's
        # metric and period words would rank the figure's own table rows first, and a row
        # of figures explains nothing (the figure itself is already answered from facts).
        story = self._narrative(
            replace(request, masked=intent.narrative_query or intent.narrative or request.masked),
            prose_only=True,
        )
        trace.retrieved = sorted(figure_retrieved | set(trace.retrieved))
        trace.denied_retrieved = self._count_denied(request, trace.retrieved)
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

    def _retrust(
        self, citations: Sequence[Citation], results: Sequence[ToolResult]
    ) -> tuple[Citation, ...]:
        """Citation trust under the configured ``[trust.origins]``, from each cited
        document's origin and chain (an unknown document is untrusted)."""
        documents = {d.doc_id: d for r in results for _, d in r.facts}
        mapping = self.settings.trust.origins
        out = []
        for c in citations:
            document = documents.get(c.doc_id) or self.runtime.store.get_document(c.doc_id)
            trust = (
                resolve_trust(document.origin, document.origin_chain, mapping).label
                if document is not None
                else "untrusted"
            )
            out.append(replace(c, trust=trust))
        return tuple(out)

    # ------------------------------------------------------------------ narrative

    def _recheck(self, request: _Request) -> Recheck:
        """An independent decision from stored data, without the search's filter."""
        assert request.principal is not None
        access = self._independent_access()
        principal = access.principal(request.user_id)
        assistant = request.assistant

        def recheck(chunk_id: str) -> RecheckResult:
            rows = self.runtime.store.hits([chunk_id])
            if not rows:
                return RecheckResult(False, None, False)
            chunk, document = rows[0]
            decision = access.decide(principal, Action.RETRIEVE, document, assistant)
            restricted = is_restricted(chunk.sensitivity) or is_restricted(document.sensitivity)
            return RecheckResult(decision.allow, chunk.text, restricted)

        return recheck

    def _narrative(self, request: _Request, *, prose_only: bool = False) -> AnswerResult:
        """A cited answer from the snippets that bear on ``request.masked``; with
        ``prose_only``, snippets cut from tables and charts are left out (see
        :meth:`_composite`)."""
        trace = request.trace
        assert request.flt is not None
        no_source = _refusal(
            Status.NO_AUTHORIZED_SOURCE, self.settings.answer.no_source_message, Route.NARRATIVE
        )

        # 7/8 retrieve inside the filter, with real-time checks
        trace.start("retrieve")
        k = self.settings.retrieval.k
        found = self.runtime.search(
            request.user_id,
            request.masked,
            assistant=request.assistant.name if request.assistant else None,
            # Prose only: look as deep as the retrievers do, so table rows ranked first do
            # not crowd out the passages that remain.
            k=self.settings.retrieval.candidates if prose_only else k,
        )
        if prose_only:
            prose = [h for h in found.hits if not is_tabular(h.chunk.locator)][:k]
            found = replace(found, hits=prose)
        trace.stop("retrieve")
        trace.retrieved = sorted({h.document.doc_id for h in found.hits})
        trace.realtime_dropped = {d: r.reason for d, r in found.realtime_dropped.items()}
        trace.denied_retrieved = self._count_denied(request, trace.retrieved)
        if not found.hits:
            trace.reason = "no_authorized_source"
            return self._nothing_readable(request, no_source)

        authorized = AuthorizedSet(
            user_id=request.user_id,
            chunks={h.chunk.chunk_id: h.document.doc_id for h in found.hits},
            corpora=frozenset(request.flt.corpora or {h.document.corpus for h in found.hits}),
        )
        recheck = self._recheck(request)

        # 9 rerank (strategy B) — the judge goes through its own guard call
        trace.start("rerank")
        hits = found.hits
        if self.judge_guard is not None:
            judge_guard = self.judge_guard

            def judge(snippets: Sequence[Snippet]) -> str:
                prompt = assemble_prompt(request.masked, snippets, budget=10**6)
                req = ChatRequest(
                    purpose="rerank",
                    question=request.masked,
                    messages=(
                        ChatMessage(
                            "system",
                            "Rank the sources by how well they answer the question. Reply only with their labels, best first, like: S2 > S1 > S3.",
                        ),
                        prompt.messages[1],
                    ),
                    snippets=prompt.snippets,
                )
                return judge_guard.complete(req, authorized, recheck).text

            try:
                hits = rerank(hits, judge, self.settings.trust.origins)
            except GuardError:
                trace.guard_fired = True
                hits = found.hits
        trace.stop("rerank")

        # 10 link exit, 11 prompt assembly (only material that actually bears on the question);
        # trust comes from origin under [trust.origins], derived here and never stored
        exits = to_snippets(hits, self.settings.trust.origins)
        snippets = self._relevant(request, exits, hits)
        prompt = assemble_prompt(
            request.whole or request.masked, snippets, self.settings.answer.context_budget_tokens
        )
        trace.filter_counts["link_exit_restricted"] = len(hits) - len(exits)
        trace.filter_counts["relevance_gate"] = len(exits) - len(snippets)
        trace.filter_counts["prompt_budget"] = len(snippets) - len(prompt.snippets)
        if len(prompt.snippets) < self.settings.answer.min_snippets:
            trace.reason = "no_authorized_source"
            return self._nothing_readable(request, no_source)

        # 12 egress guard + provider call
        trace.start("synthesise")
        try:
            response = self.guard.complete(
                ChatRequest(
                    purpose="answer",
                    question=request.masked,
                    messages=prompt.messages,
                    snippets=prompt.snippets,
                    equivalents=tuple(
                        dict.fromkeys(
                            t for u in self.runtime.synonyms.used(request.masked) for t in u.texts
                        )
                    ),
                ),
                authorized,
                recheck,
            )
        except GuardError:
            trace.guard_fired = True
            trace.reason = "internal_guard"
            return _refusal(Status.DEGRADED, self.settings.answer.degraded_message, Route.NARRATIVE)
        except ProviderError as exc:
            trace.provider_errors.append(exc.code)
            trace.reason = "provider_error"
            return _refusal(Status.DEGRADED, self.settings.answer.degraded_message, Route.NARRATIVE)
        finally:
            trace.stop("synthesise")

        # 13 checks: citations, numbers, conflicts, review dates
        checked = check_answer(response.text, prompt.snippets)
        if checked.removed_for_numbers:
            trace.fabrication_guard_triggered = True
        if not checked.sentences:
            trace.reason = "no_authorized_source"
            return self._nothing_readable(request, no_source)
        return self._render_narrative(checked, prompt.snippets, request)

    def _nothing_readable(self, request: _Request, refusal: AnswerResult) -> AnswerResult:
        """Nothing the caller may have read to them answers: if RESTRICTED documents the
        caller may view do, they are named (docs/design.md §3); otherwise ``refusal``, unchanged.
        Whoever may not view those documents gets ``refusal`` whether they exist or not."""
        named = self._restricted_sources(request)
        if not named:
            return refusal
        request.trace.reason = "restricted_sources_named"
        lines = "".join(f"\n- {c.title} [S{n}]" for n, c in enumerate(named, start=1))
        return AnswerResult(
            Status.ANSWERED,
            RESTRICTED_NAMED + lines,
            Route.NARRATIVE,
            named,
            flags=(RESTRICTED_FLAG,),
        )

    def _restricted_sources(self, request: _Request) -> tuple[Citation, ...]:
        """Citations of the RESTRICTED documents the caller may view that bear on the
        question, best first, one per document, at most :data:`MAX_NAMED`.

        They are searched on their own, lexically, among only the RESTRICTED documents the
        caller may view (:meth:`_viewable_restricted`): their chunks have no vector, so in
        a search over everything the caller may view they rank below what the vector
        search finds and never reach the top few. A caller who may view none is never
        searched for. Their text is judged here by the relevance gate, as any snippet
        is, and goes nowhere else: no prompt, no model call, no answer text."""
        access, principal = request.access, request.principal
        assert access is not None and principal is not None
        viewable = access.search_filter(
            principal, request.assistant, self.runtime.store.corpora(), action=Action.VIEW
        )
        own = self._viewable_restricted(viewable)
        if not own:
            return ()
        ranked = self.runtime.store.lexical_search(
            request.masked,
            replace(viewable, doc_ids=own),
            self.settings.retrieval.candidates,
        )
        rows = self.runtime.store.hits([chunk_id for chunk_id, _ in ranked])
        confirmed = set(self._confirmed_ids(request, {d.doc_id: d for _, d in rows}.values()))
        hits = [
            SearchHit(chunk, document, 0.0)
            for chunk, document in rows
            if document.doc_id in confirmed
        ]
        if not hits:
            return ()
        probes = [_probe(i, h, self.settings.trust.origins) for i, h in enumerate(hits, 1)]
        judged = self.relevance.judge(
            request.masked,
            probes,
            lambda terms: self.runtime.store.term_statistics(terms, viewable),
        )
        named: dict[str, Citation] = {}
        for j in judged:
            s = j.snippet
            if j.relevant and s.doc_id not in named and len(named) < MAX_NAMED:
                named[s.doc_id] = Citation(s.doc_id, s.title, s.locator, s.uri, s.trust)
        return tuple(named.values())

    def _viewable_restricted(self, viewable: SearchFilter) -> frozenset[str]:
        """The RESTRICTED documents ``viewable`` admits: only corpora whose ceiling in it
        reaches RESTRICTED are read, and each document is decided by the filter itself."""
        corpora = viewable.corpora if viewable.corpora is not None else self.runtime.store.corpora()
        own: set[str] = set()
        for corpus in sorted(corpora):
            ceiling = viewable.ceiling_for(corpus)
            if ceiling is None or not is_restricted(ceiling):
                continue
            own.update(
                d.doc_id
                for d in self.runtime.store.list_documents(corpus)
                if is_restricted(d.sensitivity) and viewable.admits(d)
            )
        return frozenset(own)

    def _confirmed_ids(self, request: _Request, documents: Iterable[Document]) -> list[str]:
        """Stage 8 for named documents: those in real-time corpora confirmed, else dropped."""
        kept = []
        for document in documents:
            checker = self.runtime.checkers.get(document.corpus)
            if checker is not None:
                allowed, dropped = filter_allowed(checker, request.user_id, [document.doc_id])
                if not allowed:
                    request.trace.realtime_dropped.update({d: r.reason for d, r in dropped.items()})
                    continue
            kept.append(document.doc_id)
        return kept

    def _relevant(
        self, request: _Request, snippets: Sequence[Snippet], hits: Sequence[SearchHit]
    ) -> list[Snippet]:
        """The snippets the relevance gate judges to bear on the question, from statistics
        over the caller's allowed chunks only (:mod:`clearance.answer.relevance`)."""
        flt = request.flt
        assert flt is not None
        cosines = (
            {h.chunk.chunk_id: h.cosine for h in hits if h.cosine is not None}
            if self.runtime.embedder is not None
            else None
        )
        judged = self.relevance.judge(
            request.masked,
            snippets,
            lambda terms: self.runtime.store.term_statistics(terms, flt),
            cosines,
        )
        return [j.snippet for j in judged if j.relevant]

    def _render_narrative(
        self, checked: CheckedAnswer, snippets: Sequence[Snippet], request: _Request
    ) -> AnswerResult:
        """The checked answer with the other side of any conflict and notes on outdated
        sources, then — only under ``[answer] inferred = "label"`` — the inferences under
        :data:`INFERRED_LABEL`; otherwise they are dropped, and a flag counts them. Its
        ``[S#]`` markers are renumbered to the citations as listed: ``[S1]`` is the first
        citation shown, whatever the snippet's place in the prompt."""
        assert request.flt is not None
        by_ref = {s.ref: s for s in snippets}
        conflicts = find_conflicts(checked, snippets, periods=self._periods_named)
        refs = checked.cited_refs
        added: list[tuple[str, str]] = []
        flags: list[str] = []
        if conflicts:
            flags.append("conflict")
            stated = {" ".join(s.text.split()) for s in checked.sentences}
            for sentence, ref in conflicts:
                # Both sides must be shown and cited; one the answer already states with its
                # citation is not repeated.
                if " ".join(sentence.split()) not in stated:
                    added.append((sentence, ref))
                refs.append(ref)
        label_inferred = bool(checked.inferred) and self.settings.answer.inferred == "label"
        if label_inferred:
            refs.extend(r for s in checked.inferred for r in s.refs)
        elif checked.inferred:
            flags.append(f"inferred_dropped:{len(checked.inferred)}")
        refs = list(dict.fromkeys(refs))
        # Two chunks of one document can share a locator: cite each place once.
        numbers: dict[Citation, int] = {}
        for ref in refs:
            s = by_ref[ref]
            numbers.setdefault(
                Citation(s.doc_id, s.title, s.locator, s.uri, s.trust), len(numbers) + 1
            )
        labels = {
            ref: f"S{numbers[Citation(s.doc_id, s.title, s.locator, s.uri, s.trust)]}"
            for ref, s in ((r, by_ref[r]) for r in refs)
        }
        text = checked.render(labels)
        for sentence, ref in added:
            quoted = " ".join(_ANY_MARKER.sub(" ", sentence).split())
            text += f" Another source says otherwise: {quoted} [{labels[ref]}]"
        documents = {
            d.doc_id: d
            for d in (self.runtime.store.get_document(by_ref[r].doc_id) for r in refs)
            if d is not None
        }
        outdated = [
            d
            for d in documents.values()
            if d.review_at is not None and d.review_at <= request.flt.now
        ]
        for d in outdated:
            flags.append(f"possibly_outdated:{d.doc_id}")
            title = " ".join(_ANY_MARKER.sub(" ", d.title).split())
            text += f" (Note: “{title}” is past its review date and may be outdated.)"
        if label_inferred:
            # Last, after everything sourced: a stream shows it only after the checked text.
            flags.append(f"inferred_shown:{len(checked.inferred)}")
            text = f"{text.strip()}\n\n{_inferred_block(checked, labels)}"
        return AnswerResult(
            Status.ANSWERED, text.strip(), Route.NARRATIVE, tuple(numbers), flags=tuple(flags)
        )


def _inferred_block(checked: CheckedAnswer, labels: Mapping[str, str]) -> str:
    """:data:`INFERRED_LABEL` on a line of its own, then one list item per inference with
    the markers of the sources it reasons from (its numbers were checked against them)."""
    items = [
        _LIST_LEAD.sub("", render_sentences([sentence], labels).rstrip())
        for sentence in checked.inferred
    ]
    return INFERRED_LABEL + "".join(f"\n- {item}" for item in items)


def _preamble(resolved: Sequence[ResolvedPeriod], assumptions: Sequence[str]) -> str:
    """What the answer took the question to mean, before the answer itself:
    ``(last year = FY2025) Assuming ACME Group and FY2025: ``."""
    out = ""
    if resolved:
        out += "(" + "; ".join(f"{r.text} = {r.period}" for r in resolved) + ") "
    if assumptions:
        values = [a.split(": ", 1)[1].split(" (", 1)[0] for a in assumptions]
        out += f"Assuming {' and '.join(values)}: "
    return out


def _missing_slots(parts: Sequence[MetricQuery]) -> list[str]:
    missing: list[str] = []
    for part in parts:
        if part.metric is None and "metric" not in missing:
            missing.append("metric")
        if part.entity is None and "entity" not in missing:
            missing.append("entity")
        if part.period is None and "period" not in missing:
            missing.append("period")
    return missing


def _probe(n: int, hit: SearchHit, origins: Mapping[str, Trust]) -> Snippet:
    """A RESTRICTED hit in the shape the relevance gate judges. Never a prompt snippet:
    the link exit (:func:`~clearance.retrieval.link_exit.to_snippets`) would drop it, and
    it is labelled ``R#`` so no ``[S#]`` marker can name it."""
    return Snippet(
        ref=f"R{n}",
        chunk_id=hit.chunk.chunk_id,
        doc_id=hit.document.doc_id,
        title=hit.document.title,
        locator=hit.chunk.locator,
        uri=hit.document.uri,
        text=hit.chunk.text,
        sensitivity=hit.chunk.sensitivity,
        corpus=hit.document.corpus,
        origin=hit.chunk.origin,
        trust=resolve_trust(hit.chunk.origin, hit.document.origin_chain, origins).label,
    )


# A bullet the model put before an inference: the block supplies its own.
_LIST_LEAD = re.compile(r"^(?:[-*•・]|\d+[.)])\s+")
_CITATION_MARKER = re.compile(r"\[S(\d{1,4})\]")
# Marker-like text inside quoted material would be read as a citation: it is dropped.
_ANY_MARKER = re.compile(r"\[\s*S\d+\s*\]", re.IGNORECASE)


def _renumbered(text: str, own: Sequence[Citation], listed: Sequence[Citation]) -> str:
    """``text``'s ``[S#]`` markers, numbered against ``own``, renumbered to ``listed``."""
    position = {c: i for i, c in enumerate(listed, start=1)}

    def number(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[S{position[own[n - 1]]}]" if 1 <= n <= len(own) else ""

    return _CITATION_MARKER.sub(number, text)


_YEAR_IN_QUESTION = re.compile(r"(?<![\d.,$])(?:19|20)\d{2}(?![\d,.]\d|\s*(?:%|percent))")
# A stated amount: a currency or scale word, or a percentage, beside digits.
_AMOUNT = re.compile(
    r"[$€£¥]\s?\d|\d[\d,.]*\s*(?:%|percent|billion|million|thousand|trillion|bn\b|億|兆|万|元|円)",
    re.IGNORECASE,
)
_ANSWER_SENTENCE = re.compile(r"(?<=\])\s+|\n+")


def _period_order(period: str) -> tuple[int, ...]:
    """Years, then other numbers, of a canonical period, for ordering (latest last)."""
    numbers = [int(n) for n in re.findall(r"\d+", period)]
    return tuple(sorted((n for n in numbers if n >= 1000), reverse=True)) + tuple(
        n for n in numbers if n < 1000
    )


def _refusal(status: Status, text: str, route: Route = Route.NONE) -> AnswerResult:
    return AnswerResult(status, text, route)
