"""PDF: page text read with pypdf, pages of figures and ruled tables with pdfplumber.

One section per page that has text, locator ``page=N`` (1-based physical page number, so it
matches what a viewer shows as the page index). Sections are not atomic. Title: the
document information ``/Title``, if set.

Joined figures: pypdf can join adjacent cells' digits where a table sets them close ("0",
"1,189" and "1,826" as "01,1891,826"), so a quoted row would misstate its figures. A page
whose pypdf text holds a number grouped as no figure is printed (:func:`malformed_figures`)
is read again with pdfplumber, which parts words wherever characters stand more than
:data:`_WORD_GAP` apart on the lines where that parts such numbers (:func:`_parted_text`;
a heading set with letter spacing keeps its words), and keeps whichever text holds fewer
such numbers (pypdf's on a tie). A join that still reads as a figure ("1" and "50,278" as "150,278") is caught only
where the page's other rows give the reading away.

Tables: a page whose text looks tabular (:func:`looks_tabular`: several lines that are
mostly figures) and whose content draws rules is read again with pdfplumber, and each
**ruled** table on it — cells
bounded by drawn lines or filled cell rectangles, the grid pdfplumber's ``lines``
strategy finds — becomes one atomic section per data row, as a Markdown or HTML table's
rows do (:func:`~clearance.ingest.loaders.common.table_sections`): text ``"<header1>:
<cell1> | …"``, ``Section.table == (header_row, this_row)``, locator
``page=N,table=T,row=<first cell>`` (``T`` counts the page's ruled grids from 1, top to
bottom). The page keeps its text section either way, so no text is lost.

A table is emitted only where it reads without guessing (:func:`_read_grid`); otherwise
the page's text alone stands for it:

* the column edges are every vertical edge drawn anywhere in the grid (a table that shades
  every other row draws the edges in the shaded rows only), and every word must lie inside
  one cell: a word that crosses an edge (text merged across columns, a group header
  spanning several columns, a rule that does not match the text) refuses the table;
* the first row is the header: every column but the first must have one, and none may be
  a figure other than a year (a grid of figures has no header to name its columns);
* no text beside the table's rows, outside its rules: the rules enclose only part of it
  (a column left open at the side would lose its labels);
* no cell may hold two figures (``290 259``: columns merged);
* the row under the header holds a figure: a second heading row (the units, the names
  under a group heading) would be read as data and its figures lose their column's
  meaning; a table of words gives no figures anyway;
* at least two columns and a data row under the header.

Tables set out by white space alone (a filing's statements): on a page whose text looks
tabular and that gives no ruled table, rows whose figures' right edges line up in columns
under header lines standing over those columns are read as a table (:func:`_aligned_tables`),
only where that is no guess: every figure of a row in a column of its own, a label left of
every column, and a header for every column, one naming a year. A bookkeeping package's
export of one "Total" column is read too, dated by the one line of its title block that
names a year ("January-December, 2025"), and a statement continued over a page break with
no header keeps the header of the page before. The title block over such a table (whom,
which statement, when) is each row's ``titles``, which name whom its figures are about
(:func:`clearance.ingest.facts.statement_entity`). Otherwise the page's text alone stands
for them.

pypdf reads arrays of up to :data:`MAX_ARRAY_ELEMENTS` elements, ten times its default,
which refused a published 10-Q.

Encrypted PDFs: one that opens with the empty password and whose permissions allow
extracting text is read like any other. Publishers set such "owner-only" encryption on
many reports and filings (Apple's 10-Qs, for one) to restrict editing, not reading: every
viewer opens them, and who may read the document here is its ACL's business. Refused with
a :class:`LoaderError`: an encrypted PDF that needs a password, or whose permissions
forbid extracting text (both say which), a PDF pypdf cannot parse (corrupt / unreadable),
and a PDF in which no page has extractable text (a scan without OCR → empty document). A
page pdfplumber cannot read keeps its text and gives no table (logged).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, cast

from pypdf import PasswordType, PdfReader, apply_configuration
from pypdf.constants import UserAccessPermissions
from pypdf.errors import PdfReadWarning

from clearance.errors import LoaderError
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import (
    clean_block,
    collapse,
    heading_names_row,
    is_title_line,
    table_sections,
)
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load", "looks_tabular", "malformed_figures"]

log = logging.getLogger(__name__)

# A figure as tables print it: 1,320  -4.5  (12.5)  $3.71  12%  —  n/a are not counted.
_FIGURE = re.compile(r"^[(\-−–]?[$€£¥₹]?\d[\d,]*(?:\.\d+)?%?\)?[*†‡§¹²³]?$")
_YEAR = re.compile(r"^(?:19|20)\d{2}[*†‡§¹²³]?$")
_NAMES_YEAR = re.compile(r"(?:19|20)\d{2}")
#: A line is a row of figures when at least this share of its words are figures.
_FIGURE_SHARE = 0.4
#: A page is read for tables when at least this many of its lines are rows of figures.
MIN_FIGURE_LINES = 3
#: A page is read for tables only when its content draws at least this many rectangles
#: and line segments: the fewest that rule a table (a frame, and a row shaded cell by cell).
MIN_RULES = 3
# The PDF path operators that draw a rectangle (``re``) or a line segment (``l``).
_PATH_OP = re.compile(rb"(?<![A-Za-z'])(?:re|l)(?=[\s\[(/<%]|$)")
#: The most elements pypdf reads in one array of a file. Its default (100,000) refused a
#: published 10-Q of 72 pages ("Reached maximum array element count"); this still bounds
#: what a crafted file can make it hold.
MAX_ARRAY_ELEMENTS = 1_000_000
#: pdfplumber's ruled-table settings: cell edges from drawn lines and rectangles only.
_RULED: dict[str, Any] = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}
#: How far (pt) a word may stick out of its cell before it is taken to cross an edge.
_TOLERANCE = 1.5
#: The gap (pt) between two characters that parts two words when a page of figures is read
#: again (pdfplumber's default, 3, joins cells set closer than that).
_WORD_GAP = 1
#: Text ending more than this many line heights above a table is not read as its caption.
_CAPTION_GAP = 2


def looks_tabular(text: str) -> bool:
    """Whether a page's text has at least :data:`MIN_FIGURE_LINES` lines that are mostly
    figures (a line of its own per figure counts too, as some PDFs lay cells out) or end in
    an amount as a statement prints one (a label and its total, "Net Other Revenue
    $2,254.76"; a sentence ends in a full stop)."""
    count = 0
    for line in text.splitlines():
        words = line.split()
        figures = sum(1 for w in words if _FIGURE.match(w.rstrip(",;")))
        if (figures and figures >= _FIGURE_SHARE * len(words)) or (
            words and _STATED_AMOUNT.match(words[-1])
        ):
            count += 1
            if count >= MIN_FIGURE_LINES:
                return True
    return False


# An amount as a statement prints one: grouped in thousands or with cents ("2,254.76",
# "-$84,387.34", "(140.02)", "36,225").
_STATED_AMOUNT = re.compile(
    r"^[(\-−–]?[$€£¥₹]?(?:\d{1,3}(?:,\d{3})*\.\d{2}|\d{1,3}(?:,\d{3})+)\)?$"
)
# A number with thousands separators as tables print it: "1,189", "146,982.5".
_GROUPED = re.compile(r"^[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")
_NUMBER_TOKEN = re.compile(r"\d[\d,.]*\d")


def malformed_figures(text: str) -> int:
    """How many of a text's numbers with a thousands separator are grouped as no table
    prints a figure ("01,189", "1,1891,826", "0129,861"): the digits of neighbouring
    cells joined into one. A decimal comma ("0,5") counts too, alike in any reading of the
    same page, so it never decides between two."""
    return sum(
        1
        for m in _NUMBER_TOKEN.finditer(text)
        if "," in m.group(0) and not _GROUPED.match(m.group(0))
    )


def _drawn_rules(page: Any) -> int:
    """How many rectangles and line segments the page's own content stream draws (a
    table drawn inside a form XObject is not counted)."""
    contents = page.get_contents()
    return len(_PATH_OP.findall(contents.get_data())) if contents is not None else 0


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and per-page sections, each page's table rows after its text (``max_chars``
    is unused: pages are chunked later)."""
    del max_chars
    pages: list[tuple[int, Section | None]] = []
    with (
        warnings.catch_warnings(),
        apply_configuration(array_maximum_element_count=MAX_ARRAY_ELEMENTS),
    ):
        # pypdf reports recoverable oddities of real-world files (bad xref offsets, …) as
        # PdfReadWarning and carries on; they say nothing about the text we get.
        warnings.simplefilter("ignore", PdfReadWarning)
        reader = PdfReader(handle)  # reads objects from the file as pages need them
        if reader.is_encrypted:
            _open_without_password(reader, budget.name)
        total = len(reader.pages)
        # page → (read its text, its ruled tables, its tables aligned by white space)
        again: dict[int, tuple[bool, bool, bool]] = {}
        for number, page in enumerate(reader.pages, start=1):
            budget.tick("page", number, total)
            text = clean_block(page.extract_text())
            pages.append(
                (number, Section(text, format_locator(("page", number))) if text else None)
            )
            joined = malformed_figures(text) > 0
            tabular = bool(text) and looks_tabular(text)
            ruled = tabular and _drawn_rules(page) >= MIN_RULES
            if joined or tabular:
                again[number] = (joined, ruled, tabular)
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    read = _tabular_pages(handle, again, total, budget) if again else {}
    sections: list[Section] = []
    for number, section in pages:
        text, tables = read.get(number, ("", []))
        if section is not None:
            if text and malformed_figures(text) < malformed_figures(section.text):
                section = dataclasses.replace(section, text=text)
            sections.append(section)
        sections.extend(tables)
    return (title if isinstance(title, str) else None), sections


def _open_without_password(reader: PdfReader, name: str) -> None:
    """Opens an encrypted PDF with the empty password, as every viewer does, where its
    permissions allow extracting text; else raises :class:`LoaderError` saying why."""
    try:
        opened = reader.decrypt("")
    except Exception as exc:  # an unsupported security handler or a broken dictionary
        raise LoaderError(f"{name}: encrypted PDF that cannot be opened ({exc})") from exc
    if opened == PasswordType.NOT_DECRYPTED:
        raise LoaderError(
            f"{name}: encrypted PDF that needs a password; decrypt it before ingesting"
        )
    allowed = reader.user_access_permissions
    if allowed is None or not allowed & UserAccessPermissions.EXTRACT:
        raise LoaderError(
            f"{name}: encrypted PDF whose permissions forbid extracting its text; "
            "ingest a copy its owner allows to be read"
        )


def _tabular_pages(
    handle: BinaryIO, again: Mapping[int, tuple[bool, bool, bool]], total: int, budget: FileBudget
) -> dict[int, tuple[str, list[Section]]]:
    """The pages ``again`` names, read again with pdfplumber, by page number: the text of
    those whose figures pypdf joined (``again[n][0]``), words parted by the gaps between
    them, and the row sections of the ruled tables of those that draw rules
    (``again[n][1]``). A page pdfplumber cannot read keeps pypdf's text and gives no
    table."""
    import pdfplumber  # only for PDFs with a page of figures to read again

    handle.seek(0)
    out: dict[int, tuple[str, list[Section]]] = {}
    carried: _Carried | None = None  # the last page's last table set out by white space
    with pdfplumber.open(cast(Any, handle), pages=list(again)) as pdf:
        for page in pdf.pages:
            number = page.page_number
            budget.tick("page", number, total)
            joined, ruled, tabular = again[number]
            before, carried = carried if number - 1 in out else None, None
            try:
                text = _parted_text(page) if joined else ""
                sections = _page_tables(page, number) if ruled else []
                if tabular and not sections:
                    sections, carried = _aligned_tables(page, number, before)
            except Exception as exc:  # pdfminer on odd content: the page keeps its text
                log.warning(
                    "%s: page %d: not read again for its figures (%s: %s)",
                    budget.name,
                    number,
                    type(exc).__name__,
                    exc,
                )
                continue
            finally:
                page.close()  # frees the page's parsed objects
            out[number] = (text, sections)
    return out


def _parted_text(page: Any) -> str:
    """A page's text with the figures of neighbouring cells parted: pdfplumber's reading
    with words parted at :data:`_WORD_GAP`, on the lines where that holds fewer malformed
    figures than its ordinary reading, which keeps every other line. Parting every line
    parted the letters of a heading set with letter spacing ("A N N U A L R E P O R T")
    too. Both readings group the same characters into the same lines; where their line
    counts differ, the parted reading is taken whole."""
    loose = page.extract_text().split("\n")
    tight = page.extract_text(x_tolerance=_WORD_GAP).split("\n")
    if len(loose) == len(tight):
        tight = [
            parted if malformed_figures(parted) < malformed_figures(line) else line
            for line, parted in zip(loose, tight, strict=True)
        ]
    return clean_block("\n".join(tight))


def _page_tables(page: Any, number: int) -> list[Section]:
    grids = [t for t in page.find_tables(_RULED) if _is_grid(t)]
    if not grids:
        return []
    words = page.extract_words()
    grids.sort(key=lambda t: (round(t.bbox[1]), t.bbox[0]))
    sections: list[Section] = []
    floor = 0.0  # the bottom of the table above: text above a table starts below it
    for index, table in enumerate(grids, start=1):
        rows = _read_grid(table, words)
        if rows is not None:
            above = _blocks_above(words, table.bbox, floor)

            def locate(first: str, index: int = index) -> str:
                return format_locator(("page", number), ("table", index), ("row", first))

            sections.extend(table_sections(rows, locate, above))
        floor = max(floor, table.bbox[3])
    return sections


# A figure of a statement set out by white space: "60,584", "(265)", "1.26", "12.5%", and
# with its currency sign ("$329,530.83", "-$84,387.34"), as bookkeeping exports set totals.
_CELL_FIGURE = re.compile(
    r"^\(?-?[$€£¥]?\d{1,3}(?:,\d{3})*(?:\.\d+)?\)?%?$|^\(?-?[$€£¥]?\d+(?:\.\d+)?\)?%?$"
)
# A currency sign set apart from its figure, and a dash in a figure's place (nil).
_CURRENCY_SIGN = re.compile(r"^[$€£¥]$")
_CELL_MARK = re.compile(r"^(?:[$€£¥]|—|–|-)$")
#: Words closer than this (pt) are one phrase of a header line ("July 1,").
_PHRASE_GAP = 6.0
#: A figure belongs to a column when its right edge is within this (pt) of the column's
#: (a percentage's sign may stand a little right of the amounts above it).
_COLUMN_SLACK = 10.0
#: The fewest rows of figures that make a table set out by white space.
MIN_ALIGNED_ROWS = 3
#: The fewest rows that make a table of one column of figures (a statement exported with
#: one "Total" column): more than several columns need, as a lone column has no neighbour
#: to line up with.
MIN_COLUMN_ROWS = 5


def _lines_of(words: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Words in lines, top to bottom, each left to right; a label set a few points lower
    than its row's figures (as statements set totals), by up to half the line's height,
    is on their line."""
    lines: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        first = lines[-1][0] if lines else None
        if first is not None and word["top"] - first["top"] <= max(
            2.5, (first["bottom"] - first["top"]) / 2
        ):
            lines[-1].append(word)
        else:
            lines.append([word])
    return [_with_percent_signs(sorted(line, key=lambda w: w["x0"])) for line in lines]


