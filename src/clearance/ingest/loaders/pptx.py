"""PowerPoint decks (``.pptx``), read with python-pptx.

Per slide ``N`` (1-based, in deck order):

* one section with the slide's text, locator ``slide=N``: the title first, then every
  other text frame and every chart's title in shape order, group shapes included
  (recursively); not atomic;
* for every table (``T`` counting the slide's tables from 1, in shape order), one atomic
  section per non-empty cell of the data area — every row but the first (the column
  labels) and every column but the first (the row labels) — with locator
  ``slide=N,table=T,row=<row label>,col=<column label>``, text
  ``"<slide title> — <row label>, <column label>: <value>"`` (without ``"<slide title> — "``
  when the slide has no title), ``Section.table == ((<top-left cell>, column label),
  (row label, value))`` and ``Section.titles == (<slide title>,)``. A table too small to
  have a data area (one row or one column) is added to the slide's text instead, one line
  per row;
* for every native chart with categories (``C`` counting the slide's charts from 1, in
  shape order; column, bar, line, area, pie, doughnut and radar charts), one atomic
  section per data point, series by series, with locator
  ``slide=N,chart=C,series=<series name>,category=<category label>`` (a nameless series
  or category is named by its 1-based position), text ``"<slide title> — <chart title> —
  <series name>, <category label>: <value>"`` (absent titles left out),
  ``Section.table == (("", category label), (series name, value))`` and
  ``Section.titles == (<chart title>, <slide title>)``. A multi-level category is its
  labels joined with ``" / "``. Values are the chart's cached numbers, written with
  thousands separators and at most 15 significant digits (Excel's display precision),
  padded to the decimals of the series' number format (``#,##0.0``: ``24.0``) but never
  rounded to them; a series formatted as a percentage is written as one (``0.125`` →
  ``12.5%``). Points
  without a value are left out: a gap in a chart is not a zero. Scatter and bubble
  charts (numeric x values, no categories) contribute their title only;
* the speaker notes, if any, locator ``slide=N,notes=1``; not atomic.

Title: the first slide's title. Pictures and media are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import BinaryIO

from pptx import Presentation
from pptx.chart.chart import Chart
from pptx.chart.plot import BubblePlot, XyPlot
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide
from pptx.table import Table

from clearance.ingest.facts import format_number
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import clean_block, collapse, line_text
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]

_QUOTED = re.compile(r'"[^"]*"|\\.')
_DECIMALS = re.compile(r"[0#]\.([0#]+)")


def _walk(shapes: Iterator[BaseShape]) -> Iterator[BaseShape]:
    """Every shape in order, the members of group shapes in place of the group."""
    for shape in shapes:
        if isinstance(shape, GroupShape):
            yield from _walk(iter(shape.shapes))
        else:
            yield shape


def _frame_text(shape: Shape) -> str:
    # python-pptx renders a line break inside a paragraph as a vertical tab.
    return clean_block(shape.text_frame.text.replace("\v", "\n"))


def _table_rows(table: Table) -> list[list[str]]:
    return [[collapse(cell.text) for cell in row.cells] for row in table.rows]


def _table_sections(rows: list[list[str]], slide: int, number: int, title: str) -> list[Section]:
    """One atomic section per non-empty cell of the data area (see the module docstring)."""
    columns = rows[0]
    corner = columns[0] if columns else ""
    prefix = f"{title} — " if title else ""
    titles = (title,) if title else ()
    sections: list[Section] = []
    for row in rows[1:]:
        label = row[0] if row else ""
        for col in range(1, len(row)):
            value = row[col]
            if not value:
                continue
            column = columns[col] if col < len(columns) else ""
            locator = format_locator(
                ("slide", slide), ("table", number), ("row", label), ("col", column)
            )
            text = f"{prefix}{label}, {column}: {value}"
            table = ((corner, column), (label, value))
            sections.append(Section(text, locator, atomic=True, table=table, titles=titles))
    return sections


def _chart_title(chart: Chart) -> str:
    if not chart.has_title:  # reading chart_title would add an empty title element
        return ""
    title = chart.chart_title
    return collapse(title.text_frame.text) if title.has_text_frame else ""


def _number_format(series: object) -> str:
    """The format code of the series' cached values (``General`` if none), the part for
    positive numbers, quoted literals and escapes taken out. python-pptx has no public
    accessor for it, so it is read from the series element."""
    element = getattr(series, "_element", None)
    codes = element.xpath("./c:val//c:formatCode/text()") if element is not None else []
    code = str(codes[0]) if codes else "General"
    return _QUOTED.sub("", code).split(";")[0]


def _chart_value(value: float, code: str) -> str:
    """A cached chart number as text: at most 15 significant digits, thousands
    separators, padded to the decimals of the format (``#,##0.0``: ``24.0``) but never cut
    to them (the value stays exact); a percentage format multiplies by 100 and adds ``%``."""
    percent = "%" in code
    number = Decimal(f"{value * 100 if percent else value:.15g}")
    decimals = _DECIMALS.search(code)
    exponent = int(number.as_tuple().exponent)
    if decimals is not None and exponent > -len(decimals.group(1)):
        number = number.quantize(Decimal(1).scaleb(-len(decimals.group(1))))
        text = f"{number:,f}"
    else:
        text = format_number(number)
    return text + ("%" if percent else "")


def _chart_sections(chart: Chart, slide: int, number: int, slide_title: str) -> list[Section]:
    """One atomic section per data point of a category chart (see the module docstring)."""
    chart_title = _chart_title(chart)
    titles = tuple(t for t in (chart_title, slide_title) if t)
    prefix = "".join(f"{t} — " for t in reversed(titles))
    sections: list[Section] = []
    for plot in chart.plots:
        if isinstance(plot, XyPlot | BubblePlot):
            continue
        labels = [
            collapse(" / ".join(x for x in flat if x)) for flat in plot.categories.flattened_labels
        ]
        for s_index, series in enumerate(plot.series, start=1):
            name = collapse(series.name) or str(s_index)
            code = _number_format(series)
            for k, value in enumerate(series.values):
                if value is None:
                    continue
                category = (labels[k] if k < len(labels) else "") or str(k + 1)
                text_value = _chart_value(value, code)
                locator = format_locator(
                    ("slide", slide), ("chart", number), ("series", name), ("category", category)
                )
                text = f"{prefix}{name}, {category}: {text_value}"
                table = (("", category), (name, text_value))
                sections.append(Section(text, locator, atomic=True, table=table, titles=titles))
    return sections


def _slide_sections(slide: Slide, number: int) -> tuple[str, list[Section]]:
    """The slide's title and its sections, in the order of the module docstring."""
    title_shape = slide.shapes.title
    title = ""
    if title_shape is not None and title_shape.has_text_frame:
        title = collapse(title_shape.text_frame.text)
    texts = [title] if title else []
    tables: list[Section] = []
    table_count = chart_count = 0
    for shape in _walk(iter(slide.shapes)):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if isinstance(shape, GraphicFrame) and shape.has_table:
            rows = [row for row in _table_rows(shape.table) if any(row)]
            if not rows:
                continue
            table_count += 1
            if len(rows) < 2 or max(len(row) for row in rows) < 2:
                texts.extend(line_text(row) for row in rows)
            else:
                tables.extend(_table_sections(rows, number, table_count, title))
        elif isinstance(shape, GraphicFrame) and shape.has_chart:
            chart_count += 1
            chart_title = _chart_title(shape.chart)
            if chart_title:
                texts.append(chart_title)
            tables.extend(_chart_sections(shape.chart, number, chart_count, title))
        elif isinstance(shape, Shape) and shape.has_text_frame:
            text = _frame_text(shape)
            if text:
                texts.append(text)
    sections: list[Section] = []
    if texts:
        sections.append(Section("\n".join(texts), format_locator(("slide", number))))
    sections.extend(tables)
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = clean_block(frame.text.replace("\v", "\n")) if frame is not None else ""
        if notes:
            sections.append(Section(notes, format_locator(("slide", number), ("notes", 1))))
    return title, sections


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and sections of a PPTX file (``max_chars`` is unused: slide text is chunked
    later and table cells are atomic)."""
    del max_chars
    deck = Presentation(handle)
    title: str | None = None
    sections: list[Section] = []
    total = len(deck.slides)
    for number, slide in enumerate(deck.slides, start=1):
        budget.tick("slide", number, total)
        slide_title, slide_sections = _slide_sections(slide, number)
        if number == 1:
            title = slide_title or None
        sections.extend(slide_sections)
    return title, sections
