"""Plain text (``.txt``, ``.text``): UTF-8 (BOM allowed) or UTF-16
(:mod:`~clearance.ingest.loaders.encoding`).

Lines are packed into blocks of at most ``max_chars`` characters, preferably ending at a
blank line: whole paragraphs (runs of non-blank lines) are packed first; a paragraph that is
longer than ``max_chars`` is packed line by line, and a single line longer than that is a
block of its own (the chunker splits it later). Locator: ``lines=<first>-<last>``, 1-based
physical line numbers (``\\r\\n``, ``\\r`` and ``\\n`` all end a line). Blocks are not atomic.

An e-mail export's ``Subject`` header is its title. The header block stays in the text, so
a search for who sent what to whom still finds the message, and it is marked as what it is:
answers never quote it (:mod:`clearance.llm.extractive`). Markdown link syntax
(``[label](url)``) is read as its label (:mod:`clearance.ingest.loaders.markup`). Any other
text file has no title.
"""

from __future__ import annotations

from typing import BinaryIO

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import read_text
from clearance.ingest.loaders.markup import mail_headers, plain_links
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load", "text_sections"]


def _paragraphs(lines: list[str]) -> list[tuple[int, int]]:
    """0-based inclusive ``(first, last)`` indexes of each run of non-blank lines."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        if line.strip():
            if start is None:
                start = i
        elif start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(lines) - 1))
    return runs


def _units(lines: list[str], max_chars: int) -> list[tuple[int, int]]:
    """Paragraphs, with every paragraph longer than ``max_chars`` cut into runs of lines."""
    units: list[tuple[int, int]] = []
    for first, last in _paragraphs(lines):
        if len("\n".join(lines[first : last + 1])) <= max_chars:
            units.append((first, last))
            continue
        start, length = first, -1
        for i in range(first, last + 1):
            add = len(lines[i]) + 1
            if i > start and length + add > max_chars:
                units.append((start, i - 1))
                start, length = i, -1
            length += add
        units.append((start, last))
    return units


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """The title (an e-mail's subject) and sections described in the module docstring."""
    text = read_text(handle, budget.name, "text")
    headers, _ = mail_headers(text)
    return headers.get("subject") or None, text_sections(plain_links(text), max_chars)


def text_sections(text: str, max_chars: int) -> list[Section]:
    """Pack already-decoded text into ``lines=<first>-<last>`` sections."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    sections: list[Section] = []

    def emit(first: int, last: int) -> None:
        text = "\n".join(lines[first : last + 1])
        sections.append(Section(text, format_locator(("lines", f"{first + 1}-{last + 1}"))))

    block: tuple[int, int] | None = None
    for first, last in _units(lines, max_chars):
        if block is not None and len("\n".join(lines[block[0] : last + 1])) <= max_chars:
            block = (block[0], last)
            continue
        if block is not None:
            emit(*block)
        block = (first, last)
    if block is not None:
        emit(*block)
    return sections
