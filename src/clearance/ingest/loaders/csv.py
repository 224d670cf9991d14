"""CSV (``.csv``), read with the standard library's :mod:`csv` module, streamed.

The file must be UTF-8 (a BOM is dropped) or UTF-16 (:mod:`~clearance.ingest.loaders.encoding`);
anything else is a clear :class:`LoaderError` rather than a guessed code page. The dialect
(delimiter ``,`` ``;`` tab or ``|``, quoting) is sniffed from the first 64 KiB, falling back to
Excel's.

Packing is that of XLSX (:class:`clearance.ingest.loaders.common.SheetPacker`): the first
non-empty record is the header, blocks of at most ``max_chars`` characters each start with
the header line, rows are never split, ``Section.table`` is ``(header, *rows)``, sections
are atomic. Locator: ``rows=<first>-<last>``, the 1-based line numbers of the block's first
and last data row — the header, normally line 1, is never counted in, so the first block of
a plain file is ``rows=2-…``. A record whose quoted field spans lines is numbered by the line
it starts on; a file with only a header has ``rows=1-1``. There is no title.

The file is read record by record: memory holds the sections made so far and one block,
never the whole text. A file with more than ``[ingest] max_rows`` non-empty records after
its header is refused (not cut).
"""

from __future__ import annotations

import contextlib
import csv
import itertools
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from clearance.errors import LoaderError
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Row, SheetPacker, collapse
from clearance.ingest.loaders.encoding import iter_lines
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]

_SAMPLE = 64 * 1024


def _dialect(sample: str) -> type[csv.Dialect]:
    try:
        return csv.Sniffer().sniff(sample[:_SAMPLE], delimiters=",;\t|")
    except csv.Error:  # one column, or too irregular to tell: use the common case
        return csv.excel


def _sniffed(lines: Iterator[str]) -> tuple[type[csv.Dialect], Iterator[str]]:
    """The dialect, from whole lines adding up to at least 64 KiB, and all the lines."""
    head: list[str] = []
    size = 0
    for line in lines:
        head.append(line)
        size += len(line)
        if size >= _SAMPLE:
            break
    return _dialect("".join(head)), itertools.chain(head, lines)


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Sections of a CSV file as described in the module docstring; no title."""
    # Closed here, while ``handle`` is still open, even when a limit stops the reading.
    with contextlib.closing(iter_lines(handle, budget.name, "CSV")) as source:
        return None, _read(source, max_chars, budget)


def _read(source: Iterator[str], max_chars: int, budget: FileBudget) -> list[Section]:
    dialect, lines = _sniffed(source)
    reader = csv.reader(lines, dialect)
    header: int | None = None

    def locate(block: Sequence[Row]) -> str:
        data = [row for row in block if row[0] != header] or list(block)
        return format_locator(("rows", f"{data[0][0]}-{data[-1][0]}"))

    packer = SheetPacker(max_chars, locate)
    start = 1
    try:
        for record in reader:
            budget.tick("row", start)
            cells = tuple(collapse(cell) for cell in record)
            if any(cells):
                if header is None:
                    header = start
                else:
                    budget.count_row()
                packer.add((start, cells))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise LoaderError(f"{budget.name}: malformed CSV at line {reader.line_num}: {exc}") from exc
    return packer.finish()
