"""How the bytes of a text file (TXT, Markdown, CSV) become text.

Accepted: UTF-8 (a BOM is dropped); UTF-16 with a BOM; and UTF-16 without a BOM when the file
shows it — in its first 64 KiB, NUL bytes at one parity of offsets in at least a third of the
byte pairs and at the other parity in at most 5 % (text written mostly in Latin script:
``h\\0e\\0l\\0…``). Everything else is refused with a :class:`~clearance.errors.LoaderError`
saying where the first bad byte is, because guessing a legacy code page silently corrupts
numbers and names. So is text with NUL characters in it, whatever the encoding: it is binary
data or UTF-16 that could not be recognised (UTF-16 without a BOM whose text is mostly CJK has
no NUL bytes and is refused as invalid UTF-8), and indexing it would put NULs between letters.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Generator
from typing import BinaryIO

from clearance.errors import LoaderError

__all__ = ["SAMPLE_BYTES", "decode", "detect", "iter_lines"]

SAMPLE_BYTES = 64 * 1024
_CHUNK = 1 << 20


def detect(sample: bytes) -> str:
    """The codec to read a file with, judged from its first bytes (see the module docstring)."""
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # reads the BOM and drops it
    pairs = len(sample) // 2
    if pairs and b"\0" in sample:
        even = sample[0 : 2 * pairs : 2].count(0)
        odd = sample[1 : 2 * pairs : 2].count(0)
        if odd * 3 >= pairs and even * 20 <= pairs:
            return "utf-16-le"
        if even * 3 >= pairs and odd * 20 <= pairs:
            return "utf-16-be"
    return "utf-8-sig"  # also reads UTF-8 without a BOM


def _label(encoding: str) -> str:
    return "UTF-8" if encoding == "utf-8-sig" else "UTF-16"


def _undecodable(name: str, label: str, encoding: str, offset: int) -> LoaderError:
    return LoaderError(
        f"{name}: not valid {_label(encoding)} {label} (undecodable byte at offset {offset}); "
        "re-save the file as UTF-8"
    )


def _nul(name: str, label: str) -> LoaderError:
    return LoaderError(
        f"{name}: {label} contains NUL characters (binary data, or UTF-16 that could not be "
        "recognised); re-save the file as UTF-8"
    )


def decode(data: bytes, name: str, label: str) -> str:
    """The whole file's text, line endings as they are; ``label`` names the format in errors."""
    encoding = detect(data[:SAMPLE_BYTES])
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _undecodable(name, label, encoding, exc.start) from exc
    if "\0" in text:
        raise _nul(name, label)
    return text


def _first_bad_byte(handle: BinaryIO, encoding: str) -> int:
    """Offset of the first byte ``encoding`` cannot decode (re-reading from the start)."""
    handle.seek(0)
    decoder = codecs.getincrementaldecoder(encoding)()
    offset = 0
    while chunk := handle.read(_CHUNK):
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            return offset - pending + exc.start
        offset += len(chunk)
    return offset - len(decoder.getstate()[0])  # cut short at the end


def iter_lines(handle: BinaryIO, name: str, label: str) -> Generator[str, None, None]:
    """Stream an open binary file as decoded lines, line endings kept (``\\n``, ``\\r\\n`` and
    a lone ``\\r`` each end a line, as :func:`open` does with ``newline=""``).

    Memory is one line plus a read buffer, whatever the file's size. Errors are those of
    :func:`decode`; ``handle`` is not closed. Close the generator before ``handle`` (e.g. with
    :func:`contextlib.closing`) when it may be left unfinished.
    """
    encoding = detect(handle.read(SAMPLE_BYTES))
    handle.seek(0)
    text = io.TextIOWrapper(handle, encoding=encoding, newline="")
    try:
        for line in text:
            if "\0" in line:
                raise _nul(name, label)
            yield line
    except UnicodeDecodeError as exc:
        offset = _first_bad_byte(handle, encoding)
        raise _undecodable(name, label, encoding, offset) from exc
    finally:
        if not handle.closed:
            text.detach()  # leave ``handle`` open: its owner closes it
