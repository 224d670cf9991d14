"""Facts from tables (clearance.ingest.facts): extraction, number parsing, and facts through
ingestion and the CLI.

Extraction is tested on real files written here with the libraries people use (python-pptx,
openpyxl, python-docx, csv, Markdown), in the three layouts tables come in: metric rows ×
period columns with the entity in the title; entity rows × period columns with the metric
in the title; long format. How every store keeps facts and filters them exactly like
chunks is tested in tests/conformance/test_facts.py.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import click
import docx
import openpyxl
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from pptx import Presentation
from pptx.util import Inches

import factories
from clearance.cli import facts_cmds
from clearance.cli.context import AppContext
from clearance.config import FactSettings, Settings, settings_from_dict
from clearance.ingest import facts as facts_module
from clearance.ingest import pipeline as pipeline_module
from clearance.ingest.facts import (
    Match,
    Vocabulary,
    _longest,
    extract_facts,
    format_number,
    normalize,
    parse_number,
    statement_entity,
    vocab_fingerprint,
)
from clearance.ingest.loaders import extract
from clearance.ingest.pipeline import Ingestor
from clearance.model import Chunk, Document, Fact, Section
from clearance.store.sqlite import SQLiteStore

SettingsFactory = Callable[..., Settings]

FACTS: dict[str, Any] = {
    "metrics": {
        "revenue": ["Revenue", "net sales", "売上高"],
        "operating_profit": ["operating profit", "営業利益"],
        "headcount": ["headcount", "employees", "従業員数"],
    },
    "entities": {
        "North Co": ["Japan", "日本", "North"],
        "South Co": ["US", "USA", "米国"],
        "East Co": ["EU", "Europe", "欧州"],
    },
    "channels": {"total": ["actual"], "budget": ["budget", "予算"]},
    "units": {"USD m": ["USD m", "USD million"], "JPY m": ["百万円"], "people": ["people", "人"]},
    "metric_units": {"revenue": "USD m", "headcount": "people"},
}


def vocab(extra: dict[str, Any] | None = None) -> FactSettings:
    return settings_from_dict({"facts": {**FACTS, **(extra or {})}}).facts


VOCAB = vocab()


def facts_of(path: Path, title: str | None = None) -> list[Fact]:
    extracted = extract(path, max_chars=800)
    return extract_facts(
        extracted.sections,
        doc_id="files:doc",
        title=title if title is not None else (extracted.title or path.stem),
        vocab=VOCAB,
    )


def table(facts: Sequence[Fact]) -> set[tuple[str, str, str, str, float, str]]:
    return {(f.entity, f.period, f.metric, f.channel, f.value, f.unit) for f in facts}


# --------------------------------------------------------------------------- file writers


def write_pptx(path: Path, slides: Sequence[tuple[str, list[list[str]]]]) -> Path:
    deck = Presentation()
    for title, rows in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # "Title Only"
        slide.shapes.title.text = title
        shape = slide.shapes.add_table(
            len(rows), len(rows[0]), Inches(0.5), Inches(1.5), Inches(9), Inches(3)
        )
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                shape.table.cell(r, c).text = text
    deck.save(str(path))
    return path


def write_xlsx(path: Path, sheets: dict[str, list[list[Any]]], title: str | None = None) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    if title:
        book.properties.title = title
    book.save(path)
    return path


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


def write_docx(path: Path, title: str, tables: dict[str, list[list[str]]]) -> Path:
    document = docx.Document()
    document.add_heading(title, 0)
    document.add_heading("Results by region", 1)
    for heading, rows in tables.items():
        document.add_heading(heading, 2)
        grid = document.add_table(rows=len(rows), cols=len(rows[0]))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                grid.cell(r, c).text = text
    document.save(str(path))
    return path


# --------------------------------------------------------------------------- layouts


def test_pptx_metric_rows_period_columns_entity_in_slide_title(tmp_path: Path) -> None:
    path = write_pptx(
        tmp_path / "results_fy2024.pptx",
        [
            ("Agenda", [["Item", "Owner"], ["Intro", "Ann"]]),
            (
                "Results by region: Japan",
                [
                    ["", "FY2023", "FY2024"],
                    ["Revenue (USD m)", "1,250", "1,320"],
                    ["Headcount (people)", "1 240", "1 305"],
                    ["Win rate (%)", "41", "43"],  # a measure the vocabulary does not know
                ],
            ),
        ],
    )
    facts = facts_of(path)
    assert table(facts) == {
        ("North Co", "FY2023", "revenue", "total", 1250.0, "USD m"),
        ("North Co", "FY2024", "revenue", "total", 1320.0, "USD m"),
        ("North Co", "FY2023", "headcount", "total", 1240.0, "people"),
        ("North Co", "FY2024", "headcount", "total", 1305.0, "people"),
        # the vocabulary does not know it: named by its label, in the unit the label states
        ("North Co", "FY2023", "win rate", "total", 41.0, "%"),
        ("North Co", "FY2024", "win rate", "total", 43.0, "%"),
    }
    revenue = next(f for f in facts if f.metric == "revenue" and f.period == "FY2024")
    # PPTX cell sections already carry row and col: the locator is kept as it is
    assert revenue.locator == "slide=2,table=1,row=Revenue (USD m),col=FY2024"
    assert revenue.raw == "1,320"
    assert revenue.doc_id == "files:doc"


def test_pptx_japanese_labels_and_budget_channel(tmp_path: Path) -> None:
    path = write_pptx(
        tmp_path / "briefing.pptx",
        [
            (
                "地域別業績：米国（US）",
                [
                    ["", "2024年度 実績", "2025年度 予算"],
                    ["売上高 (USD m)", "６７２.４", "７３１.８"],
                    ["従業員数 (人)", "１，９５５", "２，０４１"],
                ],
            )
        ],
    )
    assert table(facts_of(path, title="2025年度 決算説明資料")) == {
        ("South Co", "FY2024", "revenue", "total", 672.4, "USD m"),
        ("South Co", "FY2025", "revenue", "budget", 731.8, "USD m"),
        ("South Co", "FY2024", "headcount", "total", 1955.0, "people"),
        ("South Co", "FY2025", "headcount", "budget", 2041.0, "people"),
    }


def test_xlsx_entity_rows_period_columns_metric_in_sheet_name(tmp_path: Path) -> None:
    path = write_xlsx(
        tmp_path / "kpis.xlsx",
        {
            "Revenue (USD m)": [
                ["Region", "FY2024", "FY2025"],
                ["Japan", 448.2, 486.9],
                ["US", 672.4, 731.8],
                ["Total", 1120.6, 1218.7],  # not an entity: skipped, not guessed
            ],
            "Notes": [["Note"], ["Figures are unaudited."]],
        },
        title="Regional KPIs",
    )
    facts = facts_of(path)
    assert table(facts) == {
        ("North Co", "FY2024", "revenue", "total", 448.2, "USD m"),
        ("North Co", "FY2025", "revenue", "total", 486.9, "USD m"),
        ("South Co", "FY2024", "revenue", "total", 672.4, "USD m"),
        ("South Co", "FY2025", "revenue", "total", 731.8, "USD m"),
    }
    japan = next(f for f in facts if f.entity == "North Co" and f.period == "FY2025")
    assert japan.locator == "sheet=Revenue (USD m),range=A1:C4,row=Japan,col=FY2025"


def test_xlsx_long_format_with_fiscal_year_column(tmp_path: Path) -> None:
    path = write_xlsx(
        tmp_path / "long.xlsx",
        {
            "Data": [
                ["Region", "Fiscal year", "Revenue", "Operating profit"],
                ["Japan", "FY2024", "1,320", "(45)"],
                ["EU", "2025年度", 321.5, -3.5],
            ]
        },
    )
    facts = facts_of(path)
    assert table(facts) == {
        ("North Co", "FY2024", "revenue", "total", 1320.0, "USD m"),
        ("North Co", "FY2024", "operating_profit", "total", -45.0, ""),
        ("East Co", "FY2025", "revenue", "total", 321.5, "USD m"),
        ("East Co", "FY2025", "operating_profit", "total", -3.5, ""),
    }
    loss = next(f for f in facts if f.value == -45.0)
    assert loss.raw == "(45)"
    assert loss.locator == "sheet=Data,range=A1:D3,row=Japan / FY2024,col=Operating profit"


def test_csv_long_format_with_metric_and_unit_columns(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "regional.csv",
        [
            ["region", "metric", "unit", "FY2023", "FY2024"],
            ["Japan", "Revenue", "USD m", "412.5", "448.2"],
            ["US", "Headcount", "people", "1870", "1955"],
            ["EU", "Net sales", "百万円", "1,702*", "-"],  # "-" is no number
            ["EU", "Net sales", "百万円", "12%", "9"],  # "%" contradicts 百万円: no fact
        ],
    )
    facts = facts_of(path)
    assert table(facts) == {
        ("North Co", "FY2023", "revenue", "total", 412.5, "USD m"),
        ("North Co", "FY2024", "revenue", "total", 448.2, "USD m"),
        ("South Co", "FY2023", "headcount", "total", 1870.0, "people"),
        ("South Co", "FY2024", "headcount", "total", 1955.0, "people"),
        ("East Co", "FY2023", "revenue", "total", 1702.0, "JPY m"),
        ("East Co", "FY2024", "revenue", "total", 9.0, "JPY m"),
    }
    assert next(f for f in facts if f.value == 448.2).locator == (
        "rows=2-5,row=Japan / Revenue / USD m,col=FY2024"
    )


def test_csv_key_value_long_format_and_unknown_measures(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "values.csv",
        [
            ["id", "region", "metric", "period", "value"],
            ["r1", "Japan", "Revenue", "Q3 2025", "310.4"],
            ["r2", "US", "Revenue", "2025年度第3四半期", "401"],
        ],
    )
    assert table(facts_of(path, title="")) == {
        ("North Co", "Q3 2025", "revenue", "total", 310.4, "USD m"),
        ("South Co", "Q3 2025", "revenue", "total", 401.0, "USD m"),
    }
    # two numbers in a row whose headers name nothing: which one is the metric? neither
    path = write_csv(
        tmp_path / "territories.csv",
        [
            ["territory", "owner", "named_accounts", "quota"],
            ["US-West", "Open headcount", "29", "1.20"],
        ],
    )
    assert facts_of(path, title="Territory plan FY2026") == []


def test_docx_heading_path_gives_the_entity(tmp_path: Path) -> None:
    path = write_docx(
        tmp_path / "report.docx",
        "Annual Report FY2025",
        {
            "Japan": [["Metric", "FY2024", "FY2025"], ["Revenue (USD m)", "448.2", "486.9"]],
            "欧州": [["指標", "2024年度", "2025年度"], ["営業利益 (百万円)", "△27.8", "33.1"]],
        },
    )
    facts = facts_of(path)
    assert table(facts) == {
        ("North Co", "FY2024", "revenue", "total", 448.2, "USD m"),
        ("North Co", "FY2025", "revenue", "total", 486.9, "USD m"),
        ("East Co", "FY2024", "operating_profit", "total", -27.8, "JPY m"),
        ("East Co", "FY2025", "operating_profit", "total", 33.1, "JPY m"),
    }
    first = next(f for f in facts if f.value == 448.2)
    assert first.locator == (
        "section=Annual Report FY2025 > Results by region > Japan,table=1,"
        "row=Revenue (USD m),col=FY2024"
    )


def test_markdown_table_quarters_and_ambiguity(tmp_path: Path) -> None:
    path = tmp_path / "q3.md"
    path.write_text(
        "# 日本 四半期業績\n\n"
        "| 指標 | 2025年度第3四半期 | 2025年度 vs 2024年度 |\n"
        "|---|---|---|\n"
        "| 売上高 | 1,320 | 80 |\n",
        encoding="utf-8",
    )
    # the longest period wins (Q3 2025, not FY2025); a column naming two periods is a
    # difference, not a figure for either: skipped
    assert table(facts_of(path)) == {("North Co", "Q3 2025", "revenue", "total", 1320.0, "USD m")}


def test_nearest_context_wins_over_the_title() -> None:
    section = Section(
        "Japan | FY2024 | 1",
        "section=US,table=1,row=Japan",
        atomic=True,
        table=(("Region", "FY2024", "Headcount"), ("Japan", "FY2024", "1,305")),
    )
    facts = extract_facts([section], doc_id="d:1", title="Europe FY2019 revenue", vocab=VOCAB)
    assert table(facts) == {("North Co", "FY2024", "headcount", "total", 1305.0, "people")}
    assert facts[0].locator == "section=US,table=1,row=Japan,col=Headcount"


def test_no_period_no_facts_and_bad_cells_are_skipped() -> None:
    section = Section("x", "rows=2-2", True, (("Region", "Offices"), ("Japan", "1")))
    assert extract_facts([section], doc_id="d", title="Revenue", vocab=FactSettings()) == []
    broken = Section("x", "not a locator", True, (("Region", "FY2024"), ("Japan", "7")))
    odd = Section("x", "rows=2-2", True, (("Region",), ("Japan", "8", "9")))
    facts = extract_facts([broken, odd], doc_id="d", title="Revenue", vocab=VOCAB)
    assert [f.value for f in facts] == [7.0]
    assert facts[0].locator == "row=Japan,col=FY2024"


# A 10-Q's table under its cover line: the title names the quarter, the columns their spans.
TEN_Q = "North Co — Form 10-Q for the quarter ended March 31, 2025"


@pytest.mark.parametrize("settings", [FactSettings(), VOCAB], ids=["derived", "vocabulary"])
def test_a_column_s_part_of_the_year_is_never_the_title_s(settings: FactSettings) -> None:
    """A column headed "Nine Months Ended March 31" under a title naming "the quarter
    ended March 31, 2025" holds nine months' figures: the title gives only the year. It
    was stored as "3M ended Mar 2025", a nine-month figure given as the quarter's."""
    section = Section(
        "x",
        "sheet=S,range=A1:C3",
        atomic=True,
        table=(
            ("", "Three Months Ended March 31", "Nine Months Ended March 31"),
            ("Net sales", "19,776", "63,395"),
        ),
        titles=(TEN_Q,),
    )
    warnings: list[str] = []
    facts = extract_facts(
        [section], doc_id="d", title="north-10q", vocab=settings, warn=warnings.append
    )
    assert {(f.period, f.value) for f in facts} == {
        ("3M ended Mar 2025", 19776.0),
        ("9M ended Mar 2025", 63395.0),
    }
    assert warnings == []


