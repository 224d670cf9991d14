"""Inference kept apart from sourced fact in narrative answers (``[answer] inferred``).

A model's sentence that no snippet states — it cites none, or the model marked it
``[inferred]`` as the prompt asks — is dropped by default, or shown after the sourced answer
under :data:`~clearance.answer.orchestrator.INFERRED_LABEL`; never mixed in with what the
sources say. Either way a number absent from the snippets a sentence cites is never shown.
Each assertion has a reverse proof: a checker that mixes inferences in, or one that does
not verify their numbers, fails it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pytest

import clearance.answer.narrative as narrative_module
import clearance.answer.orchestrator as orchestrator_module
import clearance.answer.routes.narrative as narrative_route
from clearance.answer.narrative import CheckedAnswer, Sentence, check_answer
from clearance.answer.prompt import SYSTEM_PROMPT
from clearance.answer.result import AnswerResult, Status
from clearance.answer.routes.narrative import INFERRED_LABEL
from clearance.app import Clearance
from clearance.llm.base import ChatRequest, Snippet
from clearance.llm.mock import MockProvider

from .conftest import AcmeIndex
from .test_invariants import NARRATIVE_QUESTIONS, narrative_number_violations

QUESTION = NARRATIVE_QUESTIONS[0][1]  # alice: support hours for Standard plan customers
SOURCED = "Enterprise customers have 24/7 telephone support."
UNCITED = "Support staff are probably spread over several time zones."
MARKED = "Standard plan customers likely wait longer for an answer at night."
INVENTED = "Enterprise customers probably open 9,999 tickets a year."
INFERENCES = (UNCITED, MARKED)


def support_ref(request: ChatRequest) -> str:
    return next(s.ref for s in request.snippets if "24/7 telephone support" in s.text)


def mixed(request: ChatRequest) -> str:
    """A cited sentence, an uncited one, one marked inferred (cited), and a marked one
    with a number in no snippet."""
    ref = support_ref(request)
    return f"{SOURCED} [{ref}] {UNCITED} [inferred] {MARKED} [{ref}] [inferred] {INVENTED} [{ref}]"


def only_inferences(request: ChatRequest) -> str:
    return f"{UNCITED} [inferred] {MARKED} [{support_ref(request)}]"


def with_mode(index: AcmeIndex, mode: str) -> Clearance:
    settings = index.app.settings
    answer = dataclasses.replace(settings.answer, inferred=mode)
    return Clearance(dataclasses.replace(settings, answer=answer), index.app.store, embedder=None)


def ask(app: Clearance, script: Callable[[ChatRequest], str]) -> AnswerResult:
    provider = MockProvider(script)
    return orchestrator_module.Orchestrator(app, provider=provider).ask(QUESTION, "alice")


def assert_inference_apart(result: AnswerResult) -> None:
    """No inference stands among the sourced sentences: each is either absent or after
    the label, and the label heads the last block of the answer."""
    sourced, label, inferred = result.answer.partition(INFERRED_LABEL)
    for sentence in INFERENCES:
        assert sentence not in sourced, f"inference shown as sourced fact: {sentence!r}"
    if label:
        assert sourced.endswith("\n\n") and INFERRED_LABEL not in inferred


def assert_no_invented_number(index: AcmeIndex, result: AnswerResult) -> None:
    assert "9,999" not in result.answer and "9999" not in result.answer
    assert narrative_number_violations(index, result) == []


def test_the_prompt_asks_the_model_to_mark_what_it_infers(acme: AcmeIndex) -> None:
    provider = MockProvider(mixed)
    orchestrator_module.Orchestrator(acme.app, provider=provider).ask(QUESTION, "alice")
    system = provider.requests[-1].messages[0]
    assert system.role == "system" and system.content == SYSTEM_PROMPT
    assert "begin it with [inferred]" in system.content
    assert "without a source label is treated as an inference" in system.content


def test_by_default_inferences_are_dropped(acme: AcmeIndex) -> None:
    result = ask(acme.app, mixed)
    assert acme.app.settings.answer.inferred == "drop"
    assert result.status is Status.ANSWERED
    assert SOURCED in result.answer
    assert_inference_apart(result)
    assert INFERRED_LABEL not in result.answer
    assert not any(s in result.answer for s in INFERENCES)
    assert "inferred_dropped:2" in result.flags
    assert_no_invented_number(acme, result)


def test_label_mode_shows_inferences_after_the_sourced_answer(acme: AcmeIndex) -> None:
    result = ask(with_mode(acme, "label"), mixed)
    assert result.status is Status.ANSWERED
    assert_inference_apart(result)
    sourced, _, inferred = result.answer.partition(INFERRED_LABEL)
    assert SOURCED in sourced
    assert f"\n- {UNCITED}\n- {MARKED} [S1]" == inferred
    assert "inferred_shown:2" in result.flags
    assert [c.doc_id for c in result.citations] == ["sharepoint:pub-0104"]
    assert_no_invented_number(acme, result)


@pytest.mark.parametrize("mode", ["drop", "label"])
def test_nothing_but_inference_is_the_fixed_refusal(acme: AcmeIndex, mode: str) -> None:
    result = ask(with_mode(acme, mode), only_inferences)
    assert result.status is Status.NO_AUTHORIZED_SOURCE
    assert result.answer == acme.app.settings.answer.no_source_message
    assert result.citations == () and result.flags == ()


@pytest.mark.parametrize("mode", ["drop", "label"])
def test_reverse_proof_inferences_mixed_in_unlabelled_are_caught(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A checker that passes inferences off as sourced sentences (giving the uncited one
    the first snippet) fails the same assertion."""

    def mixing(answer: str, snippets: Sequence[Snippet]) -> CheckedAnswer:
        checked = check_answer(answer, snippets)
        passed_off = tuple(Sentence(s.text, s.refs or (snippets[0].ref,)) for s in checked.inferred)
        return CheckedAnswer((*checked.sentences, *passed_off), checked.removed_for_numbers)

    monkeypatch.setattr(narrative_route, "check_answer", mixing)
    result = ask(with_mode(acme, mode), mixed)
    with pytest.raises(AssertionError, match="inference shown as sourced fact"):
        assert_inference_apart(result)


def test_reverse_proof_an_unverified_number_in_an_inference_is_caught(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checker that verifies no number lets the invented 9,999 into the labelled block;
    the same assertion catches it."""
    monkeypatch.setattr(narrative_module, "numbers_in", lambda text: set())
    result = ask(with_mode(acme, "label"), mixed)
    assert INVENTED in result.answer.partition(INFERRED_LABEL)[2]
    with pytest.raises(AssertionError):
        assert_no_invented_number(acme, result)
