"""Figure questions over data files as open-data portals publish them, with no ``[facts]``
vocabulary: a World Bank extract (``country,year,gdp_trillion``), a national accounts file
named after whom it is about (``us-gdp-annual.csv``: ``date,level-current,…``) and a wide
table of company financials with no period at all (``Symbol,Name,…,Market Cap,EBITDA,…``).
Each case is one a trial on such files found, as a new user would ask:

* "Japan's GDP in 2015" was answered by quoting table rows: the header's unit
  (``_trillion``) had become part of the metric's name, so no question named the metric;
* "the UK's GDP" was not found beside a row ``United Kingdom``, and "日本のGDP" asked which
  figure was meant: a country is one entity whatever it is called;
* "China's GDP per capita" was answered with China's GDP: a wrong figure;
* "the percent change in US GDP" was answered with the GDP itself: a wrong figure;
* "real GDP" was refused as the figure "of real", a word taken for a name;
* "3M's EBITDA" quoted the whole row of fourteen figures, and "JPMorgan Chase's EBITDA",
  whose cell is empty, quoted the row as if it answered;
* a monthly price series (``Month,Price`` with ``2008-07``) gave no fact at all, so "the
  natural gas price in July 2008" was refused;
* a column headed ``Total`` (``Year,Country,Total,Solid Fuel,…``) gave no fact, so "Japan's
  total CO2 emissions" was refused;
* ``population-2015-2024.csv`` measured "population-2015-2024", which no question names;
* ``Korea, Rep.`` beside the code ``KOR`` was no country, so "South Korea" was not found;
* an OECD file (``LOCATION,TIME,…``) gave no fact: ``TIME`` was no period's header;
* "the price of silver" was answered with gold's price, "Assuming Gold": a wrong figure;
* "How much did Canada spend on medicines per head?" was answered with the total spent,
  and "… in US dollars" added the United States' figure and a comparison: wrong figures.

Reverse proofs put each old reading back and require the same test to fail.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import pytest

import clearance.answer.intent as intent_module
import clearance.answer.structured as structured_module
import clearance.ingest.facts as facts_module
import clearance.llm.extractive as extractive_module
from clearance.answer.periods import FiscalCalendar
from clearance.answer.result import AnswerResult, Route, Status
from clearance.answer.structured import readable_vocabulary
from clearance.app import Clearance
from clearance.config import FactSettings, Settings
from clearance.countries import country_name, country_names, country_of
from clearance.ingest.facts import Vocabulary, unit_tail
from clearance.llm.extractive import ExtractiveProvider
from clearance.model import Fact
from clearance.store.sqlite import SQLiteStore

WORLD = [
    ["country", "year", "gdp_trillion"],
    ["United States", "2008", "14.7699"],
    ["United States", "2022", "25.7441"],
    ["United Kingdom", "2008", "2.9294"],
    ["France", "2008", "2.9303"],
    ["Japan", "2015", "4.4449"],
    ["Japan", "2020", "5.0556"],
    ["China", "2020", "14.6877"],
    ["China", "2022", "17.8818"],
]
US_ANNUAL = [
    ["date", "level-current", "level-chained", "change-current", "change-chained"],
    ["2022", "26006.9", "22034.8", "6.6", "2.9"],
    ["2023", "27720.7", "22671.1", "5.3", "2.8"],
]
COMPANIES = [
    ["Symbol", "Name", "Sector", "Price", "Price/Earnings", "Market Cap", "EBITDA", "Price/Book"],
    ["MMM", "3M", "Industrial Conglomerates", "178.96", "31.79", "92293693440", "6488000000",
     "31.26"],
    ["JPM", "JPMorgan Chase", "Diversified Banks", "351.58", "15.06", "934565052416", "",
     "2.64"],
    ["ABT", "Abbott Laboratories", "Health Care Equipment", "116.64", "37.75", "201831907328",
     "11681000448", "3.95"],
]  # fmt: skip


MONTHLY = [
    ["Month", "Price"],
    ["2008-07", "11.09"],
    ["2020-04", "1.74"],
    ["2022-01", "4.38"],
    ["2022-02", "4.69"],
]

EMISSIONS = [
    ["Year", "Country", "Total", "Solid Fuel", "Per Capita"],
    ["2014", "JAPAN", "332216", "123075", "2.60"],
    ["2014", "GERMANY", "196534", "83220", "2.38"],
]
POPULATION = [
    ["Country Name", "Country Code", "Year", "Value"],
    ["Korea, Rep.", "KOR", "2020", "51836239"],
    ["Korea, Dem. People's Rep.", "PRK", "2020", "26136312"],
    ["World", "WLD", "2023", "8064057930"],
]
DRUG_SPENDING = [
    ["LOCATION", "TIME", "PC_HEALTHXP", "USD_CAP", "TOTAL_SPEND"],
    ["CAN", "2022", "15.1", "914.325", "35602.95"],
    ["GBR", "2019", "10.976", "481.75", "32198.4"],
    ["USA", "2019", "12.2", "1276.2", "419287.86"],
]
GOLD = [["Date", "Price"], ["2011-09", "1772.000"], ["1980-01", "675.310"]]
TICKERS = [["Company", "Ticker", "Year", "Revenue"], ["Marriott", "MAR", "2023", "23713"]]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


def build(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Clearance:
    data = tmp_path / "corpus" / "data"
    data.mkdir(parents=True)
    (data / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    write_csv(data / "top-economies-gdp.csv", WORLD)
    write_csv(data / "us-gdp-annual.csv", US_ANNUAL)
    write_csv(data / "constituents-financials.csv", COMPANIES)
    write_csv(data / "natural-gas-monthly.csv", MONTHLY)
    write_csv(data / "co2-fossil-by-nation-2010-2020.csv", EMISSIONS)
    write_csv(data / "population-2015-2024.csv", POPULATION)
    write_csv(data / "pharmaceutical-drug-spending.csv", DRUG_SPENDING)
    write_csv(data / "gold-prices-monthly.csv", GOLD)
    write_csv(data / "company-revenue.csv", TICKERS)
    # No [facts] vocabulary and no model: the defaults a new user starts with.
    engine = Clearance(settings_factory({}), store, provider=ExtractiveProvider())
    report = engine.ingest([data])
    assert report.failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"ana": ["staff"]}))
    return engine


@pytest.fixture
def fresh(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Callable[[], Clearance]:
    """Builds the index when called: a reverse proof patches what ingest reads first."""
    return lambda: build(tmp_path, settings_factory, store, write_directory)


@pytest.fixture
def app(fresh: Callable[[], Clearance]) -> Iterator[Clearance]:
    yield fresh()


def ask(app: Clearance, question: str) -> AnswerResult:
    return app.ask(question, "ana")


# ------------------------------------------------------------------ a header's unit


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gdp_trillion", ("gdp", "trillion")),
        ("market_cap_b", ("market_cap", "billion")),
        ("revenue_usd_m", ("revenue", "USD million")),
        ("Sales, USD millions", ("Sales", "USD million")),
        ("Population in thousands", ("Population", "thousand")),
        # nothing that is a word of the measure is taken for a unit
        ("Vitamin B", ("Vitamin B", "")),
        ("emissions_mt", ("emissions_mt", "")),
        ("level-current", ("level-current", "")),
        ("b", ("b", "")),
    ],
)
def test_a_headers_trailing_unit_is_split_from_what_it_measures(
    header: str, expected: tuple[str, str]
) -> None:
    assert unit_tail(header) == expected


def test_a_column_headed_with_its_unit_measures_the_metric_the_question_names(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = {(f.entity, f.period, f.metric, f.unit): f.value for f in app.store.list_facts()}
    assert facts.get(("Japan", "FY2015", "gdp", "trillion")) == 4.4449
    answered = ask(app, "What was Japan's GDP in 2015?")
    assert answered.status is Status.ANSWERED and answered.route is Route.STRUCTURED
    assert "Japan's gdp in FY2015 was 4.4449 trillion [S1]." in answered.answer
    assert "|" not in answered.answer  # a sentence, not a table row


def test_reverse_proof_a_unit_kept_in_the_name_leaves_the_metric_unnamed(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "unit_tail", lambda header: (header, ""))
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_column_headed_with_its_unit_measures_the_metric_the_question_names(
            engine, monkeypatch
        )


# ------------------------------------------------------------------ countries


def test_a_country_is_known_by_its_names_codes_and_japanese_and_chinese_names() -> None:
    assert country_name("US") == country_name("USA") == "United States"
    assert country_name("UK") == country_name("U.K.") == "United Kingdom"
    assert {"UK", "Britain", "英国"} <= set(country_names("United Kingdom"))
    assert {"日本", "JPN"} <= set(country_names("Japan"))
    assert {"中国", "中國"} <= set(country_names("China"))
    # two-letter codes are words far more often than countries; lower case is no code
    assert country_of("IT") is None and country_of("NO") is None and country_of("usa") is None
    assert country_of("Acme") is None and country_names("Acme") == ()
    # an official name is recognised, never offered: its words would read as a name
    assert country_name("Federal Republic of Germany") == "Germany"
    assert not any("Federal" in n for n in country_names("Germany"))


def test_one_country_is_one_entity_whatever_a_file_or_question_calls_it(
    app: Clearance,
) -> None:
    entities = {f.entity for f in app.store.list_facts()}
    # us-gdp-annual.csv is the United States', as the World Bank rows are
    assert "United States" in entities and "US" not in entities and "US GDP" not in entities
    uk = ask(app, "What was the UK's GDP in 2008?")
    assert uk.status is Status.ANSWERED, uk.answer
    assert "2.9294" in uk.answer and "2.9303" not in uk.answer  # never France's beside it
    japan = ask(app, "2020年の日本のGDPはいくらでしたか?")
    assert japan.status is Status.ANSWERED and "5.0556" in japan.answer, japan.answer
    china = ask(app, "2022年中国的GDP是多少?")
    assert china.status is Status.ANSWERED and "17.8818" in china.answer, china.answer


def test_reverse_proof_without_country_names_the_uk_is_not_found(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "country_names", lambda name: ())
    monkeypatch.setattr(facts_module, "country_name", lambda name: None)
    engine = fresh()
    with pytest.raises(AssertionError):
        test_one_country_is_one_entity_whatever_a_file_or_question_calls_it(engine)


# ------------------------------------------------------------------ never the wrong figure


def test_a_figure_counted_per_something_is_never_the_total(app: Clearance) -> None:
    per_capita = ask(app, "What was China's GDP per capita in 2020?")
    assert per_capita.status is Status.NOT_FOUND, per_capita.answer
    assert "14.6877" not in per_capita.answer
    assert per_capita.answer.endswith("No figure found for gdp per capita of China in FY2020.")
    hyphenated = ask(app, "What was China's GDP-per-capita in 2020?")
    assert hyphenated.status is not Status.ANSWERED, hyphenated.answer
    assert "14.6877" not in hyphenated.answer
    # how often is no narrowing: "per year" still asks for the year's GDP
    yearly = ask(app, "What was China's GDP per year in 2020?")
    assert yearly.status is Status.ANSWERED and "14.6877" in yearly.answer, yearly.answer


def test_reverse_proof_with_per_capita_ignored_the_total_is_given(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "GDP-per-capita" is read by the rule right after the metric alone
    monkeypatch.setattr(intent_module, "_PER_AFTER", intent_module.re.compile(r"(?!)"))
    with pytest.raises(AssertionError):
        test_a_figure_counted_per_something_is_never_the_total(app)


def test_a_percentage_asked_is_never_answered_with_an_amount(app: Clearance) -> None:
    rate = ask(app, "What was the percent change in US GDP in 2022?")
    assert rate.status is Status.NOT_FOUND, rate.answer
    assert "25.7441" not in rate.answer and "26006.9" not in rate.answer
    assert rate.answer.endswith("No figure found for gdp (%) of United States in FY2022.")
    amount = ask(app, "What was US GDP in 2022?")
    assert amount.status is Status.ANSWERED and "25.7441" in amount.answer, amount.answer


def test_reverse_proof_a_rate_answered_by_amounts(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(structured_module, "_RATE_WORDS", structured_module.re.compile(r"(?!)"))
    with pytest.raises(AssertionError):
        test_a_percentage_asked_is_never_answered_with_an_amount(app)


def test_a_common_word_narrowing_a_metric_is_not_taken_for_a_name(app: Clearance) -> None:
    real = ask(app, "What was real GDP in 2023?")
    assert real.status is Status.NOT_FOUND, real.answer
    assert real.answer.endswith("No figure found for real gdp in FY2023."), real.answer


# ------------------------------------------------------------------ wide rows


def test_a_wide_row_is_quoted_with_the_column_asked_only(app: Clearance) -> None:
    ebitda = ask(app, "What is 3M's EBITDA?")
    assert ebitda.status is Status.ANSWERED, ebitda.answer
    lines = [line.rsplit(" [S", 1)[0] for line in ebitda.answer.splitlines()]
    assert lines == ["Name | EBITDA", "3M | 6488000000"], ebitda.answer
    cap = ask(app, "What is Abbott Laboratories' market cap?")
    assert "Abbott Laboratories | 201831907328" in cap.answer, cap.answer
    assert "11681000448" not in cap.answer  # its EBITDA, not asked


def test_an_empty_cell_asked_for_is_no_answer(app: Clearance) -> None:
    empty = ask(app, "What is JPMorgan Chase's EBITDA?")
    assert empty.status is not Status.ANSWERED, empty.answer
    assert "934565052416" not in empty.answer and "JPM" not in empty.answer


def test_reverse_proof_without_narrowing_the_whole_row_is_quoted(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extractive_module, "_narrow_columns", lambda *args: None)
    with pytest.raises(AssertionError):
        test_a_wide_row_is_quoted_with_the_column_asked_only(app)
    with pytest.raises(AssertionError):
        test_an_empty_cell_asked_for_is_no_answer(app)


# ------------------------------------------------------------------ months


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("July 2008", ["Jul 2008"]),
        ("Jul. 2008", ["Jul 2008"]),
        ("Sep-2020", ["Sep 2020"]),
        ("2008-07", ["Jul 2008"]),
        ("2008年7月", ["Jul 2008"]),
        ("in the month of July 2008", ["Jul 2008"]),
        # a day, the fiscal year ending in a month, the end of a month: no month
        ("2008-07-01", []),
        ("2024年3月期", ["FY2024"]),
        ("2008年7月末", []),
        # a month that ends or opens a span is left to the partial periods
        ("Oct–Jun 2024", ["Oct–Jun FY2024"]),
        ("nine months ended September 2024", ["9M ended Sep 2024"]),
        ("from July 2008 to June 2009", []),
        ("FY2011-12", ["FY2011"]),
    ],
)
def test_a_single_month_is_a_period(text: str, expected: list[str]) -> None:
    months = Vocabulary(FactSettings()).with_months()
    assert [m.canonical for m in months.find_periods(text)] == expected


def test_months_are_read_in_questions_only_beside_monthly_figures() -> None:
    base = Vocabulary(FactSettings())
    assert not base.months and base.find_periods("in the month of July 2008") == []
    yearly = Fact("Japan", "FY2015", "gdp", "total", 4.4449, "trillion", "files:a.csv", "row=1")
    monthly = Fact("", "Jul 2008", "price", "total", 11.09, "", "files:b.csv", "row=1")
    assert not readable_vocabulary(base, [yearly]).months
    assert readable_vocabulary(base, [yearly, monthly]).months


def test_a_month_spans_its_days_in_any_fiscal_calendar() -> None:
    for start in ("01-01", "04-01"):
        calendar = FiscalCalendar.from_settings(FactSettings(fiscal_year_start=start))
        assert calendar.span("Jul 2008") == (date(2008, 7, 1), date(2008, 7, 31))
        assert calendar.span("Feb 2024") == (date(2024, 2, 1), date(2024, 2, 29))


def test_a_monthly_series_answers_the_month_asked_and_never_the_year(app: Clearance) -> None:
    july = ask(app, "What was the natural gas price in July 2008?")
    assert july.status is Status.ANSWERED and july.route is Route.STRUCTURED, july.answer
    assert "in Jul 2008 was 11.09 [S1]." in july.answer
    year = ask(app, "What was the natural gas price for the whole of 2022?")
    assert year.status is Status.NOT_FOUND, year.answer
    assert "4.38" not in year.answer and "4.69" not in year.answer


def test_reverse_proof_without_months_the_series_gives_no_fact(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "_months", lambda norm: iter(()))
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_monthly_series_answers_the_month_asked_and_never_the_year(engine)


# ------------------------------------------------------------------ files as portals name them


def test_a_column_headed_total_is_the_rows_total(app: Clearance) -> None:
    result = ask(app, "What were Japan's total CO2 emissions from fossil fuels in 2014?")
    assert result.status is Status.ANSWERED and result.route is Route.STRUCTURED, result.answer
    assert "332,216" in result.answer and "123,075" not in result.answer


def test_reverse_proof_without_the_total_column_emissions_are_not_answered(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "_total_column", lambda heading: False)
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_column_headed_total_is_the_rows_total(engine)


def test_a_file_named_with_its_years_measures_its_subject(app: Clearance) -> None:
    result = ask(app, "What was the world's population in 2023?")
    assert result.status is Status.ANSWERED and result.route is Route.STRUCTURED, result.answer
    assert "population in FY2023 was 8,064,057,930 [S1]" in result.answer


def test_reverse_proof_a_title_kept_whole_names_a_metric_nobody_asks(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "_file_subject", lambda title: title.replace("_", " "))
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_file_named_with_its_years_measures_its_subject(engine)


def test_a_statistics_offices_country_name_is_read_by_its_iso_code(app: Clearance) -> None:
    result = ask(app, "What was the population of South Korea in 2020?")
    assert result.status is Status.ANSWERED, result.answer
    assert "South Korea's population in FY2020 was 51,836,239 [S1]" in result.answer
    assert "26,136,312" not in result.answer  # North Korea's, beside it


def test_a_ticker_is_no_country_code(app: Clearance) -> None:
    """A ticker column is a code column too, but ``MAR`` is Marriott's, not Morocco's: only
    a column headed as countries' codes names a country."""
    assert "23,713" in ask(app, "What was Marriott's revenue in 2023?").answer
    assert ask(app, "What was Morocco's revenue in 2023?").status is not Status.ANSWERED


