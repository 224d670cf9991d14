"""HTML (``.html``, ``.htm``), parsed with beautifulsoup4's ``html.parser``.

Locators are those of Markdown (:mod:`clearance.ingest.loaders.markdown`):
``section=<heading path>`` built from ``<h1>``–``<h6>`` (``section=(top)`` before the first
heading), and one atomic section per table row, ``section=<path>,table=T,row=<first cell>``
with ``Section.table == (header_row, this_row)``; the header is the table's first row and a
cell spanning ``n`` columns is repeated ``n`` times so the row lines up with its header.

Title: ``<title>``, else the first ``<h1>``. Script, style, template and ``<head>`` content,
comments and ruby annotations (``<rt>``, ``<rp>``) are ignored. The file's encoding is
detected by Beautiful Soup (BOM, ``<meta charset>``, then UTF-8 / Windows-1252).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from bs4 import BeautifulSoup, Tag, UnusualUsageWarning
from bs4.element import CData, NavigableString

from clearance.ingest.loaders import Outline, collapse
from clearance.model import Section

__all__ = ["html_text", "load"]

_IGNORED = frozenset({"script", "style", "noscript", "template", "head", "title", "rt", "rp"})
_HEADING = re.compile(r"^h([1-6])$")
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div",
        "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li",
        "main", "nav", "ol", "p", "section", "summary", "ul",
    }
)  # fmt: skip
_MAX_COLSPAN = 50
_INLINE_SPACE = re.compile(r"\s+")


def parse(markup: str | bytes) -> BeautifulSoup:
    """Parse with ``html.parser``.

    Beautiful Soup warns when markup merely *looks* like a file name, a URL or XML; those
    are advice for interactive use, not problems with the document, so exactly that
    warning family is silenced here.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusualUsageWarning)
        return BeautifulSoup(markup, "html.parser")


def html_text(markup: str) -> str:
    """The visible text of an HTML fragment, one line per block (used for HTML in Markdown)."""
    soup = parse(markup)
    for tag in soup.find_all(_IGNORED):
        tag.decompose()
    return soup.get_text("\n")


def _cell_text(cell: Tag) -> str:
    return collapse(cell.get_text(" "))


def _table_rows(table: Tag) -> list[list[str]]:
    """The rows of ``table`` itself (not of tables nested in its cells), spans expanded."""
    rows: list[list[str]] = []
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue
        row: list[str] = []
        for cell in tr.find_all(["td", "th"], recursive=False):
            span = str(cell.get("colspan") or "1").strip()
            count = int(span) if span.isdigit() else 1
            row.extend([_cell_text(cell)] * max(1, min(count, _MAX_COLSPAN)))
        rows.append(row)
    return rows


class _Walker:
    """Walks the tree in document order, feeding headings, text and tables to an Outline."""

    def __init__(self, outline: Outline) -> None:
        self.outline = outline
        self.buffer: list[str] = []
        self.first_h1: str | None = None

    def lines(self) -> list[str]:
        """Take the buffered text as stripped, non-blank lines."""
        text = "".join(self.buffer)
        self.buffer = []
        return [line.strip() for line in text.split("\n") if line.strip()]

    def flush(self) -> None:
        lines = self.lines()
        if lines:
            self.outline.text("\n".join(lines))

    def walk(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, Tag):
                self.element(child)
            elif type(child) in (NavigableString, CData):  # not comments, doctypes, scripts
                self.buffer.append(_INLINE_SPACE.sub(" ", str(child)))

    def element(self, tag: Tag) -> None:
        name = tag.name.lower()
        if name in _IGNORED:
            return
        heading = _HEADING.match(name)
        if heading:
            self.flush()
            text = collapse(tag.get_text(" "))
            self.outline.heading(int(heading.group(1)), text)
            if heading.group(1) == "1" and self.first_h1 is None and text:
                self.first_h1 = text
        elif name == "table":
            self.flush()
            self.outline.table(_table_rows(table=tag))
        elif name == "pre":
            self.buffer.append("\n" + tag.get_text() + "\n")
        elif name in _BLOCK:
            self.buffer.append("\n")
            self.walk(tag)
            self.buffer.append("\n")
        else:
            self.walk(tag)


def load(path: Path, max_chars: int) -> tuple[str | None, list[Section]]:
    """Title and sections of an HTML file (``max_chars`` is unused: sections are chunked
    later, at sentence boundaries)."""
    del max_chars
    soup = parse(path.read_bytes())
    walker = _Walker(Outline())
    walker.walk(soup)
    walker.flush()
    title_tag = soup.title
    title = collapse(title_tag.get_text(" ")) if title_tag is not None else ""
    return title or walker.first_h1, walker.outline.finish()
