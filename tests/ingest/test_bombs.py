"""Decompression bombs, oversized files and slow files are refused, one line each (issue 8).

The review's bombs at a small scale: the limits allow 16 MB of zip parts (so 2 MB of XML), and
each bomb's one part inflates to 32 MB from a few kB on disk — an unreferenced PPTX part, a
DOCX ``document.xml``, an XLSX sheet, XML hidden under a binary name, and a ``document.xml``
whose zip headers declare 10 kB. The invariant: the file is refused with one line naming it
and the setting to raise, and memory traced while reading stays a small fraction of what the
bomb inflates to. Each reverse proof runs the same assertion on a leaky variant (the check
switched off, or trusting the declared sizes) and must see it fail. The clock advances one
second per reading and the time budget is 500 s, so a leaky run stops after 500 units of work
instead of parsing the whole bomb.
"""

from __future__ import annotations

import struct
import tracemalloc
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import docx
import openpyxl
import pytest
from fpdf import FPDF
from pptx import Presentation

from clearance.config import IngestSettings
from clearance.errors import LoaderError
from clearance.ingest import limits, loaders
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders import extract

MB = 1_000_000
BOMB = 32 * MB
LIMITS = IngestSettings(max_uncompressed_mb=16, file_time_budget_s=500)

# --------------------------------------------------------------------------- building bombs


def _template(fmt: str, path: Path) -> Path:
    """A small real file of ``fmt``, written by the library users' tools write it with."""
    if fmt == "docx":
        document = docx.Document()
        document.add_paragraph("Quarterly figures")
        document.save(str(path))
    elif fmt == "pptx":
        deck = Presentation()
        deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "Quarterly review"
        deck.save(str(path))
    else:
        book = openpyxl.Workbook()
        book.active.append(["region", "revenue"])
        book.save(str(path))
    return path


