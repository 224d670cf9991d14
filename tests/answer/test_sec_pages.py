"""Figure questions over statements as the SEC's viewer and ``Financial_Report.xlsx``
publish them, with **no** ``[facts]`` vocabulary (a new user's trial on 10-K and 10-Q
pages):

* an HTML statement page heads its columns with a corner cell spanning two header rows
  (``rowspan``), a period spanning its dates (``colspan``: "3 Months Ended" over "Nov. 02,
  2019 | Aug. 03, 2019 …") and a column of its own for each figure's footnote ("[1]"): each
  column is its period and date, a footnote's column is its figure's, and a 52–53-week
  company's months counted to "Nov. 02, 2019" end in October;
* a workbook's cover sheet ("Document and Entity Information") gives no figure ("10-K" is
  no $10, a ZIP code no amount), but its "Current Fiscal Year End Date | --12-31" says when
  the filer's years end, so "Q2 2022" is its three months ended June 2022;
* a balance sheet's columns are dates ("Jun. 30, 2022"): each is the balance at that
  month's end, asked "at June 30, 2022";
* "diluted earnings per share" asks for a line labelled "Earnings per common share —
  diluted", and "revenue from Asia" of a company whose tables hold no Asia line is not
  found, never the company's total, nor is a segment's figure whose name shares a word
  with a line ("Silicon Valley Bank" beside "Federal Home Loan Bank advances").

Every number an answer states is a stored fact's value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import Settings, settings_from_dict
from clearance.ingest.facts import extract_facts
from clearance.ingest.loaders import extract
from clearance.store.sqlite import SQLiteStore

from .test_filing_tables import ask

# An SEC viewer page (R2.htm) as the viewer writes it: the corner spans both header rows,
# "3 Months Ended" four columns of two quarters with their footnotes' columns, a figure of
# the second year spanning its footnote's column.
R_PAGE = """<html><body><table class="report">
<tr><th rowspan="2"><strong>Consolidated Statements of Income - USD ($)<br>
shares in Thousands, $ in Thousands</strong></th>
<th colspan="4">3 Months Ended</th><th colspan="4">12 Months Ended</th></tr>
<tr><th colspan="2">Nov. 02, 2019</th><th>Nov. 03, 2018</th><th><sup>[1]</sup></th>
<th>Nov. 02, 2019</th><th>Nov. 03, 2018</th><th><sup>[2]</sup></th><th>Oct. 28, 2017</th></tr>
<tr><td><strong>Revenue</strong></td><td></td><td></td><td></td><td></td><td></td>
<td colspan="2"></td><td></td></tr>
<tr><td>Revenue</td><td>$ 1,443,219</td><td></td><td>$ 1,536,128</td><td></td>
<td>$ 5,991,065</td><td colspan="2">$ 6,224,689</td><td>$ 5,246,354</td></tr>
<tr><td>Gross margin</td><td>942,191</td><td></td><td>1,045,543</td><td></td>
<td>4,013,750</td><td colspan="2">4,250,396</td><td>3,168,241</td></tr>
<tr><td>Diluted earnings per common share (in dollars per share)</td><td>$ 0.92</td><td></td>
<td>$ 1.08</td><td></td><td>$ 3.65</td><td colspan="2">$ 4.00</td><td>$ 2.29</td></tr>
</table></body></html>
"""


def cover_and_income(path: Path, *, year_end: str | None = "--12-31") -> Path:
    """A 10-Q workbook as EDGAR's Financial_Report.xlsx lays it out: the cover sheet, then
    the statement of income (three and six months ended June 30)."""
    import openpyxl

    book = openpyxl.Workbook()
    cover = book.active
    cover.title = "Document and Entity Information"
    cover.append(["Document and Entity Information - shares", "6 Months Ended Jun. 30, 2022"])
    cover.append(["Document Type", "10-Q"])
    cover.append(["Entity Address, Postal Zip Code", "95054"])
    cover.append(["City Area Code", "408"])
    if year_end is not None:
        cover.append(["Current Fiscal Year End Date", year_end])
    income = book.create_sheet("Interim Consolidated Statements")
    income.append(
        [
            "Interim Consolidated Statements of Income - USD ($) $ in Millions",
            "3 Months Ended Jun. 30, 2022",
            "3 Months Ended Jun. 30, 2021",
            "6 Months Ended Jun. 30, 2022",
            "6 Months Ended Jun. 30, 2021",
        ]
    )
    balance = book.create_sheet("Interim Consolidated Balance Sh")
    balance.append(
        [
            "Interim Consolidated Balance Sheets - USD ($) $ in Millions",
            "Jun. 30, 2022",
            "Dec. 31, 2021",
        ]
    )
    balance.append(["Total assets", 214389, 211308])
    balance.append(["Total deposits", 187945, 189203])
    balance.append(["Federal Home Loan Bank advances", 1000, 0])
    income.append(["Net interest income", 1167, 800, 2249, 1559])
    income.append(["Noninterest income", 362, 761, 879, 1505])
    income.append(
        ["Earnings per common share—basic (dollars per share)", 5.65, 10.98, 13.68, 20.86]
    )
    income.append(
        ["Earnings per common share—diluted (dollars per share)", 5.6, 10.87, 13.52, 20.6]
    )
    book.save(path)
    return path


@pytest.fixture
def app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    corpus = tmp_path / "finance"
    corpus.mkdir()
    (corpus / "analog-devices-fy2019-income-statement.htm").write_text(R_PAGE, "utf-8")
    cover_and_income(corpus / "svb-financial-group-10q-q2-2022.xlsx")
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    yield engine


def facts_of(path: Path, year_ends: dict[str, int] | None = None) -> list:  # type: ignore[type-arg]
    extracted = extract(path, max_chars=1500)
    return extract_facts(
        extracted.sections,
        doc_id="files:" + path.name,
        title=extracted.title or path.stem,
        vocab=settings_from_dict({}).facts,
        year_ends=year_ends,
    )


# --------------------------------------------------------------------------- ingest


def test_an_sec_page_s_columns_are_their_periods_and_dates(tmp_path: Path) -> None:
    path = tmp_path / "analog-devices-fy2019-income-statement.htm"
    path.write_text(R_PAGE, encoding="utf-8")
    year_ends: dict[str, int] = {}
    facts = facts_of(path, year_ends)
    by = {(f.metric, f.period): (f.value, f.unit) for f in facts}
    assert by[("revenue", "3M ended Oct 2019")] == (1443219, "$ in thousands")
    assert by[("revenue", "FY2019")] == (5991065, "$ in thousands")
    # the figure spanning its footnote's column is that date's, read once
    assert by[("revenue", "FY2018")] == (6224689, "$ in thousands")
    assert sum(1 for f in facts if (f.metric, f.period) == ("revenue", "FY2018")) == 1
    assert by[("revenue", "FY2017")] == (5246354, "$ in thousands")
    # a gross margin of thousands of dollars is an amount, not a rate
    assert by[("gross margin", "FY2019")] == (4013750, "$ in thousands")
    assert by[("diluted earnings per common share", "FY2019")] == (3.65, "$")
    # "12 Months Ended Nov. 02, 2019": the company's years end in October
    assert year_ends == {"Analog Devices": 10}


def test_a_workbook_s_cover_sheet_gives_no_figure_but_its_year_end(tmp_path: Path) -> None:
    year_ends: dict[str, int] = {}
    facts = facts_of(cover_and_income(tmp_path / "svb-10q.xlsx"), year_ends)
    assert not [f for f in facts if "Document and Entity" in f.locator]
    assert {f.value for f in facts} >= {1167, 2249, 5.65, 13.52}
    assert 10 not in {f.value for f in facts} and 95054 not in {f.value for f in facts}
    assert year_ends == {"SVB": 12}


# --------------------------------------------------------------------------- answers


def test_an_sec_page_s_figures_are_answered(app: Clearance) -> None:
    assert "$5,991,065 thousand" in ask(app, "What was Analog Devices' revenue for fiscal 2019?")
    quarter = ask(app, "What was Analog Devices' revenue in the quarter ended November 2, 2019?")
    assert "$1,443,219 thousand" in quarter
    eps = ask(app, "What were Analog Devices' diluted earnings per share in fiscal 2019?")
    assert "$3.65" in eps
    # the company's legal form after its name narrows nothing ("Inc." is no line)
    assert "$5,991,065 thousand" in ask(
        app, "What was Analog Devices Inc. revenue for fiscal 2019?"
    )


def test_a_quarter_of_a_filer_whose_cover_says_when_its_years_end(app: Clearance) -> None:
    """The cover page says SVB's years end on December 31: its second quarter of 2022 is
    the three months ended June 2022, and says so."""
    answer = ask(app, "What were SVB's basic earnings per share in Q2 2022?")
    assert "$5.65" in answer and "Q2 FY2022 = 3M ended Jun 2022" in answer
    half = ask(app, "What was SVB's net interest income in the first half of 2022?")
    assert "$2,249 million" in half


def test_reverse_proof_without_the_cover_s_year_end_the_quarter_is_offered(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    write_directory: Callable[..., Path],
) -> None:
    corpus = tmp_path / "finance"
    corpus.mkdir()
    cover_and_income(corpus / "svb-financial-group-10q-q2-2022.xlsx", year_end=None)
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), SQLiteStore(tmp_path / "alone.db"))
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    result = engine.ask("What were SVB's basic earnings per share in Q2 2022?", "fay")
    assert (result.status, result.options) == (Status.CLARIFY, ("3M ended Jun 2022",))


def test_a_part_the_figure_came_from_is_not_found_never_the_total(app: Clearance) -> None:
    answer = ask(
        app, "What was Analog Devices' revenue from Asia in fiscal 2019?", Status.NOT_FOUND
    )
    assert "5,991,065" not in answer
    # a document the figure is read from narrows nothing
    assert "$5,991,065 thousand" in ask(
        app, "What was Analog Devices' revenue for fiscal 2019 from the annual report?"
    )


@pytest.mark.parametrize(
    ("module", "name", "plain"),
    [
        # cells laid out as if no cell spanned rows: the dates shift under the corner
        ("html", "_grid", lambda rows: [[c for slot, _ in row for c in slot] for row in rows]),
        # footnotes' columns read as columns of their own: "12 Months Ended [2]" takes
        # the file name's year, and FY2019 is given three values
        ("common", "_footnote_columns", lambda header, sub: header),
    ],
    ids=["rowspan", "footnote-columns"],
)
def test_reverse_proof_each_reading_of_the_page_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, name: str, plain: object
) -> None:
    from clearance.ingest.loaders import common, html

    monkeypatch.setattr({"html": html, "common": common}[module], name, plain)
    with pytest.raises((AssertionError, KeyError)):
        test_an_sec_page_s_columns_are_their_periods_and_dates(tmp_path)


def test_how_two_quarters_compare_is_answered_with_both(app: Clearance) -> None:
    """ "How did … compare with …" asks for the figures side by side, as "how did … change
    from … to …" does; it asks for no explanation."""
    result = app.ask(
        "How did SVB's net interest income in the second quarter of 2022 compare with the "
        "second quarter of 2021?",
        "fay",
    )
    assert result.status is Status.ANSWERED, result.answer
    assert "$1,167 million" in result.answer and "$800 million" in result.answer
    # the change is worked out from the two figures, never read from prose
    assert "up $367 million (+45.9%)" in result.answer