@pytest.mark.parametrize("settings", [FactSettings(), VOCAB], ids=["derived", "vocabulary"])
def test_a_column_s_part_of_the_year_that_cannot_take_the_title_s_year_is_skipped(
    settings: FactSettings,
) -> None:
    """Under a title naming a fiscal quarter ("Q3 2025") the calendar year of "March 31"
    is not known, and under one naming a span ending in another month the year of March
    is not either: the cell is skipped with a warning, never stored under the title's
    period."""
    for title in ("North Co results, Q3 2025", "North Co — quarter ended June 30, 2025"):
        section = Section(
            "x",
            "sheet=S,range=A1:B2",
            atomic=True,
            table=(("", "Nine Months Ended March 31"), ("Net sales", "63,395")),
            titles=(title,),
        )
        warnings: list[str] = []
        facts = extract_facts(
            [section], doc_id="d", title="north-10q", vocab=settings, warn=warnings.append
        )
        assert facts == []
        assert len(warnings) == 1 and "'9M ended Mar' is a different part" in warnings[0]


def test_a_header_of_two_rows_names_the_measure_and_the_row_its_line_and_year() -> None:
    """A header combined from two rows (``Three Months Ended March 31 — Net Sales``) names
    the column's span and its measure; the row's first label is a line of that measure
    (``Total Company``: the total), its year label the year of the column's span. The
    measure was taken from the row ("beauty") and the year from the title."""
    three, nine = "Three Months Ended March 31", "Nine Months Ended March 31"
    section = Section(
        "x",
        "sheet=S,range=A1:E4",
        atomic=True,
        table=(
            ("", "", f"{three} — Net Sales", f"{nine} — Net Earnings/(Loss)"),
            ("Beauty", "2025", "3490", "2158"),
            ("Beauty", "2024", "3550", "2426"),
            ("Total Company", "2025", "19776", "12439"),
        ),
        titles=(TEN_Q,),
    )
    warnings: list[str] = []
    facts = extract_facts(
        [section], doc_id="d", title="north-10q", vocab=FactSettings(), warn=warnings.append
    )
    assert table(facts) == {
        ("North", "3M ended Mar 2025", "net sales", "Beauty", 3490.0, ""),
        ("North", "9M ended Mar 2025", "net earnings", "Beauty", 2158.0, ""),
        ("North", "3M ended Mar 2024", "net sales", "Beauty", 3550.0, ""),
        ("North", "9M ended Mar 2024", "net earnings", "Beauty", 2426.0, ""),
        ("North", "3M ended Mar 2025", "net sales", "total", 19776.0, ""),
        ("North", "9M ended Mar 2025", "net earnings", "total", 12439.0, ""),
    }
    assert warnings == []


SEGMENT_FIGURES = {  # segment, year → (3M net sales, EBT, net earnings, 9M the same)
    ("Beauty", 2025): (3490, 684, 539, 11231, 2746, 2158),
    ("Beauty", 2024): (3550, 753, 587, 11496, 3114, 2426),
    ("Total Company", 2025): (19776, 4661, 3793, 63395, 15646, 12439),
    ("Total Company", 2024): (20195, 4592, 3781, 63507, 14891, 11830),
}
SEGMENT_MEASURES = ("Net Sales", "Earnings/(Loss) Before Income Taxes", "Net Earnings/(Loss)")