def test_total_names_a_measure_only_where_no_other_is_named(app: Clearance) -> None:
    """Beside the emissions file's column "Total", "Japan's total GDP" asks for GDP and
    "3M's total EBITDA" for EBITDA: "total" is a measure only where it is the one named."""
    gdp = ask(app, "What was Japan's total GDP in 2015?")
    assert gdp.status is Status.ANSWERED and "4.4449" in gdp.answer, gdp.answer
    ebitda = ask(app, "What was the total EBITDA of 3M?")
    assert "6488000000" in ebitda.answer.replace(",", ""), ebitda.answer


def test_reverse_proof_a_ticker_read_as_a_country_code(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "_COUNTRY_CODE_HEADER", re.compile(""))
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_ticker_is_no_country_code(engine)


def test_as_per_is_no_figure_counted_per(app: Clearance) -> None:
    result = ask(app, "What was Japan's GDP in 2015 as per the data?")
    assert result.status is Status.ANSWERED and "4.4449" in result.answer, result.answer


def test_reverse_proof_as_per_read_as_counted_per(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        intent_module,
        "_PER_ANYWHERE",
        re.compile(r"(?<![\w-])per[\s-]+(?!(?:year|annum|month|quarter|cent)\b)[a-z]+\b", re.I),
    )
    with pytest.raises(AssertionError):
        test_as_per_is_no_figure_counted_per(app)