def test_how_something_compares_without_a_figure_is_no_figure_question() -> None:
    from clearance.answer.intent import parse_intent

    vocab = settings_from_dict({"facts": {"metrics": {"revenue": ["revenue"]}}}).facts
    assert parse_intent("How does the committee compare proposals?", vocab).kind == "narrative"
    assert parse_intent("How did our revenue compare with 2023?", vocab).kind != "narrative"


def detail_sheet(path: Path) -> Path:
    """An SEC detail sheet: the company's rows, then each segment's under a row naming it
    as an axis and its member, in one cell."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Segment Reporting - Segment I_2"
    sheet.append(
        [
            "Segment Reporting - Segment Information (Details) - USD ($) $ in Millions",
            "3 Months Ended Jun. 30, 2022",
            "6 Months Ended Jun. 30, 2022",
        ]
    )
    sheet.append(["Segment Reporting Information [Line Items]", "\xa0", "\xa0"])
    sheet.append(["Goodwill", 375, 375])
    sheet.append(["Operating segments | Silicon Valley Bank", "\xa0", "\xa0"])
    sheet.append(["Segment Reporting Information [Line Items]", "\xa0", "\xa0"])
    sheet.append(["Depreciation and amortization", 12, 21])
    sheet.append(["Operating segments | SVB Securities", "\xa0", "\xa0"])
    sheet.append(["Noninterest income", 96, 252])
    book.save(path)
    return path


def test_a_segment_s_rows_are_never_the_company_s_figures(tmp_path: Path) -> None:
    """Depreciation of $12 million under "Operating segments | Silicon Valley Bank" is that
    segment's, named so; read as SVB's it was a part given as the whole. The company's
    rows above the first segment are read as before, and each segment's row starts the
    next one's rows."""
    facts = facts_of(detail_sheet(tmp_path / "svb-financial-group-10q-q2-2022.xlsx"))
    by = {(f.metric.casefold(), f.period): f.value for f in facts}
    assert by[("goodwill", "3M ended Jun 2022")] == 375
    assert by.get(("silicon valley bank depreciation and amortization", "3M ended Jun 2022")) == 12
    assert by.get(("svb securities noninterest income", "6M ended Jun 2022")) == 252
    segments = ("silicon valley bank ", "svb securities ")
    parts = [f for f in facts if f.value in (12, 21, 96, 252)]
    assert len(parts) == 4 and all(f.metric.casefold().startswith(segments) for f in parts)