@pytest.mark.parametrize("merged", [True, False], ids=["merged", "blank-continued"])
def test_a_10q_segment_table_as_published(tmp_path: Path, merged: bool) -> None:
    """A 10-Q's segment table, with no vocabulary: the cover line and the unit line above
    it, the periods in a header row over the measures (merged, or written once with blank
    cells after), a 2025 and a 2024 row per segment, the second with a blank segment label.
    Each figure is the column's measure for the row's segment (Total Company: the total),
    over the column's span ending in the row's year. It was read as the metric "beauty",
    from the first column of each period only, with the nine months as the quarter and the
    2024 rows dropped."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Segment results"
    sheet.append(["ACME Corporation — Form 10-Q for the quarter ended March 31, 2025"])
    sheet.append(["Amounts in millions of dollars except per share amounts."])
    sheet.append([None, None, "Three Months Ended March 31", None, None,
                  "Nine Months Ended March 31"])  # fmt: skip
    sheet.append([None, None, *SEGMENT_MEASURES, *SEGMENT_MEASURES])
    for (segment, year), values in SEGMENT_FIGURES.items():
        sheet.append([segment if year == 2025 else None, year, *values])
    if merged:
        sheet.merge_cells("C3:E3")
        sheet.merge_cells("F3:H3")
    path = tmp_path / "acme-10q-q3-fy2025-segment-results.xlsx"
    book.save(path)

    warnings: list[str] = []
    extracted = extract(path, max_chars=1500)
    facts = extract_facts(
        extracted.sections,
        doc_id="d",
        title=path.stem,
        vocab=FactSettings(),
        warn=warnings.append,
    )
    metrics = ("net sales", "earnings before income taxes", "net earnings")
    expected = {
        (
            "ACME",  # the sheet's title row names the company with its legal form
            f"{span} ended Mar {year}",
            metrics[i % 3],
            "total" if segment == "Total Company" else segment,
            float(value),
            "in millions of dollars",  # the unit line above the table
        )
        for (segment, year), values in SEGMENT_FIGURES.items()
        for i, (span, value) in enumerate(zip(["3M"] * 3 + ["9M"] * 3, values, strict=True))
    }
    assert table(facts) == expected
    assert warnings == []
    beauty_2024 = next(f for f in facts if f.value == 11496)
    assert beauty_2024.locator == (
        "sheet=Segment results,range=A1:H8,row=Beauty / 2024,"
        "col=Nine Months Ended March 31 — Net Sales"
    )


def test_a_filings_financial_report_workbook_gives_its_statements(tmp_path: Path) -> None:
    """The spreadsheet the SEC publishes with every filing (Financial_Report.xlsx): the
    title cell, merged down two rows, says "USD ($) shares in Thousands, $ in Millions";
    "3 Months Ended" merged over two columns heads "Mar. 29, 2025" and "Mar. 30, 2024".
    Every column is the span ending on its date; amounts are in millions of dollars, share
    counts in thousands of shares, and a per-share amount in dollars."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "CONDENSED CONSOLIDATED STATEMEN"
    sheet.append(
        [
            "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited) - USD ($)"
            " shares in Thousands, $ in Millions",
            "3 Months Ended",
            None,
            "6 Months Ended",
            None,
        ]
    )
    sheet.append([None, "Mar. 29, 2025", "Mar. 30, 2024", "Mar. 29, 2025", "Mar. 30, 2024"])
    sheet.append(["Net sales", 95359, 90753, 219659, 210328])
    sheet.append(["Earnings per share:", "\xa0", "\xa0", "\xa0", "\xa0"])
    sheet.append(["Basic (in dollars per share)", 1.65, 1.53, 4.06, 3.72])
    sheet.append(["Diluted (in dollars per share)", 1.65, 1.53, 4.05, 3.71])
    sheet.append(["Shares used in computing earnings per share:", "\xa0", "\xa0", "\xa0", "\xa0"])
    sheet.append(["Basic (in shares)", 14994082, 15405856, 15024638, 15447612])
    sheet.append(["Diluted (in shares)", 15056133, 15464709, 15081724, 15508265])
    sheet.append(["Total other income", 7, 8, 9, 10])
    sheet.append(["Other", 1, 2, 3, 4])
    sheet.merge_cells("A1:A2")
    sheet.merge_cells("B1:C1")
    sheet.merge_cells("D1:E1")
    path = tmp_path / "acme-10q-2025-03-29-financial-report.xlsx"
    book.save(path)
    extracted = extract(path, max_chars=1500)
    facts = extract_facts(extracted.sections, doc_id="d", title=path.stem, vocab=FactSettings())
    by = {(f.metric, f.period): (f.value, f.unit) for f in facts}
    assert by[("net sales", "3M ended Mar 2025")] == (95359, "$ in millions")
    assert by[("net sales", "6M ended Mar 2024")] == (210328, "$ in millions")
    # "Basic" and "Diluted" under two row headings are four figures, not two
    assert by[("diluted earnings per share", "6M ended Mar 2025")] == (4.05, "$")
    assert by[("basic earnings per share", "3M ended Mar 2025")] == (1.65, "$")
    shares = {v for (m, p), v in by.items() if m.startswith("shares") and p == "6M ended Mar 2025"}
    assert shares == {(15024638, "in thousands of shares"), (15081724, "in thousands of shares")}
    # a row heading lasts until a total: "Other" below one is no share count
    assert by[("other", "3M ended Mar 2025")] == (1, "$ in millions")


def _edgar_sheet(book: Any, name: str, title: str, rows: list[list[Any]]) -> None:
    sheet = book.create_sheet(name)
    sheet.append([title, "12 Months Ended", None, None])
    sheet.append([None, "Dec. 31, 2024", "Dec. 31, 2023", "Dec. 31, 2022"])
    for row in rows:
        sheet.append(row)
    sheet.merge_cells("A1:A2")
    sheet.merge_cells("B1:D1")


def test_a_10k_financial_report_workbook_gives_full_years_and_never_a_part_as_the_whole(
    tmp_path: Path,
) -> None:
    """A 10-K's Financial_Report.xlsx: "12 Months Ended" over "Dec. 31, 2024" is FY2024; a
    statement's first row may be a section heading ("OPERATING ACTIVITIES"); a rate "(as a
    percent)" or a count takes no "$ in Millions"; a detail sheet that lists the same lines
    under each segment's name ("EMEA", then "Latin America") gives none of them as the
    company's (each could be any part), with a warning; and a schedule of what falls due
    in each year as at a date ("Dec. 31, 2024" over rows "2025", "2026") is no measure."""
    book = openpyxl.Workbook()
    book.remove(book.active)
    _edgar_sheet(book, "CONSOLIDATED STATEMENTS OF CASH",
                 "CONSOLIDATED STATEMENTS OF CASH FLOWS - USD ($) $ in Millions",
                 [["OPERATING ACTIVITIES", "\xa0", "\xa0", "\xa0"],
                  ["Consolidated Net Income", 10649, 10703, 9571],
                  ["Depreciation and amortization", 1075, 1128, 1260]])  # fmt: skip
    _edgar_sheet(book, "INCOME TAXES - Reconciliation",
                 "INCOME TAXES - Reconciliation (Details) - USD ($) $ in Millions",
                 [["Statutory U.S. federal tax rate (as a percent)", 0.21, 0.21, 0.21],
                  ["Number of stock options exercised", 22, 31, 40]])  # fmt: skip
    _edgar_sheet(book, "EQUITY",
                 "EQUITY (Details) - USD ($) shares in Thousands, $ in Millions",
                 [["Number of shares outstanding (in shares)", 4309, 4311, 4328]])  # fmt: skip
    _edgar_sheet(book, "OPERATING SEGMENTS - Informatio",
                 "OPERATING SEGMENTS (Details) - USD ($) $ in Millions",
                 [["Operating Income (Loss)", 9992, 11311, 10909],
                  ["EMEA", "\xa0", "\xa0", "\xa0"],
                  ["Operating Income (Loss)", 4125, 4202, 3958],
                  ["Latin America", "\xa0", "\xa0", "\xa0"],
                  ["Operating Income (Loss)", 3419, 2968, 2525]])  # fmt: skip
    leases = book.create_sheet("LEASES - Maturities")
    leases.append(["LEASES - Maturities (Details) - USD ($) $ in Millions", "Dec. 31, 2024"])
    for year, value in ((2025, 322), (2026, 251), (2027, 188)):
        leases.append([year, value])
    path = tmp_path / "acme-10k-2024-Financial_Report.xlsx"
    book.save(path)
    warnings: list[str] = []
    facts = extract_facts(
        extract(path, max_chars=1500).sections,
        doc_id="d",
        title=path.stem,
        vocab=FactSettings(),
        warn=warnings.append,
    )
    by = {(f.metric, f.period): (f.value, f.unit) for f in facts}
    assert by[("consolidated net income", "FY2024")] == (10649, "$ in millions")
    assert by[("depreciation and amortization", "FY2022")] == (1260, "$ in millions")
    assert by[("statutory U.S. federal tax rate", "FY2024")] == (0.21, "")
    assert by[("number of stock options exercised", "FY2023")] == (31, "")
    # a count of shares keeps the title's scale of shares, "Number of" notwithstanding
    assert by[("number of shares outstanding", "FY2024")] == (4309, "in thousands of shares")
    assert not [f for f in facts if "operating income" in f.metric]
    assert any("a breakdown not read" in w for w in warnings), warnings
    assert not [f for f in facts if f.period in {"FY2025", "FY2026", "FY2027"}]


def test_a_corner_naming_a_measure_with_its_unit_makes_the_rows_its_lines(tmp_path: Path) -> None:
    """ "Freight revenues (Millions)" over rows of commodities: each row is a line of
    freight revenues in millions ("$" on the first and total rows only), the total row its
    total. A corner that names a statement, or rows that name statement lines, keep the
    rows as measures."""
    path = tmp_path / "acme-q2-2025-freight.md"
    path.write_text(
        "# ACME Rail Inc. — quarter ended June 30, 2025\n\n"
        "| Freight revenues (Millions) | Three months ended June 30, 2025 | Six months ended June 30, 2025 |\n"
        "|---|---|---|\n"
        "| Bulk | $ 1,901 | $ 3,737 |\n"
        "| Intermodal | 1,098 | 2,290 |\n"
        "| Total | $ 5,843 | $ 11,534 |\n\n"
        "## Statement\n\n"
        "| Income statement (USD m) | Three months ended June 30, 2025 |\n"
        "|---|---|\n"
        "| Revenue | 6,100 |\n"
        "| Operating income | 2,400 |\n",
        encoding="utf-8",
    )
    facts = extract_facts(
        extract(path, max_chars=1500).sections,
        doc_id="d",
        title="ACME Rail Inc.",
        vocab=FactSettings(),
    )
    by = {(f.metric, f.channel, f.period): (f.value, f.unit) for f in facts}
    assert by[("freight revenues", "Intermodal", "3M ended Jun 2025")] == (1098, "in millions")
    assert by[("freight revenues", "Bulk", "6M ended Jun 2025")] == (3737, "$ in millions")
    assert by[("freight revenues", "total", "3M ended Jun 2025")] == (5843, "$ in millions")
    assert by[("revenue", "total", "3M ended Jun 2025")][0] == 6100
    assert by[("operating income", "total", "3M ended Jun 2025")][0] == 2400