def test_reverse_proof_without_the_code_korea_rep_is_no_country(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "_coded_country", lambda name, codes: name)
    engine = fresh()
    with pytest.raises(AssertionError):
        test_a_statistics_offices_country_name_is_read_by_its_iso_code(engine)


def test_an_oecd_file_gives_facts_by_location_and_time(app: Clearance) -> None:
    facts = {
        (f.entity, f.period, f.metric): f.value
        for f in app.store.list_facts()
        if f.doc_id.endswith("pharmaceutical-drug-spending.csv")
    }
    assert facts[("United Kingdom", "FY2019", "USD CAP")] == 481.75
    assert facts[("Canada", "FY2022", "PC HEALTHXP")] == 15.1


def test_reverse_proof_time_no_period_header_gives_no_fact(
    fresh: Callable[[], Clearance], monkeypatch: pytest.MonkeyPatch
) -> None:
    without_time = facts_module._PERIOD_HEADER.pattern.replace(r"|^time(?:\s+period)?$", "")
    assert without_time != facts_module._PERIOD_HEADER.pattern
    monkeypatch.setattr(facts_module, "_PERIOD_HEADER", re.compile(without_time))
    engine = fresh()
    with pytest.raises(KeyError):
        test_an_oecd_file_gives_facts_by_location_and_time(engine)


