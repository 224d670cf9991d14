"""Statements set out by white space alone, as filings' PDFs print them (a 10-Q's statement
of operations): read as tables where they read without guessing, so their figures become
facts; left as page text where they do not.

The PDFs are drawn here with fpdf2 the way such statements are typeset: labels at the left
margin (a heading such as "Net sales:" over indented rows), figures right-aligned in
columns with "$" set apart on a row's first and total lines, and header lines whose
phrases stand over the columns ("Three Months Ended" centred over two, a date over each).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from fpdf import FPDF

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import FactSettings
from clearance.ingest.facts import extract_facts
from clearance.ingest.loaders import extract

# right edges (mm) of the four figure columns, and where their "$" signs stand
RIGHTS = (120.0, 146.0, 172.0, 198.0)
WIDTH = 22.0

ROWS: list[tuple[str, float, Sequence[str], bool]] = [
    # label, indent (mm), figures, whether "$" stands before each figure
    ("Net sales:", 8, (), False),
    ("Products", 11, ("60,584", "63,355", "230,901", "245,241"), True),
    ("Services", 11, ("21,213", "19,604", "62,886", "58,941"), False),
    ("Total net sales", 14, ("81,797", "82,959", "293,787", "304,182"), False),
    ("Cost of sales:", 8, (), False),
    ("Products", 11, ("39,136", "41,485", "146,696", "155,084"), False),
    ("Services", 11, ("6,248", "5,589", "18,370", "16,411"), False),
    ("Total cost of sales", 14, ("45,384", "47,074", "165,066", "171,495"), False),
    ("Operating income", 8, ("22,998", "23,076", "87,332", "94,543"), False),
    ("Other income/(expense), net", 8, ("(265)", "(10)", "(594)", "(97)"), False),
    ("Net income", 8, ("19,881", "19,442", "74,039", "79,082"), True),
]


class _Page:
    """A letter page written line by line: ``line`` sets text at ``x`` on the current
    line (``y``, in mm), aligned in a box of ``width``."""

    def __init__(self, size: int) -> None:
        self.pdf = FPDF(format="letter")
        self.pdf.add_page()
        self.pdf.set_font("Helvetica", size=size)
        self.y = 20.0

    def line(self, text: str, x: float, width: float, align: str = "L") -> None:
        self.pdf.set_xy(x, self.y)
        self.pdf.cell(width, 4, text, align=align)


def statement(
    path: Path,
    rows: Sequence[tuple[str, float, Sequence[str], bool]] = ROWS,
    *,
    dated: bool = True,
    stray: bool = False,
    note: str = "",
) -> Path:
    """A one-page statement of operations; ``dated=False`` drops the header's dates,
    ``stray=True`` sets one figure between two columns."""
    page = _Page(size=9)

    page.line("Harbor Devices Inc.", 80, 60, "C")
    page.y += 6
    page.line("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)", 50, 120, "C")
    page.y += 5
    page.line("(In millions, except per share amounts)", 60, 100, "C")
    page.y += 8
    page.line("Three Months Ended", RIGHTS[0] - WIDTH + 4, RIGHTS[1] - RIGHTS[0] + WIDTH - 8, "C")
    page.line("Nine Months Ended", RIGHTS[2] - WIDTH + 4, RIGHTS[3] - RIGHTS[2] + WIDTH - 8, "C")
    page.y += 5
    if dated:
        for right, date in zip(RIGHTS, ("July 1,", "June 25,", "July 1,", "June 25,"), strict=True):
            page.line(date, right - WIDTH, WIDTH, "R")
        page.y += 4
        for right, year in zip(RIGHTS, ("2023", "2022", "2023", "2022"), strict=True):
            page.line(year, right - WIDTH, WIDTH, "R")
        page.y += 6
    for label, indent, figures, dollar in rows:
        page.line(label, indent, 80)
        for right, figure in zip(RIGHTS, figures, strict=False):
            if dollar:
                page.line("$", right - WIDTH - 3, 3)
            page.line(figure, right - WIDTH, WIDTH, "R")
        if stray and label == "Services" and figures:
            page.line("999", RIGHTS[0] + 4, 8, "R")  # between the first two columns
        page.y += 5
    page.y += 6
    page.line("See accompanying Notes to Condensed Consolidated Financial Statements.", 40, 140)
    if note:
        page.y += 10
        page.line(note, 10, 190)
    page.pdf.output(str(path))
    return path


def tables(path: Path) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    return [
        (s.locator, s.table) for s in extract(path, max_chars=800).sections if s.table is not None
    ]


def test_a_statement_set_out_by_white_space_is_read_row_by_row(tmp_path: Path) -> None:
    rows = dict(tables(statement(tmp_path / "10-q.pdf")))
    header = (
        "",
        "Three Months Ended July 1, 2023",
        "Three Months Ended June 25, 2022",
        "Nine Months Ended July 1, 2023",
        "Nine Months Ended June 25, 2022",
    )
    total = rows["page=1,table=1,row=Total net sales"]
    assert total == (header, ("Total net sales", "81,797", "82,959", "293,787", "304,182"))
    # "$" set apart stays with its figure; a heading's rows are its lines, the products'
    # cost never the products' sales
    products = rows["page=1,table=1,row=Net sales: Products"][1]
    assert products == ("Net sales: Products", "$60,584", "$63,355", "$230,901", "$245,241")
    cost = rows["page=1,table=1,row=Cost of sales: Products"][1]
    assert cost[1:] == ("39,136", "41,485", "146,696", "155,084")
    other = rows["page=1,table=1,row=Other income/(expense) net"][1]
    assert other[1:] == ("(265)", "(10)", "(594)", "(97)")


SEGMENTS: list[tuple[str, float, Sequence[str], bool]] = [
    ("Americas:", 8, (), False),
    ("Net sales", 11, ("35,383", "37,472", "122,445", "129,850"), True),
    ("Operating income", 11, ("13,117", "13,914", "44,908", "48,778"), True),
    ("Europe:", 8, (), False),
    ("Net sales", 11, ("20,205", "19,287", "71,831", "72,323"), True),
    ("Operating income", 11, ("7,995", "7,124", "27,380", "27,174"), True),
]


def test_a_segment_s_rows_are_named_by_it_never_the_company_s(tmp_path: Path) -> None:
    """Under "Americas:" and "Europe:" each region's "Net sales" is that region's; read bare
    it would be a second figure for the company's net sales."""
    rows = [table[1] for _, table in tables(statement(tmp_path / "note.pdf", SEGMENTS))]
    labels = [row[0] for row in rows if any(row[1:])]
    assert labels == [
        "Americas Net sales",
        "Americas Operating income",
        "Europe Net sales",
        "Europe Operating income",
    ]