def test_a_notes_money_scale_never_reaches_counts_ratios_or_a_segments_total(
    tmp_path: Path,
) -> None:
    """ "(in millions, except per share data)" scales the money rows only: not a count of
    employees or stores, not a margin. A breakdown a sentence introduces "for our Industrial
    segment" is the segment's: its total is no company revenue. And a row heading names
    only the Basic and Diluted rows right under it."""
    path = tmp_path / "acme-annual.md"
    path.write_text(
        "# Acme Inc. annual report\n\n## Selected data\n\n(in millions, except per share data)\n\n"
        "| Acme Inc. | 2024 | 2023 |\n|---|---|---|\n| Revenue | $ 1,000 | $ 900 |\n"
        "| Number of employees | 12,000 | 11,500 |\n| Stores | 420 | 400 |\n"
        "| Operating margin | 12.5 | 11.0 |\n\n## Industrial segment\n\n"
        "The following table summarizes revenue by product line for our Industrial segment:\n\n"
        "| Product line (USD m) | 2024 | 2023 |\n|---|---|---|\n| Pumps | 600 | 550 |\n"
        "| Valves | 400 | 350 |\n| Total | 1,000 | 900 |\n",
        encoding="utf-8",
    )
    facts = extract_facts(
        extract(path, max_chars=1500).sections, doc_id="d", title=path.stem, vocab=FactSettings()
    )
    by = {(f.metric, f.channel, f.period): (f.value, f.unit) for f in facts}
    assert by[("revenue", "total", "FY2024")] == (1000, "$ in millions")
    assert by[("number of employees", "total", "FY2024")] == (12000, "")
    assert by[("stores", "total", "FY2024")] == (420, "")
    assert by[("operating margin", "total", "FY2024")] == (12.5, "")
    assert [f for f in facts if f.metric == "revenue" and f.value == 1000] == [
        f for f in facts if "Selected data" in f.locator and f.value == 1000
    ]
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["Acme Inc. (USD millions)", "FY2024", "FY2023"], ["Revenue", 500, 450],
                ["Earnings per share:", None, None], ["Basic", 1.2, 1.1], ["Diluted", 1.1, 1.0],
                ["Dividends", 0.5, 0.4], ["Employees", 1200, 1100]):  # fmt: skip
        sheet.append(row)
    book.save(tmp_path / "acme-eps.xlsx")
    rows = extract_facts(
        extract(tmp_path / "acme-eps.xlsx", max_chars=1500).sections,
        doc_id="d",
        title="acme-eps",
        vocab=FactSettings(),
    )
    metrics = {f.metric for f in rows}
    assert {"basic earnings per share", "diluted earnings per share", "dividends"} <= metrics
    assert "employees" in metrics


def test_a_year_ended_a_month_is_named_as_the_configured_calendar_names_it(tmp_path: Path) -> None:
    """Under years that start in April, named by the year they start in, "Year Ended March
    31, 2024" is FY2023, as 2024年3月期 beside it is; named by their end, FY2024."""
    path = tmp_path / "acme-annual.csv"
    write_csv(path, [["Acme Inc. (JPY bn)", "2024年3月期", "Year Ended March 31, 2024",
                      "12 Months Ended Mar. 31, 2024"], ["Revenue", "1,000", "1,000", "1,000"]])  # fmt: skip
    sections = extract(path, max_chars=1500).sections
    for named_by, year in (("start", "FY2023"), ("end", "FY2024")):
        vocab = settings_from_dict(
            {"facts": {"fiscal_year_start": "04-01", "fiscal_year_named_by": named_by}}
        ).facts
        facts = extract_facts(sections, doc_id="d", title=path.stem, vocab=vocab)
        assert {f.period for f in facts} == {year}, named_by


def test_a_workbook_of_banded_tables_gives_each_its_own_period(tmp_path: Path) -> None:
    """A half-year report's sheet as published: a numbered title, a band row ("In millions
    of CHF" over the row labels, the period over the figures' far right) above the
    measures, and under the first table a second one for the year before, with its own
    band. Every figure is the measure its column heads, for the segment its row names, in
    the period of its own band; the 2022 table was read as 2023's, and the title's
    "Analyses" as the measure."""
    measures = ["Sales (a)", "Trading operating profit", None, "Depreciation and amortization"]
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "OS-Rev and results"
    sheet.append(["3. Analyses by segment"])
    sheet.append(["3.1 Operating segments"])
    for year, figures in ((2023, [(12553, 2632, -337), (9467, 1373, -414)]),
                          (2022, [(12138, 1829, -348), (9283, 1494, -411)])):  # fmt: skip
        sheet.append(["In millions of CHF", None, None, None, f"January–June\n{year}"])
        sheet.append([None, *measures])
        for zone, (sales, profit, depreciation) in zip(
            ("Zone NA", "Zone EUR"), figures, strict=True
        ):
            sheet.append([zone, sales, profit, None, depreciation])
    path = tmp_path / "acme-2023-half-year-analyses-by-segment.xlsx"
    book.save(path)
    extracted = extract(path, max_chars=1500)
    warnings: list[str] = []
    facts = extract_facts(
        extracted.sections, doc_id="d", title=path.stem, vocab=FactSettings(), warn=warnings.append
    )
    by = {(f.metric, f.channel, f.period): (f.value, f.unit) for f in facts}
    assert by[("sales", "Zone NA", "Jan–Jun FY2023")] == (12553, "In millions of CHF")
    assert by[("sales", "Zone NA", "Jan–Jun FY2022")] == (12138, "In millions of CHF")
    assert by[("depreciation and amortization", "Zone EUR", "Jan–Jun FY2022")][0] == -411
    assert by[("trading operating profit", "Zone EUR", "Jan–Jun FY2023")][0] == 1373
    assert len(facts) == 12 and warnings == []
    # the second table's rows are its own, each block located from its band
    second = next(s for s in extracted.sections if s.table and "2022" in s.table[0][1])
    assert second.locator == "sheet=OS-Rev and results,range=A7:E10"


def test_a_second_band_with_a_note_and_other_rows_still_starts_its_own_table(
    tmp_path: Path,
) -> None:
    """The 2022 table's band says "(restated)" too, and its rows are other zones: its
    figures are still 2022's, never read under the 2023 band."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["In millions of CHF", None, None, "January–June 2023"])
    sheet.append([None, "Sales", "Trading operating profit", "Depreciation"])
    sheet.append(["Zone NA", 12553, 2632, -337])
    sheet.append(["In millions of CHF", None, "January–June 2022", "(restated)"])
    sheet.append([None, "Sales", "Trading operating profit", "Depreciation"])
    sheet.append(["Zone AOA", 20000, 2170, -290])
    path = tmp_path / "acme-h1.xlsx"
    book.save(path)
    facts = extract_facts(
        extract(path, max_chars=1500).sections, doc_id="d", title=path.stem, vocab=FactSettings()
    )
    assert {(f.channel, f.period) for f in facts} == {
        ("Zone NA", "Jan–Jun FY2023"),
        ("Zone AOA", "Jan–Jun FY2022"),
    }


def test_groups_set_apart_by_spacer_columns_take_the_label_written_over_them(
    tmp_path: Path,
) -> None:
    """Each year's label is written once over its group, over the group's last column."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Other information"
    sheet.append(["In millions of CHF", None, "January–June 2023", None, None, "January–June 2022"])
    sheet.append([None, "Impairment of goodwill", "Impairment of intangible assets", None,
                  "Impairment of goodwill", "Impairment of intangible assets"])  # fmt: skip
    sheet.append(["Zone NA", 0, -9, None, "—", -285])
    path = tmp_path / "acme-2023-other-information.xlsx"
    book.save(path)
    facts = extract_facts(
        extract(path, max_chars=1500).sections, doc_id="d", title=path.stem, vocab=FactSettings()
    )
    assert {(f.metric, f.period, f.value) for f in facts} == {
        ("impairment of goodwill", "Jan–Jun FY2023", 0),
        ("impairment of intangible assets", "Jan–Jun FY2023", -9),
        ("impairment of intangible assets", "Jan–Jun FY2022", -285),
    }


# --------------------------------------------------------------------------- the vocabulary