def test_reverse_proof_without_reading_the_segment_row_its_figures_pass_as_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.ingest import facts as facts_module

    monkeypatch.setattr(facts_module, "_names_a_part", lambda row: False)
    with pytest.raises(AssertionError):
        test_a_segment_s_rows_are_never_the_company_s_figures(tmp_path)


def test_a_balance_is_asked_at_its_date(app: Clearance) -> None:
    assert "$214,389 million" in ask(app, "What were SVB's total assets at June 30, 2022?")
    assert "$189,203 million" in ask(app, "What were SVB's total deposits as of December 31, 2021?")


def test_a_segment_sharing_a_word_with_a_line_is_not_found_never_the_total(app: Clearance) -> None:
    answer = ask(
        app,
        "What was the noninterest income of SVB's Silicon Valley Bank segment in Q2 2022?",
        Status.NOT_FOUND,
    )
    assert "362" not in answer
    # the company's own figure is still answered
    assert "$362 million" in ask(app, "What was SVB's noninterest income in Q2 2022?")


# Flows under a column headed by a date: what the figures span is said beside the table
# (its corner, a note above it, its heading), not in the date's column.
DATED_FLOWS = {
    "corner": """<html><body><p>ACME INC.<br>(in thousands)</p><table>
<tr><td>Three months ended</td><td>Mar. 31, 2024</td><td>Jun. 30, 2024</td></tr>
<tr><td>Revenue</td><td>$ 1,000</td><td>$ 900</td></tr></table></body></html>""",
    "note": """<html><body><p>ACME INC.<br>STATEMENTS OF INCOME<br>Year Ended<br>
(in thousands)</p><table>
<tr><td></td><td>December 31, 2024</td><td>December 31, 2023</td></tr>
<tr><td>Revenue</td><td>$ 10,000</td><td>$ 9,000</td></tr></table></body></html>""",
    "heading": """<html><body><h1>Acme Inc.</h1><h2>Results for the quarters ended</h2>
<table><tr><td>(in thousands)</td><td>June 30, 2024</td><td>June 30, 2023</td></tr>
<tr><td>Revenue</td><td>$ 1,000</td><td>$ 900</td></tr></table></body></html>""",
}