@pytest.mark.parametrize(
    ("why", "kwargs"),
    [
        ("a figure outside the columns", {"stray": True}),
        ("no header names a year", {"dated": False}),
    ],
)
def test_a_statement_that_does_not_read_without_guessing_stays_page_text(
    tmp_path: Path, why: str, kwargs: dict[str, bool]
) -> None:
    path = statement(tmp_path / "10-q.pdf", **kwargs)
    assert tables(path) == [], why
    text = " ".join(s.text for s in extract(path, max_chars=800).sections)
    assert "81,797" in text  # nothing is lost: the page keeps its text


@pytest.fixture
def engine(finance_engine: Callable[[Callable[[Path], object]], Clearance]) -> Clearance:
    title = {"title": "Harbor Devices Inc. Form 10-Q for the quarter ended July 1, 2023"}

    def write(corpus: Path) -> None:
        for pdf in (statement(corpus / "harbor-q3.pdf"), statement(corpus / "note.pdf", SEGMENTS)):
            pdf.with_name(pdf.name + ".meta.json").write_text(json.dumps(title), "utf-8")

    return finance_engine(write)


def answer(app: Clearance, question: str) -> str:
    result = app.ask(question, "fay")
    assert result.status is Status.ANSWERED, (question, result.status, result.answer)
    return result.answer


def test_a_pdf_statement_s_figures_are_answered_from_its_cells(engine: Clearance) -> None:
    sales = answer(
        engine, "What were Harbor Devices' total net sales for the three months ended July 1, 2023?"
    )
    assert "81,797 million" in sales and "page=1,table=1" not in sales
    assert "Another source" not in sales and "35,383" not in sales  # no region's figure
    europe = answer(
        engine, "What were Harbor Devices' Europe net sales in the three months ended July 1, 2023?"
    )
    assert "$20,205 million" in europe and "81,797" not in europe
    income = answer(engine, "Harbor Devices' net income for the nine months ended July 1, 2023?")
    assert "$74,039 million" in income
    assert "Another source" not in income
    products = answer(
        engine,
        "What were Harbor Devices' products net sales in the nine months ended July 1, 2023?",
    )
    assert "$230,901 million" in products and "146,696" not in products


