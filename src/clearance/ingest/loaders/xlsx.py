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

Rows are streamed from the sheet (openpyxl's read-only mode) and only their rendered text is
kept. A workbook with more than ``[ingest] max_rows`` data rows (non-empty rows after each
sheet's header, all sheets together) is refused, not cut.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, BinaryIO

import openpyxl
from openpyxl.utils import get_column_letter

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


def _sheet_rows(
    values: Iterable[Sequence[Any]], budget: FileBudget, unit: str
) -> tuple[int, list[Row]]:
    """The first used column (1-based) and the non-empty rows, cells from that column on."""
    rendered: list[tuple[int, list[str]]] = []
    first_col: int | None = None
    last_col = 0
    for number, row in enumerate(values, start=1):
        budget.tick(unit, number)
        cells = [render_cell(value) for value in row]
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
        first_col, rows = _sheet_rows(sheet.iter_rows(values_only=True), budget, unit)
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
