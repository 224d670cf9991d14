"""Facts from tables: every numeric table cell whose labels name a metric, an entity and a
period becomes a :class:`~clearance.model.Fact` (docs/design.md §2, §5).

Nothing here knows any company: what counts as a metric, an entity, a channel or a unit,
and which strings are periods, comes from the ``[facts]`` vocabulary
(:class:`~clearance.config.FactSettings`). The same :class:`Vocabulary` matcher is used by
the question parser (:mod:`clearance.answer.intent`) and the structured tool
(:mod:`clearance.answer.structured`), so a table label and a question are read alike.

Matching rules (:class:`Vocabulary`):

* text and aliases are normalised with NFKC (full-width digits and letters become ASCII),
  whitespace runs collapse, and comparison is by ``casefold`` with Latin letters' accents
  left out (``Nestlé`` ~ ``Nestle``; kana keep their marks); a space inside an alias also
  matches no space (``operating profit`` ~ ``OperatingProfit``);
* an alias edge that is a Latin letter or digit only matches on a word boundary, judged on
  Latin letters and digits alone, so ``US`` never matches inside ``USD`` but ``Japan``
  matches in ``ACME Japanの``; CJK aliases match anywhere;
* an alias written in capitals of two to four letters (``US``, ``EU``, ``USA``) is an
  acronym and matches only in capitals, so the pronoun "us" is not the entity "US";
* overlapping matches of one kind resolve to the longest (``ACME Japan`` over ``Japan``;
  ``2025年度第3四半期`` is ``Q3 2025``, not ``FY2025``). Period patterns are also tried with
  a space between CJK and Latin text, so ``\\b`` in a pattern works in ``FY2024の``;
* a table label is read for every kind at once (:meth:`Vocabulary.read`), and where
  matches of two kinds overlap the longer wins: with the unit ``US$ m`` configured,
  ``Revenue (US$m)`` names no entity ``US``. Letters right before a currency symbol are
  never an alias on their own either (``US$``, ``HK$``).

Extraction rules (:func:`extract_facts`): for a numeric cell, the contexts are tried
nearest first — the cell's own unit text, the row label, the column header, the other
label cells of the row (long format: ``Region | Fiscal year | Revenue``), the table's
top-left cell (``Japan`` above metric rows and period columns, or ``Revenue (USD m)``
above entity rows), the text right above the table that says what its figures are (a
note such as ``(in thousands)`` and the sentence introducing it: ``Section.captions``), the
section's titles (a chart's title, the slide title), the locator's heading path (innermost
first) or sheet name, then the document title. For
each slot, the nearest context that matches anything decides; if it names two different
values the slot is ambiguous and the cell is skipped. Metric, entity and period must all
resolve; the channel defaults to ``default_channel`` and the unit to
``metric_units[metric]`` (else ``""``).

Never a guess:

* unit-looking text that no configured unit accounts for — a currency symbol or code, a
  scale word, ``%`` — in the cell's own text, in a table label's parentheses
  (``Revenue (EUR k)``) or in a title up to the one that named the metric, means the value
  may be in another currency or scale: the cell is skipped rather than given the
  metric's default unit;
* footnote markers are not part of the number (``1,702*`` and ``1,702¹`` are 1702; the
  cell as written stays in :attr:`Fact.raw`) nor of a label (``Revenue¹``);
* ``—``, ``-``, ``n/a`` and empty cells are no number, so they are no fact (never 0);
  ``(12.5)`` is −12.5.
* a part of a year that the table's own labels name (a column headed ``Nine Months Ended
  March 31``) is never replaced by another part a title names (``… for the quarter ended
  March 31, 2025``): the title may only give the year (``9M ended Mar 2025``), and where it
  cannot — a fiscal quarter says nothing about which calendar year a month is in — the
  cell is skipped with a warning (:meth:`_Extractor._narrow`).

A header of two rows, as :class:`~clearance.ingest.loaders.common.SheetPacker` combines
it (``Three Months Ended March 31 — Net Sales``), names both the column's period and its
measure: the row labels are then lines of that measure (``Beauty``; ``Total Company`` is
the total), not the measure. A column's part of a year written with no year takes its
row's year label (``Nine Months Ended March 31`` in the row ``Beauty | 2024`` is ``9M ended
Mar 2024``); a column with no header whose cells are all years holds such labels, not
figures.

A long-format table (a column of years headed ``fiscal_year``, ``Year`` or ``年度`` beside a
column of the row's value headed ``value``, ``actual_value`` or ``amount``, or beside
columns of labels) gives one fact per row and numeric column (:meth:`_Extractor._long_fact`):
the label columns name, by their headers, whom, what is measured and its line; a column
headed as a share gives the line's percentage.

A cell that fails for any reason is skipped, never the document. A table that names a
metric but whose values were skipped (no entity or period, two of one, an unknown unit)
is reported through ``warn``, one line per table and reason with its locator.
"""

from __future__ import annotations

import bisect
import calendar
import copy
import dataclasses
import functools
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from clearance import glossary
from clearance.config import FactSettings, fiscal_year_start_month
from clearance.countries import country_name, country_names
from clearance.ingest.locator import format_locator, parse_locator
from clearance.model import LABEL_SEPARATOR, Fact, Section

__all__ = [
    "AT_END",
    "CURRENCY_CODES",
    "ENTITY_NAMES_KEY",
    "MONTH_NAMES",
    "MONTH_PERIOD",
    "YEAR_ENDS_KEY",
    "Match",
    "ParsedNumber",
    "ReadKind",
    "Reading",
    "SlotKind",
    "Vocabulary",
    "combine_period",
    "document_entity",
    "entity_aliases",
    "extract_facts",
    "fiscal_year_end",
    "format_number",
    "january_year_named",
    "measure_name",
    "metric_aliases",
    "normalize",
    "parse_number",
    "partial_markers",
    "periods_without_year",
    "sub_markers",
    "vocab_fingerprint",
    "year_to_quarter",
]

log = logging.getLogger(__name__)

SlotKind = Literal["metric", "entity", "channel", "unit"]

_SPACE = re.compile(r"\s+")
_CURRENCY = "$¥€£₩₹"
_LATIN = "0-9A-Za-z\u00c0-\u024f"
_LATIN_CHAR = re.compile(f"[{_LATIN}]")
_ACRONYM = re.compile(r"^[A-Z]{2,4}$")
_MAX_LABEL = 120

# Shapes that look like a period whatever the configured forms say; one not covered by a
# recognised period is reported as unrecognised ("FY20245", "Q5 2024").
_PERIODISH = (
    re.compile(r"\b(?:FY|CY)\s*'?\d+\w*", re.IGNORECASE),
    re.compile(r"\bQ\d+\b(?:\s*(?:FY)?\s*'?\d+\b)?", re.IGNORECASE),
    re.compile(r"\b\d+\s*Q\d+\b", re.IGNORECASE),
    re.compile(r"\bfiscal\s+(?:year\s+)?'?\d+\w*", re.IGNORECASE),
    re.compile(r"\d+\s*年度(?:\s*第\s*\d+\s*四半期)?"),
    re.compile(r"第\s*\d+\s*四半期"),
)


def normalize(text: str) -> str:
    """NFKC, whitespace runs → one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def _is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _spaced(text: str) -> tuple[str, list[int]]:
    """``text`` with a space between wide (CJK) characters and ASCII letters/digits, and a
    map from each index of the result to the index of ``text`` it came from."""
    out: list[str] = []
    index: list[int] = []
    for i, char in enumerate(text):
        if i and (
            (_is_wide(text[i - 1]) and char.isascii() and char.isalnum())
            or (_is_wide(char) and text[i - 1].isascii() and text[i - 1].isalnum())
        ):
            out.append(" ")
            index.append(i)
        out.append(char)
        index.append(i)
    index.append(len(text))
    return "".join(out), index


def _fold(char: str) -> str:
    """One character casefolded, and a Latin letter without its accents: "Nestlé" is
    asked as "Nestle" as often as not, and a file name never has the accent."""
    if "\u00c0" <= char <= "\u024f":
        char = "".join(
            c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c)
        )
    return char.casefold()


def _fold_text(text: str) -> str:
    """``text`` as aliases are matched: casefolded, Latin letters without accents."""
    return "".join(_fold(c) for c in text)


def _folded(text: str) -> tuple[str, list[int]]:
    """:func:`_fold_text` of ``text`` with a map back to ``text`` (casefold may change lengths)."""
    out: list[str] = []
    index: list[int] = []
    for i, char in enumerate(text):
        folded = _fold(char)
        out.append(folded)
        index.extend([i] * len(folded))
    index.append(len(text))
    return "".join(out), index


@dataclass(frozen=True, slots=True)
class Match:
    """One recognised span of a normalised text: ``text[start:end]`` means ``canonical``."""

    canonical: str
    start: int
    end: int


ReadKind = Literal["metric", "entity", "channel", "unit", "period"]
_SLOT_KINDS: tuple[SlotKind, ...] = ("metric", "entity", "channel", "unit")
_READ_KINDS: tuple[ReadKind, ...] = (*_SLOT_KINDS, "period")


@dataclass(frozen=True, slots=True)
class Reading:
    """What :meth:`Vocabulary.read` found in one text: the normalised text, the distinct
    canonical values per kind (in order of appearance) and the spans they cover."""

    text: str
    values: Mapping[ReadKind, tuple[str, ...]]
    spans: tuple[tuple[int, int], ...]

    def residue(self) -> str:
        """The text with every recognised span blanked out."""
        chars = list(self.text)
        for start, end in self.spans:
            chars[start:end] = " " * (end - start)
        return "".join(chars)


@dataclass(frozen=True, slots=True)
class _Alias:
    canonical: str
    pattern: re.Pattern[str]
    folded: bool  # matched against the casefolded text (else: the NFKC text, acronyms)


def _alias_pattern(alias: str) -> re.Pattern[str]:
    """An alias as text may write it: its words apart, together or hyphenated ("Coca Cola",
    as a filing's cover names the company, is the question's "Coca-Cola")."""
    tokens = [t for t in re.split(r"[\s\-‐]+", alias) if t] or [alias]
    body = r"[\s\-‐]*".join(re.escape(t) for t in tokens)
    if _LATIN_CHAR.match(alias[0]):
        body = f"(?<![{_LATIN}])" + body
    if _LATIN_CHAR.match(alias[-1]):
        # a currency symbol right after letters makes them a currency ("US$", "HK$")
        body = body + f"(?![{_LATIN}{re.escape(_CURRENCY)}])"
    return re.compile(body)


class _Spans:
    """Disjoint ``[start, end)`` spans kept sorted, so checking a new span for overlap is a
    binary search instead of a scan of every span taken so far."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self._starts, start)
        if i < len(self._starts) and self._starts[i] < end:
            return True
        return i > 0 and self._ends[i - 1] > start

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self._starts, self._ends, strict=True))


def _longest(matches: Iterable[Match]) -> list[Match]:
    """Non-overlapping matches, longest first (then leftmost), returned in text order."""
    taken = _Spans()
    chosen: list[Match] = []
    for m in sorted(set(matches), key=lambda m: (-(m.end - m.start), m.start, m.canonical)):
        if not taken.overlaps(m.start, m.end):
            taken.add(m.start, m.end)
            chosen.append(m)
    return sorted(chosen, key=lambda m: (m.start, m.end))


def _distinct(matches: Iterable[Match]) -> list[str]:
    return list(dict.fromkeys(m.canonical for m in matches))


# --------------------------------------------------------------------------- partial periods

MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_COUNT_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
}  # fmt: skip
_KANJI_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4}
_ENDING_YEAR = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*期")
_LW = r"(?<![0-9A-Za-z])"
_RW = r"(?![0-9A-Za-z])"


def _month(word: str) -> str:
    return MONTH_NAMES[[m.casefold() for m in MONTH_NAMES].index(word[:3].casefold())]


def _month_number(text: str) -> str | None:
    n = int(text)
    return MONTH_NAMES[n - 1] if 1 <= n <= 12 else None


def _count(text: str) -> int | None:
    n = _COUNT_WORDS.get(text.casefold()) or (int(text) if text.isdigit() else None)
    return n if n is not None and 1 <= n <= 11 else None


def _months_marker(m: re.Match[str]) -> str | None:
    first, last = _month_number(m.group(1)), _month_number(m.group(2))
    return f"{first}–{last}" if first and last else None


def _count_marker(m: re.Match[str]) -> str | None:
    n = _count(m.group(1))
    return f"{n}M" if n is not None else None


# Retailers' 52–53-week years count weeks: a quarter is 13 of them, a half 26, nine months
# 39, and each ends on a weekday near a month's end ("Thirteen Weeks Ended November 2,
# 2024" is the quarter of August to October). Read only with the date it ends on: weeks
# of a year said no other way are no period at all (:func:`_with_partials`).
_WEEK_COUNTS = {
    "thirteen": 13, "twenty-six": 26, "twenty six": 26, "thirty-nine": 39,
    "thirty nine": 39, "fifty-two": 52, "fifty two": 52, "fifty-three": 53,
    "fifty three": 53,
}  # fmt: skip
_WEEK_MONTHS = {13: 3, 26: 6, 39: 9, 52: 12, 53: 12}
_WEEK_WORDS = "|".join(word.replace(" ", r"\s+") for word in _WEEK_COUNTS)
_WEEKS_ENDED = re.compile(rf"{_LW}(\d{{2}}|{_WEEK_WORDS})[\s-]weeks?{_RW}", re.I)


def _weeks_marker(m: re.Match[str]) -> str | None:
    word = re.sub(r"\s+", " ", m.group(1).casefold())
    n = _WEEK_COUNTS.get(word) or (int(word) if word.isdigit() else None)
    return f"{n}W" if n in _WEEK_MONTHS else None


def _month_ended(month: int, day: str, year: int) -> tuple[int, int]:
    """The month and year a span counted to a day of ``month`` of ``year`` ends in. A
    52–53-week company's weeks (and the months it counts) end within a week of a month's
    end, so a day in a month's first week ends the month before (November 2, 2024 ends
    October 2024; January 3, 2026 ends December 2025; "3 Months Ended Nov. 02, 2019" is
    October's)."""
    if day and int(day) <= 7:
        return (month - 1, year) if month > 1 else (12, year - 1)
    return month, year


# A label or question words that say a figure covers part of a period: the marker each
# form is written as in a canonical partial period ("Oct–Jun FY2023", "9M FY2024").
_PARTIAL_FORMS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]], ...] = (
    (
        re.compile(rf"{_LW}{_MONTH}\s*(?:-|–|—|~|to|through|thru)\s*{_MONTH}(?![A-Za-z])", re.I),
        lambda m: f"{_month(m.group(1))}–{_month(m.group(2))}",
    ),
    (
        re.compile(
            rf"{_LW}(?:through|thru|until|to\s+the\s+end\s+of)\s+{_MONTH}(?![A-Za-z])", re.I
        ),
        lambda m: f"through {_month(m.group(1))}",
    ),
    (re.compile(r"(\d{1,2})\s*月?\s*[-–~〜～至]\s*(\d{1,2})\s*月"), _months_marker),
    (_WEEKS_ENDED, _weeks_marker),
    (re.compile(rf"{_LW}(?:YTD|year[\s-]to[\s-]date){_RW}|年初来|年初至今", re.I), lambda m: "YTD"),
    # "9M", and "12M" as an offered span is written ("12M ended Jan 2025": :func:`_ended`)
    (
        re.compile(rf"{_LW}(\d{{1,2}})M{_RW}"),
        lambda m: "12M" if m.group(1) == "12" else _count_marker(m),
    ),
    (
        re.compile(
            rf"{_LW}(?:first\s+)?(\d{{1,2}}|{'|'.join(_COUNT_WORDS)})[\s-]months?{_RW}", re.I
        ),
        _count_marker,
    ),
    # "the quarter ended December 31, 2023", "Half-Year Ended June 30": a count of months
    # by name, read with the month it ends in as "Three Months Ended" is
    (
        re.compile(r"(?<![A-Za-z])quarter(?=\s+end(?:ed|ing)\s)", re.I),
        lambda m: "3M",
    ),
    (
        re.compile(r"(?<![A-Za-z])half[\s-]?year(?=\s+end(?:ed|ing)\s)", re.I),
        lambda m: "6M",
    ),
    # "12 Months Ended Dec. 31, 2024", "Year Ended December 31, 2024": a whole year that
    # ends in a named month, read with that month (:func:`_ended`) as the fiscal year
    (
        re.compile(
            rf"{_LW}(?:(?:12|twelve)[\s-]months?|(?:fiscal\s+)?year)(?=\s+end(?:ed|ing)\s)", re.I
        ),
        lambda m: "12M",
    ),
    (
        re.compile(rf"{_LW}(?:Q([1-4])\s*[-–~]\s*Q|([1-4])Q\s*[-–~]\s*)([1-4])Q?{_RW}", re.I),
        lambda m: f"Q{m.group(1) or m.group(2)}–Q{m.group(3)}",
    ),
    (re.compile(r"第\s*([1-4])\s*四半期\s*累[計计]"), lambda m: f"Q1–Q{m.group(1)}"),
    (
        re.compile(rf"{_LW}first\s+(two|three|2|3)\s+quarters{_RW}", re.I),
        lambda m: _first_quarters(
            {"two": "2", "three": "3"}.get(m.group(1).casefold(), m.group(1))
        ),
    ),
    (
        re.compile(r"前\s*([一二三四1-4])\s*(?:个|個)?\s*季度"),
        lambda m: _first_quarters(m.group(1)),
    ),
    (re.compile(r"累[計计]"), lambda m: "YTD"),
)
# A half or a quarter named without its year ("H1", 上半期, 第3四半期): in a table label, of
# the year another label names.
_SUB_FORMS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(rf"{_LW}(?:H([12])|([12])H){_RW}"), lambda m: f"H{m.group(1) or m.group(2)}"),
    (re.compile(rf"{_LW}first\s+half{_RW}|上半期|上期|上半年度?", re.I), lambda m: "H1"),
    (re.compile(rf"{_LW}second\s+half{_RW}|下半期|下期|下半年度?", re.I), lambda m: "H2"),
    (re.compile(rf"{_LW}(?:Q([1-4])|([1-4])Q){_RW}"), lambda m: f"Q{m.group(1) or m.group(2)}"),
    (
        re.compile(r"第\s*([1-4一二三四])\s*(?:四半期|季度?)"),
        lambda m: f"Q{_KANJI_DIGITS.get(m.group(1)) or m.group(1)}",
    ),
)
_YEAR_PERIOD = re.compile(r"^(?:FY|CY)(\d{4})$")
_BARE_YEAR = re.compile(r"(?<![0-9A-Za-z'/.\-])((?:19|20)\d{2})(?![0-9/.]|[A-Za-z]{2})")
# What may stand between a partial marker and the year it qualifies ("Oct–Jun, FY2023",
# "nine months of 2024", "2024年1-9月").
_JOIN = re.compile(
    rf"^[\s,;:/()（）年]*(?:(?:of|in|ended|ending)\s+(?:the\s+)?(?:{_MONTH}\s*\d{{0,2}},?\s*)?)?"
    r"(?:FY\s*)?$",
    re.I,
)


def _first_quarters(text: str) -> str | None:
    n = _KANJI_DIGITS.get(text) or (int(text) if text.isdigit() else None)
    return f"Q1–Q{n}" if n is not None and 1 < n <= 4 else None


def partial_markers(text: str) -> list[Match]:
    """The partial-period markers of a normalised text, longest first where two overlap:
    ``Oct–Jun``, ``YTD``, ``9M``, ``Q1–Q3``, ``Jan–Mar`` (1–3月), ``through Jun``."""
    found = []
    for pattern, marker in _PARTIAL_FORMS:
        for m in pattern.finditer(text):
            value = marker(m)
            if value:
                found.append(Match(value, m.start(), m.end()))
    return _longest(found)


def sub_markers(text: str) -> list[Match]:
    """Halves and quarters named without a year (``H1``, 上半期, ``Q3``, 第3四半期)."""
    return _longest(
        Match(marker(m), m.start(), m.end())
        for pattern, marker in _SUB_FORMS
        for m in pattern.finditer(text)
    )


