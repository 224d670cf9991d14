"""Figure questions over a quarterly filing's tables copied into Markdown as the filing
prints them, with **no** ``[facts]`` vocabulary (a new user's trial on a 10-Q):

* the scale is a note on the line above the table, "(in thousands, except per share data)",
  and a currency sign stands only on the first and total rows: every figure keeps the
  scale, a per-share figure does not take it, and a configured vocabulary that does not
  know the scale skips the table rather than give it the metric's default unit;
* a breakdown is introduced by a sentence ("The following table summarizes revenues by
  region for the three and six months ended …") and its rows carry acronyms ("Europe,
  Middle East, and Africa (EMEA)"): the rows are lines of revenues, asked by name or
  acronym, and a region no table holds is not found, never the company total;
* "Q2 2025" of a company whose fiscal year end no readable document states: the calendar
  quarter's span is offered, never assumed.

Every number an answer states is a stored fact's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clearance.answer.result import AnswerResult, Route, Status
from clearance.app import Clearance
from clearance.config import Settings, settings_from_dict
from clearance.ingest.facts import extract_facts, format_number
from clearance.ingest.loaders import extract
from clearance.store.sqlite import SQLiteStore

FILING = """# Streamco, Inc. — Form 10-Q for the quarter ended June 30, 2025 (extract)

Figures as published; unaudited.

## Condensed Consolidated Statements of Operations

(unaudited)
(in thousands, except per share data)

| | Three Months Ended June 30, 2025 | Three Months Ended June 30, 2024 | Six Months Ended June 30, 2025 | Six Months Ended June 30, 2024 |
|---|---|---|---|---|
| Revenues | $ 1,107,916 | $ 955,931 | $ 2,162,196 | $ 1,892,975 |
| Cost of revenues | 532,531 | 517,414 | 1,058,845 | 1,015,121 |
| Operating income | 377,469 | 260,283 | 712,169 | 523,537 |
| Diluted earnings per share | $ 7.19 | $ 4.88 | $ 13.84 | $ 10.16 |

## 2. Revenue Recognition

The following table summarizes revenues by region for the three and six months ended June 30, 2025 and June 30, 2024. Total revenues include hedging gains of $4 million.

(in thousands)

| | Three Months Ended June 30, 2025 | Three Months Ended June 30, 2024 | Six Months Ended June 30, 2025 | Six Months Ended June 30, 2024 |
|---|---|---|---|---|
| United States and Canada (UCAN) | $ 492,900 | $ 429,556 | $ 954,610 | $ 851,987 |
| Europe, Middle East, and Africa (EMEA) | 353,817 | 300,777 | 694,285 | 596,596 |
| Latin America (LATAM) | 130,673 | 120,414 | 256,866 | 236,915 |
| Asia-Pacific (APAC) | 130,526 | 105,184 | 256,435 | 207,477 |
| Total Revenues | $ 1,107,916 | $ 955,931 | $ 2,162,196 | $ 1,892,975 |
"""


SEGMENTS = """# The Procter & Gamble Company — segment results (extract)

Amounts in millions of dollars.

