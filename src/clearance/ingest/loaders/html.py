"""HTML (``.html``, ``.htm``), read as a stream of tags with the standard library's
:class:`html.parser.HTMLParser`.

Locators are those of Markdown (:mod:`clearance.ingest.loaders.markdown`):
``section=<heading path>`` built from ``<h1>``–``<h6>`` (``section=(top)`` before the first
heading), and one atomic section per table row, ``section=<path>,table=T,row=<first cell>``
with ``Section.table == (header_row, this_row)``; the header is the table's first row (or
two, :func:`~clearance.ingest.loaders.common.table_sections`), and a cell spanning ``n``
columns is repeated ``n`` times, one spanning ``n`` rows stands in each of them, so every
row lines up with its header.

Title: ``<title>``, else the first ``<h1>``; a page a site generator has not yet rendered is
read as it would show (:mod:`clearance.ingest.loaders.markup`): its front matter's ``title``
comes first, and neither front matter nor template tags are text. Script, style, template and ``<head>`` content,
comments and ruby annotations (``<rt>``, ``<rp>``) are ignored. The file's encoding is
detected by Beautiful Soup (BOM, ``<meta charset>``, then UTF-8 / Windows-1252).

Elements nest as Beautiful Soup's ``html.parser`` tree would nest them (an end tag closes
the innermost open element of its name and everything opened inside it; an end tag with no
open element is ignored; void elements such as ``<br>`` close at once; elements still open at
the end close there), and the text read is the text a walk of that tree reads. But no tree is
built: memory holds the open elements and the text of the element being read, not the
document, which as a Beautiful Soup tree takes 20–150 times the file's size. Nesting depth
is not limited either.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import BinaryIO

from bs4 import BeautifulSoup, UnusualUsageWarning
from bs4.dammit import UnicodeDammit

from clearance.errors import LoaderError
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Outline, collapse
from clearance.ingest.loaders.markup import front_matter, strip_templates
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
# Elements that start a line of their own in an HTML fragment, besides the blocks.
_FRAGMENT_BLOCK = frozenset(
    {"h1", "h2", "h3", "h4", "h5", "h6", "table", "tr", "td", "th", "pre", "dd", "dt"}
)
_MAX_COLSPAN = 50
_MAX_ROWSPAN = 1000


def _span(attrs: list[tuple[str, str | None]], name: str, most: int) -> int:
    """A cell's ``colspan`` or ``rowspan``: a whole number from 1 to ``most``, else 1."""
    value = (next((v for k, v in attrs if k == name), None) or "1").strip()
    return max(1, min(int(value) if value.isdigit() else 1, most))


def _grid(rows: list[list[tuple[list[str], int]]]) -> list[list[str]]:
    """A table's rows of cell texts, each cell in every column and row it spans: a cell of
    ``rowspan`` 2 ("Consolidated Statements of Income" over two header rows, a region over
    its two lines) stands in the row under it too, so the cells after it keep their
    columns."""
    out: list[list[str]] = []
    above: dict[int, tuple[int, str]] = {}  # column → (rows it still spans, its text)
    for row in rows:
        cells: list[str] = []
        waiting = list(reversed(row))
        while waiting or any(column >= len(cells) for column in above):
            column = len(cells)
            if column in above:
                left, text = above.pop(column)
                if left > 1:
                    above[column] = (left - 1, text)
                cells.append(text)
                continue
            if not waiting:
                cells.append("")  # a gap before a cell spanning down from further right
                continue
            slot, rowspan = waiting.pop()
            for text in slot:
                if rowspan > 1:
                    above[len(cells)] = (rowspan - 1, text)
                cells.append(text)
        out.append(cells)
    return out


