"""A long question is searched and judged on the sentence that asks (answer/focus.py)."""

from __future__ import annotations

import pytest

from clearance.answer import focus as focus_module
from clearance.answer.focus import MIN_WORDS, question_focus
from clearance.answer.result import Status

from .conftest import AcmeIndex

PREAMBLE = (
    "I am preparing a briefing for a customer workshop next month and I want to be "
    "completely sure that I quote the right list price, because last time somebody used an "
    "outdated slide and it caused a lot of confusion with the procurement team, who then "
    "had to re-issue the purchase order twice. "
)
PLAIN = "How much does one Sentinel S4 gateway cost?"


@pytest.mark.parametrize(
    ("question", "focus"),
    [
        # short questions, and single long sentences, are read whole
        (PLAIN, PLAIN),
        (
            "We opened Osaka in 2025. What did it cost?",
            "We opened Osaka in 2025. What did it cost?",
        ),
        (" ".join(["word"] * (MIN_WORDS + 5)) + "?", " ".join(["word"] * (MIN_WORDS + 5)) + "?"),
        # the asking sentence of a long question, its lead-in dropped
        (PREAMBLE + PLAIN, PLAIN),
        (PREAMBLE + "So, plainly: " + PLAIN.lower(), PLAIN.lower()),
        (PLAIN + " " + PREAMBLE, PLAIN),
        # a focus naming too little borrows the sentences before it
        (
            PREAMBLE + "The gateway in question is the Sentinel S4. How much does it cost?",
            "The gateway in question is the Sentinel S4. How much does it cost?",
        ),
        # two topic words are enough to search on
        (PREAMBLE + "How many weeks is the sabbatical?", "How many weeks is the sabbatical?"),
        # no question mark anywhere: the last sentence
        (PREAMBLE + "Tell me the Sentinel S4 list price.", "Tell me the Sentinel S4 list price."),
        # a decimal point or a version number does not end a sentence
        (
            PREAMBLE + "Is version 2.5 of the Fleetboard connector supported?",
            "Is version 2.5 of the Fleetboard connector supported?",
        ),
        # Japanese, with spaces around a product name
        (
            "来月のお客様向けワークショップの資料を準備しています。前回は古いスライドが使われて"
            "購買部門が混乱し、発注書を二度も出し直すことになりました。今回は正しい価格を"
            "必ず伝えたいので、念のため確認させてください。 Fleetboard の担当者にも共有する予定です。"
            "Sentinel S4 の価格はいくらですか？",
            "Sentinel S4 の価格はいくらですか？",
        ),
        # Japanese
        (
            "来月のお客様向けワークショップの資料を準備しています。前回は古いスライドが使われて"
            "購買部門が混乱し、発注書を二度も出し直すことになりました。今回は正しい価格を"
            "必ず伝えたいので、念のため確認させてください。担当者にも共有する予定です。"
            "Sentinel S4 の価格はいくらですか？",
            "Sentinel S4 の価格はいくらですか？",
        ),
    ],
)
def test_the_focus_is_the_sentence_that_asks(question: str, focus: str) -> None:
    assert question_focus(question) == focus


def test_a_padded_question_is_answered_as_the_plain_one_is(
    acme: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    padded = PREAMBLE * 3 + "So, plainly: " + PLAIN.lower()
    plain = acme.app.ask(PLAIN, "alice", assistant="public")
    asked = acme.app.ask(padded, "alice", assistant="public")
    assert plain.status is Status.ANSWERED
    assert asked.status is Status.ANSWERED
    assert {c.doc_id for c in asked.citations} == {c.doc_id for c in plain.citations}
    # the demo's vocabulary holds "cost" and "price" as one: the price is what is quoted
    assert "USD 1,480" in asked.answer
    # Reverse proof: read whole, the preamble's words dilute the question and the
    # relevance gate refuses what the plain question is answered from.
    monkeypatch.setattr("clearance.answer.orchestrator.question_focus", lambda question: question)
    assert focus_module.question_focus(padded) != padded
    whole = acme.app.ask(padded, "alice", assistant="public")
    assert whole.status is Status.NO_AUTHORIZED_SOURCE
