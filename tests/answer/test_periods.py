"""Periods: the built-in forms (EN/JA/ZH halves, quarters, fiscal and calendar years), the
fiscal calendar, and relative periods resolved against an injected request date."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from clearance.answer.periods import (
    FiscalCalendar,
    find_relative,
    question_language,
    span_of_fiscal_part,
)
from clearance.config import FactSettings, builtin_period_forms, load_settings, settings_from_dict
from clearance.errors import ConfigError
from clearance.ingest.facts import Vocabulary, fiscal_year_end

APRIL = FiscalCalendar(start_month=4, named_by="start")
OCTOBER_15 = date(2026, 10, 15)  # ACME's FY2026, second quarter done: Q3 2026, H2 2026


def vocab(fiscal_year_start: str = "01-01") -> Vocabulary:
    return Vocabulary(FactSettings(periods=builtin_period_forms(fiscal_year_start)))


# --------------------------------------------------------------------------- absolute forms

ABSOLUTE = [
    # fiscal years
    ("FY2024", "FY2024"),
    ("FY24", "FY2024"),
    ("FY'24", "FY2024"),
    ("fiscal year 2024", "FY2024"),
    ("2024年度", "FY2024"),
    ("2024财年", "FY2024"),
    ("2024財年", "FY2024"),
    # half years
    ("2024H1", "H1 2024"),
    ("2024 H2", "H2 2024"),
    ("H1 2024", "H1 2024"),
    ("H2 FY2024", "H2 2024"),
    ("1H24", "H1 2024"),
    ("2H FY24", "H2 2024"),
    ("FY2024 H1", "H1 2024"),
    ("first half of 2024", "H1 2024"),
    ("second half of FY2024", "H2 2024"),
    ("first-half 2024", "H1 2024"),
    ("fiscal 2024 second half", "H2 2024"),
    ("2024年度上期", "H1 2024"),
    ("2024年度下半期", "H2 2024"),
    ("2024年上半年", "H1 2024"),
    ("2024年下半年", "H2 2024"),
    ("2024財年上半年", "H1 2024"),
    # quarters
    ("Q3 2025", "Q3 2025"),
    ("2025 Q3", "Q3 2025"),
    ("Q3 FY25", "Q3 2025"),
    ("3Q25", "Q3 2025"),
    ("FY2025 Q3", "Q3 2025"),
    ("third quarter of 2025", "Q3 2025"),
    # as press releases write them
    ("fourth-quarter 2025", "Q4 2025"),
    ("fiscal 2025 third quarter", "Q3 2025"),
    ("2025 third-quarter", "Q3 2025"),
    ("FY2025 second quarter", "Q2 2025"),
    ("2025年度第3四半期", "Q3 2025"),
    ("2025年度第三四半期", "Q3 2025"),
    ("2025年第三季度", "Q3 2025"),
    ("2025年三季度", "Q3 2025"),
    ("2025年Q3", "Q3 2025"),
]


@pytest.mark.parametrize(("text", "canonical"), ABSOLUTE, ids=[a for a, _ in ABSOLUTE])
def test_builtin_period_forms(text: str, canonical: str) -> None:
    assert vocab().values("period", f"revenue {text} の") == [canonical]
    assert vocab().canonical_period(text) == canonical


@pytest.mark.parametrize("text", ["CY2024", "calendar year 2024", "2024年"])
def test_a_calendar_year_is_the_fiscal_year_only_when_the_fiscal_year_starts_in_january(
    text: str,
) -> None:
    assert vocab("01-01").canonical_period(text) == "FY2024"
    # With an April fiscal year a calendar year is another period: never substituted.
    assert vocab("04-01").canonical_period(text) == "CY2024"


def test_a_date_is_not_a_calendar_year() -> None:
    # 2024年3月期 is the fiscal year that ends in March 2024, never calendar 2024
    assert vocab().values("period", "2024年3月期の売上高") == ["FY2024"]


def test_the_longest_period_wins() -> None:
    assert vocab().values("period", "2024年度上期の売上高") == ["H1 2024"]
    assert vocab().values("period", "2025年度第3四半期") == ["Q3 2025"]


# --------------------------------------------------------------------------- config


def write(tmp_path: Path, facts: str) -> Path:
    path = tmp_path / "clearance.toml"
    path.write_text("[facts]\n" + facts, encoding="utf-8")
    return path


def test_configured_period_forms_add_to_the_builtin_ones(tmp_path: Path) -> None:
    path = write(
        tmp_path, '[[facts.periods]]\npattern = "Geschäftsjahr (\\\\d{4})"\ncanonical = "FY{1}"\n'
    )
    settings = load_settings(path, {})
    compiled = Vocabulary(settings.facts)
    assert compiled.values("period", "Geschäftsjahr 2024") == ["FY2024"]
    assert compiled.values("period", "H1 2024") == ["H1 2024"]  # built-ins still there


def test_replace_builtin_periods_keeps_only_the_configured_forms(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "replace_builtin_periods = true\n"
        '[[facts.periods]]\npattern = "Geschäftsjahr (\\\\d{4})"\ncanonical = "FY{1}"\n',
    )
    compiled = Vocabulary(load_settings(path, {}).facts)
    assert compiled.values("period", "Geschäftsjahr 2024") == ["FY2024"]
    assert compiled.values("period", "H1 2024 FY2024") == []


@pytest.mark.parametrize(
    ("facts", "key"),
    [
        ('fiscal_year_start = "04-15"\n', "facts.fiscal_year_start"),
        ('fiscal_year_start = "13-01"\n', "facts.fiscal_year_start"),
        ('fiscal_year_start = "April"\n', "facts.fiscal_year_start"),
        ('fiscal_year_named_by = "middle"\n', "facts.fiscal_year_named_by"),
        ("replace_builtin_periods = true\n", "facts.replace_builtin_periods"),
        ('default_entity = "Nowhere"\n', "facts.default_entity"),
    ],
)
def test_bad_fiscal_settings_are_refused_naming_the_key(
    tmp_path: Path, facts: str, key: str
) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_settings(write(tmp_path, facts), {})


def test_fiscal_settings_are_read(tmp_path: Path) -> None:
    facts = settings_from_dict(
        {
            "facts": {
                "entities": {"ACME Group": ["group"]},
                "fiscal_year_start": "04-01",
                "fiscal_year_named_by": "end",
                "default_entity": "ACME Group",
                "default_period": "latest",
            }
        }
    ).facts
    assert FiscalCalendar.from_settings(facts) == FiscalCalendar(4, "end")
    assert (facts.default_entity, facts.default_period) == ("ACME Group", "latest")


# --------------------------------------------------------------------------- the calendar


def test_fiscal_calendar_april_named_by_start() -> None:
    assert APRIL.fiscal_year(date(2026, 3, 31)) == 2025
    assert APRIL.fiscal_year(date(2026, 4, 1)) == 2026
    assert APRIL.quarter(OCTOBER_15) == (2026, 3)
    assert APRIL.half(OCTOBER_15) == (2026, 2)
    assert APRIL.span("FY2025") == (date(2025, 4, 1), date(2026, 3, 31))
    assert APRIL.span("H2 2025") == (date(2025, 10, 1), date(2026, 3, 31))
    assert APRIL.span("Q4 2025") == (date(2026, 1, 1), date(2026, 3, 31))
    assert APRIL.span("CY2025") == (date(2025, 1, 1), date(2025, 12, 31))
    assert APRIL.span("Budget 2025") is None


def test_fiscal_calendar_named_by_end_and_calendar_years() -> None:
    end = FiscalCalendar(7, "end")  # FY2026 = July 2025 to June 2026
    assert end.fiscal_year(date(2025, 7, 1)) == 2026
    assert end.span("FY2026") == (date(2025, 7, 1), date(2026, 6, 30))
    assert FiscalCalendar().span("Q3 2025") == (date(2025, 7, 1), date(2025, 9, 30))
    assert FiscalCalendar().fiscal_year(OCTOBER_15) == 2026


# --------------------------------------------------------------------------- relative periods

RELATIVE = [
    # English
    ("What was revenue last year?", "last year", "FY2025"),
    ("revenue the year before last", "the year before last", "FY2024"),
    ("revenue this fiscal year", "this fiscal year", "FY2026"),
    ("budget for next year", "next year", "FY2027"),
    ("revenue last quarter", "last quarter", "Q2 2026"),
    ("revenue in Q3 last year", "Q3 last year", "Q3 2025"),
    ("first half of last year", "first half of last year", "H1 2025"),
    ("first half of FY2024", "first half of FY2024", "H1 2024"),
    # Japanese
    ("昨年の売上高", "昨年", "FY2025"),
    ("前年の売上高", "前年", "FY2025"),  # Japanese: the previous year
    ("前期の営業利益", "前期", "FY2025"),
    ("今年度の売上高", "今年度", "FY2026"),
    ("一昨年の売上高", "一昨年", "FY2024"),
    ("上期の売上高", "上期", "H1 2026"),
    ("昨年度の下期の売上高", "昨年度の下期", "H2 2025"),
    ("前四半期の売上高", "前四半期", "Q2 2026"),
    # Chinese, simplified and traditional
    ("去年营收多少", "去年", "FY2025"),
    ("前年营收多少", "前年", "FY2024"),  # Chinese: the year before last
    ("今年營收多少", "今年", "FY2026"),
    ("上半年营收", "上半年", "H1 2026"),
    ("去年下半年營收", "去年下半年", "H2 2025"),
    ("上季度营收", "上季度", "Q2 2026"),
    ("去年第三季度营收", "去年第三季度", "Q3 2025"),
]


@pytest.mark.parametrize(("question", "text", "period"), RELATIVE, ids=[r[0] for r in RELATIVE])
def test_relative_periods_resolve_against_the_request_date(
    question: str, text: str, period: str
) -> None:
    found = find_relative(question, APRIL, OCTOBER_15)
    assert [(m.text, m.period) for m in found] == [(text, period)]


def test_the_request_date_decides_what_last_year_means() -> None:
    """Reverse proof that the date is used: the same words, asked on other days."""
    assert find_relative("last year", APRIL, date(2026, 3, 31))[0].period == "FY2024"
    assert find_relative("last year", APRIL, date(2026, 4, 1))[0].period == "FY2025"
    assert find_relative("last year", FiscalCalendar(), date(2026, 3, 31))[0].period == "FY2025"
    assert find_relative("last quarter", APRIL, date(2026, 4, 1))[0].period == "Q4 2025"


def test_zhangnian_is_ambiguous_without_a_language_hint() -> None:
    """前年 is "last year" in Japanese and "the year before last" in Chinese: with only
    kanji to go on, both readings are offered and nothing is guessed."""
    (match,) = find_relative("前年売上高", APRIL, OCTOBER_15)
    assert match.period == ""
    assert match.alternatives == ("FY2025", "FY2024")


def test_shangqi_is_not_a_period_in_chinese() -> None:
    assert find_relative("上期营收多少", APRIL, OCTOBER_15) == []
    assert [m.period for m in find_relative("上期の売上高", APRIL, OCTOBER_15)] == ["H1 2026"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("前年の売上高", "ja"),
        ("前年营收多少", "zh"),
        ("前年營收多少", "zh"),
        ("revenue", "en"),
        ("前年", None),
    ],
)
def test_question_language(text: str, language: str | None) -> None:
    assert question_language(text) == language


def test_the_end_of_a_period_is_read_with_the_period() -> None:
    """末 and 底 after a period ("at the end of") are the period's words, not a metric's:
    2023年第三季度末总资产 asks for 总资产 of Q3 2023, 上年度末 for last year's. Reverse
    proof: the residue left for the metric holds neither."""
    reading = vocab().read("2023年第三季度末总资产")
    assert list(reading.values["period"]) == ["Q3 2023"]
    assert "末" not in reading.residue()
    assert list(vocab().read("2022年底的总资产").values["period"]) == ["FY2022"]
    (match,) = find_relative("上年度末所有者权益", APRIL, OCTOBER_15)
    assert match.text == "上年度末" and match.period == "FY2025"


@pytest.mark.parametrize(
    ("period", "year_end", "span"),
    [
        ("H1 2024", 6, "6M ended Dec 2023"),  # Microsoft: FY2024 is July 2023 – June 2024
        ("H2 2024", 6, "6M ended Jun 2024"),
        ("Q1 2024", 6, "3M ended Sep 2023"),
        ("Q2 2024", 6, "3M ended Dec 2023"),
        ("Q4 2024", 6, "3M ended Jun 2024"),
        ("H1 2025", 3, "6M ended Sep 2024"),  # 2025年3月期: April 2024 – March 2025
        ("Q2 2024", 12, "3M ended Jun 2024"),
        ("FY2024", 6, None),
        ("H3 2024", 6, None),
        ("Q1 2024", 13, None),
    ],
)
def test_a_fiscal_half_or_quarter_is_a_span_of_months(
    period: str, year_end: int, span: str | None
) -> None:
    assert span_of_fiscal_part(period, year_end) == span


@pytest.mark.parametrize(
    ("labels", "month"),
    [
        (["(In millions) Year Ended June 30,"], 6),
        (["Fiscal years ending September 30", "2024"], 9),
        (["2024年3月期第2四半期"], 3),
        (["Revenue", "2024"], None),
        (["Year Ended June 30", "2024年3月期"], None),  # two months: none assumed
        # a retailer's 52–53 weeks end near a month's end: February 1 ends January's year
        (["Fifty-Two Weeks Ended February 1, 2025"], 1),
        (["53 Weeks Ended January 28, 2023"], 1),
    ],
)
def test_the_labels_of_a_full_year_say_when_fiscal_years_end(
    labels: list[str], month: int | None
) -> None:
    assert fiscal_year_end(labels) == month


@pytest.mark.parametrize(
    ("text", "periods"),
    [
        ("Thirteen Weeks Ended November 2, 2024", ["3M ended Oct 2024"]),
        ("the 13 weeks ended Nov 2, 2024", ["3M ended Oct 2024"]),
        ("Thirty-Nine Weeks Ended November 2, 2024", ["9M ended Oct 2024"]),
        ("Twenty-Six Weeks Ended July 29, 2023", ["6M ended Jul 2023"]),
        # a day in a month's first week ends the month before, across a year too
        ("Thirteen Weeks Ended January 3, 2026", ["3M ended Dec 2025"]),
        # a year ending in January: retailers name it by its start or its end, so with no
        # calendar saying which it is its twelve months
        ("Fifty-Two Weeks Ended February 1, 2025", ["12M ended Jan 2025"]),
        ("52 weeks ended January 3, 2026", ["FY2025"]),
        # months a 52–53-week company counts to such a day end the month before too
        ("3 Months Ended Nov. 02, 2019", ["3M ended Oct 2019"]),
        ("Three Months Ended December 31, 2023", ["3M ended Dec 2023"]),
        # weeks that do not say when they end are no period, and never the year's
        ("Thirteen Weeks 2024", []),
        ("2024 (13 weeks)", []),
    ],
)
def test_weeks_are_the_months_they_end_in(text: str, periods: list[str]) -> None:
    assert vocab().values("period", text) == periods


def test_a_fiscal_year_named_by_the_month_it_ends_is_labelled_by_the_calendar() -> None:
    """ "the first half of the fiscal year ending March 2024" is the half of the year that
    ends then, as the calendar labels it: FY2024 in calendar years, FY2023 where fiscal
    years start in April and are named by their start, FY2024 where named by their end.
    Reading the year written as the label gave an April calendar's half a year late."""
    text = "the first half of the fiscal year ending March 2024"
    assert find_relative(text, FiscalCalendar(), OCTOBER_15)[0].period == "H1 2024"
    assert find_relative(text, APRIL, OCTOBER_15)[0].period == "H1 2023"
    by_end = FiscalCalendar(4, "end")
    assert find_relative(text, by_end, OCTOBER_15)[0].period == "H1 2024"
    ended = "Q2 of the fiscal year ended June 30, 2024"
    assert find_relative(ended, FiscalCalendar(7, "end"), OCTOBER_15)[0].period == "Q2 2024"
    # only a month's name ends it: "ending with 2024" is no fiscal year's end, and no error
    (half,) = find_relative("the first half of the fiscal year ending with 2024", APRIL, OCTOBER_15)
    assert half.text == "first half"


