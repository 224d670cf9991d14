"""The narrative route: retrieve inside the caller's filter, rerank, the link exit, the
prompt, the egress guard, the model, then every sentence's citations and numbers checked."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from clearance.answer.context import AnswerContext
from clearance.answer.intent import (
    Intent,
)
from clearance.answer.narrative import (
    CheckedAnswer,
    check_answer,
    find_conflicts,
    render_sentences,
)
from clearance.answer.prompt import assemble_prompt
from clearance.answer.request import (
    CLARIFY,
    CLARIFY_OPTIONS,
    MAX_OPTIONS,
    AnswerRequest,
    refusal,
)
from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.errors import GuardError, ProviderError
from clearance.ingest.facts import document_entity, normalize
from clearance.ingest.locator import is_table_row, is_tabular
from clearance.llm.base import ChatMessage, ChatRequest, Snippet
from clearance.llm.extractive import years_named
from clearance.llm.guard import AuthorizedSet
from clearance.model import SearchHit
from clearance.retrieval.link_exit import to_snippets
from clearance.retrieval.rerank import rerank
from clearance.retrieval.synonyms import Synonyms

__all__ = ["INFERRED_LABEL", "NarrativeRoute"]

#: The heading of the block of inferences shown under ``[answer] inferred = "label"``.
INFERRED_LABEL = "Inferred, not stated in the sources:"

# A bullet the model put before an inference: the block supplies its own.
_LIST_LEAD = re.compile(r"^(?:[-*•・]|\d+[.)])\s+")

# Marker-like text inside quoted material would be read as a citation: it is dropped.
_ANY_MARKER = re.compile(r"\[\s*S\d+\s*\]", re.IGNORECASE)

_YEAR_IN_QUESTION = re.compile(r"(?<![\d.,$])(?:19|20)\d{2}(?![\d,.]\d|\s*(?:%|percent))")

# A stated amount: a currency or scale word, or a percentage, beside digits.
_AMOUNT = re.compile(
    r"[$€£¥]\s?\d|\d[\d,.]*\s*(?:%|percent|billion|million|thousand|trillion|bn\b|億|兆|万|元|円)",
    re.IGNORECASE,
)

_ANSWER_SENTENCE = re.compile(r"(?<=\])\s+|\n+")


class NarrativeRoute:
    """Questions answered from passages, every sentence cited and checked."""

    def __init__(self, ctx: AnswerContext) -> None:
        self.ctx = ctx

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        """A cited answer, or None when nothing the caller may read answers."""
        found = self._narrative(request)
        if found is None or request.intent is None:
            return found
        return self._which_period_stated(request, request.intent, found)

    def passages(
        self, request: AnswerRequest, *, prose_only: bool = False, quoting: bool = False
    ) -> AnswerResult | None:
        """:meth:`answer` without the period check, ``prose_only`` as the composite route
        asks (snippets cut from tables and charts left out). With ``quoting``, no model is
        asked anything: the passages' own sentences are quoted by the built-in extractive
        reader, as the figures route asks (its path makes no provider call)."""
        return self._narrative(request, prose_only=prose_only, quoting=quoting)

    def _which_period_stated(
        self, request: AnswerRequest, intent: Intent, answer: AnswerResult
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
            vocab = request.vocab or self.ctx.vocab
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

    def _narrative(
        self, request: AnswerRequest, *, prose_only: bool = False, quoting: bool = False
    ) -> AnswerResult | None:
        """A cited answer from the snippets that bear on ``request.masked``; with
        ``prose_only``, snippets cut from tables and charts are left out (see
        :meth:`_composite`)."""
        trace = request.trace
        assert request.flt is not None

        # 7/8 retrieve inside the filter, with real-time checks
        trace.start("retrieve")
        k = self.ctx.settings.retrieval.k
        found = self.ctx.runtime.search(
            request.user_id,
            request.masked,
            assistant=request.assistant.name if request.assistant else None,
            # Prose only: look as deep as the retrievers do, so table rows ranked first do
            # not crowd out the passages that remain.
            k=self.ctx.settings.retrieval.candidates if prose_only else k,
            renderings=request.renderings,
        )
        if prose_only:
            prose = [h for h in found.hits if not is_tabular(h.chunk.locator)][:k]
            found = replace(found, hits=prose)
        trace.stop("retrieve")
        trace.retrieved = sorted({h.document.doc_id for h in found.hits})
        trace.realtime_dropped = {d: r.reason for d, r in found.realtime_dropped.items()}
        trace.denied_retrieved = self.ctx.count_denied(request, trace.retrieved)
        if not found.hits:
            trace.reason = "no_authorized_source"
            return None

        authorized = AuthorizedSet(
            user_id=request.user_id,
            chunks={h.chunk.chunk_id: h.document.doc_id for h in found.hits},
            corpora=frozenset(request.flt.corpora or {h.document.corpus for h in found.hits}),
        )
        recheck = self.ctx.recheck(request)

        # 9 rerank (strategy B) — the judge goes through its own guard call
        trace.start("rerank")
        hits = found.hits
        if self.ctx.judge_guard is not None and not quoting:
            judge_guard = self.ctx.judge_guard

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
                hits = rerank(hits, judge, self.ctx.settings.trust.origins)
            except GuardError:
                trace.guard_fired = True
                hits = found.hits
        trace.stop("rerank")

        # 10 link exit, 11 prompt assembly (only material that actually bears on the question);
        # trust comes from origin under [trust.origins], derived here and never stored
        exits = to_snippets(hits, self.ctx.settings.trust.origins)
        # Quoting for the figures route, every retrieved passage is read: the route takes a
        # sentence only if it names the metric, the entity and the year itself, a stricter
        # test than the gate's share of the question's words (which "the fiscal year ended
        # March" misses in a Japanese report saying 2024年3月期).
        snippets = list(exits) if quoting else self._relevant(request, exits, hits)
        prompt = assemble_prompt(
            request.whole or request.masked,
            snippets,
            self.ctx.settings.answer.context_budget_tokens,
        )
        trace.filter_counts["link_exit_restricted"] = len(hits) - len(exits)
        trace.filter_counts["relevance_gate"] = len(exits) - len(snippets)
        trace.filter_counts["prompt_budget"] = len(snippets) - len(prompt.snippets)
        if len(prompt.snippets) < self.ctx.settings.answer.min_snippets:
            trace.reason = "no_authorized_source"
            return None

        # 12 egress guard + provider call
        trace.start("synthesise")
        chat = ChatRequest(
            purpose="answer",
            question=request.masked,
            messages=prompt.messages,
            snippets=prompt.snippets,
            equivalents=tuple(
                dict.fromkeys(
                    t for u in self._equivalents(request).used(request.masked) for t in u.texts
                )
            ),
            names=self._names(request, prompt.snippets),
        )
        guard = self.ctx.quoting_guard if quoting else self.ctx.guard
        try:
            response = guard.complete(chat, authorized, recheck)
        except GuardError:
            trace.guard_fired = True
            trace.reason = "internal_guard"
            return refusal(
                Status.DEGRADED, self.ctx.settings.answer.degraded_message, Route.NARRATIVE
            )
        except ProviderError as exc:
            trace.provider_errors.append(exc.code)
            trace.reason = "provider_error"
            return refusal(
                Status.DEGRADED, self.ctx.settings.answer.degraded_message, Route.NARRATIVE
            )
        finally:
            trace.stop("synthesise")

        # 13 checks: citations, numbers, conflicts, review dates
        checked = check_answer(response.text, prompt.snippets)
        if checked.removed_for_numbers:
            trace.fabrication_guard_triggered = True
        if not checked.sentences:
            trace.reason = "no_authorized_source"
            return None
        return self._render_narrative(checked, prompt.snippets, request)

    def _names(self, request: AnswerRequest, snippets: Sequence[Snippet]) -> tuple[str, ...]:
        """The question's names of whom it is about, as the question writes them: entities
        the caller's facts know, and whom a periodic report is about by its title
        ("コニカミノルタ 2024年3月期 連結業績の概要" → "コニカミノルタ") when the question
        names it. A title naming no year names a topic ("Sabbatical"), which is what is
        asked, not whom."""
        vocab = request.vocab or self.ctx.vocab
        text = normalize(request.masked)
        names = [text[m.start : m.end] for m in vocab.find("entity", text)]
        folded = text.casefold()
        for snippet in snippets:
            if not _YEAR_IN_QUESTION.search(snippet.title):
                continue
            about = normalize(document_entity(snippet.title))
            # the whole name, else its first word ("コニカミノルタ 連結業績の概要")
            for name in (about, about.split(" ")[0]):
                if len(name) > 1 and name.casefold() in folded:
                    names.append(name)
                    break
        return tuple(dict.fromkeys(names))

    def _relevant(
        self, request: AnswerRequest, snippets: Sequence[Snippet], hits: Sequence[SearchHit]
    ) -> list[Snippet]:
        """The snippets the relevance gate judges to bear on the question, from statistics
        over the caller's allowed chunks only (:mod:`clearance.answer.relevance`), less a
        table's rows whose headers name years, none of them one the question names."""
        flt = request.flt
        assert flt is not None
        embedder = self.ctx.runtime.embedder
        cosines = None
        sentences = None
        if embedder is not None:
            from clearance.llm.embedding import EmbedderSimilarity  # loaded with the embedder

            cosines = {h.chunk.chunk_id: h.cosine for h in hits if h.cosine is not None}
            sentences = EmbedderSimilarity(embedder)
        judged = self.ctx.relevance.judge(
            request.masked,
            snippets,
            lambda terms: self.ctx.runtime.store.term_statistics(terms, flt),
            cosines,
            self.ctx.similarity,
            sentences,
            synonyms=self._equivalents(request),
        )
        kept = [j.snippet for j in judged if j.relevant]
        asked = years_named(request.masked)
        if not asked:
            return kept
        # A table row whose columns are all other years' states nothing of the year asked:
        # quoted, its 2024 figures would answer a question about 2023 (a trial's ledger).
        return [
            s
            for s in kept
            if not (
                is_table_row(s.locator) and (shown := years_named(s.text)) and not shown & asked
            )
        ]

    def _equivalents(self, request: AnswerRequest) -> Synonyms:
        """The phrases held equivalent for this question: the organisation's and the
        statement lines', and those of a question read in another language."""
        known = self.ctx.runtime.equivalents
        return known.with_groups(request.renderings) if request.renderings else known

    def _render_narrative(
        self, checked: CheckedAnswer, snippets: Sequence[Snippet], request: AnswerRequest
    ) -> AnswerResult:
        """The checked answer with the other side of any conflict and notes on outdated
        sources, then — only under ``[answer] inferred = "label"`` — the inferences under
        :data:`INFERRED_LABEL`; otherwise they are dropped, and a flag counts them. Its
        ``[S#]`` markers are renumbered to the citations as listed: ``[S1]`` is the first
        citation shown, whatever the snippet's place in the prompt."""
        assert request.flt is not None
        by_ref = {s.ref: s for s in snippets}
        conflicts = find_conflicts(
            checked, snippets, question=request.masked, periods=self.ctx.periods_named
        )
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
        label_inferred = bool(checked.inferred) and self.ctx.settings.answer.inferred == "label"
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
            for d in (self.ctx.runtime.store.get_document(by_ref[r].doc_id) for r in refs)
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