def test_what_a_metric_is_of_narrows_it(app: Clearance) -> None:
    silver = ask(app, "What was the price of silver in September 2011?")
    assert silver.status is Status.NOT_FOUND, silver.answer
    assert "1,772" not in silver.answer and "silver" in silver.answer
    oil = ask(app, "What was the price of crude oil in September 2011?")
    assert oil.status is not Status.ANSWERED and "1,772" not in oil.answer, oil.answer
    gold = ask(app, "What was the price of gold in September 2011?")
    assert gold.status is Status.ANSWERED and "1,772" in gold.answer, gold.answer


def test_per_anywhere_in_the_question_is_never_the_total(app: Clearance) -> None:
    for question in (
        "How much did Canada spend on medicines per head in 2022?",
        "How much did the UK spend on pharmaceuticals per person in 2019?",
    ):
        result = ask(app, question)
        assert result.status is Status.NOT_FOUND, result.answer
        assert "35,602.95" not in result.answer and "32,198.4" not in result.answer


def test_a_currency_named_by_its_country_names_no_entity(app: Clearance) -> None:
    result = ask(app, "How much did the UK spend on pharmaceuticals in 2019, in US dollars?")
    assert result.status is Status.ANSWERED, result.answer
    assert "32,198.4" in result.answer
    assert "United States" not in result.answer and "419,287.86" not in result.answer