def test_the_first_three_quarters_and_the_quarter_before_are_no_quarter_of_this_year() -> None:
    """前三季度 is the first three quarters and 前一季度 the quarter before this one; both
    were read as a quarter of this year (Q3, Q1)."""
    assert not find_relative("比亚迪前三季度营业收入", APRIL, OCTOBER_15)
    (before,) = find_relative("比亚迪前一季度营业收入", APRIL, OCTOBER_15)
    assert before.period == find_relative("上季度", APRIL, OCTOBER_15)[0].period


def test_a_half_of_a_year_named_by_the_month_it_ends_in_japanese_is_that_years() -> None:
    """ "コニカミノルタの2024年3月期の上期" is the first half of the fiscal year ending March
    2024, labelled by the calendar as the English "fiscal year ending March 2024" is; with
    の between them the two were read apart, as FY2024 and this year's first half
    (federal probe). A month no calendar has names no year, and is no error."""
    text = "コニカミノルタの2024年3月期の上期って、売上高どれくらいだった?"
    (half,) = find_relative(text, FiscalCalendar(), OCTOBER_15)
    assert (half.text, half.period) == ("2024年3月期の上期", "H1 2024")
    assert find_relative(text, APRIL, OCTOBER_15)[0].period == "H1 2023"
    (quarter,) = find_relative("2024年3月期の第2四半期の営業利益", FiscalCalendar(), OCTOBER_15)
    assert quarter.period == "Q2 2024"
    # Reverse proof: the half alone is this year's, as before.
    (alone,) = find_relative("2024年13月期の上期の売上高", FiscalCalendar(), OCTOBER_15)
    assert alone.text == "上期" and alone.period == "H1 2026"


