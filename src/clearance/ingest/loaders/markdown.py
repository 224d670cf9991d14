"""Markdown (``.md``, ``.markdown``), parsed with markdown-it-py (CommonMark + GFM tables).

Locators:

* text: ``section=<heading path>``, e.g. ``section=Results > Japan``; text before the first
  heading is under ``section=(top)``;
* a table row: ``section=<path>,table=T,row=<first cell>`` (atomic; ``T`` counts the
  document's tables from 1), text ``"<header1>: <cell1> | <header2>: <cell2> …"`` and
  ``Section.table == (header_row, this_row)``.

Title: the front matter's ``title``, else the text of the first level-1 heading, if any.
Front matter (YAML or TOML) is metadata, never text, and template tags (``{% … %}``,
``{{ … }}``) are not text either (:mod:`clearance.ingest.loaders.markup`). Inline markup is
dropped (a link keeps its label, an image its alt text); raw HTML keeps only its text. A
block quote opening with an alert or callout marker (GitHub's ``> [!NOTE]``, Obsidian's
``> [!tip]- Title``) reads as the label GitHub shows: "Note: Spending over $300 …"; a MkDocs
admonition (``!!! tip "Always Assume The Worst"`` over its indented body, or ``???`` folded)
as the box shows it, its title (else its kind) opening its body; and an attribute list
(``{#probation-period}`` after a heading, ``{:target="_blank"}`` after a link) is markup. A
definition list (a term over ``: its definition``) reads as a list of "term — definition"
items.
Headings written without heading syntax, as handbooks write them, open sections too: a
paragraph that is one short run of bold text ("**Key features**", not "**Note:** …"), one
level below the last heading, and a ``<details>`` block's ``<summary>``, whose bold lines
then sit one level below it. Such a bold line labels a part of the topic above it, so the
line above its text names both ("Annual health check — Key features"): the passage is found
by its topic, while the locator keeps the path as written.

Long files are parsed in segments of about 1 MB (markdown-it's tokens take ~25× the text),
cut only where CommonMark closes every open block: before a line at column 0 that starts
with a letter or is an ATX heading, right after a blank line, outside fenced code and raw HTML
blocks (``<script>``, ``<pre>``, comments …). A segment finding no such line is cut anyway
after 16 MB, at a line after a blank line. Link reference definitions apply to the segment
they are in and those after it; a reference used before its segment keeps its brackets.

Nothing is dropped for being nested too deeply. markdown-it stops parsing inside a list item
or block quote nested deeper than its ``maxNesting`` (20 levels: ten nested lists) and skips
its lines — and, inside a list, every line after them to the end of the document. Those
lines are parsed again as a document of their own, so their text is kept (as code or
paragraphs: their outer markers are gone) and headings after them still open sections. Lines
that come back just as deep (e.g. ``> > > … >`` on one line) are kept as plain text, their
container markers stripped; after 64 such re-reads the rest of the range is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from markdown_it import MarkdownIt
from markdown_it.token import Token

from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import Outline, collapse, read_text
from clearance.ingest.loaders.html import html_text
from clearance.ingest.loaders.markup import front_matter, plain_links, strip_templates
from clearance.model import LABEL_SEPARATOR, Section

__all__ = ["load"]

_SEGMENT_CHARS = 1_000_000
_HARD_SEGMENT_CHARS = 16_000_000
_BLOCK_START = re.compile(r"#{1,6}(?:[ \t]|$)|[^\W\d_]")  # ATX heading, or a letter
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_END = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*$")
_RAW_HTML = (  # CommonMark's HTML blocks 1-5, which run until an end marker, not a blank line
    (re.compile(r" {0,3}<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I),
     re.compile(r"</(?:script|pre|style|textarea)>", re.I)),
    (re.compile(r" {0,3}<!--"), re.compile(r"-->")),
    (re.compile(r" {0,3}<\?"), re.compile(r"\?>")),
    (re.compile(r" {0,3}<![A-Za-z]"), re.compile(r">")),
    (re.compile(r" {0,3}<!\[CDATA\["), re.compile(r"\]\]>")),
)  # fmt: skip
_CONTAINERS = frozenset({"list_item_open", "blockquote_open"})  # rules that parse nested blocks
_NESTED = "   "  # the indent of a list item per level it is nested
_MAX_REREADS = 64
_MARKERS = re.compile(r"^(?:[ \t]*(?:>|[-*+](?=[ \t]|$)|[0-9]{1,9}[.)](?=[ \t]|$)))*[ \t]*")


# An alert (GitHub: NOTE, TIP, IMPORTANT, WARNING, CAUTION) or a callout (Obsidian: any word,
# folded with "+" or "-") opening a block quote's first paragraph, and what follows on its line.
_ALERT = re.compile(r"\A\[!([A-Za-z][\w-]*)\][+-]?[ \t]*(?:\n|\Z)?")


def _alert(text: str) -> str:
    """``text`` (a block quote's first paragraph) with an alert marker as its label: "[!NOTE]
    Spending over …" → "Note: Spending over …"; a callout's title stays after the label
    ("[!tip] Receipts" → "Tip: Receipts")."""
    m = _ALERT.match(text)
    if m is None:
        return text
    label = m[1].replace("-", " ").replace("_", " ").capitalize()
    rest = text[m.end() :]
    return f"{label}: {rest}" if rest else f"{label}:"


# A MkDocs (Python-Markdown) admonition's first line: "!!! tip \"Always Assume The Worst\"",
# "??? note" or "???+ warning \"Title\"" (collapsible), "!!! info inline end" (its kind and
# placement); its body is the lines indented below it.
_ADMONITION = re.compile(
    r"^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?)[ \t]+(?P<kind>[A-Za-z][\w-]*)(?:[ \t]+[A-Za-z][\w-]*)*"
    r'(?:[ \t]+"(?P<title>[^"\n]*)")?[ \t]*$'
)
_BODY_INDENTS = ("    ", "\t")
# An attribute list (Python-Markdown's attr_list, kramdown's IAL, a heading's custom id):
# "{#probation-period}", "{: .note }", "{:target=\"_blank\" }". Markup, never text: at the end
# of a heading or paragraph, or right after a link; one opening "{:" anywhere.
_ATTRIBUTE = r"(?:[#.][A-Za-z][\w-]*|[A-Za-z][\w-]*=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s},]+))"
_ATTRIBUTES = rf"\{{:?[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*\}}"
_COLON_ATTRIBUTES = re.compile(rf"[ \t]*\{{:(?:[ \t]*{_ATTRIBUTE})*[ \t]*\}}")
_TRAILING_ATTRIBUTES = re.compile(rf"[ \t]*{_ATTRIBUTES}[ \t]*$")
_LEADING_ATTRIBUTES = re.compile(rf"^{_ATTRIBUTES}")


def _admonitions(lines: list[str]) -> list[str]:
    """``lines`` with each admonition read as the box MkDocs shows: its title (else its kind,
    "Note:") opening the paragraph of its body, the body unindented so that its paragraphs
    and lists are read as such, not as code (an admonition inside it is read in turn).
    Fenced code is left as written. A title ending in no sentence mark ends in a colon
    ("Always Assume The Worst: If you are unsure …"); a question stays one ("Can a SEV-3
    be a major incident? All SEV-2's are …"). Line for line: nothing moves."""
    out = list(lines)
    fence: str | None = None
    i = 0
    while i < len(out):
        line = out[i]
        if fence is not None:
            if _FENCE_END.match(line) and line.strip().startswith(fence):
                fence = None
            i += 1
            continue
        opened = _FENCE.match(line)
        if opened is not None:
            fence = opened.group(1)[0] * 3
            i += 1
            continue
        m = _ADMONITION.match(line)
        if m is None:
            i += 1
            continue
        indent = m["indent"]
        title = m["title"] if m["title"] is not None else m["kind"].replace("-", " ").capitalize()
        title = title.strip()
        if title and title[-1] not in ".。!?！？:：":
            title += ":"
        out[i] = indent + title
        j = i + 1
        while j < len(out):
            body = next((indent + b for b in _BODY_INDENTS if out[j].startswith(indent + b)), None)
            if body is None and out[j].strip():
                break
            if body is not None:
                out[j] = indent + out[j][len(body) :]
            j += 1
        i += 1
    return out


# A definition list's definition (PHP Markdown Extra, kramdown, markdown-it-deflist):
# ": Ensuring that code works as intended is …" under its term.
_DEFINITION = re.compile(r"^(?P<indent> {0,3}):[ \t]+(?P<text>\S.*)$")
# A line that is no term: a heading, list item, quote, table row, fence or definition.
_NO_TERM = re.compile(r"^\s*(?:#|[-*+>|:]|\d+[.)]\s|```|~~~)")


def _definitions(lines: list[str]) -> list[str]:
    """``lines`` with each definition list read as the list it shows: a term ("Does it work
    as intended?") and its definition (": Ensuring that code works …") become one item,
    "- Does it work as intended? — Ensuring that code works …", and a term's further
    definitions items of their own. Markdown's core reads them as a paragraph of the term
    and one of a colon, so a quoted definition lost its term. Fenced code is left as
    written. Line for line: the term's line is left blank, nothing moves."""
    out = list(lines)
    fence: str | None = None
    defined: set[int] = set()  # lines that are a definition now
    for i, line in enumerate(out):
        if fence is not None:
            if _FENCE_END.match(line) and line.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened is not None:
            fence = opened.group(1)[0] * 3
            continue
        m = _DEFINITION.match(line)
        if m is None or i == 0:
            continue
        above = i - 1 if out[i - 1].strip() or i < 2 else i - 2  # one blank line between
        term = out[above]
        if above in defined:
            out[i] = f"{m['indent']}- {m['text']}"
        elif term.strip() and not _NO_TERM.match(term):
            out[i] = f"{m['indent']}- {term.strip()}{LABEL_SEPARATOR}{m['text']}"
            out[above] = ""
        else:
            continue
        defined.add(i)
    return out


def _attributes_dropped(text: str, after_link: bool) -> str:
    """``text`` (a text run of an inline token) without the attribute lists it holds as
    markup: any opening "{:", and one right after a link or image."""
    text = _COLON_ATTRIBUTES.sub("", text)
    return _LEADING_ATTRIBUTES.sub("", text) if after_link else text


def _inline_text(token: Token) -> str:
    """The plain text of an ``inline`` token: markup dropped (attribute lists too), soft/hard
    breaks kept as newlines."""
    parts: list[str] = []
    previous = ""
    for child in token.children or []:
        if child.type == "text":
            parts.append(_attributes_dropped(child.content, previous in ("link_close", "image")))
        elif child.type in ("code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        previous = child.type
    # a heading's or paragraph's own attributes close it: "## Probation {#probation-period}"
    return _TRAILING_ATTRIBUTES.sub("", "".join(parts))


# A collapsible section's title, and its end.
_SUMMARY = re.compile(r"<summary\b[^>]*>(.*?)</summary\s*>", re.IGNORECASE | re.DOTALL)
_DETAILS_END = re.compile(r"</details\s*>", re.IGNORECASE)


def _bold_heading(token: Token, text: str) -> bool:
    """Whether a paragraph is one short run of bold text and nothing else, ending in no
    sentence or label punctuation ("**Key features**", not "**Note:**" nor a bold
    sentence): a heading written without heading syntax, as handbooks often do."""
    children = [c for c in token.children or [] if not (c.type == "text" and not c.content.strip())]
    if (
        len(children) < 3
        or children[0].type != "strong_open"
        or children[-1].type != "strong_close"
    ):
        return False
    if any(c.type == "strong_open" for c in children[1:]):
        return False
    words = collapse(text)
    return 0 < len(words) <= 60 and "\n" not in text and words[-1] not in ".。!?！？:：;；"


def _plain(lines: list[str]) -> str:
    """Lines as plain text, each without its leading list and quote markers."""
    return "\n".join(_MARKERS.sub("", line, count=1) for line in lines)


def _segments(lines: list[str]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` line ranges that parse as they would in the whole document (see the
    module docstring for where they are cut)."""
    start = size = 0
    fence: tuple[str, int] | None = None  # the open fence's character and length
    raw_end: re.Pattern[str] | None = None  # the end marker of an open raw HTML block
    after_blank = False
    for i, line in enumerate(lines):
        if after_blank and i > start:
            closed = fence is None and raw_end is None
            if (closed and size >= _SEGMENT_CHARS and _BLOCK_START.match(line)) or (
                size >= _HARD_SEGMENT_CHARS
            ):
                yield start, i
                start, size = i, 0
        size += len(line) + 1
        after_blank = not line.strip()
        if raw_end is not None:
            if raw_end.search(line):
                raw_end = None
        elif fence is not None:
            end = _FENCE_END.match(line)
            if end and end.group(1)[0] == fence[0] and len(end.group(1)) >= fence[1]:
                fence = None
        elif (opening := _FENCE.match(line)) and not (
            opening.group(1)[0] == "`" and "`" in opening.group(2)
        ):
            fence = (opening.group(1)[0], len(opening.group(1)))
        else:
            for begin, finish in _RAW_HTML:
                if (match := begin.match(line)) and not finish.search(line, match.end()):
                    raw_end = finish
                    break
    yield start, len(lines)


class _Reader:
    """Feeds the tokens of a Markdown source to an :class:`Outline`, re-reading what
    markdown-it did not parse (see the module docstring)."""

    def __init__(self, lines: list[str], budget: FileBudget, room: int | None = None) -> None:
        self.lines = lines
        self.budget = budget
        self.outline = Outline(room)
        self.title: str | None = None
        self.rereads = 0
        self.level = 0  # of the last heading: a bold line on its own is below it
        self.below = 1  # how far below: 2 inside a <details> whose <summary> titles it
        self.env: dict[str, Any] = {}  # link reference definitions, shared by the segments
        self.md = MarkdownIt("commonmark").enable("table")
        self.deepest = int(self.md.options["maxNesting"]) - 1  # a container here is not parsed

    def read(self, start: int, end: int) -> None:
        """Parse ``lines[start:end]`` as one document and feed it to the outline."""
        tokens = self.md.parse("\n".join(self.lines[start:end]), self.env)
        heading_level: int | None = None
        markers: list[str] = []  # one per open list: "-" for bullets, "." / ")" for ordered
        lists: list[object] = []  # one per open list: what tells it apart from the others
        marker: str | None = None  # the marker the next paragraph of a list item starts with
        depth = 0  # how deep that list item is nested
        rows: list[list[str]] | None = None  # the table being read
        skipping: int | None = None  # level of an unparsed container, until its close
        quote_opens = False  # the next paragraph is the first of a block quote
        for token in tokens:
            kind = token.type
            if skipping is not None:
                if token.nesting == -1 and token.level == skipping:
                    skipping = None
                continue
            if token.map is not None:
                self.budget.tick("line", start + token.map[0] + 1)
            if kind in _CONTAINERS and token.level >= self.deepest and token.map is not None:
                self._reread(start + token.map[0], start + token.map[1], start, end)
                skipping = token.level
            elif kind == "blockquote_open":
                quote_opens = True
            elif kind == "heading_open":
                heading_level = int(token.tag[1:])
            elif kind == "heading_close":
                heading_level = None
            elif kind in ("bullet_list_open", "ordered_list_open"):
                markers.append("-" if kind == "bullet_list_open" else token.markup or ".")
                lists.append(object())
            elif kind in ("bullet_list_close", "ordered_list_close"):
                markers.pop()
                lists.pop()
            elif kind == "list_item_open":
                kind_marker = markers[-1] if markers else "-"
                marker = "- " if kind_marker == "-" else f"{token.info or '1'}{kind_marker} "
                depth = len(markers) - 1
            elif kind == "list_item_close":
                marker = None
            elif kind == "table_open":
                rows = []
            elif kind == "table_close":
                if rows is not None:
                    self.outline.table(rows)
                rows = None
            elif kind == "tr_open" and rows is not None:
                rows.append([])
            elif kind == "inline":
                text = _inline_text(token)
                if quote_opens and heading_level is None and rows is None:
                    text = _alert(text)
                quote_opens = False
                if rows is not None:
                    if rows:
                        rows[-1].append(text)
                elif heading_level is not None:
                    # "1. ### Confirmation": a heading opening a list item is one of its steps
                    listed = (lists[-1], markers[-1] != "-") if marker and lists else None
                    self.outline.heading(heading_level, text, listed=listed)
                    marker = None
                    self.level = heading_level
                    if heading_level == 1 and self.title is None:
                        self.title = collapse(text) or None
                elif not marker and _bold_heading(token, text):
                    # "**Eligibility**" on a line of its own titles what follows, as a
                    # heading below the last one (and below an open <details>' summary).
                    self.outline.heading(self.level + self.below, text, label=True)
                elif marker:
                    # A nested item keeps its depth: "   1." under "2." is no new first step.
                    self.outline.text(f"{marker}{text}", indent=_NESTED * depth)
                    marker = None
                else:
                    self.outline.text(text)
            elif kind in ("fence", "code_block"):
                self.outline.text(token.content)
            elif kind == "html_block":
                self._html_block(token.content)

    def _html_block(self, content: str) -> None:
        """Raw HTML: its text, except that a collapsible section's ``<summary>`` is the
        heading of what the ``<details>`` holds, one below the last heading."""
        summary = _SUMMARY.search(content)
        if summary is None:
            self.outline.text(plain_links(html_text(content)))
        else:
            before, after = content[: summary.start()], content[summary.end() :]
            self.outline.text(plain_links(html_text(before)))
            self.outline.heading(self.level + 1, html_text(summary.group(1)))
            self.below = 2
            self.outline.text(plain_links(html_text(after)))
        if _DETAILS_END.search(content[summary.end() :] if summary else content):
            self.below = 1

    def _reread(self, first: int, last: int, start: int, end: int) -> None:
        """Read ``lines[first:last]``, which markdown-it skipped, as a document of their own.

        Re-reading the very range being read would skip the same lines again: then its first
        line is kept as plain text and the rest re-read, so every re-read makes progress.
        """
        self.rereads += 1
        if self.rereads > _MAX_REREADS:
            self.outline.text(_plain(self.lines[first:last]))
        elif (first, last) == (start, end):
            self.outline.text(_plain(self.lines[first : first + 1]))
            if first + 1 < last:
                self.read(first + 1, last)
        else:
            self.read(first, last)


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and sections of a Markdown file (sections are chunked later, at sentence
    boundaries; ``max_chars`` is the room a list of step headings has for their first
    sentences, :class:`~clearance.ingest.loaders.common.Outline`)."""
    fields, text = front_matter(read_text(handle, budget.name, "text"))
    erb = budget.name.lower().endswith(".erb")
    reader = _Reader(
        _definitions(_admonitions(strip_templates(text, fields, erb=erb).split("\n"))),
        budget,
        max_chars,
    )
    for start, end in _segments(reader.lines):
        reader.read(start, end)
    title = fields.get("title") or reader.title
    return title, reader.outline.finish(title)
