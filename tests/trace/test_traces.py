"""One privacy-preserving trace per request (docs/design.md §8, §10.10), through ``Clearance.ask``.

The record carries ids, pseudonyms, counts, codes and timings: the permission-filter outcome
as counts per reason, ``denied_retrieved`` (the egress re-check's verdict on what was
retrieved), ``cited_past_review``, guard flags, latency per stage and provider errors — and,
only where an operator allowed it for every cited corpus, the question text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import clearance.trace.record as record_module
from clearance.access.realtime import RealtimeResult
from clearance.answer.orchestrator import Orchestrator
from clearance.app import Clearance, SearchResult
from clearance.errors import StoreError
from clearance.llm.base import ChatRequest
from clearance.llm.mock import MockProvider
from clearance.model import SearchHit
from clearance.trace.record import pseudonymise, timestamp

from .conftest import (
    CANARIES,
    CHAT_CANARY,
    KEY,
    NOW,
    VPN_CANARY,
    AppFactory,
    last_trace,
    raw_traces,
    traces,
)
from .test_record import NaiveWriter

VPN_QUESTION = "Where is the VPN portal?"


class DenyAll:
    """A real-time checker that denies every document."""

    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
        return {d: RealtimeResult.deny() for d in doc_ids}


def quote_first_source(request: ChatRequest) -> str:
    """A model that answers by quoting its first source whole (so chunk text reaches the
    answer, and a leak of the answer into the trace would show the canary)."""
    if request.purpose == "rerank":
        return " > ".join(s.ref for s in request.snippets)
    first = request.snippets[0]
    return f"{first.text} [{first.ref}]"


def leaky_search(app: Clearance, *chunk_ids: str) -> Any:
    """A search that ignores the filter and returns these chunks to anyone."""

    def search(  # type: ignore[no-untyped-def]
        user_id: str,
        query: str,
        *,
        assistant: str | None = None,
        k: int | None = None,
        renderings: Any = (),
    ):
        hits = [SearchHit(c, d, 1.0) for c, d in app.store.hits(list(chunk_ids))]
        return SearchResult(user_id, hits)

    return search


# --------------------------------------------------------------------------- the record


def test_one_record_per_request_with_the_fields_of_section_8(make_app: AppFactory) -> None:
    app = make_app()

    result = app.ask(VPN_QUESTION, "ann")
    app.ask("What is the cafeteria menu rumour?", "bob")
    app.ask("What does rival sell?", "ann")

    records = traces(app)
    assert len(records) == 3
    first = records[0]
    assert first["trace_id"] == result.trace_id
    assert first["created_at"] == timestamp(NOW)  # the service clock, not the wall clock
    assert first["user"] == pseudonymise("ann", KEY)
    assert first["assistant"] is None
    assert (first["route"], first["status"], first["reason"]) == ("narrative", "answered", None)
    assert first["retrieved"] == ["wiki:vpn"]
    assert first["cited"] == ["wiki:vpn"]
    assert first["filter_counts"] == {
        "corpora_serving": 3,
        "corpora_stale": 1,  # "legal" was never synced
        "link_exit_restricted": 0,
        "relevance_gate": 0,
        "prompt_budget": 0,
    }
    assert first["denied_retrieved"] == 0
    assert first["cited_past_review"] == 0
    assert first["fabrication_guard_triggered"] is False
    assert first["guard_fired"] is False
    assert first["provider_errors"] == []
    assert {"total", "identify", "filter", "retrieve", "synthesise"} <= set(first["latency_ms"])
    assert "question_text" not in first
    assert records[2]["reason"] == "out_of_scope_entity"
    assert records[2]["status"] == "out_of_scope_entity"


def test_the_raw_user_id_is_never_stored(make_app: AppFactory) -> None:
    app = make_app()
    app.ask(VPN_QUESTION, "ann")

    stored = raw_traces(app)
    assert pseudonymise("ann", KEY) in stored
    assert '"ann"' not in stored and "user:ann" not in stored


def test_refusals_are_traced_with_their_reason(make_app: AppFactory) -> None:
    app = make_app({"assistants": {"general": {"corpora": ["ops", "chat"]}}})

    app.ask(VPN_QUESTION, "dan")  # disabled
    app.ask(VPN_QUESTION, "nobody")  # unknown
    app.ask(VPN_QUESTION, "ann", assistant="nope")
    app.ask(VPN_QUESTION, "ann", assistant="general")

    reasons = [(r["status"], r["reason"], r["assistant"]) for r in traces(app)]
    assert reasons == [
        ("account_disabled", "account_disabled", None),
        ("account_disabled", "unauthenticated", None),
        ("unknown_assistant", "unknown_assistant", "nope"),
        ("answered", None, "general"),
    ]
    assert traces(app)[-1]["filter_counts"]["corpora_serving"] == 2
    assert traces(app)[-1]["filter_counts"]["corpora_stale"] == 0


def test_realtime_drops_are_counted_per_reason(make_app: AppFactory) -> None:
    app = make_app(checkers={"chat": DenyAll()})

    result = app.ask("What is the cafeteria menu rumour?", "eve")

    record = last_trace(app)
    assert result.status.value == "no_authorized_source"
    assert record["realtime_dropped"] == {"slack:rumour": "denied"}
    assert record["filter_counts"]["realtime_denied"] == 1
    assert record["retrieved"] == []


def test_relevance_gate_drops_are_counted(make_app: AppFactory) -> None:
    app = make_app()

    result = app.ask("VPN salary approval process timeline", "ann")

    record = last_trace(app)
    assert result.status.value == "no_authorized_source"
    assert record["retrieved"]
    assert record["filter_counts"]["relevance_gate"] == len(record["retrieved"])


def test_fabrication_guard_is_recorded(make_app: AppFactory) -> None:
    app = make_app(provider=MockProvider("The VPN portal costs 999 EUR a month. [S1]"))

    app.ask(VPN_QUESTION, "ann")

    record = last_trace(app)
    assert record["fabrication_guard_triggered"] is True
    assert record["status"] == "no_authorized_source"


def test_provider_errors_are_recorded_as_codes(make_app: AppFactory) -> None:
    app = make_app(provider=MockProvider(fail="model down: secret detail"))

    result = app.ask(VPN_QUESTION, "ann")

    record = last_trace(app)
    assert result.status.value == "degraded"
    assert record["provider_errors"] == ["provider_error"]
    assert record["reason"] == "provider_error"
    assert "secret detail" not in raw_traces(app)


def test_cited_documents_past_review_are_counted(make_app: AppFactory) -> None:
    app = make_app()

    result = app.ask("Where are hotel rooms booked for travel?", "ann")

    assert [c.doc_id for c in result.citations] == ["wiki:travel"]
    assert last_trace(app)["cited_past_review"] == 1


def test_tracing_can_be_turned_off(make_app: AppFactory) -> None:
    app = make_app({"trace": {"enabled": False}})
    app.ask(VPN_QUESTION, "ann")
    assert traces(app) == []


# --------------------------------------------------------------------------- denied_retrieved


def test_denied_retrieved_is_zero_on_the_real_path_and_counts_a_leaky_search(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    for user, question in (("ann", VPN_QUESTION), ("eve", VPN_QUESTION), ("bob", "cafeteria")):
        app.ask(question, user)
    assert [r["denied_retrieved"] for r in traces(app)] == [0, 0, 0]
    assert app.trace_log().stats()["denied_source_rate"] == 0.0

    # Reverse proof: a search that skips the filter hands eve a staff-only document; the
    # independent re-check denies it, the guard blocks the call, and the trace says so.
    monkeypatch.setattr(app, "search", leaky_search(app, "wiki:vpn#0"))
    result = app.ask(VPN_QUESTION, "eve")

    record = last_trace(app)
    assert record["denied_retrieved"] == 1
    assert record["guard_fired"] is True
    assert result.status.value == "degraded"
    assert app.trace_log().stats()["denied_source_rate"] == pytest.approx(1 / 4)


# --------------------------------------------------------------------------- question text


def test_question_text_is_recorded_only_when_every_cited_corpus_allows_it(
    make_app: AppFactory,
) -> None:
    app = make_app({"trace": {"question_text_corpora": ["ops"]}})

    app.ask(VPN_QUESTION, "ann")  # cites ops only
    app.ask("What is the cafeteria menu rumour?", "ann")  # cites chat
    app.ask("VPN salary approval process timeline", "ann")  # refused: cites nothing
    app.ask("What does rival sell for VPN?", "ann")  # out of scope

    texts = [r.get("question_text") for r in traces(app)]
    assert texts == [VPN_QUESTION, None, None, None]


def test_question_text_is_never_recorded_when_a_restricted_document_was_retrieved(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app({"trace": {"question_text_corpora": ["ops", "hr"]}})
    app.ask(VPN_QUESTION, "ann")
    assert last_trace(app)["question_text"] == VPN_QUESTION

    # A search that lets a RESTRICTED chunk through: the link exit drops it, the answer
    # cites only ops — and still no question text, because RESTRICTED was involved.
    monkeypatch.setattr(app, "search", leaky_search(app, "wiki:vpn#0", "hr:secret#0"))
    result = app.ask(VPN_QUESTION, "ann")

    record = last_trace(app)
    assert [c.doc_id for c in result.citations] == ["wiki:vpn"]
    assert record["filter_counts"]["link_exit_restricted"] == 1
    assert "question_text" not in record


def test_question_text_off_by_default_even_for_a_leaky_trace_variant(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variant that records the question regardless is stopped by the writer."""
    app = make_app()
    real = Orchestrator._finish_trace

    def leaky(self: Orchestrator, request: Any) -> None:
        real(self, request)
        request.trace.question_text = request.question

    monkeypatch.setattr(Orchestrator, "_finish_trace", leaky)
    with pytest.raises(StoreError, match="question_text"):
        app.ask(VPN_QUESTION, "ann")
    assert traces(app) == []


