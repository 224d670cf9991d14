"""Periods in questions: the fiscal calendar and relative periods ("last year", 去年, 前期).

Absolute periods (``FY2025``, ``H1 2024``, ``2024年上半年``, ``Q3 FY25``) are read by the
``[facts]`` period forms, the same for table labels and questions
(:class:`~clearance.ingest.facts.Vocabulary`). A *relative* period only has a meaning on the
day it is asked, so it is read here, for questions only, never for documents: a column headed
"last year" in a table says nothing about the day someone asks.

:class:`FiscalCalendar` is ``[facts] fiscal_year_start`` (the first month of a fiscal year)
and ``fiscal_year_named_by`` (FY2025 is the year that *starts* in 2025, as 2025年度 is, or the
one that *ends* in it). Canonical periods are ``FY2025``, ``CY2025`` (calendar year; the same as
``FY2025`` when fiscal years start in January), ``H1 2025`` and ``Q3 2025`` — halves and
quarters are of the fiscal year.

Relative periods resolve against the request date (:func:`find_relative`), always to fiscal
periods: "last year", 去年, 昨年, 前期 and 前年度 are the fiscal year before the current one;
"this year", 今年, 今年度 and 今期 the current one; "last quarter", 上季度 and 前四半期 the
fiscal quarter before the current one; a half or quarter without a year ("Q3", 上半年, 上期,
"first half of last year", 去年上半年) is of the fiscal year named next to it, else the current
one. 前年 means "the previous year" in Japanese but "the year before last" in Chinese: a
question with kana is Japanese, one with characters only Chinese uses is Chinese, and a
question that is neither leaves 前年 *ambiguous* — it is offered back as two options
(:attr:`RelativeMatch.alternatives`) instead of being guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from clearance.config import FactSettings, fiscal_year_start_month
from clearance.ingest.facts import AT_END, MONTH_NAMES, MONTH_PERIOD

__all__ = [
    "FiscalCalendar",
    "RelativeMatch",
    "find_relative",
    "question_language",
    "span_of_fiscal_part",
]

Language = Literal["en", "ja", "zh"]

_CANONICAL = re.compile(r"^(?:(FY|CY)(\d{4})|(H[12]|Q[1-4]) (\d{4}))$")


@dataclass(frozen=True, slots=True)
class FiscalCalendar:
    """Which fiscal year, half and quarter a day falls in, and the days a period spans."""

    start_month: int = 1
    named_by: Literal["start", "end"] = "start"

    @classmethod
    def from_settings(cls, settings: FactSettings) -> FiscalCalendar:
        named_by: Literal["start", "end"] = (
            "end" if settings.fiscal_year_named_by == "end" else "start"
        )
        return cls(fiscal_year_start_month(settings.fiscal_year_start), named_by)

    def _first_year(self, label: int) -> int:
        """The calendar year fiscal year ``label`` starts in."""
        if self.start_month == 1 or self.named_by == "start":
            return label
        return label - 1

    def fiscal_year(self, day: date) -> int:
        """The label of the fiscal year containing ``day`` (2025 for FY2025)."""
        first = day.year if day.month >= self.start_month else day.year - 1
        if self.start_month == 1 or self.named_by == "start":
            return first
        return first + 1

    def months_into_year(self, day: date) -> int:
        """Whole months from the start of ``day``'s fiscal year (0-11)."""
        return (day.month - self.start_month) % 12

    def quarter(self, day: date) -> tuple[int, int]:
        """``(fiscal year, quarter 1-4)`` of ``day``."""
        return self.fiscal_year(day), self.months_into_year(day) // 3 + 1

    def half(self, day: date) -> tuple[int, int]:
        """``(fiscal year, half 1-2)`` of ``day``."""
        return self.fiscal_year(day), self.months_into_year(day) // 6 + 1

    def span(self, period: str) -> tuple[date, date] | None:
        """First and last day of a canonical period (``FY2025``, ``CY2025``, ``H1 2025``,
        ``Q3 2025``, ``Jul 2025``); ``None`` for any other label (a configured form of
        another shape)."""
        month = MONTH_PERIOD.match(period)  # the same in every fiscal calendar
        if month is not None:
            first = date(int(month.group(2)), MONTH_NAMES.index(month.group(1)) + 1, 1)
            return first, date.fromordinal(_add_months(first, 1).toordinal() - 1)
        m = _CANONICAL.match(period)
        if m is None:
            return None
        if m.group(1) == "CY":
            year = int(m.group(2))
            return date(year, 1, 1), date(year, 12, 31)
        if m.group(1) == "FY":
            label, first_month, months = int(m.group(2)), 0, 12
        else:
            kind, n = m.group(3)[0], int(m.group(3)[1])
            label = int(m.group(4))
            months = 6 if kind == "H" else 3
            first_month = (n - 1) * months
        start = _add_months(date(self._first_year(label), self.start_month, 1), first_month)
        after = _add_months(start, months)
        return start, date.fromordinal(after.toordinal() - 1)

    def describe(self) -> str:
        """``"fiscal years start on 1 April"`` — said next to a resolved relative period."""
        month = date(2000, self.start_month, 1).strftime("%B")
        return f"fiscal years start on 1 {month}"


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


