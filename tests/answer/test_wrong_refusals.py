"""Questions the demo refused although the caller may read what answers them (issue 22,
"Wrong refusals"), on the ACME demo corpus:

* a how-to question whose words the guide writes closed ("set up" / "Setup") and that ends
  on the asker's own circumstance ("… on my laptop");
* a question naming an out-of-scope entity that the caller's own material names (frank
  reads the Globex customer record). Scope is decided from readable material only: a
  caller who reads no Globex document gets the same refusal, byte for byte, whether or not
  hidden Globex documents exist, and a variant that consults every document is caught.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clearance.answer import relevance
from clearance.answer.orchestrator import OUT_OF_SCOPE, Orchestrator
from clearance.answer.relevance import RelevanceGate, question_weights
from clearance.answer.result import Status
from clearance.config import RelevanceSettings
from clearance.llm.base import Snippet
from clearance.llm.mock import MockProvider
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter, TermStatistics

from .conftest import ACME, AcmeIndex, build_index, clean_env, filtered_manifest, readable
from .test_invariants import all_principals, refusal_differences

VPN = "How do I set up the VPN on my laptop?"
VPN_GUIDE = "confluence:OPS-1102"


# --------------------------------------------------------------------------- how-to


@pytest.mark.parametrize("persona", ["alice", "grace"])
def test_the_vpn_guide_answers_how_to_set_up_the_vpn_on_a_laptop(
    acme: AcmeIndex, persona: str
) -> None:
    assert VPN_GUIDE in readable(persona)
    result = acme.app.ask(VPN, persona)
    assert result.status is Status.ANSWERED, result.to_dict()
    assert VPN_GUIDE in {c.doc_id for c in result.citations}
    assert "GlobalProtect" in result.answer


def test_the_gate_of_before_refuses_it(acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: a gate that takes "set up" and "Setup" for different words and weighs
    "laptop" like the topic refuses, as the demo did."""
    monkeypatch.setattr(relevance, "word_pairs", lambda text: [])
    monkeypatch.setattr(relevance, "_CIRCUMSTANCE_WEIGHT", 1.0)
    assert acme.app.ask(VPN, "alice").status is Status.NO_AUTHORIZED_SOURCE


def _snippet(title: str, text: str) -> Snippet:
    return Snippet("S1", "c#0", "d", title, "", "", text, Sensitivity.INTERNAL, "ops", "human")


@pytest.mark.parametrize(
    ("question", "title", "text"),
    [
        ("How do I set up the VPN?", "VPN Setup Guide", "Install the client."),
        ("How do I log in to the VPN portal?", "VPN", "Use the portal login page."),
        ("Where is the VPN setup page?", "VPN", "To set up the client, open the portal page."),
        ("Where is the e-mail archive?", "Email archive", "Only the records team."),
    ],
)
def test_a_word_written_closed_or_open_is_one_word(question: str, title: str, text: str) -> None:
    stats = TermStatistics(100, {})
    judged = RelevanceGate(RelevanceSettings(min_coverage=1.0)).judge(
        question, [_snippet(title, text)], lambda terms: stats
    )
    assert judged[0].coverage == pytest.approx(1.0), judged[0]


def test_the_askers_circumstance_weighs_half_unless_nothing_readable_holds_it() -> None:
    held = TermStatistics(100, {"laptop": 5, "vpn": 5, "set": 5, "up": 5})
    weights = question_weights(VPN, lambda terms: held)
    assert weights["laptop"] == pytest.approx(held.idf("laptop") / 2)
    assert weights["vpn"] == pytest.approx(held.idf("vpn"))
    # A word no readable chunk holds still counts fully against every snippet: a question
    # about a hidden document is not answered from passages sharing its other words.
    unseen = TermStatistics(100, {"vpn": 5, "set": 5, "up": 5})
    assert question_weights(VPN, lambda terms: unseen)["laptop"] == pytest.approx(
        unseen.idf("laptop")
    )
    # Only a closing phrase of the asker's own: "in Tokyo" names what is asked about.
    tokyo = question_weights("What is the hotel limit in Tokyo?", lambda terms: held)
    assert tokyo["tokyo"] == pytest.approx(held.idf("tokyo"))


# --------------------------------------------------------------------------- scope