def test_vocabulary_matching_rules() -> None:
    v = Vocabulary(VOCAB)
    assert v.values("entity", "Tell us the revenue") == []  # "us" is not "US"
    assert v.values("entity", "the US and the EU") == ["South Co", "East Co"]
    assert v.values("entity", "USD m") == []  # no match inside a word
    assert v.values("entity", "ＵＳの売上高") == ["South Co"]  # full width, CJK boundary
    assert v.values("metric", "NET  SALES") == ["revenue"]  # casefold, spaces
    assert v.values("period", "FY2024の売上") == ["FY2024"]  # \b next to CJK
    assert v.values("period", "2025年度第3四半期") == ["Q3 2025"]
    assert v.values("period", "fiscal year 2023 and Q4 FY2024") == ["FY2023", "Q4 2024"]
    assert v.canonical_period("2024年度") == "FY2024"
    assert v.canonical_period("FY2024 and FY2025") is None
    assert v.canonical_period("FY20245") is None
    assert v.malformed_periods("FY20245 or Q5 2024 but FY2024") == ["FY20245", "Q5 2024"]
    longest = Vocabulary(vocab({"entities": {"Group": ["ACME"], "ACME Japan": ["ACME Japan"]}}))
    assert longest.values("entity", "ACME Japan results") == ["ACME Japan"]
    assert v.values("entity", "Revenue (US$m)") == []  # letters before "$" are a currency
    assert v.values("entity", "US revenue") == ["South Co"]


def test_a_latin_name_matches_with_or_without_its_accents() -> None:
    """ "Nestlé" is asked as "Nestle", and a file name gives "Nestle"; a Japanese name's
    voiced kana are not its unvoiced ones (ガ is not カ)."""
    v = Vocabulary(
        vocab({"entities": {"Nestle": ["Nestle"], "Société Générale": [], "ガス会社": []}})
    )
    assert v.values("entity", "Nestlé's sales") == ["Nestle"]
    assert v.values("entity", "NESTLÉ") == ["Nestle"]
    assert v.values("entity", "Societe Generale revenue") == ["Société Générale"]
    assert [(m.start, m.end) for m in v.find("entity", "Nestlé sales")] == [(0, 6)]
    assert v.values("entity", "カス会社") == []
    assert v.values("entity", "ガス会社の売上") == ["ガス会社"]


def test_a_place_named_with_a_qualifier_is_not_the_place_without_it() -> None:
    """One filing's segment "Americas" is no part of another's "North America": read so, a
    question about Coca-Cola's North America segment asked for its Americas channel and
    found nothing. A name with and without a hyphen is the same name."""
    v = Vocabulary(
        vocab(
            {
                "channels": {"Americas": [], "Korea": [], "China": []},
                "entities": {"Coca Cola": [], "Mexico": []},
            }
        )
    )
    assert v.values("channel", "Americas net sales") == ["Americas"]
    assert v.values("channel", "North America operating income") == []
    assert v.values("channel", "sales in South Korea") == []
    assert v.values("channel", "Greater China net sales") == []
    assert v.values("channel", "China net sales") == ["China"]
    assert v.values("entity", "New Mexico's budget") == []
    assert v.values("entity", "Coca-Cola's revenue") == ["Coca Cola"]
    assert v.values("entity", "Coca Cola revenue") == ["Coca Cola"]


def test_a_label_is_read_for_every_kind_and_the_longer_overlap_wins() -> None:
    v = Vocabulary(vocab({"units": {"USD m": ["USD m"], "Q": ["Q1 2025 basis"]}}))
    reading = v.read("Revenue Japan (USD m) Q1 2025 basis")
    assert reading.values["metric"] == ("revenue",)
    assert reading.values["entity"] == ("North Co",)
    assert reading.values["unit"] == ("USD m", "Q")
    assert reading.values["period"] == ()  # inside the longer unit match
    assert reading.residue().split() == ["(", ")"]


# The quadratic versions the vocabulary used before: the faster ones must agree with them.


def reference_longest(matches: Sequence[Match]) -> list[Match]:
    chosen: list[Match] = []
    for m in sorted(set(matches), key=lambda m: (-(m.end - m.start), m.start, m.canonical)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: (m.start, m.end))


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 8), st.sampled_from("abc"))))
def test_longest_agrees_with_the_quadratic_reference(spans: list[tuple[int, int, str]]) -> None:
    matches = [Match(c, start, start + length) for start, length, c in spans]
    assert _longest(matches) == reference_longest(matches)


@given(
    st.lists(
        st.sampled_from(["FY2024", "FY20245", "Q5 2024", "Q3 2025", "2025年度", "x", "Q1", " "]),
        max_size=30,
    )
)
def test_malformed_periods_agrees_with_the_quadratic_reference(words: list[str]) -> None:
    v = Vocabulary(VOCAB)
    text = " ".join(words)
    norm = normalize(text)
    recognised = v.find_periods(norm)
    spaced, back = facts_module._spaced(norm)
    spans: list[tuple[int, int]] = []
    for pattern in facts_module._PERIODISH:
        for m in pattern.finditer(spaced):
            start, end = back[m.start()], back[m.end() - 1] + 1
            if any(r.start <= start and end <= r.end for r in recognised):
                continue
            if any(start < e and s < end for s, e in spans):
                continue
            spans.append((start, end))
    assert v.malformed_periods(text) == [norm[s:e].strip() for s, e in sorted(spans)]


def test_vocab_fingerprint_changes_with_the_vocabulary() -> None:
    assert vocab_fingerprint(VOCAB) == vocab_fingerprint(vocab())
    assert vocab_fingerprint(VOCAB) != vocab_fingerprint(vocab({"default_channel": "all"}))


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("1,320", 1320.0, ""),
        ("1 320", 1320.0, ""),
        ("1\u00a0320\u00a0000", 1320000.0, ""),
        ("(45)", -45.0, ""),
        ("-3.5", -3.5, ""),
        ("−3.5", -3.5, ""),
        ("△45", -45.0, ""),
        ("12%", 12.0, "%"),
        ("１，３２０", 1320.0, ""),
        ("1,320 USD m", 1320.0, "USD m"),
        ("14,000円", 14000.0, "円"),
        ("USD 1,480", 1480.0, "USD"),
        ("$45", 45.0, "$"),
        ("+6.1%", 6.1, "%"),
        ("0.02", 0.02, ""),
        ("95.0", 95.0, ""),
        ("(12.5)", -12.5, ""),
        ("1,702*", 1702.0, ""),
        ("1,702¹", 1702.0, ""),  # not 17,021: the superscript goes before NFKC
        ("1,702 [a]", 1702.0, ""),
        ("(12.5)†", -12.5, ""),
        ("12% (b)", 12.0, "%"),
    ],
)
def test_parse_number(text: str, value: float, unit: str) -> None:
    parsed = parse_number(text)
    assert parsed is not None
    assert parsed.value == value
    assert parsed.unit_text == unit


@pytest.mark.parametrize(
    ("text", "footnote"),
    [("1,702*", "*"), ("1,702 **", "**"), ("1,702¹²", "¹²"), ("448.2 [a]", "[a]"), ("9", "")],
)
def test_parse_number_keeps_the_footnote_marker(text: str, footnote: str) -> None:
    parsed = parse_number(text)
    assert parsed is not None
    assert parsed.footnote == footnote


@pytest.mark.parametrize(
    "text",
    [
        "",
        "-",
        "—",
        "–",
        "n/a",
        "N/A",
        "*",
        "1,702 note 3",
        "FY2024",
        "Q3 2025",
        "2026-07",
        "2027-03-31",
        "17-18 September 2026",
        "3 2025",
        "(45",
        "1,32",
        "−30 °C to +70 °C",
        "PT26-01",
        "v4.6.1",
    ],
)
def test_not_a_number(text: str) -> None:
    assert parse_number(text) is None


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(finite)
def test_format_then_parse_round_trips(value: float) -> None:
    parsed = parse_number(format_number(value))
    assert parsed is not None
    assert parsed.value == value


@given(
    st.decimals(min_value=-(10**12), max_value=10**12, places=3, allow_nan=False),
    st.sampled_from(["plain", "parens", "fullwidth", "unit", "spaces"]),
)
def test_written_variants_parse_to_the_same_value(number: Decimal, style: str) -> None:
    text = format_number(number)
    value = float(number)
    if style == "parens" and value < 0:
        text = f"({text.lstrip('-')})"
    elif style == "fullwidth":
        text = text.translate({ord(c): ord(c) + 0xFEE0 for c in "0123456789,."})
    elif style == "unit":
        text = f"{text} USD m"
    elif style == "spaces":
        text = text.replace(",", " ")
    parsed = parse_number(text)
    assert parsed is not None
    assert parsed.value == value


def test_format_number_examples() -> None:
    assert format_number(1320.0) == "1,320"
    assert format_number(448.2) == "448.2"
    assert format_number(-45) == "-45"
    assert format_number(1234567.25) == "1,234,567.25"
    assert format_number(Decimal("80.0")) == "80"
    with pytest.raises(ValueError):
        format_number(float("nan"))


# --------------------------------------------------------------------------- ingestion


def document(doc_id: str, **fields: Any) -> Document:
    """In corpus ``public`` and titled after its id, unless ``fields`` say otherwise."""
    fields = {"corpus": "public", "title": f"title of {doc_id}", **fields}
    return factories.document(doc_id, **fields)


def chunk(doc: Document) -> Chunk:
    return factories.chunk(doc, "text", locator="page=1")


def fact(doc_id: str, value: float = 1.0, **kw: str) -> Fact:
    slots = {"entity": "North Co", "period": "FY2024", "metric": "revenue", "channel": "total"}
    slots.update(kw)
    return Fact(
        value=value, unit="USD m", doc_id=doc_id, locator=f"row=r{value}", raw=str(value), **slots
    )