# --------------------------------------------------------------------------- language

_KANA = re.compile(r"[\u3040-\u30ff]")
# Characters a Chinese question uses and a Japanese one does not (simplified and
# traditional forms of everyday question and business words).
_ZH_ONLY = re.compile(
    r"[们們吗嗎么麼这這个個营營财財润潤额額员員没沒还還哪说說为為么]|多少|什么|什麼"
)


def question_language(text: str) -> Language | None:
    """``ja`` when the text has kana, ``zh`` when it has characters only Chinese uses, ``en``
    when it has no CJK at all, else ``None`` (kanji alone: either language)."""
    if _KANA.search(text):
        return "ja"
    if _ZH_ONLY.search(text):
        return "zh"
    if not re.search(r"[\u3400-\u9fff\uf900-\ufaff]", text):
        return "en"
    return None


# --------------------------------------------------------------------------- relative forms


@dataclass(frozen=True, slots=True)
class RelativeMatch:
    """A relative period in a question: ``text[start:end]`` means ``period`` today.
    ``alternatives`` holds every reading when the words are ambiguous (then ``period`` is
    the empty string and nothing is looked up until the asker chooses)."""

    text: str
    period: str
    start: int
    end: int
    alternatives: tuple[str, ...] = ()


_L = r"(?<![0-9A-Za-z])"  # a Latin word edge that also holds next to CJK text
_R = r"(?![0-9A-Za-z])"