@pytest.mark.parametrize("layout", list(DATED_FLOWS))
def test_a_flow_under_a_date_is_never_that_month_s(tmp_path: Path, layout: str) -> None:
    """A quarter's or a year's revenue in a column headed "June 30, 2024" is no figure of
    June 2024: read so, "revenue in June 2024" was answered with a quarter's. A balance
    sheet's dates are still its months (test_a_balance_is_asked_at_its_date)."""
    path = tmp_path / "acme-results.html"
    path.write_text(DATED_FLOWS[layout], encoding="utf-8")
    months = [f for f in facts_of(path) if re.fullmatch(r"[A-Z][a-z]{2} \d{4}", f.period)]
    assert months == []


def test_a_ratio_over_a_hundred_is_no_amount(tmp_path: Path) -> None:
    """An insurer's combined ratio of 101.3, a bank's loan-to-deposit ratio of 104.5, a
    loss-making company's operating margin of (150.2): rates, never millions of dollars
    because their figure passes 100. A gross margin of whole thousands is an amount."""
    path = tmp_path / "acme-insurance-10k.htm"
    path.write_text(
        """<html><body><p>ACME INSURANCE GROUP INC.<br>($ in millions)</p><table>
<tr><td></td><td>Year Ended December 31, 2024</td><td>Year Ended December 31, 2023</td></tr>
<tr><td>Combined ratio</td><td>101.3</td><td>98.2</td></tr>
<tr><td>Loan-to-deposit ratio</td><td>104.5</td><td>99.0</td></tr>
<tr><td>Operating margin</td><td>(150.2)</td><td>12.5</td></tr>
<tr><td>Gross margin</td><td>4,013</td><td>3,900</td></tr>
</table></body></html>""",
        encoding="utf-8",
    )
    units = {(f.metric, f.period): f.unit for f in facts_of(path)}
    assert "millions" not in units[("combined ratio", "FY2024")]
    assert "millions" not in units[("loan-to-deposit ratio", "FY2024")]
    assert "millions" not in units[("operating margin", "FY2024")]
    assert units[("gross margin", "FY2024")] == "$ in millions"