def _ingest(settings: Any, store: SQLiteStore, root: Path) -> list[Any]:
    ingestor = Ingestor(settings, store, None)
    return ingestor.run(ingestor.plan([root])).results


def test_pipeline_stores_facts_and_reextracts_on_a_new_vocabulary(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    write_csv(docs / "kpi.csv", [["region", "FY2024"], ["Japan", "448.2"], ["US", "672.4"]])
    first = settings_factory({"facts": {**FACTS, "metrics": {"revenue": ["kpi"]}}})
    results = _ingest(first, store, docs)
    assert [r.status for r in results] == ["added"]
    assert table(store.list_facts()) == {
        ("North Co", "FY2024", "revenue", "total", 448.2, "USD m"),
        ("South Co", "FY2024", "revenue", "total", 672.4, "USD m"),
    }
    assert [r.status for r in _ingest(first, store, docs)] == ["unchanged"]
    second = settings_factory({"facts": {**FACTS, "metrics": {"headcount": ["kpi"]}}})
    assert [r.status for r in _ingest(second, store, docs)] == ["metadata"]
    assert {f.metric for f in store.list_facts()} == {"headcount"}


def test_fact_extraction_failure_never_fails_the_document(
    tmp_path: Path,
    settings_factory: SettingsFactory,
    store: SQLiteStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def explode(*args: object, **kwargs: object) -> list[Fact]:
        raise RuntimeError("vocabulary exploded")

    monkeypatch.setattr(pipeline_module, "extract_facts", explode)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    write_csv(docs / "kpi.csv", [["region", "FY2024"], ["Japan", "448.2"]])
    (result,) = _ingest(settings_factory({"facts": FACTS}), store, docs)
    assert result.status == "added"
    assert any("facts not extracted" in w for w in result.warnings)
    assert store.get_chunks(result.doc_id)
    assert store.list_facts() == []


# --------------------------------------------------------------------------- the CLI


def test_cli_facts_list(tmp_path: Path) -> None:
    config = tmp_path / "clearance.toml"
    config.write_text(
        '[embedding]\nprovider = "none"\n[facts.metrics]\nrevenue = ["Revenue"]\n'
        '[facts.entities]\n"North Co" = ["Japan"]\n',
        encoding="utf-8",
    )
    group = click.Group()
    facts_cmds.register(group)
    runner = CliRunner()
    obj = AppContext(config)
    empty = runner.invoke(group, ["facts", "list", "--json"], obj=obj)
    assert empty.exit_code == 0, empty.output
    assert json.loads(empty.output) == []

    from clearance.app import Clearance

    app = Clearance.open(
        settings_from_dict(
            {
                "embedding": {"provider": "none"},
                "facts": {"metrics": {"revenue": ["Revenue"]}, "entities": {"North Co": ["Japan"]}},
            },
            root=tmp_path,
        )
    )
    try:
        doc = document("src:a")
        app.store.upsert(doc, [chunk(doc)], facts=[fact("src:a", 1320.0)])
        other = document("src:b")
        app.store.upsert(other, [chunk(other)], facts=[fact("src:b", 5.0, metric="headcount")])
    finally:
        app.close()

    listed = runner.invoke(group, ["facts", "list", "--json", "--metric", "revenue"], obj=obj)
    assert listed.exit_code == 0, listed.output
    assert [(f["doc_id"], f["value"]) for f in json.loads(listed.output)] == [("src:a", 1320.0)]
    human = runner.invoke(group, ["facts", "list", "--doc", "src:a"], obj=obj)
    assert human.exit_code == 0, human.output
    assert "1,320" in human.output and "1 facts from 1 documents" in human.output
    missing = runner.invoke(group, ["facts", "list", "--doc", "src:nope"], obj=obj)
    assert missing.exit_code != 0


@pytest.mark.parametrize(
    ("text", "named_by", "period"),
    [
        ("Revenue FY 2024/25", "start", "FY2024"),
        ("Revenue FY 2024/25", "end", "FY2025"),
        ("FY2024-25 outturn", "end", "FY2025"),
        ("2024/25年度 売上高", "start", "FY2024"),
        ("fiscal year 2024/2025", "end", "FY2025"),
    ],
)
def test_a_fiscal_year_written_with_both_its_years_is_named_as_configured(
    text: str, named_by: str, period: str
) -> None:
    """``FY 2024/25`` spans two calendar years: it was read as FY2024 whatever the
    calendar, so under ``fiscal_year_named_by = "end"`` a question about FY2025 missed it."""
    from clearance.config import settings_from_dict
    from clearance.ingest.facts import Vocabulary

    facts = settings_from_dict(
        {"facts": {"fiscal_year_start": "04-01", "fiscal_year_named_by": named_by}}
    ).facts
    assert [m.canonical for m in Vocabulary(facts).find_periods(text)] == [period]


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("NET INCOME", "net income"),
        ("Basic EARNINGS PER SHARE", "basic earnings per share"),
        ("SALES, Net of returns and allowances", "net sales"),
        ("Revenues, net", "net revenues"),
        ("EMEA REVENUE", "EMEA revenue"),
        # acronyms and codes stay as written; a balance net of allowances keeps its words
        ("EBITDA margin", "EBITDA margin"),
        ("US GAAP EPS", "US GAAP EPS"),
        ("PC HEALTHXP", "PC HEALTHXP"),
        ("Accounts receivable, net", "accounts receivable, net"),
    ],
)
def test_a_derived_metric_is_named_in_ordinary_words(label: str, name: str) -> None:
    assert facts_module._metric_name(facts_module.measure_name(label) or label) == name


@pytest.mark.parametrize(
    ("text", "company"),
    [
        ("THE BUCKLE, INC.", "Buckle"),
        ("The Buckle, Inc.", "Buckle"),
        ("APPLE INC.", "Apple"),
        # an acronym in capitals stays one
        ("IBM CORPORATION", "IBM"),
        ("AT&T INC.", "AT&T"),
        ("The Procter & Gamble Company", "Procter & Gamble"),
        ("CONSOLIDATED STATEMENTS OF INCOME", None),
        # a name in capitals with an apostrophe is no company "S" (whose figures every
        # question's "IBM's" then named), and reads as the same name in ordinary case does
        ("MCDONALD'S CORPORATION", "Mcdonald's"),
        ("McDonald's Corporation", "McDonald's"),
        ("DICK’S SPORTING GOODS, INC.", "Dick’s Sporting Goods"),
    ],
)
def test_a_statement_s_title_line_names_its_company(text: str, company: str | None) -> None:
    assert facts_module.company_named(text) == company


@pytest.mark.parametrize("code", ["10-K", "10-Q", "20-F", "12-month"])
def test_a_form_s_name_is_no_number(code: str) -> None:
    assert parse_number(code) is None


def test_a_short_name_in_capitals_is_asked_with_an_ampersand() -> None:
    """``att-2023-income-statement.htm`` names AT&T "ATT"; people write "AT&T"."""
    assert "AT&T" in facts_module.entity_aliases("ATT")
    assert not any("&" in a for a in facts_module.entity_aliases("Apple"))


@pytest.mark.parametrize(
    ("title", "entity"),
    [
        ("byd-2023-q3-key-figures", "BYD"),
        ("microsoft-fy24-q2-segment-revenue", "Microsoft"),
        # more words than a name: its words as a title, never "eia-henry-hub-…'s price"
        ("eia-henry-hub-natural-gas-monthly", "EIA Henry Hub Natural Gas Monthly"),
    ],
)
def test_a_file_name_names_a_company_in_a_few_words_or_reads_as_words(
    title: str, entity: str
) -> None:
    assert facts_module.document_entity(title) == entity


def statement_facts(path: Path, rows: list[list[Any]], company: str, scale: str) -> list[Any]:
    """The facts of ``rows`` written as a workbook's sheet (``.xlsx``: its corner names the
    company and scale) or as a Markdown table under the company's heading and a note of
    its scale (``.md``)."""
    if path.suffix == ".xlsx":
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        for row in rows:
            sheet.append(row)
        book.save(path)
    else:
        lines = ["| " + " | ".join("" if c is None else str(c) for c in row) + " |" for row in rows]
        lines.insert(1, "|---|---|---|")
        text = f"# {company}\n\n(in {scale})\n\n" + "\n".join(lines) + "\n"
        path.write_text(text, encoding="utf-8")
    return extract_facts(
        extract(path, max_chars=1500).sections, doc_id="d", title=path.stem, vocab=FactSettings()
    )


BANK_STATEMENT = [
    ["Harbor Bancorp (in thousands)", "FY2024", "FY2023"],
    ["Interest income:", None, None],
    ["Loans, including fees", 412310, 380220],
    ["Securities", 95400, 70100],
    ["Total interest income", 507710, 450320],
    ["Interest expense:", None, None],
    ["Deposits", 20115, 18400],
    ["Borrowings", 5200, 4100],
    ["Total interest expense", 25315, 22500],
    ["Net interest income", 482395, 427820],
    ["Noninterest income:", None, None],
    ["Service charges on deposit accounts", 3100, 2900],
    ["Revenues:", None, None],
    ["Product", 700, 650],
    ["Services", 300, 250],
    ["Dividend income", 40, 30],
    ["Deposits", 9000000, 8500000],
]