def _with_percent_signs(line: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A line's words with a "%" set apart after a figure joined to it ("12.5 %" is one
    figure, "12.5%", ending where the sign does)."""
    out: list[dict[str, Any]] = []
    for word in line:
        before = out[-1] if out else None
        if (
            word["text"] == "%"
            and before is not None
            and _CELL_FIGURE.match(before["text"])
            and word["x0"] - before["x1"] <= _PHRASE_GAP
        ):
            out[-1] = {**before, "text": before["text"] + "%", "x1": word["x1"]}
        else:
            out.append(word)
    return out


def _figure_word(word: dict[str, Any]) -> bool:
    return bool(_CELL_FIGURE.match(word["text"])) and not _YEAR.match(word["text"])


@dataclasses.dataclass(frozen=True, slots=True)
class _Carried:
    """A page's last table set out by white space, which the next page may go on with: its
    columns' right edges, its header and the text above it."""

    columns: tuple[float, ...]
    header: tuple[str, ...]
    above: tuple[str, ...]
    titles: tuple[str, ...]

    def goes_on_as(self, columns: Sequence[float]) -> bool:
        """Whether a table whose columns end at ``columns`` stands where this one did."""
        return len(columns) == len(self.columns) and all(
            abs(a - b) <= _COLUMN_SLACK for a, b in zip(columns, self.columns, strict=True)
        )