def _repeat(head: bytes, unit: bytes, tail: bytes, size: int) -> Iterator[bytes]:
    yield head
    block = unit * (64 * 1024 // len(unit))
    for _ in range(size // len(block)):
        yield block
    yield tail


def _repack(template: Path, path: Path, member: str, payload: Iterable[bytes]) -> Path:
    """``template`` with ``member`` replaced (or added) by the streamed ``payload``."""
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            if info.filename != member:
                out.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
        target = zipfile.ZipInfo(member)
        target.compress_type = zipfile.ZIP_DEFLATED
        with out.open(target, "w") as handle:
            for chunk in payload:
                handle.write(chunk)
    return path


def _lie(path: Path, member: str, declared: int) -> Path:
    """Patch ``member``'s central and local headers to declare ``declared`` bytes."""
    data = bytearray(path.read_bytes())
    entries, _, offset = struct.unpack_from("<HII", data, len(data) - 12)  # EOCD, no comment
    for _ in range(entries):
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, offset + 28)
        if data[offset + 46 : offset + 46 + name_len] == member.encode():
            struct.pack_into("<I", data, offset + 24, declared)
            local = struct.unpack_from("<I", data, offset + 42)[0]
            struct.pack_into("<I", data, local + 22, declared)
            path.write_bytes(bytes(data))
            return path
        offset += 46 + name_len + extra_len + comment_len
    raise AssertionError(f"{member} not in {path}")


_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_S = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_PARAGRAPHS = (
    b"<?xml version='1.0' encoding='UTF-8'?><w:document " + _W + b"><w:body>",
    b"<w:p><w:r><w:t>All work and no play makes a dull boy.</w:t></w:r></w:p>",
    b"</w:body></w:document>",
)


def _docx_bomb(tmp: Path, size: int = BOMB) -> Path:
    payload = _repeat(*_PARAGRAPHS, size)
    return _repack(
        _template("docx", tmp / "t.docx"), tmp / "bomb.docx", "word/document.xml", payload
    )


def _pptx_bomb(tmp: Path) -> Path:
    payload = _repeat(b"", bytes(4096), b"", BOMB)
    return _repack(_template("pptx", tmp / "t.pptx"), tmp / "bomb.pptx", "ppt/media/x.bin", payload)


def _xlsx_bomb(tmp: Path) -> Path:
    head = b"<?xml version='1.0' encoding='UTF-8'?><worksheet " + _S
    head += b'><dimension ref="A1:B1"/><sheetData>'  # or openpyxl scans the sheet to size it
    unit = b'<row><c t="inlineStr"><is><t>bomb</t></is></c><c><v>1</v></c></row>'
    payload = _repeat(head, unit, b"</sheetData></worksheet>", BOMB)
    sheet = "xl/worksheets/sheet1.xml"
    return _repack(_template("xlsx", tmp / "t.xlsx"), tmp / "bomb.xlsx", sheet, payload)


def _disguised_xml(tmp: Path) -> Path:
    """4 MB of XML under a binary name: within the 16 MB of parts, over the 2 MB of XML."""
    payload = _repeat(b"<?xml version='1.0'?><a>", b"<b>lots of xml</b>", b"</a>", 4 * MB)
    return _repack(_template("pptx", tmp / "t.pptx"), tmp / "bomb.pptx", "ppt/media/x.bin", payload)


def _lying_docx(tmp: Path) -> Path:
    return _lie(_docx_bomb(tmp), "word/document.xml", 10_000)


BOMBS: dict[str, Callable[[Path], Path]] = {
    "pptx with an unreferenced 32 MB part": _pptx_bomb,
    "docx whose document.xml inflates to 32 MB": _docx_bomb,
    "xlsx with a 32 MB sheet": _xlsx_bomb,
    "pptx hiding 4 MB of XML under a binary name": _disguised_xml,
    "docx whose headers declare 10 kB for 32 MB": _lying_docx,
}

# --------------------------------------------------------------------------- the invariant


class SteppingClock:
    """A clock that advances one second every time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def stepping_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "clock", SteppingClock())


def assert_refused_without_inflating(path: Path, settings: IngestSettings) -> str:
    """``path`` is refused with one line naming it and the reason, and the memory traced
    while reading it stays under a quarter of what the bomb inflates to."""
    tracemalloc.start()
    try:
        try:
            extract(path, max_chars=800, limits=settings)
        except LoaderError as exc:
            message = exc.message
        else:
            raise AssertionError(f"{path.name} was read, not refused")
        finally:
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < BOMB / 4, f"{peak / MB:.1f} MB traced while reading {path.name}"
    assert "\n" not in message and message.startswith(f"{path.name}: ")
    assert "[ingest] max_uncompressed_mb" in message or "its header declares" in message, message
    return message


@pytest.mark.usefixtures("stepping_clock")
@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_zip_bombs_are_refused_before_any_parser_inflates_them(tmp_path: Path, bomb: str) -> None:
    path = BOMBS[bomb](tmp_path)
    assert path.stat().st_size < 200_000  # small on disk, like the review's
    assert_refused_without_inflating(path, LIMITS)


@pytest.mark.usefixtures("stepping_clock")
def test_the_messages_name_the_limit_and_the_part(tmp_path: Path) -> None:
    bomb = assert_refused_without_inflating(_docx_bomb(tmp_path), LIMITS)
    assert bomb == (
        "bomb.docx: its parts expand to 33 MB (largest word/document.xml, 32 MB), "
        "more than 16 MB (raise [ingest] max_uncompressed_mb)"
    )
    lying = assert_refused_without_inflating(_lying_docx(tmp_path), LIMITS)
    assert lying == (
        "bomb.docx: zip part word/document.xml inflates to more than the 10000 bytes "
        "its header declares (crafted or corrupt file)"
    )
    hidden = assert_refused_without_inflating(_disguised_xml(tmp_path), LIMITS)
    assert hidden == (
        "bomb.pptx: its XML parts expand to more than 2 MB, the limit for XML parsed into a "
        "tree in memory (an eighth of [ingest] max_uncompressed_mb; raise it)"
    )


@pytest.mark.usefixtures("stepping_clock")
@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_reverse_proof_without_the_zip_check_the_bombs_inflate(
    tmp_path: Path, bomb: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unchecked(handle: BinaryIO, budget: FileBudget, **streamed: object) -> None:
        del handle, budget, streamed

    monkeypatch.setattr(loaders, "check_package", unchecked)
    path = BOMBS[bomb](tmp_path)
    with pytest.raises(AssertionError):
        assert_refused_without_inflating(path, LIMITS)


@pytest.mark.usefixtures("stepping_clock")
def test_reverse_proof_trusting_the_declared_sizes_lets_a_lying_header_inflate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def declared_only(handle: BinaryIO, budget: FileBudget, **streamed: object) -> None:
        with zipfile.ZipFile(handle) as archive:
            total = sum(info.file_size for info in archive.infolist())
        if total > budget.settings.max_uncompressed_mb * MB:
            raise LoaderError(f"{budget.name}: too big (raise [ingest] max_uncompressed_mb)")
        handle.seek(0)

    monkeypatch.setattr(loaders, "check_package", declared_only)
    with pytest.raises(AssertionError, match="MB traced while reading"):
        assert_refused_without_inflating(_lying_docx(tmp_path), LIMITS)


def test_xlsx_worksheets_are_streamed_so_only_the_total_limits_them(tmp_path: Path) -> None:
    """A 4 MB sheet is over the 2 MB of XML but within the 16 MB: openpyxl streams it."""
    unit = b'<row><c t="inlineStr"><is><t>Tokyo</t></is></c><c><v>1</v></c></row>'
    head = b"<?xml version='1.0'?><worksheet " + _S + b'><dimension ref="A1:B1"/><sheetData>'
    payload = _repeat(head, unit, b"</sheetData></worksheet>", 4 * MB)
    sheet = "xl/worksheets/sheet1.xml"
    path = _repack(_template("xlsx", tmp_path / "t.xlsx"), tmp_path / "big.xlsx", sheet, payload)
    settings = IngestSettings(max_uncompressed_mb=16, max_rows=10**6)
    assert extract(path, max_chars=800, limits=settings).sections


@pytest.mark.usefixtures("stepping_clock")
def test_other_xlsx_xml_counts_as_a_tree(tmp_path: Path) -> None:
    """Shared strings are read into memory whole: past 2 MB of XML, refused."""
    unit = b"<si><t>Tokyo</t></si>"
    head = b"<?xml version='1.0'?><sst " + _S + b">"
    payload = _repeat(head, unit, b"</sst>", 4 * MB)
    path = _repack(
        _template("xlsx", tmp_path / "t.xlsx"), tmp_path / "bomb.xlsx", "xl/strings.xml", payload
    )
    message = assert_refused_without_inflating(path, LIMITS)
    assert "an eighth of [ingest] max_uncompressed_mb" in message


@pytest.mark.parametrize("fmt", ["docx", "pptx", "xlsx"])
def test_office_files_within_the_limits_are_read(tmp_path: Path, fmt: str) -> None:
    extracted = extract(_template(fmt, tmp_path / f"ok.{fmt}"), max_chars=800, limits=LIMITS)
    assert extracted.sections


def test_a_part_compressed_unlike_office_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.docx"
    template = _template("docx", tmp_path / "t.docx")
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as out:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
    with pytest.raises(LoaderError, match=r"^odd\.docx: zip part .* uses compression method 12"):
        extract(path, max_chars=800)


# --------------------------------------------------------------------------- size on disk


def assert_refused_by_size(path: Path, settings: IngestSettings) -> str:
    try:
        extract(path, max_chars=800, limits=settings)
    except LoaderError as exc:
        assert "\n" not in exc.message and "[ingest] max_file_mb" in exc.message
        return exc.message
    raise AssertionError(f"{path.name} was read, not refused")


def test_a_file_larger_than_max_file_mb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000)  # 5,000 bytes
    message = assert_refused_by_size(path, IngestSettings(max_file_mb=0.004))
    assert message == "big.txt: 5000 bytes on disk, more than 0.004 MB (raise [ingest] max_file_mb)"
    assert extract(path, max_chars=800, limits=IngestSettings(max_file_mb=0.005)).sections


def test_reverse_proof_without_the_size_check_a_large_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unchecked(name: str, size: int, settings: IngestSettings) -> None:
        del name, size, settings

    monkeypatch.setattr(loaders, "check_size", unchecked)
    path = tmp_path / "big.txt"
    path.write_text("word " * 1000)
    with pytest.raises(AssertionError, match="was read, not refused"):
        assert_refused_by_size(path, IngestSettings(max_file_mb=0.004))


def test_none_means_the_default_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[IngestSettings] = []

    def spy(name: str, size: int, settings: IngestSettings) -> None:
        seen.append(settings)

    monkeypatch.setattr(loaders, "check_size", spy)
    path = tmp_path / "a.txt"
    path.write_text("hello")
    extract(path, max_chars=800)
    assert seen == [IngestSettings()]


# --------------------------------------------------------------------------- time budget


def _pdf(path: Path, pages: int) -> Path:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.cell(text=f"Page {number} text")
    pdf.output(str(path))
    return path


def assert_stopped_by_the_budget(path: Path, settings: IngestSettings) -> str:
    try:
        extract(path, max_chars=800, limits=settings)
    except LoaderError as exc:
        assert "\n" not in exc.message and "[ingest] file_time_budget" in exc.message
        return exc.message
    raise AssertionError(f"{path.name} was read past its time budget")


def test_a_file_that_takes_longer_than_its_budget_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "clock", SteppingClock())
    message = assert_stopped_by_the_budget(
        _pdf(tmp_path / "long.pdf", 5), IngestSettings(file_time_budget_s=3)
    )
    assert message == (
        "long.pdf: reading took longer than 3s, stopped at page 3/5 "
        "(raise [ingest] file_time_budget)"
    )


@pytest.mark.parametrize("fmt", ["csv", "md", "html", "docx", "pptx", "xlsx"])
def test_every_loader_checks_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    path = tmp_path / f"slow.{fmt}"
    if fmt == "csv":
        path.write_text("a,b\n" + "1,2\n" * 50)
    elif fmt == "md":
        path.write_text("# Title\n\n" + "A paragraph.\n\n" * 50)
    elif fmt == "html":
        path.write_text("<h1>T</h1>" + "<p>A paragraph.</p>" * 50)
    else:
        _template(fmt, path)
    monkeypatch.setattr(limits, "clock", SteppingClock())
    assert_stopped_by_the_budget(path, IngestSettings(file_time_budget_s=1))


def test_reverse_proof_a_loader_that_never_checks_runs_past_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unchecked(self: FileBudget, unit: str, number: int, total: int | None = None) -> None:
        del self, unit, number, total

    monkeypatch.setattr(limits, "clock", SteppingClock())
    monkeypatch.setattr(FileBudget, "tick", unchecked)
    with pytest.raises(AssertionError, match="was read past its time budget"):
        assert_stopped_by_the_budget(
            _pdf(tmp_path / "long.pdf", 5), IngestSettings(file_time_budget_s=3)
        )


# --------------------------------------------------------------------------- the pipeline


def check_pipeline_refuses_before_reading(tmp_path: Path, read: list[int]) -> None:
    from clearance.app import Clearance
    from clearance.store.sqlite import SQLiteStore
    from conftest import make_settings

    docs = tmp_path / "docs"
    docs.mkdir()
    with (docs / "huge.txt").open("wb") as handle:  # sparse: 3 MB on paper, nothing on disk
        handle.truncate(3 * limits.MB)
    settings = make_settings(tmp_path, {"ingest": {"max_file_mb": 1}})
    with SQLiteStore(tmp_path / "index.db") as store:
        report = Clearance(settings, store, embedder=None).ingest([docs])
    assert [r.status for r in report.results] == ["failed"]
    assert "more than 1 MB (raise [ingest] max_file_mb)" in (report.results[0].error or "")
    assert sum(read) == 0  # not one byte of the file was read


def test_the_pipeline_refuses_a_large_file_before_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    real = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        handle = real(self, *args, **kwargs)  # type: ignore[call-overload]
        if self.name == "huge.txt":
            original = handle.read

            def read_counted(*a: object) -> bytes:
                data: bytes = original(*a)
                read.append(len(data))
                return data

            handle.read = read_counted
        return handle

    monkeypatch.setattr(Path, "open", counting_open)
    check_pipeline_refuses_before_reading(tmp_path, read)


def test_reverse_proof_reading_the_whole_file_first_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.ingest import pipeline

    def read_whole(self: pipeline.Ingestor, job: pipeline.Job) -> str:
        assert job.path is not None
        read.append(len(job.path.read_bytes()))
        return "0" * 64

    read: list[int] = []
    monkeypatch.setattr(pipeline.Ingestor, "_file_hash", read_whole)
    with pytest.raises(AssertionError):
        check_pipeline_refuses_before_reading(tmp_path, read)
