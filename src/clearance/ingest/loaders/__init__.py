"""File loaders: one file in, its text as located :class:`~clearance.model.Section` s out.

:func:`extract` is the only entry point the pipeline needs. It guarantees that

* the file's suffix picks the loader (:data:`SUPPORTED`); anything else is a
  :class:`~clearance.errors.LoaderError` naming the suffix;
* every exception a parsing library raises is translated into a ``LoaderError`` that names
  the file, so callers only ever catch :class:`~clearance.errors.ClearanceError`;
* a file that yields no text at all is a ``LoaderError`` ("empty document"), never an empty
  result the pipeline would index as a document nobody can find; an encrypted file is a
  ``LoaderError`` saying so (a password-protected Office file is an OLE container, told
  apart by its signature), any other unparsable file one saying it is corrupt or unreadable;
* every section carries a locator built with :func:`~clearance.ingest.locator.format_locator`
  (the per-format shapes are documented in each loader module);
* the limits of ``[ingest]`` hold (:mod:`clearance.ingest.limits`): a file too large on disk,
  a DOCX/PPTX/XLSX whose parts inflate past ``max_uncompressed_mb``, a table with more than
  ``max_rows`` rows and a file that takes longer than ``file_time_budget`` are each refused
  with a one-line ``LoaderError`` naming the setting — never kept as a silent prefix;
* no text is dropped silently: what a parser cannot structure is kept as plain text, or the
  file is refused with a message.

The format modules are imported lazily, so reading a Markdown file never imports
python-pptx. The helpers below (:class:`Outline`, :class:`SheetPacker`, …) are shared by the
format modules; they are not part of the pipeline's API.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import BinaryIO

from clearance.config import IngestSettings
from clearance.errors import LoaderError
from clearance.ingest.limits import FileBudget, Progress, check_package, check_size
from clearance.ingest.loaders.encoding import decode
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["SUPPORTED", "Extracted", "extract", "extract_text"]

#: File suffix (lowercase, with the dot) → format name. Also the list of what ``ingest`` reads.
SUPPORTED: dict[str, str] = {
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".text": "txt",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".csv": "csv",
}

_FORMAT_LABEL = {
    "md": "Markdown",
    "txt": "text",
    "html": "HTML",
    "pdf": "PDF",
    "docx": "DOCX",
    "pptx": "PPTX",
    "xlsx": "XLSX",
    "csv": "CSV",
}

Loader = Callable[[BinaryIO, int, FileBudget], tuple[str | None, list[Section]]]
"""``load(handle, max_chars, budget)``: the open file, the block size for packed rows and
lines, and the file's budget (its name for messages, ``tick`` per unit of work)."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a loader found in one file: its format name, title (if any) and sections."""

    format: str
    title: str | None
    sections: tuple[Section, ...]


def _loader(fmt: str) -> Loader:
    """Import the module of one format on first use (the libraries are heavy)."""
    if fmt == "md":
        from clearance.ingest.loaders import markdown

        return markdown.load
    if fmt == "txt":
        from clearance.ingest.loaders import text

        return text.load
    if fmt == "html":
        from clearance.ingest.loaders import html

        return html.load
    if fmt == "pdf":
        from clearance.ingest.loaders import pdf

        return pdf.load
    if fmt == "docx":
        from clearance.ingest.loaders import docx

        return docx.load
    if fmt == "pptx":
        from clearance.ingest.loaders import pptx

        return pptx.load
    if fmt == "xlsx":
        from clearance.ingest.loaders import xlsx

        return xlsx.load
    if fmt == "csv":
        from clearance.ingest.loaders import csv

        return csv.load
    raise AssertionError(f"no loader for format {fmt!r}")  # SUPPORTED and this must agree