@pytest.mark.parametrize("form", ["xlsx", "md"])
def test_rows_under_an_interest_heading_are_that_interest_never_the_balance(
    tmp_path: Path, form: str
) -> None:
    """A bank's "Interest expense:" over "Deposits" is interest paid on deposits, never the
    deposits: a question for the bank's deposits must not get it. The heading holds until a
    row naming a flow of its own ("Total interest expense", "Dividend income"); a heading
    that is no income or expense broken down ("Noninterest income:", whose rows each name
    their own flow) leaves its rows as they are."""
    corner = "Harbor Bancorp (in thousands)" if form == "xlsx" else ""
    rows = [[corner, "FY2024", "FY2023"], *BANK_STATEMENT[1:]]
    facts = statement_facts(tmp_path / f"harbor-income.{form}", rows, "Harbor Bancorp", "thousands")
    by = {(f.metric, f.period): f.value for f in facts}
    assert by[("deposits interest expense", "FY2024")] == 20115
    assert by[("borrowings interest expense", "FY2024")] == 5200
    assert by[("loans, including fees interest income", "FY2024")] == 412310
    assert by[("securities interest income", "FY2023")] == 70100
    assert by[("interest expense", "FY2024")] == 25315
    assert by[("interest income", "FY2024")] == 507710
    assert by[("net interest income", "FY2024")] == 482395
    assert by[("service charges on deposit accounts", "FY2024")] == 3100
    assert by[("product revenues", "FY2024")] == 700
    assert by[("services revenues", "FY2023")] == 250
    assert by[("dividend income", "FY2024")] == 40
    # the balance is the row after the heading's rows ended, and nothing under the heading
    assert {f.value for f in facts if f.metric == "deposits"} == {9000000, 8500000}
    assert not {f.metric for f in facts} & {"loans", "loans, including fees", "securities"}


EPS_STATEMENT = [
    ["", "FY2024", "FY2023"],
    ["Income from continuing operations", 610, 540],
    ["Net income", 570, 515],
    ["Earnings per share:", None, None],
    ["Basic:", None, None],
    ["Continuing operations", 2.44, 2.16],
    ["Discontinued operations", -0.16, -0.10],
    ["Basic earnings per share", 2.28, 2.06],
    ["Diluted:", None, None],
    ["Continuing operations", 2.41, 2.13],
    ["Net income", 2.25, 2.03],
    ["Weighted-average shares outstanding:", None, None],
    ["Basic:", None, None],
    ["Common stock", 250, 249],
]


@pytest.mark.parametrize("form", ["xlsx", "md"])
def test_a_share_class_heading_under_earnings_per_share_names_its_per_share_rows(
    tmp_path: Path, form: str
) -> None:
    """ "Basic:" and "Diluted:" under "Earnings per share:" head per-share amounts:
    "Continuing operations" under them is that class's earnings per share from continuing
    operations (four figures, none of them dropped as one label's two values), and "Net
    income" under "Diluted:" is no net income (2.25, never beside 570 million). Under
    "Weighted-average shares outstanding:", "Basic:" heads share counts, not amounts."""
    corner = "Orbital Inc. (USD millions, except per share)" if form == "xlsx" else ""
    rows = [[corner, "FY2024", "FY2023"], *EPS_STATEMENT[1:]]
    facts = statement_facts(
        tmp_path / f"orbital-income.{form}", rows, "Orbital Inc.", "millions, except per share"
    )
    by = {(f.metric, f.period): f.value for f in facts}
    assert by[("continuing operations basic earnings per share", "FY2024")] == 2.44
    assert by[("continuing operations diluted earnings per share", "FY2024")] == 2.41
    assert by[("discontinued operations basic earnings per share", "FY2023")] == -0.10
    assert by[("diluted earnings per share", "FY2024")] == 2.25
    assert by[("basic earnings per share", "FY2024")] == 2.28
    assert by[("income from continuing operations", "FY2024")] == 610
    assert {f.value for f in facts if f.metric == "net income"} == {570, 515}
    assert not [
        f for f in facts if f.metric in ("continuing operations", "discontinued operations")
    ]
    # the share count's "Basic:" is no amount per share
    assert not [f for f in facts if "per share" in f.metric and f.value == 250]


def test_an_sec_workbook_s_per_share_rows_are_the_class_s_earnings_per_share(
    tmp_path: Path,
) -> None:
    """The SEC's statements repeat one label under "Basic income (loss) per common share:"
    and "Diluted income (loss) per common share:", as "(USD per share)" rows: they are the
    basic and the diluted earnings per share (from continuing operations, or in all), never
    the company's net income attributable in dollars beside its thousands."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["CONSOLIDATED STATEMENTS OF OPERATIONS - USD ($) $ in Thousands",
                  "12 Months Ended", None])  # fmt: skip
    sheet.append([None, "Dec. 31, 2019", "Dec. 31, 2018"])
    for row in (
        ["Net income (loss) attributable to Orbital Company", -499942, -326900],
        ["Average common shares:", None, None],
        ["Basic (shares)", 91777119, 91327846],
        ["Diluted (shares)", 91777119, 91327846],
        ["Basic income (loss) per common share:", None, None],
        ["Income (loss) from continuing operations attributable to Orbital Company (USD per share)",
         -5.45, -3.63],
        ["Income from discontinued operations attributable to Orbital Company (USD per share)",
         0, 0.05],
        ["Net income (loss) attributable to Orbital Company (USD per share)", -5.45, -3.58],
        ["Diluted income (loss) per common share:", None, None],
        ["Income (loss) from continuing operations attributable to Orbital Company (USD per share)",
         -5.44, -3.62],
        ["Net income (loss) attributable to Orbital Company (USD per share)", -5.44, -3.57],
    ):  # fmt: skip
        sheet.append(row)
    sheet.merge_cells("A1:A2")
    sheet.merge_cells("B1:C1")
    path = tmp_path / "orbital-10k-2019-financial-report.xlsx"
    book.save(path)
    facts = extract_facts(
        extract(path, max_chars=1500).sections, doc_id="d", title=path.stem, vocab=FactSettings()
    )
    by = {(f.metric, f.period): (f.value, f.unit) for f in facts}
    assert by[("basic earnings per share", "FY2019")][0] == -5.45
    assert by[("diluted earnings per share", "FY2018")][0] == -3.57
    assert by[("continuing operations diluted earnings per share", "FY2019")][0] == -5.44
    assert by[("continuing operations basic earnings per share", "FY2018")][0] == -3.63
    assert by[("discontinued operations basic earnings per share", "FY2018")][0] == 0.05
    amounts = {v for (m, _), v in by.items() if m == "net income attributable to orbital company"}
    assert amounts == {(-499942, "$ in thousands"), (-326900, "$ in thousands")}


def test_a_monthly_series_dated_by_each_month_s_first_day_gives_months(tmp_path: Path) -> None:
    """``Date | Index | Inflation`` over ``2022-06-01`` rows is a monthly series: each row is
    that month's (``Jun 2022``). A series of days (any other day in the column) stays days,
    and gives no month's figure."""
    monthly = tmp_path / "us-cpi-monthly.csv"
    monthly.write_text(
        "Date,Index,Inflation\n2022-05-01,292.296,1.1\n2022-06-01,296.311,1.37\n"
        "2022-07-01,296.276,-0.01\n",
        encoding="utf-8",
    )
    daily = tmp_path / "fx-daily.csv"
    daily.write_text("Date,Rate\n2022-06-01,1.07\n2022-06-02,1.08\n2022-07-01,1.04\n", "utf-8")
    quarterly = tmp_path / "gilt-yield-quarterly.csv"  # dated at each quarter's last day
    quarterly.write_text("Date,Rate\n2020-03-31,0.5\n2020-06-30,0.3\n2024-02-29,4.1\n", "utf-8")
    mixed = tmp_path / "fx-mixed.csv"  # a month's last day beside another's first: days
    mixed.write_text("Date,Rate\n2022-06-30,1.07\n2022-07-01,1.04\n", "utf-8")
    by = {}
    for path in (monthly, daily, quarterly, mixed):
        for f in extract_facts(
            extract(path, max_chars=1500).sections, doc_id=path.stem, title=path.stem,
            vocab=FactSettings(),
        ):  # fmt: skip
            by[(f.doc_id, f.metric, f.period)] = f.value
    assert by[("us-cpi-monthly", "inflation", "Jun 2022")] == 1.37
    assert by[("us-cpi-monthly", "index", "May 2022")] == 292.296
    assert not [k for k in by if k[0] in ("fx-daily", "fx-mixed")]
    assert by[("gilt-yield-quarterly", "rate", "Jun 2020")] == 0.3
    assert by[("gilt-yield-quarterly", "rate", "Feb 2024")] == 4.1


def test_columns_of_one_measure_for_parts_in_parentheses_are_each_part_s(tmp_path: Path) -> None:
    """``Price (All) | Price (New) | Price (Older)`` measure one price for three parts: each
    column is its part's ("new price"), "All" the whole ("price"), where reading them all as
    "price" gave one label three values and none was kept. A unit in parentheses is no
    part (``Revenue (USD m)``), and cells read otherwise keep the locator they are written
    with (``2024-11-01``, ``Price (New)``)."""
    path = tmp_path / "house-prices-quarterly.csv"
    path.write_text(
        "Date,Price (All),Price (New),Price (Older)\n"
        "2024-08-01,266640,299191,254000\n2024-11-01,268518,307673,255100\n",
        encoding="utf-8",
    )
    units = tmp_path / "acme-results.csv"
    units.write_text("Year,Revenue (USD m),Profit (USD m)\n2023,100,10\n2024,120,12\n", "utf-8")
    facts = [
        f
        for p in (path, units)
        for f in extract_facts(
            extract(p, max_chars=1500).sections, doc_id=p.stem, title=p.stem, vocab=FactSettings()
        )
    ]
    by = {(f.metric, f.period): f for f in facts}
    assert by[("price", "Nov 2024")].value == 268518
    assert by[("new price", "Nov 2024")].value == 307673
    assert by[("older price", "Aug 2024")].value == 254000
    assert "row=2024-11-01" in by[("new price", "Nov 2024")].locator
    assert "col=Price (New)" in by[("new price", "Nov 2024")].locator
    assert {f.metric for f in facts if f.doc_id == "acme-results"} == {"revenue", "profit"}


