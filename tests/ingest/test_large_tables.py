"""Large tables are streamed, capped at ``max_rows`` and report progress (issue item 9).

* A CSV or XLSX file with more data rows than ``[ingest] max_rows`` is refused with one line
  naming the file and the setting — never ingested as a silent prefix.
* A CSV file is read record by record: the memory taken while reading, beyond the sections
  it yields, does not grow with the file.
* A long file reports where it is to ``on_progress``, at most about once a second.

Each invariant has a reverse proof: the same assertion run on a leaky variant must fail.
"""

from __future__ import annotations

import io
import random
import re
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import openpyxl
import pytest
from fpdf import FPDF
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.config import IngestSettings
from clearance.errors import LoaderError
from clearance.ingest import limits
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders import csv as csv_loader
from clearance.ingest.loaders import extract
from clearance.ingest.loaders.common import (
    MAX_CAPTION_ROWS,
    Row,
    SheetPacker,
    _lone_label,
    banded_header,
    combined_header,
    continued,
    has_figure,
    line_text,
    pad,
)
from clearance.ingest.loaders.encoding import decode
from clearance.model import Section

MB = 1_000_000


def _csv(path: Path, rows: int, *, blank_every: int = 0) -> Path:
    rng = random.Random(rows)
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("id,region,amount,note\r\n")
        for i in range(1, rows + 1):
            if blank_every and i % blank_every == 0:
                out.write(",,,\r\n")  # an empty record: not a data row
            out.write(f"{i},EMEA,{rng.randint(1, 10**6)},shipped on time with no issue\r\n")
    return path


def _xlsx(path: Path, sheets: dict[str, int]) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        sheet.append(["region", "revenue"])
        for i in range(rows):
            sheet.append([f"R{i}", i])
        sheet.append([])  # trailing empty row: not a data row
    book.save(str(path))
    return path


# --------------------------------------------------------------------------- max_rows


def assert_refused_at_the_row_cap(path: Path, cap: int) -> str:
    try:
        extract(path, max_chars=800, limits=IngestSettings(max_rows=cap))
    except LoaderError as exc:
        assert exc.message == f"{path.name}: more than {cap} rows (raise [ingest] max_rows)"
        return exc.message
    raise AssertionError(f"{path.name} was ingested past max_rows={cap}")


def _rows_read(path: Path, cap: int) -> int:
    """Data rows in the sections of ``path`` (each table's header row excluded)."""
    extracted = extract(path, max_chars=800, limits=IngestSettings(max_rows=cap))
    return sum(len(s.table or ()) - 1 for s in extracted.sections)


def test_a_csv_with_more_rows_than_max_rows_is_refused(tmp_path: Path) -> None:
    assert_refused_at_the_row_cap(_csv(tmp_path / "data.csv", 1001, blank_every=10), 1000)
    assert _rows_read(_csv(tmp_path / "fits.csv", 1000, blank_every=10), 1000) == 1000


def test_an_xlsx_with_more_rows_than_max_rows_is_refused(tmp_path: Path) -> None:
    """The cap counts the data rows of all sheets together, headers and empty rows not."""
    assert_refused_at_the_row_cap(_xlsx(tmp_path / "book.xlsx", {"A": 600, "B": 401}), 1000)
    assert _rows_read(_xlsx(tmp_path / "fits.xlsx", {"A": 600, "B": 400}), 1000) == 1000


def test_the_default_cap_is_100000_rows(tmp_path: Path) -> None:
    path = _csv(tmp_path / "data.csv", 100_001)
    with pytest.raises(LoaderError) as info:
        extract(path, max_chars=800)
    assert info.value.message == "data.csv: more than 100000 rows (raise [ingest] max_rows)"


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_reverse_proof_without_the_cap_a_large_table_is_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    def uncounted(self: FileBudget) -> None:
        del self

    monkeypatch.setattr(FileBudget, "count_row", uncounted)
    path = tmp_path / f"data{suffix}"
    _csv(path, 1001) if suffix == ".csv" else _xlsx(path, {"A": 600, "B": 401})
    with pytest.raises(AssertionError, match="was ingested past max_rows"):
        assert_refused_at_the_row_cap(path, 1000)


# --------------------------------------------------------------------------- streaming


def assert_streamed(path: Path) -> list[Section]:
    """Reading ``path`` takes at most 1 MB beyond the sections it yields."""
    tracemalloc.start()
    try:
        sections = list(extract(path, max_chars=800).sections)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - kept <= 1 * MB, f"{(peak - kept) / MB:.1f} MB beyond the sections"
    return sections


def test_a_csv_is_read_record_by_record(tmp_path: Path) -> None:
    path = _csv(tmp_path / "data.csv", 60_000)
    assert path.stat().st_size > 2.5 * MB
    sections = assert_streamed(path)
    assert sections[0].locator.startswith("rows=2-")
    assert sections[-1].locator.endswith("-60001")


def test_reverse_proof_reading_the_whole_file_first_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def whole_file(handle: BinaryIO, name: str, label: str) -> Iterator[str]:
        return iter(io.StringIO(decode(handle.read(), name, label), newline=""))

    monkeypatch.setattr(csv_loader, "iter_lines", whole_file)
    path = _csv(tmp_path / "data.csv", 60_000)
    with pytest.raises(AssertionError, match="MB beyond the sections"):
        assert_streamed(path)


