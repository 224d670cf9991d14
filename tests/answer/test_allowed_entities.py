"""``[assistants.NAME] allow_entities``: a sales assistant may answer narrative questions
about a competitor from the organisation's own battlecard, in every spelling the scope gate
recognises, while figure questions about it are still refused at the scope gate. Through
any other assistant it is out of scope too, unless the caller may read a document that names
it (then it is the caller's own material)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from clearance.answer.orchestrator import Orchestrator
from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import AssistantSettings, ScopeSettings, settings_from_dict
from clearance.errors import ConfigError

from .conftest import AcmeIndex

BATTLECARD = "gdrive:sales-0002"
NARRATIVE = [
    "What is the list price of the Nimbus EdgeHub X?",
    "What is the list price of the N i m b u s EdgeHub X?",  # spaced
    "What is the list price of the Ｎｉｍｂｕｓ EdgeHub X?",  # full-width
    "What is the list price of the Nimbus Systems EdgeHub X?",  # alias
    "ニンバスの EdgeHub X の list price は？",  # alias in Japanese
]
FIGURES = [
    "What was Nimbus revenue in FY2025?",
    "What was N i m b u s revenue in FY2025?",
    "What was Ｎｉｍｂｕｓ Systems revenue in FY2025?",
]


@pytest.fixture
def app(acme: AcmeIndex) -> Iterator[Clearance]:
    """The demo index, with Nimbus configured as an external entity and a "sales"
    assistant allowed to answer narrative questions about it."""
    settings = acme.app.settings
    entities = {**settings.scope.entities, "Nimbus": ("Nimbus Systems", "ニンバス")}
    sales = AssistantSettings("sales", ("dept", "public"), allow_entities=("Nimbus",))
    settings = dataclasses.replace(
        settings,
        scope=ScopeSettings(entities=entities),
        assistants={**settings.assistants, "sales": sales},
    )
    yield Clearance(settings, acme.app.store, embedder=None)


def test_narrative_questions_about_an_allowed_entity_are_answered(app: Clearance) -> None:
    for question in NARRATIVE:
        result = app.ask(question, "bob", assistant="sales")
        assert result.status is Status.ANSWERED, (question, result.to_dict())
        assert BATTLECARD in {c.doc_id for c in result.citations}, question
        assert "1,190" in result.answer


def test_figure_questions_and_other_assistants_are_still_refused(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = [("bob", q, "sales") for q in FIGURES] + [
        # alice reads no document that names Nimbus: out of scope through any assistant
        ("alice", NARRATIVE[0], "general"),
        ("alice", NARRATIVE[0], None),
        ("alice", "Where do we win against Nimbus and Globex?", "sales"),  # Globex: not allowed
    ]
    for user, question, assistant in refused:
        result = app.ask(question, user, assistant=assistant)
        assert result.status is Status.OUT_OF_SCOPE_ENTITY, (question, result.to_dict())
        assert result.citations == ()

    # bob may read the battlecard, so Nimbus is in scope for his narrative questions through
    # any assistant that reaches it (an entity named in the caller's own material is in
    # scope); only the battlecard he may read is cited.
    for assistant in ("general", None):
        result = app.ask(NARRATIVE[0], "bob", assistant=assistant)
        assert result.status is Status.ANSWERED, result.to_dict()
        assert {c.doc_id for c in result.citations} == {BATTLECARD}

    # Reverse proof: an exception that forgot to tell figure questions apart lets them
    # through, and the same assertion catches it.
    def any_question(
        self: Orchestrator, request: object, access: object, name: object, entities: object
    ) -> bool:
        return name == "sales"

    monkeypatch.setattr(Orchestrator, "_allowed_narrative", any_question)
    leaky = Clearance(app.settings, app.store, embedder=None)
    statuses = {leaky.ask(q, "bob", assistant="sales").status for q in FIGURES}
    assert Status.OUT_OF_SCOPE_ENTITY not in statuses


def test_allow_entities_must_name_a_configured_entity() -> None:
    data = {
        "corpora": {"ops": {}},
        "scope": {"entities": {"Nimbus": []}},
        "assistants": {"sales": {"corpora": ["ops"], "allow_entities": ["Nimbsu"]}},
    }
    with pytest.raises(ConfigError, match=r"assistants\.sales\.allow_entities: 'Nimbsu'"):
        settings_from_dict(data)
    data["assistants"]["sales"]["allow_entities"] = ["Nimbus"]  # type: ignore[index]
    assert settings_from_dict(data).assistants["sales"].allow_entities == ("Nimbus",)