def test_a_csv_whose_rows_are_wider_than_its_header_gives_no_figure(tmp_path: Path) -> None:
    """A header a column short ("…,Trend,Number of Days" over rows of seven cells, as a
    published CO2 series is) shifts every column's meaning: which figure is the trend is a
    guess, so none is a fact, said once for the file. The text is still indexed."""
    rows = ["1958-03,1958.2027,315.71,314.44,-01,-9.99,-0.99"] + [
        f"19{58 + i // 12}-{i % 12 + 1:02d},19{58 + i // 12}.5,31{i % 10}.1,31{i % 10}.2,29,0.5,0.1"
        for i in range(60)
    ]
    shifted = tmp_path / "co2-mm-mlo.csv"
    shifted.write_text(
        "Date,Decimal Date,Average,Interpolated,Trend,Number of Days\n" + "\n".join(rows) + "\n"
    )
    warnings: list[str] = []
    sections = extract(shifted, max_chars=1500).sections
    facts = extract_facts(
        sections, doc_id="d", title="co2-mm-mlo", vocab=FactSettings(), warn=warnings.append
    )
    assert facts == []
    (warning,) = warnings  # one line for the file, not one per block of rows
    assert re.fullmatch(
        r"facts: \d+ values at every row skipped: rows hold more cells than the header "
        r"names columns \(a shifted header\)",
        warning,
    )
    assert any("315.71" in s.text for s in sections)
    # the same rows under a header naming every column give their figures
    whole = tmp_path / "co2-whole.csv"
    whole.write_text(
        "Date,Decimal Date,Average,Interpolated,Trend,Number of Days,Spread\n"
        + "\n".join(rows)
        + "\n"
    )
    named = extract_facts(
        extract(whole, max_chars=1500).sections, doc_id="d", title="co2-whole", vocab=FactSettings()
    )
    assert named


def test_a_filing_s_cover_names_the_company_of_tables_that_name_none() -> None:
    """A 10-Q's PDF titled by its accession number: the cover's name over "(Exact name of
    registrant as specified in its charter)" is whom a note's table is about, not the
    title; without the cover the title would have named it."""
    cover = Section(
        "FORM 10-Q\nCommission File No. 000-22513\n____\nHARBOR DEVICES, INC.\n"
        "(Exact name of registrant as specified in its charter)\nDelaware",
        "page=1",
    )
    header = ("", "Three Months Ended June 30, 2023")
    row = Section(
        "North America: 82,546",
        "page=19,table=1,row=North America",
        atomic=True,
        table=(header, ("North America net sales", "82,546")),
    )
    title = "0001018724-23-000018"
    (fact,) = extract_facts([cover, row], doc_id="d", title=title, vocab=FactSettings())
    assert fact.entity == "Harbor Devices"
    (uncovered,) = extract_facts([row], doc_id="d", title=title, vocab=FactSettings())
    assert uncovered.entity != "Harbor Devices"


@pytest.mark.parametrize(
    ("titles", "entity"),
    [
        (
            ("January-December, 2025", "Profit and Loss", "Community Fund (for Harbor Trust)"),
            "Community Fund",
        ),
        (
            ("Statement of Activity", "Harbor Trust 6363 - Statement of Activity: Jan - Dec 2024"),
            "Harbor Trust",
        ),
        (
            ("January - December 2023", "Statement of Profit and Loss", "The Harbor Trust"),
            "Harbor Trust",
        ),
        (("Statement of Revenues and Expenses",), None),
        (("Results for 2024", "Balance Sheet"), None),
        (("Revenue by region", "Harbor Trust"), None),  # no statement named
    ],
)
def test_a_statement_s_title_block_names_whom_it_is_about(
    titles: tuple[str, ...], entity: str | None
) -> None:
    assert statement_entity(titles) == entity


def _row(locator: str, header: tuple[str, ...], row: tuple[str, ...], **kw: Any) -> Section:
    return Section(" | ".join(row), locator, atomic=True, table=(header, row), **kw)


QUARTERLY_COVER = Section(
    "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 10-Q\n"
    "For the Quarterly Period Ended June 30, 2023\nCommission File Number 000-22513\n"
    "HARBOR.COM, INC.\nDELAWARE  91-1646860\n(STATE OF INCORPORATION)  (I.R.S. ID)",
    "page=1",
)


def test_a_10q_cover_names_its_company_after_its_file_number_and_without_dot_com() -> None:
    """Not every cover writes "(Exact name of registrant …)": Microsoft's sets the name
    right under the commission file number. "HARBOR.COM, INC." is Harbor, as its readers
    ask; a table's own title naming it so is the same company."""
    header = ("", "Three Months Ended June 30, 2023")
    rows = [
        _row("page=4,table=1,row=Net sales", header, ("Net sales", "134,383")),
        _row(
            "page=5,table=1,row=Net income",
            header,
            ("Net income", "6,750"),
            titles=("CONSOLIDATED STATEMENTS OF OPERATIONS", "HARBOR.COM, INC."),
        ),
    ]
    facts = extract_facts([QUARTERLY_COVER, *rows], doc_id="d", title="x", vocab=FactSettings())
    assert {f.entity for f in facts} == {"Harbor"}


def test_a_note_s_table_of_another_company_s_figures_is_that_company_s() -> None:
    """ "Required summarized financial information of Rivian …": an investee's revenue in
    a 10-Q's note is Rivian's, never the filer's revenue for that quarter."""
    header = ("", "Three Months Ended March 31, 2023")
    caption = (
        "Required summarized financial information of Rivian as disclosed in its most "
        "recent SEC filings is as follows (in millions):"
    )
    row = _row("page=9,table=1,row=Revenues", header, ("Revenues", "$661"), captions=(caption,))
    (fact,) = extract_facts([QUARTERLY_COVER, row], doc_id="d", title="x", vocab=FactSettings())
    assert fact.entity == "Rivian"


def test_a_quarterly_report_s_twelve_months_trail_and_its_bare_years_are_no_years() -> None:
    """In a 10-Q, "Twelve Months Ended June 30, 2023" are the trailing twelve months (the
    company's fiscal 2023 ends in December), and a column headed "2023" alone (an MD&A
    table whose span line the page sets apart) is no fiscal year: skipped, not guessed. In
    a 10-K, twelve months ended December are its fiscal year."""
    trailing = _row(
        "page=28,table=1,row=Free cash flow",
        ("", "Twelve Months Ended June 30, 2022", "Twelve Months Ended June 30, 2023"),
        ("Free cash flow", "(23,480)", "7,962"),
    )
    bare = _row(
        "page=30,table=1,row=Interest income",
        ("", "2023", "2022"),
        ("Interest income", "$88", "$7"),
    )
    year_ends: dict[str, int] = {}
    facts = extract_facts(
        [QUARTERLY_COVER, trailing, bare],
        doc_id="d",
        title="x",
        vocab=FactSettings(),
        year_ends=year_ends,
    )
    # nor do they say the years end in June: "the fourth quarter of 2023" was read as
    # April to June 2023
    assert year_ends == {}
    assert {(f.period, f.value) for f in facts} == {
        ("12M ended Jun 2022", -23480.0),
        ("12M ended Jun 2023", 7962.0),
    }
    annual = Section("FORM 10-K\nFor the fiscal year ended December 31, 2023", "page=1")
    year = _row(
        "page=40,table=1,row=Free cash flow",
        ("", "Twelve Months Ended December 31, 2023"),
        ("Free cash flow", "36,813"),
    )
    (fact,) = extract_facts([annual, year], doc_id="d", title="x", vocab=FactSettings())
    assert fact.period == "FY2023"


def test_a_half_year_read_against_dated_spans_is_no_error() -> None:
    """``_cumulative`` took every period for a quarter ("Q2 2024"); a half year ("H1
    2024", "6M FY2024") raised, and every cell of its table was skipped."""
    assert facts_module._cumulative("H1 2024", ["(2024年1月1日~2024年6月30日)"]) == "Q1–Q2 FY2024"
    assert facts_module._cumulative("6M FY2024", []) == "6M FY2024"


@pytest.mark.parametrize(
    ("text", "months"),
    [
        ("The Company's fiscal year is the 52- or 53-week period that ends on the last Saturday of September.", {9}),
        ("We have a 52- or 53-week fiscal year that ends on the last Saturday in December.", {12}),
        ("… our Annual Report on Form 10-K for the fiscal year ended January 30, 2022, as filed", {1}),
        ("Our fiscal year ends June 30.", {6}),
        # a year that ended, not when years end; another company's annual report
        ("Revenue for the fiscal year ended June 30, 2023 grew.", set()),
        ("Our fiscal year ends on December 31, 2024 this time", set()),
    ],
)  # fmt: skip
def test_what_a_filing_says_of_when_its_fiscal_years_end(text: str, months: set[int]) -> None:
    assert facts_module.stated_year_end(text) == months