def _reference(rows: Sequence[Row], max_chars: int) -> list[tuple[str, str, tuple[object, ...]]]:
    """How sheets were packed before streaming: all rows first, then blocks. Leading rows
    of one cell each (at most MAX_CAPTION_ROWS, and not the whole sheet, nor followed by
    another one-cell row) are captions above the header; a header of two rows is combined
    (or a band read over the labels under it) when a row with a figure, or a lone label,
    follows them; the same labels under another band start the next table; continuation
    rows take the label above."""

    def single(row: Row) -> bool:
        return sum(1 for cell in row[1] if cell) == 1

    n = 0
    while n < min(len(rows), MAX_CAPTION_ROWS) and single(rows[n]):
        n += 1
    if n == len(rows) or (n == MAX_CAPTION_ROWS and single(rows[n])):
        n = 0
    captions, rows = list(rows[:n]), rows[n:]
    width = max(len(cells) for _, cells in [*captions, *rows])
    header, data = rows[0], list(rows[1:])
    header_rows = [header]
    lower: tuple[str, ...] | None = None
    if len(rows) > 2 and (has_figure(rows[2][1]) or _lone_label(rows[2][1])):
        combined = combined_header(rows[0][1], rows[1][1])
        if combined is None:
            combined = banded_header(rows[0][1], rows[1][1])
            lower = rows[1][1] if combined is not None else None
        if combined is not None:
            header, header_rows, data = (rows[0][0], combined), [rows[0], rows[1]], data[1:]
    # tables: (header, header rows, data rows)
    tables: list[tuple[Row, list[Row], list[Row]]] = [(header, header_rows, [])]
    above: tuple[str, ...] | None = None
    for number, cells in data:
        current = tables[-1][2]
        if lower is not None and current and not has_figure(cells):
            band = current[-1]
            banded = banded_header(band[1], cells, most=3)
            if banded is not None and not has_figure(band[1]):
                current.pop()
                tables.append(((band[0], banded), [band, (number, cells)], []))
                above = None
                continue
        row = (number, continued(cells, above))
        above = row[1]
        tables[-1][2].append(row)
    out = []
    titles = [next(cell for cell in cells if cell) for _, cells in captions]
    for t, (head, head_rows, rows_of) in enumerate(tables):
        if t and not rows_of:
            rows_of = []
        header_line = "\n".join([*titles, line_text(head[1])])
        blocks: list[list[Row]] = []
        length = len(header_line)
        for row in rows_of:
            add = 1 + len(line_text(row[1]))
            if blocks and blocks[-1] and length + add > max_chars:
                blocks.append([])
                length = len(header_line)
            if not blocks:
                blocks.append([])
            blocks[-1].append(row)
            length += add
        if t and not blocks:
            continue  # a later table with no rows emits nothing of its own
        for index, block in enumerate(blocks or [[]]):
            text = "\n".join([header_line, *(line_text(cells) for _, cells in block)])
            if index == 0 and t == 0:
                covered = [*captions, *head_rows, *block]
            elif index == 0:
                covered = [*head_rows, *block]
            else:
                covered = block
            locator = f"{covered[0][0]}-{covered[-1][0]}"
            table = (pad(head[1], width), *(pad(cells, width) for _, cells in block))
            out.append((text, locator, table))
    return out


_cells = st.lists(st.sampled_from(["", "a", "bb", "ccc dd", "1.5"]), min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(_cells, min_size=1, max_size=30), st.integers(min_value=1, max_value=40))
def test_streamed_packing_equals_packing_all_rows_at_once(
    cells: list[list[str]], max_chars: int
) -> None:
    rows: list[Row] = [(i + 1, tuple(row)) for i, row in enumerate(cells)]
    packer = SheetPacker(max_chars, lambda block: f"{block[0][0]}-{block[-1][0]}")
    for row in rows:
        packer.add(row)
    got = [(s.text, s.locator, s.table) for s in packer.finish()]
    assert got == _reference(rows, max_chars)
    assert all(s.atomic for s in packer.finish())


# --------------------------------------------------------------------------- progress


class SteppingClock:
    """A clock that advances ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def assert_progress_throttled(path: Path, pattern: str, clock: SteppingClock) -> list[str]:
    """Progress is reported, as ``pattern`` says, at most once per second of the clock."""
    reports: list[str] = []
    extract(path, max_chars=800, on_progress=reports.append)
    assert reports, "no progress reported"
    assert all(re.fullmatch(pattern, r) for r in reports), reports
    assert len(reports) <= clock.now + 1, f"{len(reports)} reports in {clock.now:.0f}s"
    return reports


def test_a_long_csv_reports_its_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SteppingClock(0.125)
    monkeypatch.setattr(limits, "clock", clock)
    reports = assert_progress_throttled(_csv(tmp_path / "data.csv", 200), r"row \d+", clock)
    assert reports[:2] == ["row 8", "row 16"]  # one a second: every eighth row here


def test_a_long_pdf_reports_its_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in range(1, 31):
        pdf.add_page()
        pdf.cell(text=f"Page {number}")
    path = tmp_path / "long.pdf"
    pdf.output(str(path))
    clock = SteppingClock(0.5)
    monkeypatch.setattr(limits, "clock", clock)
    reports = assert_progress_throttled(path, r"page \d+/30", clock)
    assert reports[0] == "page 2/30"


def test_reverse_proof_unthrottled_progress_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SteppingClock(0.125)
    monkeypatch.setattr(limits, "clock", clock)
    monkeypatch.setattr(limits, "_PROGRESS_INTERVAL_S", 0.0)
    with pytest.raises(AssertionError, match="reports in"):
        assert_progress_throttled(_csv(tmp_path / "data.csv", 200), r"row \d+", clock)