def test_a_balance_at_a_date_of_someone_no_table_names_is_left_to_the_passages(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    write_directory: Callable[..., Path],
) -> None:
    """A day of a month reads as that month where tables hold months (SVB's balances), so
    "the net asset value of the Privium fund at 31 December 2016" became a figure question
    of nobody in particular, "not found", where the fund's page states it. With no table
    reporting that month for anyone, the passages answer."""
    corpus = tmp_path / "finance"
    corpus.mkdir()
    cover_and_income(corpus / "svb-financial-group-10q-q2-2022.xlsx")
    (corpus / "privium-key-figures-2016.md").write_text(
        "# Privium Done Hedge Fund key figures 2016\n\nThe Net Asset Value of the Privium "
        "Done Hedge Fund at 31 December 2016 was EUR 54,256,197.\n",
        encoding="utf-8",
    )
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), SQLiteStore(tmp_path / "fund.db"))
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    result = engine.ask(
        "What was the total net asset value of the Privium Done Hedge Fund at 31 December 2016?",
        "fay",
    )
    assert result.status is Status.ANSWERED and "54,256,197" in result.answer, result.answer


def segments_sheet(path: Path) -> Path:
    """An SEC detail sheet of segments, as filers' workbooks publish it: the company's rows,
    then each segment's under a row naming its members in one cell, nested."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Business Segments (Information "
    sheet.append([
        "Business Segments (Information by Operating Segment) (Details 2) - USD ($) $ in Thousands",
        "12 Months Ended", None,
    ])  # fmt: skip
    sheet.append([None, "Dec. 31, 2018", "Dec. 31, 2017"])
    for row in (
        ["Segment Reporting Information [Line Items]", None, None],
        ["Operating Revenues", 2695966, 2591846],
        ["Income (loss) from operations", 246161, 136403],
        ["Operating Segments [Member] | Education [Member]", None, None],
        ["Segment Reporting Information [Line Items]", None, None],
        ["Operating Revenues", 1451015, 1516776],
        ["Operating Segments [Member] | Education [Member] | Reportable Subsegments [Member]"
         " | Kaplan International [Member]", None, None],
        ["Segment Reporting Information [Line Items]", None, None],
        ["Operating Revenues", 719982, 697999],
        ["Income (loss) from operations", 70315, 51623],
    ):  # fmt: skip
        sheet.append(row)
    sheet.merge_cells("A1:A2")
    sheet.merge_cells("B1:C1")
    book.save(path)
    return path


@pytest.mark.parametrize(
    ("question", "value", "status"),
    [
        ("What was Kaplan International's revenue in 2018?", "719,982", Status.ANSWERED),
        ("What were Orbital's operating revenues in 2018?", "2,695,966", Status.ANSWERED),
        ("What was Orbital's Education revenue in 2017?", "1,516,776", Status.ANSWERED),
        ("What was Orbital's revenue in Europe in 2018?", None, Status.NOT_FOUND),
    ],
)
def test_a_segment_s_rows_answer_for_the_segment_and_never_for_the_company(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    question: str,
    value: str | None,
    status: Status,
) -> None:
    """Under "… | Kaplan International [Member]", "Operating Revenues" is Kaplan
    International's (its last member's); the company's own rows above the first member are
    the company's; a part no row names is not found. The sheet's title, "(Information by
    Operating Segment)", is an aside, not a measure broken down by segment."""
    corpus = tmp_path / "finance"
    corpus.mkdir()
    segments_sheet(corpus / "orbital-holdings-10k-2018-financial-report.xlsx")
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    answer = ask(engine, question, status)
    if value is not None:
        assert value in answer, answer
    others = {"719,982", "2,695,966", "1,516,776", "1,451,015", "697,999", "2,591,846"} - {value}
    assert not [o for o in others if o in answer], answer