# Years relative to the current fiscal year. 前年 depends on the language (see the module
# docstring); ``None`` marks it.
_YEARS: tuple[tuple[str, int | None], ...] = (
    (rf"{_L}(?:the\s+year\s+before\s+last|two\s+years\s+ago){_R}", -2),
    (r"一昨年度?|前々年度|前々期|大前年", -2),
    (
        rf"{_L}(?:(?:last|previous|prior)\s+(?:fiscal\s+|financial\s+)?year|(?:last|previous|prior)\s+FY){_R}",
        -1,
    ),
    (r"昨年度?|前年度|前期|前会計年度|去年|上一?年度?|上一?[个個]?[财財]年", -1),
    (r"前年", None),
    (rf"{_L}(?:(?:this|current)\s+(?:fiscal\s+|financial\s+)?year|(?:this|current)\s+FY){_R}", 0),
    (r"今年度?|本年度?|今期|当期|當期|本[财財]年|今[财財]年", 0),
    (rf"{_L}(?:next\s+(?:fiscal\s+|financial\s+)?year|next\s+FY){_R}", 1),
    (r"来年度?|來年度?|翌年度|来期|翌期|明年|下一?年度|下一?[个個]?[财財]年", 1),
)
# An absolute fiscal year that a half or quarter without a year may lean on ("first half
# of FY2024", "2024年度の上期").
_ABSOLUTE_YEAR = rf"{_L}FY\s*'?(?P<fy>\d{{4}}){_R}|{_L}fiscal\s+(?:year\s+)?(?P<fiscal>\d{{4}}){_R}|(?P<nendo>\d{{4}})\s*(?:年度|[财財]年度?)"
# "the first half of the fiscal year ending March 2024": a fiscal year is named by the
# year it ends in.
_ABSOLUTE_YEAR += (
    rf"|{_L}(?:fiscal|financial)\s+year\s+end(?:ed|ing)\s+(?:in\s+)?"
    rf"(?P<endmonth>(?:{'|'.join(MONTH_NAMES)})[a-z]*)\.?\s+"
    rf"(?:\d{{1,2}},?\s+)?(?P<ending>\d{{4}}){_R}"
)
# "2024年3月期の上期": the fiscal year that ends in March 2024, as Japanese reports name it.
_ABSOLUTE_YEAR += r"|(?P<kiyear>\d{4})\s*年\s*(?P<kimonth>\d{1,2})\s*月\s*期"
# Halves and quarters named without a year.
_SUBS: tuple[tuple[str, str], ...] = (
    (rf"{_L}(?:first\s+half|H1|1H){_R}|上半期|上半年度?", "H1"),
    (rf"{_L}(?:second\s+half|H2|2H){_R}|下半期|下半年度?", "H2"),
    (
        rf"{_L}(?:(?:first|1st)\s+quarter|Q1|1Q){_R}|第\s*[1一]\s*(?:四半期|季度?)|(?<!前)[一1]\s*季度",
        "Q1",
    ),
    (
        rf"{_L}(?:(?:second|2nd)\s+quarter|Q2|2Q){_R}|第\s*[2二]\s*(?:四半期|季度?)|(?<!前)[二2]\s*季度",
        "Q2",
    ),
    (
        rf"{_L}(?:(?:third|3rd)\s+quarter|Q3|3Q){_R}|第\s*[3三]\s*(?:四半期|季度?)|(?<!前)[三3]\s*季度",
        "Q3",
    ),
    (
        rf"{_L}(?:(?:fourth|4th)\s+quarter|Q4|4Q){_R}|第\s*[4四]\s*(?:四半期|季度?)|(?<!前)[四4]\s*季度",
        "Q4",
    ),
)
# 前三季度 is the first three quarters, no third quarter (the tables' Q1–Q3): named without
# a year, it is no period the question names, and which one is asked; 前一季度 is the
# quarter before this one (_STEPS).
# 上期 / 下期 are the fiscal halves in Japanese; in Chinese they mean "the previous / next
# issue", so a Chinese question never reads them as periods.
_SUBS_JA: tuple[tuple[str, str], ...] = ((r"上期", "H1"), (r"下期", "H2"))
# Quarters and halves relative to the current one.
_STEPS: tuple[tuple[str, str, int], ...] = (
    (
        rf"{_L}(?:last|previous|prior)\s+quarter{_R}|前四半期|上一?[个個]?季度|前一[个個]?季度",
        "Q",
        -1,
    ),
    (
        rf"{_L}(?:this|current)\s+quarter{_R}|今四半期|当四半期|本季度|这个季度|這個季度|当季|當季",
        "Q",
        0,
    ),
    (rf"{_L}next\s+quarter{_R}|来四半期|翌四半期|下一?[个個]?季度", "Q", 1),
    (rf"{_L}(?:last|previous|prior)\s+half(?:[\s-]+year)?{_R}", "H", -1),
    (rf"{_L}(?:this|current)\s+half(?:[\s-]+year)?{_R}", "H", 0),
    (rf"{_L}next\s+half(?:[\s-]+year)?{_R}", "H", 1),
)
# A year the figure is compared with, after it. In Japanese 前期比, 前年同期比 ("against
# the previous year") and 前年同期と比べて; not a ratio (比率, 比例, 比重). In Chinese
# 与上年同期相比; a bare 比 after a year is no base there ("今年比去年": this year against
# last; 去年比亚迪: BYD last year).
_BASE_AFTER: dict[Language | None, re.Pattern[str]] = {
    "ja": re.compile(r"\s*(?:同期)?\s*(?:比(?![率例重亜])|[とに]\s*比(?:べ|較)|と比較)"),
    "zh": re.compile(r"\s*(?:同期)?\s*相比"),
}
_JOIN_AFTER_YEAR = r"\s*(?:'s|’s|の|的)?\s*"  # "last year's Q3", "去年的上半年", "昨年度の上期"
_JOIN_BEFORE_YEAR = r"\s*(?:of\s+|in\s+)?(?:the\s+)?"  # "Q3 of last year", "H1 last year"


def _alternation(forms: Sequence[tuple[str, object]] | Sequence[tuple[str, str, int]]) -> str:
    return "|".join(f"(?:{form[0]})" for form in forms)


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_YEAR_RE = _compile(_alternation(_YEARS))
_STEP_RE = _compile(_alternation(_STEPS))


def _sub_pattern(language: Language | None) -> str:
    return _alternation(_SUBS if language == "zh" else (*_SUBS, *_SUBS_JA))


def _combined(language: Language | None) -> tuple[re.Pattern[str], ...]:
    year = f"(?P<year>{_YEAR_RE.pattern}|{_ABSOLUTE_YEAR})"
    sub = f"(?P<sub>{_sub_pattern(language)})"
    return (
        _compile(f"{year}{_JOIN_AFTER_YEAR}{sub}"),
        _compile(f"{sub}{_JOIN_BEFORE_YEAR}{year}"),
    )


_COMBINED = {language: _combined(language) for language in ("en", "ja", "zh", None)}
_SUB_RE = {language: _compile(_sub_pattern(language)) for language in ("en", "ja", "zh", None)}


def _year_offsets(words: str, language: Language | None) -> tuple[int, ...]:
    """The year offsets ``words`` may mean (two for an ambiguous 前年)."""
    for pattern, offset in _YEARS:
        if re.fullmatch(pattern, words, re.IGNORECASE):
            if offset is not None:
                return (offset,)
            if language == "ja":
                return (-1,)
            if language == "zh":
                return (-2,)
            return (-1, -2)
    raise ValueError(f"not a relative year: {words!r}")  # pragma: no cover - by construction