@pytest.mark.parametrize(
    "text",
    [
        "売上高は前期比何%増えましたか",
        "営業利益の前年同期比は?",
        "事業貢献利益は、前年同期と比べて何パーセント増加しましたか",
        "营业收入与上年同期相比增长多少",
    ],
)
def test_a_year_the_figure_is_compared_with_is_no_period_asked(text: str) -> None:
    """前期比 ("against the previous year") says what the figure is compared with: read as
    a period, it was the year before today's, a second year nobody asked about."""
    assert find_relative(text, APRIL, OCTOBER_15) == []


def test_a_year_with_its_own_change_or_ratio_is_still_asked() -> None:
    """Reverse proofs: 去年同比 is last year's year-on-year change, and 去年比率 last year's
    ratio; both ask about last year. A Chinese year before 比 is no base: 去年比亚迪 is BYD
    last year, and "今年比去年" sets this year against the last, both asked."""
    (last,) = find_relative("比亚迪去年同比增长多少", APRIL, OCTOBER_15)
    assert last.period == "FY2025"
    (ratio,) = find_relative("去年比率是多少", APRIL, OCTOBER_15)
    assert ratio.period == "FY2025"
    (byd,) = find_relative("去年比亚迪的营业收入是多少", APRIL, OCTOBER_15)
    assert byd.period == "FY2025"
    both = find_relative("今年比去年增长了多少", APRIL, OCTOBER_15)
    assert [m.period for m in both] == ["FY2026", "FY2025"]