# Dates a table's title gives its figures ("(2023年4月1日~2023年9月30日)", "April 1 –
# September 30, 2023" is not read: a Japanese 決算短信 writes them so).
_DATE_SPAN = re.compile(
    r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*\d{1,2}\s*日\s*[-–~〜～至]\s*"
    r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*\d{1,2}\s*日"
)
_LATER_QUARTER = re.compile(r"^Q([2-4]) (\d{4})$")


def year_to_quarter(period: str | None) -> str | None:
    """``Q2 2024`` → ``Q1–Q2 FY2024``: the year to a quarter (not for the first). Also the
    same span written otherwise: ``H1 2024`` (the first half), ``6M FY2024`` and ``9M
    FY2024`` (the first six or nine months) are ``Q1–Q2 FY2024`` and ``Q1–Q3 FY2024``, as a
    Japanese or Chinese report heads its cumulative columns."""
    m = _LATER_QUARTER.match(period or "")
    if m:
        return f"Q1–Q{m.group(1)} FY{m.group(2)}"
    half = re.fullmatch(r"H1 (\d{4})", period or "")
    if half:
        return f"Q1–Q2 FY{half.group(1)}"
    months = re.fullmatch(r"([69])M FY(\d{4})", period or "")
    if months:
        return f"Q1–Q{int(months.group(1)) // 3} FY{months.group(2)}"
    return None


def _cumulative(period: str, contexts: Sequence[str]) -> str:
    """``Qn YYYY`` as :func:`year_to_quarter` gives it when a context's dates span ``3n``
    months (as Japanese quarterly results report it), else ``period``."""
    whole = year_to_quarter(period)
    if whole is None:
        return period
    # quarters to the one it ends with: "Q3 2024", "H1 2024" and "6M FY2024" alike
    n = int(whole.split(" ")[0][-1])
    for context in contexts:
        for m in _DATE_SPAN.finditer(context):
            months = (int(m.group(3)) - int(m.group(1))) * 12 + int(m.group(4)) - int(m.group(2))
            if months + 1 == 3 * n:
                return whole
    return period


def combine_period(period: str, marker: str) -> str | None:
    """A fiscal or calendar year narrowed by a marker: ``H1`` → ``H1 2024``, ``Oct–Jun`` →
    ``Oct–Jun FY2024``; ``None`` when ``period`` is not a whole year, or the marker is a
    whole year's twelve months or a count of weeks (read only with the month they end in:
    :func:`_ended`)."""
    m = _YEAR_PERIOD.match(period)
    if m is None or marker == "12M" or marker.endswith("W"):
        return None
    if re.fullmatch(r"[HQ][1-4]", marker):
        return f"{marker} {m.group(1)}"
    return f"{marker} {period}"


def _with_partials(
    norm: str, periods: list[Match], fiscal: Callable[[int, int], int | None] | None = None
) -> list[Match]:
    """``periods`` with each whole year that a partial marker right next to it narrows
    replaced by the partial period (``Actual, Oct–Jun FY2023`` → ``Oct–Jun FY2023``). A
    bare year next to a marker is a fiscal year (``9M 2024``)."""
    markers = [m for m in partial_markers(norm) if not _inside(m, periods)]
    markers += [m for m in sub_markers(norm) if not _overlaps(m, periods)]
    if not markers:
        return periods
    # A range that overlaps a quarter or half ("Q1–Q3 FY2024", where "Q3 FY2024" is also
    # a quarter) is of that quarter's year.
    for marker in list(markers):
        for p in [p for p in periods if p.start < marker.end and marker.start < p.end]:
            digits = re.search(r"\d{4}", p.canonical)
            if digits is None or _YEAR_PERIOD.match(p.canonical):
                continue
            periods = [q for q in periods if q is not p]
            periods.append(Match(f"FY{digits.group(0)}", p.start, p.end))
    periods.sort(key=lambda m: (m.start, m.end))
    years = list(periods)
    taken = _Spans()
    for p in periods:
        taken.add(p.start, p.end)
    for m in _BARE_YEAR.finditer(norm):
        if not taken.overlaps(m.start(), m.end()):
            years.append(Match(f"FY{m.group(1)}", m.start(), m.end()))
    out = list(periods)
    for marker in markers:
        for year in sorted(
            years, key=lambda y: min(abs(y.start - marker.end), abs(marker.start - y.end))
        ):
            if year.start >= marker.end:
                gap = norm[marker.end : year.start]
            elif year.end <= marker.start:
                gap = norm[year.end : marker.start]
            else:
                gap = ""
            combined = (
                _calendar_year(marker.canonical, year, fiscal)
                or _ended(marker.canonical, year, gap, fiscal)
                or combine_period(year.canonical, marker.canonical)
            )
            if combined is None and marker.canonical.endswith("W") and _JOIN.match(gap):
                # weeks of a year, not said when they end ("Thirteen Weeks 2024"): no
                # period, and never the year's
                if year in out:
                    out.remove(year)
                break
            if combined is None or (gap and not _JOIN.match(gap)):
                continue
            if year in out:
                out.remove(year)
            out.append(Match(combined, min(marker.start, year.start), max(marker.end, year.end)))
            break
    return sorted(out, key=lambda m: (m.start, m.end))


def _calendar_year(
    marker: str, year: Match, fiscal: Callable[[int, int], int | None] | None
) -> str | None:
    """``January - December 2024`` is no part of a year but twelve months ending in
    December 2024: the fiscal year the configured calendar names for them, as "12 Months
    Ended Dec. 31, 2024" is (a bookkeeping export heads its year so); ``None`` for any
    other marker."""
    digits = _YEAR_PERIOD.match(year.canonical)
    if marker != "Jan–Dec" or digits is None or fiscal is None:
        return None
    named = fiscal(int(digits.group(1)), 12)
    return f"FY{named}" if named is not None else None


_ENDED = re.compile(rf"^[\s,]*(?:ended|ending)\s+(?:the\s+)?{_MONTH}\s*(\d{{0,2}}),?\s*$", re.I)


def january_year_named(settings: FactSettings) -> bool:
    """Whether the configured calendar names the fiscal years that end in January: years
    starting in February, named by their start or their end as it says."""
    return fiscal_year_start_month(settings.fiscal_year_start) == 2


def _ended(
    marker: str, year: Match, gap: str, fiscal: Callable[[int, int], int | None] | None = None
) -> str | None:
    """``Three Months Ended December 31, 2023`` → ``3M ended Dec 2023``: a count of months
    that ends in a named month is that span, whatever the fiscal calendar. It is never
    read as part of a fiscal year (``3M FY2023``), which would name a different quarter for
    a company whose year does not end in December."""
    m = _ENDED.match(gap)
    digits = re.search(r"\d{4}", year.canonical)
    if m is None or digits is None or not re.fullmatch(r"\d{1,2}[MW]", marker):
        return None
    if not _YEAR_PERIOD.match(year.canonical):
        return None
    month, ended = _month_ended(
        MONTH_NAMES.index(_month(m.group(1))) + 1, m.group(2), int(digits.group(0))
    )
    if marker.endswith("W"):
        marker = f"{_WEEK_MONTHS[int(marker[:-1])]}M"
    if marker == "12M":
        # twelve months ended December 31, 2024 are the fiscal year that ends then: named
        # by the configured calendar where its years end in that month, else by the year
        # it ends in, as a 10-K names it (``fiscal``: year and month → the year's name);
        # a year ending in January that no calendar names is its span of months
        named = fiscal(ended, month) if fiscal is not None else ended
        if named is None:
            return f"12M ended {MONTH_NAMES[month - 1]} {ended}"
        return f"FY{named}"
    return f"{marker} ended {MONTH_NAMES[month - 1]} {ended}"


_TWELVE_MONTHS = re.compile(r"(?i)\b(?:twelve|12)\s+months?\s+ended\b")
_TRAILING = re.compile(r"(?i)\btrailing\s+(?:twelve|12)\s+months\b|\bTTM\b")
# A quarterly report's cover: "FORM 10-Q", "For the quarterly period ended …".
_QUARTERLY_COVER = re.compile(r"(?i)\bFORM\s+10-Q\b|\bquarterly\s+period\s+ended\b")


def _year_alone(fact: Fact, header: Sequence[str], col: int) -> bool:
    """Whether ``fact``'s whole year comes from a column header naming a year and nothing
    of its span ("2022", "2022 ($ in millions)")."""
    column = header[col] if col < len(header) else ""
    return bool(_YEAR_PERIOD.match(fact.period)) and not re.search(
        r"(?i)\b(?:year|fiscal|fy|annual|months?|weeks?|quarter|ended|ending)\b|\bFY\d", column
    )


def _trailing(fact: Fact, header: Sequence[str], col: int, quarterly: bool) -> Fact:
    """``fact`` of a column "Twelve Months Ended June 30, 2023" as the twelve months they
    are, ``12M ended Jun 2023``, where they trail a quarter (``quarterly``: under a
    caption saying "trailing", or in a document whose first page is a 10-Q's cover, as
    Amazon's 10-Q heads its free cash flow): no fiscal year, whatever month the company's
    years end in. A 10-K's twelve months stay its fiscal year, beside its fourth quarter's
    three months too."""
    column = header[col] if col < len(header) else ""
    found = _ENDED_IN.search(column)
    if (
        not quarterly
        or found is None
        or not _TWELVE_MONTHS.search(column)
        or not _YEAR_PERIOD.match(fact.period)
    ):
        return fact
    ended, year = _month_ended(
        MONTH_NAMES.index(_month(found.group(1))) + 1, found.group(2), int(found.group(3))
    )
    return dataclasses.replace(fact, period=f"12M ended {MONTH_NAMES[ended - 1]} {year}")


# "… Ended June 30, 2023": the month, day and year a span ends.
_ENDED_IN = re.compile(rf"(?i)end(?:ed|ing)\s+{_MONTH}\s*(\d{{0,2}}),?\s*((?:19|20)\d\d)")


_CHANGE_COLUMN = re.compile(
    r"增减|增減|同比|比上年|前年同期比|前期比|増減|増減率|(?i:\b(?:change|yoy|y/y|growth)\b)"
)
_CURRENT_COLUMN = re.compile(
    r"^(?:本报告期|本報告期|报告期|本期|当期|当四半期|(?i:current\s+period))$"
)
# The end of the report's own period (a balance: 本报告期末, 当四半期末) and the end of the
# year before (上年度末, 前連結会計年度末).
_END_COLUMN = re.compile(
    r"^(?:本报告期末|本報告期末|报告期末|本期末|当期末|当四半期末|当四半期会計期間末)$"
)
_PRIOR_END_COLUMN = re.compile(
    r"^(?:上年度末|上年末|上年年末|上一年度末|前年度末|前期末|前連結会計年度末|前事業年度末)$"
)
_YTD_COLUMN = re.compile(
    r"^(?:年初至报告期末|年初至本报告期末|年初至今|年初来|(?i:year[\s-]to[\s-]date|ytd))$"
)


def _reporting_column(header: str) -> str | None:
    """``"current"`` for a column headed by the report's own period (``本报告期``) or its
    end (``本报告期末``: a balance at the end of the quarter is that quarter's),
    ``"prior_end"`` for the end of the year before (``上年度末``: that year's), ``"ytd"`` for
    year-to-date (``年初至报告期末``), ``"change"`` for a column of changes against another
    period (``本报告期比上年同期增减``), else ``None``."""
    norm = normalize(_GROUP.sub(" ", _label(header))).strip()
    if not norm:
        return None
    if _CHANGE_COLUMN.search(norm):
        return "change"
    if _CURRENT_COLUMN.match(norm) or _END_COLUMN.match(norm):
        return "current"
    if _PRIOR_END_COLUMN.match(norm):
        return "prior_end"
    if _YTD_COLUMN.match(norm):
        return "ytd"
    return None


_ENDED_TAIL = re.compile(rf"\s+(?:ended|ending)\s+(?:the\s+)?{_MONTH}(?:\s*(\d{{1,2}}))?", re.I)


def periods_without_year(norm: str, taken: Sequence[tuple[int, int]]) -> list[Match]:
    """Parts of a year named with no year, outside the ``taken`` spans of periods that
    have one: ``six months ended December 31`` → ``6M ended Dec``, ``H1``, ``第3四半期`` →
    ``Q3``. A question naming one asks about a period whose year it leaves out."""
    found: list[Match] = []
    for m in [*partial_markers(norm), *sub_markers(norm)]:
        if any(start < m.end and m.start < end for start, end in taken):
            continue
        marker, end = m.canonical, m.end
        if re.fullmatch(r"\d{1,2}[MW]", marker) and (tail := _ENDED_TAIL.match(norm, m.end)):
            # the year does not matter here, only the month
            month, _ = _month_ended(
                MONTH_NAMES.index(_month(tail.group(1))) + 1, tail.group(2) or "", 2
            )
            if marker.endswith("W"):
                marker = f"{_WEEK_MONTHS[int(marker[:-1])]}M"
            marker, end = f"{marker} ended {MONTH_NAMES[month - 1]}", tail.end()
        elif marker.endswith("W"):
            continue
        found.append(Match(marker, m.start, end))
    return _longest(found)


_SPLIT_YEAR = re.compile(
    r"(?i:\b(?:FY|fiscal\s+(?:year\s+)?)\s*'?(?P<a>\d{4})\s*[/\-–]\s*(?P<b>\d{4}|\d{2})\b)"
    r"|(?P<c>\d{4})\s*[/\-–]\s*(?P<d>\d{4}|\d{2})\s*(?:年度|[财財]年度?)"
)


# "At the end of" written after a period (2023年第三季度末, 2022年底): a balance then is the
# period's (see _reporting_column), so the words belong to the period, not to the metric.
AT_END = re.compile(r"\s*(?:末|底)(?:时点|時点)?")


def _at_end(norm: str, matches: list[Match]) -> list[Match]:
    out = []
    for m in matches:
        after = AT_END.match(norm, m.end)
        out.append(Match(m.canonical, m.start, after.end()) if after else m)
    return out


def _inside(match: Match, spans: Sequence[Match]) -> bool:
    return any(s.start <= match.start and match.end <= s.end for s in spans)


def _overlaps(match: Match, spans: Sequence[Match]) -> bool:
    return any(s.start < match.end and match.start < s.end for s in spans)


# A word that makes a place another place when it stands before its name: "North America"
# is no part of "Americas", "South Korea" none of "Korea", "Greater China" none of "China".
_QUALIFIED_PLACE = re.compile(
    r"(?<![A-Za-z])(?:North|South|East|West|Central|Northern|Southern|Eastern|Western|Greater"
    r"|Latin|New)\s+$"
)


class Vocabulary:
    """The compiled ``[facts]`` vocabulary: finds metrics, entities, channels, units and
    periods in text. All methods take raw text and normalise it themselves; spans refer to
    :func:`normalize` of the text."""

    def __init__(self, settings: FactSettings, *, months: bool = False) -> None:
        self.settings = settings
        #: Whether single months ("July 2008", "2008-07", "2008年7月") are periods: always
        #: for reading tables; for reading questions only where a readable table has
        #: monthly figures (:func:`clearance.answer.structured.readable_vocabulary`), so a
        #: month asked about a document that states it in prose is read as before.
        self.months = months
        self._aliases: dict[SlotKind, list[_Alias]] = {
            "metric": self._compile(settings.metrics),
            "entity": self._compile(settings.entities),
            "channel": self._compile(settings.channels),
            "unit": self._compile(settings.units),
        }
        self._periods = [
            (re.compile(form.pattern, re.IGNORECASE), form.canonical) for form in settings.periods
        ]

    @staticmethod
    def _compile(table: Mapping[str, Sequence[str]]) -> list[_Alias]:
        out: list[_Alias] = []
        for canonical, aliases in table.items():
            for alias in dict.fromkeys([canonical, *aliases]):
                text = normalize(alias)
                if not text:
                    continue
                if _ACRONYM.match(text):
                    out.append(_Alias(canonical, _alias_pattern(text), folded=False))
                else:
                    out.append(_Alias(canonical, _alias_pattern(_fold_text(text)), folded=True))
        return out

    # ------------------------------------------------------------------ finding

    def find(self, kind: SlotKind, text: str) -> list[Match]:
        """Non-overlapping matches of one kind in ``normalize(text)``, in text order."""
        norm = normalize(text)
        if not norm:
            return []
        folded, back = _folded(norm)
        found: list[Match] = []
        for alias in self._aliases[kind]:
            if alias.folded:
                for m in alias.pattern.finditer(folded):
                    if m.end() > m.start():
                        found.append(Match(alias.canonical, back[m.start()], back[m.end()]))
            else:
                for m in alias.pattern.finditer(norm):
                    if m.end() > m.start():
                        found.append(Match(alias.canonical, m.start(), m.end()))
        if kind in ("channel", "entity"):
            found = [m for m in found if not _QUALIFIED_PLACE.search(norm, 0, m.start)]
        return _longest(found)

    def find_periods(self, text: str) -> list[Match]:
        """Non-overlapping period matches (canonical forms) in ``normalize(text)``."""
        norm = normalize(text)
        if not norm:
            return []
        spaced, back = _spaced(norm)
        found: list[Match] = []
        for pattern, canonical in self._periods:
            for subject, index in ((norm, None), (spaced, back)):
                for m in pattern.finditer(subject):
                    if m.end() <= m.start():
                        continue
                    value = _canonical_period(canonical, m)
                    if value is None:
                        continue
                    if index is None:
                        found.append(Match(value, m.start(), m.end()))
                    else:
                        found.append(Match(value, index[m.start()], index[m.end() - 1] + 1))
        if self.settings.replace_builtin_periods:
            return _at_end(norm, _longest(found))
        found.extend(self._ending_years(norm))
        found.extend(self._split_years(norm))
        if self.months:
            found.extend(_months(norm))
        return _at_end(norm, _with_partials(norm, _longest(found), self._names_fiscal_year))

    def with_months(self) -> Vocabulary:
        """This vocabulary reading single months as periods too (:attr:`months`)."""
        if self.months:
            return self
        out = copy.copy(self)  # the compiled aliases and forms are shared, never changed
        out.months = True
        return out

    def _split_years(self, norm: str) -> Iterator[Match]:
        """``FY 2024/25``, ``FY2024-25``, ``2024/25年度``: a fiscal year written with both
        calendar years it spans. It is ``FY2024`` when fiscal years are named by the year
        they start in, ``FY2025`` when by the year they end in. Two years that are not
        consecutive are no such year, and are left alone."""
        for m in _SPLIT_YEAR.finditer(norm):
            first = int(m.group("a") or m.group("c"))
            second_text = m.group("b") or m.group("d")
            second = int(second_text)
            if len(second_text) == 2:
                second += first // 100 * 100
            if second != first + 1:
                continue
            label = second if self.settings.fiscal_year_named_by == "end" else first
            yield Match(f"FY{label}", m.start(), m.end())

    def _ending_years(self, norm: str) -> Iterator[Match]:
        """``2024年3月期``: the fiscal year that ends in March 2024 (:meth:`_fiscal_year_of`)."""
        for m in _ENDING_YEAR.finditer(norm):
            year, month = int(m.group(1)), int(m.group(2))
            if 1 <= month <= 12:
                yield Match(f"FY{self._fiscal_year_of(year, month)}", m.start(), m.end())

    def _fiscal_year_of(self, year: int, month: int) -> int:
        """The name of the fiscal year that ends in ``month`` of ``year``: with a calendar
        whose years end in that month, that calendar's name for it; otherwise the year it
        ends in, as Japanese reports and 10-Ks name it."""
        start = fiscal_year_start_month(self.settings.fiscal_year_start)
        if month % 12 + 1 == start and self.settings.fiscal_year_named_by != "end":
            return year if start == 1 else year - 1
        return year

    def _names_fiscal_year(self, year: int, month: int) -> int | None:
        """The name of the fiscal year of twelve months (or 52–53 weeks) ending in
        ``month`` of ``year`` (:meth:`_fiscal_year_of`), or ``None`` for a year ending in
        January that the configured calendar does not name: retailers name it by the year
        it starts in (Target's, Home Depot's and Buckle's fiscal 2024 ended in early 2025)
        or ends in (Walmart's, Best Buy's), and nothing in a table says which."""
        if month == 1 and not january_year_named(self.settings):
            return None
        return self._fiscal_year_of(year, month)

    def values(self, kind: SlotKind | Literal["period"], text: str) -> list[str]:
        """Distinct canonical values of one kind in ``text``, in order of appearance."""
        if kind == "period":
            return _distinct(self.find_periods(text))
        return _distinct(self.find(kind, text))

    def read(self, text: str) -> Reading:
        """Every kind at once. Where matches of two kinds overlap, the longer one wins:
        in ``Revenue (US$ m)`` with the unit ``US$ m`` configured, ``US`` is part of the
        unit, not the entity. Matches of equal length both stand."""
        norm = normalize(text)
        found: list[tuple[Match, ReadKind]] = [
            (m, kind) for kind in _SLOT_KINDS for m in self.find(kind, norm)
        ]
        found.extend((m, "period") for m in self.find_periods(norm))
        found.sort(key=lambda item: (item[0].start, item[0].end))
        dropped: set[int] = set()
        for i, (m, kind) in enumerate(found):
            for j in range(i + 1, len(found)):
                other, other_kind = found[j]
                if other.start >= m.end:
                    break
                if other_kind == kind:
                    continue
                if other.end - other.start > m.end - m.start:
                    dropped.add(i)
                elif m.end - m.start > other.end - other.start:
                    dropped.add(j)
        kept = [item for i, item in enumerate(found) if i not in dropped]
        values: dict[ReadKind, tuple[str, ...]] = {
            kind: tuple(dict.fromkeys(m.canonical for m, k in kept if k == kind))
            for kind in _READ_KINDS
        }
        return Reading(norm, values, tuple((m.start, m.end) for m, _ in kept))

    def canonical_period(self, text: str) -> str | None:
        """The canonical period if ``text`` is exactly one period (``"2024年度"`` →
        ``"FY2024"``), else ``None``."""
        norm = normalize(text)
        matches = self.find_periods(norm)
        if len(matches) != 1 or matches[0].start != 0 or matches[0].end != len(norm):
            return None
        return matches[0].canonical

    def malformed_periods(self, text: str) -> list[str]:
        """Period-looking tokens (``FY20245``, ``Q5 2024``) that no period form recognises."""
        norm = normalize(text)
        if not norm:
            return []
        recognised = self.find_periods(norm)  # disjoint, in text order
        starts = [r.start for r in recognised]
        spaced, back = _spaced(norm)
        spans = _Spans()
        for pattern in _PERIODISH:
            for m in pattern.finditer(spaced):
                start, end = back[m.start()], back[m.end() - 1] + 1
                i = bisect.bisect_right(starts, start) - 1
                if i >= 0 and end <= recognised[i].end:
                    continue  # inside a recognised period
                if spans.overlaps(start, end):
                    continue
                spans.add(start, end)
        return [norm[s:e].strip() for s, e in spans]

    @property
    def has_metrics(self) -> bool:
        return bool(self._aliases["metric"])