# right edges (mm) of a ledger's five columns: four quarters and the year
LEDGER = (100.0, 124.0, 148.0, 172.0, 196.0)


def ledger(path: Path) -> Path:
    """A bookkeeping package's statement: accounts numbered in their labels ("4105 -
    Earned Income - Memberships"), quarters in columns, and a header line over the last
    column alone ("Totals")."""
    page = _Page(size=8)

    page.line("Statement of Revenues and Expenses", 10, 80)
    page.y += 6
    quarters = ("Jan - Mar", "April - June", "July - Sept", "Oct - Dec", "Jan - Dec")
    for right, words in zip(LEDGER, quarters, strict=True):
        page.line(words, right - WIDTH, WIDTH, "R")
    page.y += 4
    for right in LEDGER:
        page.line("2024", right - WIDTH, WIDTH, "R")
    page.y += 4
    page.line("Totals", LEDGER[-1] - WIDTH, WIDTH, "R")
    page.y += 6
    rows = [
        (
            "4105 - Earned Income - Memberships",
            ("181,366.42", "141,191.67", "178,106.25", "150,279.74", "650,944.08"),
        ),
        (
            "4110 - Earned Income - Fee For Service",
            ("16,743.75", "43,602.72", "23,165.92", "118,875.24", "202,387.63"),
        ),
        ("Total Revenue", ("198,110.17", "184,794.39", "201,272.17", "269,154.98", "853,331.71")),
    ]
    for label, figures in rows:
        page.line(label, 10, 80)
        for right, figure in zip(LEDGER, figures, strict=True):
            page.line(figure, right - WIDTH, WIDTH, "R")
        page.y += 5
    page.pdf.output(str(path))
    return path


def test_account_numbers_open_labels_and_a_header_heads_only_the_columns_it_stands_over(
    tmp_path: Path,
) -> None:
    rows = dict(tables(ledger(tmp_path / "ledger.pdf")))
    header, row = rows["page=1,table=1,row=4105 - Earned Income - Memberships"]
    assert header == (
        "",
        "Jan - Mar 2024",
        "April - June 2024",
        "July - Sept 2024",
        "Oct - Dec 2024",
        "Jan - Dec 2024 Totals",
    )
    assert row == (
        "4105 - Earned Income - Memberships",
        "181,366.42",
        "141,191.67",
        "178,106.25",
        "150,279.74",
        "650,944.08",
    )


# A bookkeeping package's export: one "Total" column, the statement's period in its title
# block, continued over a page break with no header, and a second statement of another
# organisation after it.
TOTAL = 190.0
ACTIVITY: list[tuple[str, float, str]] = [
    ("Revenue", 8, ""),
    ("40110 Memberships - Corporations", 14, "36,225.00"),
    ("40120 Memberships - Government", 14, "10,800.00"),
    ("40250 Grants - Universities", 14, "401,246.07"),
    ("41100 Workshops", 14, "30,300.00"),
    ("Total Revenue", 10, "$478,571.07"),
    ("Expenditures", 8, ""),
    ("51310 Health Insurance", 14, "73,218.04"),
    ("51320 Dental Insurance", 14, "2,793.26"),
]
CONTINUED: list[tuple[str, float, str]] = [
    ("52140 Contractors", 14, "8,572.00"),
    ("80310 Software", 14, "27,793.65"),
    ("80320 Web Services", 14, "2,263.08"),
    ("Total Expenditures", 10, "$114,640.03"),
    ("Net Revenue", 8, "$363,931.04"),
]
SPONSOR: list[tuple[str, float, str]] = [
    ("4200 Contributed Income - Foundations", 14, "$6,625.14"),
    ("Total Revenue", 10, "$6,625.14"),
    ("8000 Fiscal Sponsorship Fee", 14, "3,251.13"),
    ("Total for Expenditures", 10, "$90,012.48"),  # as QuickBooks Online writes totals
    ("Net Income", 8, "-$83,387.34"),
]