| | Three Months Ended March 31, 2025 | Nine Months Ended March 31, 2025 |
|---|---|---|
| Grooming net sales | 1,505 | 4,980 |
| Total net sales | 19,776 | 63,395 |
"""


@pytest.fixture
def filing(tmp_path: Path) -> Path:
    path = tmp_path / "finance" / "streamco-10q-q2-2025.md"
    path.parent.mkdir()
    path.write_text(FILING, encoding="utf-8")
    (path.parent / "pg-segments-q3-fy2025.md").write_text(SEGMENTS, encoding="utf-8")
    return path


@pytest.fixture
def app(
    filing: Path,
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    corpus = filing.parent
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    yield engine


def numbers_are_facts(engine: Clearance, answer: str, question: str) -> None:
    # the digits of every fact's value (a loss's sign stands before them)
    allowed = {format_number(abs(f.value)) for f in engine.store.list_facts()}
    text = re.sub(r"\[S\d+\]", " ", answer)
    for number in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        if re.fullmatch(r"(?:19|20)\d{2}|[1-9]", number) or number in question:
            continue
        assert number in allowed, (number, answer)


def ask(engine: Clearance, question: str, status: Status = Status.ANSWERED) -> str:
    result = engine.ask(question, "fay")
    assert result.status is status, (question, result.status, result.answer)
    numbers_are_facts(engine, result.answer, question)
    return result.answer


# --------------------------------------------------------------------------- ingest


def test_the_note_above_a_table_opens_each_row_and_is_its_caption(filing: Path) -> None:
    rows = [s for s in extract(filing, max_chars=1500).sections if s.table]
    first, region = rows[0], rows[4]
    assert first.text.startswith("(unaudited)\n(in thousands, except per share data)\nRevenues |")
    assert first.captions == ("(in thousands, except per share data)", "(unaudited)")
    assert region.text.startswith("(in thousands)\nUnited States and Canada (UCAN) |")
    assert region.captions == (
        "(in thousands)",
        "The following table summarizes revenues by region for the three and six months"
        " ended June 30, 2025 and June 30, 2024.",
    )


def test_every_figure_keeps_the_scale_the_note_writes(app: Clearance) -> None:
    by = {(f.metric, f.channel, f.period): f for f in app.store.list_facts()}
    revenue = by[("revenues", "total", "3M ended Jun 2025")]
    assert (revenue.value, revenue.unit) == (1107916, "$ in thousands")
    cost = by[("cost of revenues", "total", "3M ended Jun 2025")]
    assert (cost.value, cost.unit) == (532531, "in thousands")
    # "except per share data": a per-share figure is in dollars, not thousands of them
    eps = by[("diluted earnings per share", "total", "6M ended Jun 2025")]
    assert (eps.value, eps.unit) == (13.84, "$")


def test_a_breakdown_a_sentence_introduces_is_lines_of_its_measure(app: Clearance) -> None:
    regions = {
        f.channel: f.value
        for f in app.store.list_facts()
        if f.metric == "revenues" and f.period == "3M ended Jun 2025"
    }
    assert regions == {
        "total": 1107916,
        "United States and Canada (UCAN)": 492900,
        "Europe, Middle East, and Africa (EMEA)": 353817,
        "Latin America (LATAM)": 130673,
        "Asia-Pacific (APAC)": 130526,
    }


def test_a_configured_vocabulary_skips_a_scale_it_does_not_know(filing: Path) -> None:
    """With ``revenue`` configured in USD m and no unit for thousands, the note above the
    table means the figures are in another scale: skipped with a warning, never stored as
    USD m (a thousandfold error)."""
    vocab = settings_from_dict(
        {
            "facts": {
                "metrics": {"revenue": ["Revenues"]},
                "entities": {"Streamco": ["Streamco"]},
                "units": {"USD m": ["USD m"]},
                "metric_units": {"revenue": "USD m"},
            }
        }
    ).facts
    warnings: list[str] = []
    extracted = extract(filing, max_chars=1500)
    facts = extract_facts(
        extracted.sections, doc_id="d", title="Streamco", vocab=vocab, warn=warnings.append
    )
    assert not [f for f in facts if f.unit == "USD m"]
    assert any("unit not recognised" in w and "thousands" in w for w in warnings), warnings


# --------------------------------------------------------------------------- answers


def test_a_figure_is_stated_with_its_scale(app: Clearance) -> None:
    answer = ask(app, "What was Streamco's revenue in the three months ended June 30, 2025?")
    assert "$1,107,916 thousand" in answer
    answer = ask(app, "What was Streamco's operating income in the six months ended June 30, 2024?")
    assert "523,537 thousand" in answer


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("How much revenue did Streamco make in EMEA in the three months ended June 30, 2025?", "353,817"),
        ("What were Streamco's UCAN revenues for the six months ended June 30, 2024?", "851,987"),
        ("What was Streamco revenue in Latin America for the three months ended June 30, 2024?", "120,414"),
    ],
)  # fmt: skip
def test_a_region_is_asked_by_name_or_acronym(app: Clearance, question: str, value: str) -> None:
    answer = ask(app, question)
    assert value in answer
    assert "1,107,916" not in answer and "955,931" not in answer  # never the company total


@pytest.mark.parametrize(
    "question",
    [
        "What was Streamco revenue in Brazil for the three months ended June 30, 2025?",
        "What was Streamco revenue in the Nordics for the three months ended June 30, 2025?",
        "What were revenues for Streamco's Nordics segment in the three months ended June 30, 2025?",
        "What were revenues of the Nordics region of Streamco in the three months ended June 30, 2025?",
        # what it was earned from, in lower case
        "What was Streamco revenue from advertising in the three months ended June 30, 2025?",
        # a part named with a word that alone means the whole ("group revenue")
        "What was Streamco Client Computing Group revenue in the three months ended June 30, 2025?",
        "What was the Studios Company revenue of Streamco in the three months ended June 30, 2025?",
    ],
)
def test_a_region_no_table_holds_is_not_found_never_the_total(
    app: Clearance, question: str
) -> None:
    answer = ask(app, question, Status.NOT_FOUND)
    assert not re.search(r"\d{3},\d{3}", answer), answer


@pytest.mark.parametrize(
    "question",
    [
        "What was Streamco group revenue in the three months ended June 30, 2025?",
        "What was Streamco's total group revenue in the three months ended June 30, 2025?",
        "What was the company's revenue in the three months ended June 30, 2025?",
    ],
)
def test_the_group_or_the_company_alone_is_the_whole(app: Clearance, question: str) -> None:
    assert "1,107,916" in ask(app, question)


@pytest.mark.parametrize("currency", ["USD", "US dollars", "Swiss francs", "Japanese Yen"])
def test_a_figure_counted_in_a_currency_is_still_the_total(app: Clearance, currency: str) -> None:
    answer = ask(
        app, f"What was Streamco revenue in {currency} for the three months ended June 30, 2025?"
    )
    assert "1,107,916" in answer


def test_a_calendar_quarter_of_an_unknown_fiscal_year_is_offered_not_assumed(
    app: Clearance,
) -> None:
    result = app.ask("What was Streamco's revenue in Q2 2025?", "fay")
    assert result.status is Status.CLARIFY
    assert result.options == ("3M ended Jun 2025",)
    assert "fiscal year ends" in result.answer
    assert not re.search(r"\d{3},\d{3}", result.answer)
    half = app.ask("What was Streamco's EMEA revenue in the first half of 2025?", "fay")
    assert (half.status, half.options) == (Status.CLARIFY, ("6M ended Jun 2025",))
    # the option offered, asked back, is answered
    assert "1,107,916" in ask(app, "What was Streamco's revenue in 3M ended Jun 2025?")
    # a quarter whose calendar span no table holds is not found, as before
    ask(app, "What was Streamco's revenue in Q3 2025?", Status.NOT_FOUND)
    # the first six months of a year, and two quarters set side by side, likewise
    six = app.ask("What was Streamco's revenue for the first six months of 2025?", "fay")
    assert (six.status, six.options) == (Status.CLARIFY, ("6M ended Jun 2025",))
    both = app.ask("Compare Streamco's revenue in Q2 2025 vs Q2 2024", "fay")
    assert (both.status, both.options) == (
        Status.CLARIFY,
        ("3M ended Jun 2025", "3M ended Jun 2024"),
    )


@pytest.mark.parametrize("name", ["Procter & Gamble", "P&G", "The Procter & Gamble Company"])
def test_a_company_is_asked_by_its_name_without_the_and_company_or_its_initials(
    app: Clearance, name: str
) -> None:
    """The title names "The Procter & Gamble Company"; people say "Procter & Gamble" and
    "P&G", never "Gamble" alone."""
    answer = ask(
        app, f"What were {name}'s Grooming net sales in the nine months ended March 31, 2025?"
    )
    assert "4,980 million dollars" in answer
    assert "1,505" not in answer


def test_a_workbook_s_title_row_names_its_company_over_its_file_name(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """pg-10q-….xlsx whose title row reads "The Procter & Gamble Company — Form 10-Q …":
    its figures are Procter & Gamble's (also asked as P&G, and as PG, the file's name for
    it), not a company called "PG"."""
    import openpyxl

    corpus = tmp_path / "finance"
    corpus.mkdir()
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["The Procter & Gamble Company — Form 10-Q for the quarter ended March 31, 2025"])
    sheet.append(["Amounts in millions of dollars."])
    sheet.append([None, "Three Months Ended March 31, 2025", "Nine Months Ended March 31, 2025"])
    sheet.append(["Grooming net sales", 1505, 4980])
    book.save(corpus / "pg-10q-q3-fy2025-segment-results.xlsx")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    assert {f.entity for f in engine.store.list_facts()} == {"Procter & Gamble"}
    for name in ("P&G", "Procter & Gamble", "PG"):
        answer = ask(
            engine,
            f"What were {name}'s Grooming net sales in the nine months ended March 31, 2025?",
        )
        assert "4,980" in answer and "1,505" not in answer


BANK = """# Harbor Bancorp — Consolidated Statements of Income (unaudited)