def extract(
    path: Path,
    *,
    max_chars: int,
    limits: IngestSettings | None = None,
    on_progress: Progress | None = None,
) -> Extracted:
    """Read one file into sections.

    ``max_chars`` bounds the blocks that loaders pack themselves (spreadsheet rows, text
    lines); pass the chunk size so such blocks are usually one chunk each. ``limits`` are
    the ``[ingest]`` settings whose limits apply (``None``: the defaults). ``on_progress``,
    if given, is called about once a second during a long extraction with where it is
    (``"page 1200/5000"``, ``"row 40000"``); it must not raise.

    Raises :class:`LoaderError` for an unsupported suffix, an unreadable, corrupt,
    encrypted or empty file and a file over a limit; never returns a result without at
    least one non-blank section.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    suffix = path.suffix.lower()
    fmt = SUPPORTED.get(suffix)
    if fmt is None:
        shown = suffix or "(none)"
        raise LoaderError(
            f"{path.name}: unsupported file type '{shown}' "
            f"(supported: {', '.join(sorted(SUPPORTED))})"
        )
    settings = limits if limits is not None else IngestSettings()
    budget = FileBudget(path.name, settings, on_progress)
    empty = LoaderError(f"{path.name}: empty document (no extractable text)")
    try:
        # One handle for the checks and the parsing library: the file checked is the file read.
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise empty
            check_size(path.name, size, settings)
            if fmt in _OOXML:
                _refuse_ole(handle, path.name, fmt)
                check_package(handle, budget, streamed=_STREAMED_XML.get(fmt, frozenset()))
            title, sections = _loader(fmt)(handle, max_chars, budget)
    except LoaderError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise LoaderError(f"{path.name}: cannot read file: {reason}") from exc
    except (MemoryError, RecursionError) as exc:
        raise LoaderError(
            f"{path.name}: too large or too deeply nested to read ({type(exc).__name__})"
        ) from exc
    except Exception as exc:
        # Parsing libraries raise whatever their internals hit on malformed input
        # (KeyError, struct.error, zlib.error, lxml errors, …): translate them all here,
        # at the boundary, so no third-party exception ever reaches the pipeline.
        label = _FORMAT_LABEL[fmt]
        raise LoaderError(
            f"{path.name}: corrupt or unreadable {label} file ({type(exc).__name__}: {exc})"
        ) from exc
    kept = tuple(s for s in sections if s.text.strip())
    if not kept:
        raise empty
    if title is not None:
        title = collapse(title) or None
    return Extracted(format=fmt, title=title, sections=kept)


_OOXML = frozenset({"docx", "pptx", "xlsx"})
_STREAMED_XML = {"xlsx": frozenset({"worksheet"})}  # openpyxl's read-only mode streams sheets
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _refuse_ole(handle: BinaryIO, name: str, fmt: str) -> None:
    """Office writes a password-protected .docx/.pptx/.xlsx as an OLE compound file, not a
    zip; say so instead of "corrupt", so the owner knows what to fix."""
    magic = handle.read(len(_OLE_MAGIC))
    handle.seek(0)
    if magic == _OLE_MAGIC:
        raise LoaderError(
            f"{name}: encrypted (password-protected) or legacy binary Office file, "
            f"not a {_FORMAT_LABEL[fmt]} package; save it unprotected as .{fmt}"
        )


def extract_text(text: str, *, max_chars: int, name: str = "inline text") -> Extracted:
    """Sections of text that arrives without a file (a manifest line's ``text``).

    It is read like a ``.txt`` file (``lines=<first>-<last>`` locators, format ``txt``, no
    title); ``name`` only labels errors. Whitespace-only text is a :class:`LoaderError`.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    from clearance.ingest.loaders.text import text_sections

    sections = tuple(s for s in text_sections(text, max_chars) if s.text.strip())
    if not sections:
        raise LoaderError(f"{name}: empty document (no extractable text)")
    return Extracted(format="txt", title=None, sections=sections)


# --------------------------------------------------------------------------- shared helpers

_SPACE = re.compile(r"\s+")
TOP = "(top)"
"""The heading path of text that comes before a document's first heading."""


def collapse(text: str) -> str:
    """Whitespace runs (newlines included) → one space, stripped: for cells and headings."""
    return _SPACE.sub(" ", text).strip()


def clean_block(text: str) -> str:
    """Strip every line's trailing whitespace, drop blank lines, strip the whole."""
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line.strip()).strip()