def test_a_breakdown_s_bare_members_are_each_the_part_s(tmp_path: Path) -> None:
    """An SEC disaggregation sheet names each member bare ("Ice cream") right above a
    "… [Line Items]" row: the revenues under it are ice cream's, where one label's many
    values for one period had given none; the company's row above them stays its own."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Revenue Recognition - Disaggregation of Revenue (Details) - USD ($)"
                  " $ in Thousands", "12 Months Ended", None])  # fmt: skip
    sheet.append([None, "Dec. 31, 2019", "Dec. 31, 2018"])
    for row in (
        ["Disaggregation of Revenue [Line Items]", None, None],
        ["Revenues", 7328663, 7755283],
        ["Fluid milk", None, None],
        ["Disaggregation of Revenue [Line Items]", None, None],
        ["Revenues", 4580538, 4756360],
        ["Ice cream", None, None],
        ["Disaggregation of Revenue [Line Items]", None, None],
        ["Revenues", 1040979, 1077027],
    ):
        sheet.append(row)
    sheet.merge_cells("A1:A2")
    sheet.merge_cells("B1:C1")
    path = tmp_path / "orbital-foods-10k-2019-financial-report.xlsx"
    book.save(path)
    by = {(f.metric.casefold(), f.period): f.value for f in facts_of(path)}
    assert by.get(("ice cream revenues", "FY2018")) == 1077027
    assert by.get(("fluid milk revenues", "FY2019")) == 4580538
    assert by.get(("revenues", "FY2019")) == 7328663
    assert [v for (m, _), v in by.items() if m == "revenues"] == [7328663, 7755283]
