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
from clearance.answer.relevance import RelevanceGate, asked_clauses, told_then_asked
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
        ("I booked my time off. Thanks.", None),  # no sentence asks
        ("Up to 2.5 days? Or more?", None),  # the first sentence asks: no story
        # an abbreviation ends no sentence
        ("Which forms, e.g. the W-2, do I get?", None),
        # what follows the ask without asking is said about the answer, not asked
        (
            "I just became a manager. What am I responsible for when it comes to leave? "
            "A list is fine.",
            "What am I responsible for when it comes to leave?",
        ),
        # every sentence from the first that asks, with its question mark or without
        (
            "my mom is having major surgery and I'm out of leave. how do I sign up for VLTP? "
            "what are the steps",
            "how do I sign up for VLTP? what are the steps",
        ),
    ],
)
def test_the_ask_is_what_follows_the_story(question: str, asks: str | None) -> None:
    assert told_then_asked(question) == asks


@pytest.mark.parametrize(
    ("question", "clauses"),
    [
        (
            "how do I sign up for VLTP? what are the steps",
            ["how do I sign up for VLTP?", "what are the steps"],
        ),
        (
            "How far ahead do I put in leave requests, and since I'm billable, is HR Links "
            "the only place to record it?",
            ["How far ahead do I put in leave requests"],  # the second points back ("it")
        ),
        (
            "How far ahead do I put in leave requests, and since I'm billable, is HR Links "
            "the only place to record time off?",
            [
                "How far ahead do I put in leave requests",
                "is HR Links the only place to record time off?",
            ],
        ),
        ("Which benefits are reimbursable and are taxed?", []),  # one ask
    ],
)
def test_each_sentence_and_each_joined_question_is_an_ask(
    question: str, clauses: list[str]
) -> None:
    assert asked_clauses(question) == clauses


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
    monkeypatch.setattr(relevance_module, "told_then_asked", lambda question: None)
    monkeypatch.setattr(relevance_module, "asked_clauses", lambda question: [])
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


# A case of the TTS handbook probe: the story names what the page says (a funeral), the
# ask asks in words the pages never use ("charge … to my sick leave").
FUNERAL = (
    "My grandfather passed away last week and I'm helping plan the funeral. Can I charge "
    "that time to my sick leave, and how much of it can I use for this?"
)
BEREAVEMENT = (
    "You can use up to 13 days (104 hours) per year of your sick leave for bereavement, "
    "funeral planning, or attending the funeral."
)
# Statistics of a twelve-page handbook: the story's words and "charge" are in no chunk or
# in few; sick leave is everywhere.
HANDBOOK_DF = {"pass": 1, "last": 2, "funer": 3, "plan": 4, "help": 8, "sick": 14, "week": 16,
               "time": 22, "use": 30, "leav": 50}  # fmt: skip


def judge_bereavement(question: str, text: str = BEREAVEMENT) -> bool:
    gate = RelevanceGate(RelevanceSettings())
    reader = Scripted("never the same")  # every cosine 0.45: the words decide
    snippets = [snippet("S1", text, Sensitivity.INTERNAL)]
    stats = TermStatistics(200, HANDBOOK_DF)
    judged = gate.judge(question, snippets, lambda terms: stats, {"c-S1": 0.45}, None, reader)
    return judged[0].relevant


def test_the_story_a_passage_holds_counts_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ask alone holds too little of its weight (its "charge" is in no page); the
    story's funeral, which the passage holds, makes up for it. Reverse proof: a gate that
    weighs the ask alone refuses the page that answers."""
    assert judge_bereavement(FUNERAL)
    judge = RelevanceGate.judge

    def ask_alone(self: RelevanceGate, *args: object, **kwargs: object) -> object:
        return judge(self, *args[:6], **{k: v for k, v in kwargs.items() if k != "context"})

    monkeypatch.setattr(RelevanceGate, "judge", ask_alone)
    assert not judge_bereavement(FUNERAL)


def test_the_story_a_passage_lacks_takes_nothing_from_it() -> None:
    """The story only adds: a passage holding the ask's own words but none of the story's
    is judged on the ask, and one holding only the story's words is refused."""
    assert not judge_bereavement(FUNERAL, "Funeral planning for a grandfather last week.")
    assert not judge_bereavement(
        "My grandfather passed away last week. How many hours of jury duty can I claim?"
    )