# A single month: "July 2008", "Jul. 2008", "2008-07", "2008年7月" (not 2008年7月期, the
# fiscal year ending then, nor 7月末, a day). Canonical: "Jul 2008".
_MONTH_WORDS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_SINGLE_MONTH = re.compile(
    # "June 2022", and "Jun. 30, 2022": a balance at a month's end is that month's
    rf"{_LW}(?:(?:[1-9]|[12]\d|3[01])\s+)?(?P<name>{_MONTH_WORDS})\.?"
    rf"(?:\s+(?:[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?)?(?:\s*,\s*|\s+|-)"
    rf"(?P<year>(?:19|20)\d{{2}}){_RW}"
    r"|(?<![\d./\-])(?P<iso_year>(?:19|20)\d{2})-(?P<iso_month>0[1-9]|1[0-2])(?![\d.])(?!-\d)"
    r"|(?<!\d)(?P<cjk_year>(?:19|20)\d{2})\s*年\s*(?P<cjk_month>1[0-2]|0?[1-9])\s*月"
    r"(?!\s*(?:期|度|末|初|[0-9０-９]|中旬|上旬|下旬))",
    re.IGNORECASE,
)
# What makes a month one end of a span ("Oct–Jun 2024", "ended June 2024", "from July 2008
# to June 2009"): such a month is no period of its own, and is left to the partial periods.
_SPAN_BEFORE = re.compile(
    rf"(?i:(?:{_LW}(?:ended|ending|ends?|through|thru|to|until|till|from|since|between|and)"
    r"|[–—~〜\-]|至|から)\s*$)"
)
_SPAN_AFTER = re.compile(
    r"(?i:^\s*(?:(?:to|through|thru|until|till|and)\b|[–—~〜]|至|から|まで|\-\s*\D))"
)


# A change asked between two months: "change(d) … from December 2024 to January 2025".
_FROM_TO_CHANGE = re.compile(
    rf"(?i:\b(?:chang\w*|r[io]se|risen|fall|fell|fallen|grow\w*|grew|increas\w*|decreas\w*|"
    rf"mov\w*|went|go|drop\w*|jump\w*)\b.{{0,40}}?\bfrom\s+"
    rf"(?:{_MONTH_WORDS})\.?\s+(?:19|20)\d{{2}}\s+to\s+(?:{_MONTH_WORDS})\.?\s+(?:19|20)\d{{2}})"
)

#: A canonical single month, ``Jul 2008``: its month name and year.
MONTH_PERIOD = re.compile(rf"^({'|'.join(MONTH_NAMES)}) (\d{{4}})$")


def _months(norm: str) -> Iterator[Match]:
    """Single months in ``norm`` as ``Jul 2008``, none that is one end of a span; a day of
    a month (``Jun. 30, 2022``, ``30 June 2022``) is its month, as a balance sheet's column
    is the balance at that month's end."""
    # "How did the price change from December 2024 to January 2025?": the two months a
    # change is asked between, not a span
    between = _FROM_TO_CHANGE.search(norm)
    for m in _SINGLE_MONTH.finditer(norm):
        ends = between is not None and between.start() <= m.start() < between.end()
        if not ends and _SPAN_BEFORE.search(norm[max(0, m.start() - 12) : m.start()]):
            continue
        if not ends and _SPAN_AFTER.match(norm[m.end() : m.end() + 12]):
            continue
        if m.group("name"):
            name, year = _month(m.group("name")), m.group("year")
        else:
            number = m.group("iso_month") or m.group("cjk_month")
            name, year = MONTH_NAMES[int(number) - 1], m.group("iso_year") or m.group("cjk_year")
        yield Match(f"{name} {year}", m.start(), m.end())


def _canonical_period(canonical: str, match: re.Match[str]) -> str | None:
    groups = [g if g is not None else "" for g in match.groups()]
    try:
        value = canonical.format(match.group(0), *groups)
    except (IndexError, KeyError, ValueError):
        return None
    return normalize(value) or None


# The version of what a table's own labels are read as (periods, measures, lines): a new
# reading re-extracts every document's facts.
_DERIVED_NAMES = 26


def vocab_fingerprint(settings: FactSettings) -> str:
    """A stable hash of the vocabulary: a change re-extracts every document's facts."""
    data = {
        "metrics": {k: list(v) for k, v in settings.metrics.items()},
        "entities": {k: list(v) for k, v in settings.entities.items()},
        "channels": {k: list(v) for k, v in settings.channels.items()},
        "units": {k: list(v) for k, v in settings.units.items()},
        "metric_units": dict(settings.metric_units),
        "default_channel": settings.default_channel,
        "periods": [[p.pattern, p.canonical] for p in settings.periods],
        "fiscal_year": [settings.fiscal_year_start, settings.fiscal_year_named_by],
        "derived": _DERIVED_NAMES,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------- numbers

_NUMBER = re.compile(
    rf"""^
    (?P<lead>(?:[A-Z]{{3}}\s|[A-Z]{{1,3}}(?=[{_CURRENCY}]))?[{_CURRENCY}]?)\s*
    (?P<sign>[-+−–△▲]?)\s*
    (?P<open>\()?\s*
    (?P<sym>[{_CURRENCY}]?)\s*
    (?P<num>\d{{1,3}}(?:(?:,|\s)\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)\s*
    (?P<close>\))?\s*
    (?P<tail>\D{{0,24}}?)\s*
    $""",
    re.VERBOSE,
)


# Footnote markers after a number or a label: "1,702*", "Revenue¹", "448.2 [a]", "12 (b)".
# Superscripts are taken off before NFKC, which would turn "1,702¹" into "1,7021".
_SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹ᵃᵇᶜᵈᵉ⁾⁽"
_SUPERSCRIPT_TAIL = re.compile(f"[{_SUPERSCRIPTS}]+\\s*$")
_MARK_TAIL = re.compile(r"(?:\s*(?:[*†‡§¶]+|\[[0-9A-Za-z]{1,2}\]|\([a-z]\)))+$")
_LABEL_MARKS = re.compile(f"[{_SUPERSCRIPTS}*†‡§¶]")


@dataclass(frozen=True, slots=True)
class ParsedNumber:
    """A number read from a cell: its value, the text around it (``"USD"``, ``"%"``) and
    the footnote marker that followed it, if any (``"*"`` for ``1,702*``)."""

    value: float
    unit_text: str
    footnote: str = ""


def _split_footnote(text: str) -> tuple[str, str]:
    """``text`` without its trailing footnote markers, and the markers as written."""
    body = text.rstrip()
    marks = ""
    m = _SUPERSCRIPT_TAIL.search(body)
    if m is not None:
        body, marks = body[: m.start()], m.group(0).strip()
    norm = normalize(body)
    m = _MARK_TAIL.search(norm)
    if m is not None:
        norm, marks = norm[: m.start()], normalize(m.group(0)) + marks
    return norm, marks


def parse_number(text: str) -> ParsedNumber | None:
    """Read one number from a cell, or ``None`` if the cell is not one number.

    Accepts thousands separators (``1,320``, ``1 320``), full-width digits (``１，３２０``),
    negatives as ``-3.5``, ``−3.5``, ``△45`` or ``(45)``, a leading currency code or symbol
    (``USD 1,480``, ``$45``), short trailing unit text (``12%``, ``14,000円``,
    ``1,320 USD m``) and trailing footnote markers (``1,702*``, ``1,702¹``, ``1,702 [a]``:
    the number is 1702, the marker is kept in :attr:`ParsedNumber.footnote`). Dates,
    ranges and codes (``2026-07``, ``Q3 2025``, ``FY2024``, ``10-K``) are not numbers: any
    digit outside the one number disqualifies the cell, and so does a hyphen joining it
    to letters. A dash, ``—`` or ``n/a`` is no number
    (a missing value is never 0).
    """
    norm, footnote = _split_footnote(text)
    m = _NUMBER.match(norm)
    if m is None:
        return None
    if bool(m.group("open")) != bool(m.group("close")):
        return None
    if m.group("sign") and m.group("open"):
        return None
    if re.match(r"-[A-Za-z]", m.group("tail") or ""):
        return None  # a code such as a form's name ("10-K", "20-F"), not an amount
    digits = re.sub(r"[,\s]", "", m.group("num"))
    try:
        value = float(digits)
    except ValueError:  # pragma: no cover - the pattern only admits digits
        return None
    if m.group("sign") in ("-", "−", "–", "△", "▲") or m.group("open"):
        value = -value
    unit = normalize(f"{m.group('lead')} {m.group('sym')} {m.group('tail')}")
    return ParsedNumber(value + 0.0, unit, footnote)


def format_number(value: float | Decimal) -> str:
    """``1320.0`` → ``"1,320"``, ``448.2`` → ``"448.2"``, ``-45`` → ``"-45"``: thousands
    separators, and decimals only if the value has them. :func:`parse_number` reads it back
    to the same value."""
    dec = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    if not dec.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    if dec == dec.to_integral_value():
        return f"{int(dec):,}"
    return f"{dec.normalize():,f}"


# --------------------------------------------------------------------------- extraction

# Unit-looking text: a currency symbol or code, a scale word, a percent sign. Left over in a
# label after the vocabulary has read it, it is a unit the [facts] units do not know: the
# value may be in another currency or scale, so the metric's default unit would be a guess.
CURRENCY_CODES = (
    "USD|EUR|JPY|GBP|CNY|RMB|CHF|AUD|CAD|HKD|SGD|KRW|INR|SEK|NOK|DKK|BRL|MXN|TWD|NZD|ZAR"
)
_CURRENCY_CODES = CURRENCY_CODES
_UNITISH = re.compile(
    rf"[{_CURRENCY}%]|(?<![A-Za-z])(?:{_CURRENCY_CODES})(?![A-Za-z])"
    r"|(?i:(?<![A-Za-z])(?:mn|mm|bn|thousands?|millions?|billions?)(?![A-Za-z]))"
    r"|[千万億円元]|ドル|ユーロ"
)
_SCALE_LETTER = re.compile(r"(?i:(?<![A-Za-z])[km](?![A-Za-z]))")  # "(m)", "(EUR k)"
_GROUP = re.compile(r"[(\[（［]([^()\[\]（）［］]*)[)\]）］]")
_MAX_WARNINGS = 10
_LOCATOR_CELL_KEYS = frozenset({"row", "col", "series", "category"})


@dataclass(frozen=True, slots=True)
class _Cell:
    number: ParsedNumber | None
    text: str


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1].rstrip() + "…"


def _cell_locator(
    parts: Sequence[tuple[str, str]], keys: set[str], leading: Sequence[str], column: str, col: int
) -> str:
    """A table cell's locator: the table's ``parts``, then its row by the ``leading`` labels
    and its column by the header (else by number, from 1), each unless ``keys`` names it."""
    located: list[tuple[str, object]] = list(parts)
    if "row" not in keys and "series" not in keys and leading:
        located.append(("row", _clip(" / ".join(normalize(t) for t in leading))))
    if "col" not in keys and "category" not in keys:
        located.append(("col", _clip(normalize(column)) if column.strip() else col + 1))
    return format_locator(*located)


# A footnote's number set on a label's last word, as a filing's spreadsheet writes it
# ("Diluted Net Income Per Share1"): one digit right after a lower-case word.
_GLUED_FOOTNOTE = re.compile(r"(?<=[a-z][a-z][a-z])[1-9](?=\s*(?:\([^()]*\))?\s*$)")


def _label(text: str) -> str:
    """A label without footnote markers (``Revenue¹`` → ``Revenue``, ``Per Share1`` → ``Per
    Share``), which would otherwise glue digits to words under NFKC."""
    return _GLUED_FOOTNOTE.sub("", _LABEL_MARKS.sub(" ", text))


def _unknown_unit(residue: str, whole: bool) -> str | None:
    """Unit-looking text in what the vocabulary left of a label: in the whole of it when
    ``whole`` (a cell's own text), else inside parentheses or brackets only."""
    groups = [residue] if whole else [m.group(1) for m in _GROUP.finditer(residue)]
    for group in groups:
        if _UNITISH.search(group) or (not whole and _SCALE_LETTER.search(group)):
            return normalize(group.replace("(", " ").replace(")", " "))
    return None


def _outer_contexts(parts: Sequence[tuple[str, str]], title: str) -> list[str]:
    """Locator context (heading path innermost first, sheet name), then the title."""
    out: list[str] = []
    for key, value in parts:
        if key == "section":
            out.extend(reversed([p for p in value.split(" > ") if p and p != "(top)"]))
        elif key == "sheet":
            out.append(value)
    if title:
        out.append(title)
    return out


# A day of a month ("Jun. 30, 2024", "30 June 2024"), as a balance sheet heads a column.
_DAY_DATE = re.compile(
    rf"{_LW}(?:(?:[1-9]|[12]\d|3[01])\s+{_MONTH}|{_MONTH}\s*(?:[1-9]|[12]\d|3[01])"
    rf"(?:st|nd|rd|th)?{_RW})",
    re.I,
)
# What says a table's figures span months ("Three months ended", "Year Ended", "Results
# for the quarters ended", "Statements of Income"), and what says they stand at a date
# ("Balance Sheets", "as of").
_OVER_A_SPAN = re.compile(
    r"(?i:\b(?:ended|ending|months?|weeks?|quarters?|quarterly|years?|annual|periods?|"
    r"ytd|year[\s-]to[\s-]date|statements?\s+of\s+(?:\w+\s+)?(?:income|operations|"
    r"earnings|comprehensive|cash\s+flows?)|income\s+statements?|cash\s+flows?|"
    r"profit\s+and\s+loss)\b)"
)
_AT_A_DATE = re.compile(
    r"(?i:\bbalances?\b|balance\s+sheets?|financial\s+(?:position|condition)|"
    r"statements?\s+of\s+condition|\bas\s+(?:of|at)\b)"
)


def _spans_months(texts: Iterable[str]) -> bool:
    """Whether a table's own texts (its corner, the notes and titles above it, its
    headings; not the document's title) say its figures span months and none says they
    stand at a date: a column such a table heads with a date ("June 30, 2024", the end of
    a quarter or a year) is no figure of that month."""
    joined = " ".join(normalize(t) for t in texts if t)
    return bool(_OVER_A_SPAN.search(joined)) and not _AT_A_DATE.search(joined)


def _dated_month(period: str, header: Sequence[str], col: int) -> bool:
    """Whether ``period`` is a single month read from a day of it heading column ``col``."""
    if not MONTH_PERIOD.match(period) or col >= len(header):
        return False
    return _DAY_DATE.search(normalize(header[col])) is not None and (
        period.split()[0].casefold() in normalize(header[col]).casefold()
    )


def _table_place(parts: Sequence[tuple[str, str]], locator: str) -> str:
    """Where a skipped value's table is, for a warning: the locator without the parts that
    name one cell, so a table's skipped cells make one warning."""
    kept = [(k, v) for k, v in parts if k not in _LOCATOR_CELL_KEYS]
    return format_locator(*kept) if kept else locator


# --------------------------------------------------------------------------- derived names

_YEAR_CELL = re.compile(r"^(?:19|20)\d{2}$")
_YEAR_IN = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
_SPAN_ENDED = re.compile(r"(?i:\b(?:months?|weeks?|years?|quarters?)\s+end(?:ed|ing)\b)")
# A long-format table's column of periods (``fiscal_year``, ``Year``, ``年度``) and of the
# row's value (``value``, ``actual_value``, ``amount``).
_PERIOD_HEADER = re.compile(
    r"(?i:^(?:(?:fiscal|financial|calendar)\s+)?years?$|^fy$|^period$|^time(?:\s+period)?$)"
    r"|^(?:年度|年|会計年度|会计年度|年份|財年|财年)$"
)
_VALUE_HEADER = re.compile(
    r"(?i:^(?:(?:actual|reported)s?\s+)?(?:value|amount)s?$|^actuals?$)|^(?:値|金額|金额|数値|数值)$"
)


# A header's trailing unit, as data files write it: "gdp_trillion", "market_cap_b",
# "revenue_usd_m", "Sales, USD millions", "Population in thousands". A lone scale letter
# counts only after an underscore, where it cannot be a word ("cap_b"; "Vitamin B" is not).
_SCALE_WORDS = {
    "thousand": "thousand", "thousands": "thousand", "k": "thousand",
    "million": "million", "millions": "million", "mn": "million", "mm": "million", "m": "million",
    "billion": "billion", "billions": "billion", "bn": "billion", "b": "billion",
    "trillion": "trillion", "trillions": "trillion", "tn": "trillion",
}  # fmt: skip
_UNIT_TAIL = re.compile(
    rf"(?:_|\s*,\s*|\s+in\s+|\s+)(?P<unit>(?:(?P<cur>{_CURRENCY_CODES})[\s_]*)?"
    r"(?P<scale>thousands?|millions?|billions?|trillions?|bn|mn|mm|tn)"
    rf"|(?<=_)(?:(?P<cur2>{_CURRENCY_CODES})_)?(?P<letter>[kmb])"
    rf"|(?P<cur3>{_CURRENCY_CODES}))$",
    re.IGNORECASE,
)


def unit_tail(header: str) -> tuple[str, str]:
    """A header split into what it measures and the unit its end writes (``gdp_trillion``
    → ``("gdp", "trillion")``, ``market_cap_usd_b`` → ``("market_cap", "USD billion")``,
    ``Revenue, USD millions`` → ``("Revenue", "USD million")``); ``(header, "")`` when its
    end writes none or nothing would be left to name the measure."""
    m = _UNIT_TAIL.search(header.strip())
    if m is None:
        return header, ""
    rest = header.strip()[: m.start()].strip(" ,_")
    if not re.search(r"[^\W\d_]", rest):
        return header, ""
    currency = (m.group("cur") or m.group("cur2") or m.group("cur3") or "").upper()
    scale = _SCALE_WORDS.get((m.group("scale") or m.group("letter") or "").casefold(), "")
    return rest, " ".join(w for w in (currency, scale) if w)