def test_a_year_zero_names_no_fiscal_year_and_is_no_error() -> None:
    """ "0000年3月期の上期" and "the fiscal year ending March 0000" raised ValueError (no year
    0 in the calendar): they name no year, and the half alone is read as before."""
    for text in (
        "0000年3月期の上期の売上高は?",
        "the first half of the fiscal year ending March 0000",
    ):
        (half,) = find_relative(text, APRIL, OCTOBER_15)
        assert half.period == "H1 2026"


def test_a_calendar_starting_in_february_names_a_year_ending_in_january() -> None:
    """With ``fiscal_year_start = "02-01"`` the operator has said how the retailer's years
    are named: the 52 weeks ended February 1, 2025 are that calendar's year."""
    by_start = settings_from_dict(
        {"facts": {"fiscal_year_start": "02-01", "fiscal_year_named_by": "start"}}
    ).facts
    assert Vocabulary(by_start).values("period", "Fifty-Two Weeks Ended February 1, 2025") == [
        "FY2024"
    ]
    by_end = settings_from_dict(
        {"facts": {"fiscal_year_start": "02-01", "fiscal_year_named_by": "end"}}
    ).facts
    assert Vocabulary(by_end).values("period", "Fifty-Two Weeks Ended February 1, 2025") == [
        "FY2025"
    ]