@pytest.mark.parametrize(
    "opening",
    ["ugh, I think", "Hey, I guess", "ok so I wonder if", "what exactly"],
)
def test_interjections_and_hedges_weigh_nothing(opening: str) -> None:
    """ "ugh", "I think" and their kind are in no page, and weighed fully they sank the
    stolen-laptop steps for "ugh, I think my work laptop was stolen out of my car. what am
    I supposed to do?". Nor does an intensifier: "exactly" in "What exactly do I need to
    send, and to whom?" (TTS probe) was the ask's heaviest word and sank the paid
    parental leave page that lists what to send."""
    stats = TermStatistics(200, {"laptop": 6, "stolen": 2, "car": 1})
    weights = relevance_module.question_weights(
        f"{opening} my laptop was stolen from my car", lambda terms: stats
    )
    assert set(weights) == {"laptop", "stolen", "car"}


def test_reverse_proof_an_intensifier_weighed_is_the_heaviest_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reverse proof of the above: weighed as a word of the ask, "exactly" (in no page)
    outweighs what the ask is about."""
    stats = TermStatistics(200, {"send": 20, "birth": 20})
    question = "What exactly do I need to send before the birth?"
    assert "exact" not in relevance_module.question_weights(question, lambda terms: stats)
    monkeypatch.setattr(
        relevance_module,
        "_FUNCTION_WORDS",
        relevance_module._FUNCTION_WORDS - {"exact", "exactli"},
    )
    weights = relevance_module.question_weights(question, lambda terms: stats)
    assert max(weights, key=weights.__getitem__) == "exact", weights


TERMINAL = (
    "Terminal annual leave means the employee earns leave, while on leave, even though it "
    "is known that he/she will be separated."
)


def test_a_quoted_phrase_is_what_the_question_asks_about(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "Someone brought up 'terminal annual leave' at my retirement planning meeting. What
    does that actually mean?" (federal probe): the ask points back, and the story's words
    (someone, brought, retirement, planning) outweighed the term asked about. A phrase the
    question quotes is judged as an ask of its own. Reverse proof: without it, refused."""
    question = (
        "Someone brought up 'terminal annual leave' at my retirement planning meeting. "
        "What does that actually mean?"
    )
    assert relevance_module._QUOTED.findall(question) == ["terminal annual leave"]
    assert relevance_module._QUOTED.findall("Don't quote me, it's the employee's") == []
    stats = TermStatistics(200, {"termin": 2, "annual": 30, "leav": 120, "plan": 8, "meet": 9})

    def judged() -> bool:
        gate = RelevanceGate(RelevanceSettings())
        snippets = [snippet("S1", TERMINAL, Sensitivity.INTERNAL)]
        out = gate.judge(
            question, snippets, lambda terms: stats, {"c-S1": 0.45}, None, Scripted("never")
        )
        return out[0].relevant

    assert judged()
    monkeypatch.setattr(relevance_module, "_QUOTED", re.compile(r"(?!x)x"))
    assert not judged()


def test_a_sentence_that_asks_nothing_is_never_judged_alone() -> None:
    """ "What is the telework policy? My manager is in Denver.": the second sentence is said,
    not asked, and alone it made a passage on the Denver office manager relevant. At most
    four asks of a question are judged alone (each is an embedder call)."""
    assert (
        relevance_module.asked_clauses("What is the telework policy? My manager is in Denver.")
        == []
    )
    assert relevance_module.asked_clauses("I booked my time off. Thanks.") == []
    assert relevance_module.asked_clauses(" . ? !") == []
    many = " ".join(f"What is rule {n}?" for n in range(70))
    assert len(relevance_module.asked_clauses(many)) == 4
