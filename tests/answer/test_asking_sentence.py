"""A question that first tells the asker's situation is judged on the sentence that asks.

A case of the Mattermost handbook trial (benchmarks/RESULTS.md), with its statistics.

People open with their story: "I've been here two years and I'm resigning. Do I have to pay
anything to keep my laptop?" The story's words (two years, resigning) held half the
question's weight and are not the policy's words, so the buy-back policy that answers was
refused. Where the whole question is refused, the relevance gate judges the asking sentence
alone, with its own weights and cosines (``RelevanceGate._judge_the_ask``). It only stands
against a refusal, and a question the pages do not answer stays refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

import clearance.answer.relevance as relevance_module
from clearance.answer.relevance import RelevanceGate, asking_sentence
from clearance.config import RelevanceSettings
from clearance.llm.base import Snippet
from clearance.model import Sensitivity
from clearance.store.base import TermStatistics

LAPTOP = "I've been here two years and I'm resigning. Do I have to pay anything to keep my laptop?"
BUY_BACK = (
    "If you have completed one calendar year or more with the company at the time of "
    "offboarding, you can keep your laptop at no cost; the company pays any payroll taxes."
)
NOT_IN_PAGES = "I just joined the company last week. Does it match what I put into my 401(k)?"


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        (LAPTOP, "Do I have to pay anything to keep my laptop?"),
        ("I'm new here! How do I book time off?", "How do I book time off?"),
        ("How do I book time off?", None),  # one sentence
        ("I booked my time off. Thanks.", None),  # the last sentence asks nothing
        ("Up to 2.5 days? Or more?", "Or more?"),
        # an abbreviation ends no sentence
        ("Which forms, e.g. the W-2, do I get?", None),
    ],
)
def test_the_asking_sentence_is_the_last_when_it_asks(question: str, asks: str | None) -> None:
    assert asking_sentence(question) == asks


# Statistics as in a handbook of 16 pages: the asker's story ("two years", "resigning") is
# in no chunk, so it weighs most; what is asked about is common.
DF = {"year": 12, "pay": 20, "keep": 9, "laptop": 6, "match": 3}


def statistics(terms: Sequence[str]) -> TermStatistics:
    return TermStatistics(200, {t: DF[t] for t in terms if t in DF})


class Scripted:
    """The embedder's similarity: the asking sentence alone is near the passage that
    answers it (0.62); the whole question, story and all, less so (0.45, as the hybrid
    search found), and so are its sentences."""

    def __init__(self, ask: str | None) -> None:
        self.ask = ask
        self.asked: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.asked.append(question)
        return [0.62 if question == self.ask else 0.45] * len(passages)


def judge_buy_back(question: str) -> tuple[bool, list[str]]:
    gate = RelevanceGate(RelevanceSettings())
    reader = Scripted(question.split(". ")[-1])
    snippets = [snippet("S1", BUY_BACK, Sensitivity.INTERNAL)]
    judged = gate.judge(question, snippets, statistics, {"c-S1": 0.45}, None, reader)
    return judged[0].relevant, reader.asked


def test_the_story_no_longer_outweighs_the_question() -> None:
    relevant, asked = judge_buy_back(LAPTOP)
    assert relevant
    assert "Do I have to pay anything to keep my laptop?" in asked


def test_judged_as_a_whole_the_story_question_was_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reverse proof: without the asking sentence's judgement the buy-back is refused."""
    monkeypatch.setattr(relevance_module, "asking_sentence", lambda question: None)
    relevant, _ = judge_buy_back(LAPTOP)
    assert not relevant


def test_a_story_question_the_pages_do_not_answer_stays_refused() -> None:
    """The asking sentence needs the passage to hold its words, as any question does."""
    relevant, _ = judge_buy_back(NOT_IN_PAGES)
    assert not relevant


class Recorder:
    """An embedder's similarity that records what it reads for the asking sentence and
    places it near; the whole question it places far, so only the asking sentence passes."""

    def __init__(self, ask: str) -> None:
        self.ask = ask
        self.shown: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        if question != self.ask:
            return [0.05] * len(passages)
        self.shown.extend(passages)
        return [0.9] * len(passages)


def snippet(ref: str, text: str, sensitivity: Sensitivity) -> Snippet:
    return Snippet(
        ref, f"c-{ref}", f"doc-{ref}", "Laptops", "", f"files:{ref}.md", text, sensitivity,
        "it", "human",
    )  # fmt: skip


def shown_restricted(gate: RelevanceGate) -> list[str]:
    """What the gate's reading of the asking sentence shows the embedder of a RESTRICTED
    snippet beside an internal one; empty when the guard holds."""
    recorder = Recorder("Can I keep my laptop?")
    snippets = [
        snippet("S1", "Keep your laptop: the severance dispute file.", Sensitivity.RESTRICTED),
        snippet("S2", "You can keep your laptop at no cost.", Sensitivity.INTERNAL),
    ]
    cosines = {s.chunk_id: 0.05 for s in snippets}  # the whole question: refused
    judged = gate.judge(
        "I am resigning after years here. Can I keep my laptop?",
        snippets,
        lambda terms: TermStatistics(100, {t: 5 for t in terms}),
        cosines,
        None,
        recorder,
    )
    assert judged[1].relevant, "the internal snippet must pass on the asking sentence"
    assert any("no cost" in p for p in recorder.shown)
    return [p for p in recorder.shown if "severance" in p]


def test_the_asking_sentence_never_shows_restricted_text_to_the_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = RelevanceGate(RelevanceSettings())
    assert shown_restricted(gate) == []
    # Reverse proof: a gate that forgets the sensitivity check shows it.
    monkeypatch.setattr(relevance_module, "is_restricted", lambda label: False)
    assert shown_restricted(gate) != []


# A case of the CivicActions trial: the story names the topic, the ask only points at it.
UPGRADE = (
    "I'd like to fly business class to the conference and pay the difference myself. "
    "Is that allowed?"
)
TIMESHEETS = "Labour that is not allowed under the contract is recorded as unallowable cost."


def judge_timesheets(question: str) -> bool:
    gate = RelevanceGate(RelevanceSettings())
    reader = Recorder(question.split(". ")[-1])
    snippets = [snippet("S1", TIMESHEETS, Sensitivity.INTERNAL)]
    cosines = {"c-S1": 0.05}  # the whole question is far from timekeeping: refused
    stats = TermStatistics(200, {"allow": 4, "busi": 20, "class": 3, "pay": 20, "differ": 6})
    judged = gate.judge(question, snippets, lambda terms: stats, cosines, None, reader)
    return judged[0].relevant


def test_an_ask_pointing_back_at_the_story_is_not_judged_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ask that points back at the story and names one thing only ("Is that allowed?")
    is not judged alone: alone, a timekeeping passage on allowable costs held all of it, and
    the upgrade question was answered from timesheets. One that names two things of its own
    still is. Reverse proof: without the rule, the timesheets pass."""
    assert not judge_timesheets(UPGRADE)
    assert judge_timesheets(
        "I'd like to fly business class to the conference. Is that allowed under the contract?"
    )
    monkeypatch.setattr(relevance_module, "_POINTS_BACK", re.compile(r"(?!)"))
    assert judge_timesheets(UPGRADE)
