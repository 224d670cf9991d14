"""What reading ruled tables in PDFs costs at ingest (clearance.ingest.loaders.pdf).

The PDF loader reads every page's text with pypdf; a page whose text looks tabular is read
again with pdfplumber for its ruled tables (where its content draws rules), else for tables
set out by white space. This benchmark
times :func:`clearance.ingest.loaders.extract` on the same PDFs, side by side in one run:

* ``text only``: the table pass switched off (``looks_tabular`` patched to answer no), as
  before tables were read;
* ``with tables``: the loader as shipped.

The PDFs are drawn here with fpdf2 (a development dependency), so the run needs nothing
outside the repository:

* ``prose``: 20 pages of running text, no figures;
* ``prose with figures``: 20 pages of text whose lines hold figures (a budget narrative),
  one drawn rule a page (a header line), no table;
* ``ruled tables``: 20 pages, each with text and one ruled table of 12 rows by 5 columns;
* ``aligned statements``: 20 pages, each a statement of 12 rows set out by white space
  alone (a label, four figures right-aligned under years), read for its aligned table;
* ``one-column ledgers``: 20 pages, each a bookkeeping export of 24 accounts in one "Total"
  column dated by its title block, whose lines end in amounts.

Each figure is the median of ``--repeat`` runs (default 7), after one warm-up run of each
(imports, pdfplumber's first open). Run from the repository root::

    .venv/bin/python benchmarks/bench_pdf_tables.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from fpdf import FPDF

from clearance.ingest.loaders import extract

PAGES = 20
WORDS = (
    "The committee reviewed the programme and agreed the plan for the coming year, noting "
    "that the work continues across every office and that the review will report again."
)


def _prose(path: Path, figures: bool) -> Path:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for page in range(PAGES):
        pdf.add_page()
        for line in range(30):
            text = WORDS
            if figures:
                text = f"Line {line}: 1,{page:03d} 2,{line:03d} 3,400 4,500 5,{line * 7:03d}"
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
        if figures:
            pdf.line(10, 20, 200, 20)
    pdf.output(str(path))
    return path


def _tables(path: Path) -> Path:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for page in range(PAGES):
        pdf.add_page()
        pdf.multi_cell(
            0,
            5,
            f"Table {page + 1}. Results by office (in thousands).",
            new_x="LMARGIN",
            new_y="NEXT",
        )
        pdf.ln(2)
        header = ("Office", "FY2022", "FY2023", "FY2024", "FY2025")
        for c, text in enumerate(header):
            pdf.cell(50 if c == 0 else 30, 7, text, border=1)
        pdf.ln()
        for row in range(12):
            pdf.cell(50, 7, f"Office {row + 1}", border=1)
            for col in range(4):
                pdf.cell(30, 7, f"{(row + 1) * (col + 3) * 101 + page:,}", border=1)
            pdf.ln()
        pdf.ln(3)
        pdf.multi_cell(0, 5, WORDS, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


LINES = (
    "Product revenue",
    "Service revenue",
    "Total revenue",
    "Cost of revenue",
    "Gross profit",
    "Research and development",
    "Sales and marketing",
    "General and administrative",
    "Total operating expenses",
    "Operating income",
    "Income taxes",
    "Net income",
)


def _statements(path: Path) -> Path:
    """A statement set out by white space on every page, as filings print them: a label,
    then four figures right-aligned in columns under years."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=9)
    rights = (110.0, 135.0, 160.0, 185.0)
    for page in range(PAGES):
        pdf.add_page()
        pdf.multi_cell(0, 5, f"Statement {page + 1} (in thousands)", new_x="LMARGIN", new_y="NEXT")
        y = pdf.get_y() + 4
        for right, year in zip(rights, ("2022", "2023", "2024", "2025"), strict=True):
            pdf.set_xy(right - 20, y)
            pdf.cell(20, 5, year, align="R")
        for row in range(12):
            y += 6
            pdf.set_xy(10, y)
            pdf.cell(60, 5, LINES[row])
            for col, right in enumerate(rights):
                pdf.set_xy(right - 20, y)
                pdf.cell(20, 5, f"{(row + 1) * (col + 3) * 101 + page:,}", align="R")
    pdf.output(str(path))
    return path


def _ledgers(path: Path) -> Path:
    """A bookkeeping package's export on every page: a title block naming the period, one
    "Total" column of amounts with cents, account numbers opening the labels."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=9)
    for page in range(PAGES):
        pdf.add_page()
        for text in ("Harbor Trust, Inc", "Statement of Activity", "January-December, 2025"):
            pdf.set_x(60)
            pdf.cell(90, 5, text, align="C", new_x="LMARGIN", new_y="NEXT")
        y = pdf.get_y() + 8
        pdf.set_xy(160, y)
        pdf.cell(30, 5, "Total", align="R")
        for row in range(24):
            y += 6
            pdf.set_xy(14, y)
            pdf.cell(90, 5, f"{40100 + row * 10} {LINES[row % len(LINES)]}")
            pdf.set_xy(160, y)
            pdf.cell(30, 5, f"{(row + 1) * 1013.25 + page:,.2f}", align="R")
    pdf.output(str(path))
    return path


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = {
            "prose": _prose(folder / "prose.pdf", figures=False),
            "prose with figures": _prose(folder / "figures.pdf", figures=True),
            "ruled tables": _tables(folder / "tables.pdf"),
            "aligned statements": _statements(folder / "statements.pdf"),
            "one-column ledgers": _ledgers(folder / "ledgers.pdf"),
        }
        print(
            f"{'PDF (20 pages)':<20} {'text only':>10} {'with tables':>12} {'ratio':>6} {'table rows':>11}"
        )
        for name, path in cases.items():

            def read(path: Path = path) -> object:
                return extract(path, max_chars=1500)

            with mock.patch("clearance.ingest.loaders.pdf.looks_tabular", return_value=False):
                before = _median_ms(read, args.repeat)
            after = _median_ms(read, args.repeat)
            rows = sum(1 for s in extract(path, max_chars=1500).sections if s.table)
            print(
                f"{name:<20} {before:>8.0f} ms {after:>9.0f} ms {after / before:>5.1f}x {rows:>11}"
            )


if __name__ == "__main__":
    main()
