"""While a corpus in the asker's assistant scope is failing closed (past its revocation
SLA), every "nothing found" refusal in that scope says that some sources are temporarily
unavailable: a system state, shown whatever the question and whatever that corpus holds,
so it tells nobody whether a hidden document exists."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from clearance.answer.orchestrator import UNAVAILABLE_FLAG, Orchestrator
from clearance.answer.result import AnswerResult, Status
from clearance.app import Clearance
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter

from .conftest import AcmeIndex
from .test_invariants import all_principals

# The demo's "sensitive" corpus has a 15-minute SLA; every other corpus at least 30 minutes.
LATE = timedelta(minutes=20)
NOTHING = "What is the meaning of life?"
HIDDEN_MINUTES = "What did the board approve for the FY2025 budget in the March 2025 minutes?"


def late(index: AcmeIndex) -> AcmeIndex:
    """``index`` seen 20 minutes after its ACL sync: only "sensitive" is failing closed."""
    synced: datetime = index.app.store.last_acl_syncs()["sensitive"]
    app = Clearance(index.app.settings, index.app.store, embedder=None, clock=lambda: synced + LATE)
    return AcmeIndex(index.root, index.config, app)


def notice(index: AcmeIndex) -> str:
    return index.app.settings.answer.unavailable_notice


def test_every_refusal_in_a_scope_with_a_failing_corpus_says_so(acme: AcmeIndex) -> None:
    index = late(acme)
    for persona, question in (("alice", NOTHING), ("alice", HIDDEN_MINUTES), ("jun", NOTHING)):
        result = index.app.ask(question, persona, assistant="hr")
        assert result.status is Status.NO_AUTHORIZED_SOURCE, result.to_dict()
        assert result.answer == f"{index.app.settings.answer.no_source_message} {notice(index)}"
        assert UNAVAILABLE_FLAG in result.flags
    # Outside that scope ("general" does not read "sensitive"), and before the SLA lapses,
    # the refusal is today's.
    for app, assistant in ((index.app, "general"), (acme.app, "hr")):
        plain = app.ask(NOTHING, "alice", assistant=assistant)
        assert plain.answer == app.settings.answer.no_source_message
        assert UNAVAILABLE_FLAG not in plain.flags
    # An answer is not a refusal: no notice.
    answered = index.app.ask("What is the VPN portal address for GlobalProtect?", "alice")
    assert answered.status is Status.ANSWERED and notice(index) not in answered.answer


def test_the_notice_does_not_depend_on_what_the_failing_corpus_holds(
    acme: AcmeIndex, acme_without_hidden: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_hidden, without_hidden = late(acme), late(acme_without_hidden)
    cases = [("alice", NOTHING), ("alice", HIDDEN_MINUTES), ("hiro", HIDDEN_MINUTES)]

    def results(index: AcmeIndex) -> list[dict[str, Any]]:
        out = []
        for persona, question in cases:
            data = index.app.ask(question, persona, assistant="hr").to_dict()
            del data["trace_id"]
            out.append(data)
        return out

    assert results(with_hidden) == results(without_hidden)
    assert all(notice(acme) in r["answer"] for r in results(with_hidden))

    # Reverse proof: a notice given only when the failing corpus holds something matching
    # the question (whoever may read it) is missing for a question it holds nothing about,
    # and the first assertion above catches that.
    real = Orchestrator.ask

    def only_if_it_matches(self: Orchestrator, question: str, *a: Any, **k: Any) -> AnswerResult:
        result = real(self, question, *a, **k)
        everything = SearchFilter(
            principals=all_principals(self.runtime),
            corpora={"sensitive": Sensitivity.RESTRICTED},
            max_sensitivity=Sensitivity.RESTRICTED,
            require_ai_allowed=False,
        )
        if self.runtime.store.lexical_search(question, everything, 1):
            return result
        return AnswerResult(
            result.status, result.answer.replace(f" {notice(acme)}", ""), result.route
        )

    monkeypatch.setattr(Orchestrator, "ask", only_if_it_matches)
    leaky = results(late(acme))
    assert not all(notice(acme) in r["answer"] for r in leaky)
