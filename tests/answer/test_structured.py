"""The structured tool (clearance.answer.structured): found / not_found / unrecognized_param,
rendered from fact values and provenance alone (docs/design.md §5, invariants 6, 8 and 11)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import clearance.answer.structured as structured_module
import factories
from clearance.answer.intent import MetricQuery, parse_intent
from clearance.answer.result import Citation
from clearance.answer.structured import (
    ToolResult,
    asks_for_rate,
    comparison,
    query_metric,
    render,
    render_found,
    render_multi,
    render_not_found,
    render_unrecognized,
    run_multi,
    written_amount,
)
from clearance.config import settings_from_dict
from clearance.model import Document, Fact, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

VOCAB = settings_from_dict(
    {
        "facts": {
            "metrics": {
                "revenue": ["revenue", "売上高"],
                "operating_profit": ["operating profit"],
                "headcount": ["headcount"],
            },
            "entities": {"ACME Japan": ["Japan", "日本"], "ACME US": ["US", "米国"]},
            "channels": {"budget": ["budget"]},
        }
    }
).facts
AUTHORITY = {"public": 1, "ops": 3}
NOW = datetime(2026, 1, 1, tzinfo=UTC)
READER = SearchFilter(frozenset({"group:staff"}), now=NOW)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def document(doc_id: str, title: str, **fields: Any) -> Document:
    """Readable by ``group:staff``, in corpus ``public``, unless ``fields`` say otherwise."""
    fields = {"corpus": "public", "acl": frozenset({"group:staff"}), **fields}
    return factories.document(doc_id, title=title, uri=f"https://example.test/{title}", **fields)


def fact(doc_id: str, value: float, locator: str, **kw: str) -> Fact:
    slots = {
        "entity": "ACME Japan",
        "period": "FY2024",
        "metric": "revenue",
        "channel": "total",
        "unit": "USD m",
    }
    slots.update(kw)
    return Fact(value=value, doc_id=doc_id, locator=locator, raw=str(value), **slots)


def put(store: SQLiteStore, doc: Document, *facts: Fact) -> None:
    store.upsert(doc, [factories.chunk(doc, "x", locator="page=1")], facts=list(facts))


DECK = "slide=2,table=1,row=Revenue,col=FY2024"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "facts.db") as db:
        put(
            db,
            document("files:deck", "results_fy2024.pptx"),
            fact("files:deck", 1320.0, DECK),
            fact("files:deck", 1400.0, "slide=2,table=1,row=Revenue,col=FY2025", period="FY2025"),
            fact("files:deck", 210.5, "slide=3,table=1,row=US,col=FY2024", entity="ACME US"),
        )
        yield db


def lookup(store: SQLiteStore, flt: SearchFilter = READER, **kw: Any) -> ToolResult:
    params: dict[str, Any] = {"metric": "revenue", "entity": "ACME Japan", "period": "FY2024"}
    params.update(kw)
    return query_metric(store, flt, vocab=VOCAB, authority=AUTHORITY, **params)


def numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def digits(text: str) -> set[str]:
    return set(re.findall(r"\d", text))


# --------------------------------------------------------------------------- found


def test_found_renders_exactly_from_the_fact(store: SQLiteStore) -> None:
    result = lookup(store, period="2024年度")  # periods are canonicalised
    assert result.status == "found"
    assert result.query == MetricQuery("revenue", "ACME Japan", "FY2024", None)
    text, citations = render_found(result)
    # one sentence in words; the locator is the citation's, never the sentence's
    assert text == "ACME Japan's revenue in FY2024 was USD 1,320 m [S1]."
    assert "slide=" not in text and "results_fy2024.pptx" not in text
    assert citations == [
        Citation(
            "files:deck", "results_fy2024.pptx", DECK, "https://example.test/results_fy2024.pptx"
        )
    ]


def test_found_path_discards_fabricated_extra_number(store: SQLiteStore) -> None:
    result = lookup(store)
    prose = "ACME Japan's revenue was about 9,999 USD m, up 12.5% on the year."
    text, citations = render_found(result, model_prose=prose)
    same, _ = render(result, model_prose=prose)
    assert text == same == render_found(result)[0]
    assert "9,999" not in text and "9999" not in text and "12.5" not in text
    # every number in the answer is a fact value or part of the fact's provenance
    fact_, doc = result.facts[0]
    allowed = numbers(f"{fact_.value:,.0f} {fact_.locator} {doc.title} {fact_.period}")
    assert numbers(text) <= allowed
    assert [c.doc_id for c in citations] == ["files:deck"]


def test_decimals_only_when_the_value_has_them(store: SQLiteStore) -> None:
    text, _ = render_found(lookup(store, entity="ACME US"))
    assert text == "ACME US's revenue in FY2024 was USD 210.5 m [S1]."


def test_most_authoritative_then_most_recent_source_answers_and_disagreement_is_shown(
    store: SQLiteStore,
) -> None:
    old = datetime(2025, 1, 1, tzinfo=UTC)
    new = datetime(2025, 6, 1, tzinfo=UTC)
    put(
        store,
        document("files:kpi-old", "KPI old", corpus="ops", updated_at=old),
        fact("files:kpi-old", 1310.0, "sheet=KPI,range=A1:C4,row=Japan,col=FY2024"),
    )
    put(
        store,
        document("files:kpi", "KPI", corpus="ops", updated_at=new),
        fact("files:kpi", 1320.0, "sheet=KPI,range=A1:C4,row=Japan,col=FY2024"),
    )
    result = lookup(store)
    assert [d.doc_id for _, d in result.facts] == ["files:kpi", "files:kpi-old", "files:deck"]
    text, citations = render_found(result)
    assert text.splitlines() == [
        "ACME Japan's revenue in FY2024 was USD 1,320 m [S1].",
        "Another source reports USD 1,310 m [S2].",
    ]  # the deck agrees with the answer: no extra line
    assert [c.doc_id for c in citations] == ["files:kpi", "files:kpi-old"]


def test_channel_is_named_when_not_the_default(store: SQLiteStore) -> None:
    put(
        store,
        document("files:budget", "Budget"),
        fact("files:budget", 1500.0, "row=Revenue,col=FY2024 budget", channel="budget"),
    )
    result = lookup(store, channel="budget")
    assert (
        render_found(result)[0] == "ACME Japan's revenue (budget) in FY2024 was USD 1,500 m [S1]."
    )
    assert lookup(store, channel="total").facts == lookup(store).facts


@pytest.mark.parametrize(
    ("number", "unit", "said"),
    [
        ("61.2", "USD m", "USD 61.2 m"),
        ("3,413", "USD bn", "USD 3,413 bn"),
        ("205,489", "$ in millions", "$205,489 million"),
        ("-45", "EUR m", "-EUR 45 m"),
        ("12.5", "%", "12.5%"),
        ("1,362", "people", "1,362 people"),
        ("2,600", "百万円", "2,600 百万円"),
        ("7", "", "7"),
    ],
)
def test_an_amount_is_said_as_a_reader_says_it(number: str, unit: str, said: str) -> None:
    assert written_amount(number, unit) == said


def test_a_figure_sentence_keeps_its_partial_period_its_verb_and_its_language(
    store: SQLiteStore,
) -> None:
    """The case of issue 22: "ACME Japan's operating profit in FY2025 was USD 61.2 m." —
    a partial period keeps its label, a plural metric takes "were", and a metric named in
    Japanese is not wrapped in English grammar; no locator appears in any of them."""
    locator = "section=Results,table=1,row=Operating profit,col=FY2025"
    cases = [
        (
            fact("files:deck", 61.2, locator, metric="operating_profit", period="FY2025"),
            "ACME Japan's operating profit in FY2025 was USD 61.2 m [S1].",
        ),
        (
            fact(
                "files:deck",
                3413.0,
                "row=Receipts,col=Actual, Oct–Jun FY2023",
                entity="United States Federal Budget",
                metric="receipts",
                period="Oct–Jun FY2023",
                unit="USD bn",
            ),
            "United States Federal Budget's receipts in Oct–Jun FY2023 (part of FY2023 only) "
            "were USD 3,413 bn [S1].",
        ),
        (
            fact(
                "files:deck",
                2600.0,
                "sheet=連結業績,row=売上高,col=通期",
                metric="売上高",
                period="FY2025",
                unit="百万円",
            ),
            "ACME Japan FY2025 売上高: 2,600 百万円 [S1]",
        ),
    ]
    doc = store.get_document("files:deck")
    assert doc is not None
    for stored, sentence in cases:
        query = MetricQuery(stored.metric, stored.entity, stored.period)
        text, citations = render_found(ToolResult("found", query, ((stored, doc),)))
        assert text == sentence
        assert [c.locator for c in citations] == [stored.locator]
        assert "row=" not in text and "col=" not in text and "section=" not in text


# --------------------------------------------------------------------------- not found


def test_not_found_names_what_was_looked_for_without_inventing_digits(
    store: SQLiteStore,
) -> None:
    result = lookup(store, period="Q3 2025")
    assert result.status == "not_found"
    assert result.facts == ()
    text, citations = render(result, model_prose="It was probably 1,234.")
    assert text == "No figure found for revenue of ACME Japan in Q3 2025."
    assert text == render_not_found(result.query)
    assert citations == []
    assert digits(text) <= digits("Q3 2025")


def test_a_fact_you_may_not_read_is_indistinguishable_from_none(
    store: SQLiteStore,
) -> None:
    put(
        store,
        document("files:secret", "board pack", acl=frozenset({"group:board"})),
        fact("files:secret", 777.0, "slide=1", period="FY2026"),
    )
    put(
        store,
        document("files:restricted", "restricted", sensitivity=Sensitivity.RESTRICTED),
        fact("files:restricted", 888.0, "slide=1", period="FY2027"),
    )
    board = SearchFilter(frozenset({"group:board", "group:staff"}), now=NOW)
    assert lookup(store, board, period="FY2026").status == "found"
    hidden = lookup(store, period="FY2026")  # exists, but not for this reader
    absent = lookup(store, period="FY2029")  # does not exist at all
    assert (hidden.status, hidden.facts, hidden.problem) == ("not_found", (), None)
    assert render(hidden)[0] == render(absent)[0].replace("FY2029", "FY2026")
    assert render(hidden)[1] == render(absent)[1] == []
    # RESTRICTED never answers, whatever the filter says
    everything = SearchFilter(frozenset({"group:staff"}), max_sensitivity=Sensitivity.RESTRICTED)
    assert lookup(store, everything, period="FY2027").status == "not_found"


# --------------------------------------------------------------------------- unrecognised


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"metric": "profit"}, "unknown metric 'profit'"),
        ({"metric": None}, "no metric given"),
        ({"entity": "Japan"}, "unknown entity 'Japan'"),  # an alias is not a canonical name
        ({"entity": None}, "no entity given"),
        ({"period": "FY20245"}, "unrecognised period 'FY20245'"),
        ({"period": "FY2024 and FY2025"}, "unrecognised period 'FY2024 and FY2025'"),
        ({"period": None}, "no period given"),
        ({"channel": "retail"}, "unknown channel 'retail'"),
    ],
)
def test_unrecognized_params(store: SQLiteStore, params: dict[str, Any], problem: str) -> None:
    result = lookup(store, **params)
    assert result.status == "unrecognized_param"
    assert result.problem is not None and result.problem.startswith(problem)
    text, citations = render(result, model_prose="Maybe 5,000?")
    assert text == render_unrecognized(result)
    assert citations == []
    given = " ".join(str(v) for v in params.values() if v is not None)
    assert digits(text) <= digits(given)  # no digit the caller did not type


# --------------------------------------------------------------------------- multi


def test_run_multi_compares_two_periods(store: SQLiteStore) -> None:
    intent = parse_intent("Japan revenue FY2025 vs FY2024", VOCAB)
    assert intent.kind == "multi"
    text, citations, results = run_multi(
        store, READER, intent.parts, vocab=VOCAB, authority=AUTHORITY
    )
    assert [r.status for r in results] == ["found", "found"]
    assert text.splitlines() == [
        "ACME Japan's revenue in FY2025 was USD 1,400 m [S1].",
        "ACME Japan's revenue in FY2024 was USD 1,320 m [S2].",
        "FY2025 vs FY2024: up USD 80 m (+6.1%)",  # later minus earlier, whatever the order asked
    ]
    assert [c.locator for c in citations] == [
        "slide=2,table=1,row=Revenue,col=FY2025",
        DECK,
    ]
    # the derived numbers are the only ones not literally in a fact
    derived = {"80", "6.1"}
    facts_and_provenance = " ".join(
        f"{f.value:,.0f} {f.locator} {d.title}" for r in results for f, d in r.facts
    )
    assert numbers(text) - numbers(facts_and_provenance) == derived


def test_run_multi_compares_two_entities_and_reports_missing_parts(store: SQLiteStore) -> None:
    parts = parse_intent("日本と米国の2024年度の売上高", VOCAB).parts
    text, _, _ = run_multi(store, READER, parts, vocab=VOCAB, authority=AUTHORITY)
    assert text.splitlines()[-1] == "ACME US vs ACME Japan: down USD 1,109.5 m (-84.1%)"

    parts = (*parts, MetricQuery("revenue", "ACME US", "FY2025"))
    text, citations, results = run_multi(store, READER, parts, vocab=VOCAB, authority=AUTHORITY)
    assert [r.status for r in results] == ["found", "found", "not_found"]
    lines = text.splitlines()
    assert lines[2] == "No figure found for revenue of ACME US in FY2025."
    assert lines[3] == "ACME US vs ACME Japan: down USD 1,109.5 m (-84.1%)"  # still exactly two
    assert len(citations) == 2


def test_no_comparison_across_metrics_or_units(store: SQLiteStore) -> None:
    put(
        store,
        document("files:hc", "HC"),
        fact("files:hc", 1305.0, "row=Headcount", metric="headcount", unit="people"),
    )
    revenue, headcount = lookup(store), lookup(store, metric="headcount")
    assert comparison(revenue, headcount) is None
    text, _ = render_multi([revenue, headcount])
    assert " vs " not in text
    zero = ToolResult(
        "found",
        MetricQuery("revenue", "ACME Japan", "FY2023"),
        ((fact("files:deck", 0.0, "x", period="FY2023"), revenue.facts[0][1]),),
    )
    assert comparison(zero, revenue) == "FY2024 vs FY2023: up USD 1,320 m"  # no % of zero


def test_the_structured_module_calls_no_model() -> None:
    source = Path(structured_module.__file__).read_text(encoding="utf-8")
    imported = {
        node.module or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
    } | {
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not any(name.startswith(("clearance.llm", "httpx")) for name in imported)


# --------------------------------------------------------------------------- amount or rate


def test_a_percentage_printed_beside_the_amount_is_not_the_amount(tmp_path: Path) -> None:
    """A results table prints the change beside the figure under one heading (売上高
    百万円 | %): asked for 売上高, the amount answers, and the percentage is not shown as
    "another source"; asked for the change, the percentage answers."""
    with SQLiteStore(tmp_path / "rates.db") as db:
        put(
            db,
            document("files:tanshin", "tanshin.csv"),
            fact("files:tanshin", 4.1, "row=Q2,col=売上高(%)", unit="%"),
            fact("files:tanshin", 552763.0, "row=Q2,col=売上高(百万円)", unit="JPY m"),
        )
        amount = lookup(db)
        assert [(f.value, f.unit) for f, _ in amount.facts] == [(552763.0, "JPY m")]
        text, _ = render_found(amount)
        assert "552,763" in text and "4.1" not in text
        change = lookup(db, rate=True)
        assert [(f.value, f.unit) for f, _ in change.facts] == [(4.1, "%")]


def test_a_metric_stated_only_as_a_percentage_still_answers(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "margin.db") as db:
        put(
            db,
            document("files:deck", "margins.csv"),
            fact("files:deck", 12.5, "row=Margin,col=FY2024", unit="%"),
        )
        assert [f.value for f, _ in lookup(db).facts] == [12.5]


@pytest.mark.parametrize(
    ("question", "rate"),
    [
        ("2024年3月期第2四半期の売上高は?", False),
        ("売上高の前年同期比は?", True),
        ("What was revenue in FY2024?", False),
        ("By what percent did revenue grow in FY2024?", True),
        ("What was the operating margin?", True),
        ("比亚迪2023年营业收入同比增长多少?", True),
    ],
)
def test_a_question_asks_for_a_rate_only_in_words_that_say_so(question: str, rate: bool) -> None:
    assert asks_for_rate(question) is rate
