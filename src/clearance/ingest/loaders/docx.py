"""Word documents (``.docx``), read with python-docx.

The body is read in document order (paragraphs and tables interleaved):

* paragraphs are grouped by heading path, locator ``section=<path>`` (``Title`` is the
  outermost level, then ``Heading 1`` … ``Heading 9``; ``section=(top)`` before the first
  heading); the heading is the first line of the text under it;
* every data row of a table is one atomic section, locator
  ``section=<path>,table=T,row=<first cell>`` (``T`` counts the document's tables from 1),
  text ``"<header1>: <cell1> | …"`` and ``Section.table == (header_row, this_row)``; the
  header is the table's first row. A merged cell repeats its text in every grid column it
  covers, so rows line up with the header.

Title: the core property ``title``, else the first ``Title`` or ``Heading 1`` paragraph.
Headers, footers, comments and text boxes are not read.
"""

from __future__ import annotations

import re
from pathlib import Path

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from clearance.ingest.loaders import Outline, collapse
from clearance.model import Section

__all__ = ["load"]

_HEADING = re.compile(r"^heading ([1-9])$", re.IGNORECASE)


def _heading_level(paragraph: Paragraph) -> int | None:
    """0 for ``Title``, N for ``Heading N``, None for body text."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name.lower() == "title":
        return 0
    match = _HEADING.match(name)
    return int(match.group(1)) if match else None


def _rows(table: Table) -> list[list[str]]:
    return [[cell.text for cell in row.cells] for row in table.rows]


def load(path: Path, max_chars: int) -> tuple[str | None, list[Section]]:
    """Title and sections of a DOCX file (``max_chars`` is unused: text sections are
    chunked later and table rows are atomic)."""
    del max_chars
    with path.open("rb") as handle:  # ours, so it is closed even if python-docx fails
        document = docx.Document(handle)
    outline = Outline()
    first_heading: str | None = None
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            outline.table(_rows(block))
            continue
        level = _heading_level(block)
        if level is None:
            outline.text(block.text)
            continue
        outline.heading(level, block.text)
        if level <= 1 and first_heading is None:
            first_heading = collapse(block.text) or None
    title = collapse(document.core_properties.title or "")
    return title or first_heading, outline.finish()
