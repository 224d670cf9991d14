"""The extractive provider reads a snippet's structure: headings are not quoted or glued to
the sentence after them, a table block is quoted as its header and matching rows one per
line, and a list is quoted whole. Each check runs once more against a variant with the
behaviour removed, to show the same assertion catches it."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import clearance.llm.extractive as extractive
from clearance.llm.base import ChatRequest, Snippet
from clearance.llm.extractive import ExtractiveProvider, is_line_unit
from clearance.model import Sensitivity

CLASS_OF_TRAVEL = (
    "2. Class of travel\n"
    "- Flights with a scheduled flight time under 6 hours: economy class.\n"
    "- 6 to 10 hours: premium economy.\n"
    "- Over 10 hours, or any flight for vice presidents and above: business class."
)
FLIGHTS = "Flights\nFlights under six hours are booked in economy class. Rail is second class."
CALENDAR = (
    "date | country | office | holiday\n"
    "2026-01-01 | JP | Tokyo / Osaka | New Year's Day\n"
    "2026-01-02 | JP | Tokyo / Osaka | Company year-end closure\n"
    "2026-01-01 | DE | Frankfurt | Neujahr\n"
    "2026-04-03 | DE | Frankfurt | Karfreitag (Good Friday)\n"
    "2026-12-25 | DE | Frankfurt | 1. Weihnachtstag"
)
CLOSURE = (
    "Office closures\n"
    "The office is closed on the following days:\n"
    "- 29 December\n"
    "- 30 December\n"
    "- 31 December\n"
    "Visitors are not received on those days."
)


def snippet(ref: str, text: str, locator: str = "page=1", title: str = "Doc") -> Snippet:
    return Snippet(
        ref=ref,
        chunk_id=f"chunk-{ref}",
        doc_id=f"files:{title}",
        title=title,
        locator=locator,
        uri=f"file:///docs/{ref}.md",
        text=text,
        sensitivity=Sensitivity.INTERNAL,
        corpus="ops",
        origin="human",
        trust="trusted",
    )


def answer(question: str, *snippets: Snippet) -> str:
    request = ChatRequest("answer", question, (), snippets)
    return ExtractiveProvider().complete(request).text


def quoted(text: str) -> list[tuple[str, str]]:
    """``"a [S1]\\nb [S2]"`` → ``[("a", "S1"), ("b", "S2")]``."""
    parts = re.split(r" \[(S\d+)\](?:\s|$)", text)
    assert parts[-1] == "", text
    return list(zip(parts[0:-1:2], parts[1:-1:2], strict=True))


def without(monkeypatch: pytest.MonkeyPatch, name: str, replacement: Callable[..., object]) -> None:
    monkeypatch.setattr(extractive, name, replacement)


# --------------------------------------------------------------------------- headings


def heading_checks(text: str) -> None:
    sentences = [s for s, _ in quoted(text)]
    assert "Class of travel" not in sentences and "2." not in sentences, text
    assert all(not s.startswith("Flights Flights") for s in sentences), text
    assert "Flights under six hours are booked in economy class." in sentences, text


def test_headings_are_neither_quoted_nor_glued_to_a_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    travel = snippet("S1", CLASS_OF_TRAVEL, "section=Global Travel Policy > 2. Class of travel")
    flights = snippet("S2", FLIGHTS, "page=4")  # a heading the locator does not name
    question = "Which class of travel for flights under six hours?"
    heading_checks(answer(question, travel, flights))
    # Reverse proof: with no heading recognised, the old answers come back.
    without(monkeypatch, "_headings", lambda snippet, lines: set())
    with pytest.raises(AssertionError):
        heading_checks(answer(question, travel, flights))


def test_a_one_line_snippet_is_content_not_a_heading() -> None:
    assert answer("parking rules", snippet("S1", "Parking rules apply")) == (
        "Parking rules apply [S1]"
    )


# --------------------------------------------------------------------------- tables


def table_checks(text: str) -> None:
    lines = text.split("\n")
    assert lines[0] == "date | country | office | holiday [S1]", text
    rows = [line.removesuffix(" [S1]") for line in lines[1:]]
    assert rows == [
        "2026-01-01 | DE | Frankfurt | Neujahr",
        "2026-04-03 | DE | Frankfurt | Karfreitag (Good Friday)",
        "2026-12-25 | DE | Frankfurt | 1. Weihnachtstag",
    ], text


def test_a_table_is_quoted_as_its_header_and_the_rows_of_the_named_category(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calendar = snippet("S1", CALENDAR, "rows=1-6", "Holiday calendar")
    question = "Which holidays does the Frankfurt office observe?"
    table_checks(answer(question, calendar))
    # Reverse proof: read as prose, the block is one run-on "sentence".
    monkeypatch.setattr(extractive, "_CELL", "\x00")
    with pytest.raises(AssertionError):
        table_checks(answer(question, calendar))


def test_rows_stored_alone_are_chosen_by_the_terms_that_tell_them_apart() -> None:
    heading = "section=Travel > 3. Hotel limits per night,table=1,row="
    rows = [
        snippet(f"S{i}", f"City: {city} | Limit: {limit}", heading + city, "Travel")
        for i, (city, limit) in enumerate(
            [("London", "GBP 230"), ("Paris", "EUR 210"), ("Frankfurt", "EUR 190")], start=1
        )
    ]
    assert answer("What is the hotel limit per night in Paris?", *rows) == (
        "City: Paris | Limit: EUR 210 [S2]"
    )
    every = answer("What are the hotel limits per night?", *rows)
    assert [s for s, _ in quoted(every)] == [
        "City: London | Limit: GBP 230",
        "City: Paris | Limit: EUR 210",
        "City: Frankfurt | Limit: EUR 190",
    ]
    assert every.count("\n") == 2  # one row per line


# --------------------------------------------------------------------------- lists


def list_checks(text: str) -> None:
    sentences = [s for s, _ in quoted(text)]
    assert sentences[:4] == [
        "The office is closed on the following days:",
        "- 29 December",
        "- 30 December",
        "- 31 December",
    ], text
    assert all(is_line_unit(s) for s in sentences[1:4])


def test_an_enumeration_is_quoted_whole_with_the_sentence_that_introduces_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closures = snippet("S1", CLOSURE, "section=Office > Office closures")
    question = "Which days is the office closed in December?"
    list_checks(answer(question, closures))
    # Reverse proof: quoting only the best-matching items leaves the list incomplete.
    without(monkeypatch, "_list_members", lambda units, group: [])
    with pytest.raises(AssertionError):
        list_checks(answer(question, closures))


def test_every_quote_is_still_verbatim_from_the_snippet_it_cites() -> None:
    snippets = (
        snippet("S1", CLASS_OF_TRAVEL, "section=Global Travel Policy > 2. Class of travel"),
        snippet("S2", CALENDAR, "rows=1-6", "Holiday calendar"),
        snippet("S3", CLOSURE, "section=Office > Office closures"),
        snippet("S4", FLIGHTS),
    )
    by_ref = {s.ref: s.text for s in snippets}
    for question in (
        "Which class of travel for flights?",
        "Which days is the Tokyo office closed?",
        "Which December days is the office closed?",
    ):
        for sentence, ref in quoted(answer(question, *snippets)):
            assert sentence in by_ref[ref]


# --------------------------------------------------------------------------- vocabulary

PRICE = (
    "The Sentinel S4 has been available since 3 February 2025. The list price is USD 1,480 "
    "per unit. Every unit carries a three-year hardware warranty."
)


def test_the_organisations_equivalents_are_matched_as_the_question_is() -> None:
    """ "What does it cost?" is answered by the sentence that states the price when the
    organisation's vocabulary says cost and price are one; without it, only the sentence
    sharing the question's own words is quoted."""
    question = "How much does the Sentinel S4 cost?"
    request = ChatRequest("answer", question, (), (snippet("S1", PRICE),), equivalents=("price",))
    with_vocabulary = [s for s, _ in quoted(ExtractiveProvider().complete(request).text)]
    assert "The list price is USD 1,480 per unit." in with_vocabulary
    plain = [s for s, _ in quoted(answer(question, snippet("S1", PRICE)))]
    assert plain == ["The Sentinel S4 has been available since 3 February 2025."]


