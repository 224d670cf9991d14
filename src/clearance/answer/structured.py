"""The structured tool: metric questions answered from the fact table (docs/design.md §1 stage 13,
§5). **No LLM call happens anywhere in this module.**

:func:`query_metric` looks one metric up for one entity and period and returns a
:class:`ToolResult` whose status is

* ``unrecognized_param`` — the metric, entity or channel is not a canonical name of the
  ``[facts]`` vocabulary, or the period does not canonicalise (or a slot is missing);
* ``not_found`` — no fact the caller may read matches. Facts are filtered inside the store
  query exactly like chunks (:meth:`~clearance.store.sqlite.SQLiteStore.query_facts`), so a
  fact the caller may not read is indistinguishable from one that does not exist;
* ``found`` — the matching facts, best first: higher corpus authority, then the most
  recently updated document. The first is the answer; the others are kept.

Rendering uses fact values and their provenance alone (:func:`render_found`); whatever
prose a model may have written is accepted only to be discarded. A figure is one sentence
in words — ``ACME Japan's operating profit in FY2025 was USD 61.2 m [S1].`` — whose
``[S#]`` marker names its citation: the document's title and the fact's locator (sheet,
slide, table, row, column) are the citation's, never part of the sentence. Numbers are
printed with thousands separators and with decimals only when the value has them. When
other matching facts disagree with the answer, each differing source gets a line of its
own (``Another source reports USD 1,310 m [S2].``), so both values are shown with their
citations.

Derived numbers: :func:`run_multi` appends, for exactly two comparable found values (same
metric, same unit) of a question that asks to compare them, their difference and
percentage change (``FY2025 vs FY2024: up USD 80 m (+6.1%)``), computed deterministically
in decimal arithmetic. These are the **only** numbers in a structured answer that are not
literally a fact's value.

Names without a vocabulary: :func:`readable_vocabulary` adds to the ``[facts]`` vocabulary
every metric, entity and channel (a product, segment or region line) that the facts given
to it carry (a metric that is a standard statement line also under the line's names in
other languages, :mod:`clearance.glossary`; a figure asked under one company's name for the
line is found under another's own: "Konica Minolta's revenue" is its 売上高) — the caller's readable facts only, so a name found only in a document the
caller cannot read is never recognised, offered or named. A question that qualifies its
metric by a line no fact carries ("Services net sales" where no table has a Services
line) is ``not_found``: the parent total never stands in for it. A partial period
(``Oct–Jun FY2023``, ``9M FY2024``) is its own period, and the answer says which part of
the year the figure covers.

Defence in depth: the tool never reads RESTRICTED facts, whatever filter it is given —
RESTRICTED content never reaches an answer (docs/design.md §3).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, Protocol

from clearance import glossary
from clearance.answer.intent import MetricQuery
from clearance.answer.result import Citation
from clearance.config import FactSettings
from clearance.ingest.facts import (
    MONTH_NAMES,
    MONTH_PERIOD,
    Vocabulary,
    entity_aliases,
    format_number,
    measure_name,
    metric_aliases,
)
from clearance.ingest.locator import parse_locator
from clearance.model import Document, Fact, Sensitivity
from clearance.store.base import SearchFilter
from clearance.transliteration import MIN_CONSONANTS, katakana_sound, katakana_words, latin_sound
from clearance.trust import resolve_trust

__all__ = [
    "FactStore",
    "ToolResult",
    "ToolStatus",
    "comparison",
    "query_metric",
    "readable_vocabulary",
    "render",
    "render_found",
    "render_multi",
    "render_not_found",
    "render_parts_of_year",
    "render_unrecognized",
    "run_multi",
    "sole_entity",
    "written_amount",
]

ToolStatus = Literal["found", "not_found", "unrecognized_param"]


class FactStore(Protocol):
    """What the tool needs from a store (``SQLiteStore`` provides it)."""

    def query_facts(
        self,
        flt: SearchFilter,
        *,
        metric: str | None = None,
        entity: str | None = None,
        period: str | None = None,
        channel: str | None = None,
    ) -> list[tuple[Fact, Document]]: ...


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one look-up found. ``query`` holds canonical names when the parameters were
    recognised (as given otherwise; ``channel`` is ``None`` for the default channel);
    ``facts`` are best first; ``problem`` says what was not recognised."""

    status: ToolStatus
    query: MetricQuery
    facts: tuple[tuple[Fact, Document], ...] = ()
    problem: str | None = None

    @property
    def answer(self) -> tuple[Fact, Document] | None:
        return self.facts[0] if self.status == "found" and self.facts else None

    @property
    def disagreements(self) -> tuple[tuple[Fact, Document], ...]:
        """One fact per other source whose value (or unit) differs from the answer's. A
        value that is the other one rounded to the places it is written with (2,411.6 beside
        2,411.558) is the same figure printed to fewer places, not a disagreement; so is the
        same value from a table that states no unit or no currency (a 10-Q's note repeating
        the statement's net income under "(net income in millions and shares in
        thousands)", a statement's row that sets no "$" beside its figures)."""
        if self.answer is None:
            return ()
        first = self.answer[0]
        seen: set[tuple[str, float, str]] = set()
        out: list[tuple[Fact, Document]] = []
        for fact, doc in self.facts[1:]:
            key = (doc.doc_id, fact.value, fact.unit)
            same_unit = _same_unit(fact.unit, first.unit)
            if (same_unit and _same_when_rounded(fact, first)) or key in seen:
                continue
            seen.add(key)
            out.append((fact, doc))
        return tuple(out)