(in thousands)

| | Three Months Ended June 30, 2022 | Three Months Ended June 30, 2021 |
|---|---|---|
| Interest income: | | |
| Loans | 412,310 | 380,220 |
| Total interest income | 507,710 | 450,320 |
| Interest expense: | | |
| Deposits | 20,115 | 18,400 |
| Borrowings | 5,200 | 4,100 |
| Total interest expense | 25,315 | 22,500 |
"""


@pytest.fixture
def index_one(
    finance_engine: Callable[[Callable[[Path], object]], Clearance],
) -> Callable[[str, str], Clearance]:
    """``index_one(name, text)``: an engine over one finance file that fay may read."""
    return lambda name, text: finance_engine(
        lambda corpus: (corpus / name).write_text(text, encoding="utf-8")
    )


def test_interest_on_deposits_is_asked_as_such_and_never_given_as_the_deposits(
    index_one: Callable[[str, str], Clearance],
) -> None:
    engine = index_one("harbor-bancorp-10q-q2-2022.md", BANK)
    period = "in the three months ended June 30, 2022"
    assert "20,115" in ask(
        engine, f"What was Harbor Bancorp's interest expense on deposits {period}?"
    )
    assert "412,310" in ask(engine, f"What was interest income from loans {period}?")
    assert "25,315" in ask(engine, f"What was total interest expense {period}?")
    # the deposits themselves are no figure here: whatever answers quotes the row as written
    for question in (
        f"What were Harbor Bancorp's deposits {period}?",
        f"What were loans {period}?",
    ):
        result = engine.ask(question, "fay")
        assert not re.search(
            r"(?i)(?:deposits|loans) (?:in|were|was)[^|]*\d{2},\d{3}", result.answer
        )


EPS = """# Orbital Industries Inc. — Consolidated Statements of Income