def test_a_projection_or_its_error_is_never_the_actual_figure(app: Clearance) -> None:
    """ "By how much did CBO's projection of the fiscal year 2025 deficit miss the actual
    deficit?" (GitLab set, second probe file) was answered with the actual deficit: the
    words that make a figure a projection, or a projection's error, narrow it wherever the
    question says them, as "projected deficit" does. The actual figure still answers a
    question asking for it."""
    for question in (
        "By how much did the forecast of Japan's GDP in 2015 miss the actual figure?",
        "What was the error in the projection of China's GDP for 2020?",
    ):
        result = ask(app, question)
        assert result.status is Status.NOT_FOUND, result.answer
        assert "4.4449" not in result.answer and "14.6877" not in result.answer
    actual = ask(app, "What was Japan's GDP in 2015?")
    assert actual.status is Status.ANSWERED and "4.4449" in actual.answer, actual.answer


@pytest.mark.parametrize(
    ("reading", "test"),
    [
        # "the price of silver" read as the price, of gold
        ("_OF_AFTER", test_what_a_metric_is_of_narrows_it),
        # "per head" read only right after the metric
        ("_PER_ANYWHERE", test_per_anywhere_in_the_question_is_never_the_total),
        # "US dollars" read as the United States
        ("_CURRENCY_OF_COUNTRY", test_a_currency_named_by_its_country_names_no_entity),
        # a projection named apart from the metric ignored
        ("_OTHER_KIND_ANYWHERE", test_a_projection_or_its_error_is_never_the_actual_figure),
    ],
)
def test_reverse_proofs_of_the_question_readings(
    app: Clearance,
    monkeypatch: pytest.MonkeyPatch,
    reading: str,
    test: Callable[[Clearance], None],
) -> None:
    """Each reading of the question above, matching nothing, lets the test fail."""
    monkeypatch.setattr(intent_module, reading, re.compile(r"(?!x)x"))
    with pytest.raises(AssertionError):
        test(app)