LONG_FORMAT = (
    "component | category | subcategory | fiscal_year | actual_value\n"
    "revenue | Total | Total | 2008 | 2523.991\n"
    "revenue | Total | Total | 2009 | 2104.989\n"
    "revenue | Total | Total | 2010 | 2162.706"
)


def test_a_long_format_table_is_quoted_as_the_row_of_the_year_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Published data sets print one row per line and year ("revenue | Total | Total |
    2009 | 2104.989"): "revenue" and "Total" name every row's category, and the year asked
    tells the rows apart, so the answer is the header and the 2009 row, not the whole
    block. Reverse proof: without telling the named rows apart, every year is quoted."""
    question = "What were total federal revenues in fiscal year 2009?"
    block = snippet("S1", LONG_FORMAT, "rows=1-4")
    assert [s for s, _ in quoted(answer(question, block))] == [
        "component | category | subcategory | fiscal_year | actual_value",
        "revenue | Total | Total | 2009 | 2104.989",
    ]
    without(monkeypatch, "_telling_apart", lambda kept, held: kept)
    assert len(quoted(answer(question, block))) == 4


def test_rows_of_the_category_asked_without_the_year_asked_are_not_quoted() -> None:
    """ "What did customs duties raise in fiscal year 2025?" over a retrieved block holding
    customs duties for 1982 and 1983 only (and another line's 2025): quoting those years
    would answer another question, so nothing is quoted and the answer path refuses.
    Reverse proof: asked for 1983, that row is the answer."""
    block = snippet(
        "S1",
        "component | category | fiscal_year | actual_value\n"
        "revenue | Corporate Income Taxes | 2025 | 452.1\n"
        "revenue | Customs Duties | 1982 | 8.854\n"
        "revenue | Customs Duties | 1983 | 8.655",
        "rows=1-4",
    )
    assert quoted(answer("What did customs duties raise in fiscal year 2025?", block)) == []
    asked = [
        s for s, _ in quoted(answer("What did customs duties raise in fiscal year 1983?", block))
    ]
    assert asked[-1] == "revenue | Customs Duties | 1983 | 8.655" and len(asked) == 2, asked
