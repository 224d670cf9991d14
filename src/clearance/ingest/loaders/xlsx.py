"""Excel workbooks (``.xlsx``), read with openpyxl (``read_only=True, data_only=True``).

Per worksheet, in workbook order (chart sheets have no cells and are skipped), the non-empty
rows are packed into atomic blocks of at most ``max_chars`` characters (a row is never split;
a row too long on its own is a block of its own). Every block's text starts with the sheet's
title rows, if any (one-cell rows above the header, see :class:`SheetPacker`), and its
header row — its first other non-empty row — as ``"header1 | header2 | …"``, then one
``"cell | cell | …"`` line per row. Locator: ``sheet=<name>,range=<A1:D9>``, the Excel range
covering exactly the block's rows and the columns they use (the header row counts only in the
first block, which it opens). ``Section.table`` is ``(header, *rows)`` as strings.

Values are the cached results of formulas (a workbook saved by a program that does not
compute formulas has none: those cells read empty). Integers are rendered without ``.0``,
floats with Excel's 15 significant digits, dates as ISO 8601. Title: the workbook's
``title`` property, if set.

Merged cells: a merged range's value applies to every cell it covers, so a period written
once over three columns (``Three Months Ended March 31`` merged across C3:E3) heads each of
them, and a segment name merged down two rows labels both. Two exceptions, so that filling
never invents content: a number stays in its first cell only (a figure merged across cells
is one figure; copied, it would be counted once per cell — a year merged over two columns
is then read like a label continued by blank cells, see :class:`SheetPacker`), and a row
whose values all come from one merged range is read as written (a title merged across the
table stays a one-cell title row; a row with nothing but the lower part of a tall merged
label stays empty). Read-only mode does not read merges; they come after the rows in the
sheet's XML, which is read for them first — parsed only if it holds the word ``mergeCell``.

Rows are streamed from the sheet (openpyxl's read-only mode) and only their rendered text is
kept. A workbook with more than ``[ingest] max_rows`` data rows (non-empty rows after each
sheet's header, all sheets together) is refused, not cut.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import openpyxl
from openpyxl.utils import get_column_letter, range_boundaries
from openpyxl.xml.constants import SHEET_MAIN_NS
from openpyxl.xml.functions import iterparse

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Row, render_cell, sheet_sections
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]

# openpyxl warns about workbook features it drops while *reading* (data validation and
# conditional-format extensions, a missing default style, …). They change nothing about the
# cell values we read, so exactly these messages are silenced.
_HARMLESS_WARNINGS = (
    r"Workbook contains no default style",
    r".*extension is not supported and will be removed",
    r"Unknown extension is not supported",
    r"Conditional Formatting extension is not supported",
    r"Cannot parse header or footer",
)


_MERGE_CELL = f"{{{SHEET_MAIN_NS}}}mergeCell"
_ROW = f"{{{SHEET_MAIN_NS}}}row"
_CHUNK = 1 << 20


@dataclass(slots=True)
class _Merge:
    """A merged range (1-based, inclusive) and the text it fills, once its first row is read."""

    top: int
    left: int
    bottom: int
    right: int
    text: str = ""


def _merges(sheet: Any, budget: FileBudget, unit: str) -> list[_Merge]:
    """The merged ranges of a read-only sheet, by first row. Read-only mode does not read
    them, so the sheet's XML is read here: scanned for ``mergeCell`` first (cheap), parsed
    only if it is there. Row elements are emptied as they are passed, so the parse holds
    no more than the ranges."""
    source = getattr(sheet, "_get_source", None)
    if source is None:  # not a read-only sheet: nothing of ours to read
        return []
    with source() as handle:
        found, tail = False, b""
        while chunk := handle.read(_CHUNK):
            if b"mergeCell" in tail + chunk:
                found = True
                break
            tail = chunk[-16:]
    if not found:
        return []
    out: list[_Merge] = []
    with source() as handle:
        rows = 0
        for _, element in iterparse(handle):
            if element.tag == _ROW:
                rows += 1
                budget.tick(unit, rows)
                element.clear()
            elif element.tag == _MERGE_CELL:
                try:
                    left, top, right, bottom = range_boundaries(element.get("ref", ""))
                except (TypeError, ValueError):
                    continue  # a range we cannot read merges nothing
                if None not in (left, top, right, bottom):
                    out.append(_Merge(top, left, bottom, right))
    return sorted(out, key=lambda m: (m.top, m.left))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _filled(
    number: int, row: Sequence[Any], merges: deque[_Merge], active: list[_Merge]
) -> list[str]:
    """Row ``number``'s cells rendered, merged ranges filled as the module docstring says.
    ``merges`` (by first row) move into ``active`` as their first row comes; a range whose
    first cell is empty or a number fills nothing."""
    cells = [render_cell(value) for value in row]
    active[:] = [m for m in active if m.bottom >= number]
    while merges and merges[0].top <= number:
        merge = merges.popleft()
        value = row[merge.left - 1] if merge.left <= len(row) else None
        if merge.top == number and value is not None and not _is_number(value):
            merge.text = render_cell(value)
            if merge.text:
                active.append(merge)
    if not active:
        return cells
    # the ranges the row's written cells lie in (None: outside any)
    ranges = {_range_of(i, active) for i, cell in enumerate(cells) if cell}
    if len(ranges) <= 1 and None not in ranges:
        return cells  # a banner title, or a row with nothing of its own: as written
    filled = cells + [""] * (max(m.right for m in active) - len(cells))
    for merge in active:
        filled[merge.left - 1 : merge.right] = [merge.text] * (merge.right - merge.left + 1)
    return filled


def _range_of(col: int, active: Sequence[_Merge]) -> int | None:
    """Which of the ``active`` ranges covers the 0-based column ``col``, if any."""
    return next((i for i, m in enumerate(active) if m.left - 1 <= col < m.right), None)


def _sheet_rows(
    values: Iterable[Sequence[Any]], budget: FileBudget, unit: str, merges: list[_Merge]
) -> tuple[int, list[Row]]:
    """The first used column (1-based) and the non-empty rows, cells from that column on,
    ``merges`` filled in (see the module docstring)."""
    rendered: list[tuple[int, list[str]]] = []
    first_col: int | None = None
    last_col = 0
    pending = deque(merges)
    active: list[_Merge] = []
    for number, row in enumerate(values, start=1):
        budget.tick(unit, number)
        cells = _filled(number, row, pending, active)
        used = [i for i, cell in enumerate(cells) if cell]
        if not used:
            continue
        if rendered:  # the first non-empty row is the sheet's header
            budget.count_row()
        first_col = used[0] if first_col is None else min(first_col, used[0])
        last_col = max(last_col, used[-1] + 1)
        rendered.append((number, cells[: used[-1] + 1]))
    if first_col is None:
        return 1, []
    return first_col + 1, [
        (number, tuple(cells[first_col:last_col]) + ("",) * (last_col - len(cells)))
        for number, cells in rendered
    ]


def _range_locator(sheet: str, first_col: int) -> Callable[[Sequence[Row]], str]:
    """Locator of a block: the Excel range of its rows and used columns."""

    def locate(rows: Sequence[Row]) -> str:
        used = [i for _, cells in rows for i, cell in enumerate(cells) if cell]
        left = get_column_letter(first_col + min(used))
        right = get_column_letter(first_col + max(used))
        cell_range = f"{left}{rows[0][0]}:{right}{rows[-1][0]}"
        return format_locator(("sheet", sheet), ("range", cell_range))

    return locate


def _read(workbook: Any, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    sections: list[Section] = []
    for sheet in workbook.worksheets:
        # The stored dimension is often wrong (e.g. "A1" from some writers); without it,
        # read-only mode streams every row that is actually there.
        sheet.reset_dimensions()
        unit = f"sheet {sheet.title}, row"
        merges = _merges(sheet, budget, unit)
        first_col, rows = _sheet_rows(sheet.iter_rows(values_only=True), budget, unit, merges)
        locate = _range_locator(str(sheet.title), first_col)
        sections.extend(sheet_sections(rows, max_chars, locate))
    title = workbook.properties.title
    return (title if isinstance(title, str) else None), sections


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and per-sheet blocks of an XLSX file, as described in the module docstring."""
    with warnings.catch_warnings():
        for message in _HARMLESS_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        workbook = openpyxl.load_workbook(handle, read_only=True, data_only=True)
        try:
            return _read(workbook, max_chars, budget)
        finally:
            workbook.close()