_RATE_HEADER = re.compile(r"(?i:\b(?:pct|percent|percentage|share|ratio)\b)|%|％|比率|占比|構成比")
_UNIT_HEADER = re.compile(r"(?i:^(?:units?|currency|scale)$)|^(?:単位|单位|通貨|货币)$")


# What a long-format table's label column holds, by its header (see _label_role).
_ENTITY_HEADER = re.compile(
    r"(?i:^(?:country|nation|economy|company|entity|issuer|organi[sz]ation|state|province|"
    r"city|municipality|location|geo|country\s+or\s+area|ref(?:erence)?\s+area)(?:\s+name)?$)|^(?:国|国名|国家|会社名|企業名|公司|公司名称|国家名称)$"
)
_CODE_HEADER = re.compile(r"(?i:(?:^|\s)(?:code|iso\s*code|iso3?|id|ticker|symbol)$)")
_MEASURE_HEADER = re.compile(
    r"(?i:^(?:component|metric|measure|indicator|series|variable|item|line\s+item|account|"
    r"concept)(?:\s+name)?$)|^(?:指標|項目|科目|指标|项目)$"
)


def _label_columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], period_col: int | None
) -> list[int]:
    """The columns besides the period column whose cells are all labels (text, no number)."""
    out = []
    for i in range(len(header)):
        cells = [row[i] for row in rows if i < len(row) and row[i].strip()]
        if i != period_col and cells and all(parse_number(c) is None for c in cells):
            out.append(i)
    return out


@functools.lru_cache(maxsize=1024)
def _label_role(header: str) -> str:
    """``"entity"`` for a column of whom (``Country Name``, ``company``), ``"code"`` for a
    code of it (``Country Code``, ``iso_code``), ``"measure"`` for what is measured
    (``component``, ``Indicator Name``), else ``"line"``."""
    text = normalize(_label(header).replace("_", " "))
    if _CODE_HEADER.search(text):
        return "code"
    if _ENTITY_HEADER.match(text):
        return "entity"
    if _MEASURE_HEADER.match(text):
        return "measure"
    return "line"


def _year_columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Columns with no header whose every non-empty cell is a year: the rows' years."""
    out = []
    for i, text in enumerate(header):
        cells = [normalize(row[i]) for row in rows if i < len(row) and row[i].strip()]
        if not text.strip() and cells and all(_YEAR_CELL.match(c) for c in cells):
            out.append(i)
    return out


