"""The limits that keep one file from exhausting the machine while it is read.

:func:`~clearance.ingest.loaders.extract` enforces them, from ``[ingest]``
(:class:`~clearance.config.IngestSettings`); every one that is reached fails that file alone
with a :class:`~clearance.errors.LoaderError` of one line naming the file, the limit and the
setting that raises it:

=========================  =====================================================================
``max_file_mb``            size on disk, checked before anything is read
``max_uncompressed_mb``    DOCX/PPTX/XLSX: all zip parts together, checked before a parsing
                           library sees the file — first the sizes the zip declares, then the
                           sizes the parts actually inflate to (:func:`check_package`); the
                           XML parts that are parsed into a tree get an eighth of it
``max_rows``               CSV/XLSX: data rows (non-empty rows after each table's header)
``file_time_budget``       wall time of the whole extraction, checked cooperatively: loaders
                           call :meth:`FileBudget.tick` per page, row, slide or block
=========================  =====================================================================

MB here is 10⁶ bytes. A limit is never met by truncating: a file that exceeds one is refused,
so the index never holds a silent prefix of a document.

The eighth: python-docx and python-pptx parse every XML part of a file into an lxml tree,
which takes up to ~25 times the XML's size (measured: 30 MB of empty Word paragraphs peak at
0.7 GB), so 256 MB of XML could need 6 GB. An eighth of ``max_uncompressed_mb`` keeps such a
file within 1 GB at the defaults while leaving the rest for pictures and media, which are
held as bytes. Whether a part is XML is judged by its content (it starts with ``<``), not by
its name, which the file chooses. XLSX worksheets (XML whose root element is ``worksheet``)
are exempt: openpyxl's read-only mode streams them, and ``max_rows`` bounds what is kept.

Why checking the zip first is enough: python-docx, python-pptx and openpyxl read parts
through :mod:`zipfile`, which never returns more of a part than its central directory
declares. It does inflate more before cutting, though — up to 2 GiB in one step when a part
is read whole — so a part whose header lies about its size could still take gigabytes for a
moment. Hence the check inflates every part itself, in 1 MiB steps, and refuses one that
yields more than it declares. Once every part was seen to inflate to no more than it
declares, and the declared sizes are within the limits, no library read can inflate more;
the check and the library read the same open file handle, so the file checked is the file
parsed.
"""

from __future__ import annotations

import copy
import re
import time
import zipfile
from collections.abc import Callable
from typing import BinaryIO

from clearance.config import IngestSettings
from clearance.errors import LoaderError

__all__ = ["MB", "XML_SHARE", "FileBudget", "check_package", "check_size"]

MB = 1_000_000
XML_SHARE = 8
"""XML parsed into a tree may take ``1 / XML_SHARE`` of ``max_uncompressed_mb``."""
_CHUNK = 1 << 20
_PROGRESS_INTERVAL_S = 1.0
_OFFICE_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_XML_LEAD = b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n"  # BOMs, NULs of UTF-16 and white space
_PROLOG = re.compile(rb"(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>|\s+)*", re.DOTALL)
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)")

Progress = Callable[[str], None]
"""Receives where extraction is, e.g. ``"page 1200/5000"`` or ``"row 40000"``."""

clock: Callable[[], float] = time.monotonic
"""What budgets read the time from (a module attribute, so tests can replace it)."""


def _setting(value: float) -> str:
    return f"{value:g}"


class FileBudget:
    """The time and row budget of reading one file, and its progress reports.

    Loaders call :meth:`tick` once per unit of work (page, row, slide, block). It costs one
    clock read; past the deadline it raises, and at most once per second it passes the
    position to ``on_progress``. :meth:`count_row` enforces ``max_rows``.
    """

    def __init__(
        self, name: str, settings: IngestSettings, on_progress: Progress | None = None
    ) -> None:
        self.name = name
        self.settings = settings
        self.rows = 0
        self._on_progress = on_progress
        self._clock = clock
        now = self._clock()
        self._deadline = now + settings.file_time_budget_s
        self._next_report = now + _PROGRESS_INTERVAL_S if on_progress else float("inf")
        self._next = min(self._deadline, self._next_report)

    def tick(self, unit: str, number: int, total: int | None = None) -> None:
        """Say that work on ``unit`` ``number`` (of ``total``) is starting."""
        now = self._clock()
        if now < self._next:
            return
        where = f"{unit} {number}" if total is None else f"{unit} {number}/{total}"
        if now >= self._deadline:
            raise LoaderError(
                f"{self.name}: reading took longer than "
                f"{_setting(self.settings.file_time_budget_s)}s, stopped at {where} "
                "(raise [ingest] file_time_budget)"
            )
        if self._on_progress is not None and now >= self._next_report:
            self._on_progress(where)
            self._next_report = now + _PROGRESS_INTERVAL_S
        self._next = min(self._deadline, self._next_report)

    def count_row(self) -> None:
        """Count one data row of a table file; raise once there are more than ``max_rows``."""
        self.rows += 1
        if self.rows > self.settings.max_rows:
            raise LoaderError(
                f"{self.name}: more than {self.settings.max_rows} rows (raise [ingest] max_rows)"
            )


