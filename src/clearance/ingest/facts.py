"""Facts from tables: every numeric table cell whose labels name a metric, an entity and a
period becomes a :class:`~clearance.model.Fact` (DESIGN §2, §5).

Nothing here knows any company: what counts as a metric, an entity, a channel or a unit,
and which strings are periods, comes from the ``[facts]`` vocabulary
(:class:`~clearance.config.FactSettings`). The same :class:`Vocabulary` matcher is used by
the question parser (:mod:`clearance.answer.intent`) and the structured tool
(:mod:`clearance.answer.structured`), so a table label and a question are read alike.

Matching rules (:class:`Vocabulary`):

* text and aliases are normalised with NFKC (full-width digits and letters become ASCII),
  whitespace runs collapse, and comparison is by ``casefold``; a space inside an alias also
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
above entity rows), the section's titles (a chart's title, the slide title), the
locator's heading path (innermost first) or sheet name, then the document title. For
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

A cell that fails for any reason is skipped, never the document. A table that names a
metric but whose values were skipped (no entity or period, two of one, an unknown unit)
is reported through ``warn``, one line per table and reason with its locator.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from clearance.config import FactSettings
from clearance.ingest.locator import format_locator, parse_locator
from clearance.model import Fact, Section

__all__ = [
    "Match",
    "ParsedNumber",
    "ReadKind",
    "Reading",
    "SlotKind",
    "Vocabulary",
    "extract_facts",
    "format_number",
    "normalize",
    "parse_number",
    "vocab_fingerprint",
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


def _folded(text: str) -> tuple[str, list[int]]:
    """``text.casefold()`` with a map back to ``text`` (casefold may change lengths)."""
    out: list[str] = []
    index: list[int] = []
    for i, char in enumerate(text):
        folded = char.casefold()
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
    tokens = alias.split(" ")
    body = r"\s*".join(re.escape(t) for t in tokens)
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


class Vocabulary:
    """The compiled ``[facts]`` vocabulary: finds metrics, entities, channels, units and
    periods in text. All methods take raw text and normalise it themselves; spans refer to
    :func:`normalize` of the text."""

    def __init__(self, settings: FactSettings) -> None:
        self.settings = settings
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
                    out.append(_Alias(canonical, _alias_pattern(text.casefold()), folded=True))
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
        return _longest(found)

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


def _canonical_period(canonical: str, match: re.Match[str]) -> str | None:
    groups = [g if g is not None else "" for g in match.groups()]
    try:
        value = canonical.format(match.group(0), *groups)
    except (IndexError, KeyError, ValueError):
        return None
    return normalize(value) or None


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
    ranges and codes (``2026-07``, ``Q3 2025``, ``FY2024``) are not numbers: any digit
    outside the one number disqualifies the cell. A dash, ``—`` or ``n/a`` is no number
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
_CURRENCY_CODES = (
    "USD|EUR|JPY|GBP|CNY|RMB|CHF|AUD|CAD|HKD|SGD|KRW|INR|SEK|NOK|DKK|BRL|MXN|TWD|NZD|ZAR"
)
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


def _label(text: str) -> str:
    """A label without footnote markers (``Revenue¹`` → ``Revenue``), which would otherwise
    glue digits to words under NFKC."""
    return _LABEL_MARKS.sub(" ", text)


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


def _table_place(parts: Sequence[tuple[str, str]], locator: str) -> str:
    """Where a skipped value's table is, for a warning: the locator without the parts that
    name one cell, so a table's skipped cells make one warning."""
    kept = [(k, v) for k, v in parts if k not in _LOCATOR_CELL_KEYS]
    return format_locator(*kept) if kept else locator


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
        self._readings: dict[str, Reading] = {}
        self.skipped: dict[tuple[str, str], int] = {}

    def _read(self, text: str) -> Reading:
        reading = self._readings.get(text)
        if reading is None:
            reading = self.vocab.read(_label(text))
            self._readings[text] = reading
        return reading

    def _cell(self, text: str) -> _Cell:
        number = parse_number(text) if text.strip() else None
        if number is not None and self.vocab.find_periods(text):
            number = None  # "2024年度" is a label, not the number 2024
        return _Cell(number, text)

    def _names_slot(self, text: str) -> bool:
        """Whether ``text`` names a metric, entity, period or channel."""
        values = self._read(text).values
        return any(values[kind] for kind in ("metric", "entity", "period", "channel"))

    def resolve(self, kind: ReadKind, contexts: Sequence[str]) -> _Resolved:
        """The nearest context that names anything decides; two names there: ambiguous."""
        for i, context in enumerate(contexts):
            if not context:
                continue
            values = self._read(context).values[kind]
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
        keys = {k for k, _ in parts}
        outer = [*section.titles, *_outer_contexts(parts, self.title)]
        place = _table_place(parts, section.locator)
        header = table[0]
        facts: list[Fact] = []
        for row in table[1:]:
            cells = [self._cell(text) for text in row]
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
                    fact = self._fact(section, parts, keys, outer, header, cells, leading, col)
                except Exception:  # a bad cell is skipped, never the document
                    log.warning("facts: skipped a cell of %s at %s", self.doc_id, section.locator)
                    continue
                if isinstance(fact, Fact):
                    facts.append(fact)
                elif fact is not None:
                    key = (place, fact)
                    self.skipped[key] = self.skipped.get(key, 0) + 1
        return facts

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
        """The cell's fact; else why not, when a reader should hear of it (the table names
        a metric but not what it is for, or is ambiguous); else ``None``."""
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
        period = self.resolve("period", contexts)
        for name, slot in (("entities", entity), ("periods", period)):
            if slot.ambiguous is not None:
                return f"two {name} named in '{_clip(slot.ambiguous)}'"
        missing = [n for n, slot in (("entity", entity), ("period", period)) if slot.value is None]
        if missing:
            return f"no {' or '.join(missing)} named"
        assert entity.value is not None and period.value is not None
        # whole: the cell's own text and the other label cells (a long format's unit column)
        whole = frozenset({0, *range(3, 3 + len(others))})
        unknown = self._unknown_unit(contexts, len(local), whole, metric.at)
        if unknown is not None:
            return f"unit not recognised: '{_clip(unknown)}'"
        channel = self.resolve("channel", contexts)
        if channel.ambiguous is not None:
            return f"two channels named in '{_clip(channel.ambiguous)}'"
        unit = self.resolve("unit", contexts)
        if unit.ambiguous is not None:
            return f"two units named in '{_clip(unit.ambiguous)}'"
        locator_parts: list[tuple[str, object]] = list(parts)
        if "row" not in keys and "series" not in keys and leading:
            locator_parts.append(("row", _clip(" / ".join(normalize(t) for t in leading))))
        if "col" not in keys and "category" not in keys:
            locator_parts.append(("col", _clip(normalize(column)) if column.strip() else col + 1))
        return Fact(
            entity=entity.value,
            period=period.value,
            metric=metric.value,
            channel=channel.value or self.settings.default_channel,
            value=number.value,
            unit=unit.value or self.settings.metric_units.get(metric.value, ""),
            doc_id=self.doc_id,
            locator=format_locator(*locator_parts),
            raw=cell.text.strip(),
        )

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


def extract_facts(
    sections: Iterable[Section],
    *,
    doc_id: str,
    title: str,
    vocab: FactSettings | Vocabulary,
    warn: Callable[[str], None] | None = None,
) -> list[Fact]:
    """Every fact in the table sections of one document, in document order.

    ``vocab`` is the ``[facts]`` settings (or an already compiled :class:`Vocabulary`).
    With no metrics configured there are no facts. Never raises for a bad cell or
    section: those are skipped (and logged). ``warn``, if given, hears of the tables
    whose values were skipped although they name a metric — no entity or period, two of
    something where one was expected, a unit the vocabulary does not know — one line per
    table and reason, naming its locator: the operator learns which tables to fix or
    which units to configure, and no value was guessed.
    """
    compiled = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    if not compiled.has_metrics:
        return []
    extractor = _Extractor(compiled, doc_id, title or "")
    facts: list[Fact] = []
    for section in sections:
        try:
            facts.extend(extractor.section_facts(section))
        except Exception:
            log.warning("facts: skipped a table of %s at %s", doc_id, section.locator)
    if warn is not None:
        for line in extractor.warnings():
            warn(line)
    return facts