_PLACES = re.compile(r"\d[\d,]*(?:\.(\d+))?")
# A currency opening a unit: "USD in millions", "$ in thousands", "EUR".
_UNIT_CURRENCY = re.compile(r"^(?:[A-Z]{3}|[$€£¥])(?:\s+|$)")


def _same_unit(other: str, first: str) -> bool:
    """Whether ``other`` may be the unit ``first`` states: the same, none, or the same but
    for a currency only one of them names (``in millions`` beside ``USD in millions``);
    never two currencies."""
    if other == first or not other:
        return True
    a, b = _UNIT_CURRENCY.match(other.strip()), _UNIT_CURRENCY.match(first.strip())
    if a is not None and b is not None:
        return False
    return _UNIT_CURRENCY.sub("", other.strip()) == _UNIT_CURRENCY.sub("", first.strip())


def _places(fact: Fact) -> int | None:
    """The decimal places the fact's cell is written with (``2411.6`` → 1); ``None`` when
    the cell as written is not kept."""
    m = _PLACES.search(fact.raw)
    return len(m.group(1) or "") if m else None


def _same_when_rounded(a: Fact, b: Fact) -> bool:
    """Whether the value written to fewer places is the other one rounded to them (equal
    values, when either cell as written is not kept)."""
    pa, pb = _places(a), _places(b)
    if pa is None or pb is None:
        return a.value == b.value
    coarse, places, fine = (a, pa, b) if pa <= pb else (b, pb, a)
    step = Decimal(1).scaleb(-places)
    rounded = _decimal(fine.value).quantize(step, rounding=ROUND_HALF_UP)
    return rounded == _decimal(coarse.value).quantize(step, rounding=ROUND_HALF_UP)


# --------------------------------------------------------------------------- look-up


def _recency(document: Document) -> float:
    updated: datetime | None = document.updated_at or document.created_at
    return updated.timestamp() if updated is not None else float("-inf")


def _known(kind: str, names: Sequence[str]) -> str:
    shown = ", ".join(names)
    return f" (known {kind}: {shown})" if shown else ""


_RATE_WORDS = re.compile(
    r"[%％]|\b(?:percent(?:age)?|per\s+cent|rate|ratio|margin|yoy|year[-\s]on[-\s]year|"
    r"year\s+over\s+year|(?:share|proportion|fraction)\s+of)\b|前年同期比|前期比|前年比|同比|环比|百分比|率",
    re.IGNORECASE,
)


#: The qualifier of a rate asked for where the tables give the metric as amounts only.
AS_RATE = "(%)"


def asks_for_rate(question: str) -> bool:
    """Whether a question asks for a percentage (a change, a share, a margin) rather than
    an amount: "by what percent", 前年同期比, 增长率."""
    return bool(_RATE_WORDS.search(question))