def _period_column(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int | None:
    """The column of a long-format table that holds each row's year: headed as one
    (``fiscal_year``, ``Year``, ``年度``) and holding a year in every row that has a cell
    there; or headed as a date or month and holding a month in every row (``Date`` over
    ``2020-01-01``, read as ``Jan 2020`` by :func:`_months_dated`). ``None`` for any other
    table."""
    for i, text in enumerate(header):
        head = normalize(_label(text).replace("_", " "))
        cells = [normalize(row[i]) for row in rows if i < len(row) and row[i].strip()]
        if not cells:
            continue
        if _PERIOD_HEADER.match(head) and all(_YEAR_CELL.match(c) for c in cells):
            return i
        if _DATE_HEADER.match(head) and all(MONTH_PERIOD.match(c) for c in cells):
            return i
    return None


_DATE_HEADER = re.compile(r"(?i:^(?:date|month|period|time)$)|^(?:日付|年月|月|日期|月份)$")
# A day as data files write it, the month alone too: "2020-01-01", "2022-12-31", "2020-01".
_ISO_DAY = re.compile(
    r"^(?P<year>(?:19|20)\d{2})-(?P<month>0[1-9]|1[0-2])"
    r"(?:-(?P<day>0[1-9]|[12]\d|3[01])(?:[T ]00:00(?::00)?)?)?$"
)


def _month_dated(text: str) -> str | None:
    """``first`` for a month's first day or the month alone, ``last`` for its last day,
    else ``None`` (another day, or no date)."""
    m = _ISO_DAY.match(text.strip())
    if m is None:
        return None
    if m["day"] is None or m["day"] == "01":
        return "first"
    last = calendar.monthrange(int(m["year"]), int(m["month"]))[1]
    return "last" if int(m["day"]) == last else None


# A column's part in parentheses, not its unit: "Price (New)", "Price (Older)".
_PART_GROUP = re.compile(r"^(?P<measure>[^()]*?[^\W\d_][^()]*?)\s*\((?P<part>[^()]+)\)\s*$")
_UNIT_WORDS = re.compile(
    rf"(?i:\d|%|[$€£¥]|\b(?:in|per|thousands?|millions?|billions?|bn|mn|k|m|b|units?|"
    rf"{_CURRENCY_CODES})\b)"
)
_WHOLE_PART = frozenset({"all", "total", "overall", "whole"})


def _parted_columns(header: Sequence[str]) -> tuple[str, ...]:
    """``header`` with columns that measure one thing for different parts, each part in
    parentheses (``Price (All)``, ``Price (New)``, ``Price (Older)``), named as the part's
    measure (``Price: New``, read as "New Price"); the part ``All`` or ``Total`` is the
    measure's whole (``Price``). Two such columns at least, with different parts; a unit
    in parentheses (``Revenue (USD m)``) is no part."""
    out = list(header)
    parted: dict[str, list[tuple[int, str]]] = {}
    for i, text in enumerate(header):
        m = _PART_GROUP.match(text.strip())
        if m is not None and not _UNIT_WORDS.search(m["part"]):
            parted.setdefault(m["measure"].strip().casefold(), []).append((i, m["part"].strip()))
    for columns in parted.values():
        if len(columns) < 2 or len({part.casefold() for _, part in columns}) < len(columns):
            continue
        for i, part in columns:
            measure = _PART_GROUP.match(header[i].strip())["measure"].strip()  # type: ignore[index]
            out[i] = measure if part.casefold() in _WHOLE_PART else f"{measure}: {part}"
    return tuple(out)


def _as_written(table: Sequence[Sequence[str]], read: Sequence[Sequence[str]]) -> dict[str, str]:
    """The cells ``read`` names otherwise than ``table`` writes them, as a locator names a
    cell: read → written."""
    return {
        _clip(normalize(new)): _clip(normalize(old))
        for row, again in zip(table, read, strict=True)
        for old, new in zip(row, again, strict=False)
        if old != new
    }


def _located_as_written(fact: Fact, written: Mapping[str, str]) -> Fact:
    """``fact`` with its locator's row and column as the file writes them (``2020-01-01``,
    ``Price (New)``), where they were read otherwise (``Jan 2020``, ``Price: New``)."""
    parts = [
        (key, " / ".join(written.get(v, v) for v in value.split(" / ")))
        if key in ("row", "col")
        else (key, value)
        for key, value in parse_locator(fact.locator)
    ]
    return dataclasses.replace(fact, locator=format_locator(*parts))


def _months_dated(table: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """``table`` with a column whose every cell, over two rows or more, is a month's first
    day or the month alone (``2020-01-01``, ``2020-01``), or every cell the last day of
    a month (``2022-06-30``, ``2022-12-31``), read as those months (``Jan 2020``, ``Jun
    2022``): a monthly or quarterly series dates each month by its first or its last day,
    a value at a month's end is that month's balance. A column holding any other day is
    a series of days and stays as written (no day is a month)."""
    out = tuple(tuple(row) for row in table)
    rows = out[1:]
    width = max((len(row) for row in rows), default=0)
    months = []
    for i in range(width):
        cells = [row[i].strip() for row in rows if i < len(row) and row[i].strip()]
        kinds = {_month_dated(c) for c in cells}
        if len(cells) >= 2 and len(kinds) == 1 and None not in kinds:
            months.append(i)
    if not months:
        return out

    def month(text: str) -> str:
        m = _ISO_DAY.match(text.strip())
        return f"{MONTH_NAMES[int(m['month']) - 1]} {m['year']}" if m else text

    return (
        out[0],
        *(tuple(month(c) if i in months else c for i, c in enumerate(row)) for row in rows),
    )


# A column for the whole year the titles name ("Full year", 通期, 全年).
_WHOLE_YEAR = re.compile(r"(?i:\bfull[\s-]year\b)|通期|通年|全年度?")
_BY = re.compile(r"^(?P<measure>.+?)\s+by\s+(?P<by>.+)$", re.IGNORECASE)
_BETSU = re.compile(r"^(?P<by>[^\s]+?)別(?P<measure>.+)$")
# The words a sentence introducing a table opens with, before what the table measures:
# "The following table summarizes revenues by region …".
_INTRODUCING = re.compile(
    r"(?i:^(?:the\s+)?(?:following\s+)?tables?\s+(?:below\s+)?(?:summari[sz]es|shows|"
    r"presents|sets\s+(?:forth|out)|provides|lists|details|gives)\s+(?:our\s+|the\s+|its\s+)?)"
)
# A title's section number: "3. Analyses by segment", "3.1 Operating segments".
_NUMBERED = re.compile(r"^\d+(?:\.\d+)*\.?\s+")
# What names a part of a company, whose total is no company total.
_PART_OF_COMPANY = re.compile(
    r"(?i:\b(?:segments?|divisions?|business(?:es)?|units?|regions?|subsidiar(?:y|ies)|"
    r"operations\s+in|brands?)\b)"
)
# Where what a breakdown is by ends: "region for the three months …", "segment, in …".
_BY_FOR = re.compile(r"(?i:\s*,|\s+(?:for|in|during|over|as\s+of|from|between|at)\s)")
_TIME_DIMENSION = re.compile(
    r"(?i:\b(?:fiscal\s+)?(?:years?|quarters?|halves|half|months?|periods?|dates?)\b)"
    r"|年度|年|四半期|季度|月|期"
)
# Words for a table's rows that are lines of one measure, not measures ("Region" above them).
_DIMENSION = re.compile(
    r"(?i:^(?:by\s+)?(?:regions?|segments?|countr(?:y|ies)|markets?|categor(?:y|ies)|products?|"
    r"(?:business\s+)?(?:lines?|units?|divisions?)|businesses|geograph(?:y|ies)|areas?)$)"
    r"|^(?:地域|セグメント|事業|製品|地区|分部|产品|產品|业务|業務|国家|國家)(?:別)?$"
)
# What names a whole statement, not a measure: "Income statement", "Balance sheet".
_STATEMENT = re.compile(
    r"(?i:\bstatements?\b|\bbalance\s+sheets?\b|\bcash\s+flows?\b|\bsummary\b|\boverview\b|"
    r"\bhighlights\b|\bresults\b|\bdata\b|\btable\b)"
)
# Titles that say figures follow without saying what they measure.
_GENERIC = re.compile(
    r"(?i:^(?:key\s+)?(?:results?|performance|figures|financials?|highlights|summary|overview|"
    r"data|numbers|metrics|kpis?|analys[ie]s|information)$)|^(?:業績|実績|概要|主要指標|业绩|業績|主要数据|主要數據)$"
)
# What qualifies a column's figures rather than naming what they measure.
_QUALIFIER = re.compile(
    r"(?i:^(?:actuals?|reported|as\s+reported|restated|adjusted|unaudited|audited|change|"
    r"variance|var)$)"
)
# "Total", and "Total for" as bookkeeping exports write it ("Total for 40100 Contributions").
_TOTAL = re.compile(
    r"^(?:total(?:\s+for)?|grand\s+total|合計|合计|總計|总计|計|计)\b[\s:：]*", re.IGNORECASE
)
_NAME_NOISE = re.compile(r"[:：]+$|^[-–—•·*\s]+")
_MAX_NAME = 60
# Column words that mark a plan rather than what happened; an actual is the ordinary figure.
_PLAN_WORDS = {
    "budget": "budget", "budgeted": "budget", "estimate": "estimate", "estimated": "estimate",
    "est": "estimate", "forecast": "forecast", "outlook": "forecast", "plan": "plan",
    "planned": "plan", "target": "target", "projection": "projection", "projected": "projection",
    "guidance": "guidance", "予算": "budget", "計画": "plan", "見通し": "forecast",
    "予想": "forecast", "目標": "target", "预算": "budget", "預算": "budget",
    "预测": "forecast", "預測": "forecast", "计划": "plan", "計劃": "plan", "目标": "target",
}  # fmt: skip
_PLAN = re.compile(
    "|".join(
        rf"(?<![A-Za-z]){re.escape(w)}(?![A-Za-z])" if w.isascii() else re.escape(w)
        for w in sorted(_PLAN_WORDS, key=len, reverse=True)
    ),
    re.IGNORECASE,
)
_UNIT_PHRASE = re.compile(
    r"(?:単位|单位|單位)\s*[:：]?\s*(?P<cjk>[^\s)）,，]+)"
    r"|(?P<en>(?:[A-Z]{3}|[$¥€£])?\s*(?:in\s+)?(?:thousands|millions|billions|bn|mn|m|k)\b(?:\s+of\s+[A-Za-z$]+)?)",
    re.IGNORECASE,
)
_LEGAL_SUFFIX = re.compile(
    r"(?:,?\s+(?:Inc\.?|Incorporated|Corp\.?|Corporation|Co\.?,?\s*Ltd\.?|Ltd\.?|Limited|plc|PLC|"
    r"AG|SE|S\.A\.|N\.V\.|LLC|K\.K\.|Holdings?))+$|^株式会社\s*|\s*株式会社$|(?:股份)?有限公司$"
)
_REPORT_WORDS = re.compile(
    r"(?i:\s*(?:\b(?:annual|interim|quarterly|integrated|financial|earnings|results?|report|"
    r"review|presentation|deck|statements?|fact\s+sheet|form\s+10-?[KQ]|10-?[KQ]|20-F|"
    r"key\s+figures|highlights|summary|overview|supplement(?:al)?|data)\b[\s,]*)+$)"
    r"|(?:決算説明資料|決算短信|決算|説明資料|年度报告|年度報告|年报|年報|业绩公告|業績公告|中期报告|"
    r"半年度报告|报告|報告|資料)+$"
)
_TITLE_SEPARATOR = re.compile(r"\s+[—–\-|:·]\s+|[：｜|]")


# "Earnings/(Loss)", "Income/(loss)": the other sign's name, after a slash, in parentheses
_ALTERNATIVE = re.compile(r"\s*/\s*[(\[（]([^()\[\]（）]*)[)\]）]")


def measure_name(text: str) -> str | None:
    """What a label says is measured: without its unit group, footnote markers, a
    trailing colon, a leading ``Total`` or the name of its negative after a slash
    (``Net Earnings/(Loss)`` → ``Net Earnings``); ``None`` if that leaves no word."""
    norm = normalize(_GROUP.sub(" ", _ALTERNATIVE.sub(" ", _label(text))))
    norm = _NAME_NOISE.sub("", normalize(_TOTAL.sub("", norm)))
    norm = _headed(normalize(norm))
    net = _NET_OF.match(norm)
    if net is not None:
        norm = f"net {net.group('measure')}"
    if not norm or len(norm) > _MAX_NAME or not re.search(r"[^\W\d_]", norm):
        return None
    return norm


# "SALES, Net of returns and allowances", "Revenues, net": sales or revenues net of
# something, as questions name them ("net sales"). Not a balance ("Accounts receivable,
# net"), which questions name without it.
_NET_OF = re.compile(
    r"(?i:^(?P<measure>(?:[^\W\d][^,]{0,30}?\s)?(?:sales|revenues?)),\s*net(?:\s+of\b.*)?$)"
)


_HEADED = re.compile(r"^(?P<measure>[^\W\d][^:：\d]{0,40}?)\s*[:：]\s*(?P<line>[^:：\d]{1,40})$")


def _headed(name: str) -> str:
    """``Revenue: Intelligent Cloud`` → ``Intelligent Cloud Revenue`` and ``Revenue: Total``
    → ``Revenue``: a label written as the measure, a colon and the line it is broken down
    by names that line's measure, as a question names it."""
    m = _HEADED.match(name)
    if m is None:
        return name
    measure, line = m.group("measure").strip(), m.group("line").strip()
    if _TOTAL.fullmatch(line) or not line:
        return measure
    return f"{line} {measure}"


def metric_aliases(name: str, metrics: Iterable[str]) -> tuple[str, ...]:
    """Other word orders a question may use for a derived metric that qualifies another
    one: ``intelligent cloud cost of revenue`` is also ``cost of revenue for intelligent
    cloud``, ``… of …``, ``… in …``, ``…'s …`` and ``… segment …``. Only when ``metrics``
    holds the unqualified measure, so the qualifier is known to be one."""
    folded = name.casefold()
    for measure in sorted(metrics, key=len, reverse=True):
        m = measure.casefold()
        if m != folded and folded.endswith(" " + m):
            line = name[: len(name) - len(measure) - 1].strip()
            return tuple(
                f"{form}"
                for form in (
                    f"{measure} for {line}",
                    f"{measure} of {line}",
                    f"{measure} in {line}",
                    f"{measure} at {line}",
                    f"{measure} on {line}",
                    f"{line}'s {measure}",
                    f"{line} segment {measure}",
                    f"{measure} for the {line} segment",
                    f"{measure} in the {line} segment",
                )
            )
    return ()


_WHOLE = re.compile(r"(?i:company|group|consolidated|corporation|firm)")


def _is_total(label: str, measure: str) -> bool:
    """``Total``, ``Total net sales`` or ``Net sales`` under a title breaking net sales
    down, or ``Total Company`` (``Group``, ``Consolidated``): the whole's line."""
    norm = normalize(_GROUP.sub(" ", _label(label)))
    rest = normalize(_TOTAL.sub("", norm))
    if rest != norm and _WHOLE.fullmatch(rest):
        return True
    return not rest or rest.casefold() == measure.casefold()


# A group in a label that abbreviates the label, not its unit: "(EMEA)", "(UCAN)".
_ACRONYM_GROUP = re.compile(r"[(（]\s*([A-Z][A-Z&]{1,7})\s*[)）]")


def _unit_group(label: str) -> bool:
    """Whether ``label`` holds a group in parentheses or brackets other than the acronym
    it is known by (``Revenue (USD m)``, not ``Latin America (LATAM)``)."""
    return any(not _ACRONYM_GROUP.fullmatch(m.group(0)) for m in _GROUP.finditer(label))


def _member_name(label: str, measure: str) -> str | None:
    """The line a row names (``iPhone``, ``Greater China``), without the measure if the
    label repeats it (``Services net sales`` → ``Services``), with the acronym it is known
    by (``Latin America (LATAM)``), which questions use as often as the name."""
    name = measure_name(label)
    if name is None:
        return None
    folded = name.casefold()
    if folded.endswith(" " + measure.casefold()):
        name = name[: -len(measure) - 1].strip()
    acronym = _ACRONYM_GROUP.search(_label(label))
    if name and acronym is not None and acronym.group(1) not in name.split():
        name = f"{name} ({acronym.group(1)})"
    return name or None


def _metric_name(measure: str) -> str:
    """A derived metric's canonical name: words in ordinary case lower-cased (``Net sales``
    → ``net sales``), and words a label shouts (``NET INCOME``, ``net SALES``) too where
    one of them is a statement's word, but not acronyms (``EBITDA``, ``EPS``, one of
    :data:`_ACRONYMS`) nor codes (``PC HEALTHXP``); others as written (``iPhone``)."""
    words = measure.split(" ")
    shouted = [w for w in words if _SHOUTED.fullmatch(w) and w not in _ACRONYMS]
    # shouted words, not a code (``PC_HEALTHXP``): one of them is a statement's word
    if not any(_STATEMENT_WORD.fullmatch(w.rstrip(",;")) for w in shouted):
        shouted = []
    return " ".join(
        w.lower() if w[1:] == w[1:].lower() or (w in shouted and len(w) > 1) else w for w in words
    )


_SHOUTED = re.compile(r"[A-Z][A-Z'’-]+[,;]?")
# Words of a financial statement's labels, as a label in capitals writes them.
_STATEMENT_WORD = re.compile(
    r"NET|TOTAL|GROSS|OPERATING|INCOME|SALES|REVENUES?|EARNINGS|PROFITS?|LOSS(?:ES)?|"
    r"COSTS?|EXPENSES?|TAX(?:ES)?|SHARES?|CASH|INTEREST|ASSETS|LIABILITIES|EQUITY|"
    r"OF|PER|AND|BEFORE|AFTER|FROM"
)
# Acronyms a financial table's label may hold among shouted words.
_ACRONYMS = frozenset({
    "EBITDA", "EBITA", "EBIT", "EPS", "GAAP", "IFRS", "COGS", "OPEX", "CAPEX", "SG&A",
    "R&D", "ARPU", "ARR", "MRR", "NPS", "ROI", "ROE", "ROA", "ROIC", "FCF", "FFO", "AFFO",
    "NOI", "EMEA", "APAC", "APJ", "LATAM", "AMER", "ASEAN", "USD", "EUR", "GBP", "JPY",
    "CHF", "CNY", "US", "USA", "UK", "EU", "IT", "AI",
})  # fmt: skip


def _plan_channel(residue: str) -> str | None:
    """``budget``, ``estimate``, ``forecast`` … when a period label says the figure is a
    plan (``Budget FY2024``, ``2025 Estimate``, ``予算``); ``None`` for an actual."""
    found = {_PLAN_WORDS[m.group(0).casefold()] for m in _PLAN.finditer(residue)}
    return found.pop() if len(found) == 1 else None


# What a note excepts from its unit: "(in thousands, except per share data)".
_EXCEPT = re.compile(r"(?i:,?\s*except\b.*$)")
_EXCEPT_PER_SHARE = re.compile(r"(?i:\bexcept\b[^.;]*\bper[\s-]share\b)")
_PER_SHARE = re.compile(r"(?i:\bper[\s-](?:common\s+)?share\b|\bEPS\b)")
_BARE_CURRENCY = re.compile(r"^(?:[A-Z]{3}|[A-Z]{0,2}[$€£¥₩])$")
# "$ in Millions", "shares in Thousands": what a filing's spreadsheet says is counted in what.
_KIND_IN_SCALE = re.compile(
    r"(?i:(?P<kind>shares|[$€£¥]|USD|EUR|GBP|JPY|CHF)\s+in\s+(?P<scale>thousands|millions|billions))"
)
# A label saying its figure is of another kind than the table's money: a rate, a length of
# time, a count ("Number of stock options exercised").
_OWN_KIND = re.compile(
    r"(?i:\((?:as\s+a\s+)?percent(?:age)?\)|\(in\s+(?:years|months|days|hours)\)|"
    r"\(pure\)|,\s*number\b|\bnumber$|\brate\s*(?:\([^)]*\))?$|^\W*number\s+of\b|%|"
    r"\b(?:margin|ratio|employees|headcount|stores|customers|subscribers|members|users)\b)"
)
# A margin word: a rate, unless its figure is a whole number too large for one ("Gross
# margin" of 4,013,750 in a table of thousands of dollars is an amount). A ratio is never
# an amount, whatever its figure (a combined ratio of 101.3), nor is a figure with
# decimals (an operating margin of (150.2)).
_MONEY_MARGIN = re.compile(r"(?i:margin)")
# A label counting shares, whatever it says after ("Shares used in computing earnings per
# share", "Weighted-average shares outstanding", "Basic (in shares)").
# The scale a note says share counts are in, apart from the amounts': "number of shares
# which are reflected in thousands", "shares in thousands".
_SHARES_SCALE = re.compile(
    r"(?i:\bshares\b[^.;()]{0,40}?\bin\s+(?P<scale>thousands|millions|billions)\b)"
)
_COUNTS_SHARES = re.compile(
    r"(?i:^\W*(?:(?:weighted[\s-]average|number\s+of|basic|diluted|common)\s+)*shares\b"
    r"|\(in\s+shares\))"
)
_BARE_SCALE = re.compile(
    r"^(?:in\s+)?(?P<scale>thousand|million|billion|trillion)s(?:\s+of\s+(?:dollars|[A-Z]{3}))?$",
    re.IGNORECASE,
)
# A label that is only the scale, as a table's corner writes it: "In millions of CHF".
_IN_SCALE_OF = re.compile(
    r"(?i:^(?P<unit>in\s+(?:thousands|millions|billions|trillions)(?:\s+of\s+[A-Za-z$€£¥]+)?)\s*$)"
)
# A note that says what amounts are in: "Amounts in millions of dollars except …".
_AMOUNTS_IN = re.compile(
    r"(?i:\b(?:amounts?|figures|values|dollars)\b[^.;]{0,30}?"
    r"\b(?P<unit>in\s+(?:thousands|millions|billions|trillions)(?:\s+of\s+[A-Za-z]+)?))"
)


def _written_unit(text: str, *, whole: bool) -> str:
    """The unit a label writes: a cell's whole unit text, else a group in parentheses that
    looks like one (``(USD bn)``, ``($ in millions)``, ``(in thousands, except per share
    data)``), a ``単位：百万円`` phrase or a note saying what amounts are in ("Amounts in
    millions of dollars")."""
    norm = normalize(_label(text))
    if whole:
        return norm if _UNITISH.search(norm) else ""
    for m in _GROUP.finditer(norm):
        group = normalize(_EXCEPT.sub("", m.group(1)))
        phrase = _UNIT_PHRASE.search(group)
        if phrase is not None and phrase.group("cjk"):
            return normalize(phrase.group("cjk"))
        if (amounts := _AMOUNTS_IN.search(group)) is not None:
            return _scale_words(amounts.group("unit"))  # "(Amounts in Thousands Except …)"
        if group and (_UNITISH.search(group) or _SCALE_LETTER.search(group)) and len(group) <= 30:
            return group
    phrase = _UNIT_PHRASE.search(norm)
    if phrase is not None and phrase.group("cjk"):
        return normalize(phrase.group("cjk"))
    if (amounts := _AMOUNTS_IN.search(norm)) is not None:
        return _scale_words(amounts.group("unit"))
    corner = _IN_SCALE_OF.match(norm)
    return normalize(corner.group("unit")) if corner is not None else ""


def _scale_words(unit: str) -> str:
    """``In Thousands`` → ``in thousands``: a scale as every table's is written, whatever
    the case a note writes it in (a currency after it keeps its own)."""
    return re.sub(
        r"(?i:\b(?:in|of|thousands|millions|billions|trillions)\b)",
        lambda m: m.group(0).lower(),
        normalize(unit),
    )


# A file name's words that say what the file holds rather than whom it is about.
_SLUG_STOP = re.compile(
    r"(?i:annual|interim|quarterly|monthly|financial|earnings|results?|reports?|reviews?|"
    r"presentation|deck|statements?|key|figures|highlights|summary|overview|supplement(?:al)?|"
    r"data|segments?|revenues?|sales|income|operating|balance|budget|tanshin|kessan|"
    r"chairman|letter|fact|sheet|form|slides?|table|tables|metrics|kpis?|"
    # measures a data file is named after (us-gdp-annual.csv is the US's GDP)
    r"gdp|gnp|cpi|ebitda|inflation|population|(?:un)?employment|prices?|profits?|costs?|"
    r"expenses?|assets|liabilities|debt|deficit|growth|financials|indicators?|statistics|"
    r"for|and|of|the|on|in|to|a|.*\d.*)"
)
_SLUG = re.compile(r"^[\w]+(?:[-_][\w]+)+$")


def _slug_entity(slug: str) -> str:
    """``microsoft-fy24-q2-segment-revenue`` → ``Microsoft``, ``byd-2023-q3-key-figures``
    → ``BYD``: a file name's leading words, up to the first that is a period or says what
    the file holds, in title case (short words, which are usually acronyms, in capitals)."""
    words: list[str] = []
    for word in re.split(r"[-_]+", slug):
        if _SLUG_STOP.fullmatch(word):
            break
        words.append(word)
    if not words or len(words) > 3:
        return ""
    return " ".join(w.upper() if len(w) <= 3 else w[:1].upper() + w[1:] for w in words)


def _slug_words(slug: str) -> str:
    """``eia-henry-hub-natural-gas-monthly`` → ``EIA Henry Hub Natural Gas Monthly``: a
    file name's words as a title writes them (a short first word, usually its publisher's
    acronym, in capitals)."""
    words = [w for w in re.split(r"[-_]+", slug) if w]
    return " ".join(
        w.upper() if i == 0 and len(w) <= 3 else w[:1].upper() + w[1:] for i, w in enumerate(words)
    )


def _total_column(heading: str) -> bool:
    """Whether a long-format table's value column is headed only as a total (``Total``,
    ``Grand total``, ``合計``; ``Year | Country | Total | Solid Fuel | …``): it holds the
    row's total of the columns beside it, a figure of its own named "total"."""
    return _TOTAL.fullmatch(heading) is not None


# A column of countries' codes ("Country Code", "iso_code", "ISO3"), not a ticker's or an id's.
_COUNTRY_CODE_HEADER = re.compile(r"(?i:\bcountry\s+code\b|\biso\s*(?:code|3|alpha\s*3)?\b)")


def _coded_country(name: str, codes: Sequence[str]) -> str:
    """``name``, or the country its row's ISO code names when ``name`` is a statistics
    office's short form no country list holds (``Korea, Rep.`` beside ``KOR``). ``codes``
    are the row's cells under a header naming countries' codes: a ticker is no country
    (``MAR`` is Marriott's, not Morocco's)."""
    coded = [c for code in codes if (c := country_name(code)) is not None]
    if len(coded) == 1 and country_name(name) is None:
        return coded[0]
    return name


_FREQUENCY_WORD = re.compile(r"(?i:annual|yearly|quarterly|monthly|weekly|daily)")
_TITLE_PERIOD_WORD = re.compile(r"(?i:(?:fy)?(?:19|20)\d{2}|fy\d{2}|q[1-4])")


def _file_subject(title: str) -> str:
    """What a data file named after its subject measures, in words: ``population-2015-2024``
    → ``population``, ``gdp_annual`` → ``gdp``. A file name's years, fiscal years and
    quarters, and how often its rows come, name no measure (``covid-19-deaths`` keeps its
    19). A title that is no file name is kept, its underscores read as spaces."""
    if not _SLUG.match(title.strip()):
        return title.replace("_", " ")
    words = [
        w
        for w in re.split(r"[-_]+", title.strip())
        if w and not _TITLE_PERIOD_WORD.fullmatch(w) and not _FREQUENCY_WORD.fullmatch(w)
    ]
    return " ".join(words) or title.replace("_", " ")


_REPORT_KIND = re.compile(
    r"(?i:(?:^|\s)(?:form\s+)?(?:10-?[KQ]|20-F|40-F|6-K|8-K)\b"
    r"|\s(?:annual|quarterly|interim|half[\s-]year)\s+report\b)"
)


def document_entity(title: str) -> str:
    """Whom a document's figures are about when no label names it: its title's first part
    without periods, years and report words (``Apple Inc. — Form 10-K 2024`` → ``Apple
    Inc.``); a file name's leading words when the title is one (``byd-2023-q3-key-figures``
    → ``BYD``), else its words as a title writes them; ``""`` for an empty title."""
    if _SLUG.match(title.strip()):
        # a file's name says whom it is about in its first few words, else it is read as
        # words, as a title would be ("EIA Henry Hub Natural Gas Monthly"), never as the
        # file's name
        return _slug_entity(title.strip()) or _slug_words(title.strip())
    first = _TITLE_SEPARATOR.split(normalize(title), maxsplit=1)[0]
    # what follows a filing's form or a report's kind is about the report, not its subject
    # ("Apple Inc. Form 10-Q for the quarter ended July 1, 2023" is Apple Inc.'s)
    first = _REPORT_KIND.split(first, maxsplit=1)[0].strip(" ,;-–—") or first
    text = _BARE_YEAR.sub(
        " ", re.sub(r"(?i)\bFY\s*'?\d{2,4}\b|\d{4}\s*年(?:\s*\d{1,2}\s*月期?)?(?:度)?", " ", first)
    )
    text = normalize(_REPORT_WORDS.sub("", normalize(text)))
    text = text.strip(" ,;-–—")
    return _clip(text or normalize(title))


_COMPANY = re.compile(
    r"(?P<zh>[\u4e00-\u9fff\u30a0-\u30ffA-Za-z0-9]{2,20}?)(?:股份有限公司|有限公司|株式会社)"
    r"|株式会社\s*(?P<ja>[\u4e00-\u9fff\u30a0-\u30ffA-Za-z0-9]{2,20})"
    r"|(?P<en>(?:[A-Z][\w&.'’-]*\s+){0,3}[A-Z][\w&.'’-]*),?\s+(?:Inc\.?|Corporation|Corp\.|Co\.,?\s*Ltd\.?|Ltd\.?|plc|AG|SE|N\.V\.|S\.A\.)(?![A-Za-z])"
    # "The Procter & Gamble Company": its name between "The" and "Company"
    r"|\bThe\s+(?P<the>(?:(?:[A-Z][\w.-]*|&)\s+){0,3}[A-Z][\w.-]*)\s+Company\b"
)


# A financial statement's name as its title block writes it: "Statement of Activity",
# "Statement of Revenue & Expenses", "Profit and Loss", "Balance Sheet".
_STATEMENT_NAME = re.compile(
    r"(?i)\b(?:(?:consolidated\s+|condensed\s+)*statements?\s+of\s+\w"
    r"|profit\s+(?:and|&)\s+loss\b|income\s+statement\b|balance\s+sheet\b"
    r"|cash\s+flow\s+statement\b)"
)
# What parts whom a statement is about from its name on one line, and an account number
# between them: "Community Initiatives - 6363 - Statement of Revenue & Expenses".
_BEFORE_STATEMENT = re.compile(r"(?:[\s\-–—:|]+\d*)*$")


# The sentence introducing a table of another company's figures: "Required summarized
# financial information of Rivian as disclosed in its most recent SEC filings".
_WHOSE_FINANCIALS = re.compile(
    r"\bfinancial\s+(?:information|statements?|data|results)\s+(?:of|for)\s+"
    r"(?P<name>[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*){0,3})"
)
# What follows "financial information of" without naming a company.
_NO_NAME = frozenset({"The", "Our", "This", "These", "Each", "Such", "Its", "Their", "All"})


def _whose_financials(captions: Sequence[str]) -> str | None:
    """The company whose financial information a table's introducing sentence says it
    gives (``captions``), as it names it; ``None`` where none names one."""
    for caption in captions:
        found = _WHOSE_FINANCIALS.search(caption)
        if found is not None and found.group("name").split()[0] not in _NO_NAME:
            return company_named(found.group("name")) or found.group("name").rstrip(".,")
    return None


def statement_entity(titles: Sequence[str]) -> str | None:
    """Whom a statement is about, by the heading accounting writes over one (whom, which
    statement, when: "Community Initiatives" over "Profit and Loss" over "January-December,
    2025"): what the line naming the statement writes before its name, else the title line
    above it (``titles`` are nearest first; a line above naming a statement again gives
    what it writes before that name: "Community Initiatives - 6363 - Statement of Revenue
    & Expenses: …" over "Statement of Revenues and Expenses"). An aside closing the name
    ("(for The Carpentries)") and a "The" opening it are left out; ``None`` when no title
    names a statement, or what stands there names a year or no word."""
    named = [i for i, t in enumerate(titles) if _STATEMENT_NAME.search(t)]
    if not named:
        return None
    for title in titles[named[0] :]:
        found = _STATEMENT_NAME.search(title)
        name = _BEFORE_STATEMENT.sub("", title[: found.start()]) if found else title
        name = re.sub(r"\s*\([^)]*\)$", "", name.strip()).strip()
        if not name:
            continue
        name = re.sub(r"^The\s+(?=\S)", "", name)
        if not re.search(r"[^\W\d_]", name) or re.search(r"(?:19|20)\d\d", name):
            return None
        return name
    return None


# "AMAZON.COM, INC." is Amazon to its readers: a web address's ending is part of no name.
_WEB_SUFFIX = re.compile(r"(?i)(?<=[^\W\d_])\.(?:com|net|org)\b")


def company_named(text: str) -> str | None:
    """The company a table's corner or title names with its legal form (``比亚迪股份有限公司
    2023年第三季度报告`` → ``比亚迪``, ``Apple Inc.`` → ``Apple``): who its figures are
    about, as the document writes it, ahead of a name read from the file's."""
    norm = normalize(text) if text.strip() else ""
    if sum(c.isupper() for c in norm) > 2 * sum(c.islower() for c in norm):
        # "THE BUCKLE, INC." is read as "The Buckle, Inc.", "MCDONALD'S" as "Mcdonald's"
        # (not "Mcdonald'S", whose "S" was read as the company's name)
        norm = " ".join(map(_unshouted, norm.split(" ")))
    norm = _WEB_SUFFIX.sub("", norm)
    m = _COMPANY.search(norm) if norm else None
    if m is None:
        return None
    if m.group("en"):
        return re.sub(r"^The\s+(?=\S)", "", m.group("en"))  # The Buckle, Inc. is Buckle
    return next(g for g in (m.group("zh"), m.group("ja"), m.group("the")) if g)


# Short words a name in capitals writes that are no acronym.
_SHORT_WORDS = frozenset({"THE", "AND", "OF", "FOR", "INC", "INC.", "CO", "CO.", "LTD", "LTD."})


def _unshouted(word: str) -> str:
    """A word of a name written in capitals as the name writes it: ``BUCKLE`` → ``Buckle``,
    ``MCDONALD'S`` → ``Mcdonald's``, but an acronym as written (``IBM``, ``AT&T``: three
    letters or fewer, or joined by "&")."""
    letters = re.sub(r"[^A-Za-z]", "", word)
    if "&" in word or (len(letters) <= 3 and word.rstrip(",.") not in _SHORT_WORDS):
        return word
    return re.sub(r"(?<=\w['’])[A-Z]", lambda m: m.group(0).lower(), word.title())


# "The Procter & Gamble Company", "The Boeing Company": a legal name that is its name
# between "The" and "Company".
_THE_COMPANY = re.compile(r"^The\s+(?P<name>.+?)\s+(?:Company|Corporation)$")
# Two names joined by "&", said by their initials: "Procter & Gamble" is "P&G".
_AMPERSAND_PAIR = re.compile(r"^(?P<a>[A-Z])[a-z]+\s*&\s*(?P<b>[A-Z])[a-z]+$")


def entity_aliases(name: str) -> tuple[str, ...]:
    """Other spellings a question may use for a derived entity: without its legal form
    (``Apple Inc.`` → ``Apple``, ``株式会社ACME`` → ``ACME``, ``The Procter & Gamble
    Company`` → ``Procter & Gamble``), two names joined by "&" by their initials
    (``Procter & Gamble`` → ``P&G``, ``Johnson & Johnson`` → ``J&J``), a short name in
    capitals with "&" anywhere in it (``ATT`` → ``AT&T``); a country's other
    names (``United States`` → ``US``, ``USA``, ``米国``, ``美国`` …:
    :mod:`clearance.countries`)."""
    short = normalize(_LEGAL_SUFFIX.sub("", name))
    the = _THE_COMPANY.match(short)
    short = normalize(the.group("name")) if the is not None else short
    legal = (short,) if short and short != name else ()
    pair = _AMPERSAND_PAIR.match(short)
    initials: tuple[str, ...] = (
        (f"{pair.group('a')}&{pair.group('b')}",) if pair is not None else ()
    )
    # a file's short name for a company written with "&" ("att-2023-….htm" is AT&T's)
    if re.fullmatch(r"[A-Z]{3,4}", name):
        initials += tuple(f"{name[:i]}&{name[i:]}" for i in range(1, len(name)))
    return tuple(dict.fromkeys((*legal, *initials, *country_names(name))))


def _known_country(fact: Fact, vocab: Vocabulary) -> Fact:
    """``fact`` with a derived entity that names a country under the name the country is
    known by: ``us-gdp-annual.csv``'s ``US`` and a World Bank table's ``United States`` are
    one entity. A name the vocabulary configures stays as configured."""
    if not fact.entity or fact.entity in vocab.settings.entities:
        return fact
    name = country_name(fact.entity)
    return fact if name is None or name == fact.entity else dataclasses.replace(fact, entity=name)


#: The key of a document's ``extra`` holding ``{entity: month}``: the month each entity's
#: fiscal years end in, as the document's tables say (:func:`fiscal_year_end`).
YEAR_ENDS_KEY = "fiscal_year_ends"
#: The key of a document's ``extra`` holding ``{entity: [names]}``: other names of a company
#: its tables name, from the file's own name (``byd-2023-q3-key-figures.csv`` of a table
#: headed 比亚迪股份有限公司: BYD is 比亚迪).
ENTITY_NAMES_KEY = "entity_names"

_YEAR_ENDED = re.compile(
    rf"{_LW}(?:(?:fiscal\s+)?years?|(?:12|twelve)[\s-]months?|(?P<weeks>(?:52|53|fifty[\s-]+"
    rf"(?:two|three))[\s-]weeks?))\s+end(?:ed|ing)\s+{_MONTH}(?:\s*(?P<day>\d{{1,2}}))?",
    re.I,
)


def fiscal_year_end(texts: Iterable[str]) -> int | None:
    """The month a fiscal year ends in, as the labels of a full year's figure say it:
    ``Year Ended June 30`` (whose year is the one it ends in: ``2024`` is the year ended
    June 30, 2024), ``52 Weeks Ended February 1`` (January's: :func:`_month_ended`) or
    ``2024年3月期``. ``None`` when none says it, or two say different."""
    months: set[int] = set()
    for text in texts:
        norm = normalize(text)
        for m in _YEAR_ENDED.finditer(norm):
            # group 1 is the weeks
            month, _ = _month_ended(
                MONTH_NAMES.index(_month(m.group(2))) + 1, m.group("day") or "", 2
            )
            months.add(month)
        for m in _ENDING_YEAR.finditer(norm):
            if 1 <= int(m.group(2)) <= 12:
                months.add(int(m.group(2)))
    return months.pop() if len(months) == 1 else None


@dataclass(frozen=True, slots=True)
class _Skip:
    """Why a cell is skipped, for the warning its table gets."""

    why: str


# A row naming a part of the company its rows below are of: "Operating segments | Silicon
# Valley Bank", "Geographic areas | Asia", "Consolidation Items | Intersegment eliminations".
_PART_ROW = re.compile(
    r"(?i:\b(?:segments?|geograph\w*|regions?|reportable|business(?:es)?|divisions?|"
    r"product\s+lines?|consolidation\s+items|eliminations?|subsidiar\w+|\[member\]|"
    r"\[axis\])\b)"
)


def _names_a_part(row: Sequence[str]) -> bool:
    """Whether ``row`` is a label naming a part with its name and no figure: beside it
    ("Operating segments | Silicon Valley Bank" in two cells) or in one cell, as SEC
    detail sheets write an axis and its member."""
    cells = [c.strip() for c in row if c.strip()]
    if not cells or row[0].strip() != cells[0] or _figure_beside(row):
        return False
    if len(cells) == 2:
        return bool(_PART_ROW.search(cells[0]))
    kind, bar, name = cells[0].partition(" | ")
    return len(cells) == 1 and bool(bar) and bool(name.strip()) and bool(_PART_ROW.search(kind))


# An XBRL member's mark: "Kaplan International [Member]".
_MEMBER = re.compile(r"\s*\[(?:member|axis|domain)\]\s*$", re.IGNORECASE)


def _part_named(row: Sequence[str]) -> str:
    """The part a row naming one names: its last member ("Kaplan International" of
    "Operating Segments [Member] | Education [Member] | … | Kaplan International
    [Member]"), or the name beside its kind ("Silicon Valley Bank")."""
    cells = [c.strip() for c in row if c.strip()]
    name = cells[1] if len(cells) == 2 else cells[0].rpartition(" | ")[2]
    return _MEMBER.sub("", name).strip()


def _members_named(row: Sequence[str]) -> str:
    """The part a row of members named bare above ``[Line Items]`` names: each member of
    an axis of its own ("United States | Concentrate operations": a country's part of a
    kind of business), never the last alone."""
    cells = [c.strip() for c in row if c.strip()]
    return " ".join(_MEMBER.sub("", p).strip() for p in cells[0].split(" | ") if p.strip())


# A table's header naming a group of businesses the company is disposing of: every row
# under it is that group's ("… - HELD FOR SALE ASSETS AND LIABILITIES (Details)").
_DISPOSAL_GROUP = re.compile(
    r"(?i:\b(?P<sale>held[\s-]+for[\s-]+sale)\b|\b(?P<disc>discontinued\s+operations?)\b)"
)


def _disposal_group(header: Sequence[str]) -> str:
    """The disposal group a table's header (its corner, where filings' sheets title the
    table) says its rows are of: ``"Held for sale"``, ``"Discontinued operations"``, or
    ``""``."""
    m = _DISPOSAL_GROUP.search(header[0]) if header else None
    if m is None:
        return ""
    return "Held for sale" if m.group("sale") else "Discontinued operations"


# The row an SEC detail sheet writes under each member it breaks a table down by.
_LINE_ITEMS = re.compile(r"(?i:\[line\s+items\]\s*$)")


def _member_over_items(row: Sequence[str], after: Sequence[Sequence[str]]) -> bool:
    """Whether ``row`` is a member named bare, as SEC detail sheets write a breakdown's
    parts: a label with no figure right above a ``… [Line Items]`` row ("Ice cream" over
    "Disaggregation of Revenue [Line Items]")."""
    cells = [c.strip() for c in row if c.strip()]
    if len(cells) != 1 or row[0].strip() != cells[0] or _LINE_ITEMS.search(cells[0]):
        return False
    return bool(after) and bool(after[0]) and bool(_LINE_ITEMS.search(after[0][0]))


def _figure_beside(row: Sequence[str]) -> bool:
    """Whether a row holds a number other than a year beside its label (the loaders'
    ``has_figure``, which this layer may not import, read with :func:`parse_number`)."""
    return any(parse_number(c) is not None and not _YEAR_CELL.match(c.strip()) for c in row[1:])


# The rows of an SEC filing's cover page ("Document and Entity Information"), as
# filings' spreadsheets and pages label them.
_COVER_LABEL = re.compile(
    r"(?i:^\s*(?:document\s|entity\s|current\s+fiscal\s+year\s+end|city\s+area\s+code|"
    r"local\s+phone|security\s+12|trading\s+symbol|amendment\s+flag|auditor\s|icfr\s|"
    r"no\s+trading\s+symbol|title\s+of\s+12|security\s+exchange))"
)
_FISCAL_YEAR_END = re.compile(r"(?i:^\s*current\s+fiscal\s+year\s+end\s+date)")
_REGISTRANT = re.compile(r"(?i:^\s*entity\s+registrant\s+name\s*$)")
# A legal form ending a registrant's name as EDGAR writes it ("COCA COLA CO", "DEAN FOODS
# CO /TX", "GRAHAM HOLDINGS CO"): no part of the name a reader says.
_LEGAL_FORM_END = re.compile(
    r"(?i:,?\s+(?:co|corp|corporation|company|inc|incorporated|ltd|limited|plc|llc|lp|"
    r"n\.?v|s\.?a|ag|se)\.?(?:\s*/[a-z]{2,3}/?)?\s*$)"
)


# An account of a chart of accounts as a ledger labels its row: its number, then its name
# ("41100 Workshops", "6710 - Depreciation-Office Equipment").
_ACCOUNT_LABEL = re.compile(r"^\s*\d{3,6}\s*(?:[-–—.:]\s*)?[^\W\d_]{2}")
# How a company says when its fiscal year ends: "Our fiscal year is the 52- or 53-week
# period that ends on the last Saturday of September", "… Form 10-K for the fiscal year
# ended January 29, 2023" (its own annual report, which a 10-Q refers to).
_YEAR_ENDS_ON = re.compile(
    rf"(?i)\bfiscal\s+year\s+(?:is\s+(?:the\s+)?(?:52|fifty-two)[^.]{{0,40}}?\s+)?(?:that\s+)?"
    rf"ends?\s+(?:on\s+)?(?:the\s+)?(?:last|final)\s+\w+day\s+(?:of|in)\s+{_MONTH}(?![a-z])"
    rf"|\bfiscal\s+year\s+ends?\s+(?:on\s+)?{_MONTH}\s+\d{{1,2}}\b(?!,?\s*(?:19|20)\d\d)"
)
_OWN_ANNUAL_REPORT = re.compile(
    rf"(?i)\bForm\s+10-K\s+for\s+the\s+fiscal\s+year\s+ended\s+{_MONTH}\s*(\d{{1,2}}),?\s*"
    r"((?:19|20)\d\d)"
)


def stated_year_end(text: str) -> set[int]:
    """The months a document says its company's fiscal years end in (:data:`_YEAR_ENDS_ON`,
    :data:`_OWN_ANNUAL_REPORT`); none where it says none."""
    months = {
        MONTH_NAMES.index(_month(m.group(1) or m.group(2))) + 1
        for m in _YEAR_ENDS_ON.finditer(text)
    }
    for m in _OWN_ANNUAL_REPORT.finditer(text):
        month, _ = _month_ended(
            MONTH_NAMES.index(_month(m.group(1))) + 1, m.group(2), int(m.group(3))
        )
        months.add(month)
    return months


# A cover page of an SEC form, and its commission file number, which the registrant's name
# follows ("Commission File Number 001-37845" over "MICROSOFT CORPORATION").
_SEC_FORM = re.compile(r"(?i:\bFORM\s+(?:10-[KQ]|20-F|40-F)\b)")
_FILE_NUMBER = re.compile(r"(?i:commission\s+file\s+(?:number|no\.?)\s*:?\s*[\d-]+)")
# The note a filing's cover page sets under the company's name.
_REGISTRANT_NOTE = re.compile(r"\(\s*exact\s+name\s+of\s+registrant\b[^)]{0,60}\)", re.IGNORECASE)


def _registrant(name: str) -> str:
    """The company a filing's cover page names (``Entity Registrant Name``) as a reader
    names it: ``Apple Inc.`` → ``Apple``, ``COCA COLA CO`` → ``Coca Cola``; ``""`` for no
    name."""
    name = normalize(name)
    if not name:
        return ""
    named = company_named(name)
    if named is not None:
        return named
    if sum(c.isupper() for c in name) > 2 * sum(c.islower() for c in name):
        name = " ".join(map(_unshouted, name.split(" ")))
    name = _WEB_SUFFIX.sub("", name)
    return _LEGAL_FORM_END.sub("", name).strip(" ,") or name


# "--12-31": a month and day of every year, as the cover page writes the year's end.
_YEAR_END_DATE = re.compile(r"^\s*--(0[1-9]|1[0-2])-(\d{2})\s*$")

_ENDED_SPAN = re.compile(rf"^(\d{{1,2}})M ended ({'|'.join(MONTH_NAMES)})$")
_TITLE_ENDING = re.compile(
    rf"^(?:\d{{1,2}}M ended )?(?P<month>{'|'.join(MONTH_NAMES)}) (?P<year>\d{{4}})$"
)


def _title_year(period: str, spans: Sequence[str]) -> str | None:
    """The period of a cell whose labels name the part of a year ``spans`` (one of them)
    under a title naming ``period``: ``period`` itself when the labels name its own part
    (a column ``Q3`` under ``Q3 2025``); the labels' span with the title's year when the
    labels name months ending in a month and the title a span or month ending in that
    month of a year (``9M ended Mar`` under ``3M ended Mar 2025`` is ``9M ended Mar
    2025``); else ``None``: a quarter or half of a fiscal year says nothing about which
    calendar year a month falls in."""
    if len(spans) != 1:
        return None
    span = spans[0]
    if re.sub(r"\s*(?:FY)?\d{4}$", "", period) == span:
        return period
    labelled, titled = _ENDED_SPAN.match(span), _TITLE_ENDING.match(period)
    if labelled is None or titled is None or labelled.group(2) != titled.group("month"):
        return None
    return f"{span} {titled.group('year')}"


@dataclass(frozen=True, slots=True)
class _Resolved:
    value: str | None
    ambiguous: str | None = None  # the context that named two values
    at: int | None = None  # index of the deciding context


class _Extractor:
    def __init__(self, vocab: Vocabulary, doc_id: str, title: str) -> None:
        self.vocab = vocab
        self.settings = vocab.settings
        self.doc_id = doc_id
        self.title = title
        self.entity = document_entity(title) or doc_id
        # what the file's own name calls the document's subject, when the title is one
        self._file_entity = _slug_entity(title.strip()) if _SLUG.match(title.strip()) else ""
        # entity → other names of it (the file name's, where a table names the company)
        self.other_names: dict[str, set[str]] = {}
        self._readings: dict[str, Reading] = {}
        self._labels: dict[str, Reading] = {}
        self.skipped: dict[tuple[str, str], int] = {}
        # entity → the months its fiscal years end in, as its tables say
        self.year_ends: dict[str, set[int]] = {}
        # the months a filing's cover page says the filer's fiscal years end in
        self.stated_year_ends: set[int] = set()
        # the company a filing's cover page names, once read (it names the document's entity)
        self._registrant = ""
        # whether the first page is a quarterly report's cover (its twelve months trail)
        self.quarterly = False
        self._texts_read = 0
        self._trailing_table = False  # whether the table read now is a quarterly report's
        # the sheets (tables) whose rows from some row on are a part's (_own_rows)
        self._parted: dict[str, str] = {}  # a table → the part its rows are now of

    def _company(
        self, corner: str, titles: Sequence[str] = (), captions: Sequence[str] = ()
    ) -> str:
        """The company a table's corner names with its legal form, else the nearest of its
        ``titles`` that does (a sheet's title row "The Procter & Gamble Company — Form
        10-Q …"), else whom a statement's title block names (:func:`statement_entity`),
        else whose financial information the sentence introducing it says it is
        ("summarized financial information of Rivian": an investee's, in a 10-Q's note),
        else the document's entity; a file name that calls that company otherwise gives it
        another name."""
        company = next(filter(None, map(company_named, (corner, *titles))), None)
        company = company or statement_entity(titles) or _whose_financials(captions)
        if company is None:
            return self.entity
        if self._file_entity and self._file_entity.casefold() != company.casefold():
            self.other_names.setdefault(company, set()).add(self._file_entity)
        return company

    def _note_year_end(self, entity: str, period: str, labels: Sequence[str]) -> None:
        """Keep the month a full year's labels say the entity's fiscal years end in; not
        for twelve months that trail a quarter (:func:`_trailing`), which end in any."""
        if self._trailing_table and any(_TWELVE_MONTHS.search(label) for label in labels):
            return
        if _YEAR_PERIOD.match(period):
            month = fiscal_year_end(labels)
            if month is not None:
                self.year_ends.setdefault(entity, set()).add(month)

    def _read(self, text: str) -> Reading:
        reading = self._readings.get(text)
        if reading is None:
            reading = self.vocab.read(_label(text))
            self._readings[text] = reading
        return reading

    def _read_label(self, text: str) -> Reading:
        """A table label read like any text, and a bare year in it (``2024``, ``2024*``,
        ``2024 actual``) as that fiscal year: annual reports head their columns so. A
        year inside a date or beside other digits is not a period."""
        reading = self._labels.get(text)
        if reading is None:
            reading = self._read(text)
            residue = reading.residue()
            years = list(_BARE_YEAR.finditer(residue))
            if (
                not reading.values["period"]
                and len(years) == 1
                and not re.search(r"\d", residue[: years[0].start()] + residue[years[0].end() :])
                and not re.search(_MONTH, residue, re.IGNORECASE)
            ):
                m = years[0]
                values = dict(reading.values)
                values["period"] = (f"FY{m.group(1)}",)
                spans = tuple(sorted((*reading.spans, (m.start(), m.end()))))
                reading = Reading(reading.text, values, spans)
            self._labels[text] = reading
        return reading

    def _cell(self, text: str, first: bool = False) -> _Cell:
        number = parse_number(text) if text.strip() else None
        if number is not None and self.vocab.find_periods(text):
            number = None  # "2024年度" is a label, not the number 2024
        if number is not None and first and _YEAR_CELL.match(normalize(_label(text))):
            number = None  # a year heading its row
        if number is not None and first and _ACCOUNT_LABEL.match(text):
            number = None  # an account's number and name heading its row ("41100 Workshops")
        return _Cell(number, text)

    def _names_slot(self, text: str) -> bool:
        """Whether ``text`` names a metric, entity, period or channel."""
        values = self._read_label(text).values
        return any(values[kind] for kind in ("metric", "entity", "period", "channel"))

    def resolve(self, kind: ReadKind, contexts: Sequence[str], labels: int = 0) -> _Resolved:
        """The nearest context that names anything decides; two names there: ambiguous.
        The first ``labels`` contexts are table labels (a bare year there is a period)."""
        for i, context in enumerate(contexts):
            if not context:
                continue
            reading = self._read_label(context) if i < labels else self._read(context)
            values = reading.values[kind]
            if len(values) == 1:
                return _Resolved(values[0], at=i)
            if values:
                return _Resolved(None, ambiguous=context, at=i)
        return _Resolved(None)

    def section_facts(self, section: Section) -> list[Fact]:
        table = section.table
        if not table or len(table) < 2:
            return []
        try:
            parts = parse_locator(section.locator)
        except ValueError:
            parts = []
        place = _table_place(parts, section.locator)
        named = max((j + 1 for j, h in enumerate(table[0]) if h.strip()), default=0)
        wider = (
            sum(1 for row in table[1:] for c in row if c.strip() and parse_number(c) is not None)
            if any(any(c.strip() for c in row[named:]) for row in table[1:])
            else 0
        )
        if wider and "rows" in dict(parts):
            place = "every row"  # one line for the file, not one per block of rows
            # A CSV's "Date,…,Number of Days" over rows of seven cells: a header a column
            # short, so which column a figure is under is a guess (a count of days read as
            # the trend); the file's text is still indexed, its figures are not facts
            reason = "rows hold more cells than the header names columns (a shifted header)"
            self.skipped[(place, reason)] = self.skipped.get((place, reason), 0) + wider
            return []
        rows = self._own_rows(
            table[1:], dict(parts).get("sheet", place), place, _disposal_group(table[0])
        )
        if len(rows) < len(table) - 1:
            if not rows:
                return []
            table = (table[0], *rows)
        read = _months_dated(table)
        read = (_parted_columns(read[0]), *read[1:])
        written = _as_written(table, read)  # cells read otherwise, located as written
        table = read
        keys = {k for k, _ in parts}
        outer = [*section.captions, *section.titles, *_outer_contexts(parts, self.title)]
        header = table[0]
        # a column a date heads is that month's only where nothing says it spans months
        own = [*section.captions, *section.titles, *_outer_contexts(parts, "")]
        spans = _spans_months([header[0] if header else "", *own])
        facts: list[Fact] = []
        skipped_before = sum(n for (at, _), n in self.skipped.items() if at == place)
        numbers = 0
        period_col = _period_column(header, table[1:])
        # a quarterly report's twelve months (beside three or six ended the same month)
        quarterly = self.quarterly or any(
            _TRAILING.search(h) for h in (*header, *section.captions, *section.titles)
        )
        self._trailing_table = quarterly
        # Long format: a column of years beside one of the row's value (``fiscal_year |
        # actual_value``) or beside columns of labels (``year | fuel | emissions_mt``);
        # a column of years beside nothing but columns headed by what they measure
        # (``Year | Revenue | Profit``) is read as a wide table.
        long = period_col is not None and (
            any(_VALUE_HEADER.match(normalize(h.replace("_", " "))) for h in header)
            or bool(_label_columns(header, table[1:], period_col))
        )
        # a column with no header whose cells are all years labels its rows by year, like
        # the first column (``Beauty | 2025 | 3,490``): its years are no figures
        labelled = {0, period_col, *_year_columns(header, table[1:])}
        for row in table[1:]:
            cells = [self._cell(text, first=i in labelled) for i, text in enumerate(row)]
            numbers += sum(c.number is not None for c in cells)
            leading: list[str] = []
            for c in cells:
                if c.number is not None:
                    break
                if c.text.strip():
                    leading.append(c.text)
            for col, cell in enumerate(cells):
                if cell.number is None:
                    continue
                try:
                    if long:
                        assert period_col is not None
                        fact = self._long_fact(parts, keys, outer, header, cells, period_col, col)
                    else:
                        fact = self._fact(section, parts, keys, outer, header, cells, leading, col)
                except Exception:  # a bad cell is skipped, never the document
                    log.warning("facts: skipped a cell of %s at %s", self.doc_id, section.locator)
                    continue
                if isinstance(fact, Fact) and spans and _dated_month(fact.period, header, col):
                    fact = "a column headed by a date, of a table over a span of months"
                if isinstance(fact, Fact):
                    fact = _trailing(fact, header, col, quarterly)
                if isinstance(fact, Fact) and self.quarterly and _year_alone(fact, header, col):
                    # a 10-Q's MD&A heads its quarter's columns "2022" and "2021" under a
                    # line it sets apart: never the fiscal year
                    fact = "a quarterly report's column naming a year alone"
                if isinstance(fact, Fact):
                    facts.append(_located_as_written(fact, written) if written else fact)
                elif fact is not None:
                    key = (place, fact)
                    self.skipped[key] = self.skipped.get(key, 0) + 1
        skipped = sum(n for (at, _), n in self.skipped.items() if at == place) - skipped_before
        if numbers and not facts and not skipped:
            self.skipped[(place, self._why_none(header, outer))] = numbers
        elif facts:
            for text, n in self._unread_headers(header, table[1:]).items():
                self.skipped[
                    (place, f"header '{_clip(normalize(text))}' is not read as a period")
                ] = n
        return facts

    def _own_rows(
        self, rows: Sequence[tuple[str, ...]], table: str, place: str, group: str = ""
    ) -> list[tuple[str, ...]]:
        """``rows`` without those no figure of the document's company is read from (a
        filing's cover page, :meth:`_cover_row`), and with every row of ``table`` (a sheet,
        or a table) after a row naming a part of the company named as that part's: under
        "Operating segments | Silicon Valley Bank", as an SEC detail sheet heads each
        segment's rows after the company's, "Depreciation and amortization" is "Silicon
        Valley Bank Depreciation and amortization", never the company's total; each part's
        row starts the next part's rows. A part whose name is lost (no name beside its
        kind) gives no figure (reported among the warnings). The rows of a table whose
        header names a ``group`` of businesses the company is disposing of ("Held for
        sale", :func:`_disposal_group`) are that group's: its "Long-term debt" is the debt
        of the businesses held for sale, never the company's, so only rows naming the group
        ("Liabilities held for sale") give figures."""
        kept: list[tuple[str, ...]] = []
        for i, row in enumerate(rows):
            if self._cover_row(row):
                continue
            if _names_a_part(row):
                self._parted[table] = _part_named(row)
                continue
            if _member_over_items(row, rows[i + 1 : i + 2]):
                self._parted[table] = _members_named(row)
                continue
            if group and _figure_beside(row) and group.casefold() not in row[0].casefold():
                reason = f"rows of a group of businesses {group.lower()} not read as the company's"
                self.skipped[(place, reason)] = self.skipped.get((place, reason), 0) + 1
                continue
            part = self._parted.get(table)
            if part is not None and _figure_beside(row):
                label = row[0].strip() if row else ""
                if not part or not label:
                    reason = "rows of a part of the company (a segment's) not read"
                    self.skipped[(place, reason)] = self.skipped.get((place, reason), 0) + 1
                    continue
                row = (f"{part} {label}", *row[1:])
            kept.append(row)
        return kept

    def read_cover(self, text: str) -> None:
        """Keep the company a filing's cover page names over "(Exact name of registrant as
        specified in its charter)" as the document's entity, as a workbook's ``Entity
        Registrant Name`` row is (:meth:`_cover_row`): a filing's PDF whose title is its
        accession number, or a date, names its company nowhere else."""
        if not self._texts_read and _QUARTERLY_COVER.search(text):
            self.quarterly = True  # the document's first page: a quarterly report's cover
        self._texts_read += 1
        self.stated_year_ends.update(stated_year_end(text))
        if self._registrant:
            return
        found = _REGISTRANT_NOTE.search(text)
        if found is not None:
            above = [line.strip(" _") for line in text[: found.start()].splitlines()]
            name = next((line for line in reversed(above) if line), "")
        elif _SEC_FORM.search(text) and (filed := _FILE_NUMBER.search(text)) is not None:
            # the form's own order: the file number, then the registrant's exact name
            below = [line.strip(" _") for line in text[filed.end() :].splitlines()]
            name = next((line for line in below if re.search(r"[^\W\d_]{2}", line)), "")
        else:
            return
        if company := _registrant(name):
            if self._file_entity and self._file_entity.casefold() != company.casefold():
                self.other_names.setdefault(company, set()).add(self._file_entity)
            self.entity = self._registrant = company

    def _cover_row(self, row: Sequence[str]) -> bool:
        """Whether ``row`` is a row of an SEC filing's cover page (its form, the company's
        address, phone and tickers: no figure of the company's), keeping the month its
        "Current Fiscal Year End Date" (``--12-31``) says the company's years end in."""
        label = row[0] if row else ""
        if not _COVER_LABEL.match(label):
            return False
        if _REGISTRANT.match(label):
            name = next((c.strip() for c in row[1:] if c.strip()), "")
            if (company := _registrant(name)) and not self._registrant:
                # The filing's own word for whom its figures are of, ahead of its title's
                # (a title an operator wrote: "… Form 10-K financial report (SEC workbook)").
                if self._file_entity and self._file_entity.casefold() != company.casefold():
                    self.other_names.setdefault(company, set()).add(self._file_entity)
                self.entity = self._registrant = company
        if _FISCAL_YEAR_END.match(label):
            for cell in row[1:]:
                if (end := _YEAR_END_DATE.match(cell)) is not None:
                    # "--02-01": a 52–53-week year ending by February 1 is January's
                    month, _ = _month_ended(int(end.group(1)), end.group(2), 2)
                    self.stated_year_ends.add(month)
        return True

    def _why_none(self, header: Sequence[str], outer: Sequence[str]) -> str:
        """Why a table with numbers gave no fact, for the operator."""
        if not any(self._periodish(h) for h in header) and not any(
            self._read(t).values["period"] for t in outer
        ):
            return "no header, row label or title reads as a period"
        return "no label names what its figures measure"

    def _periodish(self, text: str) -> bool:
        if not text.strip():
            return False
        norm = normalize(text)
        return bool(
            self._read_label(text).values["period"]
            or partial_markers(norm)
            or sub_markers(norm)
            or _WHOLE_YEAR.search(norm)
        )

    def _unread_headers(
        self, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> dict[str, int]:
        """Column headers with digits that do not read as a period, in a table whose other
        numeric columns are headed by periods (``FY2024/25``, ``FY20245``): their values
        were not taken, and the operator hears which header it was."""
        period_cols = [i for i, h in enumerate(header) if i and self._periodish(h)]
        if not period_cols:
            return {}
        out: dict[str, int] = {}
        for i, text in enumerate(header):
            if not i or i in period_cols or not re.search(r"\d", text):
                continue
            n = sum(1 for row in rows if i < len(row) and parse_number(row[i]) is not None)
            if n:
                out[text] = n
        return out

    def _fact(
        self,
        section: Section,
        parts: Sequence[tuple[str, str]],
        keys: set[str],
        outer: Sequence[str],
        header: Sequence[str],
        cells: Sequence[_Cell],
        leading: Sequence[str],
        col: int,
    ) -> Fact | str | None:
        """The cell's fact: named by the vocabulary, else by the table's own labels
        (:meth:`_derived_fact`); else why not, when a reader should hear of it."""
        args = (section, parts, keys, outer, header, cells, leading, col)
        named = self._vocab_fact(*args)
        if named is not None:
            return named
        return self._derived_fact(*args)

    def _vocab_fact(
        self,
        section: Section,
        parts: Sequence[tuple[str, str]],
        keys: set[str],
        outer: Sequence[str],
        header: Sequence[str],
        cells: Sequence[_Cell],
        leading: Sequence[str],
        col: int,
    ) -> Fact | str | None:
        """The cell's fact by the ``[facts]`` vocabulary; else why not, when a reader should
        hear of it (the table names a metric but not what it is for, or is ambiguous);
        else ``None``."""
        if not self.vocab.has_metrics:
            return None
        cell = cells[col]
        number = cell.number
        assert number is not None
        row_label = cells[0].text if col != 0 and cells[0].number is None else ""
        column = header[col] if col < len(header) else ""
        # The top-left cell, when column 0 holds row labels: it often names what the whole
        # table is about ("Japan" above metric rows and period columns).
        corner = header[0] if col != 0 and cells[0].number is None and header else ""
        others = [
            c.text
            for i, c in enumerate(cells)
            if i not in (0, col) and c.number is None and c.text.strip()
        ]
        # A label that names nothing we know is a measure we do not know ("Named
        # accounts", "Units sold"): such a cell is not a fact. Exceptions, for long format:
        # an unknown row label (an ID) when other cells of the row name slots, and an
        # unknown column header ("Value") when this is the row's only number.
        numbers = sum(c.number is not None for c in cells)
        if column.strip() and numbers > 1 and not self._names_slot(column):
            return None
        if (
            row_label.strip()
            and not self._names_slot(row_label)
            and not any(self._names_slot(o) for o in others)
        ):
            return None
        local = [number.unit_text, row_label, column, *others, corner]
        contexts = [*local, *outer]
        metric = self.resolve("metric", contexts)
        if metric.value is None:
            return f"two metrics named in '{_clip(metric.ambiguous)}'" if metric.ambiguous else None
        entity = self.resolve("entity", contexts)
        period = self.resolve("period", contexts, len(local))
        for name, slot in (("entities", entity), ("periods", period)):
            if slot.ambiguous is not None:
                return f"two {name} named in '{_clip(slot.ambiguous)}'"
        missing = [n for n, slot in (("entity", entity), ("period", period)) if slot.value is None]
        if missing:
            return f"no {' or '.join(missing)} named"
        assert entity.value is not None and period.value is not None
        narrowed = self._narrow(
            period.value,
            contexts,
            len(local),
            own=len(local),
            titled=(period.at or 0) >= len(local),
        )
        if isinstance(narrowed, _Skip):
            return narrowed.why
        # whole: the cell's own text and the other label cells (a long format's unit column)
        whole = frozenset({0, *range(3, 3 + len(others))})
        # A note right above the table ("(in thousands)") is as near as its own labels.
        near = len(local) + len(section.captions)
        unknown = self._unknown_unit(contexts, near, whole, metric.at)
        if unknown is not None:
            return f"unit not recognised: '{_clip(unknown)}'"
        channel = self.resolve("channel", contexts)
        if channel.ambiguous is not None:
            return f"two channels named in '{_clip(channel.ambiguous)}'"
        unit = self.resolve("unit", contexts)
        if unit.ambiguous is not None:
            return f"two units named in '{_clip(unit.ambiguous)}'"
        self._note_year_end(entity.value, narrowed, contexts)
        return Fact(
            entity=entity.value,
            period=narrowed,
            metric=metric.value,
            channel=channel.value or self.settings.default_channel,
            value=number.value,
            unit=unit.value or self.settings.metric_units.get(metric.value, ""),
            doc_id=self.doc_id,
            locator=_cell_locator(parts, keys, leading, column, col),
            raw=cell.text.strip(),
        )

    def _narrow(
        self,
        period: str,
        contexts: Sequence[str],
        labels: int,
        *,
        own: int = 0,
        titled: bool = False,
    ) -> str | _Skip:
        """``period`` narrowed by the partial markers of the labels and titles around the
        cell that no period took in (a column headed ``YTD`` or ``上半期`` under a title
        naming FY2024 is ``YTD FY2024`` or ``H1 2024``, never FY2024); skipped when they
        name two different parts. A quarter under a title whose dates span that many
        quarters from the year's start is the year to that quarter: a 決算短信's
        "第2四半期" under "(2023年4月1日~2023年9月30日)" is six months, ``Q1–Q2 FY2024``.

        A part of a year that the table's own labels name (the first ``own`` contexts: a
        column headed ``Nine Months Ended March 31``) is never replaced by another part a
        title names (``titled``: the period came from a title, ``the quarter ended March 31,
        2025``): the title may only give its year (:meth:`_title_year`), else the cell is
        skipped, with the reason."""
        if not _YEAR_PERIOD.match(period):
            if titled:
                spans = self._label_spans(contexts[:own])
                if spans:
                    kept = _title_year(period, spans)
                    if kept is None:
                        shown = "', '".join(spans)
                        return _Skip(
                            f"the table's '{shown}' is a different part of the year than the "
                            f"title's {period}"
                        )
                    period = kept
            return _cumulative(period, contexts)
        markers: list[str] = []
        for i, context in enumerate(contexts):
            if not context.strip():
                continue
            reading = self._read_label(context) if i < labels else self._read(context)
            residue = reading.residue()
            # a whole year's twelve months ("Year Ended June 30") narrow no year
            markers += [m.canonical for m in partial_markers(residue) if m.canonical != "12M"]
            markers += [m.canonical for m in sub_markers(residue)]
        distinct = list(dict.fromkeys(markers))
        if not distinct:
            return period
        if len(distinct) > 1:
            return _Skip("two partial periods named")
        return combine_period(period, distinct[0]) or _Skip("two partial periods named")

    def _label_spans(self, labels: Sequence[str]) -> list[str]:
        """The parts of a year that table labels name with no year (``9M ended Mar``,
        ``Q3``, ``YTD``), outside any period they name with one."""
        spans: list[str] = []
        for label in labels:
            if not label.strip():
                continue
            reading = self._read_label(label)
            residue = reading.residue()
            spans += [m.canonical for m in periods_without_year(residue, [])]
        return list(dict.fromkeys(spans))

    def _long_fact(
        self,
        parts: Sequence[tuple[str, str]],
        keys: set[str],
        outer: Sequence[str],
        header: Sequence[str],
        cells: Sequence[_Cell],
        period_col: int,
        col: int,
    ) -> Fact | str | None:
        """A long-format table's cell (``component | category | subcategory | fiscal_year |
        actual_value``, one row per line and year): the period from the row's period
        column; each label column by the role its header names (:func:`_label_role`): the
        entity (``Country Name``; a code column is another name of it), what is measured
        (``component``), else a line. With no measure column, what is measured is the
        file's subject where the rows name whom (``gdp.csv``), else the first label
        (``outlay``); the line is the most specific other label that is not a total
        (``Social Security``; ``Total Mandatory`` is the line ``Mandatory``); the entity,
        when no column names it, from a label, the titles or the document as in a wide
        table. A column headed as the row's value (``value``,
        ``actual_value``, ``amount``) gives the line's figure, one headed as a share of it
        (``actuals_pct_GDP``, ``% of revenue``) the line's percentage, under that heading;
        another numeric column is the measure its header names (``GDP``, ``emissions_mt``),
        broken down by the row's lines only. A column headed ``unit`` or ``currency`` gives
        the row's unit."""
        column = header[col] if col < len(header) else ""
        # "gdp_trillion" measures GDP, in trillions: the unit is no part of the metric's name
        measured, tail = unit_tail(column)
        heading = normalize(measured.replace("_", " "))
        rate = _RATE_HEADER.search(heading) is not None
        # a column headed by what it measures (GDP, emissions_mt) beside the row's value
        # measures that, broken down by the row's lines only
        headed = not rate and not _VALUE_HEADER.match(heading)
        number = cells[col].number
        assert number is not None
        period_text = cells[period_col].text
        period = self.resolve("period", [period_text, *outer], 1)
        if period.ambiguous is not None:
            return f"two periods named in '{_clip(period.ambiguous)}'"
        if period.value is None:
            return "no period named"
        units = [
            c.text
            for i, c in enumerate(cells)
            if i < len(header) and _UNIT_HEADER.match(normalize(header[i])) and c.text.strip()
        ]
        # label columns by what their headers say they hold: whom (Country Name), a code
        # of it (Country Code), what is measured (component, indicator), else a line
        roles: dict[str, list[str]] = {"entity": [], "code": [], "measure": [], "line": []}
        country_codes: list[str] = []  # the codes of a column headed as countries' codes
        labels: list[str] = []
        for i, c in enumerate(cells):
            if i in (col, period_col) or c.number is not None or not c.text.strip():
                continue
            if c.text in units:
                continue
            text = normalize(_label(c.text))
            labels.append(text)
            head = header[i] if i < len(header) else ""
            roles[_label_role(head)].append(text)
            if _COUNTRY_CODE_HEADER.search(normalize(_label(head).replace("_", " "))):
                country_codes.append(c.text.strip())
        narrowed = self._narrow(
            period.value,
            [period_text, *labels, *outer],
            1 + len(labels),
            own=1 + len(labels),
            titled=bool(period.at),
        )
        if isinstance(narrowed, _Skip):
            return narrowed.why
        entity = roles["entity"][0] if roles["entity"] else None
        dims = roles["line"]
        if entity is None:
            named = [self._read_label(t).values for t in dims]
            entity = next((v["entity"][0] for v in named if v["entity"]), None)
            dims = [t for t, v in zip(dims, named, strict=True) if not v["entity"]]
        if headed:
            measure, lines = measure_name(heading), dims
            if measure is None and _total_column(heading):
                measure = "total"
        elif roles["measure"]:
            measure, lines = measure_name(roles["measure"][0]), dims
        elif entity is not None or roles["code"]:
            # the rows name whom, not what: the values measure what the file is (gdp.csv)
            measure, lines = measure_name(_file_subject(self.title)), dims
        else:
            measure, lines = (measure_name(dims[0]) if dims else None), dims[1:]
        if measure is None:
            return None
        lines = [t for t in lines if not _is_total(t, measure)]
        member = measure_name(lines[-1]) if lines else None
        if entity is None:
            found = self.resolve("entity", outer)
            if found.ambiguous is not None:
                return f"two entities named in '{_clip(found.ambiguous)}'"
            # A data file's name ("actuals.csv") is no one's name: unnamed, its figures are
            # stated without an entity rather than as "actuals'".
            entity = found.value or company_named(self.title) or self._file_entity
        elif roles["code"]:
            # "Korea, Rep." beside the code "KOR": a name written as a statistics office
            # abbreviates it is the country its ISO code says
            entity = _coded_country(entity, country_codes)
            self.other_names.setdefault(entity, set()).update(roles["code"])
        locator_parts: list[tuple[str, object]] = list(parts)
        if "row" not in keys:
            row = " / ".join([*labels, normalize(period_text)])
            locator_parts.append(("row", _clip(row)))
        if "col" not in keys:
            locator_parts.append(("col", _clip(normalize(column))))
        return Fact(
            entity=entity,
            period=narrowed,
            metric=self._derived_metric(measure),
            channel=member or self.settings.default_channel,
            value=number.value,
            unit="%" if rate else self._derived_unit(number, [*units, column], outer) or tail,
            doc_id=self.doc_id,
            locator=format_locator(*locator_parts),
            raw=cells[col].text.strip(),
        )

    def _derived_fact(
        self,
        section: Section,
        parts: Sequence[tuple[str, str]],
        keys: set[str],
        outer: Sequence[str],
        header: Sequence[str],
        cells: Sequence[_Cell],
        leading: Sequence[str],
        col: int,
    ) -> Fact | str | None:
        """The cell's fact from the table's own labels, with no vocabulary: the period from
        its column header (or its row's period label), what it measures from the label on
        the other axis (``Net sales``; under a title ``Net sales by category`` the row
        ``iPhone`` is the line ``iPhone`` of net sales), the entity from the vocabulary
        or else the document's title, the unit as a label writes it. ``None`` when the
        table does not say all of that."""
        cell = cells[col]
        number = cell.number
        assert number is not None
        labels_in_row = [
            (i, c.text)
            for i, c in enumerate(cells)
            if i != col and c.number is None and c.text.strip()
        ]
        column = header[col] if col < len(header) else ""
        corner = header[0] if col != 0 and cells[0].number is None and header else ""
        reporting = _reporting_column(column)
        if reporting == "change":
            base = self._changed_column(header, cells, col)
            if base is None:
                return "a change column, not a figure"
            reporting = base
        if reporting is not None:
            return self._reporting_fact(
                reporting, section, parts, keys, outer, column, corner, cells, leading, col
            )
        measured: str | None = None
        if self._periodish(column):
            period_text, measured = self._column_parts(column)
            if measured is not None:
                # the column names its measure too: the row's labels are lines of it
                measure_text, members = measured, [t for _, t in labels_in_row]
            else:
                first = labels_in_row[0][1] if labels_in_row and labels_in_row[0][0] == 0 else ""
                measure_text, members = first, [t for i, t in labels_in_row if i != 0]
            period_text = self._with_row_year(period_text, [t for _, t in labels_in_row])
        else:
            periodish = [t for _, t in labels_in_row if self._periodish(t)]
            if len(periodish) != 1:
                return None
            if _YEAR_IN.search(column) or _SPAN_ENDED.search(column):
                # "Dec. 31, 2024" over rows "2025", "2026": what falls due in each year as
                # at that date; the column names a date, not what its figures measure
                return "a column headed by a date or a span names no measure"
            period_text = periodish[0]
            measure_text = column
            members = [t for _, t in labels_in_row if t is not period_text]
        period = self.resolve("period", [period_text, *outer], 1)
        if period.ambiguous is not None:
            return f"two periods named in '{_clip(period.ambiguous)}'"
        if period.value is None:
            return "no period named"
        texts = [period_text, measure_text, *members, corner, *outer]
        narrowed = self._narrow(
            period.value, texts, 4 + len(members), own=3 + len(members), titled=bool(period.at)
        )
        if isinstance(narrowed, _Skip):
            return narrowed.why

        entity: str | None = None
        names = self._read_label(measure_text).values if measure_text.strip() else None
        if names is not None and names["entity"] and not names["metric"]:
            entity, measure_text = names["entity"][0], ""
        split = None
        if measured is None:
            split = self._split(
                [corner, *section.captions, *section.titles, *_outer_contexts(parts, "")]
            )
        if split is None and measured is None and _DIMENSION.search(normalize(corner)):
            # "Region" above the row labels: the rows are lines of what a title measures
            split = self._titled_measure(
                [*section.captions, *section.titles, *_outer_contexts(parts, self.title)]
            )
        if split is None and measured is None:
            split = self._corner_measure(corner, section.table or ())
        measure = measure_name(measure_text)
        member: str | None = None
        if split is not None and not _unit_group(measure_text):
            if measure is not None and not _is_total(measure_text, split):
                member = _member_name(measure_text, split)
            measure = split
        elif (
            measure is None
            and corner.strip()
            and not self._periodish(corner)
            and not _PERIOD_HEADER.match(normalize(_label(corner).replace("_", " ")))
        ):
            measure = measure_name(corner)
        if measure is None:
            return None
        for text in members:
            named = self._read_label(text).values
            if named["entity"] and entity is None:
                entity = named["entity"][0]
            elif not named["period"] and member is None and not _is_total(text, measure):
                member = measure_name(text)
        if entity is None:
            found = self.resolve("entity", [corner, *outer])
            if found.ambiguous is not None:
                return f"two entities named in '{_clip(found.ambiguous)}'"
            entity = found.value or self._company(corner, section.titles, section.captions)
        channel = member or _plan_channel(self._read_label(period_text).residue())
        if channel is None:
            named_channel = self.vocab.values("channel", period_text)
            channel = named_channel[0] if len(named_channel) == 1 else None
        unit = self._derived_unit(number, [measure_text, column, corner, *members], outer)
        self._note_year_end(entity, narrowed, [period_text, column, corner, *outer])
        return Fact(
            entity=entity,
            period=narrowed,
            metric=self._derived_metric(measure),
            channel=channel or self.settings.default_channel,
            value=number.value,
            unit=unit,
            doc_id=self.doc_id,
            locator=_cell_locator(parts, keys, leading, column, col),
            raw=cell.text.strip(),
        )

    def _column_parts(self, column: str) -> tuple[str, str | None]:
        """A header of two rows (``Three Months Ended March 31 — Net Sales``, see
        :class:`~clearance.ingest.loaders.common.SheetPacker`) split into the part naming
        its period and the part naming its measure; ``(column, None)`` for any other header,
        and when the other part qualifies the figure rather than naming a measure
        (``Actual``, ``Budget``, ``% change``)."""
        parts = [p for p in column.split(LABEL_SEPARATOR) if p.strip()]
        if len(parts) != 2:
            return column, None
        timed = [self._periodish(p) for p in parts]
        if timed.count(True) != 1:
            return column, None
        period, other = (parts[0], parts[1]) if timed[0] else (parts[1], parts[0])
        norm = normalize(_label(other))
        if (
            measure_name(other) is None
            or _QUALIFIER.match(norm)
            or _plan_channel(norm) is not None
            or _reporting_column(other) is not None
            or _RATE_HEADER.search(norm)
        ):
            return column, None
        return period, other

    def _with_row_year(self, period_text: str, labels: Sequence[str]) -> str:
        """A column's part of a year named with no year (``Nine Months Ended March 31``)
        with the year its row is labelled by (``2024``): ``Nine Months Ended March 31,
        2024``, read as the nine months ended March 2024. Only for a row with one label that
        is a year alone; else ``period_text`` as it is."""
        if self._read_label(period_text).values["period"]:
            return period_text
        if not periods_without_year(normalize(period_text), []):
            return period_text
        years = [normalize(t) for t in labels if _YEAR_CELL.match(normalize(_label(t)))]
        if len(years) != 1:
            return period_text
        return f"{period_text}, {years[0]}"

    @staticmethod
    def _changed_column(header: Sequence[str], cells: Sequence[_Cell], col: int) -> str | None:
        """The reporting column (``"current"``, ``"ytd"`` …) whose percentage change a change
        column gives (``本报告期比上年同期增减`` → the 本报告期 column's): then the change is
        a rate of the same line for the same period, which only a question asking for a rate
        gets (:func:`clearance.answer.structured.query_metric`). ``None`` when the column
        does not name one, the cell is no percentage, or the changed figure is itself a
        percentage (a change of a rate is in points, not a rate of it)."""
        norm = normalize(_GROUP.sub(" ", _label(header[col]))).strip()
        prefix = re.split(r"比|比較|vs\.?|versus", norm, maxsplit=1)[0].strip()
        base = _reporting_column(prefix) if prefix and prefix != norm else None
        if base in (None, "change") or not cells[col].text.strip().endswith(("%", "％")):
            return None
        changed = [
            i
            for i, name in enumerate(header)
            if i != col
            and i < len(cells)
            and normalize(_GROUP.sub(" ", _label(name))).strip() == prefix
        ]
        if any(cells[i].text.strip().endswith(("%", "％")) for i in changed):
            return None
        return base

    def _reporting_fact(
        self,
        reporting: str,
        section: Section,
        parts: Sequence[tuple[str, str]],
        keys: set[str],
        outer: Sequence[str],
        column: str,
        corner: str,
        cells: Sequence[_Cell],
        leading: Sequence[str],
        col: int,
    ) -> Fact | str | None:
        """A column headed ``本报告期`` (this reporting period) or ``年初至报告期末`` (from the
        start of the year to the end of it), as Chinese and Japanese quarterly reports head
        them: the period is the one the table's title names (``2023年第三季度报告`` →
        ``Q3 2023``), the year-to-date column is the quarters up to it (``Q1–Q3
        FY2023``), and a balance at the end of the year before (``上年度末``) is that year's
        (``FY2022``). With no title naming one quarter or half, nothing is guessed."""
        named = self.resolve("period", [corner, *outer])
        if named.ambiguous is not None:
            return f"two periods named in '{_clip(named.ambiguous)}'"
        base = named.value
        if base is None:
            return "no period named"
        period: str = base
        if reporting == "prior_end":
            year = re.search(r"(\d{4})$", base)
            if year is None:
                return "no period named"
            period = f"FY{int(year.group(1)) - 1}"
        if reporting == "ytd":
            m = re.fullmatch(r"([QH])([1-4]) (\d{4})", base)
            if m is None:
                return "no period named"
            last = int(m.group(2))
            period = base if last == 1 else f"{m.group(1)}1–{m.group(1)}{last} FY{m.group(3)}"
        measure_text = cells[0].text if cells and cells[0].number is None else ""
        measure = measure_name(measure_text) if measure_text.strip() else None
        if measure is None:
            return None
        number = cells[col].number
        assert number is not None
        found = self.resolve("entity", [corner, *outer])
        entity = found.value or self._company(corner, section.titles, section.captions)
        unit = self._derived_unit(number, [measure_text, column, corner], outer)
        return Fact(
            entity=entity,
            period=period,
            metric=self._derived_metric(measure),
            channel=self.settings.default_channel,
            value=number.value,
            unit=unit,
            doc_id=self.doc_id,
            # a reporting column is headed (``本报告期``), so never located by its number
            locator=_cell_locator(parts, keys, leading, column, col),
            raw=cells[col].text.strip(),
        )

    def _corner_measure(self, corner: str, table: Sequence[Sequence[str]]) -> str | None:
        """What the table measures where its top-left cell says so with its unit: the rows
        under ``Freight revenues (Millions)`` are lines of freight revenues (``Bulk``,
        ``Total``). Not a corner that names a kind of row (``Region``, ``Metric``), a period
        or nothing a measure is (``Key figures``, ``Income statement``), nor a table whose
        rows name statement lines themselves (``Revenue``, ``Operating income``)."""
        if not _GROUP.search(corner) or self._periodish(corner):
            return None
        measure = measure_name(_GROUP.sub(" ", corner))
        if measure is None:
            return None
        head = normalize(measure)
        if (
            len(head.split()) > 5  # a title ("INCOME TAXES - Reconciliation (Details) - USD")
            or " - " in head
            or _KIND_IN_SCALE.search(corner)
            or re.search(r"\b[A-Z]{4,}\b", head)
            or _DIMENSION.search(head)
            or _GENERIC.match(head)
            or _MEASURE_HEADER.match(head)
            or _ENTITY_HEADER.match(head)
            or _STATEMENT.search(head)
        ):
            return None
        rows = [row[0] for row in table[1:] if row and row[0].strip()]
        if any(glossary.equivalents(name) for label in rows if (name := measure_name(label))):
            return None
        return measure

    def _titled_measure(self, titles: Sequence[str]) -> str | None:
        """What the nearest title that is nothing but a measure names (``Revenue``)."""
        for title in titles:
            reading = self._read(title)
            if reading.values["entity"]:
                continue
            measure = measure_name(reading.residue())
            if measure is not None and not _GENERIC.match(measure) and len(measure.split()) <= 4:
                return measure
        return None

    def _split(self, titles: Sequence[str]) -> str | None:
        """The measure of the nearest title that breaks one measure down by something other
        than time (``Net sales by category``, ``セグメント別売上高``); ``None`` if none does."""
        for title in titles:
            if not title.strip():
                continue
            norm = _INTRODUCING.sub("", _NUMBERED.sub("", normalize(_label(title))))
            # an aside says what the title is, not what it breaks down: "Business Segments
            # (Information by Operating Segment) (Details 2)", an SEC sheet's title
            norm = normalize(_GROUP.sub(" ", norm)).rstrip(" .:")
            m = _BY.match(norm) or _BETSU.match(norm)
            if m is None:
                continue
            by, *rest = _BY_FOR.split(m.group("by"), maxsplit=1)
            if rest and _PART_OF_COMPANY.search(rest[0]):
                continue  # "… by product line for our Industrial segment": a part's breakdown
            if _TIME_DIMENSION.search(by) or self._read(by).values["period"]:
                continue
            measure = measure_name(self._read(m.group("measure")).residue())
            if measure is not None and not _GENERIC.match(measure):
                return measure
        return None

    def _derived_metric(self, measure: str) -> str:
        """The one metric of the vocabulary ``measure`` names, else its :func:`_metric_name`."""
        metric = self.vocab.values("metric", measure)
        return metric[0] if len(metric) == 1 else _metric_name(measure)

    def _derived_unit(
        self, number: ParsedNumber, labels: Sequence[str], titles: Sequence[str]
    ) -> str:
        """The unit as the table writes it: the vocabulary's name for it if it knows one,
        else the cell's own unit text, else the nearest label's or title's unit group
        (``(USD bn)``, ``$ in millions``, ``単位：百万円``); ``""`` when nothing states one.
        A currency alone (``$ 11,079,166``) takes the scale a label or note further out
        writes (``(in thousands)``): ``$ in thousands``. A note that excepts per-share
        figures ("(in thousands, except per share data)") gives no unit to a label that
        counts per share."""
        # what the row counts, from the labels that are not themselves a note of scales
        named = [label for label in labels if not _KIND_IN_SCALE.search(label)]
        counts_shares = any(_COUNTS_SHARES.search(label) for label in named)
        if not counts_shares and any(
            (own := _OWN_KIND.search(label)) is not None
            and not (
                _MONEY_MARGIN.fullmatch(own.group(0))
                and abs(number.value) > 100
                and float(number.value).is_integer()
            )
            for label in named
        ):
            # "(as a percent)", "(in years)", "…, number": not the money the table's scale
            # is of; the figure keeps only a unit its own cell or label writes ("(%)")
            for text in [number.unit_text, *named]:
                written = _written_unit(text, whole=text is number.unit_text) if text else ""
                if written:
                    return written
            return ""
        per_share = not counts_shares and any(_PER_SHARE.search(_label(label)) for label in named)
        if counts_shares:
            # "(In millions, except number of shares which are reflected in thousands …)":
            # a count of shares is in the scale said of shares, never in the amounts'
            for text in [*labels, *titles]:
                said = _SHARES_SCALE.search(text)
                if said is not None:
                    return f"in {said.group('scale').lower()} of shares"
        currency = ""
        for text in [number.unit_text, *labels, *titles]:
            if not text.strip() or (per_share and _EXCEPT_PER_SHARE.search(text)):
                continue
            scales = {
                m.group("kind").casefold(): m.group("scale").casefold()
                for m in _KIND_IN_SCALE.finditer(text)
            }
            if scales and text is not number.unit_text:
                # "USD ($) shares in Thousands, $ in Millions": the scale of share counts
                # and of amounts, said once above a filing's table; a per-share amount
                # takes neither.
                if counts_shares and "shares" in scales:
                    return f"in {scales['shares']} of shares"
                money = next(((k, v) for k, v in scales.items() if k != "shares"), None)
                if money is not None:
                    kind, scale = money
                    if per_share:
                        return currency or kind.upper() if kind.isalpha() else kind
                    return f"{currency or (kind.upper() if kind.isalpha() else kind)} in {scale}"
            known = self.vocab.values("unit", text)
            unit = (
                known[0] if len(known) == 1 else _written_unit(text, whole=text is number.unit_text)
            )
            if not unit:
                continue
            if not currency and _BARE_CURRENCY.match(unit):
                currency = unit
                continue
            if currency:
                scale = _BARE_SCALE.match(unit)
                if scale is not None:
                    return f"{currency} in {scale.group('scale').lower()}s"
                continue
            scale = _BARE_SCALE.match(unit)
            if scale is not None and not unit.casefold().startswith("in"):
                return f"in {scale.group('scale').lower()}s"  # "(Millions)": 1,901 million
            return unit
        return currency

    def _unknown_unit(
        self, contexts: Sequence[str], local: int, whole: frozenset[int], metric_at: int | None
    ) -> str | None:
        """Unit-looking text no configured unit accounts for, in the table's own labels
        (the cell, its row and column labels, the other label cells of its row, the
        corner: the first ``local`` contexts) or in a title up to the one that named the
        metric. The contexts at the indices ``whole`` count whole — the cell's own text
        (``1,480 EUR``) and a long format's unit column (``EUR m``); the others only inside
        parentheses or brackets (``Revenue (EUR m)``)."""
        last = max(local, (metric_at or 0) + 1)
        for i, context in enumerate(contexts[:last]):
            if not context.strip():
                continue
            unknown = _unknown_unit(self._read(context).residue(), whole=i in whole)
            if unknown is not None:
                return unknown
        return None

    def warnings(self) -> list[str]:
        """One line per table and reason, in document order; at most ``_MAX_WARNINGS``."""
        lines = [
            f"facts: {n} value{'s' if n != 1 else ''} at {place} skipped: {reason}"
            for (place, reason), n in self.skipped.items()
        ]
        if len(lines) > _MAX_WARNINGS:
            rest = len(lines) - _MAX_WARNINGS + 1
            lines = [*lines[: _MAX_WARNINGS - 1], f"facts: {rest} more tables with skipped values"]
        return lines


def _breakdown_key(fact: Fact) -> tuple[str, ...]:
    """Where a figure must be the only one of its label: its sheet (every table of it), or
    else its table (the locator without the parts that name a cell)."""
    try:
        parts = parse_locator(fact.locator)
    except ValueError:
        return (fact.locator,)
    sheet = [v for k, v in parts if k == "sheet"]
    place = sheet or [f"{k}={v}" for k, v in parts if k not in _LOCATOR_CELL_KEYS]
    return (*place, fact.entity, fact.metric, fact.period, fact.channel, fact.unit)


def _without_unread_breakdowns(facts: list[Fact], extractor: _Extractor) -> list[Fact]:
    """``facts`` without those of a label that one sheet (or table) gives two different
    values for the same period and line: the sheet breaks the figures down by something
    its labels do not say in a way read here (rows of each segment under a row naming it:
    ``EMEA``, then ``Latin America``), so each of them could be any part, and none is
    taken for the whole. Reported through the warnings, one line per place."""
    values: dict[tuple[str, ...], set[float]] = {}
    for fact in facts:
        values.setdefault(_breakdown_key(fact), set()).add(fact.value)
    doubtful = {key for key, seen in values.items() if len(seen) > 1}
    if not doubtful:
        return facts
    kept = []
    for fact in facts:
        if _breakdown_key(fact) in doubtful:
            place = _table_place(parse_locator(fact.locator), fact.locator)
            reason = "one label gives different values for one period (a breakdown not read)"
            extractor.skipped[(place, reason)] = extractor.skipped.get((place, reason), 0) + 1
        else:
            kept.append(fact)
    return kept


def extract_facts(
    sections: Iterable[Section],
    *,
    doc_id: str,
    title: str,
    vocab: FactSettings | Vocabulary,
    warn: Callable[[str], None] | None = None,
    year_ends: dict[str, int] | None = None,
    names: dict[str, list[str]] | None = None,
) -> list[Fact]:
    """Every fact in the table sections of one document, in document order. A text
    section naming the filer over "(Exact name of registrant …)" (a filing's cover page)
    names the company of the tables that name none (:meth:`_Extractor.read_cover`).

    ``vocab`` is the ``[facts]`` settings (or an already compiled :class:`Vocabulary`).
    With no metrics configured there are no facts. Never raises for a bad cell or
    section: those are skipped (and logged). ``warn``, if given, hears of the tables
    whose values were skipped although they name a metric — no entity or period, two of
    something where one was expected, a unit the vocabulary does not know — one line per
    table and reason, naming its locator: the operator learns which tables to fix or
    which units to configure, and no value was guessed. ``year_ends``, if given, is filled
    with the month each entity's fiscal years end in where the labels of its full-year
    figures say one (:func:`fiscal_year_end`), for reading "the first half of fiscal 2024"
    as the span it is (:mod:`clearance.answer.routes.figures`). ``names``, if given, is
    filled with other names of the companies its tables name (``ENTITY_NAMES_KEY``).
    """
    # a table's months are periods whatever its readers' questions are read with
    compiled = (vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)).with_months()
    extractor = _Extractor(compiled, doc_id, title or "")
    facts: list[Fact] = []
    for section in sections:
        if section.table is None:
            extractor.read_cover(section.text)
            continue
        try:
            facts.extend(extractor.section_facts(section))
        except Exception:
            log.warning("facts: skipped a table of %s at %s", doc_id, section.locator)
    facts = _without_unread_breakdowns([_known_country(f, compiled) for f in facts], extractor)
    # the same figure read twice at one place (a value spanning its footnote's column) is one
    facts = list(dict.fromkeys(facts))
    if warn is not None:
        for line in extractor.warnings():
            warn(line)
    if year_ends is not None:
        year_ends.update(
            (entity, next(iter(months)))
            for entity, months in extractor.year_ends.items()
            if len(months) == 1
        )
        if len(extractor.stated_year_ends) == 1:
            # the cover page's "Current Fiscal Year End Date" says it for the filer, the
            # company the document's figures are of, whatever spans of twelve months its
            # notes name (a credit facility's year ended September 30)
            (month,) = extractor.stated_year_ends
            year_ends.update((entity, month) for entity in {f.entity for f in facts if f.entity})
    if names is not None:
        names.update((entity, sorted(others)) for entity, others in extractor.other_names.items())
    return facts
