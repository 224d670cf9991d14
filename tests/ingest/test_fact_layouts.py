"""Facts from the layouts real decks and sheets use, through the real pipeline into a real
SQLite store: native PPTX charts, tables whose top-left cell names the entity or the metric,
tables with the period in the slide or section title. Each fact is checked for its value,
unit, period, entity and locator, and its locator must open stored text that shows the
number (what a citation points at).

The "never a guess" rules are checked with reverse proofs: a missing cell (``—``, ``n/a``,
``-``) must never become 0, and a unit the vocabulary does not know must not be replaced by
the metric's default; a deliberately broken variant shows each assertion can fail.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pytest
from pptx import Presentation
from pptx.chart.data import CategoryChartData, XyChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.presentation import Presentation as Deck
from pptx.util import Inches

from clearance.config import Settings
from clearance.ingest import facts as facts_module
from clearance.ingest.facts import ParsedNumber, parse_number
from clearance.ingest.loaders import extract
from clearance.ingest.loaders import pptx as pptx_loader
from clearance.ingest.locator import parse_locator
from clearance.ingest.pipeline import FileResult, Ingestor
from clearance.model import Chunk, Fact, Section
from clearance.store.sqlite import SQLiteStore

SettingsFactory = Callable[..., Settings]

# The vocabulary of a company whose entity "US" is also the start of the unit "US$ m".
FACTS: dict[str, Any] = {
    "metrics": {
        "revenue": ["revenue", "net sales"],
        "operating_profit": ["operating profit"],
        "headcount": ["headcount", "employees"],
    },
    "entities": {
        "ACME Japan": ["Japan"],
        "ACME US": ["US", "USA"],
        "ACME EU": ["EU", "Europe"],
    },
    "channels": {"total": ["actual"], "budget": ["budget"]},
    "units": {"USD m": ["USD m", "US$ m", "USD million"], "people": ["people"], "%": ["%"]},
    "metric_units": {"revenue": "USD m", "operating_profit": "USD m", "headcount": "people"},
}

Row = tuple[
    str, str, str, str, float, str, str
]  # entity, period, metric, channel, value, unit, locator


def rows(facts: Iterable[Fact]) -> set[Row]:
    return {(f.entity, f.period, f.metric, f.channel, f.value, f.unit, f.locator) for f in facts}


def ingest(
    settings_factory: SettingsFactory, store: SQLiteStore, path: Path
) -> tuple[FileResult, list[Fact]]:
    """``path`` (alone in its folder, readable by everyone) through the real pipeline."""
    (path.parent / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    ingestor = Ingestor(settings_factory({"facts": FACTS}), store, None)
    (result,) = ingestor.run(ingestor.plan([path])).results
    assert result.status == "added", result
    assert result.doc_id is not None
    return result, store.list_facts(result.doc_id)


def opened(store: SQLiteStore, fact: Fact) -> Chunk:
    """The stored chunk a fact's citation opens: its locator is the start of the fact's
    locator (a spreadsheet block, or exactly the cell, slide table cell or chart point),
    and its text shows the cell as written."""
    parts = parse_locator(fact.locator)
    found = [
        c
        for c in store.get_chunks(fact.doc_id)
        if parts[: len(parse_locator(c.locator))] == parse_locator(c.locator) and fact.raw in c.text
    ]
    assert found, f"no stored text at {fact.locator} shows {fact.raw!r}"
    return found[0]


def deck() -> Deck:
    return Presentation()


def chart_slide(
    prs: Deck,
    title: str,
    categories: Sequence[str],
    series: dict[str, Sequence[float | None]],
    chart_title: str | None = None,
    formats: dict[str, str] | None = None,
) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[5])  # "Title Only"
    slide.shapes.title.text = title
    data = CategoryChartData()
    data.categories = list(categories)
    for name, values in series.items():
        data.add_series(name, list(values), number_format=(formats or {}).get(name))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(0.5), Inches(1.5), Inches(9), Inches(5), data
    )
    if chart_title is not None:
        frame.chart.has_title = True
        frame.chart.chart_title.text_frame.text = chart_title


def table_slide(prs: Deck, title: str, cells: Sequence[Sequence[str]]) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = title
    grid = slide.shapes.add_table(
        len(cells), len(cells[0]), Inches(0.5), Inches(1.5), Inches(9), Inches(3)
    ).table
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            grid.cell(r, c).text = text


def write_xlsx(path: Path, sheets: dict[str, list[list[Any]]]) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, grid in sheets.items():
        sheet = book.create_sheet(name)
        for row in grid:
            sheet.append(row)
    book.save(path)
    return path


def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    return docs


# --------------------------------------------------------------------------- native charts


def test_native_chart_points_become_facts_with_chart_locators(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    prs = deck()
    # entity from the slide title; series are metrics, categories periods; a gap is no fact
    chart_slide(
        prs,
        "Quarterly results: Japan",
        ["Q1 FY2025", "Q2 FY2025", "Q3 FY2025"],
        {"Revenue (US$ m)": [114.8, 119.6, None], "Operating profit (US$ m)": [13.9, 14.8, 15.2]},
    )
    # entity from the chart title; series are periods, categories metrics
    chart_slide(
        prs,
        "Quarterly results (continued)",
        ["Revenue", "Headcount"],
        {"Q1 FY2025": [82.6, 915], "Q2 FY2025": [85.9, 924]},
        chart_title="Europe",
    )
    path = folder(tmp_path) / "quarterly.pptx"
    prs.save(str(path))
    result, facts = ingest(settings_factory, store, path)
    assert rows(facts) == {
        ("ACME Japan", "Q1 2025", "revenue", "total", 114.8, "USD m",
         "slide=1,chart=1,series=Revenue (US$ m),category=Q1 FY2025"),
        ("ACME Japan", "Q2 2025", "revenue", "total", 119.6, "USD m",
         "slide=1,chart=1,series=Revenue (US$ m),category=Q2 FY2025"),
        ("ACME Japan", "Q1 2025", "operating_profit", "total", 13.9, "USD m",
         "slide=1,chart=1,series=Operating profit (US$ m),category=Q1 FY2025"),
        ("ACME Japan", "Q2 2025", "operating_profit", "total", 14.8, "USD m",
         "slide=1,chart=1,series=Operating profit (US$ m),category=Q2 FY2025"),
        ("ACME Japan", "Q3 2025", "operating_profit", "total", 15.2, "USD m",
         "slide=1,chart=1,series=Operating profit (US$ m),category=Q3 FY2025"),
        ("ACME EU", "Q1 2025", "revenue", "total", 82.6, "USD m",
         "slide=2,chart=1,series=Q1 FY2025,category=Revenue"),
        ("ACME EU", "Q2 2025", "revenue", "total", 85.9, "USD m",
         "slide=2,chart=1,series=Q2 FY2025,category=Revenue"),
        ("ACME EU", "Q1 2025", "headcount", "total", 915.0, "people",
         "slide=2,chart=1,series=Q1 FY2025,category=Headcount"),
        ("ACME EU", "Q2 2025", "headcount", "total", 924.0, "people",
         "slide=2,chart=1,series=Q2 FY2025,category=Headcount"),
    }  # fmt: skip
    assert result.warnings == ()
    for fact in facts:  # the number is in the stored text the citation opens
        assert opened(store, fact).locator == fact.locator
    point = opened(store, next(f for f in facts if f.value == 114.8))
    assert point.text == ("Quarterly results: Japan — Revenue (US$ m), Q1 FY2025: 114.8")
    slide_text = next(c for c in store.get_chunks(result.doc_id) if c.locator == "slide=2")
    assert "Europe" in slide_text.text  # the chart's title is part of the slide's text


def test_chart_values_as_text_percentages_gaps_and_scatter_charts(tmp_path: Path) -> None:
    from clearance.ingest.loaders import extract

    prs = deck()
    chart_slide(
        prs,
        "Margins",
        ["Japan", "US"],
        {
            "Operating margin": [0.125, None],
            "Headcount": [1318.0, 1968.0],
            "Revenue": [24.0, 448.25],
        },
        formats={"Operating margin": '0.0%;"(-)"0.0%', "Revenue": "#,##0.0"},
    )
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = "Scatter"
    xy = XyChartData()
    xy.add_series("Latency").add_data_point(1.0, 2.0)
    slide.shapes.add_chart(XL_CHART_TYPE.XY_SCATTER, Inches(1), Inches(1), Inches(6), Inches(4), xy)
    path = tmp_path / "charts.pptx"
    prs.save(str(path))
    texts = [(s.locator, s.text) for s in extract(path, max_chars=200).sections]
    assert texts == [
        ("slide=1", "Margins"),
        ("slide=1,chart=1,series=Operating margin,category=Japan",
         "Margins — Operating margin, Japan: 12.5%"),
        ("slide=1,chart=1,series=Headcount,category=Japan", "Margins — Headcount, Japan: 1,318"),
        ("slide=1,chart=1,series=Headcount,category=US", "Margins — Headcount, US: 1,968"),
        # padded to the format's decimals, never rounded to them
        ("slide=1,chart=1,series=Revenue,category=Japan", "Margins — Revenue, Japan: 24.0"),
        ("slide=1,chart=1,series=Revenue,category=US", "Margins — Revenue, US: 448.25"),
        ("slide=2", "Scatter"),
    ]  # fmt: skip


# --------------------------------------------------------------------------- top-left cell


def test_xlsx_entity_in_a1_periods_across_metrics_down(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    path = write_xlsx(
        folder(tmp_path) / "regions.xlsx",
        {
            # sheet names that name no entity: only A1 says whose figures these are
            "JP01": [
                ["Japan", "FY2023", "FY2024", "FY2025"],
                ["Revenue (US$m)", 412.5, "448.2*", "—"],
                ["Operating profit (US$m)", "(12.5)", 55.6, "n/a"],
                ["Headcount", 1240, "1,305¹", "-"],
                ["Joiners", 120, 131, "—"],  # a measure the vocabulary does not know: its label
            ],
            "US01": [
                ["US", "FY2024", "FY2025"],
                ["Revenue (US$m)", 672.4, 731.8],
            ],
        },
    )
    result, facts = ingest(settings_factory, store, path)
    assert rows(facts) == {
        ("ACME Japan", "FY2023", "revenue", "total", 412.5, "USD m",
         "sheet=JP01,range=A1:D5,row=Revenue (US$m),col=FY2023"),
        ("ACME Japan", "FY2024", "revenue", "total", 448.2, "USD m",
         "sheet=JP01,range=A1:D5,row=Revenue (US$m),col=FY2024"),
        ("ACME Japan", "FY2023", "operating_profit", "total", -12.5, "USD m",
         "sheet=JP01,range=A1:D5,row=Operating profit (US$m),col=FY2023"),
        ("ACME Japan", "FY2024", "operating_profit", "total", 55.6, "USD m",
         "sheet=JP01,range=A1:D5,row=Operating profit (US$m),col=FY2024"),
        ("ACME Japan", "FY2023", "headcount", "total", 1240.0, "people",
         "sheet=JP01,range=A1:D5,row=Headcount,col=FY2023"),
        ("ACME Japan", "FY2024", "headcount", "total", 1305.0, "people",
         "sheet=JP01,range=A1:D5,row=Headcount,col=FY2024"),
        ("ACME US", "FY2024", "revenue", "total", 672.4, "USD m",
         "sheet=US01,range=A1:C2,row=Revenue (US$m),col=FY2024"),
        ("ACME US", "FY2025", "revenue", "total", 731.8, "USD m",
         "sheet=US01,range=A1:C2,row=Revenue (US$m),col=FY2025"),
        *(("ACME Japan", f"FY{year}", "joiners", "total", value, "",
           f"sheet=JP01,range=A1:D5,row=Joiners,col=FY{year}")
          for year, value in ((2023, 120.0), (2024, 131.0))),
    }  # fmt: skip
    assert result.warnings == ()
    by_value = {f.value: f for f in facts}
    assert by_value[448.2].raw == "448.2*"  # the footnote marker is kept with the cell
    assert by_value[1305.0].raw == "1,305¹"
    assert by_value[-12.5].raw == "(12.5)"
    for fact in facts:
        opened(store, fact)
    assert_missing_cells_make_no_fact(facts, missing=[("ACME Japan", "FY2025")])


def test_a_title_row_above_the_table_names_its_entity_or_period(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    """A report sheet's usual head: a title in A1, a blank row, then the header."""
    path = write_xlsx(
        folder(tmp_path) / "titled.xlsx",
        {
            "Japan": [
                ["ACME Japan — key figures"],
                [],
                ["Measure", "FY2024", "FY2025"],
                ["Revenue (US$m)", 448.2, 486.9],
            ],
            "Regions": [
                ["Key figures FY2025"],
                ["Unaudited"],
                ["Region", "Revenue (US$m)"],
                ["US", 731.8],
            ],
        },
    )
    result, facts = ingest(settings_factory, store, path)
    assert rows(facts) == {
        ("ACME Japan", "FY2024", "revenue", "total", 448.2, "USD m",
         "sheet=Japan,range=A1:C4,row=Revenue (US$m),col=FY2024"),
        ("ACME Japan", "FY2025", "revenue", "total", 486.9, "USD m",
         "sheet=Japan,range=A1:C4,row=Revenue (US$m),col=FY2025"),
        ("ACME US", "FY2025", "revenue", "total", 731.8, "USD m",
         "sheet=Regions,range=A1:B4,row=US,col=Revenue (US$m)"),
    }  # fmt: skip
    assert result.warnings == ()
    for fact in facts:
        opened(store, fact)
    chunks = store.get_chunks(facts[0].doc_id)
    assert chunks[0].text.startswith("ACME Japan — key figures\nMeasure | FY2024 | FY2025")