def query_metric(
    store: FactStore,
    flt: SearchFilter,
    *,
    metric: str | None,
    entity: str | None,
    period: str | None,
    channel: str | None = None,
    qualifier: str | None = None,
    vocab: FactSettings | Vocabulary,
    authority: Mapping[str, int],
    rate: bool = False,
    share: bool = False,
) -> ToolResult:
    """Look one figure up (see the module docstring). ``authority`` maps a corpus name to
    its authority rank (higher wins); ``channel=None`` is the default channel; a
    ``qualifier`` (a line of the metric no readable fact carries) is never found.

    When the facts of the slot hold both amounts and percentages (a results table prints
    the change or the share beside the figure, under the same heading: 売上高 百万円 | %),
    the amounts answer, and the percentages are neither the answer nor "another source";
    only a question that asks for a rate (``rate``) is answered by the percentages, and
    never by an amount: with no percentage for the slot it is not found. A
    question asking for a share of something (``share``: "as a percentage of GDP") is
    answered by percentages only, never by the amount."""
    compiled = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    settings = compiled.settings
    default = settings.default_channel
    given = MetricQuery(metric, entity, period, channel, qualifier)

    def bad(problem: str) -> ToolResult:
        return ToolResult("unrecognized_param", given, (), problem)

    if metric is None:
        return bad("no metric given" + _known("metrics", list(settings.metrics)))
    if metric not in settings.metrics:
        return bad(f"unknown metric '{metric}'" + _known("metrics", list(settings.metrics)))
    if entity is None:
        return bad("no entity given" + _known("entities", list(settings.entities)))
    if entity and entity not in settings.entities:  # "": the figures of a table naming no one
        return bad(f"unknown entity '{entity}'" + _known("entities", list(settings.entities)))
    if period is None:
        return bad("no period given")
    canonical_period = compiled.canonical_period(period)
    if canonical_period is None:
        return bad(f"unrecognised period '{period}'")
    wanted_channel = default if channel is None else channel
    if wanted_channel != default and wanted_channel not in settings.channels:
        known = [default, *(c for c in settings.channels if c != default)]
        return bad(f"unknown channel '{channel}'" + _known("channels", known))

    query = MetricQuery(
        metric,
        entity,
        canonical_period,
        None if wanted_channel == default else wanted_channel,
        qualifier,
    )
    if qualifier is not None:
        # A line no readable fact carries: never answered with the metric's total.
        return ToolResult("not_found", query, (), None)
    # RESTRICTED never reaches an answer, whatever the filter given says.
    capped = dataclasses.replace(
        flt, max_sensitivity=min(flt.max_sensitivity, Sensitivity.CONFIDENTIAL)
    )
    # One look-up per part, its metric compared without case: the same measure is named
    # "GDP" by one table's header and "gdp" by another's file name.
    rows = [
        (f, d)
        for f, d in store.query_facts(
            capped, entity=entity, period=canonical_period, channel=wanted_channel
        )
        if f.metric.casefold() == metric.casefold()
    ]
    for other in glossary.same_line(metric, settings.metrics) if not rows else ():
        # The same statement line under the entity's own name for it (売上高 for revenue).
        rows = store.query_facts(
            capped, metric=other, entity=entity, period=canonical_period, channel=wanted_channel
        )
        if rows:
            break
    rows = [(f, d) for f, d in rows if d.sensitivity < Sensitivity.RESTRICTED]
    rates = [(f, d) for f, d in rows if f.unit == "%"]
    if rate and not rates and not _RATE_WORDS.search(metric):
        # "the percent change in GDP" where no table gives one: the amount is no answer
        return ToolResult("not_found", dataclasses.replace(query, qualifier=AS_RATE), (), None)
    if share:
        rows = rates
    elif rates and len(rates) < len(rows):
        rows = rates if rate else [(f, d) for f, d in rows if f.unit != "%"]
    if not rows:
        return ToolResult("not_found", query, (), None)
    rows.sort(
        key=lambda fd: (
            -authority.get(fd[1].corpus, 0),
            -_recency(fd[1]),
            fd[1].doc_id,
            fd[0].locator,
        )
    )
    return ToolResult("found", query, tuple(rows), None)


# --------------------------------------------------------------------------- rendering


def _label(name: str | None) -> str:
    return "(unspecified)" if name is None else name.replace("_", " ")


def _channel_note(query: MetricQuery) -> str:
    if query.channel is None:
        return ""
    label = _label(query.channel)
    m = _WITH_ACRONYM.match(label)  # "(Latin America, LATAM)", not "(Latin America (LATAM))"
    return f" ({m.group('name')}, {m.group('acronym')})" if m else f" ({label})"


_PARTIAL = re.compile(r"^(?P<part>.+) (?P<year>(?:FY|CY)\d{4})$")


_ENDED_SPAN = re.compile(r"^(?P<n>\d{1,2})M ended (?P<month>[A-Z][a-z]{2}) (?P<year>\d{4})$")
_MONTHS = {
    "Jan": "January", "Feb": "February", "Mar": "March", "Apr": "April", "May": "May",
    "Jun": "June", "Jul": "July", "Aug": "August", "Sep": "September", "Oct": "October",
    "Nov": "November", "Dec": "December",
}  # fmt: skip
_SPAN_WORDS = {3: "three", 6: "six", 9: "nine", 12: "twelve"}


def _period_label(period: str) -> str:
    """``Oct–Jun FY2023`` → ``Oct–Jun FY2023 (part of FY2023 only)``: a partial period
    says so wherever its figure is shown. ``3M ended Dec 2023`` → ``the three months ended
    December 2023``: a span that ends in a named month is said as its source says it."""
    if span := _ENDED_SPAN.match(period):
        n = int(span.group("n"))
        count = _SPAN_WORDS.get(n, str(n))
        month = _MONTHS.get(span.group("month"), span.group("month"))
        return f"the {count} months ended {month} {span.group('year')}"
    m = _PARTIAL.match(period)
    return f"{period} (part of {m.group('year')} only)" if m else period


