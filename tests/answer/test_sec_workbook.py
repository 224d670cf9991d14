"""A 10-K's ``Financial_Report.xlsx`` as the SEC publishes it, asked as a reader asks it.

The workbook below is laid out as EDGAR lays out every filer's (a cover sheet, the
statements, detail sheets whose corner titles them), with the figures of an invented
company. What it pins, each from a new user's trial on a real filing:

* the company is the one the cover's ``Entity Registrant Name`` names (``HARBOR BEVERAGE
  CO`` is "Harbor Beverage", asked as "Harbor-Beverage"), never the title an operator gave
  the file ("… Form 10-K financial report (SEC workbook)");
* a label with its footnote's number glued on (``Per Share1``) is still a per-share amount,
  stated in dollars, not in the millions of the sheet's other figures;
* the rows of a held-for-sale detail sheet are the debt and assets of the businesses being
  sold, never the company's: its "Long-term debt" of 0 is no second figure for the
  company's;
* members named bare of two axes at once (``United States | Concentrate operations``) are
  that intersection, never the last axis alone;
* "revenue" is the filing's "Net Operating Revenues".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from clearance.answer.result import Status
from clearance.app import Clearance

NBSP = "\xa0"
TITLE = "The Harbor-Beverage Company Form 10-K financial report (SEC workbook)"

SHEETS: dict[str, list[list[Any]]] = {
    "Cover": [
        ["Cover - USD ($)", "12 Months Ended", None],
        [None, "Dec. 31, 2024", "Feb. 14, 2025"],
        ["Cover [Abstract]", NBSP, NBSP],
        ["Document Type", "10-K", NBSP],
        ["Entity Registrant Name", "HARBOR BEVERAGE CO", NBSP],
        ["Current Fiscal Year End Date", "--12-31", NBSP],
    ],
    "CONSOLIDATED STATEMENTS OF INCO": [
        [
            "CONSOLIDATED STATEMENTS OF INCOME - USD ($) shares in Millions, $ in Millions",
            "12 Months Ended Dec. 31, 2024",
            "12 Months Ended Dec. 31, 2023",
        ],
        ["Net Operating Revenues", 47061, 45754],
        ["Operating Income", 9992, 11311],
        ["Basic Net Income Per Share1", 2.47, 2.48],
        ["Diluted Net Income Per Share1", 2.46, 2.47],
    ],
    "CONSOLIDATED BALANCE SHEETS": [
        ["CONSOLIDATED BALANCE SHEETS - USD ($) $ in Millions", "Dec. 31, 2024", "Dec. 31, 2023"],
        ["Total Assets", 100549, 97703],
        ["Long-term debt", 42375, 35547],
    ],
    "ACQUISITIONS AND DIVESTITURES_2": [
        [
            "ACQUISITIONS AND DIVESTITURES - HELD FOR SALE ASSETS AND LIABILITIES (Details)"
            " - USD ($) $ in Millions",
            "Dec. 31, 2024",
            "Dec. 31, 2023",
        ],
        ["Inventories", 23, 299],
        ["Assets held for sale", 131, 2094],
        ["Long-term debt", 0, 2],
        ["Liabilities held for sale", 3, 719],
    ],
    "NET OPERATING REVENUES (Details": [
        ["NET OPERATING REVENUES (Details) - USD ($) $ in Millions", "12 Months Ended", None],
        [None, "Dec. 31, 2024", "Dec. 31, 2023"],
        ["Disaggregation of Revenue [Line Items]", NBSP, NBSP],
        ["Net Operating Revenues", 47061, 45754],
        ["Concentrate operations", NBSP, NBSP],
        ["Disaggregation of Revenue [Line Items]", NBSP, NBSP],
        ["Net Operating Revenues", 27725, 26539],
        ["United States", NBSP, NBSP],
        ["Disaggregation of Revenue [Line Items]", NBSP, NBSP],
        ["Net Operating Revenues", 18362, 16550],
        ["United States | Concentrate operations", NBSP, NBSP],
        ["Disaggregation of Revenue [Line Items]", NBSP, NBSP],
        ["Net Operating Revenues", 8813, 8780],
    ],
}


def write_workbook(path: Path) -> Path:
    book = openpyxl.Workbook()
    default = book.active
    assert default is not None
    book.remove(default)
    for name, rows in SHEETS.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


@pytest.fixture
def engine(finance_engine: Callable[[Callable[[Path], object]], Clearance]) -> Clearance:
    def write(corpus: Path) -> None:
        book = write_workbook(corpus / "Financial_Report.xlsx")
        sidecar = book.with_name(book.name + ".meta.json")
        sidecar.write_text(json.dumps({"title": TITLE}), "utf-8")

    return finance_engine(write)


def answer(app: Clearance, question: str) -> str:
    result = app.ask(question, "fay")
    assert result.status is Status.ANSWERED, (question, result.status, result.answer)
    return result.answer


def test_the_registrant_names_the_company_and_a_hyphen_does_not_part_it(engine: Clearance) -> None:
    text = answer(engine, "What were Harbor-Beverage's net operating revenues in 2024?")
    assert "$47,061 million" in text
    assert text.startswith("(2024 = FY2024) Harbor Beverage's net operating revenues")
    # the name was read from the question, not assumed, and the operator's title is no name
    assert "Assuming" not in text and "Form 10-K" not in text
    assert "$47,061 million" in answer(engine, "What was Harbor Beverage's revenue in 2024?")


def test_a_per_share_amount_with_its_footnote_number_glued_on_is_in_dollars(
    engine: Clearance,
) -> None:
    text = answer(engine, "What was Harbor-Beverage's diluted net income per share in 2024?")
    assert "$2.46" in text
    assert "million" not in text and "2.47" not in text


def test_debt_of_businesses_held_for_sale_is_no_figure_of_the_company_s(engine: Clearance) -> None:
    text = answer(engine, "What was Harbor-Beverage's long-term debt at year-end 2024?")
    assert "$42,375 million" in text
    assert "Another source" not in text and "$0" not in text
    held = answer(engine, "What were Harbor-Beverage's liabilities held for sale at Dec 2023?")
    assert "$719 million" in held


def test_members_of_two_axes_are_their_intersection(engine: Clearance) -> None:
    us = answer(engine, "How much revenue did Harbor-Beverage make in the United States in 2024?")
    assert "$18,362 million" in us
    concentrate = answer(
        engine, "What was Harbor-Beverage's concentrate operations revenue in 2024?"
    )
    # the company's concentrate operations, never the United States' share of them
    assert "$27,725 million" in concentrate and "8,813" not in concentrate
    both = answer(
        engine, "What was Harbor-Beverage's United States concentrate operations revenue in 2024?"
    )
    assert "$8,813 million" in both
