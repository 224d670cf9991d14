"""What the format loaders share: whitespace and cell rendering, the heading outline that
turns a document into sections, and the packer that cuts tables into row groups with their
header and caption (docs/metadata.md, locators)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime, time
from typing import BinaryIO

from clearance.analysis import ends_with_abbreviation
from clearance.ingest.loaders.encoding import decode
from clearance.ingest.locator import format_locator
from clearance.model import LABEL_SEPARATOR, STEPS_PART, Section

_SPACE = re.compile(r"\s+")
#: How the loaders cut a document into sections; an index built by an earlier count is cut
#: again (2: a list of step headings ends the section above them, :class:`Outline`; 3: rows
#: under a heading breaking income or expense, or a share class's earnings per share, down
#: carry it, :class:`RowHeading`; 4: a share class's per-share rows named as its EPS).
SECTIONING = 4
TOP = "(top)"
OUTLINE_KEY, OUTLINE_VALUE = STEPS_PART.split("=")
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


# A line right above a table that notes what its figures are: "(in thousands, except per
# share data)", "(unaudited)", "Amounts in millions of dollars".
_NOTE_LINE = re.compile(
    r"^[(\[].{1,118}[)\]]$"
    r"|^(?:all\s+)?(?:amounts?|figures|values|numbers|dollars)\b.{0,40}\bin\s+"
    r"(?:thousands|millions|billions|trillions)\b.{0,80}$",
    re.IGNORECASE,
)
# The sentence that introduces a table: "The following table summarizes revenues by region
# …", "… are shown in the table below.", "… were as follows:".
_LEAD_IN = re.compile(
    r"\b(?:following|below)\s+tables?\b|\btables?\s+below\b|\bas\s+follows\b|:$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z(\"“])")
#: The most blocks of notes read above a table, and the longest introducing sentence.
_MAX_NOTE_BLOCKS = 2
_MAX_LEAD_IN = 400
# A line that titles a table above its notes: short, and no sentence ("THE BUCKLE, INC.",
# "Consolidated Statements of Income"; a full stop only after a legal form).
_TITLE_LINE = re.compile(
    r"^(?!.*[.!?:]\s+\S)(?![^\n]*[!?:]$)"
    r"(?:[^\n]{2,80}(?<![.])|[^\n]{0,76}\b(?i:inc|corp|co|ltd|plc|llc|n\.v|s\.a|l\.p)\.)$"
)
_MAX_TITLE_LINES = 3


def is_title_line(line: str) -> bool:
    """Whether ``line`` could title a table: short, and no sentence (:data:`_TITLE_LINE`)."""
    return bool(_TITLE_LINE.match(line.strip()))


def table_captions(blocks: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """What the text blocks right above a table say about its figures, nearest first: the
    note lines that end the blocks (``(in thousands)``, ``(unaudited)``), the sentence of
    the block above them that introduces the table, if one does, and the short lines right
    above the notes of a block that ends in notes: its titles, as a statement is headed
    ("THE BUCKLE, INC." over "CONSOLIDATED STATEMENTS OF INCOME" over "(Amounts in
    Thousands …)"), nearest first."""
    notes: list[str] = []
    for i, block in enumerate(reversed(blocks)):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        tail = len(lines)
        while tail and i < _MAX_NOTE_BLOCKS and _NOTE_LINE.match(lines[tail - 1]):
            tail -= 1
        notes.extend(reversed(lines[tail:]))
        if lines and not tail:
            continue
        titles: list[str] = []
        if tail < len(lines):
            while tail and len(titles) < _MAX_TITLE_LINES and _TITLE_LINE.match(lines[tail - 1]):
                titles.append(lines[tail - 1])
                tail -= 1
        sentences = _SENTENCE_END.split(" ".join(lines[:tail]))
        lead_in = [s for s in sentences if _LEAD_IN.search(s) and len(s) <= _MAX_LEAD_IN]
        return notes, lead_in[-1:], titles
    return notes, [], []


@dataclasses.dataclass(slots=True)
class _Head:
    """A heading as :class:`Outline` met it: under which heading (``parent``, an index into
    the headings, ``-1`` at the top), its text, the line above its text, the list item it opens (see
    :meth:`Outline.heading`), where its sections begin, and its text's first sentence."""

    parent: int
    text: str
    line: str
    listed: tuple[object, bool] | None
    first: int
    lead: str | None = None