def _rows(page: _Page, rows: Sequence[tuple[str, float, str]]) -> None:
    for label, indent, figure in rows:
        page.line(label, indent, 90)
        if figure:
            page.line(figure, TOTAL - 30, 30, "R")
        page.y += 5


def _title_block(page: _Page, *lines: str) -> None:
    for text in lines:
        page.line(text, 60, 90, "C")
        page.y += 6
    page.y += 10
    page.line("Total", TOTAL - 30, 30, "R")
    page.y += 8


def bookkeeping(path: Path) -> Path:
    page = _Page(size=9)
    _title_block(page, "Harbor Trust, Inc", "Statement of Activity", "January-December, 2025")
    _rows(page, ACTIVITY)
    page.pdf.add_page()
    page.y = 20.0
    _rows(page, CONTINUED)  # the page break: no title, no header
    page.pdf.add_page()
    page.y = 20.0
    _title_block(
        page, "Community Fund (for Harbor Trust)", "Profit and Loss", "January-December, 2025"
    )
    _rows(page, SPONSOR)
    page.pdf.output(str(path))
    return path


def test_a_one_column_statement_is_dated_by_its_title_block_and_goes_on_over_pages(
    tmp_path: Path,
) -> None:
    """A "Total" column names no period; the title block over it does, and heads the column
    with it. The page after goes on under the same header, as the statement it continues."""
    sections = [
        s
        for s in extract(bookkeeping(tmp_path / "activity.pdf"), max_chars=800).sections
        if s.table
    ]
    rows = {s.locator: s for s in sections}
    header = ("", "January-December, 2025 Total")
    grants = rows["page=1,table=1,row=40250 Grants - Universities"]
    assert grants.table == (header, ("40250 Grants - Universities", "401,246.07"))
    assert rows["page=1,table=1,row=Total Revenue"].table[1] == ("Total Revenue", "$478,571.07")
    software = rows["page=2,table=1,row=80310 Software"]  # continued, no header of its own
    assert software.table == (header, ("80310 Software", "27,793.65"))
    assert (
        software.titles
        == grants.titles
        == (
            "January-December, 2025",
            "Statement of Activity",
            "Harbor Trust, Inc",
        )
    )
    fee = rows["page=3,table=1,row=8000 Fiscal Sponsorship Fee"]
    assert fee.titles[-1] == "Community Fund (for Harbor Trust)"
    assert fee.table[1] == ("8000 Fiscal Sponsorship Fee", "3,251.13")


def contents(path: Path) -> Path:
    """A contents page: a title naming a year, "Page" over a column of page numbers."""
    page = _Page(size=9)
    _title_block(page, "Annual Report 2025", "Contents")
    _rows(
        page,
        [
            (name, 8, str(n))
            for n, name in enumerate(
                ["Letter", "Programs", "Finances", "Board", "Donors", "Thanks"], start=3
            )
        ],
    )
    page.pdf.output(str(path))
    return path


def test_a_column_of_page_numbers_is_no_statement(tmp_path: Path) -> None:
    assert tables(contents(tmp_path / "report.pdf")) == []


@pytest.fixture
def bookkeeping_engine(
    finance_engine: Callable[[Callable[[Path], object]], Clearance],
) -> Clearance:
    return finance_engine(lambda corpus: bookkeeping(corpus / "2025FinancialStatement.pdf"))


def test_a_bookkeeping_export_s_figures_are_each_statement_s_own(
    bookkeeping_engine: Clearance,
) -> None:
    """Two statements of one year in one file, each about whom its title block names: the
    sponsor's fee is the sponsor's, the trust's revenue the trust's, a total on the page
    after the header is still the statement's."""
    revenue = answer(bookkeeping_engine, "What was Harbor Trust's total revenue in 2025?")
    assert "478,571.07" in revenue and "6,625.14" not in revenue
    spent = answer(bookkeeping_engine, "Harbor Trust's total expenditures for 2025?")
    assert "114,640.03" in spent and "90,012.48" not in spent
    fee = answer(bookkeeping_engine, "What did Community Fund report as net income for 2025?")
    assert "83,387.34" in fee and "363,931.04" not in fee
    spent = answer(bookkeeping_engine, "Community Fund's total expenditures in 2025?")
    assert "90,012.48" in spent and "114,640.03" not in spent