_INLINE_SPACE = re.compile(r"\s+")
# Elements that never have content (Beautiful Soup's list), and those whose strings are not
# text (Beautiful Soup's string containers: their strings are left out of get_text()).
_VOID = frozenset(
    {
        "area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame", "hr",
        "image", "img", "input", "isindex", "keygen", "link", "menuitem", "meta", "nextid",
        "param", "source", "spacer", "track", "wbr",
    }
)  # fmt: skip
_NOT_TEXT = frozenset({"rt", "rp", "style", "script", "template"})


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
    """The visible text of an HTML fragment, one line per block and inline elements in the
    words of their line ("at least <b>8 weeks</b> before" is "at least 8 weeks before");
    used for HTML in Markdown."""
    soup = parse(markup)
    for tag in soup.find_all(_IGNORED):
        tag.decompose()
    for tag in soup.find_all([*_BLOCK, *_FRAGMENT_BLOCK]):
        tag.insert_before("\n")
        tag.insert_after("\n")
    lines = (_INLINE_SPACE.sub(" ", line).strip() for line in soup.get_text("").split("\n"))
    return "\n".join(line for line in lines if line)


@dataclass(eq=False)
class _Element:
    """An open element and what closing it does (``kind``, see :meth:`_Reader._open`)."""

    name: str
    kind: str = "inline"
    parts: list[str] = field(default_factory=list)  # text of a heading, pre, cell or title
    # a table: rows of cells, each its slot (where its text goes) and its rowspan
    rows: list[list[tuple[list[str], int]]] = field(default_factory=list)
    slot: list[str] | None = None  # a cell: where its text goes in its row
    span: int = 1  # a cell's colspan
    headed: bool = False  # a list item: a heading opened in it already
    listed: tuple[object, bool] | None = None  # a heading: the list whose item it opens


