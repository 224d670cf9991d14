"""Tables in PDFs: ruled tables become row sections (and so facts); anything whose columns
would have to be guessed stays page text only. The PDFs are drawn here with fpdf2."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from fpdf import FPDF

from clearance.config import FactSettings
from clearance.ingest.facts import extract_facts
from clearance.ingest.loaders import extract
from clearance.ingest.loaders.pdf import looks_tabular, malformed_figures
from clearance.model import Section

ROWS = (
    ("Metric", "FY2023", "FY2024"),
    ("Revenue", "1,200", "1,320"),
    ("Operating profit", "150", "(12.5)"),
    ("Headcount", "40", "44"),
)
WIDTHS = (60, 30, 30)


def _table_pdf(
    path: Path,
    rows: Sequence[Sequence[str]],
    *,
    border: int = 1,
    shade: bool = False,
    above: str = "Results of the year.",
    widths: Sequence[float] = WIDTHS,
    title: str | None = None,
) -> Path:
    """A page of text, a table drawn cell by cell, text after it. ``border=0`` draws no
    rules; ``shade`` fills every other row's cells and frames the table (the inner edges
    are then drawn in the shaded rows only, as annual reports print tables)."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 8, text=above)
    pdf.ln(2)
    pdf.set_fill_color(200, 215, 240)
    if shade:
        pdf.rect(pdf.l_margin, pdf.get_y(), sum(widths), 9 * len(rows))
    for i, row in enumerate(rows):
        for width, text in zip(widths, row, strict=False):
            pdf.cell(width, 9, text=text, border=border, fill=shade and i % 2 == 1)
        pdf.ln()
    pdf.ln(6)
    pdf.multi_cell(0, 8, text="After the table.")
    pdf.output(str(path))
    return path


def _tables(sections: Sequence[Section]) -> list[Section]:
    return [s for s in sections if s.table is not None]


def test_a_ruled_table_becomes_row_sections(tmp_path: Path) -> None:
    extracted = extract(_table_pdf(tmp_path / "r.pdf", ROWS), max_chars=1000)
    page, *rows = extracted.sections
    # the page keeps all its text, the table's included
    assert page.locator == "page=1"
    assert "Operating profit 150 (12.5)" in page.text and "After the table." in page.text
    assert [(s.locator, s.text) for s in rows] == [
        ("page=1,table=1,row=Revenue", "Metric: Revenue | FY2023: 1,200 | FY2024: 1,320"),
        (
            "page=1,table=1,row=Operating profit",
            "Metric: Operating profit | FY2023: 150 | FY2024: (12.5)",
        ),
        ("page=1,table=1,row=Headcount", "Metric: Headcount | FY2023: 40 | FY2024: 44"),
    ]
    assert rows[0].table == (("Metric", "FY2023", "FY2024"), ("Revenue", "1,200", "1,320"))
    assert all(s.atomic for s in rows)


def test_a_ruled_table_gives_facts(tmp_path: Path) -> None:
    path = _table_pdf(tmp_path / "acme.pdf", ROWS, title="ACME Corp annual report")
    extracted = extract(path, max_chars=1000)
    warnings: list[str] = []
    facts = extract_facts(
        extracted.sections,
        doc_id="d",
        title=extracted.title or "",
        vocab=FactSettings(),
        warn=warnings.append,
    )
    got = {(f.metric, f.period, f.value, f.locator) for f in facts}
    assert got == {
        ("revenue", "FY2023", 1200, "page=1,table=1,row=Revenue,col=FY2023"),
        ("revenue", "FY2024", 1320, "page=1,table=1,row=Revenue,col=FY2024"),
        ("operating profit", "FY2023", 150, "page=1,table=1,row=Operating profit,col=FY2023"),
        ("operating profit", "FY2024", -12.5, "page=1,table=1,row=Operating profit,col=FY2024"),
        ("headcount", "FY2023", 40, "page=1,table=1,row=Headcount,col=FY2023"),
        ("headcount", "FY2024", 44, "page=1,table=1,row=Headcount,col=FY2024"),
    }
    assert {f.entity for f in facts} == {"ACME Corp"}
    assert warnings == []


