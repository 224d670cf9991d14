"""CSV (``.csv``), read with the standard library's :mod:`csv` module.

The file must be UTF-8 (a BOM is dropped) or UTF-16 with a BOM; anything else is a clear
:class:`LoaderError` rather than a guessed code page. The dialect (delimiter ``,`` ``;``
tab or ``|``, quoting) is sniffed from the first 64 KiB, falling back to Excel's.

Packing is that of XLSX (:func:`clearance.ingest.loaders.sheet_sections`): the first
non-empty record is the header, blocks of at most ``max_chars`` characters each start with
the header line, rows are never split, ``Section.table`` is ``(header, *rows)``, sections
are atomic. Locator: ``rows=<first>-<last>``, the 1-based line numbers of the block's first
and last data row — the header, normally line 1, is never counted in, so the first block of
a plain file is ``rows=2-…``. A record whose quoted field spans lines is numbered by the line
it starts on; a file with only a header has ``rows=1-1``. There is no title.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from clearance.errors import LoaderError
from clearance.ingest.loaders import Row, collapse, read_text, sheet_sections
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]

_SAMPLE = 64 * 1024


def _dialect(text: str) -> type[csv.Dialect]:
    try:
        return csv.Sniffer().sniff(text[:_SAMPLE], delimiters=",;\t|")
    except csv.Error:  # one column, or too irregular to tell: use the common case
        return csv.excel


def load(path: Path, max_chars: int) -> tuple[str | None, list[Section]]:
    """Sections of a CSV file as described in the module docstring; no title."""
    text = read_text(path, "CSV")
    reader = csv.reader(io.StringIO(text, newline=""), _dialect(text))
    rows: list[Row] = []
    start = 1
    try:
        for record in reader:
            cells = tuple(collapse(cell) for cell in record)
            if any(cells):
                rows.append((start, cells))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise LoaderError(f"{path.name}: malformed CSV at line {reader.line_num}: {exc}") from exc
    header = rows[0][0] if rows else 0

    def locate(block: Sequence[Row]) -> str:
        data = [row for row in block if row[0] != header] or list(block)
        return format_locator(("rows", f"{data[0][0]}-{data[-1][0]}"))

    return None, sheet_sections(rows, max_chars, locate)