def _sub(words: str) -> str:
    for pattern, name in (*_SUBS, *_SUBS_JA):
        if re.fullmatch(pattern, words, re.IGNORECASE):
            return name
    raise ValueError(f"not a half or quarter: {words!r}")  # pragma: no cover - by construction


def _step(words: str, calendar: FiscalCalendar, today: date) -> str:
    for pattern, kind, offset in _STEPS:
        if re.fullmatch(pattern, words, re.IGNORECASE):
            per_year = 4 if kind == "Q" else 2
            year, n = calendar.quarter(today) if kind == "Q" else calendar.half(today)
            index = year * per_year + (n - 1) + offset
            return f"{kind}{index % per_year + 1} {index // per_year}"
    raise ValueError(f"not a relative quarter: {words!r}")  # pragma: no cover - by construction


def find_relative(text: str, calendar: FiscalCalendar, today: date) -> list[RelativeMatch]:
    """Every relative period in ``text`` (already NFKC-normalised), the longest where two
    overlap, in text order, each resolved against ``today`` and ``calendar``. A half or
    quarter next to an absolute fiscal year ("first half of FY2024") is of that year."""
    language = question_language(text)
    current = calendar.fiscal_year(today)
    found: list[RelativeMatch] = []

    base = _BASE_AFTER.get(language)

    def add(start: int, end: int, readings: Sequence[str]) -> None:
        if base is not None and base.match(text, end):
            return  # 前期比: what the figure is compared with, no period asked
        after = AT_END.match(text, end)  # 上年度末: the end of last year is last year's
        end = after.end() if after else end
        unique = tuple(dict.fromkeys(readings))
        period = unique[0] if len(unique) == 1 else ""
        found.append(
            RelativeMatch(text[start:end], period, start, end, unique if not period else ())
        )

    for pattern in _COMBINED[language]:
        for m in pattern.finditer(text):
            sub = _sub(m.group("sub"))
            absolute = m.group("fy") or m.group("fiscal") or m.group("nendo")
            if m.group("ending"):
                # the label of the fiscal year that month ends, in the calendar's naming
                month = [n.casefold() for n in MONTH_NAMES].index(m["endmonth"][:3].casefold())
                if int(m.group("ending")) < 1:
                    continue  # "ending March 0000" names no year
                years: Sequence[int] = [
                    calendar.fiscal_year(date(int(m.group("ending")), month + 1, 1))
                ]
            elif m.group("kiyear"):
                month = int(m.group("kimonth"))
                if not 1 <= month <= 12 or int(m.group("kiyear")) < 1:
                    continue  # "2024年13月期" names no year; its 上期 none either
                years = [calendar.fiscal_year(date(int(m.group("kiyear")), month, 1))]
            elif absolute:
                years = [int(absolute)]
            else:
                years = [current + o for o in _year_offsets(m.group("year"), language)]
            add(m.start(), m.end(), [f"{sub} {y}" for y in years])
    for m in _YEAR_RE.finditer(text):
        add(m.start(), m.end(), [f"FY{current + o}" for o in _year_offsets(m.group(0), language)])
    for m in _SUB_RE[language].finditer(text):
        add(m.start(), m.end(), [f"{_sub(m.group(0))} {current}"])
    for m in _STEP_RE.finditer(text):
        add(m.start(), m.end(), [_step(m.group(0), calendar, today)])
    return _longest(found)


def _longest(matches: Sequence[RelativeMatch]) -> list[RelativeMatch]:
    chosen: list[RelativeMatch] = []
    for m in sorted(matches, key=lambda m: (-(m.end - m.start), m.start)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: m.start)


_FISCAL_PART = re.compile(r"^(?P<kind>[HQ])(?P<n>[1-4]) (?P<year>\d{4})$")


def span_of_fiscal_part(period: str, year_end: int) -> str | None:
    """A half or quarter of a fiscal year (``H1 2024``) as the span of months it is when
    that entity's fiscal years end in month ``year_end`` and are named by the year they end
    in, as "Year Ended June 30, 2024" names its year 2024: ``6M ended Dec 2023``. ``None``
    for any other period."""
    m = _FISCAL_PART.match(period)
    if m is None or not 1 <= year_end <= 12 or (m.group("kind") == "H" and m.group("n") > "2"):
        return None
    length = 6 if m.group("kind") == "H" else 3
    months = year_end + length * int(m.group("n"))  # counted from the year before's start
    year = int(m.group("year")) - 1 + (months - 1) // 12
    return f"{length}M ended {MONTH_NAMES[(months - 1) % 12]} {year}"
