"""Markdown (``.md``, ``.markdown``), parsed with markdown-it-py (CommonMark + GFM tables).

Locators:

* text: ``section=<heading path>``, e.g. ``section=Results > Japan``; text before the first
  heading is under ``section=(top)``;
* a table row: ``section=<path>,table=T,row=<first cell>`` (atomic; ``T`` counts the
  document's tables from 1), text ``"<header1>: <cell1> | <header2>: <cell2> …"`` and
  ``Section.table == (header_row, this_row)``.

Title: the text of the first level-1 heading, if any. Inline markup is dropped (an image
keeps its alt text); raw HTML blocks keep only their text.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from clearance.ingest.loaders import Outline, collapse, read_text
from clearance.ingest.loaders.html import html_text
from clearance.model import Section

__all__ = ["load"]


def _inline_text(token: Token) -> str:
    """The plain text of an ``inline`` token: markup dropped, soft/hard breaks kept as newlines."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
    return "".join(parts)


def load(path: Path, max_chars: int) -> tuple[str | None, list[Section]]:
    """Title and sections of a Markdown file (``max_chars`` is unused: sections are chunked
    later, at sentence boundaries)."""
    del max_chars
    tokens = MarkdownIt("commonmark").enable("table").parse(read_text(path, "text"))
    outline = Outline()
    title: str | None = None
    heading_level: int | None = None
    markers: list[str] = []  # one per open list: "-" for bullets, "." / ")" for ordered
    marker: str | None = None  # the marker the next paragraph of a list item starts with
    rows: list[list[str]] | None = None  # the table being read
    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            heading_level = int(token.tag[1:])
        elif kind == "heading_close":
            heading_level = None
        elif kind in ("bullet_list_open", "ordered_list_open"):
            markers.append("-" if kind == "bullet_list_open" else token.markup or ".")
        elif kind in ("bullet_list_close", "ordered_list_close"):
            markers.pop()
        elif kind == "list_item_open":
            kind_marker = markers[-1] if markers else "-"
            marker = "- " if kind_marker == "-" else f"{token.info or '1'}{kind_marker} "
        elif kind == "list_item_close":
            marker = None
        elif kind == "table_open":
            rows = []
        elif kind == "table_close":
            if rows is not None:
                outline.table(rows)
            rows = None
        elif kind == "tr_open" and rows is not None:
            rows.append([])
        elif kind == "inline":
            text = _inline_text(token)
            if rows is not None:
                if rows:
                    rows[-1].append(text)
            elif heading_level is not None:
                outline.heading(heading_level, text)
                if heading_level == 1 and title is None:
                    title = collapse(text) or None
            else:
                outline.text(f"{marker}{text}" if marker else text)
                marker = None
        elif kind in ("fence", "code_block"):
            outline.text(token.content)
        elif kind == "html_block":
            outline.text(html_text(token.content))
    return title, outline.finish()
