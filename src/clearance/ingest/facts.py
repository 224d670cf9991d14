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
  a space between CJK and Latin text, so ``\\b`` in a pattern works in ``FY2024の``.

Extraction rules (:func:`extract_facts`): for a numeric cell, the contexts are tried
nearest first — the cell's own unit text, the row label, the column header, the other
label cells of the row (long format: ``Region | Fiscal year | Revenue``), the locator's
heading path (innermost first) or sheet name, the slide title, then the document title.
For each slot, the nearest context that matches anything decides; if it names two
different values the slot is ambiguous and the cell is skipped. Metric, entity and period
must all resolve; the channel defaults to ``default_channel`` and the unit to
``metric_units[metric]`` (else ``""``). A cell that fails for any reason is skipped, never
the document.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from clearance.config import FactSettings
from clearance.ingest.locator import format_locator, parse_locator
from clearance.model import Fact, Section

__all__ = [
    "Match",
    "ParsedNumber",
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
        body = body + f"(?![{_LATIN}])"
    return re.compile(body)


def _longest(matches: Iterable[Match]) -> list[Match]:
    """Non-overlapping matches, longest first (then leftmost), returned in text order."""
    chosen: list[Match] = []
    for m in sorted(set(matches), key=lambda m: (-(m.end - m.start), m.start, m.canonical)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
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
        recognised = self.find_periods(norm)
        spaced, back = _spaced(norm)
        spans: list[tuple[int, int]] = []
        for pattern in _PERIODISH:
            for m in pattern.finditer(spaced):
                start, end = back[m.start()], back[m.end() - 1] + 1
                if any(r.start <= start and end <= r.end for r in recognised):
                    continue
                if any(start < e and s < end for s, e in spans):
                    continue
                spans.append((start, end))
        return [norm[s:e].strip() for s, e in sorted(spans)]

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

_CURRENCY = "$¥€£₩₹"
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


@dataclass(frozen=True, slots=True)
class ParsedNumber:
    """A number read from a cell: its value and the text around it (``"USD"``, ``"%"``)."""

    value: float
    unit_text: str


def parse_number(text: str) -> ParsedNumber | None:
    """Read one number from a cell, or ``None`` if the cell is not one number.

    Accepts thousands separators (``1,320``, ``1 320``), full-width digits (``１，３２０``),
    negatives as ``-3.5``, ``−3.5``, ``△45`` or ``(45)``, a leading currency code or symbol
    (``USD 1,480``, ``$45``) and short trailing unit text (``12%``, ``14,000円``,
    ``1,320 USD m``). Dates, ranges and codes (``2026-07``, ``Q3 2025``, ``FY2024``) are not
    numbers: any digit outside the one number disqualifies the cell.
    """
    norm = normalize(text)
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
    return ParsedNumber(value + 0.0, unit)


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


@dataclass(frozen=True, slots=True)
class _Cell:
    number: ParsedNumber | None
    text: str


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1].rstrip() + "…"


def _slide_title(section: Section, row_label: str, column: str, value: str) -> str | None:
    """The slide title of a PPTX cell section, from its text
    ``"<slide title> — <row label>, <column label>: <value>"``."""
    suffix = f"{row_label}, {column}: {value}"
    text = section.text
    if text.endswith(suffix):
        head = text[: -len(suffix)]
        if head.endswith(" — "):
            return head[: -len(" — ")] or None
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


class _Extractor:
    def __init__(self, vocab: Vocabulary, doc_id: str, title: str) -> None:
        self.vocab = vocab
        self.settings = vocab.settings
        self.doc_id = doc_id
        self.title = title
        self._named: dict[str, bool] = {}

    def _cell(self, text: str) -> _Cell:
        number = parse_number(text) if text.strip() else None
        if number is not None and self.vocab.find_periods(text):
            number = None  # "2024年度" is a label, not the number 2024
        return _Cell(number, text)

    def _names_slot(self, text: str) -> bool:
        """Whether ``text`` names a metric, entity, period or channel."""
        known = self._named.get(text)
        if known is None:
            known = any(
                self.vocab.values(kind, text) for kind in ("metric", "entity", "period", "channel")
            )
            self._named[text] = known
        return known

    def resolve(self, kind: SlotKind | Literal["period"], contexts: Sequence[str]) -> str | None:
        """The nearest context that names anything decides; two names there: ambiguous."""
        for context in contexts:
            if not context:
                continue
            values = self.vocab.values(kind, context)
            if len(values) == 1:
                return values[0]
            if values:
                return None
        return None

    def section_facts(self, section: Section) -> list[Fact]:
        table = section.table
        if not table or len(table) < 2:
            return []
        try:
            parts = parse_locator(section.locator)
        except ValueError:
            parts = []
        keys = {k for k, _ in parts}
        outer = _outer_contexts(parts, self.title)
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
                if fact is not None:
                    facts.append(fact)
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
    ) -> Fact | None:
        cell = cells[col]
        number = cell.number
        assert number is not None
        row_label = cells[0].text if col != 0 and cells[0].number is None else ""
        column = header[col] if col < len(header) else ""
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
        slide_title = None
        if "slide" in keys and row_label:
            slide_title = _slide_title(section, row_label, column, cell.text)
        contexts = [
            number.unit_text,
            row_label,
            column,
            *others,
            *([slide_title] if slide_title else []),
            *outer,
        ]
        metric = self.resolve("metric", contexts)
        entity = self.resolve("entity", contexts)
        period = self.resolve("period", contexts)
        if metric is None or entity is None or period is None:
            return None
        channel = self.resolve("channel", contexts) or self.settings.default_channel
        unit = self.resolve("unit", contexts)
        if unit is None:
            unit = self.settings.metric_units.get(metric, "")
        locator_parts: list[tuple[str, object]] = list(parts)
        if "row" not in keys and leading:
            locator_parts.append(("row", _clip(" / ".join(normalize(t) for t in leading))))
        if "col" not in keys:
            locator_parts.append(("col", _clip(normalize(column)) if column.strip() else col + 1))
        return Fact(
            entity=entity,
            period=period,
            metric=metric,
            channel=channel,
            value=number.value,
            unit=unit,
            doc_id=self.doc_id,
            locator=format_locator(*locator_parts),
            raw=cell.text.strip(),
        )


def extract_facts(
    sections: Iterable[Section], *, doc_id: str, title: str, vocab: FactSettings | Vocabulary
) -> list[Fact]:
    """Every fact in the table sections of one document, in document order.

    ``vocab`` is the ``[facts]`` settings (or an already compiled :class:`Vocabulary`).
    With no metrics configured there are no facts. Never raises for a bad cell or
    section: those are skipped (and logged).
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
    return facts