def check_size(name: str, size: int, settings: IngestSettings) -> None:
    """Refuse a file larger on disk than ``max_file_mb``."""
    if size > settings.max_file_mb * MB:
        shown = f"{size / MB:.1f} MB"
        if round(size / MB, 1) <= settings.max_file_mb:  # "100.0 MB, more than 100 MB"
            shown = f"{size} bytes"
        raise LoaderError(
            f"{name}: {shown} on disk, more than {_setting(settings.max_file_mb)} MB "
            "(raise [ingest] max_file_mb)"
        )


def check_package(
    handle: BinaryIO, budget: FileBudget, *, streamed: frozenset[str] = frozenset()
) -> None:
    """Refuse a zip package whose parts inflate to more than ``max_uncompressed_mb``, or
    whose XML parts other than those with a root element in ``streamed`` inflate to more
    than an eighth of it.

    Declared sizes are added up first, so an honest bomb is refused without inflating a
    byte. Then every part is inflated in 1 MiB steps and counted, reading at most one byte
    past its declared size: a part that inflates to more than its header says (a crafted
    or corrupt file) is refused, after at most ``max_uncompressed_mb`` of work, and so is
    XML past its share, as soon as it is. Parts compressed other than stored or deflated
    (which Office never writes, and whose decompressors :mod:`zipfile` cannot bound) are
    refused. ``handle`` is left at offset 0.
    """
    with zipfile.ZipFile(handle) as archive:  # closing it does not close ``handle``
        _check_parts(archive, budget, streamed)
    handle.seek(0)


def _tree_xml(head: bytes, streamed: frozenset[str]) -> bool:
    """Whether a part starting with ``head`` is XML that will be parsed into a tree."""
    head = head[:4096].lstrip(_XML_LEAD)
    if not head.startswith(b"<"):
        return False
    prolog = _PROLOG.match(head)  # always matches, perhaps nothing
    root = _ROOT.match(head, prolog.end() if prolog else 0)
    return root is None or root.group(1).decode("ascii", "replace") not in streamed


def _check_parts(archive: zipfile.ZipFile, budget: FileBudget, streamed: frozenset[str]) -> None:
    name, settings = budget.name, budget.settings
    limit = settings.max_uncompressed_mb * MB
    parts = archive.infolist()
    total = sum(info.file_size for info in parts)
    if total > limit:
        largest = max(parts, key=lambda info: info.file_size)
        raise LoaderError(
            f"{name}: its parts expand to {total / MB:.0f} MB (largest {largest.filename}, "
            f"{largest.file_size / MB:.0f} MB), more than {_setting(settings.max_uncompressed_mb)}"
            " MB (raise [ingest] max_uncompressed_mb)"
        )
    done = xml = 0
    for info in parts:
        if info.compress_type not in _OFFICE_METHODS:
            raise LoaderError(
                f"{name}: zip part {info.filename} uses compression method "
                f"{info.compress_type}, which Office files never use (crafted or corrupt file)"
            )
        probe = copy.copy(info)
        probe.file_size = info.file_size + 1  # zipfile stops inflating here
        # Without a CRC zipfile skips its check, which would otherwise fail on the extra
        # byte and hide the reason; the parsing library still checks it when it reads.
        del probe.CRC
        actual = 0
        tree = False
        with archive.open(probe) as part:
            while chunk := part.read(_CHUNK):
                if not actual:
                    tree = _tree_xml(chunk, streamed)
                actual += len(chunk)
                if tree and xml + actual > limit / XML_SHARE:
                    raise LoaderError(
                        f"{name}: its XML parts expand to more than "
                        f"{_setting(settings.max_uncompressed_mb / XML_SHARE)} MB, the limit "
                        "for XML parsed into a tree in memory (an eighth of "
                        "[ingest] max_uncompressed_mb; raise it)"
                    )
                budget.tick("unzipped MB", (done + actual) // MB, total // MB)
        if actual > info.file_size:
            raise LoaderError(
                f"{name}: zip part {info.filename} inflates to more than the "
                f"{info.file_size} bytes its header declares (crafted or corrupt file)"
            )
        done += actual
        if tree:
            xml += actual
