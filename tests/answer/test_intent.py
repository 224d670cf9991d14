"""The deterministic metric-question parser (clearance.answer.intent), English and Japanese."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from clearance.answer.intent import (
    Intent,
    IntentParser,
    MetricQuery,
    RuleIntentParser,
    parse_intent,
)
from clearance.config import settings_from_dict

FACTS: dict[str, Any] = {
    "metrics": {
        "revenue": ["revenue", "sales revenue", "売上高", "売上"],
        "operating_profit": ["operating profit", "営業利益"],
        "headcount": ["headcount", "employees", "employ", "従業員数"],
    },
    "entities": {
        "ACME Japan": ["Japan", "日本"],
        "ACME US": ["US", "USA", "米国"],
        "ACME EU": ["EU", "Europe", "欧州"],
    },
    "channels": {"budget": ["budget", "予算"]},
}
VOCAB = settings_from_dict({"facts": FACTS}).facts


def q(
    metric: str | None, entity: str | None, period: str | None, channel: str | None = None
) -> MetricQuery:
    return MetricQuery(metric, entity, period, channel)


CASES: list[tuple[str, str, tuple[MetricQuery, ...]]] = [
    (
        "What was ACME Japan's revenue in FY2024?",
        "metric",
        (q("revenue", "ACME Japan", "FY2024"),),
    ),
    ("ACME Japanの2024年度の売上高は？", "metric", (q("revenue", "ACME Japan", "FY2024"),)),
    (
        "How many people did we employ in the US in FY2025?",
        "metric",
        (q("headcount", "ACME US", "FY2025"),),
    ),
    ("欧州の2025年度第3四半期の営業利益", "metric", (q("operating_profit", "ACME EU", "Q3 2025"),)),
    ("ＦＹ２０２４の米国の従業員数", "metric", (q("headcount", "ACME US", "FY2024"),)),
    (
        "Japan revenue budget for fiscal year 2026",
        "metric",
        (q("revenue", "ACME Japan", "FY2026", "budget"),),
    ),
    (
        "revenue of Japan and US in FY2024",
        "multi",
        (q("revenue", "ACME Japan", "FY2024"), q("revenue", "ACME US", "FY2024")),
    ),
    (
        "日本と米国の2024年度の売上高",
        "multi",
        (q("revenue", "ACME Japan", "FY2024"), q("revenue", "ACME US", "FY2024")),
    ),
    (
        "EU revenue FY2023 vs FY2024",
        "multi",
        (q("revenue", "ACME EU", "FY2023"), q("revenue", "ACME EU", "FY2024")),
    ),
    (
        "Compare US operating profit between FY2024 and FY2025",
        "multi",
        (q("operating_profit", "ACME US", "FY2024"), q("operating_profit", "ACME US", "FY2025")),
    ),
    (
        "2024年度と2025年度の日本の営業利益を比較して",
        "multi",
        (
            q("operating_profit", "ACME Japan", "FY2024"),
            q("operating_profit", "ACME Japan", "FY2025"),
        ),
    ),
    (
        "Revenue and headcount of Europe in FY2025",
        "multi",
        (q("revenue", "ACME EU", "FY2025"), q("headcount", "ACME EU", "FY2025")),
    ),
    # a metric question missing a slot stays "metric", with None in that slot
    ("What was our revenue in FY2024?", "metric", (q("revenue", None, "FY2024"),)),
    ("米国の売上高は？", "metric", (q("revenue", "ACME US", None),)),
    # no metric: narrative
    ("What is the travel policy for Japan?", "narrative", ()),
    ("経費精算の締め日はいつですか", "narrative", ()),
]


@pytest.mark.parametrize(("question", "kind", "parts"), CASES, ids=[c[0] for c in CASES])
def test_questions(question: str, kind: str, parts: tuple[MetricQuery, ...]) -> None:
    intent = parse_intent(question, VOCAB)
    assert intent.kind == kind
    assert intent.parts == parts
    assert intent.unrecognized == ()


def test_slots_present() -> None:
    assert parse_intent("What is the travel policy?", VOCAB).slots_present is False
    assert parse_intent("travel policy for Japan", VOCAB).slots_present is True  # entity
    assert parse_intent("what changed in FY2024", VOCAB).slots_present is True  # period
    assert parse_intent("revenue recognition rules", VOCAB).slots_present is True  # metric
    assert parse_intent("what changed in FY20245", VOCAB).slots_present is True  # malformed
    assert parse_intent("Tell us about the holiday calendar", VOCAB).slots_present is False


@pytest.mark.parametrize(
    ("question", "bad"),
    [
        ("Japan revenue in FY20245", ("FY20245",)),
        ("US revenue Q5 2024", ("Q5 2024",)),
        ("日本の2024年度第5四半期の売上高", ("2024年度第5四半期",)),
        ("EU revenue FY245 and FY2024", ("FY245",)),
    ],
)
def test_malformed_periods_are_unrecognized(question: str, bad: tuple[str, ...]) -> None:
    intent = parse_intent(question, VOCAB)
    assert intent.unrecognized == bad
    assert intent.kind in ("metric", "multi")
    assert intent.slots_present


def test_malformed_period_leaves_the_period_slot_empty() -> None:
    intent = parse_intent("Japan revenue in FY20245", VOCAB)
    assert intent == Intent(
        "metric", (q("revenue", "ACME Japan", None),), True, ("FY20245",), names_left=False
    )


def test_the_parser_is_deterministic_and_swappable() -> None:
    parser = RuleIntentParser(VOCAB)
    assert isinstance(parser, IntentParser)
    question = "日本と米国の2024年度の売上高"
    assert parser.parse(question) == parser.parse(question) == parse_intent(question, VOCAB)

    class Fixed:
        def parse(self, question: str, *, today: date | None = None) -> Intent:
            return Intent("narrative", (), False)

    assert isinstance(Fixed(), IntentParser)


def test_no_vocabulary_means_narrative() -> None:
    empty = settings_from_dict({}).facts
    intent = parse_intent("What was Japan's revenue in FY2024?", empty)
    assert intent.kind == "narrative"
    assert intent.slots_present  # the period still counts as a slot


# --------------------------------------------------------------------------- composite

COMPOSITES = [
    # (question, narrative clause, what the narrative part searches for)
    (
        "How much was Japan revenue in FY2025, and why did Japan grow?",
        "why did Japan grow?",
        "why did Japan grow?",
    ),
    (
        "Why did Japan grow, and how much was Japan revenue in FY2025?",
        "Why did Japan grow",
        "Why did Japan grow",
    ),
    # The figure clause names no slot: they come from the whole question.
    (
        "Why did Japan revenue grow in FY2025 and how much was it?",
        "Why did Japan revenue grow in FY2025",
        "Why did Japan revenue grow in FY2025",
    ),
    # The explanation names no entity: it searches with the figure clause's.
    (
        "日本の2025年度の売上高はいくらで、なぜ伸びたのですか？",
        "なぜ伸びたのですか?",
        "なぜ伸びたのですか? 日本 売上高",
    ),
]


@pytest.mark.parametrize(("question", "narrative", "query"), COMPOSITES)
def test_a_figure_and_an_explanation_split_in_either_order(
    question: str, narrative: str, query: str
) -> None:
    intent = RuleIntentParser(VOCAB).parse(question)
    assert intent.kind == "composite"
    assert intent.parts == (q("revenue", "ACME Japan", "FY2025"),)
    assert (intent.narrative, intent.narrative_query) == (narrative, query)


@pytest.mark.parametrize(
    "question",
    [
        "Why did Japan revenue grow in FY2025?",  # no figure asked for
        "When will employees be informed, and how were they chosen?",  # no figure clause
    ],
)
def test_an_explanation_alone_is_not_composite(question: str) -> None:
    assert RuleIntentParser(VOCAB).parse(question).kind != "composite"


def test_a_part_named_beside_a_statement_line_is_the_line_s_part_not_a_second_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "How much revenue did Intelligent Cloud generate …?" where a goodwill table made
    "Intelligent Cloud" a metric of its own: two figures were looked up, and the company's
    whole revenue answered beside "no figure for Intelligent Cloud". The part is the line
    asked of revenue. Named side by side ("revenue and Intelligent Cloud"), or listed
    ("revenue headcount"), they are two figures still. Reverse proof: with the rule taken
    out (no name is a statement line), the question is two parts again."""
    from clearance.answer import intent as intent_module

    vocab = settings_from_dict(
        {"facts": {"metrics": {"revenue": ["revenue"], "intelligent cloud": ["intelligent cloud"]}}}
    ).facts
    asked = parse_intent("How much revenue did Intelligent Cloud generate in FY2023?", vocab)
    assert [(p.metric, p.qualifier) for p in asked.parts] == [("revenue", "intelligent cloud")]
    both = parse_intent("What were revenue and Intelligent Cloud in FY2023?", vocab)
    assert {p.metric for p in both.parts} == {"revenue", "intelligent cloud"}
    monkeypatch.setattr(intent_module.glossary, "line_name", lambda name: None)
    again = parse_intent("How much revenue did Intelligent Cloud generate in FY2023?", vocab)
    assert {p.metric for p in again.parts} == {"revenue", "intelligent cloud"}