_CURRENCY = r"(?:[A-Z]{3}|[A-Z]{0,2}[$€£¥₩])"
_SCALED_UNIT = re.compile(
    rf"^(?P<cur>{_CURRENCY})\s*(?P<scale>k|m|mn|bn|b|tn|thousand|million|billion|trillion)$"
)
_SCALE_IN_UNIT = re.compile(
    rf"^(?P<cur>{_CURRENCY})\s+in\s+(?P<scale>thousand|million|billion|trillion)s$",
    re.IGNORECASE,
)
_BARE_SCALE = re.compile(r"^in\s+(?P<scale>thousand|million|billion|trillion)s$", re.IGNORECASE)
# "(In billion yen)", "in millions of dollars": the scale, then what is counted.
_SCALE_OF = re.compile(
    r"^in\s+(?P<scale>thousand|million|billion|trillion)s?\s+(?:of\s+)?(?P<what>[^\W\d_].*)$",
    re.IGNORECASE,
)
_CURRENCY_UNIT = re.compile(rf"^(?P<cur>{_CURRENCY})$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def written_amount(number: str, unit: str) -> str:
    """A number as written (``61.2``) with its unit as a reader says it: a currency before
    the number and its scale after (``USD m`` → ``USD 61.2 m``, ``$ in millions`` →
    ``$391,035 million``), a percent sign attached (``12.5%``), any other unit after the
    number (``1,362 people``, ``2,600 百万円``). The number itself is never changed."""
    sign, digits = ("-", number[1:]) if number.startswith("-") else ("", number)

    def currency(cur: str) -> str:
        return f"{sign}{cur} {digits}" if cur[-1].isalpha() else f"{sign}{cur}{digits}"

    if not unit:
        return number
    if unit == "%":
        return f"{number}%"
    if m := _SCALED_UNIT.match(unit):
        return f"{currency(m.group('cur'))} {m.group('scale')}"
    if m := _SCALE_IN_UNIT.match(unit):
        return f"{currency(m.group('cur'))} {m.group('scale').lower()}"
    if m := _CURRENCY_UNIT.match(unit):
        return currency(m.group("cur"))
    if m := _BARE_SCALE.match(unit):
        return f"{number} {m.group('scale').lower()}"  # "(In millions)": 87,464 million
    if m := _SCALE_OF.match(unit):
        return f"{number} {m.group('scale').lower()} {m.group('what')}"  # 8,458 billion yen
    return f"{number} {unit}"


def _amount(fact: Fact) -> str:
    return written_amount(format_number(fact.value), fact.unit)


def _citation(fact: Fact, document: Document) -> Citation:
    trust = resolve_trust(document.origin, document.origin_chain).label
    return Citation(document.doc_id, document.title, fact.locator, document.uri, trust)


def _marker(fact: Fact, document: Document, citations: list[Citation]) -> str:
    """The ``[S#]`` marker of the fact's citation in ``citations``, added when new."""
    citation = _citation(fact, document)
    if citation not in citations:
        citations.append(citation)
    return f"[S{citations.index(citation) + 1}]"


def _plural(metric: str) -> bool:
    last = metric.replace("_", " ").split()[-1].casefold() if metric.strip() else ""
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


def _possessive(entity: str) -> str:
    return f"{entity}'" if entity.endswith("s") else f"{entity}'s"


# Words of what a figure measures: written in ordinary case in a sentence, whatever case a
# table's label gives them ("Intelligent Cloud Revenue" → "Intelligent Cloud revenue").
_MEASURE_WORDS = frozenset(
    re.findall(
        r"\w+",
        """revenue revenues sales net gross total operating cost costs of expense expenses
        income profit profits loss losses margin earnings before after interest tax taxes and
        depreciation amortization amortisation cash flow flows from assets liabilities equity
        capital expenditure expenditures headcount employees orders backlog ebit ebitda""",
    )
)


def _as_written(fact: Fact) -> str:
    """The metric's name with the case its table's label gives it, where the row or column
    it stands under names it ("Intelligent Cloud revenue" for the row "Intelligent Cloud
    Revenue"; "Revenue: Intelligent Cloud" is read as the same name); measure words in
    ordinary case. The canonical (lower-case) name otherwise."""
    try:
        parts = dict(parse_locator(fact.locator))
    except ValueError:
        return _label(fact.metric)
    for key in ("row", "col", "series", "category"):
        label = str(parts.get(key, "")).split(" / ")[0]
        name = measure_name(label) if label else None
        if name is None or name.casefold() != fact.metric.casefold():
            continue
        words = name.split(" ")
        if words[0].lower() in _MEASURE_WORDS:  # "Operating Income": nothing is a name
            break
        return " ".join(
            w.lower() if w.lower() in _MEASURE_WORDS and w[1:] == w[1:].lower() else w
            for w in words
        )
    return _label(fact.metric)


def _sentence(fact: Fact, query: MetricQuery, marker: str) -> str:
    """One figure as a sentence: ``ACME Japan's operating profit in FY2025 was USD 61.2 m
    [S1].`` A metric named in Japanese or Chinese keeps the plain labelled form
    (``ACME Japan FY2025 売上高: 2,600 百万円 [S1]``) rather than English grammar around
    it. The locator is the citation's, never part of the sentence."""
    metric = _as_written(fact) + _channel_note(query)
    heading = _source_heading(fact)
    if fact.unit == "%" and heading and not _RATE_WORDS.search(fact.metric):
        # A percentage of an amount's line is a change or a share of it: the source's
        # heading says which (年初至报告期末比上年同期增减, 売上高(%)).
        metric = f"{metric} ({heading})"
    period = _period_label(fact.period)
    if _CJK.search(metric):
        return f"{fact.entity} {period} {metric}: {_amount(fact)} {marker}".lstrip()
    verb = "were" if _plural(fact.metric) else "was"
    if not fact.entity:
        # A table that names no one (a data file's long-format rows): its figure alone.
        return f"{metric[:1].upper()}{metric[1:]} in {period} {verb} {_amount(fact)} {marker}."
    return f"{_possessive(fact.entity)} {metric} in {period} {verb} {_amount(fact)} {marker}."


def _headings(fact: Fact) -> tuple[str, str]:
    """The fact's column and row headings as its locator writes them (empty when none)."""
    try:
        parts = dict(parse_locator(fact.locator))
    except ValueError:
        return "", ""
    return parts.get("col", ""), parts.get("row", "")


def _source_heading(fact: Fact) -> str | None:
    """The column heading the fact's figure stands under in its source, as written
    (``年初至报告期末``, ``Nine Months Ended``), when the locator carries one in words."""
    col, _ = _headings(fact)
    return col if col and not col.isdigit() else None


def _period_heading(fact: Fact) -> tuple[str, str] | None:
    """Where the fact's period is written in its source, and how to say so: its column's
    heading (``("headed", "年初至报告期末")``), or its row's label where the column names the
    metric (a 決算短信 table's ``("row", "2024年3月期第2四半期")`` under ``事業貢献利益(百万円)``)."""
    col, row = _headings(fact)
    if not col or col.isdigit():
        return None
    if fact.metric.casefold() not in col.casefold():
        return "headed", col
    return ("row", row) if row and not row.isdigit() else None


def render_parts_of_year(
    query: MetricQuery, rows: Sequence[tuple[Fact, Document]]
) -> tuple[str, list[Citation]]:
    """The refusal of a whole year that is not reported, then each readable part of it as
    its own labelled figure: ``No figure found for revenue of BYD in FY2023. Reported for
    part of it: BYD Q1–Q3 FY2023 (part of FY2023 only; headed 年初至报告期末) …``. A part
    never stands in for the year: the answer's status stays not found."""
    citations: list[Citation] = []
    lines = [render_not_found(query), "Reported for part of that year only:"]
    for fact, document in rows:
        sentence = _sentence(fact, query, _marker(fact, document, citations))
        where = _period_heading(fact)
        if where and where[1] not in sentence:
            label = _period_label(fact.period)
            heading = " ".join(where)
            headed = f"{label[:-1]}; {heading})" if label.endswith(")") else f"{label} ({heading})"
            sentence = sentence.replace(label, headed, 1)
        lines.append(f"- {sentence}")
    return "\n".join(lines), citations


def _found_text(result: ToolResult, citations: list[Citation]) -> str:
    """The sentence of a found result and a line per disagreeing source, their markers
    numbered in ``citations`` (extended with the new ones)."""
    if result.answer is None:
        raise ValueError(f"render_found needs a found result, got {result.status!r}")
    fact, document = result.answer
    lines = [_sentence(fact, result.query, _marker(fact, document, citations))]
    for other, other_doc in result.disagreements:
        marker = _marker(other, other_doc, citations)
        lines.append(f"Another source reports {_amount(other)} {marker}.")
    return "\n".join(lines)


def render_found(
    result: ToolResult, *, model_prose: str | None = None
) -> tuple[str, list[Citation]]:
    """The answer text and its citations, from fact values and provenance alone: one
    sentence in words, its ``[S#]`` marker naming the citation that holds the locator.

    ``model_prose`` — anything a model wrote about this question — is discarded: it is
    accepted only so callers can hand it over and be sure it never becomes the answer.
    """
    del model_prose  # never the source of a number (docs/design.md §5)
    citations: list[Citation] = []
    text = _found_text(result, citations)
    return text, citations


def render_not_found(query: MetricQuery) -> str:
    """An explicit refusal naming what was looked for; no number but the period's."""
    channel = _channel_note(query)
    metric = _label(query.metric)
    if query.qualifier is not None:
        after = query.qualifier.casefold().startswith(("per ", AS_RATE))
        metric = f"{metric} {query.qualifier}" if after else f"{query.qualifier} {metric}"
    # A period the question did not name is not said ("… in (unspecified)").
    period = "" if query.period is None else f" in {_label(query.period)}"
    of = "" if query.entity == "" else f" of {_label(query.entity)}"
    return f"No figure found for {metric}{channel}{of}{period}."


def render_unrecognized(result: ToolResult) -> str:
    """Say which parameter was not recognised; no number is invented."""
    problem = result.problem or "a parameter was not recognised"
    return f"Cannot look that figure up: {problem}."


def render(result: ToolResult, *, model_prose: str | None = None) -> tuple[str, list[Citation]]:
    """Render any result: found → :func:`render_found`; not found and unrecognised → the
    refusal text with no citations. ``model_prose`` is always discarded."""
    if result.status == "found":
        return render_found(result, model_prose=model_prose)
    if result.status == "not_found":
        return render_not_found(result.query), []
    return render_unrecognized(result), []


# --------------------------------------------------------------------------- multi

_DIGITS = re.compile(r"\d+")


def _period_key(period: str) -> tuple[int, ...] | None:
    """A chronological key for a canonical period: its 4-digit year, then its other numbers
    (``Q3 2025`` → ``(2025, 3)``); ``None`` when there is no year."""
    numbers = [int(n) for n in _DIGITS.findall(period)]
    years = [n for n in numbers if 1000 <= n <= 9999]
    if len(years) != 1:
        return None
    rest = [n for n in numbers if n != years[0]]
    month = period.split(" ", 1)[0]
    if month in MONTH_NAMES:  # "Jul 2008": its month, not a number, orders it
        rest = [MONTH_NAMES.index(month) + 1]
    return (years[0], *rest)


def _decimal(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def _signed(value: Decimal) -> str:
    text = format_number(abs(value))
    return f"-{text}" if value < 0 else f"+{text}"


def comparison(first: ToolResult, second: ToolResult) -> str | None:
    """``"<later> vs <earlier>: up USD 80 m (+6.1%)"`` for two found results of the same
    metric and unit, else ``None``. Periods are ordered chronologically when they are the
    only difference; otherwise the second part is compared with the first. The difference
    and the percentage (one decimal, half up; left out when the base is zero) are the only
    derived numbers in a structured answer."""
    if first.answer is None or second.answer is None:
        return None
    a, b = first.answer[0], second.answer[0]
    if a.metric != b.metric or a.unit != b.unit:
        return None
    if a.entity == b.entity and a.period != b.period:
        ka, kb = _period_key(a.period), _period_key(b.period)
        if ka is not None and kb is not None and ka > kb:
            a, b = b, a
        labels = (b.period, a.period)
    elif a.period == b.period and a.entity != b.entity:
        labels = (b.entity, a.entity)
    else:
        labels = (f"{b.entity} {b.period}".strip(), f"{a.entity} {a.period}".strip())
    base, new = _decimal(a.value), _decimal(b.value)
    diff = new - base
    text = f"{labels[0]} vs {labels[1]}: "
    if diff == 0:
        return text + "unchanged"
    amount = written_amount(format_number(abs(diff)), b.unit)
    text += f"{'up' if diff > 0 else 'down'} {amount}"
    if base != 0:
        pct = (diff / abs(base) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
        text += f" ({_signed(pct)}%)"
    return text


def run_multi(
    store: FactStore,
    flt: SearchFilter,
    parts: Sequence[MetricQuery],
    *,
    vocab: FactSettings | Vocabulary,
    authority: Mapping[str, int],
    compare: bool = True,
    rate: bool = False,
) -> tuple[str, list[Citation], list[ToolResult]]:
    """Run every part through :func:`query_metric` (no LLM call), one rendered block per
    part in order, then — when ``compare`` and for exactly two comparable found values —
    their comparison. Citations are those of the found parts, without repeats."""
    compiled = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
    results = [
        query_metric(
            store,
            flt,
            metric=part.metric,
            entity=part.entity,
            period=part.period,
            channel=part.channel,
            qualifier=part.qualifier,
            vocab=compiled,
            authority=authority,
            rate=rate,
        )
        for part in parts
    ]
    text, citations = render_multi(results, compare=compare)
    return text, citations, results


def render_multi(
    results: Sequence[ToolResult], *, compare: bool = True
) -> tuple[str, list[Citation]]:
    """The text and citations of several results (already looked up, e.g. after a
    real-time check): one block per result in order, then — when ``compare`` (the question
    asks to compare) and for exactly two comparable found values — their
    :func:`comparison`. Citations without repeats."""
    blocks: list[str] = []
    citations: list[Citation] = []
    for result in results:
        if result.status == "found":
            blocks.append(_found_text(result, citations))
        else:
            blocks.append(render(result)[0])
    found = [r for r in results if r.status == "found"]
    if compare and len(found) == 2:
        line = comparison(found[0], found[1])
        if line is not None:
            blocks.append(line)
    return "\n".join(blocks), citations


# --------------------------------------------------------------------------- readable names


def names_in_katakana(question: str, entities: Iterable[str]) -> dict[str, set[str]]:
    """The entities (of those given) that ``question`` writes in katakana, each with the
    katakana it writes: a Japanese question's コニカミノルタ is the Konica Minolta of a
    table (:mod:`clearance.transliteration`), with no vocabulary saying so. An entity
    also sounds alike without its legal form (``Konica Minolta, Inc.``)."""
    sounds = {
        w: s for w in katakana_words(question) if len(s := katakana_sound(w)) >= MIN_CONSONANTS
    }
    out: dict[str, set[str]] = {}
    for entity in set(entities) if sounds else ():
        spoken = {latin_sound(name) for name in (entity, *entity_aliases(entity))}
        for word, sound in sounds.items():
            if sound in spoken:
                out.setdefault(entity, set()).add(word)
    return out


def readable_vocabulary(
    base: Vocabulary, facts: Iterable[Fact], names: Mapping[str, Iterable[str]] | None = None
) -> Vocabulary:
    """``base`` plus every metric, entity and channel name ``facts`` carry that ``base``
    does not know, each matched by its own name (an entity also without its legal form:
    ``Apple Inc.`` is ``Apple`` too). Give it only facts the caller may read: the names
    it adds are what questions are read with, offered back and named in refusals.
    ``names``: other names of entities, from the same readable documents
    (``ENTITY_NAMES_KEY``: "BYD" for the 比亚迪 of ``byd-2023-q3-key-figures.csv``). Single
    months are read as periods when one of ``facts`` is a month's (``Jul 2008``)."""
    names = names or {}
    settings = base.settings
    metrics = {k: tuple(v) for k, v in settings.metrics.items()}
    entities = {k: tuple(v) for k, v in settings.entities.items()}
    channels = {k: tuple(v) for k, v in settings.channels.items()}
    known = {
        "metric": {n.casefold() for n in metrics},
        "entity": {n.casefold() for n in entities},
        "channel": {n.casefold() for n in channels} | {settings.default_channel.casefold()},
    }
    added = False
    facts = list(facts)
    measures = {f.metric for f in facts} | set(metrics)
    # each metric's neighbours: the metrics of the entities that report it
    of_entity: dict[str, set[str]] = {}
    for fact in facts:
        of_entity.setdefault(fact.entity, set()).add(fact.metric)
    unnamed_only = of_entity.get("", set()) - {
        m for entity, held in of_entity.items() if entity for m in held
    }
    beside: dict[str, set[str]] = {}
    for held in of_entity.values():
        for metric in held:
            beside.setdefault(metric, set()).update(held)
    for fact in facts:
        for kind, name, table in (
            ("metric", fact.metric, metrics),
            ("entity", fact.entity, entities),
            ("channel", fact.channel, channels),
        ):
            if name.casefold() in known[kind] or not name.strip():
                continue  # an unnamed entity (a table that names no one) is no name to read
            known[kind].add(name.casefold())
            table[name] = (
                (*entity_aliases(name), *names.get(name, ()))
                if kind == "entity"
                else (
                    *metric_aliases(name, measures),
                    *_other_names(name, measures),
                    *_number_forms(name),
                    *_head_name(name, beside.get(name, set())),
                    *_weak_names(name, measures, name in unnamed_only),
                    *_without_net(name, measures),
                )
                if kind == "metric"
                # a line: "excise tax revenues" of "Excise Taxes", "EMEA" of "Europe, Middle
                # East, and Africa (EMEA)"
                else (*_acronym_forms(name), *_number_forms(name))
            )
            added = True
    # Months are read in questions only where a readable table gives monthly figures.
    months = base.months or any(MONTH_PERIOD.match(f.period) for f in facts)
    if not added:
        return base.with_months() if months else base
    return Vocabulary(
        dataclasses.replace(settings, metrics=metrics, entities=entities, channels=channels),
        months=months,
    )


_PLURAL_ES = re.compile(r"(?:s|x|z|ch|sh)$")
# A name with the acronym it is known by: "Latin America (LATAM)".
_WITH_ACRONYM = re.compile(r"^(?P<name>.+?)\s*\((?P<acronym>[A-Z][A-Z&]{1,7})\)$")


def _acronym_forms(name: str) -> tuple[str, ...]:
    """A line's name without its acronym, and the acronym alone: questions ask for
    "EMEA revenue" and "revenue in Europe, Middle East, and Africa" alike."""
    m = _WITH_ACRONYM.match(name)
    if m is None:
        return ()
    return (m.group("name"), m.group("acronym"), *_number_forms(m.group("name")))


def _number_forms(name: str) -> tuple[str, ...]:
    """A derived metric's or line's name with its last word in the other number, as
    questions write it: a table's ``outlay`` is asked for as "outlays", ``revenues`` as
    "revenue", its line ``Excise Taxes`` as "excise tax revenues".
    Words of Latin letters only, and not acronyms (``EBITDA``)."""
    head, _, last = name.rpartition(" ")
    if not last.isascii() or not last.isalpha() or len(last) < 3 or last.isupper():
        return ()
    if last.endswith("ies"):
        other = last[:-3] + "y"
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")):
        other = last[:-2] if _PLURAL_ES.search(last[:-2]) and last.endswith("es") else last[:-1]
    elif last.endswith("y") and last[-2] not in "aeiou":
        other = last[:-1] + "ies"
    else:
        other = last + ("es" if _PLURAL_ES.search(last) else "s")
    return (f"{head} {other}".strip(),)


#: Where a Chinese or Japanese line's name says whose or which part it is before the
#: measure ("归属于上市公司股东的净利润": 的 then the measure).
_OF = re.compile(r"[的之の]")


def _head_name(metric: str, metrics: Iterable[str]) -> tuple[str, ...]:
    """The measure a Chinese or Japanese line's name ends in, after its last 的 ("净利润" of
    "归属于上市公司股东的净利润"), as a name of it: "比亚迪的净利润是多少?" is asked of a
    company whose lines are the net profit attributable to shareholders and the same
    without non-recurring items, and means the first, as readers of its reports say it.
    ``metrics`` are the lines of the companies reporting ``metric``. Only a measure a
    statement line is called (:mod:`clearance.glossary`), and only for the plainest of
    ``metrics`` ending in it, whose qualifier every other one's name holds ("归属于上市公司
    股东的" in "归属于上市公司股东的扣除非经常性损益的净利润"); none when a line is called the
    measure itself, by this name or another. The measure's other names ("net profit",
    "net income": :mod:`clearance.glossary`) name the line too."""
    parts = _OF.split(metric)
    head = parts[-1].strip()
    if len(parts) < 2 or len(head) < 2 or not glossary.equivalents(head):
        return ()
    names = list(metrics)
    if any(glossary.key(m) == glossary.key(head) for m in names) or glossary.same_line(head, names):
        return ()  # a table has the measure itself, by this name or another
    ending = [m for m in names if len(_OF.split(m)) > 1 and _OF.split(m)[-1].strip() == head]
    qualifier = metric[: len(metric) - len(head)]
    if any(m != metric and (len(m) <= len(metric) or qualifier not in m) for m in ending):
        return ()
    # and by the measure's names in the other languages: "BYD's net profit" too
    return (head, *glossary.equivalents(head))


def _other_names(metric: str, metrics: Iterable[str]) -> tuple[str, ...]:
    """The other names of the statement line ``metric`` is ("operating profit" for 営業利益),
    but those another of ``metrics`` goes by: that metric keeps its own name. Where another
    of ``metrics`` goes by the line's first name ("revenue" beside a ledger's "net
    revenue", its revenue less its expenditures), the other names are that one's: "total
    revenue" is asked of the "Total Revenue" row."""
    own = {glossary.key(m) for m in metrics}
    first = glossary.line_name(metric)
    if (
        first is not None
        and glossary.key(first) != glossary.key(metric)
        and glossary.key(first) in own
    ):
        return ()
    return tuple(n for n in glossary.equivalents(metric) if glossary.key(n) not in own)


# A balance or a flow written with what it is net of: "Long-term debt, net", "Accounts
# receivable, net of allowances", "Loss from discontinued operations, net of tax".
_NET_SUFFIX = re.compile(r"^(?P<name>[^,]{3,}?),\s*net(?:\s+of\b.*)?$", re.IGNORECASE)


# The company a line is attributable to, named with its legal form: "Net income (loss)
# attributable to Dean Foods Company" is asked as "… attributable to Dean Foods".
_ATTRIBUTABLE_TO_FIRM = re.compile(
    r"^(?P<name>.+\battributable\s+to\s+.+?)(?:,)?\s+(?:company|inc\.?|incorporated|corporation"
    r"|corp\.?|plc|ltd\.?|limited|llc|co\.)$",
    re.IGNORECASE,
)


def _without_net(metric: str, metrics: Iterable[str]) -> tuple[str, ...]:
    """``metric`` as questions name it: without what it is net of ("long-term debt" for
    "long-term debt, net"), and without the legal form of the company it is attributable
    to; unless another of ``metrics`` goes by that name (a table that has both the gross
    and the net line keeps each to its own name)."""
    bare = [m.group("name").strip() for m in (_NET_SUFFIX.match(metric),) if m is not None]
    bare += [m.group("name").strip() for m in (_ATTRIBUTABLE_TO_FIRM.match(metric),) if m]
    own = {glossary.key(n) for n in metrics}
    return tuple(name for name in bare if glossary.key(name) not in own)


def _weak_names(metric: str, metrics: Iterable[str], unnamed: bool) -> tuple[str, ...]:
    """The weak names of the statement line ``metric`` is ("receipts" for revenue), for a
    metric only tables naming no one report (a budget's data files: no company's net sales
    are read as a government's receipts), and none another of ``metrics`` goes by."""
    if not unnamed:
        return ()
    own = {glossary.key(m) for m in metrics}
    return tuple(n for n in glossary.weak_names(metric) if glossary.key(n) not in own)


def sole_entity(rows: Iterable[tuple[Fact, Document]]) -> str | None:
    """The one entity ``rows`` hold a figure for, else ``None``: a question that names no
    entity is answered for it (and says so) rather than asked which one."""
    names = {fact.entity for fact, _ in rows}
    return names.pop() if len(names) == 1 else None
