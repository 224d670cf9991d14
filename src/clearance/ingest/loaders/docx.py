"""Word documents (``.docx``), read with python-docx.

The body is read in document order (paragraphs and tables interleaved):

* paragraphs are grouped by heading path, locator ``section=<path>`` (``Title`` is the
  outermost level, then ``Heading 1`` … ``Heading 9``; ``section=(top)`` before the first
  heading); the heading is the first line of the text under it;
* every data row of a table is one atomic section, locator
  ``section=<path>,table=T,row=<first cell>`` (``T`` counts the document's tables from 1),
  text ``"<header1>: <cell1> | …"`` and ``Section.table == (header_row, this_row)``; the
  header is the table's first row. A merged cell repeats its text in every grid column it
  covers, so rows line up with the header. A cell's text is its paragraphs and the text of
  the tables nested in it, one line each.

Content that python-docx leaves out is read too, so that no text is lost without a word:
paragraphs and tables inside content controls (``w:sdt``), custom XML and tracked insertions
or moves (``w:ins``, ``w:moveTo``), and, inside a paragraph, runs wrapped in such elements,
in smart tags, simple fields or hyperlinks. Deleted and moved-away text (``w:del``,
``w:moveFrom``) is not part of the document and is not read.

Title: the core property ``title``, else the first ``Title`` or ``Heading 1`` paragraph.
Headers, footers, comments and text boxes are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Outline, collapse
from clearance.model import Section

__all__ = ["load"]

_HEADING = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_P, _TBL, _R = f"{_W}p", f"{_W}tbl", f"{_W}r"
_SDT, _SDT_CONTENT = f"{_W}sdt", f"{_W}sdtContent"
_WRAPPERS = frozenset({f"{_W}customXml", f"{_W}ins", f"{_W}moveTo"})
_NOT_TEXT = frozenset({f"{_W}del", f"{_W}moveFrom", f"{_W}txbxContent"})


def _heading_level(paragraph: Paragraph) -> int | None:
    """0 for ``Title``, N for ``Heading N``, None for body text."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    if name.lower() == "title":
        return 0
    match = _HEADING.match(name)
    return int(match.group(1)) if match else None


class _Levels:
    """:func:`_heading_level`, remembered per style id.

    python-docx resolves ``Paragraph.style`` by scanning the styles part on every call
    (milliseconds each for a paragraph without an explicit style, the common case), which
    made long documents take minutes; the style id itself is one attribute.
    """

    def __init__(self) -> None:
        self._known: dict[str | None, int | None] = {}

    def __call__(self, paragraph: Paragraph) -> int | None:
        style_id = paragraph._p.style  # w:pPr/w:pStyle/@w:val, None for the default style
        if style_id not in self._known:
            self._known[style_id] = _heading_level(paragraph)
        return self._known[style_id]


def _blocks(parent: Any) -> Iterator[Any]:
    """The ``w:p`` and ``w:tbl`` elements of a body or cell, in order, one at a time,
    including those inside content controls, custom XML and tracked insertions."""
    for child in parent.iterchildren():
        tag = child.tag
        if tag in (_P, _TBL):
            yield child
        elif tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _blocks(content)
        elif tag in _WRAPPERS:
            yield from _blocks(child)


def _paragraph_text(p: Any) -> str:
    """The text of every run in the paragraph, wrapped or not, but not deleted text nor
    that of text boxes anchored in it."""
    parts: list[str] = []
    for run in p.iter(_R):
        node = run.getparent()
        while node is not None and node is not p and node.tag not in _NOT_TEXT:
            node = node.getparent()
        if node is p:
            parts.append(run.text)  # python-docx's CT_R.text: w:t, tabs and breaks
    return "".join(parts)


def _cell_text(tc: Any) -> str:
    lines: list[str] = []
    for block in _blocks(tc):
        if block.tag == _P:
            lines.append(_paragraph_text(block))
        else:
            lines.extend(" ".join(_cell_text(cell) for cell in row) for row in _tc_rows(block))
    return "\n".join(lines)


def _tc_rows(tbl: Any) -> Iterator[list[Any]]:
    for tr in tbl.iterchildren(f"{_W}tr"):
        yield list(tr.iterchildren(f"{_W}tc"))


def _rows(table: Table) -> list[list[str]]:
    """Rows of cell texts, a merged cell repeated over the grid columns it spans."""
    texts: dict[Any, str] = {}  # per w:tc: a merged cell is the same element in every column

    def text(tc: Any) -> str:
        if tc not in texts:
            texts[tc] = _cell_text(tc)
        return texts[tc]

    return [[text(cell._tc) for cell in row.cells] for row in table.rows]


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and sections of a DOCX file (text sections are chunked later and table rows
    are atomic; ``max_chars`` is the room a list of step headings has for their first
    sentences, :class:`~clearance.ingest.loaders.common.Outline`)."""
    document = docx.Document(handle)
    outline = Outline(max_chars)
    heading_level = _Levels()
    first_heading: str | None = None
    for number, element in enumerate(_blocks(document.element.body), start=1):
        budget.tick("block", number)
        if element.tag == _TBL:
            outline.table(_rows(Table(element, document)))
            continue
        text = _paragraph_text(element)
        level = heading_level(Paragraph(element, document))
        if level is None:
            outline.text(text)
            continue
        outline.heading(level, text)
        if level <= 1 and first_heading is None:
            first_heading = collapse(text) or None
    title = collapse(document.core_properties.title or "")
    return title or first_heading, outline.finish(title or first_heading)