def test_edges_drawn_in_shaded_rows_only_make_the_grid(tmp_path: Path) -> None:
    """Rows shaded cell by cell draw the column edges; the unshaded rows between them
    are read on the same grid."""
    rows = (*ROWS, ("Stores", "7", "9"))
    extracted = extract(_table_pdf(tmp_path / "s.pdf", rows, border=0, shade=True), max_chars=1000)
    assert [s.table for s in _tables(extracted.sections)] == [(rows[0], row) for row in rows[1:]]


def test_a_note_right_above_the_table_is_its_caption(tmp_path: Path) -> None:
    path = _table_pdf(tmp_path / "n.pdf", ROWS, above="(In thousands of euros)")
    rows = _tables(extract(path, max_chars=1000).sections)
    assert rows[0].captions == ("(In thousands of euros)",)
    assert (
        rows[0].text == "(In thousands of euros)\nMetric: Revenue | FY2023: 1,200 | FY2024: 1,320"
    )


def test_a_table_without_rules_is_not_read(tmp_path: Path) -> None:
    """Columns set by white space alone would be a guess: the page keeps its text."""
    extracted = extract(_table_pdf(tmp_path / "t.pdf", ROWS, border=0), max_chars=1000)
    assert [s.locator for s in extracted.sections] == ["page=1"]
    assert "Revenue 1,200 1,320" in extracted.sections[0].text


def test_prose_with_numbers_is_no_table(tmp_path: Path) -> None:
    text = (
        "In FY 2011, courts sentenced 208 defendants. Of these, 102 received no prison "
        "term, 27 received sentences of 1-12 months and 33 of 13-24 months. In FY 2010 "
        "the courts sentenced 207 defendants, of whom 121 received no prison term."
    )
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 8, text=text, border=1)  # a box around prose is no table either
    path = tmp_path / "p.pdf"
    pdf.output(str(path))
    extracted = extract(path, max_chars=1000)
    assert [s.locator for s in extracted.sections] == ["page=1"]
    assert not looks_tabular(extracted.sections[0].text)


def test_text_across_a_column_edge_refuses_the_table(tmp_path: Path) -> None:
    rows = (*ROWS[:2], ("Operating profit after all special items", "150", "160"), ROWS[3])
    extracted = extract(_table_pdf(tmp_path / "x.pdf", rows, widths=(40, 30, 30)), max_chars=1000)
    assert _tables(extracted.sections) == []
    assert "Operating profit after all special items" in extracted.sections[0].text


def test_two_figures_in_one_cell_refuse_the_table(tmp_path: Path) -> None:
    rows = (ROWS[0], ("Revenue", "1,200 1,320", ""), *ROWS[2:])
    extracted = extract(_table_pdf(tmp_path / "m.pdf", rows), max_chars=1000)
    assert _tables(extracted.sections) == []
    assert "Revenue 1,200 1,320" in extracted.sections[0].text


def test_a_grid_of_figures_without_a_header_is_not_read(tmp_path: Path) -> None:
    rows = (("Revenue", "1,200", "1,320"), ("Costs", "900", "950"), ("Profit", "300", "370"))
    extracted = extract(_table_pdf(tmp_path / "h.pdf", rows), max_chars=1000)
    assert _tables(extracted.sections) == []


def test_a_column_without_a_header_refuses_the_table(tmp_path: Path) -> None:
    rows = (("Metric", "FY2023", ""), *ROWS[1:])
    extracted = extract(_table_pdf(tmp_path / "c.pdf", rows), max_chars=1000)
    assert _tables(extracted.sections) == []


