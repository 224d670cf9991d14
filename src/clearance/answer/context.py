"""The answer routes' shared context: built once per engine, used by every request."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from clearance import glossary
from clearance.access.policy import AccessControl, Action
from clearance.access.realtime import filter_allowed
from clearance.answer.faq import FaqMatcher, FaqRepository
from clearance.answer.intent import (
    IntentParser,
    RuleIntentParser,
)
from clearance.answer.periods import FiscalCalendar
from clearance.answer.relevance import RelevanceGate
from clearance.answer.request import ALL_CHANNELS, AnswerRequest
from clearance.answer.scope import ScopeGate
from clearance.config import LATEST_PERIOD
from clearance.errors import ConfigError
from clearance.ingest.facts import Vocabulary, normalize
from clearance.llm.base import Provider
from clearance.llm.extractive import ExtractiveProvider
from clearance.llm.guard import EgressGuard, Recheck, RecheckResult
from clearance.llm.multilingual import get_similarity
from clearance.model import Document, Fact, Sensitivity, is_restricted
from clearance.retrieval.spelling import Speller
from clearance.runtime import Runtime

__all__ = ["AnswerContext"]


class AnswerContext:
    """What the answer routes share: the runtime, the guards, the gates and the vocabulary,
    and the checks every route applies to what it reads for a caller."""

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
        reading = None
        if runtime.embedder is not None:
            from clearance.llm.embedding import EmbedderSimilarity  # loaded with the embedder

            # The quoting reader ranks what a question telling a story asks with the
            # embedder (clearance.llm.extractive): never a RESTRICTED snippet, which the
            # guard keeps from every provider and the reader skips.
            reading = EmbedderSimilarity(runtime.embedder)
        if (
            reading is not None
            and isinstance(provider, ExtractiveProvider)
            and provider.similarity is None
        ):
            provider = provider.reading_with(reading)
        self.guard = EgressGuard(provider)
        self.judge_guard = EgressGuard(judge) if judge is not None else None
        #: The built-in extractive reader behind the same guard: passages quoted, no model.
        self.quoting_guard = EgressGuard(ExtractiveProvider(similarity=reading))
        self._providers = tuple(dict.fromkeys(p for p in (provider, judge) if p is not None))
        self.scope = ScopeGate(self.settings.scope)
        # Compiled once: the structured tool runs once per part of a multi question.
        self.vocab = Vocabulary(self.settings.facts)
        self.calendar = FiscalCalendar.from_settings(self.settings.facts)
        self.intent_parser = intent_parser or RuleIntentParser(self.vocab, self.calendar)
        self.default_period = self._default_period()
        self.faq = FaqMatcher(FaqRepository(runtime.store))
        self.relevance = RelevanceGate(self.settings.answer.relevance, runtime.equivalents)
        self.speller = Speller(self._configured_names())
        #: The multilingual model the narrative path's gate reads CJK snippets in doubt
        #: with (never the RESTRICTED route's: RESTRICTED text is never embedded).
        self.similarity = get_similarity(self.settings.answer.relevance.multilingual)

    def _configured_names(self) -> list[str]:
        """The organisation's own names and phrases, which a question means as written:
        the ``[facts]`` vocabulary, the scope gate's entities and the synonyms."""
        facts, names = self.settings.facts, []
        for table in (facts.metrics, facts.entities, facts.channels, facts.units):
            for canonical, aliases in table.items():
                names += [canonical, *aliases]
        for entity, aliases in self.settings.scope.entities.items():
            names += [entity, *aliases]
        for group in self.settings.retrieval.synonyms:
            names += group
        return names

    def periods_named(self, text: str) -> set[str]:
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

    def independent_access(self) -> AccessControl:
        """Decisions from stored data alone, without the search's filter (the egress guard's
        re-check and the trace's ``denied_retrieved``)."""
        return AccessControl(
            self.settings,
            self.runtime.directory,
            self.runtime.store.last_acl_syncs(),
            clock=self.runtime.clock,
        )

    def count_denied(self, request: AnswerRequest, doc_ids: Iterable[str]) -> int:
        """Retrieved documents the independent re-check denies (``denied_retrieved``): it
        must always be 0, and ``clearance stats`` reports the rate."""
        doc_ids = sorted(set(doc_ids))
        if not doc_ids:
            return 0
        access = self.independent_access()
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

    def may_view(self, request: AnswerRequest, doc_id: str) -> bool:
        document = self.runtime.store.get_document(doc_id)
        if document is None:
            return False
        now = request.flt.now if request.flt else None
        return request.caller.decide(Action.VIEW, document, now=now).allow

    def confirmed(
        self, request: AnswerRequest, rows: Iterable[tuple[Fact, Document]]
    ) -> list[tuple[Fact, Document]]:
        """Stage 8 for facts too: documents in real-time corpora are confirmed or dropped."""
        return [(fact, document) for fact, document in rows if self._confirmed(request, document)]

    def confirmed_ids(self, request: AnswerRequest, documents: Iterable[Document]) -> list[str]:
        """Stage 8 for named documents: those in real-time corpora confirmed, else dropped."""
        return [document.doc_id for document in documents if self._confirmed(request, document)]

    def _confirmed(self, request: AnswerRequest, document: Document) -> bool:
        """Whether stage 8 keeps ``document``: yes outside real-time corpora; in one, only
        when its checker allows it, the drop and its reason recorded in the trace otherwise."""
        checker = self.runtime.checkers.get(document.corpus)
        if checker is None:
            return True
        allowed, dropped = filter_allowed(checker, request.user_id, [document.doc_id])
        if not allowed:
            request.trace.realtime_dropped.update({d: r.reason for d, r in dropped.items()})
        return bool(allowed)

    def readable_facts(
        self,
        request: AnswerRequest,
        *,
        metric: str | None = None,
        entity: str | None = None,
        period: str | None = None,
        channel: str | None = None,
    ) -> list[tuple[Fact, Document]]:
        """Facts the caller may read right now, as the structured tool sees them: inside
        the request's filter, never RESTRICTED, confirmed by real-time checks. The only
        source of a default period and of the options a clarifying question offers. A
        ``metric`` that names a statement line is also read under the line's other names
        (:mod:`clearance.glossary`): one company's 売上高 is another's revenue."""
        assert request.flt is not None
        capped = dataclasses.replace(
            request.flt,
            max_sensitivity=min(request.flt.max_sensitivity, Sensitivity.CONFIDENTIAL),
        )
        rows = [
            row
            for name in (metric, *self._same_line(request, metric))
            for row in self.runtime.store.query_facts(
                capped,
                metric=name,
                entity=entity,
                period=period,
                channel=None
                if channel == ALL_CHANNELS
                else channel or self.settings.facts.default_channel,
            )
        ]
        rows = [(f, d) for f, d in rows if d.sensitivity < Sensitivity.RESTRICTED]
        return self.confirmed(request, rows)

    def _same_line(self, request: AnswerRequest, metric: str | None) -> list[str]:
        """The caller's other metrics that are the statement line ``metric`` is."""
        if metric is None:
            return []
        return glossary.same_line(metric, (request.vocab or self.vocab).settings.metrics)

    def recheck(self, request: AnswerRequest) -> Recheck:
        """An independent decision from stored data, without the search's filter."""
        assert request.principal is not None
        access = self.independent_access()
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