# A heading numbered as a step: "1. Update the README", "2) Close …", "Step 3: Archive",
# "Step 4 — …". Not "1 Purpose" or "2.1 Scope", a document's numbered parts.
_STEP_HEADING = re.compile(r"(?:(?P<n>\d{1,3})[.)]\s|step\s+(?P<s>\d{1,3})\b)", re.IGNORECASE)
_STEP_MARKER = re.compile(r"\d{1,3}[.)]\s")
# Where a first sentence ends: . ! ? (with closing quotes or brackets) before whitespace, or
# a CJK full stop.
_FIRST_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？]")


def first_sentence(block: str) -> str | None:
    """The first sentence of a text block (its first line, up to the first sentence end that
    follows no abbreviation); ``None`` when the block opens with a list item, a table line
    or a line with no sentence end (a label, a link's words), which say no sentence."""
    line = block.lstrip().split("\n", 1)[0].strip()
    if not line or re.match(r"(?:[-*•・]|\d+[.)])\s", line) or " | " in line:
        return None
    for m in _FIRST_END.finditer(line + " "):
        if m.group(0).startswith(".") and ends_with_abbreviation(line[: m.start() + 1]):
            continue
        return line[: m.end()].strip()
    return None


def _step_runs(heads: Sequence[_Head]) -> Iterator[tuple[list[int], list[str]]]:
    """The runs of two or more consecutive ``heads`` (siblings, in order) that are steps
    (see :class:`Outline`), each as the indices of its heads and the marker each line opens
    with: none for a heading that opens with its number already ("1. "), "<n>. " for one
    numbered otherwise ("Step 1") or an item of an ordered list, "- " of an unordered one."""
    i = 0
    while i < len(heads):
        run = [i]
        m = _STEP_HEADING.match(heads[i].text)
        listed = heads[i].listed
        if m and int(m.group("n") or m.group("s")) == 1:
            while run[-1] + 1 < len(heads):
                nxt = _STEP_HEADING.match(heads[run[-1] + 1].text)
                if not nxt or int(nxt.group("n") or nxt.group("s")) != len(run) + 1:
                    break
                run.append(run[-1] + 1)
            markers = [
                "" if _STEP_MARKER.match(heads[k].text) else f"{n}. " for n, k in enumerate(run, 1)
            ]
        elif listed is not None:
            while run[-1] + 1 < len(heads) and heads[run[-1] + 1].listed is not None:
                nxt_list = heads[run[-1] + 1].listed
                assert nxt_list is not None
                if nxt_list[0] is not listed[0]:
                    break
                run.append(run[-1] + 1)
            markers = [f"{n}. " if listed[1] else "- " for n in range(1, len(run) + 1)]
        else:
            i += 1
            continue
        if len(run) >= 2:
            yield run, markers
        i = run[-1] + 1


