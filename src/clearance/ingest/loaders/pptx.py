"""PowerPoint decks (``.pptx``), read with python-pptx.

Per slide ``N`` (1-based, in deck order):

* one section with the slide's text, locator ``slide=N``: the title first, then every
  other text frame in shape order, group shapes included (recursively); not atomic;
* for every table (``T`` counting the slide's tables from 1, in shape order), one atomic
  section per non-empty cell of the data area — every row but the first (the column
  labels) and every column but the first (the row labels) — with locator
  ``slide=N,table=T,row=<row label>,col=<column label>``, text
  ``"<slide title> — <row label>, <column label>: <value>"`` (without ``"<slide title> — "``
  when the slide has no title) and ``Section.table == (("", column label), (row label,
  value))``. A table too small to have a data area (one row or one column) is added to the
  slide's text instead, one line per row;
* the speaker notes, if any, locator ``slide=N,notes=1``; not atomic.

Title: the first slide's title. Charts, pictures and media are not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from pptx import Presentation
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide
from pptx.table import Table

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders import clean_block, collapse, line_text
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]


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
    prefix = f"{title} — " if title else ""
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
            sections.append(
                Section(text, locator, atomic=True, table=(("", column), (label, value)))
            )
    return sections


def _slide_sections(slide: Slide, number: int) -> tuple[str, list[Section]]:
    """The slide's title and its sections, in the order of the module docstring."""
    title_shape = slide.shapes.title
    title = ""
    if title_shape is not None and title_shape.has_text_frame:
        title = collapse(title_shape.text_frame.text)
    texts = [title] if title else []
    tables: list[Section] = []
    table_count = 0
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