class _Reader(HTMLParser):
    """Feeds headings, text and tables to an :class:`Outline` as the tags stream past."""

    def __init__(self, outline: Outline, budget: FileBudget) -> None:
        super().__init__(convert_charrefs=True)
        self.outline = outline
        self.budget = budget
        self.elements = 0
        self.stack: list[_Element] = []
        self.mode: _Element | None = None  # the ignored element, heading, table or pre read
        self.cells: list[_Element] = []  # open cells of the table being read
        self.title: _Element | None = None
        self.title_text: str | None = None
        self.not_text = 0  # open elements whose strings are not text
        self.pending: list[str] = []  # the string being read, until the next tag
        self.buffer: list[str] = []
        self.first_h1: str | None = None

    # ------------------------------------------------------------------ text

    def flush(self) -> None:
        """Hand the buffered text to the outline as stripped, non-blank lines."""
        text = "".join(self.buffer)
        self.buffer = []
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        if lines:
            self.outline.text("\n".join(lines))

    def _string(self, *, cdata: bool = False) -> None:
        """The string read since the last tag is complete: give it to who reads it.

        Inside a script, style, template or ruby annotation a string is not text, except
        CDATA, which Beautiful Soup keeps as CDATA wherever it is.
        """
        if not self.pending:
            return
        string = "".join(self.pending)
        self.pending = []
        if self.not_text and not cdata:
            return
        if self.title is not None:
            self.title.parts.append(string)
        mode = self.mode
        if mode is None:
            self.buffer.append(_INLINE_SPACE.sub(" ", string))
        elif mode.kind in ("heading", "pre"):
            mode.parts.append(string)
        elif mode.kind == "table":
            for cell in self.cells:
                cell.parts.append(string)

    def handle_data(self, data: str) -> None:
        self.pending.append(data)

    def handle_comment(self, data: str) -> None:
        self._string()  # a comment ends a string, and is not text

    def handle_decl(self, decl: str) -> None:
        self._string()

    def handle_pi(self, data: str) -> None:
        self._string()

    def unknown_decl(self, data: str) -> None:
        self._string()
        if data.upper().startswith("CDATA["):
            self.pending.append(data[len("CDATA[") :])
            self._string(cdata=True)

    # ------------------------------------------------------------------ tags

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open(tag, attrs)
        if tag in _VOID:
            self._close_to(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open(tag, attrs)
        self._close_to(tag)

    def handle_endtag(self, tag: str) -> None:
        self._close_to(tag)

    def _open(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
        self._string()
        self.elements += 1
        self.budget.tick("element", self.elements)
        element = _Element(name)
        if name in _NOT_TEXT:
            self.not_text += 1
        if name == "title" and self.title is None and self.title_text is None:
            self.title = element
        mode = self.mode
        if mode is None:
            self._open_in_flow(element)
        elif mode.kind == "table":
            self._open_in_table(element, mode, attrs)
        self.stack.append(element)

    def _open_in_flow(self, element: _Element) -> None:
        name = element.name
        heading = _HEADING.match(name)
        if name in _IGNORED:
            element.kind = "ignored"
        elif heading:
            self.flush()
            element.kind = "heading"
            element.listed = self._item_opened()
        elif name == "table":
            self.flush()
            element.kind = "table"
        elif name == "pre":
            element.kind = "pre"
        elif name in _BLOCK:
            self.buffer.append("\n")
            element.kind = "block"
        if element.kind in ("ignored", "heading", "table", "pre"):
            self.mode = element

    def _item_opened(self) -> tuple[object, bool] | None:
        """For a heading opening now: ``(its list, whether ordered)`` when it is the first
        heading inside the list item it stands in (``<ol><li><div><h4>``), else ``None``."""
        for depth in range(len(self.stack) - 1, -1, -1):
            item = self.stack[depth]
            if item.name != "li":
                continue
            if item.headed:
                return None
            item.headed = True
            owner = next(
                (e for e in reversed(self.stack[:depth]) if e.name in ("ol", "ul", "menu")), None
            )
            return (owner or item, owner is not None and owner.name == "ol")
        return None

    def _open_in_table(
        self, element: _Element, table: _Element, attrs: list[tuple[str, str | None]]
    ) -> None:
        """A row is a ``<tr>`` whose nearest table is ``table``; a cell is a ``<td>`` or
        ``<th>`` directly inside such a row. Tables nested in cells are text of the cell."""
        name = element.name
        if name == "tr":
            nearest = next(e for e in reversed(self.stack) if e.name == "table")
            if nearest is table:
                element.kind = "row"
                table.rows.append([])
        elif name in ("td", "th") and self.stack[-1].kind == "row":
            element.kind = "cell"
            element.span = _span(attrs, "colspan", _MAX_COLSPAN)
            element.slot = []
            # its place, filled when it closes
            table.rows[-1].append((element.slot, _span(attrs, "rowspan", _MAX_ROWSPAN)))
            self.cells.append(element)

    def _close_to(self, name: str) -> None:
        """Close the innermost open ``name`` and everything opened inside it, if any."""
        self._string()
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth].name == name:
                while len(self.stack) > depth:
                    self._close(self.stack.pop())
                return

    def _close(self, element: _Element) -> None:
        if element.name in _NOT_TEXT:
            self.not_text -= 1
        if element is self.title:
            self.title_text = collapse(" ".join(element.parts))
            self.title = None
        kind = element.kind
        if kind == "block":
            self.buffer.append("\n")
        elif kind == "cell":
            self.cells.remove(element)
            assert element.slot is not None
            element.slot.extend([collapse(" ".join(element.parts))] * element.span)
        elif element is self.mode:
            self.mode = None
            if kind == "heading":
                text = collapse(" ".join(element.parts))
                self.outline.heading(int(element.name[1]), text, listed=element.listed)
                if element.name == "h1" and self.first_h1 is None and text:
                    self.first_h1 = text
            elif kind == "table":
                self.outline.table(_grid(element.rows))
            elif kind == "pre":
                self.buffer.append("\n" + "".join(element.parts) + "\n")

    def finish(self) -> None:
        """The end of the document closes every element still open."""
        self.close()
        self._string()
        while self.stack:
            self._close(self.stack.pop())
        self.flush()


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and sections of an HTML file (sections are chunked later, at sentence
    boundaries; ``max_chars`` is the room a list of step headings has for their first
    sentences, :class:`~clearance.ingest.loaders.common.Outline`)."""
    markup = UnicodeDammit(handle.read(), is_html=True).unicode_markup
    if markup is None:
        raise LoaderError(f"{budget.name}: cannot tell the encoding of this HTML file")
    fields, markup = front_matter(markup)
    markup = strip_templates(markup, fields)
    reader = _Reader(Outline(max_chars), budget)
    reader.feed(markup)
    del markup
    reader.finish()
    title = fields.get("title") or reader.title_text or reader.first_h1
    return title, reader.outline.finish(title)