def test_one_cell_rows_all_the_way_down_are_a_one_column_table(tmp_path: Path) -> None:
    """Reverse of the title rule: a column of names keeps its first row as the header."""
    path = write_xlsx(
        tmp_path / "names.xlsx", {"Names": [["Name"], ["Ann"], ["Bo"], ["Cy"], ["Di"]]}
    )
    [section] = extract(path, max_chars=800).sections
    assert section.table == (("Name",), ("Ann",), ("Bo",), ("Cy",), ("Di",))
    assert section.titles == ()


def test_csv_metric_in_the_top_left_cell_entities_down(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    path = folder(tmp_path) / "revenue.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(
            [
                ["Revenue (USD m)", "FY2024", "FY2025"],
                ["Japan", "448.2", "486.9"],
                ["EU", "321.5", "—"],
                ["Total", "1,442.1", "1,571.0"],  # not an entity: no fact, no guess
            ]
        )
    result, facts = ingest(settings_factory, store, path)
    assert rows(facts) == {
        ("ACME Japan", "FY2024", "revenue", "total", 448.2, "USD m",
         "rows=2-4,row=Japan,col=FY2024"),
        ("ACME Japan", "FY2025", "revenue", "total", 486.9, "USD m",
         "rows=2-4,row=Japan,col=FY2025"),
        ("ACME EU", "FY2024", "revenue", "total", 321.5, "USD m", "rows=2-4,row=EU,col=FY2024"),
    }  # fmt: skip
    # "Total" is the channel's name, so the row looks like figures: the operator hears why
    # they were skipped
    assert result.warnings == ("facts: 2 values at rows=2-4 skipped: no entity named",)
    for fact in facts:
        opened(store, fact)


