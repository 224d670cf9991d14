"""RESTRICTED sources are *named* to their permitted readers — title, link and locator,
under a fixed text — and never summarised (docs/design.md §3); anyone else gets exactly the refusal
they would get if the document did not exist (docs/design.md §6). Each assertion is shown to catch
a deliberately broken variant."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.answer.routes.restricted import (
    RESTRICTED_FLAG,
    RESTRICTED_NAMED,
    RestrictedNamingRoute,
)
from clearance.app import Clearance
from clearance.llm.mock import MockProvider
from clearance.model import Sensitivity, is_restricted
from clearance.store.base import SearchFilter

from .conftest import CANARIES, AcmeIndex, nameable, readable
from .test_invariants import all_principals, refusal_differences

MINUTES = "sharepoint:board-2025-03-minutes"
QUESTION = "What did the board approve for the FY2025 budget in the March 2025 minutes?"


def restricted_content(index: AcmeIndex, result: AnswerResult) -> list[str]:
    """Canaries and document-unique sentences of RESTRICTED documents in ``result``."""
    output = json.dumps(result.to_dict(), ensure_ascii=False)
    found = []
    for document in index.app.store.list_documents():
        if not is_restricted(document.sensitivity):
            continue
        marks = [*CANARIES.get(document.doc_id, ()), *index.fingerprints()[document.doc_id]]
        found += [f"{document.doc_id}: {m[:40]}" for m in marks if m in output]
    return found


def test_a_permitted_reader_is_named_the_restricted_source_and_told_nothing_of_it(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert MINUTES in nameable("jun") and MINUTES not in readable("jun")
    provider = MockProvider()
    orchestrator = acme.orchestrator(provider)
    result = orchestrator.ask(QUESTION, "jun")
    minutes = acme.document(MINUTES)
    assert minutes is not None
    assert result.status is Status.ANSWERED and result.flags == (RESTRICTED_FLAG,)
    assert [c.doc_id for c in result.citations] == [MINUTES]
    assert result.answer == f"{RESTRICTED_NAMED}\n- {minutes.title} [S1]"
    assert provider.calls == 0  # no model sees it, not even to rank
    assert restricted_content(acme, result) == []

    # Reverse proof: a variant that "helpfully" summarises the named source is caught.
    def summarising(self: RestrictedNamingRoute, request: Any) -> AnswerResult | None:
        named = self._restricted_sources(request)
        if not named:
            return None
        text = " ".join(c.text for c in acme.chunks(named[0].doc_id))
        return AnswerResult(Status.ANSWERED, text, Route.NARRATIVE, named, flags=(RESTRICTED_FLAG,))

    monkeypatch.setattr(RestrictedNamingRoute, "answer", summarising)
    assert restricted_content(acme, orchestrator.ask(QUESTION, "jun")) != []


def test_an_assistant_below_restricted_names_nothing(acme: AcmeIndex) -> None:
    result = acme.app.ask(QUESTION, "jun", assistant="general")
    assert result.status is Status.NO_AUTHORIZED_SOURCE and result.citations == ()


def test_anyone_else_gets_the_refusal_they_would_get_if_it_did_not_exist(
    acme: AcmeIndex, acme_without_hidden: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [("alice", QUESTION), ("hiro", QUESTION), ("alice", "What is in the board minutes?")]
    for persona, question in cases:
        assert MINUTES not in nameable(persona)
        assert acme.app.ask(question, persona).status is Status.NO_AUTHORIZED_SOURCE
    assert refusal_differences(acme, acme_without_hidden, cases) == []

    # Reverse proof: naming RESTRICTED documents whoever may view them tells their
    # existence away, and the same comparison catches it.
    def everyones(self: RestrictedNamingRoute, request: Any) -> tuple[Citation, ...]:
        everything = SearchFilter(
            principals=all_principals(self.ctx.runtime),
            corpora=None,
            max_sensitivity=Sensitivity.RESTRICTED,
            require_ai_allowed=False,
        )
        hits = self.ctx.runtime.store.lexical_search(request.masked, everything, 10)
        rows = self.ctx.runtime.store.hits([chunk_id for chunk_id, _ in hits])
        return tuple(
            Citation(d.doc_id, d.title, c.locator, d.uri)
            for c, d in rows
            if is_restricted(d.sensitivity)
        )[:1]

    monkeypatch.setattr(RestrictedNamingRoute, "_restricted_sources", everyones)
    leaky_with = Clearance(acme.app.settings, acme.app.store, embedder=None)
    leaky_without = Clearance(
        acme_without_hidden.app.settings, acme_without_hidden.app.store, embedder=None
    )
    differences = refusal_differences(
        AcmeIndex(acme.root, acme.config, leaky_with),
        AcmeIndex(acme_without_hidden.root, acme_without_hidden.config, leaky_without),
        cases,
    )
    assert differences != []