(in millions, except per share amounts)

| | Year Ended December 31, 2024 | Year Ended December 31, 2023 |
|---|---|---|
| Income from continuing operations | 610 | 540 |
| Net income | 570 | 515 |
| Earnings per share: | | |
| Basic: | | |
| Continuing operations | $ 2.44 | $ 2.16 |
| Discontinued operations | (0.16) | (0.10) |
| Basic earnings per share | $ 2.28 | $ 2.06 |
| Diluted: | | |
| Continuing operations | $ 2.41 | $ 2.13 |
| Discontinued operations | (0.16) | (0.10) |
| Diluted earnings per share | $ 2.25 | $ 2.03 |
"""


@pytest.mark.parametrize(
    ("question", "value", "never"),
    [
        ("What was Orbital's diluted EPS in 2024?", "2.25", "2.41"),
        ("What was diluted earnings per share from continuing operations in 2024?", "2.41", "2.25"),
        ("What was Orbital's basic EPS from continuing operations for 2023?", "2.16", "2.06"),
        ("What was income from continuing operations in 2024?", "610", "2.44"),
    ],
)
def test_earnings_per_share_from_continuing_operations_is_its_own_figure(
    index_one: Callable[[str, str], Clearance], question: str, value: str, never: str
) -> None:
    answer = ask(index_one("orbital-10k-2024.md", EPS), question)
    assert value in answer and never not in answer, answer


@pytest.mark.parametrize(
    ("question", "figures"),
    [
        (
            "How much did revenue change from the prior year in the three months ended June 30, 2025?",
            ("1,107,916", "955,931"),
        ),
        (
            "How did revenue grow from the same period last year, in the three months ended June 30, 2025?",
            ("1,107,916", "955,931"),
        ),
        (
            "What was operating income in the three months ended June 30, 2025 compared with the same quarter of 2024?",
            ("377,469", "260,283"),
        ),
        (
            "What was revenue in the six months ended June 30, 2025 versus a year earlier?",
            ("2,162,196", "1,892,975"),
        ),
        (
            "What was year-over-year revenue growth in the three months ended June 30, 2025?",
            ("1,107,916", "955,931"),
        ),
    ],
)  # fmt: skip
def test_a_span_against_the_prior_year_is_the_same_span_a_year_before(
    app: Clearance, question: str, figures: tuple[str, ...]
) -> None:
    """ "Compared with the prior year", "the same period last year", "the same quarter of
    2024" beside a span the question names are that span a year before, never a year
    counted from today ("prior year = FY2025") nor the whole year 2024."""
    result = app.ask(question, "fay")
    answer = result.answer
    assert result.status is Status.ANSWERED, answer
    assert all(f in answer for f in figures), answer
    assert "FY2024" not in answer and "FY2025" not in answer, answer


@pytest.mark.parametrize(
    "question", ["What was Streamco revenue in 2025?", "What was Streamco revenue last year?"]
)
def test_a_quarter_s_report_states_no_whole_year_in_its_prose(
    app: Clearance, question: str
) -> None:
    """The 10-Q's sentence "Total revenues include hedging gains of $4 million" names no
    year; its title names 2025 only as the end of a quarter. It is no statement of the
    year's revenue: not found, and never quoted as if it were."""
    answer = ask(app, question, Status.NOT_FOUND)
    assert "$4 million" not in answer and "hedging" not in answer, answer