def _aligned_tables(
    page: Any, number: int, carried: _Carried | None = None
) -> tuple[list[Section], _Carried | None]:
    """The tables of a page set out by white space alone, as statements in filings are:
    rows of a label then figures whose right edges line up in columns, under header lines
    whose phrases stand over those columns ("Three Months Ended" over two, "July 1, 2023"
    over one). Read only where it reads without guessing: every figure of a row in a column
    of its own, a label left of every column, and either

    * at least two columns and :data:`MIN_ALIGNED_ROWS` rows of figures, a header for
      every column, one naming a year;
    * one column of amounts (:func:`_amounts`), :data:`MIN_COLUMN_ROWS` rows or more, with
      a header ("Total") and a year named by its header or by the one line of the title
      block above that names one ("January-December, 2025"), which then opens the header
      ("January-December, 2025 Total"): a statement exported by a bookkeeping package; or
    * no header at all, as the first table of a page going on with the last table of the
      page before (``carried``: the same columns, give or take :data:`_COLUMN_SLACK`): a
      statement continued over a page break keeps that header and the text above it.

    Each table's rows become sections as a ruled table's do (locator ``page=N,table=T,
    row=<label>``, ``T`` counting these tables from 1, top to bottom: a page gives ruled
    tables or these, never both). Returns the sections and the page's last table, for the
    next page."""
    words = page.extract_words()
    lines = _lines_of(words)
    sections: list[Section] = []
    index = 0
    last: _Carried | None = None
    floor = 0.0  # the bottom of the table above: text above a table starts below it
    i = 0
    while i < len(lines):
        run = _figure_run(lines, i)
        if run is None:
            i += 1
            continue
        start, end, columns = run
        table = _aligned_table(lines, start, end, columns)
        i = end
        if table is None:
            continue
        header, data, bbox = table
        titles = _title_block(lines, floor, bbox[1])
        goes_on = index == 0 and carried is not None and carried.goes_on_as(columns)
        above: list[str] | None = None
        if all(header) and any(_NAMES_YEAR.search(h) for h in header):
            pass
        elif len(header) == 1 and header[0]:
            period = _title_period(lines, floor, bbox[1])
            if period is None:
                continue
            header = [f"{period} {header[0]}"]
        elif not any(header) and goes_on:
            assert carried is not None
            header, above, titles = list(carried.header), list(carried.above), carried.titles
        else:
            continue
        if goes_on and len(titles) <= 1:
            # the statement of the page before, its name repeated at most: whom it is about
            assert carried is not None
            titles = carried.titles
        rows = [["", *header], *_under_headings(data)]
        index += 1
        if above is None:
            above = _blocks_above(words, (0.0, bbox[1], float(page.width), bbox[3]), floor)
        floor = bbox[3]
        last = _Carried(tuple(columns), tuple(header), tuple(above), titles)

        def locate(first: str, index: int = index) -> str:
            return format_locator(("page", number), ("table", index), ("row", first))

        sections.extend(table_sections(rows, locate, above, titles))
    return sections, last