def test_tables_are_numbered_per_page(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for _ in range(2):
        pdf.add_page()
        for block in (ROWS, (("Region", "FY2024"), ("Japan", "10"), ("Europe", "12"))):
            for row in block:
                for width, text in zip(WIDTHS, row, strict=False):
                    pdf.cell(width, 9, text=text, border=1)
                pdf.ln()
            pdf.ln(10)
    path = tmp_path / "two.pdf"
    pdf.output(str(path))
    located = [s.locator for s in _tables(extract(path, max_chars=1000).sections)]
    rows = [(1, "Revenue"), (1, "Operating profit"), (1, "Headcount"), (2, "Japan"), (2, "Europe")]
    assert located == [f"page={p},table={t},row={r}" for p in (1, 2) for t, r in rows]


def test_looks_tabular() -> None:
    assert looks_tabular("Revenue 1,200 1,320\nCosts 900 950\nProfit 300 (370)")
    assert looks_tabular("426\n290\n217\nDefendants")  # cells laid out one per line
    assert not looks_tabular("Revenue 1,200 1,320\nCosts rose by 50 in 2024 as planned.")
    assert not looks_tabular("")


FIGURES = (
    ("State", "Permit", "Handgun", "Totals"),
    ("Vermont", "0", "1,189", "3,136"),
    ("Michigan", "1", "50,278", "50,279"),
    ("Utah", "7", "2,001", "5,318"),
)


def _joining_pypdf(monkeypatch: pytest.MonkeyPatch) -> None:
    """pypdf's page text as it reads some published tables: cells' digits joined."""
    from pypdf import PageObject

    def joined(self: PageObject, *args: object, **kwargs: object) -> str:
        return "\n".join(
            " ".join([row[0], "".join(row[1:])]) if i else " ".join(row)
            for i, row in enumerate(FIGURES)
        )

    monkeypatch.setattr(PageObject, "extract_text", joined)


def test_a_page_of_figures_keeps_the_text_that_parts_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where pypdf joins adjacent cells' digits ("0", "1,189" and "3,136" as
    "01,1893,136"), the page's text is read again with pdfplumber, which parts them, so a
    quoted row states each figure as printed."""
    path = _table_pdf(tmp_path / "nics.pdf", FIGURES, border=0, widths=(40, 30, 30, 30))
    _joining_pypdf(monkeypatch)
    (page,) = [s for s in extract(path, max_chars=4000).sections if s.table is None]
    assert "Vermont 0 1,189 3,136" in page.text, page.text
    assert "Michigan 1 50,278 50,279" in page.text, page.text


def test_reverse_proof_without_counting_malformed_figures_the_joined_text_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.ingest.loaders import pdf as pdf_loader

    monkeypatch.setattr(pdf_loader, "malformed_figures", lambda text: 0)
    with pytest.raises(AssertionError):
        test_a_page_of_figures_keeps_the_text_that_parts_its_cells(tmp_path, monkeypatch)


def test_malformed_figures_counts_joined_cells_only() -> None:
    assert malformed_figures("Vermont 01,1891,826 0129,861 Kentucky 01,4912,315") == 3
    # figures as printed, years, decimals and a lone join that still reads as a figure
    assert malformed_figures("Texas 146,982 2024 12.5 150,278 1,025.75") == 0


def test_a_page_read_again_for_its_figures_keeps_its_spaced_out_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heading set with letter spacing, as annual reports set them, on a page whose
    figures pypdf joined: the reading that parts the figures parts its letters too ("A N
    N U A L R E P O R T"), and a search for its words no longer found the page. Only the
    lines whose figures it parts are taken from it."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.set_char_spacing(1.2)
    pdf.cell(0, 8, text="FIREARM CHECKS BY STATE")
    pdf.ln()
    pdf.set_char_spacing(0)
    for row in FIGURES:
        for width, text in zip((40, 30, 30, 30), row, strict=True):
            pdf.cell(width, 9, text=text)
        pdf.ln()
    path = tmp_path / "nics.pdf"
    pdf.output(str(path))
    _joining_pypdf(monkeypatch)
    (page,) = [s for s in extract(path, max_chars=4000).sections if s.table is None]
    assert "FIREARM CHECKS BY STATE" in page.text, page.text
    assert "Vermont 0 1,189 3,136" in page.text, page.text