TEN_K = """# Orbital Foods Company — Form 10-K for the year ended December 31, 2019 (extract)

## Consolidated Balance Sheets

(in thousands)

| | December 31, 2019 | December 31, 2018 |
|---|---|---|
| Total assets | 2,228,557 | 2,574,309 |
| Long-term debt, net | 4,670 | 905,170 |

## Consolidated Statements of Operations

(in thousands, except per share amounts)

| | Year Ended December 31, 2019 | Year Ended December 31, 2018 |
|---|---|---|
| Net income (loss) | (500,804) | (327,358) |
| Net income (loss) attributable to Orbital Foods Company | (499,942) | (326,900) |
| Basic income (loss) per common share: | | |
| Income (loss) from continuing operations attributable to Orbital Foods Company (USD per share) | (5.45) | (3.63) |
| Net income (loss) attributable to Orbital Foods Company (USD per share) | (5.45) | (3.58) |
| Diluted income (loss) per common share: | | |
| Income (loss) from continuing operations attributable to Orbital Foods Company (USD per share) | (5.44) | (3.62) |
| Net income (loss) attributable to Orbital Foods Company (USD per share) | (5.44) | (3.57) |
"""


@pytest.mark.parametrize(
    ("question", "value", "never"),
    [
        ("What was Orbital's net loss in fiscal 2018?", "327,358", "326,900"),
        ("What was net income attributable to Orbital Foods in 2018?", "326,900", "327,358"),
        ("What was Orbital's basic loss per share in 2019?", "5.45", "499,942"),
        ("What was Orbital's diluted EPS in 2018?", "3.57", "3.62"),
        ("What was Orbital's diluted EPS from continuing operations in 2018?", "3.62", "3.57"),
        ("What was Orbital's long-term debt, net at the end of 2018?", "905,170", "4,670"),
        ("What was Orbital's long-term debt at December 31, 2018?", "905,170", "4,670"),
        ("What were Orbital's total assets at the end of 2019?", "2,228,557", "2,574,309"),
    ],
)
def test_a_10k_asked_as_people_ask_it(
    index_one: Callable[[str, str], Clearance], question: str, value: str, never: str
) -> None:
    """Lines asked by the names readers use: a net loss is the net income line; the
    income attributable to the company without its legal form; a share class's loss per
    share; long-term debt without ", net"; a balance "at the end of 2018" is the balance
    at the end of the year's last month, and the answer says so."""
    answer = ask(index_one("orbital-foods-10k-2019.md", TEN_K), question)
    assert value in answer and never not in answer, answer
    if "end of" in question:
        assert "the end of FY" in answer and "= Dec " in answer, answer