def _under_headings(rows: Sequence[list[str]]) -> list[list[str]]:
    """``rows`` with each label that recurs under two or more row headings named with
    its heading: under "Americas:" and "Europe:", each "Net sales" is that region's
    ("Americas Net sales"), never the company's. A measure's breakdown ("Products" under
    "Cost of sales:"), a share class, and a label under one heading alone are left to
    :class:`~clearance.ingest.loaders.common.RowHeading`."""
    heading = ""
    under: list[str] = []  # the heading each row stands under ("" for none)
    for row in rows:
        if row[0].endswith(":") and not any(row[1:]):
            heading = row[0]
        under.append(heading)
    seen: dict[str, set[str]] = {}
    for row, head in zip(rows, under, strict=True):
        if head and any(row[1:]):
            seen.setdefault(row[0].casefold(), set()).add(head)
    return [
        [f"{head[:-1].strip()} {row[0]}", *row[1:]]
        if head
        and any(row[1:])
        and len(seen.get(row[0].casefold(), ())) > 1
        and not heading_names_row(head, row[0])
        else list(row)
        for row, head in zip(rows, under, strict=True)
    ]


def _cells_of(line: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figures a line sets after its label: those after its last word that is no
    figure, currency sign or dash (an account's number opening its label, "4105 - Earned
    Income", is the label's)."""
    last = max(
        (k for k, w in enumerate(line) if not (_figure_word(w) or _CELL_MARK.match(w["text"]))),
        default=-1,
    )
    return [w for w in line[last + 1 :] if _figure_word(w)]


def _figure_run(
    lines: Sequence[Sequence[dict[str, Any]]], i: int
) -> tuple[int, int, list[float]] | None:
    """The lines from ``i`` on that are rows of one table: rows of figures whose right
    edges fall in the same columns, and label lines between them (a heading such as "Net
    sales:"); ``(first, end, column right edges)`` when there are at least
    :data:`MIN_ALIGNED_ROWS` rows of two or more figures, else ``None``."""
    figures = _cells_of(lines[i])
    if not figures:
        return None
    columns = sorted(w["x1"] for w in figures)
    texts = [w["text"] for w in figures]
    rows, end, j = 1, i + 1, i + 1
    while j < len(lines):
        line = lines[j]
        found = _cells_of(line)
        if not found:
            if any(w["x1"] > columns[0] - 2 * _COLUMN_SLACK for w in line):
                break  # text reaching into the figures' columns: the table has ended
            j += 1
            continue
        if not all(any(abs(w["x1"] - c) <= _COLUMN_SLACK for c in columns) for w in found):
            break
        texts.extend(w["text"] for w in found)
        rows, end, j = rows + 1, j + 1, j + 1
    if len(columns) == 1:
        if rows < MIN_COLUMN_ROWS or not _amounts(texts):
            return None
    elif rows < MIN_ALIGNED_ROWS:
        return None
    return i, end, columns


def _amounts(figures: Sequence[str]) -> bool:
    """Whether most of a column's ``figures`` are amounts as a statement prints them, with
    a thousands separator or decimals ("36,225.00", "(140.02)"): a column of small whole
    numbers is as likely a contents page's page numbers."""
    shown = sum(1 for f in figures if "," in f or "." in f)
    return shown * 2 > len(figures)


def _aligned_table(
    lines: Sequence[Sequence[dict[str, Any]]], start: int, end: int, columns: Sequence[float]
) -> tuple[list[str], list[list[str]], tuple[float, float, float, float]] | None:
    """The header (each column's, ``""`` where none stands over it), the rows of the table
    whose rows of figures are ``lines[start:end]`` and its bounding box (from its
    header's top); ``None`` when a row does not read without guessing."""
    lefts = [
        min(
            w["x0"]
            for line in lines[start:end]
            for w in line
            if _figure_word(w) and abs(w["x1"] - c) <= _COLUMN_SLACK
        )
        for c in columns
    ]
    label_edge = lefts[0] - _COLUMN_SLACK
    while start > 0 and all(w["x1"] <= label_edge for w in lines[start - 1]):
        start -= 1  # a row heading right under the header ("Net sales:")
    data: list[list[str]] = []
    for line in lines[start:end]:
        label = [w for w in line if w["x1"] <= label_edge and not _CURRENCY_SIGN.match(w["text"])]
        cells = [""] * len(columns)
        currency = ""  # a currency sign set apart before the next figure ("$ 60,584")
        for w in line:
            text = w["text"]
            if _CURRENCY_SIGN.match(text):
                currency = text
                continue
            if w["x1"] <= label_edge:
                continue  # a word of the label ("4105 - Earned Income")
            col = _nearest(columns, w["x1"])
            if col is None or cells[col] or not (_figure_word(w) or _CELL_MARK.match(text)):
                return None  # a word outside the columns, or two figures in one
            cells[col], currency = currency + text, ""
        text = " ".join(w["text"] for w in label)
        if any(cells) and not text:
            return None  # figures with no label: nothing says what they are
        data.append([text, *cells])
    labels_end = max(
        (w["x1"] for line in lines[start:end] for w in line if w["x1"] <= label_edge), default=0.0
    )
    header, top = _aligned_header(lines, start, columns, lefts, labels_end)
    words = [w for line in lines[start:end] for w in line]
    bbox = (
        min(w["x0"] for w in words),
        top,
        max(w["x1"] for w in words),
        max(w["bottom"] for w in words),
    )
    return header, data, bbox


def _nearest(columns: Sequence[float], x1: float) -> int | None:
    best = min(range(len(columns)), key=lambda k: abs(columns[k] - x1))
    return best if abs(columns[best] - x1) <= _COLUMN_SLACK else None


def _aligned_header(
    lines: Sequence[Sequence[dict[str, Any]]],
    start: int,
    columns: Sequence[float],
    lefts: Sequence[float],
    labels_end: float,
) -> tuple[list[str], float]:
    """Each column's header from the lines right above the table's rows whose words all
    stand over the columns (a line reaching left of them, a title or a note, ends the
    header, as does one standing over none of them or starting left of the first column's
    reach, a title centred on the page; notes in parentheses at the left
    margin of a header line are passed over), each phrase given to the columns
    whose centres it reaches within half their spacing, the nearest where two do (a lone
    column: the phrases standing over it). A phrase within the width of one of the line next
    to it heads the columns that one heads too: "June 30," under "Three Months Ended", over
    both the year columns that spans, wherever the publisher aligned it. ``(headers, the header's top)``, ``""`` for a
    column nothing stands over."""
    centres = [(left + right) / 2 for left, right in zip(lefts, columns, strict=True)]
    # a phrase heads the columns whose centres it reaches within half a column's spacing
    reach = min((b - a for a, b in itertools.pairwise(centres)), default=0.0) / 2

    def heads(phrase: tuple[float, float, str]) -> set[int]:
        if len(columns) == 1:  # no neighbour to share it with: what overlaps the column
            return (
                {0}
                if phrase[1] >= lefts[0] - _COLUMN_SLACK and phrase[0] <= columns[0] + _COLUMN_SLACK
                else set()
            )
        return {k for k, c in enumerate(centres) if phrase[0] - reach <= c <= phrase[1] + reach}

    rows: list[list[tuple[tuple[float, float, str], set[int]]]] = []  # top to bottom
    first = min(lefts) - reach - _COLUMN_SLACK  # where the columns' headers may begin
    top = lines[start][0]["top"]
    j = start - 1
    while j >= 0:
        over = [w for w in lines[j] if w["x0"] > labels_end + _PHRASE_GAP]
        left = " ".join(w["text"] for w in lines[j] if w["x0"] <= labels_end + _PHRASE_GAP)
        if left and not (over and _NOTES.fullmatch(left)):
            break  # a title or a note across the page; a note at the left margin beside
            # the header's words ("(In millions) (Unaudited)  December 31,") leaves them
        row = [(phrase, heads(phrase)) for phrase in _phrases(over)]
        if not any(reached for _, reached in row) or any(p[0] < first for p, _ in row):
            break  # a line over no column, or reaching left of them: a title, no header
        rows.insert(0, row)
        top = min(w["top"] for w in lines[j])
        j -= 1
    for _ in rows:  # a phrase within a group's phrase heads the group's columns
        for r, row in enumerate(rows):
            for beside in rows[max(r - 1, 0) : r + 2]:
                for phrase, reached in row:
                    for other, wider in beside:
                        if wider > reached and _within(phrase, other):
                            reached |= wider
    parts: list[list[str]] = [[] for _ in columns]
    for row in rows:
        for k, centre in enumerate(centres):
            heading = [phrase for phrase, reached in row if k in reached]
            if heading:
                parts[k].append(min(heading, key=lambda p: abs((p[0] + p[1]) / 2 - centre))[2])
    return [" ".join(p) for p in parts], top


# Notes in parentheses, as a statement sets them at the left of its header lines.
_NOTES = re.compile(r"\s*(?:\([^()]{1,80}\)\s*)+")


def _within(phrase: tuple[float, float, str], other: tuple[float, float, str]) -> bool:
    """Whether ``phrase`` stands within ``other``'s width, give or take a phrase gap."""
    return phrase[0] >= other[0] - _PHRASE_GAP and phrase[1] <= other[1] + _PHRASE_GAP


#: The most lines a title block over a table holds (whom, which statement, when, a note).
_TITLE_LINES = 4


def _title_block(
    lines: Sequence[Sequence[dict[str, Any]]], floor: float, top: float
) -> tuple[str, ...]:
    """The lines between ``floor`` and a table's ``top``, nearest first, where they are a
    title block: at most :data:`_TITLE_LINES` lines, each short and no sentence ("The
    Carpentries, Inc" over "Statement of Activity" over "January-December, 2025"); else
    none."""
    texts = [" ".join(w["text"] for w in line) for line in _between(lines, floor, top)]
    # a line of nothing but an icon font's glyph (private use: "\uf013") says nothing
    texts = [t for t in texts if any(unicodedata.category(c)[0] not in "ZC" for c in t)]
    if len(texts) > _TITLE_LINES or not all(map(_titles, texts)):
        return ()
    return tuple(reversed(texts))


def _titles(line: str) -> bool:
    """Whether ``line`` may be a line of a title block: a title (:func:`is_title_line`), or
    one naming a statement and its period after a colon ("Community Initiatives - 6363 -
    Statement of Revenue & Expenses: Jan - Dec 2024")."""
    head, colon, tail = line.partition(": ")
    return is_title_line(line) or bool(
        colon and is_title_line(head) and _NAMES_YEAR.search(tail) and len(line) <= 100
    )


def _title_period(
    lines: Sequence[Sequence[dict[str, Any]]], floor: float, top: float
) -> str | None:
    """The one line between ``floor`` and a table's ``top`` that names a year, as a
    statement's title block states its period under its name ("Statement of Activity" over
    "January-December, 2025"); ``None`` when none does or several do."""
    dated = {
        text
        for line in _between(lines, floor, top)
        if _NAMES_YEAR.search(text := " ".join(w["text"] for w in line))
    }
    return dated.pop() if len(dated) == 1 else None


def _between(
    lines: Sequence[Sequence[dict[str, Any]]], floor: float, top: float
) -> list[Sequence[dict[str, Any]]]:
    """The lines wholly between ``floor`` and ``top`` (a table's header line, starting a
    little above its first word, is not one)."""
    return [
        line
        for line in lines
        if min(w["top"] for w in line) >= floor - _TOLERANCE
        and max(w["bottom"] for w in line) <= top + _TOLERANCE
    ]


def _phrases(line: Sequence[dict[str, Any]]) -> list[tuple[float, float, str]]:
    """A header line's words joined into phrases where they stand closer than
    :data:`_PHRASE_GAP`: ``(x0, x1, text)``."""
    out: list[tuple[float, float, str]] = []
    for w in line:
        if out and w["x0"] - out[-1][1] <= _PHRASE_GAP:
            x0, _, text = out[-1]
            out[-1] = (x0, w["x1"], f"{text} {w['text']}")
        else:
            out.append((w["x0"], w["x1"], w["text"]))
    return out


def _is_grid(table: Any) -> bool:
    """Whether a pdfplumber table has at least two rows and two columns (a box drawn
    around a paragraph is one cell)."""
    return (
        len(_edges(c[1] for c in table.cells)) >= 2 and len(_edges(c[0] for c in table.cells)) >= 2
    )


def _edges(values: Any) -> list[float]:
    """Distinct coordinates, those closer than the tolerance taken as one."""
    out: list[float] = []
    for value in sorted(values):
        if not out or value - out[-1] > _TOLERANCE:
            out.append(value)
    return out


def _slot(edges: Sequence[float], start: float, end: float) -> int | None:
    """The index of the interval between ``edges`` that holds ``start``–``end`` whole
    (give or take the tolerance), or ``None`` when it crosses an edge or lies outside."""
    middle = (start + end) / 2
    for i in range(len(edges) - 1):
        if edges[i] <= middle < edges[i + 1]:
            if start >= edges[i] - _TOLERANCE and end <= edges[i + 1] + _TOLERANCE:
                return i
            return None
    return None


def _read_grid(table: Any, words: Sequence[dict[str, Any]]) -> list[list[str]] | None:
    """The table's rows of cell texts, header first, or ``None`` when its structure is
    doubtful (the module docstring lists the rules)."""
    x0, top, x1, bottom = table.bbox
    xs = _edges([c[0] for c in table.cells] + [c[2] for c in table.cells])
    ys = _edges([c[1] for c in table.cells] + [c[3] for c in table.cells])
    cells: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for word in words:
        if word["bottom"] <= top or word["top"] >= bottom:
            continue  # above or below the table
        if word["x1"] <= x0 or word["x0"] >= x1:
            if top <= (word["top"] + word["bottom"]) / 2 <= bottom:
                return None  # text beside the rows: the rules do not enclose the table
            continue
        col = _slot(xs, word["x0"], word["x1"])
        at = _slot(ys, word["top"], word["bottom"])
        if col is None or at is None:
            return None  # a word across a cell edge or the table's border
        cells.setdefault((at, col), []).append(word)
    grid = [
        [_cell_text(cells.get((r, c), [])) for c in range(len(xs) - 1)] for r in range(len(ys) - 1)
    ]
    grid = [row for row in grid if any(row)]
    filled = [c for c in range(len(xs) - 1) if any(row[c] for row in grid)]
    grid = [[row[c] for c in filled] for row in grid]
    if len(grid) < 2 or len(filled) < 2:
        return None
    header = grid[0]
    if any(not cell for cell in header[1:]):
        return None  # a column with no header: nothing says what it holds
    if any(_is_figure(cell) and not _YEAR.match(cell) for cell in header):
        return None  # figures in the first row: the table has no header row
    for row in grid[1:]:
        if any(sum(1 for w in cell.split() if _is_figure(w)) > 1 for cell in row):
            return None  # two figures in one cell: columns merged
    figures = [any(_is_figure(cell) for cell in row) for row in grid[1:]]
    if not figures[0]:
        return None  # a second heading row (units, a group's names) or no figures at all
    return grid


def _is_figure(text: str) -> bool:
    return bool(_FIGURE.match(text))


def _cell_text(words: Sequence[dict[str, Any]]) -> str:
    """A cell's words in reading order: lines top to bottom, words left to right."""
    return collapse(" ".join(w["text"] for w in _reading_order(words)))


def _reading_order(words: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    lines: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        if lines and abs(word["top"] - lines[-1][0]["top"]) <= (word["bottom"] - word["top"]) / 2:
            lines[-1].append(word)
        else:
            lines.append([word])
    return [w for line in lines for w in sorted(line, key=lambda w: w["x0"])]


def _blocks_above(
    words: Sequence[dict[str, Any]], bbox: tuple[float, float, float, float], floor: float
) -> list[str]:
    """The text between ``floor`` and the table's top, over its width, as blocks of lines
    (a gap of more than half a line starts a new block): what may caption the table. None
    when the last of them ends more than :data:`_CAPTION_GAP` lines above the table."""
    x0, top, x1, _ = bbox
    mine = [
        w
        for w in words
        if w["top"] >= floor and w["bottom"] <= top + _TOLERANCE and w["x1"] > x0 and w["x0"] < x1
    ]
    lines: list[list[dict[str, Any]]] = []
    for word in _reading_order(mine):
        if lines and abs(word["top"] - lines[-1][0]["top"]) <= (word["bottom"] - word["top"]) / 2:
            lines[-1].append(word)
        else:
            lines.append([word])
    blocks: list[list[str]] = []
    previous_bottom: float | None = None
    height = 0.0
    for line in lines:
        line_top = min(w["top"] for w in line)
        height = max(w["bottom"] for w in line) - line_top
        if previous_bottom is None or line_top - previous_bottom > height / 2:
            blocks.append([])
        blocks[-1].append(" ".join(w["text"] for w in line))
        previous_bottom = max(w["bottom"] for w in line)
    if previous_bottom is None or top - previous_bottom > _CAPTION_GAP * height:
        return []  # the text above is not next to the table: it says nothing of it
    return ["\n".join(block) for block in blocks]