# --------------------------------------------------------------------------- period in the title


def test_period_in_the_slide_title_metrics_down_entities_across(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    prs = deck()
    table_slide(
        prs,
        "Q1 FY2026 results by region",
        [
            ["US$ m unless stated", "Japan", "US", "EU"],
            ["Revenue", "124.6*", "189.7", "90.8"],
            ["Operating profit", "15.1", "24.9", "—"],
            ["Headcount (people)", "1,371", "2,052", "955"],
        ],
    )
    path = folder(tmp_path) / "flash.pptx"
    prs.save(str(path))
    result, facts = ingest(settings_factory, store, path)
    assert {(f.entity, f.period, f.metric, f.value, f.unit) for f in facts} == {
        ("ACME Japan", "Q1 2026", "revenue", 124.6, "USD m"),
        ("ACME US", "Q1 2026", "revenue", 189.7, "USD m"),
        ("ACME EU", "Q1 2026", "revenue", 90.8, "USD m"),
        ("ACME Japan", "Q1 2026", "operating_profit", 15.1, "USD m"),
        ("ACME US", "Q1 2026", "operating_profit", 24.9, "USD m"),
        ("ACME Japan", "Q1 2026", "headcount", 1371.0, "people"),
        ("ACME US", "Q1 2026", "headcount", 2052.0, "people"),
        ("ACME EU", "Q1 2026", "headcount", 955.0, "people"),
    }
    assert result.warnings == ()
    japan = next(f for f in facts if f.value == 124.6)
    assert japan.locator == "slide=1,table=1,row=Revenue,col=Japan"
    assert japan.raw == "124.6*"
    assert opened(store, japan).text == "Q1 FY2026 results by region — Revenue, Japan: 124.6*"
    assert_missing_cells_make_no_fact(
        [f for f in facts if f.metric == "operating_profit"], missing=[("ACME EU", "Q1 2026")]
    )


def test_period_in_the_section_heading_metrics_down_entities_across(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    document = docx.Document()
    document.add_heading("Operating report", 0)
    document.add_heading("Results for FY2025", 1)
    cells = [["Metric", "Japan", "EU"], ["Revenue (USD m)", "486.9", "352.3"]]
    grid = document.add_table(rows=2, cols=3)
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            grid.cell(r, c).text = text
    path = folder(tmp_path) / "report.docx"
    document.save(str(path))
    _, facts = ingest(settings_factory, store, path)
    assert rows(facts) == {
        ("ACME Japan", "FY2025", "revenue", "total", 486.9, "USD m",
         "section=Operating report > Results for FY2025,table=1,row=Revenue (USD m),col=Japan"),
        ("ACME EU", "FY2025", "revenue", "total", 352.3, "USD m",
         "section=Operating report > Results for FY2025,table=1,row=Revenue (USD m),col=EU"),
    }  # fmt: skip
    for fact in facts:
        opened(store, fact)


# --------------------------------------------------------------------------- never a guess


def assert_missing_cells_make_no_fact(
    facts: Sequence[Fact], missing: Sequence[tuple[str, str]]
) -> None:
    """No fact for an (entity, period) whose cells were ``—``, ``n/a`` or ``-``; above all,
    no 0 that no cell says."""
    assert not [f for f in facts if (f.entity, f.period) in missing], missing
    assert not [f for f in facts if f.value == 0 and f.raw.strip() not in ("0", "0.0")]


def test_reverse_proof_a_missing_cell_read_as_zero_is_caught(
    tmp_path: Path,
    settings_factory: SettingsFactory,
    store: SQLiteStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def dash_is_zero(text: str) -> ParsedNumber | None:
        if text.strip() in ("—", "-", "n/a"):
            return ParsedNumber(0.0, "")
        return parse_number(text)

    monkeypatch.setattr(facts_module, "parse_number", dash_is_zero)
    path = write_xlsx(
        folder(tmp_path) / "dash.xlsx",
        {"JP01": [["Japan", "FY2024", "FY2025"], ["Revenue (US$m)", 448.2, "—"]]},
    )
    _, facts = ingest(settings_factory, store, path)
    assert any(f.value == 0 for f in facts)
    with pytest.raises(AssertionError):
        assert_missing_cells_make_no_fact(facts, missing=[("ACME Japan", "FY2025")])


UNKNOWN_UNITS = [
    ["Japan", "FY2024", "FY2025"],
    ["Revenue (EUR k)", "412,000", "448,200"],  # a currency and scale nobody configured
    ["Operating profit", "JPY 8,100", "9,000"],  # a currency in the cell itself
    ["Headcount (people)", "1,305", "1,362"],
]


def test_a_unit_the_vocabulary_does_not_know_gives_no_fact_and_a_warning(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    path = write_xlsx(folder(tmp_path) / "units.xlsx", {"JP01": UNKNOWN_UNITS})
    result, facts = ingest(settings_factory, store, path)
    assert_units_are_never_guessed(facts)
    assert {(f.metric, f.period, f.value) for f in facts} == {
        ("headcount", "FY2024", 1305.0),
        ("headcount", "FY2025", 1362.0),
        ("operating_profit", "FY2025", 9000.0),  # no unit text here: the metric's default
    }
    assert result.warnings == (
        "facts: 2 values at sheet=JP01,range=A1:C4 skipped: unit not recognised: 'EUR k'",
        "facts: 1 value at sheet=JP01,range=A1:C4 skipped: unit not recognised: 'JPY'",
    )


def test_a_long_format_unit_column_the_vocabulary_does_not_know_gives_no_fact(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    path = folder(tmp_path) / "long.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(
            [
                ["Region", "Metric", "Unit", "FY2024"],
                ["Japan", "Revenue", "USD m", "448.2"],
                ["EU", "Revenue", "EUR m", "298.1"],
            ]
        )
    result, facts = ingest(settings_factory, store, path)
    assert {(f.entity, f.value, f.unit) for f in facts} == {("ACME Japan", 448.2, "USD m")}
    assert result.warnings == ("facts: 1 value at rows=2-3 skipped: unit not recognised: 'EUR m'",)


def assert_units_are_never_guessed(facts: Sequence[Fact]) -> None:
    """No fact from a cell or label that states a unit the vocabulary does not know."""
    stated = [f for f in facts if "EUR" in f.locator or "JPY" in f.raw]
    assert stated == []


def test_reverse_proof_a_default_unit_for_an_unknown_one_is_caught(
    tmp_path: Path,
    settings_factory: SettingsFactory,
    store: SQLiteStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(facts_module, "_unknown_unit", lambda residue, whole: None)
    path = write_xlsx(folder(tmp_path) / "units.xlsx", {"JP01": UNKNOWN_UNITS})
    _, facts = ingest(settings_factory, store, path)
    assert any(f.value == 412000.0 and f.unit == "USD m" for f in facts)  # the guess
    with pytest.raises(AssertionError):
        assert_units_are_never_guessed(facts)


def test_an_ambiguous_table_gives_no_fact_and_a_warning_naming_its_locator(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore
) -> None:
    prs = deck()
    table_slide(prs, "Revenue FY2025", [["", "Q1", "Q2"], ["Japan and US", "1", "2"]])
    table_slide(prs, "FY2025", [["Metric", "Value"], ["Revenue (USD m)", "486.9"]])
    path = folder(tmp_path) / "ambiguous.pptx"
    prs.save(str(path))
    result, facts = ingest(settings_factory, store, path)
    assert facts == []
    assert result.warnings == (
        "facts: 2 values at slide=1,table=1 skipped: two entities named in 'Japan and US'",
        "facts: 1 value at slide=2,table=1 skipped: no entity named",
    )


def test_reverse_proof_a_chart_point_stored_without_its_value_is_caught(
    tmp_path: Path,
    settings_factory: SettingsFactory,
    store: SQLiteStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = pptx_loader._chart_sections

    def without_values(*args: Any) -> list[Section]:
        return [dataclasses.replace(s, text=s.text.rpartition(":")[0]) for s in real(*args)]

    monkeypatch.setattr(pptx_loader, "_chart_sections", without_values)
    prs = deck()
    chart_slide(prs, "Quarterly results: Japan", ["Q1 FY2025"], {"Revenue": [114.8]})
    path = folder(tmp_path) / "quarterly.pptx"
    prs.save(str(path))
    _, facts = ingest(settings_factory, store, path)
    assert [f.value for f in facts] == [114.8]
    with pytest.raises(AssertionError, match="no stored text"):
        opened(store, facts[0])
