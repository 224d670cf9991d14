"""The HTML loader as it was before it streamed: a Beautiful Soup tree, walked recursively.

Kept for the tests only, as the reference the streaming loader must agree with on ordinary
documents, and as the leaky variant that fails on deep nesting (Python's recursion limit).
It is the previous ``clearance.ingest.loaders.html.load``, given the current signature.
"""

from __future__ import annotations

from typing import BinaryIO

from bs4 import Tag
from bs4.element import CData, NavigableString

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Outline, collapse
from clearance.ingest.loaders.html import (
    _BLOCK,
    _HEADING,
    _IGNORED,
    _INLINE_SPACE,
    _MAX_COLSPAN,
    parse,
)
from clearance.model import Section


def _table_rows(table: Tag) -> list[list[str]]:
    rows: list[list[str]] = []
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue
        row: list[str] = []
        for cell in tr.find_all(["td", "th"], recursive=False):
            span = str(cell.get("colspan") or "1").strip()
            count = int(span) if span.isdigit() else 1
            row.extend([collapse(cell.get_text(" "))] * max(1, min(count, _MAX_COLSPAN)))
        rows.append(row)
    return rows


class _Walker:
    def __init__(self, outline: Outline) -> None:
        self.outline = outline
        self.buffer: list[str] = []
        self.first_h1: str | None = None

    def flush(self) -> None:
        text = "".join(self.buffer)
        self.buffer = []
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        if lines:
            self.outline.text("\n".join(lines))

    def walk(self, node: Tag) -> None:
        for child in node.children:
            if isinstance(child, Tag):
                self.element(child)
            elif type(child) in (NavigableString, CData):
                self.buffer.append(_INLINE_SPACE.sub(" ", str(child)))

    def element(self, tag: Tag) -> None:
        name = tag.name.lower()
        if name in _IGNORED:
            return
        heading = _HEADING.match(name)
        if heading:
            self.flush()
            text = collapse(tag.get_text(" "))
            self.outline.heading(int(heading.group(1)), text)
            if heading.group(1) == "1" and self.first_h1 is None and text:
                self.first_h1 = text
        elif name == "table":
            self.flush()
            self.outline.table(_table_rows(table=tag))
        elif name == "pre":
            self.buffer.append("\n" + tag.get_text() + "\n")
        elif name in _BLOCK:
            self.buffer.append("\n")
            self.walk(tag)
            self.buffer.append("\n")
        else:
            self.walk(tag)


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    del max_chars, budget
    soup = parse(handle.read())
    walker = _Walker(Outline())
    walker.walk(soup)
    walker.flush()
    title_tag = soup.title
    title = collapse(title_tag.get_text(" ")) if title_tag is not None else ""
    return title or walker.first_h1, walker.outline.finish()