PARENT = """# Orbital Holdings Company — Consolidated Statements of Operations

(in thousands, except per share amounts)

| | Three Months Ended Sep. 30, 2018 | Twelve Months Ended Dec. 31, 2018 |
|---|---|---|
| Net Income | 125,070 | 271,576 |
| Net Income Attributable to Noncontrolling Interests | (6) | (561) |
| Net Income (Loss) Attributable to Parent | 125,064 | 271,015 |
| Basic net income per common share (in usd per share) | 23.43 | 50.55 |
| Diluted net income per common share (in usd per share) | 23.28 | 50.20 |
"""


@pytest.mark.parametrize(
    ("question", "value", "never"),
    [
        ("What was Orbital's net income attributable to the company in the three months ended September 30, 2018?", "125,064", "125,070"),
        ("What was Orbital's net income in the three months ended September 30, 2018?", "125,070", "125,064"),
        ("What was Orbital's diluted EPS for the twelve months ended December 31, 2018?", "50.2", "50.55"),
        ("What were Orbital's basic earnings per share in the three months ended September 30, 2018?", "23.43", "23.28"),
    ],
)  # fmt: skip
def test_the_sec_s_names_of_the_parent_s_income_and_of_eps_are_the_readers(
    index_one: Callable[[str, str], Clearance], question: str, value: str, never: str
) -> None:
    """ "Attributable to Parent" is the income attributable to the company; "Diluted net
    income per common share" is diluted EPS: never the net income including noncontrolling
    interests, nor the other share class's figure."""
    answer = ask(index_one("orbital-holdings-10k-2018.md", PARENT), question)
    assert value in answer and never not in answer, answer


def test_a_word_the_whole_file_is_about_narrows_nothing(
    index_one: Callable[[str, str], Clearance],
) -> None:
    """``us-cpi-monthly.csv`` dates each month by its first day and heads its column
    ``Index``: "the US CPI index in January 2020" is that column's January, "CPI" being
    what the whole file is about; a word the file does not name ("core") still narrows,
    and is not found."""
    engine = index_one(
        "us-cpi-monthly.csv",
        "Date,Index,Inflation\n2020-01-01,257.971,0.39\n2020-02-01,258.678,0.27\n",
    )
    assert "257.971" in ask(engine, "What was the US CPI index value in January 2020?")
    missing = ask(engine, "What was the US core index in January 2020?", Status.NOT_FOUND)
    assert "257.971" not in missing