GLOBEX = "Why did the gateways at Globex go offline?"
#: Every document that names Globex (checked below against the gate).
GLOBEX_DOCS: dict[str, str] = {
    "slack:C06GLOBEX01-2026-10": "dept/support/slack-connect-globex-2026-10.txt",
    "sharepoint:cust-us-0107": "customers/us/cust-us-0107-globex-manufacturing.md",
    "sharepoint:cust-renewals-2026": "customers/renewals-tracker-2026.xlsx",
    "gdrive:sales-us-0001": "dept/sales/us/territory-plan-fy2026.csv",
    "sharepoint:legal-2026-014": "sensitive/legal/litigation-hold-globex-2026.md",
    "sharepoint:board-2026-06-minutes": "sensitive/board/board-minutes-2026-06-ja.md",
}
#: Personas who may read no Globex document.
OUTSIDERS = ("alice", "carol", "dave", "grace", "ines", "jun")


@pytest.fixture(scope="module")
def acme_without_globex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    """The demo corpus without any document that names Globex."""
    root = tmp_path_factory.mktemp("acme-without-globex")
    manifest = filtered_manifest(root / "manifest.jsonl", GLOBEX_DOCS.values())
    with clean_env():
        index = build_index(root / "index", manifest)
        try:
            assert not set(GLOBEX_DOCS) & set(index.doc_ids())
            yield index
        finally:
            index.app.close()


def test_the_globex_documents_are_all_there_are(acme: AcmeIndex) -> None:
    gate = acme.orchestrator(MockProvider()).ctx.scope
    titles = {d.doc_id: d.title for d in acme.app.store.list_documents()}
    naming = {
        doc_id
        for doc_id in acme.doc_ids()
        for chunk in acme.chunks(doc_id)
        if "Globex" in gate.check(f"{titles[doc_id]}\n{chunk.text}").entities
    }
    assert naming == set(GLOBEX_DOCS)
    for persona in OUTSIDERS:
        assert not set(GLOBEX_DOCS) & readable(persona)


def test_a_support_agent_may_ask_about_the_customer_he_may_read(acme: AcmeIndex) -> None:
    assert "sharepoint:cust-us-0107" in readable("frank")
    result = acme.app.ask(GLOBEX, "frank")
    assert result.status is Status.ANSWERED, result.to_dict()
    assert {c.doc_id for c in result.citations} <= readable("frank")
    assert {c.doc_id for c in result.citations} & set(GLOBEX_DOCS)


def test_a_figure_about_the_customer_stays_refused(acme: AcmeIndex) -> None:
    result = acme.app.ask("What was Globex revenue in FY2025?", "frank")
    assert result.status is Status.OUT_OF_SCOPE_ENTITY


def test_whoever_reads_no_globex_document_gets_the_refusal_of_today(
    acme: AcmeIndex, acme_without_globex: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = OUT_OF_SCOPE.format(entities="Globex")
    questions = [GLOBEX, "What does the Globex Corporation customer record say?"]
    cases = [(persona, q) for persona in OUTSIDERS for q in questions]
    for persona, question in cases:
        result = acme.app.ask(question, persona)
        assert (result.status, result.answer) == (Status.OUT_OF_SCOPE_ENTITY, refusal)
        assert result.citations == ()
    assert refusal_differences(acme, acme_without_globex, cases) == []
    # frank's answer is the difference the hidden documents make, for the one who reads them
    assert refusal_differences(acme, acme_without_globex, [("frank", GLOBEX)]) != []

    # Reverse proof: deciding scope from every document, not the caller's, lets the hidden
    # documents' existence through, and the same comparison catches it.
    def everyones(self: Orchestrator, request: Any, readable: SearchFilter, entity: str) -> bool:
        everything = SearchFilter(
            principals=all_principals(self.runtime),
            corpora=None,
            max_sensitivity=Sensitivity.RESTRICTED,
            require_ai_allowed=False,
        )
        return bool(self.runtime.store.lexical_search(entity, everything, 1))

    monkeypatch.setattr(Orchestrator, "_named_in_readable", everyones)
    assert refusal_differences(acme, acme_without_globex, cases) != []


def test_the_demo_manifest_names_every_globex_document() -> None:
    manifest = (ACME / "manifest.jsonl").read_text(encoding="utf-8")
    assert all(f'"{path}"' in manifest for path in GLOBEX_DOCS.values())