def read_text(handle: BinaryIO, name: str, label: str) -> str:
    """The whole text of a file (:mod:`~clearance.ingest.loaders.encoding` says which
    encodings are accepted), every line ending turned into ``\\n``."""
    text = decode(handle.read(), name, label)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def render_cell(value: object) -> str:
    """A spreadsheet value as text: integers without ``.0``, floats as Excel shows them.

    Floats keep 15 significant digits (Excel's display precision), so ``0.1 + 0.2`` reads
    ``0.3``; a date-time at midnight is rendered as a date.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, datetime):
        if value.time() == time(0, 0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, date | time):
        return value.isoformat()
    return collapse(str(value))


def row_text(header: Sequence[str], row: Sequence[str]) -> str:
    """``"<header1>: <cell1> | <header2>: <cell2> …"``; empty cells are left out.

    A cell whose column has no header is shown bare.
    """
    parts: list[str] = []
    for i, cell in enumerate(row):
        if not cell:
            continue
        name = header[i] if i < len(header) else ""
        parts.append(f"{name}: {cell}" if name else cell)
    return " | ".join(parts)


def line_text(cells: Sequence[str]) -> str:
    """``"cell | cell | …"`` with trailing empty cells dropped (so columns still line up)."""
    end = len(cells)
    while end and not cells[end - 1]:
        end -= 1
    return " | ".join(cells[:end])


def pad(cells: Sequence[str], width: int) -> tuple[str, ...]:
    """The row as a tuple of exactly ``width`` cells (cut or padded with ``""``)."""
    return tuple(cells[:width]) + ("",) * (width - len(cells))


class Outline:
    """Builds sections from a heading-structured document (Markdown, HTML, DOCX).

    Feed it headings, text blocks and tables in document order. Text is grouped per heading
    path (locator ``section=A > B``; text before any heading is under ``section=(top)``),
    and the heading itself is the first line of the first text section under it. Every
    table row becomes its own atomic section (``section=…,table=T,row=<first cell>``,
    ``T`` counting the document's tables from 1) whose ``table`` is ``(header, row)``.
    """

    def __init__(self) -> None:
        self._path: list[tuple[int, str]] = []
        self._pending_heading: str | None = None
        self._body: list[str] = []
        self._tables = 0
        self._sections: list[Section] = []
        self._bare_headings: list[Section] = []

    @property
    def path(self) -> str:
        """The current heading path, ``A > B``, or ``(top)`` before the first heading."""
        return " > ".join(text for _, text in self._path) or TOP

    def heading(self, level: int, text: str) -> None:
        """Open a heading of ``level`` (smaller is outer); blank headings are ignored."""
        text = collapse(text)
        if not text:
            return
        self._flush()
        if self._pending_heading is not None:
            self._bare_headings.append(Section(self._pending_heading, self._locator()))
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, text))
        self._pending_heading = text

    def text(self, text: str) -> None:
        """Add one block of body text (a paragraph, list item, code block …)."""
        block = clean_block(text)
        if block:
            self._body.append(block)

    def table(self, rows: Sequence[Sequence[str]]) -> None:
        """Add a table given as rows of cell texts, the first row being the header."""
        cleaned = [tuple(collapse(c) for c in row) for row in rows]
        cleaned = [row for row in cleaned if any(row)]
        if not cleaned:
            return
        self._flush()
        self._tables += 1
        header, data = cleaned[0], cleaned[1:]
        if not data:  # a lone row is still content: keep it, with no header to pair it with
            header, data = (), cleaned
        for row in data:
            locator = format_locator(
                ("section", self.path), ("table", self._tables), ("row", row[0] if row else "")
            )
            table = (header, row) if header else (row,)
            text = row_text(header, row) if header else line_text(row)
            self._sections.append(Section(text, locator, atomic=True, table=table))

    def finish(self) -> list[Section]:
        """All sections, in document order.

        Headings with no text under them are dropped, unless the document has nothing
        else: a file made only of headings still yields its headings.
        """
        self._flush()
        if self._pending_heading is not None:
            self._bare_headings.append(Section(self._pending_heading, self._locator()))
            self._pending_heading = None
        return self._sections or self._bare_headings

    def _locator(self) -> str:
        return format_locator(("section", self.path))

    def _flush(self) -> None:
        if not self._body:
            return
        blocks = self._body
        if self._pending_heading is not None:
            blocks = [self._pending_heading, *blocks]
            self._pending_heading = None
        self._sections.append(Section("\n".join(blocks), self._locator()))
        self._body = []


Row = tuple[int, tuple[str, ...]]

#: The most one-cell rows above a sheet's header read as its title (see :class:`SheetPacker`).
MAX_CAPTION_ROWS = 3
"""A spreadsheet row: its 1-based number in the file and its rendered cells."""


class SheetPacker:
    """Packs the rows of one sheet (XLSX) or file (CSV) into atomic sections as they come.

    The first row :meth:`add` gets is the header; the others should be non-empty rows in
    order. Each block's text is the header line followed by its rows, one
    ``"cell | cell | …"`` line each, and fits ``max_chars`` unless a single row does not (a
    row is never split: it is then a block of its own). ``Section.table`` is
    ``(header, *rows of the block)``, every row padded to the widest row of the sheet.
    ``locate`` gets the rows a block covers, the header included only in the first block
    (where it is the block's first row), and returns the block's locator. A sheet of only a
    header is one block of the header alone.

    A title above the table — up to :data:`MAX_CAPTION_ROWS` leading rows with one cell
    each ("ACME Japan — key figures", then a blank row, then the header) — is not taken for
    the header: each caption opens every block's text, is a title of each block's section
    (so facts read the entity or period it names), and the first block's range covers it.
    A sheet whose rows all have one cell is a one-column table as before.

    Only the block being filled is held besides the finished sections, so a file can be
    streamed through; rows are padded in :meth:`finish`, since the widest row may come last.
    """

    def __init__(self, max_chars: int, locate: Callable[[Sequence[Row]], str]) -> None:
        self._max_chars = max_chars
        self._locate = locate
        self._header: Row | None = None
        self._header_line = ""
        self._captions: list[Row] = []  # one-cell rows above the header, while it is unknown
        self._block: list[Row] = []
        self._lines: list[str] = []
        self._length = 0
        self._width = 0
        self._sections: list[Section] = []

    def add(self, row: Row) -> None:
        """Add the next row (the first one is the header)."""
        self._width = max(self._width, len(row[1]))
        if self._header is None:
            if sum(1 for cell in row[1] if cell) == 1 and len(self._captions) < MAX_CAPTION_ROWS:
                self._captions.append(row)
                return
            if len(self._captions) == MAX_CAPTION_ROWS and sum(1 for c in row[1] if c) == 1:
                self._one_column()  # a column of single cells is a table, not titles
                self.add(row)
                return
            self._start(row)
            return
        line = line_text(row[1])
        add = 1 + len(line)
        if self._block and self._length + add > self._max_chars:
            self._emit(self._header)
        self._block.append(row)
        self._lines.append(line)
        self._length += add

    def _start(self, header: Row) -> None:
        self._header = header
        self._header_line = "\n".join([*self._titles(), line_text(header[1])])
        self._length = len(self._header_line)

    def _titles(self) -> list[str]:
        return [next(cell for cell in cells if cell) for _, cells in self._captions]

    def _one_column(self) -> None:
        """The rows taken for captions were the head of a one-column table after all."""
        rows, self._captions = self._captions, []
        self._start(rows[0])
        for row in rows[1:]:
            self.add(row)

    def _emit(self, header: Row) -> None:
        block = self._block
        text = "\n".join([self._header_line, *self._lines])
        covered = block if self._sections else [*self._captions, header, *block]
        table = (header[1], *(cells for _, cells in block))
        titles = tuple(reversed(self._titles()))  # innermost first
        section = Section(text, self._locate(covered), atomic=True, table=table, titles=titles)
        self._sections.append(section)
        self._block, self._lines = [], []
        self._length = len(self._header_line)

    def finish(self) -> list[Section]:
        """All blocks of the sheet, tables padded; none if no row was added."""
        if self._header is None and self._captions:
            self._one_column()
        if self._header is None:
            return []
        if self._block or not self._sections:
            self._emit(self._header)
        width = self._width
        for i, section in enumerate(self._sections):
            table = section.table or ()
            if any(len(row) != width for row in table):
                padded = tuple(pad(row, width) for row in table)
                self._sections[i] = dataclasses.replace(section, table=padded)
        return self._sections


def sheet_sections(
    rows: Iterable[Row], max_chars: int, locate: Callable[[Sequence[Row]], str]
) -> list[Section]:
    """The sections :class:`SheetPacker` makes of ``rows`` (header first)."""
    packer = SheetPacker(max_chars, locate)
    for row in rows:
        packer.add(row)
    return packer.finish()