def table_sections(
    rows: Sequence[Sequence[str]],
    locate: Callable[[str], str],
    above: Sequence[str] = (),
    titles: Sequence[str] = (),
) -> list[Section]:
    """One atomic section per row of a table given as rows of cell texts, the first row
    being the header: its text is :func:`row_text` with the header, its ``table``
    ``(header, row)``, and ``locate`` gets the row's first cell and returns its locator.
    What the text blocks right ``above`` the table say about its figures
    (:func:`table_captions`) is each row's ``captions``, and their notes ("(in
    thousands)") open each row's text. ``titles``: the title block a loader found over
    the table (a statement's name, whom it is about and its period, nearest first),
    each row's ``titles`` where the blocks above give none. Empty rows are dropped; a
    table of a lone row is still content, kept with no header to pair it with."""
    cleaned = [tuple(collapse(c) for c in row) for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return []
    notes, lead_in, found = table_captions(above)
    titles = found or list(titles)
    captions = (*notes, *lead_in)
    opening = "\n".join(reversed(notes))
    header, data = cleaned[0], cleaned[1:]
    if not data:
        header, data = (), cleaned
    elif len(data) >= 2 and (has_figure(data[1]) or _lone_label(data[1])):
        # two header rows, as in a spreadsheet (``Thirteen Weeks Ended`` over ``November 2,
        # 2024``): one header per column, under the same rule as a sheet's (TablePacker)
        combined = combined_header(header, data[0])
        if combined is not None:
            header, data = _footnote_columns(combined, data[0]), data[1:]
    sections: list[Section] = []
    heading = RowHeading()
    for row in map(heading.under, data):
        table = (header, row) if header else (row,)
        text = row_text(header, row) if header else line_text(row)
        text = f"{opening}\n{text}" if opening else text
        sections.append(
            Section(
                text,
                locate(row[0] if row else ""),
                atomic=True,
                table=table,
                titles=tuple(titles),
                captions=captions,
            )
        )
    return sections


class Outline:
    """Builds sections from a heading-structured document (Markdown, HTML, DOCX).

    Feed it headings, text blocks and tables in document order. Text is grouped per heading
    path (locator ``section=A > B``; text before any heading is under ``section=(top)``),
    and the heading itself is the first line of the first text section under it. Every
    table row becomes its own atomic section (``section=…,table=T,row=<first cell>``,
    ``T`` counting the document's tables from 1) whose ``table`` is ``(header, row)``.

    **Steps written as headings.** Sibling headings (under one heading, or all at the top)
    are a list when they are numbered in order from 1 ("## 1. Update the README", "## 2.
    Close all issues", or "Step 1", "Step 2") or when each opens an item of one list (an
    HTML ``<ol>`` whose ``<li>`` each holds an ``<h4>`` and its text). Asked for the steps,
    or what comes after one, the answer is that list, and no one section holds it: so a
    section of its own follows the text above them, located as that text is with
    ``outline=steps`` added (``section=Our hiring process,outline=steps``;
    ``section=(top),outline=steps`` at the top). Its first line is the heading above them
    (the document's title at the top, when known), then one line per heading in order: its
    number ("1. Confirmation", "- Confirmation" for an unordered list) and, when every line
    fits ``room`` with it, :data:`LABEL_SEPARATOR` and the first sentence under that heading
    ("1. Update the README — Add a note to the top of the README …"). It is text the
    document holds, in the same document, under its permissions; the sections under those
    headings are unchanged, and a reader quotes the list only for a question asking for
    steps, a list or what comes after one (:mod:`clearance.llm.extractive`). Two or more
    such headings make a list; siblings numbered otherwise ("1 Purpose", "2.1 Scope") or
    not at all are none.
    """

    def __init__(self, room: int | None = None) -> None:
        self._path: list[tuple[int, str]] = []
        self._heads: list[_Head] = []
        self._open: list[int] = []  # the index in _heads of each heading of _path
        self._room = room
        self._pending_heading: str | None = None
        self._body: list[str] = []
        self._tables = 0
        self._sections: list[Section] = []
        self._bare_headings: list[Section] = []

    @property
    def path(self) -> str:
        """The current heading path, ``A > B``, or ``(top)`` before the first heading."""
        return " > ".join(text for _, text in self._path) or TOP

    def heading(
        self,
        level: int,
        text: str,
        *,
        label: bool = False,
        listed: tuple[object, bool] | None = None,
    ) -> None:
        """Open a heading of ``level`` (smaller is outer); blank headings are ignored.
        ``label``: a handbook's run-in label ("**Key features**", "**概要**") that says what
        part of its parent topic follows, not the topic: the line above its text names
        the parent too ("Annual health check — Key features"), so a passage saying "we pay
        back up to ¥15,000" is found by the topic it belongs to. ``listed``: the heading
        opens an item of a list, given as ``(the list, whether it is ordered)``; the list
        is any object the loader tells its lists apart by (see the class docstring)."""
        text = collapse(text)
        if not text:
            return
        self._flush()
        if self._pending_heading is not None:
            self._bare_headings.append(Section(self._pending_heading, self._locator()))
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
            self._open.pop()
        parent = self._path[-1][1] if label and self._path else None
        self._path.append((level, text))
        self._pending_heading = f"{parent}{LABEL_SEPARATOR}{text}" if parent else text
        self._open.append(len(self._heads))
        self._heads.append(
            _Head(
                self._open[-2] if len(self._open) > 1 else -1,
                text,
                self._pending_heading,
                listed,
                len(self._sections),
            )
        )

    def text(self, text: str, *, indent: str = "") -> None:
        """Add one block of body text (a paragraph, list item, code block …); ``indent``
        opens its first line (a nested list item's depth)."""
        block = clean_block(text)
        if block:
            self._body.append(indent + block)

    def table(self, rows: Sequence[Sequence[str]]) -> None:
        """Add a table given as rows of cell texts, the first row being the header. The
        text right above it that says what its figures are (:func:`table_captions`) is
        each row's ``captions``, and its notes ("(in thousands)") open each row's text."""
        cleaned = [tuple(collapse(c) for c in row) for row in rows]
        if not any(any(row) for row in cleaned):
            return
        above = list(self._body)
        self._flush()
        self._tables += 1
        path, number = self.path, self._tables
        self._sections.extend(
            table_sections(
                cleaned,
                lambda first: format_locator(("section", path), ("table", number), ("row", first)),
                above,
            )
        )

    def finish(self, title: str | None = None) -> list[Section]:
        """All sections, in document order (``title``: the document's, above a list of the
        step headings at its top).

        Headings with no text under them are dropped, unless the document has nothing
        else: a file made only of headings still yields its headings.
        """
        self._flush()
        if self._pending_heading is not None:
            self._bare_headings.append(Section(self._pending_heading, self._locator()))
            self._pending_heading = None
        return self._with_steps(self._sections, title) or self._bare_headings

    def _locator(self) -> str:
        return format_locator(("section", self.path))

    def _flush(self) -> None:
        if not self._body:
            return
        blocks = self._body
        if self._pending_heading is not None:
            blocks = [self._pending_heading, *blocks]
            self._pending_heading = None
        if self._open and self._heads[self._open[-1]].lead is None:
            self._heads[self._open[-1]].lead = first_sentence(self._body[0])
        self._sections.append(Section("\n".join(blocks), self._locator()))
        self._body = []

    def _with_steps(self, sections: list[Section], title: str | None) -> list[Section]:
        """``sections`` with the list of each run of step headings (class docstring) after
        the section above them, under its heading (``title`` at the top)."""
        children: dict[int, list[int]] = {}
        for i, head in enumerate(self._heads):
            children.setdefault(head.parent, []).append(i)
        added: dict[int, list[Section]] = {}  # where the list goes → its section
        for parent, kids in children.items():
            for run, markers in _step_runs([self._heads[k] for k in kids]):
                lines = [
                    f"{m}{self._heads[kids[k]].text}" for k, m in zip(run, markers, strict=True)
                ]
                leads = [self._heads[kids[k]].lead for k in run]
                full = [
                    f"{line}{LABEL_SEPARATOR}{lead}" if lead else line
                    for line, lead in zip(lines, leads, strict=True)
                ]
                above = self._heads[parent].line if parent >= 0 else title
                text = "\n".join([above, *full] if above else full)
                if self._room is not None and len(text) > self._room:
                    text = "\n".join([above, *lines] if above else lines)
                at = self._heads[kids[run[0]]].first
                path = " > ".join(self._path_of(parent)) or TOP
                locator = format_locator(("section", path), (OUTLINE_KEY, OUTLINE_VALUE))
                added.setdefault(at, []).append(Section(text, locator))
        if not added:
            return sections
        out: list[Section] = []
        for i in range(len(sections) + 1):
            out.extend(added.get(i, ()))
            if i < len(sections):
                out.append(sections[i])
        return out

    def _path_of(self, head: int) -> list[str]:
        """The heading path of ``self._heads[head]``, outermost first (none for ``-1``)."""
        texts: list[str] = []
        while head >= 0:
            texts.append(self._heads[head].text)
            head = self._heads[head].parent
        return texts[::-1]


Row = tuple[int, tuple[str, ...]]
"""A spreadsheet row: its 1-based number in the file and its rendered cells."""

#: The most one-cell rows above a sheet's header read as its title (see :class:`SheetPacker`).
MAX_CAPTION_ROWS = 3

# A cell that is a figure: a number, with a sign, parentheses, a currency symbol or a percent
# sign. A year (1900–2099, four digits alone) is a label: it heads a column or names a row.
_FIGURE = re.compile(r"^[-−+(]?\s*[$€£¥]?\s*\d[\d,.\s]*%?\s*\)?$")
_YEAR = re.compile(r"^(?:19|20)\d{2}$")


def is_label(cell: str) -> bool:
    """Whether a cell is a label: non-empty text that is no figure, or a year."""
    return bool(cell) and (not _FIGURE.match(cell) or bool(_YEAR.match(cell)))


def has_figure(cells: Sequence[str]) -> bool:
    """Whether a row holds a figure (a number that is not a year)."""
    return any(cell and not is_label(cell) for cell in cells)


def combined_header(header: Sequence[str], sub: Sequence[str]) -> tuple[str, ...] | None:
    """The header of two rows combined per column, when ``sub`` (the row under ``header``)
    holds only labels and ``header``'s labels span groups of the columns ``sub`` labels;
    else ``None``. A label spans the columns after it that are blank in ``header`` and
    labelled in ``sub`` (``Three Months Ended March 31 |  |  | Nine Months …`` over ``Net
    Sales | EBT | Net Earnings | Net Sales …``), or that repeat it (a merged range filled in,
    see :mod:`~clearance.ingest.loaders.xlsx`); every column of a group must be labelled in
    ``sub``. A column is then ``"<upper> — <lower>"`` (:data:`~clearance.model.LABEL_SEPARATOR`),
    or the one of the two it has (once if both are the same)."""
    width = max(len(header), len(sub))
    upper, lower = list(pad(header, width)), pad(sub, width)
    if not any(lower) or any(cell and not is_label(cell) for cell in lower):
        return None
    spaced = _spaced_groups(upper, lower)
    if spaced is not None:
        return spaced
    grouped = [False] * width
    for j in range(1, width):
        if not upper[j] and upper[j - 1] and lower[j]:
            upper[j] = upper[j - 1]  # a blank continuing the label to its left
        if upper[j] and upper[j] == upper[j - 1]:
            grouped[j - 1] = grouped[j] = True
    if not any(grouped) or any(g and not lower[j] for j, g in enumerate(grouped)):
        return None
    return tuple(_joined(upper[j], lower[j]) for j in range(width))


def _spaced_groups(upper: Sequence[str], lower: Sequence[str]) -> tuple[str, ...] | None:
    """The header of two rows whose column groups are set apart by spacer columns (blank in
    both rows), each group's label written once anywhere above it — over its last column
    as often as its first (``In millions of CHF |  | January–June 2023 |  |  | January–June
    2022`` over `` | Impairment A | Impairment B |  | Impairment A | Impairment B``); else
    ``None``. Every group must hold one upper label and two or more lower ones."""
    width = len(upper)
    groups: list[list[int]] = [[]]
    for j in range(1, width):
        if not upper[j] and not lower[j]:
            if groups[-1]:
                groups.append([])
        else:
            groups[-1].append(j)
    groups = [g for g in groups if g]
    if len(groups) < 2:
        return None
    out = [upper[0] or lower[0], *([""] * (width - 1))]
    for group in groups:
        labels = [upper[j] for j in group if upper[j]]
        below = [j for j in group if lower[j]]
        if len(labels) != 1 or len(below) < 2 or len(below) != len(group):
            return None
        for j in group:
            out[j] = _joined(labels[0], lower[j])
    return tuple(out)


# An upper header that the lower one completes: "3 Months Ended" over "Mar. 29, 2025", as
# SEC filings' spreadsheets head their columns.
_WANTS_DATE = re.compile(r"(?i:\b(?:ended|ending|as\s+of|as\s+at|through)$)")


def _joined(upper: str, lower: str) -> str:
    """One column's header of two rows: ``"<upper> — <lower>"``, or the one of the two it
    has (once if both are the same); ``"<upper> <lower>"`` where the upper one ends
    wanting a date (``3 Months Ended Mar. 29, 2025``)."""
    parts = list(dict.fromkeys(part for part in (upper, lower) if part))
    if len(parts) == 2 and _WANTS_DATE.search(upper):
        return f"{upper} {lower}"
    return LABEL_SEPARATOR.join(parts)


# "Basic" or "Diluted", with a note in parentheses at most: "Basic (in dollars per share)".
_SHARE_CLASS = re.compile(r"(?i:^\s*(?:basic|diluted)\s*(?:\([^()]*\))?\s*$)")


# A footnote's mark alone: "[1]", "(2)", "*".
_FOOTNOTE_MARK = re.compile(r"^(?:\[\d{1,2}\]|\(\d{1,2}\)|\*{1,3}|[†‡§])$")


def _footnote_columns(header: tuple[str, ...], sub: Sequence[str]) -> tuple[str, ...]:
    """``header`` with a column whose lower header is a footnote's mark alone given the
    header of the column to its left: SEC filings' pages set each figure's footnote in a
    column of its own ("12 Months Ended" over "Nov. 03, 2018 | [2]"), and a figure that
    spans both columns is that date's, never the upper header's alone."""
    out = list(header)
    for j in range(1, len(out)):
        if j < len(sub) and _FOOTNOTE_MARK.match(sub[j].strip()):
            out[j] = out[j - 1]
    return tuple(out)


# A row heading naming income or expense that the rows under it break down by what earned
# or cost it: a bank's "Interest income:" over "Loans" and "Securities", "Interest expense:"
# over "Deposits", "Revenues:" over "Product" and "Services", "Cost of sales:" and "Gross
# margin:" over "Products" and "Services" (never the products' sales).
_FLOW_HEADING = re.compile(
    r"(?i:^(?:interest(?:\s+and\s+dividend)?\s+(?:income|expense)"
    r"|revenues?|net\s+revenues?|net\s+sales|sales"
    r"|cost\s+of\s+(?:sales|revenues?|goods\s+sold)|gross\s+(?:margin|profit))\s*:$)"
)
# A label that names a flow of its own ("Total interest income", "Net interest income",
# "Dividend income"): it is no line of the heading's, and ends its rows.
_OWN_FLOW = re.compile(
    r"(?i:^(?:total|net)\b|\b(?:income|expenses?|revenues?|sales)\s*(?:\([^()]*\))?\s*$)"
)
# "Basic:" or "Diluted:" as a heading of its own, under an "Earnings per share:" heading
# earlier in the table: the per-share amounts of that class ("Continuing operations").
_SHARE_CLASS_HEADING = re.compile(r"(?i:^(?P<kind>basic|diluted)\s*:$)")
# A heading naming a share class's amount per share itself: "Basic income (loss) per
# common share:", "Diluted earnings per share:".
_CLASS_PER_SHARE_HEADING = re.compile(
    r"(?i:^(?P<kind>basic|diluted)\b[^:]*\bper\s+(?:common\s+|ordinary\s+)?share\s*:$)"
)
_PER_SHARE = re.compile(r"(?i:\bper\s+(?:common\s+|ordinary\s+)?share\b)")
# A label naming a per-share amount of its own ("Basic earnings per share", "Total"): it
# ends a share class's rows. Read without its asides: "(USD per share)" is a unit.
_OWN_PER_SHARE = re.compile(r"(?i:\bper\s+(?:\w+\s+)?share\b|\beps\b|^total\b)")
_SHARES = re.compile(r"(?i:\bshares\b)")
_ASIDE = re.compile(r"\s*\([^()]*\)")
# What a share class's row is the amount of: the class's earnings per share itself (net
# income, net earnings), or those from continuing or discontinued operations.
_NET_ROW = re.compile(r"(?i:^net\s+(?:income|earnings|loss|profit)\b)")
_OPERATIONS_ROW = re.compile(r"(?i:\b(?P<which>continuing|discontinued)\s+operations\b)")


def _per_share_row(kind: str, label: str) -> str | None:
    """A share class's per-share row named as a question names it: "Net income (loss)
    attributable to Dean Foods Company (USD per share)" under "Diluted income (loss) per
    common share:" is "Diluted earnings per share"; "Income from continuing operations …"
    is "Diluted earnings per share: Continuing operations". ``None``: a row of another
    kind, left as it is."""
    plain = _ASIDE.sub("", label).strip()
    measure = f"{kind.capitalize()} earnings per share"
    if _NET_ROW.match(plain):
        return measure
    m = _OPERATIONS_ROW.search(plain)
    if m is not None:
        return f"{measure}: {m.group('which').capitalize()} operations"
    return f"{measure}: {plain}" if len(plain) <= 40 and not _OWN_PER_SHARE.search(plain) else None


def heading_names_row(heading: str, label: str) -> bool:
    """Whether :class:`RowHeading` names the row ``label`` under the row heading
    ``heading`` itself: a measure's breakdown ("Cost of sales:" over "Products") or a share
    class ("Basic" under "Earnings per share:")."""
    return bool(_FLOW_HEADING.match(heading) or _SHARE_CLASS.match(label))


class RowHeading:
    """Rows of a table read in order, each label under the row heading right above it
    (a label ending in a colon, with no figures) where the heading says what the rows
    measure:

    * ``Basic`` and ``Diluted`` under ``Earnings per share:`` are "Earnings per share:
      Basic"; two such rows under two headings ("Earnings per share:", "Shares used in
      computing earnings per share:") are otherwise the same label;
    * the rows under ``Interest income:``, ``Interest expense:`` or ``Revenues:`` are that
      income or expense from what they name, "Interest expense: Deposits", never the
      deposits themselves, until a row naming a flow of its own ("Total interest expense");
    * the rows under a share class's per-share heading (``Diluted income (loss) per common
      share:``, or ``Basic:`` below an ``Earnings per share:`` heading) are that class's
      per-share amounts: its net income row is "Diluted earnings per share", one of
      continuing operations "Diluted earnings per share: Continuing operations", never the
      company's net income or its income from continuing operations, until a row naming a
      per-share amount of its own.

    Any other row ends the heading's rows."""

    __slots__ = ("_class", "_heading", "_own", "_per_share")

    def __init__(self) -> None:
        self._heading: str | None = None
        # what ends the heading's rows when it breaks a measure down; None: only its
        # Basic and Diluted rows are under it
        self._own: re.Pattern[str] | None = None
        self._class: str | None = None  # the share class whose per-share rows these are
        self._per_share: str | None = None  # the per-share heading seen last in the table

    def under(self, cells: Sequence[str]) -> tuple[str, ...]:
        """``cells``, the next row, with its label under the heading it is under."""
        label = cells[0].strip() if cells else ""
        if label.endswith(":") and not has_figure(cells):
            self._heading, self._own, self._class = label, None, None
            per_class = _CLASS_PER_SHARE_HEADING.match(label) or (
                _SHARE_CLASS_HEADING.match(label) if self._per_share is not None else None
            )
            if per_class is not None:
                self._class = per_class.group("kind")
            elif _FLOW_HEADING.match(label):
                self._own = _OWN_FLOW
            if _PER_SHARE.search(label):
                self._per_share = label[:-1].strip()
            elif _SHARES.search(label):
                self._per_share = None  # "Weighted-average shares:" counts shares
            return tuple(cells)
        if self._heading is not None and label and has_figure(cells):
            if self._class is not None:
                named = _per_share_row(self._class, label)
                if named is not None:
                    return (named, *cells[1:])
            elif not label.casefold().startswith(self._heading.casefold()) and (
                _SHARE_CLASS.match(label) or (self._own is not None and not self._own.search(label))
            ):
                return (f"{self._heading} {label}", *cells[1:])
        self._heading = None  # any other row ends the heading's rows
        return tuple(cells)


def banded_header(band: Sequence[str], sub: Sequence[str], most: int = 2) -> tuple[str, ...] | None:
    """The header of a band row over a row of labels, per column; else ``None``. A band
    holds at most two cells ("In millions of CHF" over the row labels, "January–June 2023"
    somewhere above the figures) and fewer than ``sub``, whose three or more labels (no
    figure) each head a column: each column of ``sub`` is the band's span joined to its
    label (``January–June 2023 — Sales``); the first column keeps the band's first cell
    where it has one (what the row labels' column is headed: often the unit)."""
    width = max(len(band), len(sub))
    upper, lower = pad(band, width), pad(sub, width)
    written = [j for j, cell in enumerate(upper) if cell]
    labels = [j for j, cell in enumerate(lower) if cell]
    over = [j for j in written if j > 0]  # the band's cells over the figures
    if not written or len(written) > most or len(labels) < 3 or len(over) >= len(labels):
        return None
    if any(not is_label(lower[j]) for j in labels) or any(not is_label(upper[j]) for j in written):
        return None
    span = " ".join(upper[j] for j in written if j > 0)
    if not span:
        return None
    first = upper[0] or lower[0]
    return (first, *(_joined(span, lower[j]) if lower[j] else "" for j in range(1, width)))


def _lone_label(cells: Sequence[str]) -> bool:
    """Whether a row is a label in its first cell and nothing else."""
    return bool(cells) and is_label(cells[0]) and not any(c.strip() for c in cells[1:])


def continued(row: Sequence[str], above: Sequence[str] | None) -> tuple[str, ...]:
    """``row`` with its first label taken from ``above`` when it is a continuation row: its
    first cell is blank while later label cells before its first figure are filled, and
    ``above`` (the data row before it) has a first label and labels in those same cells —
    ``Beauty | 2025 | 3490`` then `` | 2024 | 3550``: the second row is Beauty's too. Both
    rows must hold a figure, so rows of text (notes, wrapped lines) are left alone."""
    if above is None or not row or row[0] or not above or not is_label(above[0]):
        return tuple(row)
    if not has_figure(row) or not has_figure(above):
        return tuple(row)
    labels: list[int] = []
    for j, cell in enumerate(row):
        if cell and not is_label(cell):
            break
        if cell:
            labels.append(j)
    if not labels or any(j >= len(above) or not is_label(above[j]) for j in labels):
        return tuple(row)
    return (above[0], *row[1:])


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

    Two header rows: when the row after the header holds only labels and the header's labels
    span groups of its columns (a period over the measures it covers: ``Three Months Ended
    March 31`` over ``Net Sales | EBT | Net Earnings``), the header is both rows combined per
    column (:func:`combined_header`: ``Three Months Ended March 31 — Net Sales``), so each
    column says both its period and its measure. Only when the row after those two holds a
    figure: a table of text whose first row is all labels keeps that row as data. The first
    block's range covers both header rows.

    A continuation row — a data row whose first label is blank while a later label is
    filled, under a row labelled in the same cells (``Beauty | 2025 | …`` then `` | 2024 |
    …``) — takes its first label from the row above (:func:`continued`), in its text and
    its table alike.

    A band — a header of one or two cells over three or more labels (``In millions of CHF``
    over the row labels, ``January–June 2023`` over the figures) — heads each column with
    its span (:func:`banded_header`); the same labels under another band later in the sheet
    start the next table (its block's range starts at that band), so a second table for
    another period is never read under the first one's.

    A row heading — a label ending in a colon with no figures (``Earnings per share:``) —
    names the rows ``Basic`` and ``Diluted`` right under it: "Earnings per share: Basic";
    ``Interest expense:`` names the rows breaking it down: "Interest expense: Deposits"
    (:class:`RowHeading`).

    Only the block being filled is held besides the finished sections, so a file can be
    streamed through; rows are padded in :meth:`finish`, since the widest row may come last.
    """

    def __init__(self, max_chars: int, locate: Callable[[Sequence[Row]], str]) -> None:
        self._max_chars = max_chars
        self._locate = locate
        self._header: Row | None = None
        self._header_rows: list[Row] = []  # the rows the header was read from
        self._held: list[Row] | None = None  # rows after the header, while it may have two
        self._above: tuple[str, ...] | None = None  # the last data row, as packed
        self._heading = RowHeading()  # the row heading the rows below it belong to
        self._lower: tuple[str, ...] | None = None  # the labels under a band that heads it
        self._first_block = False  # the block being filled opens a table after the first
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
            self._held = []
            return
        if self._held is not None:
            self._held.append(row)
            if len(self._held) == 2:
                self._release()
            return
        if self._next_table(row):
            return
        row = (row[0], continued(row[1], self._above))
        row = (row[0], self._heading.under(row[1]))
        self._above = row[1]
        line = line_text(row[1])
        add = 1 + len(line)
        if self._block and self._length + add > self._max_chars:
            self._emit(self._header)
        self._block.append(row)
        self._lines.append(line)
        self._length += add

    def _release(self, end: bool = False) -> None:
        """Decide whether the header has two rows, then add the rows held to decide it."""
        held, self._held = self._held or [], None
        assert self._header is not None
        after = held[1][1] if len(held) == 2 else ()
        # the row after the two holds a figure, or is a heading of the rows under it
        # ("OPERATING ACTIVITIES" with nothing else): not a text table's first row
        if not end and len(held) == 2 and (has_figure(after) or _lone_label(after)):
            combined = combined_header(self._header[1], held[0][1])
            if combined is None:
                combined = banded_header(self._header[1], held[0][1])
                self._lower = held[0][1] if combined is not None else None
            if combined is not None:
                rows = [self._header, held[0]]
                self._start((self._header[0], combined))
                self._header_rows = rows
                held = held[1:]
        for row in held:
            self.add(row)

    def _next_table(self, row: Row) -> bool:
        """Whether ``row``, a row of labels under a band row of up to three cells, opens the
        next table of a sheet whose first table a band heads (another period:
        "January–June 2022" over "Sales …" again, or other labels). Then the band row just
        added is taken back, the rows so far are emitted, and the band and ``row`` head the
        rows that follow."""
        lower = self._lower
        if lower is None or has_figure(row[1]) or not self._block:
            return False
        band = self._block[-1]
        # a band of up to three cells ("January–June 2022", "(restated)") over a row of
        # labels: the next table, whatever its labels
        header = banded_header(band[1], row[1], most=3)
        if header is None or has_figure(band[1]):
            return False
        self._block.pop()
        self._lines.pop()
        if self._block:
            assert self._header is not None
            self._emit(self._header)
        self._start((band[0], header))
        self._header_rows = [band, row]
        self._first_block = True
        self._above = None
        return True

    def _start(self, header: Row) -> None:
        self._header = header
        self._header_rows = [header]
        self._header_line = "\n".join([*self._titles(), line_text(header[1])])
        self._length = len(self._header_line)

    def _titles(self) -> list[str]:
        return [next(cell for cell in cells if cell) for _, cells in self._captions]

    def _one_column(self) -> None:
        """The rows taken for captions were the head of a one-column table after all."""
        rows, self._captions = self._captions, []
        self._start(rows[0])
        self._held = []
        for row in rows[1:]:
            self.add(row)

    def _emit(self, header: Row) -> None:
        block = self._block
        text = "\n".join([self._header_line, *self._lines])
        if not self._sections:
            covered = [*self._captions, *self._header_rows, *block]
        elif self._first_block:
            covered = [*self._header_rows, *block]
        else:
            covered = block
        self._first_block = False
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
        if self._held is not None:
            self._release(end=True)
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