def test_a_ledger_s_account_lines_are_figures_of_their_own(tmp_path: Path) -> None:
    """An account's number opening its label ("41100 Workshops") names the row; read as the
    number 41100 of "Workshops", the row gave no figure. "January-December, 2025" is the
    year, no part of it."""
    extracted = extract(bookkeeping(tmp_path / "activity.pdf"), max_chars=800)
    facts = extract_facts(extracted.sections, doc_id="d", title="activity", vocab=FactSettings())
    lines = {(f.entity, f.metric): (f.period, f.value) for f in facts}
    assert lines[("Harbor Trust", "41100 workshops")] == ("FY2025", 30300.0)
    assert lines[("Harbor Trust", "80310 software")] == ("FY2025", 27793.65)
    assert lines[("Community Fund", "expenditures")] == ("FY2025", 90012.48)


def quarterly_statement(path: Path) -> Path:
    """A 10-Q's statement as Amazon's sets it: "Three Months Ended" and "Six Months Ended"
    each over two year columns, "June 30," narrower under each, beside the notes "(in
    millions) (unaudited)" at the left margin of its line, and the years right-aligned a
    little left of their figures."""
    page = _Page(size=9)
    rights = (128.0, 154.0, 180.0, 206.0)
    page.line("HARBOR DEVICES, INC.", 80, 60, "C")
    page.y += 6
    page.line("CONSOLIDATED STATEMENTS OF OPERATIONS", 55, 110, "C")
    page.y += 8
    for first, words in ((0, "Three Months Ended"), (2, "Six Months Ended")):
        page.line(words, rights[first] - 14, rights[first + 1] - rights[first], "C")
    page.y += 5
    page.line("(in millions) (unaudited)", 10, 60)
    for first in (0, 2):
        page.line("June 30,", rights[first] - 4, 18, "C")
    page.y += 5
    for right, year in zip(rights, ("2022", "2023", "2022", "2023"), strict=True):
        page.line(year, right - 10, 8, "R")
    page.y += 6
    for label, figures in (
        ("Total net sales", ("121,234", "134,383", "237,678", "261,741")),
        ("Operating income", ("3,317", "7,681", "7,041", "12,455")),
        ("Net income", ("(2,028)", "6,750", "(5,872)", "9,922")),
    ):
        page.line(label, 10, 80)
        for right, figure in zip(rights, figures, strict=True):
            page.line(figure, right - 22, 22, "R")
        page.y += 5
    page.pdf.output(str(path))
    return path


def test_a_group_s_date_under_its_span_heads_every_column_of_the_group(tmp_path: Path) -> None:
    """ "June 30," stands narrower than "Three Months Ended", between its two columns: it
    dates both, not the nearer alone ("Three Months Ended 2023" read the quarter as part of
    fiscal 2023). Notes at the left margin of its line end nothing."""
    rows = dict(tables(quarterly_statement(tmp_path / "10-q.pdf")))
    header, row = rows["page=1,table=1,row=Total net sales"]
    assert header == (
        "",
        "Three Months Ended June 30, 2022",
        "Three Months Ended June 30, 2023",
        "Six Months Ended June 30, 2022",
        "Six Months Ended June 30, 2023",
    )
    assert row[1:] == ("121,234", "134,383", "237,678", "261,741")


YEAR_END = (
    "The Company's fiscal year is the 52- or 53-week period that ends on the last Saturday "
    "of September."
)


@pytest.mark.parametrize("stated", [True, False])
def test_a_fiscal_quarter_is_read_where_the_filing_says_when_its_year_ends(
    finance_engine: Callable[[Callable[[Path], object]], Clearance], stated: bool
) -> None:
    """ "The third quarter of fiscal 2023" of a company whose years end in September is
    the three months ended June (July 1, 2023): answered where its 10-Q says when its
    fiscal year ends, as Apple's does. Where nothing says it, the quarter is asked back,
    never guessed from the calendar."""

    def write(corpus: Path) -> None:
        statement(corpus / "harbor-q3.pdf", note=YEAR_END if stated else "")

    engine = finance_engine(write)
    question = "What were Harbor Devices' total net sales in the third quarter of fiscal 2023?"
    result = engine.ask(question, "fay")
    if stated:
        assert result.status is Status.ANSWERED and "81,797" in result.answer, result.answer
    else:
        assert result.status is Status.CLARIFY and "81,797" not in result.answer, result.answer
