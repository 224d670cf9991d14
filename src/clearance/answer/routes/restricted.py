"""The restricted-naming route: when nothing the caller may have read to them answers, the
RESTRICTED documents they may view that bear on the question are named, by title and link,
never quoted or summarised (docs/design.md §3). Whoever may not view them gets the plain
refusal, whether they exist or not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from clearance.access.policy import Action
from clearance.answer.context import AnswerContext
from clearance.answer.request import (
    AnswerRequest,
)
from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.llm.base import Snippet
from clearance.model import SearchHit, is_restricted
from clearance.store.base import SearchFilter
from clearance.trust import Trust, resolve_trust

__all__ = ["MAX_NAMED", "RESTRICTED_FLAG", "RESTRICTED_NAMED", "RestrictedNamingRoute"]

RESTRICTED_NAMED = (
    "The sources that answer this are restricted: they can be named to you, but not quoted "
    "or summarised. Open them to read what they say:"
)

#: The flag of an answer that only names RESTRICTED sources.
RESTRICTED_FLAG = "restricted_sources"

#: How many RESTRICTED documents such an answer names at most.
MAX_NAMED = 3


class RestrictedNamingRoute:
    """RESTRICTED sources named to their permitted readers, never quoted."""

    def __init__(self, ctx: AnswerContext) -> None:
        self.ctx = ctx

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        """Nothing the caller may have read to them answers: if RESTRICTED documents the
        caller may view do, they are named (docs/design.md §3); otherwise None, and the
        refusal follows. Whoever may not view those documents gets that refusal whether
        they exist or not."""
        named = self._restricted_sources(request)
        if not named:
            return None
        request.trace.reason = "restricted_sources_named"
        lines = "".join(f"\n- {c.title} [S{n}]" for n, c in enumerate(named, start=1))
        return AnswerResult(
            Status.ANSWERED,
            RESTRICTED_NAMED + lines,
            Route.NARRATIVE,
            named,
            flags=(RESTRICTED_FLAG,),
        )

    def _restricted_sources(self, request: AnswerRequest) -> tuple[Citation, ...]:
        """Citations of the RESTRICTED documents the caller may view that bear on the
        question, best first, one per document, at most :data:`MAX_NAMED`.

        They are searched on their own, lexically, among only the RESTRICTED documents the
        caller may view (:meth:`_viewable_restricted`): their chunks have no vector, so in
        a search over everything the caller may view they rank below what the vector
        search finds and never reach the top few. A caller who may view none is never
        searched for. Their text is judged here by the relevance gate, as any snippet
        is, and goes nowhere else: no prompt, no model call, no answer text."""
        viewable = request.caller.filter(Action.VIEW, self.ctx.runtime.store.corpora())
        own = self._viewable_restricted(viewable)
        if not own:
            return ()
        ranked = self.ctx.runtime.store.lexical_search(
            request.masked,
            replace(viewable, doc_ids=own),
            self.ctx.settings.retrieval.candidates,
        )
        rows = self.ctx.runtime.store.hits([chunk_id for chunk_id, _ in ranked])
        confirmed = set(self.ctx.confirmed_ids(request, {d.doc_id: d for _, d in rows}.values()))
        hits = [
            SearchHit(chunk, document, 0.0)
            for chunk, document in rows
            if document.doc_id in confirmed
        ]
        if not hits:
            return ()
        probes = [_probe(i, h, self.ctx.settings.trust.origins) for i, h in enumerate(hits, 1)]
        judged = self.ctx.relevance.judge(
            request.masked,
            probes,
            lambda terms: self.ctx.runtime.store.term_statistics(terms, viewable),
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
        corpora = (
            viewable.corpora if viewable.corpora is not None else self.ctx.runtime.store.corpora()
        )
        own: set[str] = set()
        for corpus in sorted(corpora):
            ceiling = viewable.ceiling_for(corpus)
            if ceiling is None or not is_restricted(ceiling):
                continue
            own.update(
                d.doc_id
                for d in self.ctx.runtime.store.list_documents(corpus)
                if is_restricted(d.sensitivity) and viewable.admits(d)
            )
        return frozenset(own)


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
