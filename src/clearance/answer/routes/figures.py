"""The figures route: metric questions answered from the fact table only, rendered
deterministically with their provenance; missing data is an honest "not found"."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date

from clearance import glossary
from clearance.analysis import file_name_words
from clearance.answer.context import AnswerContext
from clearance.answer.intent import (
    MAX_PARTS,
    SHARE_OF,
    Intent,
    MetricQuery,
    year_before,
)
from clearance.answer.periods import span_of_fiscal_part
from clearance.answer.request import (
    ALL_CHANNELS,
    CLARIFY,
    CLARIFY_OPTIONS,
    MAX_OPTIONS,
    AnswerRequest,
    refusal,
)
from clearance.answer.result import AnswerResult, Citation, ResolvedPeriod, Route, Status
from clearance.answer.structured import (
    AS_RATE,
    ToolResult,
    asks_for_rate,
    query_metric,
    render_found,
    render_multi,
    render_not_found,
    render_parts_of_year,
    render_unrecognized,
    sole_entity,
)
from clearance.config import LATEST_PERIOD
from clearance.ingest.facts import (
    CURRENCY_CODES,
    MONTH_NAMES,
    MONTH_PERIOD,
    YEAR_ENDS_KEY,
    Vocabulary,
    january_year_named,
    year_to_quarter,
)
from clearance.ingest.locator import parse_locator
from clearance.llm.extractive import states_whole_year_amount, without_asides, years_named
from clearance.model import Document, Fact
from clearance.trust import resolve_trust

__all__ = ["PARTS_OF_PERIOD", "STATED_IN_PROSE", "FiguresRoute"]

MISSING_WORDS = {"metric": "figure"}

# The period of a part whose default "latest" period has no readable fact at all.
ANY_PERIOD = "any period"

CLARIFY_AMBIGUOUS = "“{text}” can mean {readings}; please say which period you mean."

#: Flag of a figure answer that gives parts of the period asked about, not the period.
PARTS_OF_PERIOD = "parts_of_period"
#: Flag of a figure answer quoted from a document's sentence: no table reports it.
STATED_IN_PROSE = "stated_in_prose"

# What the narrative answer puts before a source's sentence that disagrees with another.
_OTHER_SOURCE = "Another source says otherwise:"
# A sentence of an answer and the number of its citation marker.
_CITED = re.compile(r"([^\[\]]+?)\s*\[S(\d{1,4})\]")
# A percentage a sentence states: "2.6%", "2.6 percent", "2.6パーセント".
_PERCENTAGE = re.compile(r"\d\s*(?:[%％]|percent\b|per\s+cent\b|パーセント)", re.IGNORECASE)

TOO_MANY_PARTS = (
    "That asks for more than {limit} figures at once; please ask about fewer metrics, "
    "entities, periods or channels."
)


def _line_names(metric: str, vocab: Vocabulary) -> list[str]:
    """The other names the readable tables give the line ``metric`` (a Japanese table's
    営業利益 for "operating income")."""
    return glossary.same_line(metric, vocab.settings.metrics)


#: How far from the year asked a year a sentence names makes the sentence that year's
#: rather than its report's ("… in 2019" under a 2024 title; "since the 2003 merger" dates
#: no amount of 2024's).
_NEAR_YEARS = 5


def _of_the_year(year: str, sentence: str, cited: Citation) -> bool:
    """Whether a sentence states its amount for ``year``: it names it, or its section or
    its document's title does ("コニカミノルタ 2024年3月期 連結業績の概要") and the sentence
    names no year near it (:data:`_NEAR_YEARS`: "… in 2023" under a 2024 title is the year
    before's; "the highest since the 2003 merger" dates no amount)."""
    own = years_named(sentence)
    if year in own:
        return True
    near = any(abs(int(y) - int(year)) <= _NEAR_YEARS for y in own)
    context = f"{cited.locator}\n{cited.title}"
    # a quarter's or a half's report names its year as the end of that part, not the year
    return not near and year in years_named(context) and not _PART_REPORT.search(context)


# What a report of part of a year calls itself: "Form 10-Q for the quarter ended June 30,
# 2025", "six months ended", an interim or half-year report, 第2四半期, 中間, 半年度报告.
_PART_REPORT = re.compile(
    r"(?i:\b(?:quarter(?:ly)?|interim|half[\s-]+year(?:ly)?|semi-?annual|10-Q|(?:months|weeks)"
    r"\s+ended)\b)|四半期|中間|半期|季度|半年"
)


def _names_entity(vocab: Vocabulary, entity: str | None, sentence: str, cited: Citation) -> bool:
    """Whether the sentence, its section, its document's title or file name names ``entity``
    (any of its names): a company total is never another company's, nor a line's."""
    if entity is None:
        return True
    file_words = file_name_words(cited.uri)
    text = f"{sentence}\n{cited.locator}\n{cited.title}\n{file_words}"
    return any(m.canonical == entity for m in vocab.find("entity", text))


def _unnamed(question: str, intent: Intent, parts: Sequence[MetricQuery]) -> bool:
    """Whether the question gives the figure a name no readable fact carries, where the
    facts name no one and no slot is missing ("outlays for Fannie Mae and Freddie Mac"
    beside a table of federal outlays by line): its figure is not found, never the
    table's total. Only a name the figure is said to be of or for ("for Fannie Mae", "of
    Fannie Mae", "Fannie Mae's"): one saying whose count it is ("according to CBO") or in
    what ("in USD") narrows nothing."""
    name = intent.unknown_entity
    if not name or not all(not p.entity and not p.channel and not p.qualifier for p in parts):
        return False
    named = re.escape(name)
    return bool(re.search(rf"(?:\b(?:for|of|on)\s+(?:the\s+)?{named}\b|{named}['’]s\b)", question))


# What names a part of a company: its segments, divisions, regions, business units.
_PART = r"(?i:segments?|divisions?|regions?|business(?:es)?|units?|operations)\b"
# What a figure is counted in, not whose it is: "in US dollars", "in Swiss francs", "in Yen".
_CURRENCY_WORDS = re.compile(
    r"(?i:\b(?:dollars?|euros?|yen|francs?|pounds?|sterling|yuan|renminbi|won|rupees?|"
    r"kron(?:a|e|or|er)|currency|terms)\b)"
)


def _alien_line(
    question: str, intent: Intent, parts: Sequence[MetricQuery], known: Iterable[str]
) -> str:
    """The name the question gives the figure's line where the entity is named too and no
    readable fact's metric, entity or line holds a word of it ("LinkedIn" in "How much
    revenue did LinkedIn generate for Microsoft in fiscal 2025?"): that line's figure is
    not found, never the entity's total. Only a name the figure is said to be of, for or in
    ("revenue in Brazil", "in the Nordics"), a part of the entity ("Coca-Cola's Latin
    America segment", "the EMEA region"), or that did something ("did LinkedIn
    generate") or that it came from ("revenue from Asia"): "as reported by the SEC" or
    "from the Annual Report" says whose count it is, not whose figure, and "in USD" or "in
    US dollars" what it is counted in; empty otherwise."""
    name = intent.name_left
    if not name or any(p.channel or p.qualifier for p in parts):
        return ""
    # a line some readable fact names, with every word of it ("Intelligent Cloud"); a word
    # alone says nothing ("bank" of "Federal Home Loan Bank advances" is no Silicon Valley
    # Bank)
    words = {w.casefold() for w in re.findall(r"\w+", name)}
    if any(words <= set(re.findall(r"\w+", k.casefold())) for k in known):
        return ""
    named = re.escape(name)
    said = rf"\b(?:did|does|do|for|of)\s+(?:the\s+)?{named}\b|{named}['’]s\b"
    # "Coca-Cola's Latin America segment", "the EMEA region": a part of whose figure it is
    said += rf"|['’]s\s+{named}\b|\b{named}\s+{_PART}|{_PART}\s+(?:of\s+)?{named}\b"
    if not re.fullmatch(CURRENCY_CODES, name) and not _CURRENCY_WORDS.search(name):
        said += rf"|\bin\s+(?:the\s+)?{named}\b(?!\s+{_CURRENCY_WORDS.pattern})"
    if not _SOURCE_WORDS.search(name):
        # "revenue from Asia", "came from North America": where the figure came from, unless
        # the name is of a document ("from the Annual Report")
        said += rf"|\bfrom\s+(?:the\s+)?{named}\b"
    return name if re.search(said, question) else ""


# Words that name a document or its publisher, not a part of a company.
_SOURCE_WORDS = re.compile(
    r"(?i:\b(?:report|filing|statements?|form|10-?[KQ]|SEC|table|document|deck|release|"
    r"presentation|website|database|survey)\b)"
)


#: A count of months from a year's start, as periods are written ("11M FY2008").
_MONTHS_COUNTED = re.compile(r"\d{1,2}M\s+FY\d{4}$")
#: The year a canonical period names ("FY2024", "Q3 2023", "3M ended Dec 2023").
# A quarter or a half named without its year ("Q2", "the second quarter", "H1", 上半期).
_PART_WITHOUT_YEAR = re.compile(
    r"(?:the\s+)?(?:Q[1-4]|[1-4]Q|H[12]|(?:first|second|third|fourth)\s+(?:quarter|half)"
    r"|第\s*[1-4一二三四]\s*(?:四半期|季度)|上半期|下半期|上期|下期|上半年|下半年)",
    re.IGNORECASE,
)


#: The months a year's first months are counted in ("first six months of 2025": 6M FY2025).
_MONTHS_OF_YEAR = re.compile(r"^(\d{1,2})M FY(\d{4})$")


def _calendar_span(period: str | None) -> str | None:
    """A quarter, half or count of a year's first months as the span of months it is of a
    calendar year: ``Q2 2025`` → ``3M ended Jun 2025``, ``6M FY2025`` → ``6M ended Jun
    2025``; ``None`` for any other period."""
    if period is None:
        return None
    m = _MONTHS_OF_YEAR.match(period)
    if m is not None:
        months = int(m.group(1))
        return (
            f"{months}M ended {MONTH_NAMES[months - 1]} {m.group(2)}" if 1 <= months <= 11 else None
        )
    return span_of_fiscal_part(period, 12)


_SPAN = re.compile(rf"^(\d{{1,2}})M ended ({'|'.join(MONTH_NAMES)}) (\d{{4}})$")


def _fiscal_readings(calendar: str, periods: Iterable[str]) -> list[str]:
    """The spans of ``periods`` that a quarter or half, whose calendar span is ``calendar``
    (``3M ended Sep 2024`` for Q3 2024), may be of a fiscal year ending in any month and
    named by the year it starts or ends in: spans of as many months that end within
    eleven months of the calendar one, latest first. A retailer's "third quarter of fiscal
    2024", its 13 weeks ended November 2, 2024, is the three months ended October 2024;
    the same company's three months ended October 2023 are its fiscal 2024's third quarter
    too, if it names years by their end. Offered for the asker to choose, never assumed."""
    asked = _SPAN.match(calendar)
    if asked is None:
        return []
    end = _month_index(asked.group(2), asked.group(3))
    return _spans_ending(periods, int(asked.group(1)), end - 11, end + 11)


_YEAR_PERIOD = re.compile(r"^FY(\d{4})$")


def _twelve_months_it_may_be(period: str, periods: Iterable[str]) -> list[str]:
    """The spans of twelve months ``periods`` holds that fiscal year ``period`` may be,
    latest first: those ending in its year (named by the year they end in) or in the
    January after it (named by the year they start in, as most retailers name a year
    ending in January)."""
    year = period[2:]
    return _spans_ending(
        periods, 12, _month_index("Jan", year), _month_index("Jan", str(int(year) + 1))
    )


def _spans_ending(periods: Iterable[str], months: int, first: int, last: int) -> list[str]:
    """The spans of ``months`` months among ``periods`` that end from month index ``first``
    to ``last`` (:func:`_month_index`), latest first."""
    held = [
        (index, p)
        for p in periods
        if (m := _SPAN.match(p)) is not None
        and int(m.group(1)) == months
        and first <= (index := _month_index(m.group(2), m.group(3))) <= last
    ]
    return [p for _, p in sorted(held, reverse=True)]


def _month_index(month: str, year: str) -> int:
    return int(year) * 12 + MONTH_NAMES.index(month)


_FISCAL_WORD = re.compile(r"(?i:\bfiscal\b|\bFY\s*'?\d)")


def _calendar_aligned(span: str) -> bool:
    """Whether a span of months ends where a calendar quarter does (March, June, …)."""
    m = _SPAN.match(span)
    return m is not None and MONTH_NAMES.index(m.group(2)) % 3 == 2


def _which_period(
    request: AnswerRequest,
    periods: Sequence[str],
    resolved: tuple[ResolvedPeriod, ...],
    why: str = "",
) -> AnswerResult:
    """Ask which period, offering ``periods`` (``why`` none was taken opens the question)."""
    request.trace.reason = "clarify"
    options = tuple(periods[:MAX_OPTIONS])
    text = why + CLARIFY.format(missing=MISSING_WORDS.get("period", "period"))
    text += CLARIFY_OPTIONS.format(options=", ".join(options))
    return AnswerResult(
        Status.CLARIFY,
        _preamble(resolved, []) + text,
        Route.STRUCTURED,
        missing=("period",),
        options=options,
        resolved_periods=resolved,
    )


def _one_look_up_each(parts: Sequence[MetricQuery]) -> list[MetricQuery]:
    """``parts`` without repeats: "Q2 FY2024, the quarter ended December 31, 2023" names one
    span twice, and its figure is given once, never set beside itself."""
    return list(dict.fromkeys(parts))


def _names_someone(words: str) -> bool:
    """Whether ``words`` read as a name (``Greater China``, ``香港``), not as a common word
    that narrows a metric (``real``, ``per capita``)."""
    return any(ch.isupper() or not ch.isascii() for ch in words)


def _plain_sentence(sentence: str, cited: Citation) -> str:
    """A sentence of a narrative answer without what the answer put before it: the note
    that another source disagrees, and its section's heading."""
    sentence = sentence.strip().removeprefix(_OTHER_SOURCE).strip()
    heading = cited.locator.removeprefix("section=").rsplit(">", 1)[-1].strip()
    if heading and sentence.startswith(heading + " "):
        sentence = sentence[len(heading) + 1 :]
    return sentence


class FiguresRoute:
    """Metric questions answered from the fact table (docs/design.md §5)."""

    def __init__(
        self,
        ctx: AnswerContext,
        quote: Callable[[AnswerRequest], AnswerResult | None] | None = None,
    ) -> None:
        self.ctx = ctx
        #: The passages' own sentences, quoted without a model (the narrative route's
        #: ``passages(…, prose_only=True, quoting=True)``), asked for a whole year's figure
        #: no table reports.
        self.quote = quote

    def answer(self, request: AnswerRequest) -> AnswerResult | None:
        intent = request.intent
        if intent is None or intent.kind not in ("metric", "multi") or intent.uncertain:
            # A question that names a metric but asks about something else as well: the
            # documents are the better judge, and a figure nobody asked for is never offered.
            return None
        if SHARE_OF.search(request.masked or request.question) and not any(
            f.unit == "%"
            for part in intent.parts
            for f, _ in self.ctx.readable_facts(request, metric=part.metric, channel=ALL_CHANNELS)
        ):
            # A share asked for ("debt as a share of GDP") where no table gives one as a
            # percentage: the passages may state it; the amount never answers it.
            return None
        return self.structured(request, intent)

    def _tool(self, request: AnswerRequest, part: MetricQuery) -> ToolResult:
        assert request.flt is not None
        authority = {n: c.authority for n, c in self.ctx.settings.corpora.items()}
        result = query_metric(
            self.ctx.runtime.store,
            request.flt,
            metric=part.metric,
            entity=part.entity,
            period=part.period,
            channel=part.channel,
            qualifier=part.qualifier,
            vocab=request.vocab or self.ctx.vocab,
            authority=authority,
            rate=asks_for_rate(request.masked or request.question),
            share=SHARE_OF.search(request.masked or request.question) is not None,
        )
        if result.status == "not_found" and (cumulative := year_to_quarter(part.period)):
            # "第2四半期の売上高": a Japanese report gives the year to the quarter; the answer
            # says so by the figure's own label (Q1–Q2 FY2024).
            again = self._tool(request, replace(part, period=cumulative))
            if again.status == "found":
                return again
        if result.status != "found":
            return result
        kept = self.ctx.confirmed(request, result.facts)
        if not kept:
            return ToolResult("not_found", result.query, (), None)
        return ToolResult("found", result.query, tuple(kept), None)

    def _latest_period(self, request: AnswerRequest, part: MetricQuery) -> str | None:
        """The latest period with a readable fact for the part's metric, entity and channel:
        a fiscal (or calendar) year that has ended if there is one, else any period that
        has ended, else any that has begun. Periods of unknown shape are not considered."""
        assert request.today is not None
        today = request.today
        spans = []
        for fact, _ in self.ctx.readable_facts(
            request, metric=part.metric, entity=part.entity, channel=part.channel
        ):
            span = self.ctx.calendar.span(fact.period)
            if span is not None and span[0] <= today:
                spans.append((span, fact.period))
        ended = [s for s in spans if s[0][1] < today]
        years = [s for s in ended if s[1].startswith(("FY", "CY"))]
        pool = years or ended or spans
        if not pool:
            return None
        return max(pool, key=lambda s: (s[0][1], s[0][0], s[1]))[1]

    def _with_defaults(
        self,
        request: AnswerRequest,
        parts: Sequence[MetricQuery],
        *,
        configured: bool = True,
        names_left: bool = True,
        unknown: str = "",
    ) -> tuple[list[MetricQuery], list[str]]:
        """The parts with ``[facts] default_entity`` / ``default_period`` filled in where the
        question named neither (only when ``configured``: a question with words besides its
        slots gets no configured default), else the one entity whose figure the caller may
        read, and the assumptions made (each said once). A latest period nobody may read
        leaves the period ``None`` ("any period")."""
        facts = self.ctx.settings.facts
        filled: list[MetricQuery] = []
        assumptions: list[str] = []

        def assume(text: str) -> None:
            if text not in assumptions:
                assumptions.append(text)

        unnamed = any(p.entity is None for p in parts) and {
            f.entity for f, _ in self.ctx.readable_facts(request, channel=ALL_CHANNELS)
        } == {""}
        for part in parts:
            if part.entity is None and unnamed:
                # Every figure the caller may read is of tables naming no one: no entity
                # is left to name or ask for.
                part = replace(part, entity="")
            if part.metric is None and part.channel is not None:
                sole_metric = self._sole_metric(request, part)
                if sole_metric is not None:
                    part = replace(part, metric=sole_metric)
                    assume(f"metric: {sole_metric} (the only one with this line)")
            if not configured and part.qualifier is None:
                # Words the question has besides its slots may name what it left out; only
                # a name can name an entity ("How much revenue did Globex make?"), so with
                # nothing but ordinary words left the one entity holding the figure stands.
                if not names_left and part.entity is None and part.metric is not None:
                    sole = self._sole_entity(request, part)
                    if sole is not None:
                        part = replace(part, entity=sole)
                        if sole:
                            assume(f"entity: {sole} (the only one with this figure)")
                filled.append(part)
                continue
            if part.entity is None and facts.default_entity and configured and part.metric:
                part = replace(part, entity=facts.default_entity)
                assume(f"entity: {facts.default_entity}")
            elif (
                part.entity is None
                and part.metric is not None
                # a name the question gives whom it asks of ("Spotify's"), or words no
                # readable line holds that may be one ("Spotify Premium"): never another
                # company's figure assumed in its place
                and not unknown
                and not (part.qualifier and not configured)
            ):
                sole = self._sole_entity(request, part)
                if sole is not None:
                    part = replace(part, entity=sole)
                    if sole:  # an unnamed one is not said ("entity: ")
                        assume(f"entity: {sole} (the only one with this figure)")
            if part.period is None and self.ctx.default_period and configured and part.metric:
                if self.ctx.default_period == LATEST_PERIOD:
                    if part.entity is not None:
                        latest = self._latest_period(request, part)
                        part = replace(part, period=latest or ANY_PERIOD)
                        if latest is not None:
                            assume(f"period: {latest} (the latest with a figure)")
                else:
                    part = replace(part, period=self.ctx.default_period)
                    assume(f"period: {self.ctx.default_period}")
            filled.append(part)
        return filled, assumptions

    def _sole_metric(self, request: AnswerRequest, part: MetricQuery) -> str | None:
        """The one measure the caller's readable facts hold the part's line under ("How
        much was spent on Social Security in 2024?": only outlays have that line), else
        the one holding it for the period asked, else ``None``, and the question is asked
        which figure it means. A year the line has no figure for is then not found."""
        rows = self.ctx.readable_facts(request, entity=part.entity, channel=part.channel)
        metrics = {f.metric for f, _ in rows}
        if len(metrics) > 1 and part.period is not None:
            metrics = {f.metric for f, _ in rows if f.period == part.period}
        return metrics.pop() if len(metrics) == 1 else None

    def _sole_entity(self, request: AnswerRequest, part: MetricQuery) -> str | None:
        """The one entity whose figure for the part's metric the caller may read; else the
        one with a figure for the period asked (or the year to that quarter); else the one
        whose table names the line as the question does. Revenue is every company's line
        (营业收入, 売上高), but one company may be the only one reporting the year asked,
        and "売上高" is a Japanese table's own word."""
        rows = self.ctx.readable_facts(request, metric=part.metric, channel=part.channel)
        sole = sole_entity(rows)
        if sole is None and part.period is not None:
            period = self.ctx.vocab.canonical_period(part.period) or part.period
            periods = {period, year_to_quarter(period)}
            sole = sole_entity((f, d) for f, d in rows if f.period in periods)
            # Another company reporting part of the year asked makes the question theirs
            # too ("revenue in 2024" beside a half year of FY2024): ask, don't assume.
            if (
                sole is not None
                and len({f.entity for f, _ in rows if _within(f.period, period)}) > 1
            ):
                return None
        if sole is None:
            sole = sole_entity((f, d) for f, d in rows if f.metric == part.metric)
        return sole

    def _options(self, request: AnswerRequest, part: MetricQuery, slot: str) -> tuple[str, ...]:
        """Up to :data:`MAX_OPTIONS` values for a missing slot, taken only from facts the
        caller may read that agree with the slots the question did name."""
        slots = {"metric": part.metric, "entity": part.entity, "period": part.period}
        slots[slot] = None
        rows = self.ctx.readable_facts(request, channel=part.channel, **slots)
        facts = (request.vocab or self.ctx.vocab).settings
        if slot == "metric":
            values = [m for m in facts.metrics if any(f.metric == m for f, _ in rows)]
        elif slot == "entity":
            values = [e for e in facts.entities if any(f.entity == e for f, _ in rows)]
        else:
            periods = {f.period for f, _ in rows}
            dated = sorted(
                (p for p in periods if self.ctx.calendar.span(p) is not None),
                key=lambda p: self.ctx.calendar.span(p) or (date.min, date.min),
                reverse=True,
            )
            values = dated + sorted(p for p in periods if self.ctx.calendar.span(p) is None)
        return tuple(values[:MAX_OPTIONS])

    def _clarify(
        self,
        request: AnswerRequest,
        part: MetricQuery,
        missing: Sequence[str],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> AnswerResult:
        request.trace.reason = "clarify"
        options = self._options(request, part, missing[0])
        words = [MISSING_WORDS.get(m, m) for m in missing]
        text = CLARIFY.format(missing=" and ".join(words))
        if options:
            text += CLARIFY_OPTIONS.format(options=", ".join(o.replace("_", " ") for o in options))
        return AnswerResult(
            Status.CLARIFY,
            _preamble(resolved, []) + text,
            Route.STRUCTURED,
            missing=tuple(missing),
            options=options,
            resolved_periods=resolved,
        )

    def structured(self, request: AnswerRequest, intent: Intent) -> AnswerResult | None:
        """The figures ``intent`` asks for, or None when the documents should answer."""
        trace = request.trace
        resolved = tuple(ResolvedPeriod(m.text, m.period) for m in intent.resolved)
        if intent.ambiguous:
            trace.reason = "clarify"
            first = intent.ambiguous[0]
            return AnswerResult(
                Status.CLARIFY,
                CLARIFY_AMBIGUOUS.format(text=first.text, readings=" or ".join(first.alternatives)),
                Route.STRUCTURED,
                missing=("period",),
                options=first.alternatives[:MAX_OPTIONS],
                resolved_periods=resolved,
            )
        if intent.unrecognized:
            trace.reason = "unrecognized_param"
            trace.fabrication_guard_triggered = True
            text = render_unrecognized(
                ToolResult(
                    "unrecognized_param",
                    intent.parts[0] if intent.parts else MetricQuery(None, None, None, None),
                    (),
                    ", ".join(intent.unrecognized),
                )
            )
            return AnswerResult(
                Status.UNRECOGNIZED_PARAM, text, Route.STRUCTURED, resolved_periods=resolved
            )
        if len(intent.parts) > MAX_PARTS:
            # Bounded whatever the parser: each part is a look-up and a line of the answer.
            trace.reason = "too_many_parts"
            return refusal(Status.CLARIFY, TOO_MANY_PARTS.format(limit=MAX_PARTS), Route.MULTI)
        parts, assumptions = self._with_defaults(
            request,
            intent.parts,
            configured=not intent.unexplained,
            names_left=intent.names_left,
            unknown=intent.unknown_entity,
        )
        parts = [self._subject_dropped(request, part) for part in parts]
        parts, resolved = self._as_the_table_heads(request, parts, resolved)
        parts, spans = self._fiscal_spans(request, parts)
        parts = _one_look_up_each(parts)
        resolved = (*resolved, *spans)
        spans_held = [s for part in parts for s in self._spans_it_may_be(request, part)]
        if spans_held:
            return self._which_span(request, parts[0], list(dict.fromkeys(spans_held)), resolved)
        if intent.yearless and parts and parts[0].period is None:
            return self._which_year(request, parts[0], intent.yearless, resolved)
        missing = _missing_slots(parts)
        alien = intent.name_left and _alien_line(
            request.masked or request.question,
            intent,
            parts,
            [
                name
                for fact, _ in self.ctx.readable_facts(request, channel=ALL_CHANNELS)
                for name in (fact.metric, fact.entity, fact.channel or "")
            ],
        )
        if alien and "metric" not in missing:
            # A line of the entity's that no readable table carries: not found, never the
            # entity's total.
            trace.reason = "not_found"
            return AnswerResult(
                Status.NOT_FOUND,
                _preamble(resolved, assumptions)
                + render_not_found(replace(parts[0], qualifier=alien)),
                Route.STRUCTURED,
                resolved_periods=resolved,
            )
        unknown = intent.unknown_entity or next((p.qualifier for p in parts if p.qualifier), "")
        if (
            (missing or _unnamed(request.masked or request.question, intent, parts))
            and unknown
            and "metric" not in missing
        ):
            # An entity or line no readable fact holds: not found, never a list of others.
            if self._left_to_passages(request, parts, intent):
                return None
            trace.reason = "not_found"
            asked = parts[0]
            if not asked.entity and (intent.unknown_entity or _names_someone(unknown)):
                asked = replace(asked, entity=unknown, qualifier=None)
            elif not asked.entity:
                # "real GDP": a word narrowing the metric, whose figure nobody's table holds
                asked = replace(asked, entity="")
            return AnswerResult(
                Status.NOT_FOUND,
                _preamble(resolved, assumptions) + render_not_found(asked),
                Route.STRUCTURED,
                resolved_periods=resolved,
            )
        if missing:
            clarify = self._clarify(request, parts[0], missing, resolved)
            if clarify.options or not intent.unexplained:
                return clarify
            # Nothing to offer, and the question says more than its slots ("今期の事業貢献
            # 利益の見通しは"): the documents are the better judge than an empty question.
            return None
        if intent.compare and intent.change and len(intent.parts) == 1 and len(parts) == 1:
            parts = self._with_the_year_before(request, parts[0])
        answer = self._figures(
            request, parts, _preamble(resolved, assumptions), compare=intent.compare
        )
        if (
            answer.status is Status.NOT_FOUND
            and not answer.flags
            and self._left_to_passages(request, parts, intent)
        ):
            return None
        if (
            answer.status is Status.NOT_FOUND
            and not answer.flags
            and any(a.startswith("entity:") for a in assumptions)
            and all(_MONTHS_COUNTED.match(part.period or "") for part in parts)
            and not any(self._reported_for(request, part.period) for part in parts)
        ):
            # Whose figure it is was assumed, and no readable table reports a count of
            # months like the one asked for anyone ("total receipts in the first 11 months
            # of fiscal year 2008" beside annual and quarterly tables): the budget reviews
            # that state it in prose are the better judge, not a "not found" for a company
            # nobody named. A year, a half or a quarter stays not found: its passages
            # state other years' amounts (a forecast) as readily.
            return None
        if (
            answer.status is Status.NOT_FOUND
            and not answer.flags
            and len(parts) == 1
            and (at_end := self._balance_at_year_end(request, parts[0])) is not None
        ):
            # "long-term debt at the end of 2018": a balance, which the tables give at the
            # end of a month; the fiscal year's last month is the year's end, and said so
            ended = ResolvedPeriod(f"the end of {parts[0].period}", at_end.period or "")
            return replace(
                self._figures(request, [at_end], _preamble((*resolved, ended), assumptions)),
                assumptions=tuple(assumptions),
                resolved_periods=(*resolved, ended),
            )
        if (
            answer.status is Status.NOT_FOUND
            and not answer.flags
            and len(parts) == 1
            and (twelve := self._years_it_may_be(request, parts[0]))
        ):
            # a fiscal year no fact is labelled with, of a company whose year ends in a
            # January no calendar names: the twelve months it may be, for the asker to say
            return self._which_span(request, parts[0], twelve, resolved)
        if (
            answer.status is Status.NOT_FOUND
            and not answer.flags
            and len(parts) == 1
            and intent.resolved
            and all(_PART_WITHOUT_YEAR.fullmatch(m.text.strip()) for m in intent.resolved)
        ):
            # "How much was revenue in Q2?": read as this year's second quarter, which no
            # readable table reports. The question gave no year: ask which period, with
            # those the tables hold, rather than a "not found" for a year nobody named.
            return self._clarify(request, parts[0], ["period"], ())
        return replace(answer, assumptions=tuple(assumptions), resolved_periods=resolved)

    def _as_the_table_heads(
        self,
        request: AnswerRequest,
        parts: Sequence[MetricQuery],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> tuple[list[MetricQuery], tuple[ResolvedPeriod, ...]]:
        """Each relative period the question writes as a readable table heads a column of
        the figure asked ("上年度末" in "比亚迪上年度末归属于上市公司股东的所有者权益是多少?",
        the column of a third-quarter report beside "本报告期末"), read as that column's period
        (FY2022), not counted back from today (FY2025): the question quotes the table. Only
        where the column gives the figure one period."""
        out = list(parts)
        readings = list(resolved)
        for i, reading in enumerate(readings):
            periods = {
                fact.period
                for part in out
                if part.period == reading.period and part.metric
                for fact, _ in self.ctx.readable_facts(
                    request, metric=part.metric, entity=part.entity or None
                )
                if dict(parse_locator(fact.locator)).get("col") == reading.text
            }
            if len(periods) != 1:
                continue
            period = periods.pop()
            out = [replace(p, period=period) if p.period == reading.period else p for p in out]
            readings[i] = ResolvedPeriod(reading.text, period)
        return out, tuple(readings)

    def _fiscal_spans(
        self, request: AnswerRequest, parts: Sequence[MetricQuery]
    ) -> tuple[list[MetricQuery], list[ResolvedPeriod]]:
        """A half or quarter of a fiscal year that the entity's readable facts hold only as
        the span of months it is ("first half of fiscal 2024" of a company whose years end
        in June: the six months ended December 2023), asked as that span, and said so.
        The month a year ends in comes from the entity's readable documents (their tables'
        "Year Ended June 30"); with none, or two that disagree, nothing is assumed."""
        out: list[MetricQuery] = []
        spans: list[ResolvedPeriod] = []
        for part in parts:
            if (
                part.entity is None
                or part.metric is None
                or part.period is None
                or span_of_fiscal_part(part.period, 12) is None  # no half or quarter
            ):
                out.append(part)
                continue
            rows = self.ctx.readable_facts(request, entity=part.entity)
            names = self._line_named(request, part.metric)
            periods = {f.period for f, _ in rows if f.metric.casefold() in names}
            ends = self._named_year_ends(rows, part.entity)
            span = span_of_fiscal_part(part.period, ends.pop()) if len(ends) == 1 else None
            if span is None or part.period in periods or span not in periods:
                out.append(part)
                continue
            spans.append(ResolvedPeriod(f"{part.period.replace(' ', ' FY')}", span))
            out.append(replace(part, period=span))
        return out, spans

    def _spans_it_may_be(self, request: AnswerRequest, part: MetricQuery) -> list[str]:
        """The span of months a quarter or half ("Q2 2025") is of a calendar year, where the
        caller's readable facts of the part's metric, entity and line hold it, no fact is
        labelled that quarter, and the entity's documents do not say when its year ends: a
        10-Q's "Three Months Ended June 30, 2025" is Q2 2025 of a calendar year but Q4
        FY2025 of a year ending in June, so it is offered, never assumed."""
        calendar = _calendar_span(part.period)
        if part.entity is None or part.metric is None or calendar is None:
            return []
        rows, periods = self._periods_held(request, part)
        ends = self._named_year_ends(rows, part.entity)
        if part.period in periods or len(ends) == 1:
            return []  # labelled so, or read as its span by _fiscal_spans
        # The calendar reading first: "Q3 2025" could be the three months ended June 2025
        # of a year ending in September, which no asker means without saying so where the
        # calendar quarter is held too.
        if calendar in periods:
            return [calendar]
        readings = _fiscal_readings(calendar, periods)
        # Other spans only where the asker or the tables say the year is not the calendar
        # one: "the third quarter of fiscal 2024", or quarters that end in months no
        # calendar quarter ends in (a retailer's 13 weeks ended November 2, 2024).
        if _FISCAL_WORD.search(request.masked or request.question) or any(
            not _calendar_aligned(p) for p in readings
        ):
            return readings
        return []

    def _left_to_passages(
        self, request: AnswerRequest, parts: Sequence[MetricQuery], intent: Intent
    ) -> bool:
        """Whether a figure not found is better left to the passages: "the total net asset
        value of the Privium Done Hedge Fund at 31 December 2016" asks a balance at a date
        of someone no readable table names, and no table reports that month for anyone;
        the passages naming the fund are the better judge, not a "not found" for nobody
        in particular."""
        return (
            len(parts) == 1
            and not parts[0].entity
            and intent.names_left
            and MONTH_PERIOD.match(parts[0].period or "") is not None
            and not self._reported_for(request, parts[0].period)
        )

    def _subject_dropped(self, request: AnswerRequest, part: MetricQuery) -> MetricQuery:
        """``part`` without a qualifier whose every word the file name or title of every
        readable document holding the part's metric and entity says: the whole document is
        about it, so it narrows nothing ("the US CPI index" of ``us-cpi-monthly.csv``,
        whose column is ``Index``). A word no such document names still narrows."""
        if not part.qualifier or part.metric is None or part.entity is None:
            return part
        docs = {
            d.doc_id: d
            for _, d in self.ctx.readable_facts(request, metric=part.metric, entity=part.entity)
        }
        words = {w.casefold() for w in re.findall(r"\w+", part.qualifier)}
        if not docs or not words:
            return part
        for doc in docs.values():
            about = f"{file_name_words(doc.uri)} {doc.title}".casefold()
            if not words <= set(re.findall(r"\w+", about)):
                return part
        return replace(part, qualifier=None)

    def _balance_at_year_end(self, request: AnswerRequest, part: MetricQuery) -> MetricQuery | None:
        """A fiscal year asked of a metric the caller's readable tables give only at the
        end of months (a balance: "Dec. 31, 2018" heads its column) as the balance at the
        end of that year's last month, where the calendar says which month that is and no
        readable document of the entity says its years end in another; else ``None``."""
        if part.entity is None or part.metric is None or not _YEAR_PERIOD.match(part.period or ""):
            return None
        rows, periods = self._periods_held(request, part)
        if not periods or not all(MONTH_PERIOD.match(p) for p in periods):
            return None
        span = self.ctx.calendar.span(part.period or "")
        if span is None:
            return None
        last = span[1]
        if self._named_year_ends(rows, part.entity) - {last.month}:
            return None
        month = f"{MONTH_NAMES[last.month - 1]} {last.year}"
        return replace(part, period=month) if month in periods else None

    def _years_it_may_be(self, request: AnswerRequest, part: MetricQuery) -> list[str]:
        """The spans of twelve months the caller's readable facts of the part's metric,
        entity and line hold that the fiscal year asked for may be, when none is labelled
        with a fiscal year at all (:func:`_twelve_months_it_may_be`)."""
        if part.entity is None or part.metric is None or not _YEAR_PERIOD.match(part.period or ""):
            return []
        _, periods = self._periods_held(request, part)
        if any(_YEAR_PERIOD.match(p) for p in periods):
            return []  # its years are labelled so: this one is not held
        return _twelve_months_it_may_be(part.period or "", periods)

    def _periods_held(
        self, request: AnswerRequest, part: MetricQuery
    ) -> tuple[list[tuple[Fact, Document]], set[str]]:
        """The caller's readable facts of the part's entity, and the periods of those of
        its metric and line, the statement line under the entity's own names for it too
        ("revenues", "net sales")."""
        rows = self.ctx.readable_facts(request, entity=part.entity, channel=ALL_CHANNELS)
        line = part.channel or self.ctx.settings.facts.default_channel
        names = self._line_named(request, part.metric or "")
        periods = {f.period for f, _ in rows if f.metric.casefold() in names and f.channel == line}
        return list(rows), periods

    def _line_named(self, request: AnswerRequest, metric: str) -> set[str]:
        """``metric`` and the statement line's other names the readable tables give it
        ("earnings per common share—basic" for "basic earnings per share"), casefolded."""
        vocab = request.vocab or self.ctx.vocab
        return {m.casefold() for m in (metric, *_line_names(metric, vocab))}

    def _named_year_ends(self, rows: Iterable[tuple[Fact, Document]], entity: str) -> set[int]:
        """The months the entity's readable documents say its fiscal years end in, but a
        January that the configured calendar does not name (retailers name such a year by
        its start or by its end: :func:`~clearance.ingest.facts.january_year_named`)."""
        ends = {m for _, d in rows if (m := _year_end(d, entity)) is not None}
        if not january_year_named(self.ctx.settings.facts):
            ends.discard(1)  # a month said, but not which year a part of it is of
        return ends

    def _which_span(
        self,
        request: AnswerRequest,
        part: MetricQuery,
        spans: Sequence[str],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> AnswerResult:
        """Ask which span of months a quarter or half is, offering those the readable
        facts hold (:meth:`_spans_it_may_be`): never a guess at when a fiscal year ends."""
        why = (
            f"No figure is labelled {part.period}, and no readable document says when "
            f"{part.entity}'s fiscal year ends. "
        )
        return _which_period(request, spans, resolved, why)

    def _which_year(
        self,
        request: AnswerRequest,
        part: MetricQuery,
        yearless: Sequence[str],
        resolved: tuple[ResolvedPeriod, ...],
    ) -> AnswerResult:
        """A part of a year named without its year ("six months ended December 31"): ask
        which, offering the periods of that shape the caller's readable facts hold (latest
        first), or the usual clarification when none does. Never a guess at the year."""
        rows = self.ctx.readable_facts(
            request, metric=part.metric, entity=part.entity, channel=part.channel
        )
        periods = sorted(
            {f.period for f, _ in rows if any(f.period.startswith(y + " ") for y in yearless)},
            key=lambda p: (_period_order(p), p),
            reverse=True,
        )
        if not periods:
            return self._clarify(request, part, ["period"], resolved)
        return _which_period(request, periods, resolved)

    def _reported_for(self, request: AnswerRequest, period: str | None) -> bool:
        """Whether a readable fact of anyone's is for ``period`` (or the year to that part)."""
        if period is None:
            return True
        canonical = self.ctx.vocab.canonical_period(period) or period
        wanted = {canonical, year_to_quarter(canonical)}
        return any(
            f.period in wanted for f, _ in self.ctx.readable_facts(request, channel=ALL_CHANNELS)
        )

    def _with_the_year_before(self, request: AnswerRequest, part: MetricQuery) -> list[MetricQuery]:
        """A change asked over one period ("How much did Intelligent Cloud revenue grow in
        fiscal 2024?"): the same span a year before, then the period asked, so the answer
        sets the two side by side, as a report's year-over-year column does. The part alone
        when no readable figure is the year before's."""
        before = year_before(part.period or "")
        if not before or before == part.period:
            return [part]
        earlier = replace(part, period=before)
        if self._tool(request, earlier).status != "found":
            return [part]
        return [earlier, part]

    def _figures(
        self,
        request: AnswerRequest,
        parts: Sequence[MetricQuery],
        preamble: str,
        *,
        compare: bool = True,
    ) -> AnswerResult:
        """Look every part up and render the answer from fact values alone."""
        trace = request.trace
        trace.start("tool")
        results = [
            ToolResult("not_found", part)
            if part.period == ANY_PERIOD
            else self._tool(request, part)
            for part in parts
        ]
        trace.stop("tool")
        trace.retrieved = sorted({d.doc_id for r in results for _, d in r.facts})
        trace.denied_retrieved = self.ctx.count_denied(request, trace.retrieved)
        if not any(r.status == "found" for r in results):
            trace.fabrication_guard_triggered = True
        if len(results) > 1:
            text, citations = render_multi(results, compare=compare)
            status = (
                Status.ANSWERED if any(r.status == "found" for r in results) else Status.NOT_FOUND
            )
            if all(r.status == "unrecognized_param" for r in results):
                status = Status.UNRECOGNIZED_PARAM
            return AnswerResult(
                status,
                preamble + text,
                Route.MULTI,
                self._retrust(citations, results),
            )
        result = results[0]
        if result.status == "found":
            text, citations = render_found(result)
            return AnswerResult(
                Status.ANSWERED,
                preamble + text,
                Route.STRUCTURED,
                self._retrust(citations, results),
            )
        if result.status == "unrecognized_param":
            trace.reason = "unrecognized_param"
            return AnswerResult(
                Status.UNRECOGNIZED_PARAM,
                preamble + render_unrecognized(result),
                Route.STRUCTURED,
            )
        trace.reason = "not_found"
        stated = self._stated_in_prose(request, result.query)
        if stated is not None:
            return replace(stated, answer=preamble + stated.answer)
        parts_of_year = self._parts_of_year(request, result.query)
        if parts_of_year:
            # The whole year is not reported, but parts of it are: the year is not found
            # (the status says so, and the answer's first sentence), and each part is
            # given under its own label and source heading, never as the year's figure.
            trace.reason = "parts_of_period"
            text, citations = render_parts_of_year(result.query, parts_of_year)
            return AnswerResult(
                Status.NOT_FOUND,
                preamble + text,
                Route.STRUCTURED,
                self._retrust(citations, [result]),
                flags=(PARTS_OF_PERIOD,),
            )
        return AnswerResult(
            Status.NOT_FOUND,
            preamble + render_not_found(result.query),
            Route.STRUCTURED,
        )

    def _stated_in_prose(self, request: AnswerRequest, query: MetricQuery) -> AnswerResult | None:
        """A whole year's figure no table reports, stated in a sentence of a readable
        document: "2024年3月期の営業利益は?" where the results deck holds only the second
        quarter, and the year's overview says "営業利益は…260億円となった". The narrative
        path's answer is given when one of its sentences names the metric, states an amount
        for no part of a year and no forecast, and names the year (itself, or by its
        section); the first such sentence is the answer, alone. Otherwise nothing is taken
        from it and the table's "not found" stands. The sentence is quoted as written (no
        model is asked), so its numbers are its source's own. A rate asked for (前期比何%,
        "by what percent") is answered so only by a sentence stating a percentage, quoted
        with its asides: "1兆1,599億円(前期比2.6%増)"."""
        rate = query.qualifier == AS_RATE
        if self.quote is None or query.metric is None or (query.qualifier and not rate):
            return None
        year = _WHOLE_YEAR.fullmatch(query.period or "")
        if year is None:
            return None
        vocab = request.vocab or self.ctx.vocab
        trace = request.trace
        kept = (list(trace.retrieved), trace.denied_retrieved, trace.reason)
        # Searched also by the table's own name of the line: "operating profit" finds the
        # Japanese overview that says 営業利益.
        # Then by that name alone: the question's other words ("revenue for the fiscal year
        # ended March 2024") may rank the page's forecast paragraph above its summary.
        # By each name of the line the readable tables use, too: "operating income" is a
        # Japanese table's 営業利益, and its overview says so.
        names = [query.metric, *_line_names(query.metric, vocab)]
        tries = [f"{request.masked}\n{name}" for name in names] + names
        for masked in dict.fromkeys(tries):
            prose = self.quote(replace(request, masked=masked))
            if prose is None or prose.status is not Status.ANSWERED:
                continue
            for sentence, n in _CITED.findall(prose.answer):
                if not 0 < int(n) <= len(prose.citations):
                    continue
                cited = prose.citations[int(n) - 1]
                sentence = _plain_sentence(sentence, cited)
                if (
                    states_whole_year_amount(sentence)
                    and _of_the_year(year.group(1), sentence, cited)
                    and any(
                        # the line asked, by its name or another of the same line's (a
                        # Japanese overview's 営業利益 is the operating income asked)
                        m.canonical in names
                        for m in vocab.find("metric", sentence)
                    )
                    and _names_entity(vocab, query.entity, sentence, cited)
                    and (not rate or _PERCENTAGE.search(sentence) is not None)
                ):
                    # The best sentence stating it, alone: the others may give another
                    # period's amount (a half year's, a forecast) or repeat it.
                    trace.reason = None
                    return AnswerResult(
                        Status.ANSWERED,
                        f"{sentence if rate else without_asides(sentence)} [S1]",
                        Route.NARRATIVE,
                        (cited,),
                        flags=(STATED_IN_PROSE,),
                    )
        trace.retrieved, trace.denied_retrieved, trace.reason = kept
        return None

    def _parts_of_year(
        self, request: AnswerRequest, query: MetricQuery
    ) -> list[tuple[Fact, Document]]:
        """Readable facts of the query's metric, entity and channel for a part of the whole
        year it asks about (``Q1–Q3 FY2023``, ``9M FY2023``, ``H1 2023``), latest part first."""
        if query.period is None or query.metric is None or query.entity is None:
            return []
        if _WHOLE_YEAR.fullmatch(query.period) is None or query.qualifier is not None:
            return []
        rows = self.ctx.readable_facts(
            request, metric=query.metric, entity=query.entity, channel=query.channel
        )
        parts = [
            (f, d) for f, d in rows if f.period != query.period and _within(f.period, query.period)
        ]
        parts.sort(key=lambda row: (row[0].period, row[0].doc_id), reverse=True)
        return parts[:MAX_OPTIONS]

    def _retrust(
        self, citations: Sequence[Citation], results: Sequence[ToolResult]
    ) -> tuple[Citation, ...]:
        """Citation trust under the configured ``[trust.origins]``, from each cited
        document's origin and chain (an unknown document is untrusted)."""
        documents = {d.doc_id: d for r in results for _, d in r.facts}
        mapping = self.ctx.settings.trust.origins
        out = []
        for c in citations:
            document = documents.get(c.doc_id) or self.ctx.runtime.store.get_document(c.doc_id)
            trust = (
                resolve_trust(document.origin, document.origin_chain, mapping).label
                if document is not None
                else "untrusted"
            )
            out.append(replace(c, trust=trust))
        return tuple(out)


#: A whole fiscal or calendar year: ``FY2023``, ``CY2023``.
_WHOLE_YEAR = re.compile(r"(?:FY|CY)(\d{4})")


def _within(period: str, year: str) -> bool:
    """Whether ``period`` is ``year`` (``FY2023``, ``CY2023``) or a part of it: ``Q1–Q3
    FY2023``, ``9M FY2023``, ``H1 2023``, ``Q3 2023``."""
    whole = _WHOLE_YEAR.fullmatch(year)
    if whole is None:
        return period == year
    return (
        period == year
        or period.endswith(" " + year)
        or re.fullmatch(rf"[HQ][1-4] {whole.group(1)}", period) is not None
    )


def _year_end(document: Document, entity: str) -> int | None:
    """The month the entity's fiscal years end in, as the document's tables say it."""
    ends = document.extra.get(YEAR_ENDS_KEY)
    month = ends.get(entity) if isinstance(ends, dict) else None
    return month if isinstance(month, int) and not isinstance(month, bool) else None


def _preamble(resolved: Sequence[ResolvedPeriod], assumptions: Sequence[str]) -> str:
    """What the answer took the question to mean, before the answer itself:
    ``(last year = FY2025) Assuming ACME Group and FY2025: ``."""
    out = ""
    if resolved:
        out += "(" + "; ".join(f"{r.text} = {r.period}" for r in resolved) + ") "
    if assumptions:
        values = [a.split(": ", 1)[1].split(" (", 1)[0] for a in assumptions]
        out += f"Assuming {' and '.join(values)}: "
    return out


def _missing_slots(parts: Sequence[MetricQuery]) -> list[str]:
    missing: list[str] = []
    for part in parts:
        if part.metric is None and "metric" not in missing:
            missing.append("metric")
        if part.entity is None and "entity" not in missing:
            missing.append("entity")
        if part.period is None and "period" not in missing:
            missing.append("period")
    return missing


def _period_order(period: str) -> tuple[int, ...]:
    """Years, then other numbers, of a canonical period, for ordering (latest last)."""
    numbers = [int(n) for n in re.findall(r"\d+", period)]
    return tuple(sorted((n for n in numbers if n >= 1000), reverse=True)) + tuple(
        n for n in numbers if n < 1000
    )