# --------------------------------------------------------------------------- invariant 10


QUESTION_CANARY = "QCANARY"


def run_battery(app: Clearance, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Many kinds of request, each question carrying a canary; returns every text that must
    stay out of the traces: the questions, every chunk canary, and every answer."""
    questions = [
        (f"Where is the VPN portal {QUESTION_CANARY}1?", "ann"),
        (f"What is the cafeteria menu rumour {QUESTION_CANARY}2?", "eve"),
        (f"Where are hotel rooms booked {QUESTION_CANARY}3?", "bob"),
        (f"What does rival sell {QUESTION_CANARY}4?", "ann"),
        (f"Where is the VPN portal {QUESTION_CANARY}5?", "dan"),
        (f"VPN salary approval process {QUESTION_CANARY}6?", "ann"),
    ]
    answers = [app.ask(q, user).answer for q, user in questions]
    # plus a request that retrieved a RESTRICTED chunk (dropped at the link exit)
    monkeypatch.setattr(app, "search", leaky_search(app, "wiki:vpn#0", "hr:secret#0"))
    answers.append(app.ask(f"Where is the VPN portal {QUESTION_CANARY}7?", "ann").answer)
    monkeypatch.undo()
    assert any(VPN_CANARY in a for a in answers) and any(CHAT_CANARY in a for a in answers)
    return [q for q, _ in questions] + [QUESTION_CANARY, *CANARIES] + [a for a in answers if a]


def text_in_traces(app: Clearance, texts: Sequence[str]) -> list[str]:
    """Every one of ``texts`` found anywhere in the stored traces (the helper of invariant 10)."""
    stored = raw_traces(app)
    return [t for t in texts if t and t in stored]


def test_invariant_10_traces_contain_no_text_by_default(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(provider=MockProvider(quote_first_source))

    forbidden = run_battery(app, monkeypatch)

    assert len(traces(app)) == 7
    assert text_in_traces(app, forbidden) == []


def test_invariant_10_reverse_proof_a_trace_that_records_the_question(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leaky variant — the question and the answer put in the record, and a writer that
    skips validation — must be caught by the same helper."""
    monkeypatch.setattr(record_module, "TraceWriter", NaiveWriter)
    real_ask = Orchestrator.ask

    def leaky_ask(
        self: Orchestrator, question: str, user_id: str, assistant: Any = None, **kwargs: Any
    ) -> Any:
        real_finish = self._finish_trace

        def finish(request: Any) -> None:
            real_finish(request)
            request.trace.question_text = request.question

        with monkeypatch.context() as m:
            m.setattr(self, "_finish_trace", finish)
            return real_ask(self, question, user_id, assistant, **kwargs)

    app = make_app(provider=MockProvider(quote_first_source))
    monkeypatch.setattr(Orchestrator, "ask", leaky_ask)
    with monkeypatch.context() as m:
        forbidden = run_battery(app, m)

    found = text_in_traces(app, forbidden)
    assert f"Where is the VPN portal {QUESTION_CANARY}1?" in found
    assert QUESTION_CANARY in found