def _prices_and_minute(root: Path, engine: Clearance, minute: bool) -> None:
    data = root / "data"
    data.mkdir(parents=True)
    (data / "house-prices-quarterly.csv").write_text(
        "Date,Price (All),Price (New)\n2024-08-01,266640,299191\n2024-11-01,268518,307673\n",
        encoding="utf-8",
    )
    (data / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    roots = [data]
    if minute:
        board = root / "board"
        board.mkdir()
        (board / "board-minute-project-heron.md").write_text(
            "# Board minute: Project Heron\n\nThe board approved the purchase of Lindqvist Marine"
            " Sensors. The purchase price for Lindqvist Marine Sensors is EUR 312.4 million.\n",
            encoding="utf-8",
        )
        meta = {"acl": ["user:bea"], "sensitivity": "RESTRICTED", "corpus": "board"}
        (board / "_meta.json").write_text(json.dumps(meta), encoding="utf-8")
        roots.append(board)
    assert engine.ingest(roots).failed == []


@pytest.mark.parametrize("leaky", [False, True])
def test_a_figure_no_table_holds_names_the_restricted_source_to_its_reader_only(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
    leaky: bool,
) -> None:
    """ "The purchase price for Lindqvist" beside a readable table of house prices: no table
    holds it, and the minute's reader is named the RESTRICTED minute that bears on it (it
    was a "not found" once the table gave prices). Anyone else gets exactly the "not found"
    of an index without the minute. Reverse proof (``leaky``): naming it from every
    RESTRICTED document, whoever may view it, is caught."""
    from clearance.answer.routes.restricted import RESTRICTED_FLAG, RestrictedNamingRoute

    question = "What is the purchase price for Lindqvist Marine Sensors?"
    answers = {}
    for minute in (True, False):
        root = tmp_path / ("with" if minute else "without")
        store = SQLiteStore(root / "index" / "clearance.db")
        # the board's corpus is declared where it holds the minute (a declared corpus with
        # nothing in it fails closed, which would differ for another reason)
        board = {"max_sensitivity": "RESTRICTED", "revocation_sla": "30d"}
        engine = Clearance(settings_factory({"corpora": {"board": board}} if minute else {}), store)
        _prices_and_minute(root, engine, minute)
        engine.sync_directory(
            write_directory(root / "directory.json", {"bea": ["staff"], "eddie": ["staff"]})
        )
        if leaky:

            def everyones(self: RestrictedNamingRoute, request: object) -> AnswerResult | None:
                titles = [
                    d.title
                    for d in self.ctx.runtime.store.list_documents()
                    if d.sensitivity.name == "RESTRICTED"
                ]
                text = "Restricted: " + ", ".join(titles)
                return AnswerResult(Status.ANSWERED, text, Route.NARRATIVE) if titles else None

            monkeypatch.setattr(RestrictedNamingRoute, "answer", everyones)
        answers[minute] = {u: engine.ask(question, u) for u in ("bea", "eddie")}
        store.close()
    eddie, alone = answers[True]["eddie"], answers[False]["eddie"]
    same = (eddie.status, eddie.answer, eddie.citations) == (
        alone.status,
        alone.answer,
        alone.citations,
    )
    bea = answers[True]["bea"]
    if leaky:
        assert not same
        return
    assert same, (eddie.answer, alone.answer)
    assert eddie.status is Status.NOT_FOUND and "312.4" not in eddie.answer
    assert bea.flags == (RESTRICTED_FLAG,) and "312.4" not in bea.answer, bea.answer
    assert [c.doc_id for c in bea.citations] == ["files:board-minute-project-heron.md"]


LEDGER = """# Statement of revenues and expenses

| Account | Jan - Mar 2024 | April - June 2024 | Jan - Dec 2024 |
|---|---|---|---|
| 4105 - Earned Income - Memberships | 181,366.42 | 141,191.67 | 650,944.08 |
| 4110 - Earned Income - Fee For Service | 16,743.75 | 43,602.72 | 202,387.63 |
"""
PAGES = {
    "memberships.md": "# Memberships\n\nMembers renew each January. A membership covers "
    "instructor training seats and workshop discounts.\n",
    "travel.md": "# Travel\n\nBook economy class for flights under six hours. Hotels up to "
    "200 EUR a night.\n",
}
OTHER_YEAR = "What was membership earned income in 2023?"


@pytest.fixture
def ledger(
    finance_engine: Callable[[Callable[[Path], object]], Clearance],
) -> Callable[[], Clearance]:
    """An engine over a 2024 ledger beside two pages fay may read."""

    def write(corpus: Path) -> None:
        for name, text in {"statement-2024.md": LEDGER, **PAGES}.items():
            (corpus / name).write_text(text, encoding="utf-8")

    return lambda: finance_engine(write)


def check_a_row_of_other_years_answers_no_question_about_this_one(engine: Clearance) -> None:
    result = engine.ask(OTHER_YEAR, "fay")
    assert result.status is not Status.ANSWERED, result.answer
    assert not any(n in result.answer for n in ("181,366", "141,191", "650,944"))


def test_a_row_of_other_years_answers_no_question_about_this_one(
    ledger: Callable[[], Clearance],
) -> None:
    """A ledger of 2024's quarters holds no 2023 figure: quoting its row for a question about
    2023 gave 2024's figures as the answer."""
    engine = ledger()
    check_a_row_of_other_years_answers_no_question_about_this_one(engine)
    asked = engine.ask("What was membership earned income in 2024?", "fay")
    assert "650,944" in asked.answer  # the year the row is of is still answered


def test_reverse_proof_quoting_rows_of_other_years_is_caught(
    ledger: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.answer.routes import narrative

    monkeypatch.setattr(narrative, "is_table_row", lambda locator: False)
    with pytest.raises(AssertionError):
        check_a_row_of_other_years_answers_no_question_about_this_one(ledger())
