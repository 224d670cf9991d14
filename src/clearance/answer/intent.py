"""Route stage (docs/design.md §1 stage 6): is this a metric question, several, or narrative?

Deterministic and rule-based — no model is asked. The ``[facts]`` vocabulary decides what
a metric, an entity, a channel and a period are (:class:`~clearance.ingest.facts.Vocabulary`;
English, Japanese and Chinese alike, after NFKC + casefold); relative periods ("last year",
去年, 前期) are resolved against the request date and the fiscal calendar
(:mod:`clearance.answer.periods`) and kept in :attr:`Intent.resolved` so the answer can say
what they were taken to mean.

A metric qualified by words the vocabulary does not know — a product, segment, region or
line ("Services net sales", "net sales in the Greater China segment") — keeps them in
:attr:`MetricQuery.qualifier`, so the figure looked up is that line's, never the metric's
total. In Japanese and Chinese the same holds for CJK words attached to the metric (before
it, or joined by の/的) that are no entity, period, metric, figure or question word:
サービス in 日本のサービス売上高; with no entity named they name it (香港 in 香港去年营收),
so the answer is not found, never the parent total or a list of entities to choose from.
A possessive name the vocabulary does not know ("Microsoft's revenue") is kept in
:attr:`Intent.unknown_entity`: it is an entity no readable fact holds, never a reason to
offer others. :attr:`Intent.compare` says the question asks to compare (``vs``,
"difference", 比較, 对比 …); only then are two figures set against each other.

A question goes to the figures path only when it asks for a figure:

* it names a metric, and does not only ask *when / why / how* (``When will employees be
  informed …`` is narrative even with ``employees`` as a metric alias);
* what is left once its metric, entity, period, channel and unit, its figure words
  ("how much", いくら, 多少) and its small words are taken out is at most a word or two —
  or it names all three of metric, entity and period (the entity needs no naming where no
  table the parser reads names one: a budget's actuals are nobody's). Otherwise the question is about
  something else that merely mentions a metric ("How many employees entered credentials in
  the phishing test?"): it is **uncertain**, and the orchestrator tries the narrative path;
* a question with a figure word ("how much", いくら, 多少) and an entity or period but no
  metric ("Hong Kong last year, how much?") is a metric question whose metric is missing;
  so is one naming a table's line and a period with at most a word besides ("What did
  customs duties raise in 2025?");
* a question that asks for a figure *and* for an explanation ("How much …, and why …?",
  "…はいくらで、なぜ…", "…多少，为什么…") is **composite**: the clause before the
  explanation is parsed as a metric question and :attr:`Intent.narrative` holds the rest.
  What the explanation searches for (:attr:`Intent.narrative_query`) carries the figure's
  entity and metric as the question wrote them when the explanation names neither, so
  "why did it grow?" after "What was the deficit in FY2024" is about the deficit.

For a metric question every metric, entity, period and channel it names is collected in
order of appearance; when it names more than one value of a slot ("Japan and US",
"日本と米国", "FY2023 vs FY2024") it is **multi**: its parts are the cartesian product of
the slots, in question order (metric, entity, period, channel), cut at ``MAX_PARTS + 1``
parts — one more than the orchestrator answers, enough for it to ask for fewer figures
without building the rest. A slot the question does not name is ``None`` (the orchestrator
then applies the configured defaults or asks to clarify). Period-looking tokens no period
form recognises (``FY20245``, ``Q5 2024``) are listed in ``unrecognized``; a relative period
with two readings (前年 in a question that is neither clearly Japanese nor Chinese) is listed
in ``ambiguous`` and not guessed. ``slots_present`` says whether any metric, entity or period
(recognised or not) appears, which keeps the FAQ short-circuit conservative.

:class:`IntentParser` is the seam: anything with ``parse(question, today=…) -> Intent`` can
replace the default :class:`RuleIntentParser`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal, Protocol, runtime_checkable

from clearance import glossary
from clearance.answer.periods import FiscalCalendar, RelativeMatch, find_relative
from clearance.config import FactSettings
from clearance.ingest.facts import Match, Vocabulary, normalize, periods_without_year

__all__ = [
    "MAX_PARTS",
    "SHARE_OF",
    "Intent",
    "IntentParser",
    "MetricQuery",
    "RuleIntentParser",
    "parse_intent",
    "year_before",
]

IntentKind = Literal["metric", "multi", "composite", "narrative"]

#: The most figures one question may ask for; a question asking for more is answered with
#: a request to ask for fewer (one SQL look-up and one answer line each).
MAX_PARTS = 50


@dataclass(frozen=True, slots=True)
class MetricQuery:
    """One look-up in the fact table, by canonical names; ``None`` where unspecified
    (``channel=None`` means the vocabulary's default channel)."""

    metric: str | None
    entity: str | None
    period: str | None
    channel: str | None = None
    # Words that narrow the metric to a line the vocabulary does not know ("Services" in
    # "Services net sales"): such a figure is never the metric's total.
    qualifier: str | None = None


@dataclass(frozen=True, slots=True)
class Intent:
    """What a question asks (see the module docstring). ``resolved`` holds the relative
    periods used, each with the absolute period it was read as; ``ambiguous`` those with
    more than one reading; ``uncertain`` marks a metric question that may be about
    something else (try the narrative path first); ``narrative`` is the explanation a
    composite question also asks for; ``unexplained`` says the question has words besides
    its slots and figure words — perhaps an entity the vocabulary does not know (香港), so
    no default entity or period may stand in for what it did not name."""

    kind: IntentKind
    parts: tuple[MetricQuery, ...]
    slots_present: bool
    unrecognized: tuple[str, ...] = ()
    resolved: tuple[RelativeMatch, ...] = ()
    ambiguous: tuple[RelativeMatch, ...] = ()
    uncertain: bool = False
    narrative: str = ""
    unexplained: bool = False
    # What the explanation part searches for: ``narrative``, with the entities and the
    # metrics the figure clause names, as written there, when the explanation names none
    # ("… deficit in FY2024, and why did it grow?", "…はいくらで、なぜ伸びたのですか").
    narrative_query: str = ""
    compare: bool = False
    unknown_entity: str = ""
    # Parts of a year the question names without the year ("six months ended December
    # 31" → "6M ended Dec"): the period is asked for, and which year is left out.
    yearless: tuple[str, ...] = ()
    # Words besides the slots that may be a name: capitalised words or CJK characters
    # (an entity the vocabulary does not know). Ordinary words ("did … make") name none.
    names_left: bool = True
    # The run of capitalised words no slot took, past the question's first word, where an
    # entity was named too: "LinkedIn" in "How much revenue did LinkedIn generate for
    # Microsoft?" (a line of the entity's that no table may carry).
    name_left: str = ""
    # A change is asked ("How much did … grow in fiscal 2024?") against nothing the
    # question names ("… compared with Total Revenue"): the year before is what it is of.
    change: bool = False


@runtime_checkable
class IntentParser(Protocol):
    def parse(self, question: str, *, today: date | None = None) -> Intent: ...


def _options(values: list[str]) -> list[str | None]:
    return list(values) if values else [None]


# --------------------------------------------------------------------------- cue words

_L = r"(?<![0-9A-Za-z])"
_R = r"(?![0-9A-Za-z])"
# Asking for a quantity. Strong enough to make "Hong Kong last year, how much?" a metric
# question whose metric is missing.
_QUANTITY = re.compile(
    rf"{_L}(?:how\s+(?:much|many|big|large|high)|what\s+(?:was|were|is|are)\s+the\s+(?:figures?|numbers?|amount|total)|amount|figures?){_R}"
    r"|いくら|どのくらい|どれくらい|どれだけ|何人|数値|金額"
    r"|多少|幾多|几多|数字|數字|数值|數值|金额|金額",
    re.IGNORECASE,
)
# Asking for an explanation, a date, a place or a procedure rather than a figure.
_NARRATIVE = re.compile(
    rf"{_L}(?:when|why|where|who|whom|how\s+(?!much|many|big|large|high)\w+|explain|reasons?|because){_R}"
    r"|いつ|なぜ|何故|どうして|理由|要因|背景|どのように|どうやって|誰"
    r"|什么时候|什麼時候|何时|何時|为什么|為什麼|为何|為何|原因|怎么|怎麼|如何|谁|誰",
    re.IGNORECASE,
)
# Where a composite question's explanation starts: a clause boundary.
_CLAUSE = re.compile(r"[,，、;；。？?!！]|\s(?:and|but)\s|并且|而且|以及|并|並|また")
# Words that carry nothing once the slots are taken out.
_SMALL_WORDS_TEXT = """a an the what whats what's was is are were be been being our my your their we us you i
    me of for in on at to by from with do does did have has had how much many tell show give
    please total figure figures number numbers value amount and or vs versus compare compared
    between it its this that there about so far reported as per s year years fiscal period
    whole full overall latest current segment segments division region business unit line
    category can could would pull get find look up just only alone itself single not
    quarter make made makes generate generated generates earn earned than during bring brings
    brought"""
_SMALL_WORDS = frozenset(_SMALL_WORDS_TEXT.split())
_LATIN_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u30a0-\u30ff]")
# CJK characters that carry nothing in a metric question (particles, question words,
# "we", "total" …); kana particles are dropped wholesale.
_SMALL_CJK = frozenset(
    "的是了吗嗎呢吧啊在和与與及有请請问問告诉訴给給我们們你您这這那个個总總共计計额額数數少几幾何教下"
)
# Months and days, written in capitals and naming no one.
_CALENDAR_WORDS_TEXT = """january february march april may june july august september october
    november december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday
    wednesday thursday friday saturday sunday"""
_CALENDAR_WORDS = frozenset(_CALENDAR_WORDS_TEXT.split())
# Verbs saying how much a business or a line sold: its revenue, where no metric is named.
_BROUGHT_IN = re.compile(
    r"\b(?:bring|brings|brought|bringing|take|takes|took|pull|pulls|pulled|rake|rakes|raked)"
    r"\s+in\b(?!\s+(?:fiscal|fy|q[1-4]|h[12]|the\s+(?:first|second|third|fourth|last|quarter"
    r"|year|month|half)|\d))",  # "take in fiscal 2024 to close its books": a period's "in"
    re.IGNORECASE,
)
# What a question asking how much says was brought in: "How much grant money from
# universities did …".
_HOW_MUCH_OF = re.compile(
    r"\bhow\s+much\s+(?P<what>.+?)\s+(?:did|does|do|will|has|have|had|is|was)\b", re.IGNORECASE
)
# Words for what is brought in that name no line of it.
_TAKINGS = frozenset(
    [
        "money",
        "cash",
        "in",
        "total",
        "overall",
        "altogether",
        "the",
        "of",
        "sales",
        "revenue",
        "revenues",
        "income",
        "takings",
    ]
)
# What sets two figures side by side between their names: "revenue and headcount".
_SIDE_BY_SIDE = re.compile(r"(?i)\b(?:and|or|vs\.?|versus|against|than|plus)\b|[,&/;]")
# A question asking how much, whose "brought in" is the amount sold.
_HOW_MUCH_OR_WHAT_DID = re.compile(r"\bhow\s+much\b|^\W*what\s+did\b", re.IGNORECASE)
# Words before a period that rule it out ("not year to date", "rather than the full year").
_NOT_THIS = re.compile(
    r"\b(?:not|rather\s+than|instead\s+of|excluding|other\s+than|as\s+opposed\s+to)"
    r"\s+(?:the\s+|a\s+)?$",
    re.IGNORECASE,
)
# Asking to set figures against each other.
_COMPARE = re.compile(
    rf"{_L}(?:vs\.?|versus|compare[ds]?|comparing|comparison|difference|differ|change[ds]?|"
    rf"growth|grow|grew|increased?|decreased?|declined?|rose|fell|higher|lower|more|less){_R}"
    r"|比較|比べ|対比|増減|前年比|伸び|同比|环比|環比|对比|對比|相比|比较|增长|增長|变化|變化|差异|差異",
    re.IGNORECASE,
)
# The verbs of a change ("grow", "fell", "changed").
_CHANGE_VERBS = (
    r"grow|grew|grown|increase[ds]?|decrease[ds]?|rise|rose|risen|fall|fell|fallen"
    r"|decline[ds]?|drop(?:ped)?|change[ds]?"
)
# A change asked for, and what it may be asked against instead of the year before.
_CHANGE = re.compile(
    rf"(?i:\b(?:{_CHANGE_VERBS}|growth)\b)|増加|減少|伸び|増え|減っ|增长|增加|减少|下降"
)
_COMPARED_WITH = re.compile(r"(?i:\b(?:compared?|than|vs\.?|versus|against|relative)\b)|比べ|相比")
# "How did revenue change between FY2023 and FY2024?" asks for figures side by side, as
# "How much did it change" does: no explanation.
_HOW_IT_CHANGED = re.compile(
    rf"{_L}how\s+(?:did|has|have|does|do)\s+(?:[\w&.'’-]+\s+){{1,6}}?(?:{_CHANGE_VERBS})"
    # the change ends the clause: "how did Microsoft increase its revenue" asks how
    r"(?=\s+(?:between|from|in|over|since|during|year)\b|\s*[?？.,]|\s*$)",
    re.IGNORECASE,
)
# "How did net income in Q2 2022 compare with Q2 2021?" asks for them side by side too.
_HOW_IT_COMPARED = re.compile(
    rf"{_L}how\s+(?:did|does|do)\s+(?:[\w&.'’-]+\s+){{1,16}}?compare[ds]?"
    r"(?=\s+(?:with|to|against)\b)",
    re.IGNORECASE,
)
# Words that say when, not what: "from the prior year", "from last quarter".
_TIME_WORDS_TEXT = """first second third fourth last prior previous preceding same next this year
    years quarter quarters month months half week weeks period periods fiscal calendar"""
_TIME_WORDS = frozenset(_TIME_WORDS_TEXT.split())
# Words before a metric that do not narrow it to a line.
_NOT_QUALIFIERS_TEXT = """annual yearly quarterly reported company firm group total overall
    full-year entire whole combined consolidated actual actuals figure much many more less
    higher lower bigger smaller larger inc inc. incorporated corp corp. corporation ltd ltd.
    limited llc plc co."""
_NOT_QUALIFIERS = frozenset(_NOT_QUALIFIERS_TEXT.split())
# Of those, the words that mean the whole alone ("group revenue") and a part after a name
# ("Client Computing Group revenue", "the Consumer Products Company's sales").
_PART_NOUNS = frozenset({"group", "company"})
# Words that name the government whose budget a figure is, as "company" names the firm:
# "total federal revenues" asks for the revenue total (see RuleIntentParser).
_ISSUER_WORDS = frozenset({"federal", "government", "governmental"})
_BUDGET_BALANCES = frozenset({"deficit", "surplus", "balance"})
_ISSUER = re.compile(
    r"(?i:\b(?:federal|government|governmental)\b)|米国連邦政府|美国联邦政府|連邦政府|联邦政府|政府"
)
_WORDS_BEFORE = re.compile(r"((?:[0-9A-Za-z\u00c0-\u024f][\w&.-]*\s+){1,3})$")
_LINE_AFTER = re.compile(
    r"^\s+(?:in|for|of|from)\s+(?:the\s+|its\s+|our\s+)?"
    r"(?P<line>(?:[0-9A-Za-z\u00c0-\u024f][\w&.-]*\s+){1,3}?)"
    r"(?:segment|division|region|business|unit|line|category|product|market)s?\b",
    re.IGNORECASE,
)
# What a metric is counted per ("GDP per capita", "income per share", "sales per employee")
# makes it another metric: the metric's total never answers it. Per year, month or quarter
# only says how often, and per cent is a rate.
_PER_AFTER = re.compile(
    r"^[\s-]*(?P<line>per[\s-]+(?!(?:year|annum|month|quarter|cent)\b)[A-Za-z]+)\b",
    re.IGNORECASE,
)
# What a metric is "of" or "from", in lower case ("the price of silver", "revenue from
# advertising"): the thing the figure is about, which narrows it as "silver price" does; a
# name the vocabulary knows is a slot and already blanked, and a capitalised word is left
# for the entity's checks. A change "from the prior year" narrows nothing (_TIME_WORDS).
_OF_AFTER = re.compile(
    r"^\s+(?P<word>of|from)\s+(?:the\s+)?(?P<line>[a-z][a-z-]+(?:\s+[a-z][a-z-]+)?)"
    r"(?=\s*(?:[?.,;!]|$)|\s+(?:in|for|during|at|on|over|from|between|and|by)\b)"
)
# What a figure is counted per, wherever the question says it ("How much did Canada spend on
# medicines per head?"): a total never answers it, whichever word named the metric.
_PER_ANYWHERE = re.compile(
    r"(?<![\w-])(?<!\bas\s)per[\s-]+"
    r"(?!(?:year|annum|month|quarter|week|day|cent|the|a|an|its|our|their|your|my)\b)[a-z]+\b",
    re.IGNORECASE,
)
# What makes a figure another kind of figure, wherever the question says it ("By how much
# did CBO's projection of the 2025 deficit miss the actual deficit?"): a projection, a
# forecast or the error of one is not the figure as it turned out.
_OTHER_KIND_ANYWHERE = re.compile(
    r"(?<![\w-])(?:projections?|projected|forecasts?|forecasted|estimates?|estimated"
    r"|misse[sd]|miss|errors?|variances?|deviations?)(?![\w-])",
    re.IGNORECASE,
)
# A currency named by its country ("in US dollars", "U.S.$"): it names no entity.
_CURRENCY_OF_COUNTRY = re.compile(
    r"(?<![\w.])(?:US|U\.S\.|USA)\s*(?:dollars?\b|\$)|(?<![\w.])US\$", re.IGNORECASE
)
_POSSESSIVE = re.compile(
    r"(?<![0-9A-Za-z])((?:[A-Z][\w&.-]*\s+){0,2}[A-Z][\w&.-]*)(?:'s|’s|')(?![A-Za-z])"
)
_BARE_YEAR = re.compile(r"(?<![0-9A-Za-z'])(?:19|20)\d{2}(?![0-9A-Za-z])")
# The period a question names, asked against the same span a year before: "compared with
# the prior year", "the same period last year", "a year earlier", "year over year".
_YEAR_AGO = re.compile(
    r"(?i:\b(?:the\s+)?same\s+(?:period|quarter|months|half|time)\s+(?:(?:of|in)\s+)?"
    r"(?:last|the\s+(?:prior|previous|preceding)|a|the)\s+year(?:\s+(?:before|earlier|ago))?\b"
    r"|\b(?:the\s+)?(?:prior|previous|preceding)[\s-]+year(?:'s|’s)?"
    r"(?:\s+(?:period|quarter|months|half|figures?))?\b"
    r"|\b(?:the\s+)?year\s+before\b(?!\s+last)|\ba\s+year\s+(?:earlier|before|ago)\b"
    r"|\byear[\s-]+(?:over|on)[\s-]+year\b|\by-?o-?y\b)"
)
# ... or against the same span of another year: "the same quarter of 2024".
_SAME_SPAN_OF = re.compile(
    r"(?i:\b(?:the\s+)?same\s+(?:period|quarter|months|half|time)\s+(?:of|in)\s+"
    r"(?:fiscal\s+(?:year\s+)?|FY\s*)?(?P<year>(?:19|20)\d{2})\b)"
)
_YEAR_IN_PERIOD = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")


def year_before(period: str) -> str:
    """``period`` a year earlier (``3M ended Jun 2025`` → ``3M ended Jun 2024``, ``FY2025``
    → ``FY2024``); unchanged when it names no year."""
    return _YEAR_IN_PERIOD.sub(lambda m: str(int(m.group(0)) - 1), period, 1)


# The most content words a question may have besides its slots and still be read as
# asking for that figure.
_MAX_RESIDUAL_WORDS = 1
_MAX_RESIDUAL_CJK = 2


#: A share of something asked for ("as a percentage of GDP", "as a share of revenue",
#: "% of sales"): a percentage is asked, and its base is no metric of the question.
SHARE_OF = re.compile(
    r"(?i:\b(?:as\s+an?\s+)?(?:percentage|percent|share|proportion|fraction)\s+of|%\s+of"
    # "the deficit in 2009 relative to GDP", "… compared to the size of the economy"
    r"|\b(?:relative|in\s+relation)\s+to)"
    r"\s+(?:the\s+|its\s+|total\s+|size\s+of\s+the\s+)*[\w&.-]+"
)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            chars[i] = " "
    return "".join(chars)


def _residual(text: str) -> tuple[int, int, int]:
    """What text whose slots are blanked still says: ``(common words, capitalised words,
    CJK characters)`` that carry meaning. A capitalised word may be a
    name the vocabulary does not know ("ACME HK", as is a number); a lower-case word is what
    the question is about besides the figure ("entered credentials")."""
    rest = _QUANTITY.sub(" ", text)
    common = names = 0
    for m in _LATIN_WORD.finditer(rest):
        word = m.group(0)
        folded = word.casefold()
        if folded in _SMALL_WORDS or folded.removesuffix("'s") in _SMALL_WORDS:
            continue
        if word[0].isupper() or word[0].isdigit():
            names += 1
        else:
            common += 1
    cjk = sum(1 for c in _CJK.findall(rest) if c not in _SMALL_CJK)
    return common, names, cjk


def _names_left(text: str) -> list[str]:
    """The run of capitalised words (past the first word of each sentence) that no slot
    took: ``Globex`` in "How much revenue did Globex make?"; empty when there is none."""
    rest = _QUANTITY.sub(lambda m: " " * len(m.group(0)), text)
    words = list(_LATIN_WORD.finditer(rest))
    run: list[str] = []
    for i, m in enumerate(words):
        word = m.group(0)
        folded = word.casefold()
        # a sentence's first word is capitalised whatever it is ("… FY24? Just that quarter")
        opens = i == 0 or bool(re.search(r"[.?!]\s*$", rest[words[i - 1].end() : m.start()]))
        named = (
            word[0].isupper()
            and not opens
            and folded not in _SMALL_WORDS
            and folded not in _CALENDAR_WORDS  # "closed on June 30"
        )
        if named:
            run.append(word)
        elif run:
            break
    return [" ".join(run)] if run else []


def _measures_named(found: Sequence[Match], text: str) -> list[Match]:
    """The metrics ``found`` in ``text`` that the question names as measures of their own.
    Not "per capita" right after another metric ("GDP per capita" beside a table with a
    "Per Capita" column of emissions): what a metric is counted per narrows it. Not a small
    word such as "total" where another metric is named ("Japan's total GDP" beside a table
    whose column "Total" sums emissions): it says how much of that one."""
    kept = [
        m
        for m in found
        if not (
            re.match(r"per[\s-]", text[m.start : m.end], re.IGNORECASE)
            and any(o.end <= m.start and not text[o.end : m.start].strip(" -") for o in found)
        )
    ]
    if any(m.canonical.casefold() not in _SMALL_WORDS for m in kept):
        kept = [m for m in kept if m.canonical.casefold() not in _SMALL_WORDS]
    return kept


def _narrows(word: str) -> bool:
    """Whether ``word`` before a metric may name a line of it: no small word, no word that
    means the whole ("total", "group"), no possessive (whose figure it is)."""
    folded = word.casefold()
    return not (folded in _SMALL_WORDS or folded in _NOT_QUALIFIERS or word.endswith(("'s", "’s")))


def _qualifier(blanked: str, start: int, end: int) -> str | None:
    """The words that narrow the metric at ``blanked[start:end]`` to a line: the words
    right before it that are no slot and no small word ("Services" net sales), a line
    after it ("in the Greater China segment") or what it is counted per ("per capita")."""
    before = _WORDS_BEFORE.search(blanked[:start])
    words: list[str] = []
    if before is not None and blanked[before.end() - 1 : start].strip() == "":
        ahead = before.group(1).split()
        for i in range(len(ahead) - 1, -1, -1):
            word, folded = ahead[i], ahead[i].casefold()
            if folded in _PART_NOUNS and i > 0 and _narrows(ahead[i - 1]):
                words.insert(0, word)  # "Client Computing Group" revenue: a part, named
                continue
            if not _narrows(word):
                break
            words.insert(0, word)
    after = _LINE_AFTER.match(blanked[end:])
    if after is not None:
        line = [w for w in after.group("line").split() if w.casefold() not in _SMALL_WORDS]
        words.extend(line)
    per = _PER_AFTER.match(blanked[end:])
    if per is not None:
        words.extend(per.group("line").replace("-", " ").split())
    of = _OF_AFTER.match(blanked[end:]) if after is None else None
    if of is not None and not (
        of.group("word") == "from" and _TIME_WORDS & set(of["line"].split())
    ):
        words.extend(
            w
            for w in of.group("line").split()
            if w.casefold() not in _SMALL_WORDS | _NOT_QUALIFIERS
        )
    return " ".join(words) or None


# CJK words before a metric that do not narrow it to a line: the company itself, "total",
# "actual", "the annual report says", period words … (the English _NOT_QUALIFIERS).
_NOT_QUALIFIERS_CJK = re.compile(
    "公司|會社|会社|当社|當社|弊社|本社|我司|贵司|貴司|企業|企业|全体|全體|全社|合計|合计|総額|总额|總額"
    # the government whose budget it is, as "federal" (_ISSUER_WORDS)
    "|米国連邦政府|美国联邦政府|連邦政府|联邦政府|政府"
    "|年間|年间|通期|全年|実績|実际|實際|实际|实绩|實績|業績|业绩|年報|年报|決算|决算|財報|财报|報告|报告"
    # consolidated, the group's: the company's whole figure (the English "consolidated")
    "|連結|连结|合并|合併|集团|集團|グループ"
    # the quarter alone (单季: "the third quarter by itself"), not a line of it
    "|单季度|单季|單季度|單季|当季|當季"
    "|根据|根據|按照|依据|依據|请问|請問|告诉我|告訴我|教えて|我们|我們|你们|你們"
    # period words, also where no relative period is read (no request date, 上期 in Chinese)
    "|上半期|下半期|上半年|下半年|四半期|上期|下期|本期|当期|當期|前期|今期|来期|去年|今年|前年|昨年"
    "|来年|明年|本年|当年|當年|年度|季度|通年|年初|年末|期初|期末|半期"
)
# Where a clause ends: what is before it does not qualify the metric after it.
_CJK_BOUNDARY = re.compile(r"[,，、;；。？?!！:：]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u30a0-\u30ff]+")
_LATIN_BEFORE = re.compile(r"((?:[0-9A-Za-z\u00c0-\u024f][\w&.-]*\s+){1,3})$")


def _cjk_qualifier(quiet: str, start: int, lo: int) -> str | None:
    """CJK words left before the metric at ``quiet[start:]`` — after ``lo`` (a named entity,
    an earlier metric) and in the same clause — that are no slot, figure word or small word:
    サービス in 日本のサービス売上高, 香港 in 香港去年营收 or ACME 香港的收入 (with the Latin
    name written before it). Particles (の, 的 …) only join them to the metric."""
    boundaries = [m.end() for m in _CJK_BOUNDARY.finditer(quiet, lo, start)]
    lo = max([lo, *boundaries])
    region = _NOT_QUALIFIERS_CJK.sub(lambda m: " " * len(m.group(0)), quiet[lo:start])
    runs = []
    for m in _CJK_RUN.finditer(region):
        run = m.group(0).strip("".join(_SMALL_CJK))
        if run and any(c not in _SMALL_CJK for c in run):
            runs.append((lo + m.start(), run))
    if not runs:
        return None
    words = [run for _, run in runs]
    before = _LATIN_BEFORE.search(quiet[lo : runs[0][0]])
    if before is not None:
        names = [
            w
            for w in before.group(1).split()
            if w.casefold() not in _SMALL_WORDS and w.casefold() not in _NOT_QUALIFIERS
        ]
        words = [*names, *words]
    return " ".join(words)


def _against_the_same_span(
    text: str, chosen: list[Match | RelativeMatch]
) -> list[Match | RelativeMatch]:
    """``chosen`` with "the prior year", "the same period last year" or "the same quarter
    of 2024" read against the one span the question names ("the three months ended June
    30, 2025 compared with the prior year" is that span a year before, 3M ended Jun 2024),
    never as a year counted from today or as the whole year 2024."""
    named = {m.canonical for m in chosen if isinstance(m, Match)}
    if len(named) != 1 or not _YEAR_IN_PERIOD.search(next(iter(named))):
        return chosen
    base = next(iter(named))
    against: list[Match] = []
    for m in _SAME_SPAN_OF.finditer(text):
        year = m.group("year")
        against.append(Match(_YEAR_IN_PERIOD.sub(year, base, 1), m.start(), m.end()))
    for m in _YEAR_AGO.finditer(text):
        if any(a.start <= m.start() < a.end for a in against):
            continue
        against.append(Match(year_before(base), m.start(), m.end()))
    if not against:
        return chosen
    kept = [m for m in chosen if all(m.end <= a.start or m.start >= a.end for a in against)]
    return sorted([*kept, *against], key=lambda m: m.start)


class RuleIntentParser:
    """The default parser: vocabulary matching plus the rules of the module docstring.
    ``calendar`` is the fiscal calendar relative periods resolve in (the ``[facts]``
    settings' one by default)."""

    def __init__(
        self, vocab: FactSettings | Vocabulary, calendar: FiscalCalendar | None = None
    ) -> None:
        self.vocab = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)
        self.calendar = calendar or FiscalCalendar.from_settings(self.vocab.settings)
        # Words of an entity's name ("federal" of "United States Federal Budget") say whose
        # figure it is: they neither narrow the metric nor leave the question unexplained.
        words = {
            w.casefold()
            for name, aliases in self.vocab.settings.entities.items()
            for text in (name, *aliases)
            for w in _LATIN_WORD.findall(text)
            if len(w) > 2 and w.casefold() not in _SMALL_WORDS
        }
        self._entity_words = (
            re.compile(rf"{_L}(?:{'|'.join(map(re.escape, sorted(words)))}){_R}", re.IGNORECASE)
            if words
            else None
        )
        # "federal" names whose figure it is, as "company" does, unless a line or metric is
        # called so ("U.S. federal" among a tax table's rows): then it may narrow the metric.
        settings = self.vocab.settings
        lines = {
            w.casefold()
            for name in (*settings.channels, *settings.metrics)
            for w in _LATIN_WORD.findall(name)
        }
        self._issuer_words = _ISSUER_WORDS - lines

    def _narrowing(self, qualifier: str | None, metric: str) -> str | None:
        """``qualifier`` without the words that narrow nothing: whose budget it is
        ("federal"), and "budget" before the budget's balance ("the federal budget
        deficit" is the deficit; "budget revenue" stays a plan)."""
        if qualifier is None:
            return None
        balance = metric.casefold() in _BUDGET_BALANCES
        words = [
            w
            for w in qualifier.split()
            if w.casefold() not in self._issuer_words and not (balance and w.casefold() == "budget")
        ]
        return " ".join(words) or None

    def _names_entity(self, words: str) -> bool:
        """Whether every word of ``words`` is a word of an entity's name."""
        if self._entity_words is None:
            return False
        return not _LATIN_WORD.search(self._entity_words.sub(" ", words))

    def parse(self, question: str, *, today: date | None = None) -> Intent:
        """Parse one question; relative periods need ``today`` (without it they are not
        read, and the question is treated as naming no period there)."""
        text = normalize(question)
        split = self._composite(text, today)
        if split is not None:
            return split
        return self._parse(text, today)

    def _composite(self, text: str, today: date | None) -> Intent | None:
        """A figure clause and an explanation clause, in either order, split at a clause
        boundary; else ``None``. Figure first: the boundary nearest before the first
        explanation word ("How much …, and why …?"). Explanation first: the first boundary
        after it that a figure word follows ("Why did Japan grow, and how much …?"); a figure
        clause that names no slot of its own ("… and how much was it?") takes them from the
        whole question."""
        cue = _NARRATIVE.search(text)
        if cue is None:
            return None
        boundaries = list(_CLAUSE.finditer(text))
        before = [b for b in boundaries if b.end() <= cue.start()]
        if before and self.vocab.find("metric", text[: cue.start()]):
            boundary = before[-1]
            figure_text, story = text[: boundary.start()], text[boundary.end() :]
            fallback = None
        else:
            after = [
                b
                for b in boundaries
                if b.start() >= cue.end() and _QUANTITY.search(text[b.end() :])
            ]
            if not after:
                return None
            boundary = after[0]
            story, figure_text = text[: boundary.start()], text[boundary.end() :]
            fallback = _blank(text, [cue.span()])
        figure = self._parse(figure_text, today)
        if fallback is not None and figure.kind not in ("metric", "multi"):
            figure = self._parse(fallback, today)
        if figure.kind not in ("metric", "multi") or figure.uncertain:
            return None
        story = story.strip()
        # "… and why did it grow?": an explanation that names no entity is about the
        # figure's entity, and — naming no metric either — its metric, in the words the
        # question wrote them.
        carried: list[str] = []
        if not self.vocab.find("entity", story):
            found = list(self.vocab.find("entity", figure_text))
            if not self.vocab.find("metric", story):
                found += self.vocab.find("metric", figure_text)
            carried = [figure_text[m.start : m.end] for m in found]
        query = " ".join([story, *dict.fromkeys(carried)])
        return Intent(
            "composite",
            figure.parts,
            True,
            figure.unrecognized,
            figure.resolved,
            figure.ambiguous,
            narrative=story,
            unexplained=figure.unexplained,
            narrative_query=query,
            compare=figure.compare,
            unknown_entity=figure.unknown_entity,
        )

    def _periods(
        self, text: str, today: date | None
    ) -> tuple[list[str], list[RelativeMatch], list[RelativeMatch], list[tuple[int, int]]]:
        """Periods in order (absolute and resolved relative, the longest where two overlap),
        the relative ones used, the ambiguous ones, and the spans all of them cover."""
        absolute: list[Match] = self.vocab.find_periods(text)
        relative = find_relative(text, self.calendar, today) if today is not None else []
        chosen: list[Match | RelativeMatch] = []
        candidates: list[Match | RelativeMatch] = [*absolute, *relative, *self._bare_years(text)]
        for m in sorted(candidates, key=lambda m: (-(m.end - m.start), m.start)):
            if all(m.end <= c.start or m.start >= c.end for c in chosen):
                chosen.append(m)
        chosen.sort(key=lambda m: m.start)
        chosen = _against_the_same_span(text, chosen)
        periods: list[str] = []
        used: list[RelativeMatch] = []
        ambiguous: list[RelativeMatch] = []
        for m in chosen:
            if _NOT_THIS.search(text[: m.start]):
                continue  # "Just that quarter, not year to date": a period ruled out
            if isinstance(m, RelativeMatch):
                if m.alternatives:
                    ambiguous.append(m)
                    continue
                used.append(m)
                periods.append(m.period)
            else:
                periods.append(m.canonical)
        spans = [(m.start, m.end) for m in chosen]
        return list(dict.fromkeys(periods)), used, ambiguous, spans

    def _lines_named(
        self, text: str, metrics: Sequence[Match]
    ) -> list[tuple[Match, tuple[int, int] | None]]:
        """Each metric found, as the line of it that the question also names anywhere:
        "How much revenue did Productivity and Business Processes make …" asks for the
        metric ``productivity and business processes revenue`` a table holds, not revenue
        qualified by words no fact carries. With the span of the line's words, or ``None``
        when the metric stands as found."""
        names = [n for n in self.vocab.settings.metrics if " " in n]
        folded = normalize(text).casefold()
        out: list[tuple[Match, tuple[int, int] | None]] = []
        for m in metrics:
            measure = m.canonical.casefold()
            best: tuple[str, tuple[int, int]] | None = None
            for name in names:
                n = name.casefold()
                if n == measure or not n.endswith(" " + measure):
                    continue
                line = n[: -len(measure) - 1].strip()
                hit = re.search(rf"(?<!\w){re.escape(line)}(?!\w)", folded)
                apart = hit is not None and not (hit.start() < m.end and m.start < hit.end())
                if hit is not None and apart and (best is None or len(name) > len(best[0])):
                    best = (name, hit.span())
            if best is None:
                out.append((m, None))
            else:
                out.append((Match(best[0], m.start, m.end), best[1]))
        return out

    def _bare_years(self, text: str) -> list[RelativeMatch]:
        """``2025`` alone: the fiscal year when fiscal years are calendar years, else
        ambiguous between the fiscal and the calendar year (never guessed)."""
        out = []
        for m in _BARE_YEAR.finditer(text):
            year = m.group(0)
            if self.calendar.start_month == 1:
                out.append(RelativeMatch(year, f"FY{year}", m.start(), m.end()))
            else:
                readings = (f"FY{year}", f"CY{year}")
                out.append(RelativeMatch(year, "", m.start(), m.end(), readings))
        return out

    def _parse(self, text: str, today: date | None) -> Intent:
        vocab = self.vocab
        brought: str | None = None  # what the question says was brought in
        if not vocab.find("metric", text) and _HOW_MUCH_OR_WHAT_DID.search(text):
            # "How much did Intelligent Cloud bring in?": what a line brings in is its revenue
            if _BROUGHT_IN.search(text) and (what := _HOW_MUCH_OF.search(text)) is not None:
                brought = what.group("what")
            text = _BROUGHT_IN.sub("revenue", text)
        # "the deficit as a percentage of GDP": what the share is of names no slot.
        share_of = [m.span() for m in SHARE_OF.finditer(text)]
        share_of += [m.span() for m in _CURRENCY_OF_COUNTRY.finditer(text)]
        slotted = _blank(text, share_of)
        found = {
            kind: vocab.find(kind, slotted) for kind in ("metric", "entity", "channel", "unit")
        }
        found["metric"] = _measures_named(found["metric"], slotted)
        # Words a table names as a measure and another as a line ("gas fuel": a column of
        # one, a row of the other) are read as the measure: its line is its total.
        found["channel"] = [
            c
            for c in found["channel"]
            if not any(m.start <= c.start and c.end <= m.end for m in found["metric"])
        ]
        lines = self._lines_named(text, found["metric"])
        found["metric"] = [m for m, _ in lines]
        metrics = list(dict.fromkeys(m.canonical for m in found["metric"]))
        entities = list(dict.fromkeys(m.canonical for m in found["entity"]))
        channels = list(dict.fromkeys(m.canonical for m in found["channel"]))
        periods, resolved, ambiguous, period_spans = self._periods(text, today)
        covered = [t for m in resolved for t in (m.text,)]
        unrecognized = tuple(
            dict.fromkeys(
                tok for tok in vocab.malformed_periods(text) if not any(tok in c for c in covered)
            )
        )
        slots_present = bool(metrics or entities or periods or unrecognized or ambiguous)
        spans = [(m.start, m.end) for ms in found.values() for m in ms] + period_spans + share_of
        spans += [span for _, span in lines if span is not None]
        yearless = periods_without_year(normalize(text), period_spans) if not periods else []
        spans += [(m.start, m.end) for m in yearless]
        spans += [(i, i + len(tok)) for tok in unrecognized if (i := text.find(tok)) >= 0]
        quiet = _QUANTITY.sub(lambda x: " " * len(x.group(0)), _blank(text, spans))
        qualifiers = {
            m.canonical: q
            for m in found["metric"]
            if (q := self._narrowing(_qualifier(quiet, m.start, m.end), m.canonical))
            and not self._names_entity(q)
        }
        # "How much grant money from universities did they take in?": revenue of that
        # line, never the company's whole revenue
        if brought is not None and "revenue" in metrics and "revenue" not in qualifiers:
            words = [w for w in brought.split() if w.casefold() not in _TAKINGS]
            if any(_LATIN_WORD.search(w) for w in words):
                qualifiers["revenue"] = " ".join(words)
        # "How much revenue did Intelligent Cloud generate?": a statement line and a name
        # no statement line is, not set side by side, ask for that part's line, never for
        # the company's revenue and the part's other figure (a goodwill table's row)
        named = [m for m in found["metric"] if m.canonical not in qualifiers]
        if len(metrics) == 2 and len(named) == 2:
            first, second = sorted(named, key=lambda m: m.start)
            line = [m for m in named if glossary.line_name(m.canonical)]
            part = [m for m in named if not glossary.line_name(m.canonical)]
            if (
                len(line) == 1
                and len(part) == 1
                # words between them, none setting them side by side ("revenue
                # headcount" is a list of two)
                and _LATIN_WORD.search(gap := text[first.end : second.start])
                and not _SIDE_BY_SIDE.search(gap)
            ):
                qualifiers[line[0].canonical] = part[0].canonical
                found["metric"] = line
                metrics = [line[0].canonical]
        # what the figure is counted per, or what other kind of figure it is, narrows every
        # metric named, wherever the question says it
        apart = [m.group(0) for m in _PER_ANYWHERE.finditer(quiet)]
        apart += [m.group(0).casefold() for m in _OTHER_KIND_ANYWHERE.finditer(quiet)]
        for m in found["metric"] if apart else ():
            q = qualifiers.get(m.canonical) or ""
            missing = [word for word in apart if word.casefold() not in q.casefold()]
            if missing:
                qualifiers[m.canonical] = " ".join([q, *missing]).strip()
        # CJK words attached to a metric: 日本のサービス売上高, 香港去年营收.
        for m in found["metric"]:
            if m.canonical in qualifiers or not _CJK.search(quiet[: m.start]):
                continue
            lo = max(
                (x.end for x in (*found["entity"], *found["metric"]) if x.end <= m.start),
                default=0,
            )
            if (q := _cjk_qualifier(quiet, m.start, lo)) is not None:
                qualifiers[m.canonical] = q
        if self._entity_words is not None and not entities:
            spans += [m.span() for m in self._entity_words.finditer(_blank(text, spans))]
        # whose budget it is ("federal", 連邦政府) leaves nothing unexplained either
        spans += [
            m.span()
            for m in _ISSUER.finditer(text)
            if _CJK.search(m.group(0)) or m.group(0).casefold() in self._issuer_words
        ]
        blanked = _blank(text, spans)
        common, names, cjk = _residual(blanked)
        small = common <= _MAX_RESIDUAL_WORDS and cjk <= _MAX_RESIDUAL_CJK
        unexplained = bool(common or names or cjk)
        asks_quantity = bool(_QUANTITY.search(text))
        explains = bool(
            _NARRATIVE.search(_HOW_IT_COMPARED.sub(" ", _HOW_IT_CHANGED.sub(" ", text)))
        )
        extra = (tuple(resolved), tuple(ambiguous))
        unknown = [
            m.group(1)
            for m in _POSSESSIVE.finditer(blanked)
            if m.group(1).casefold() not in _SMALL_WORDS
        ]
        if not unknown and metrics and not entities and not qualifiers:
            # "How much revenue did Globex make?": a name no slot took, beside a metric, is
            # the entity asked about, and not one the caller's facts hold.
            unknown = _names_left(blanked)
        if unknown and metrics and all(m.casefold() in _SMALL_WORDS for m in metrics):
            # "the total EBITDA of 3M" beside a table whose column "Total" sums emissions:
            # "total" says how much of a measure the question names otherwise, not its own.
            return Intent("narrative", (), slots_present, unrecognized, *extra)
        # (not a word of a slot's name: "More Personal Computing revenue")
        compare = bool(_COMPARE.search(blanked))
        # Two values of one slot named in the question ("Q1 and Q2") are set side by side.
        compare = compare or len(metrics) > 1 or len(entities) > 1 or len(periods) > 1
        # A line and a period with nothing else ("What were customs duties in 2025?") ask
        # for the line's figure as surely as "how much" does.
        line_asked = bool(channels and periods)
        if not metrics:
            if (
                ((asks_quantity and (entities or periods or ambiguous)) or line_asked)
                and small
                and not explains
            ):
                parts = tuple(
                    MetricQuery(None, *slots)
                    for slots in itertools.islice(
                        itertools.product(
                            _options(entities), _options(periods), _options(channels)
                        ),
                        MAX_PARTS + 1,
                    )
                )
                return Intent(
                    "metric", parts[:1], True, unrecognized, *extra, unexplained=unexplained
                )
            return Intent("narrative", (), slots_present, unrecognized, *extra)
        if explains and not asks_quantity:
            return Intent("narrative", (), slots_present, unrecognized, *extra)
        # Whom the figure is of is named, or nobody is: no table the parser reads names one.
        whom = bool(entities) or not self.vocab.settings.entities
        complete = whom and bool(periods or unrecognized or ambiguous)
        uncertain = not small and not complete
        product = itertools.product(
            _options(metrics), _options(entities), _options(periods), _options(channels)
        )
        parts = tuple(
            MetricQuery(*slots, qualifier=qualifiers.get(slots[0] or ""))
            for slots in itertools.islice(product, MAX_PARTS + 1)
        )
        kind: IntentKind = "multi" if len(parts) > 1 else "metric"
        return Intent(
            kind,
            parts,
            slots_present,
            unrecognized,
            *extra,
            uncertain=uncertain,
            unexplained=unexplained,
            compare=compare,
            unknown_entity=" ".join(unknown) if not entities else "",
            yearless=tuple(dict.fromkeys(m.canonical for m in yearless)),
            names_left=bool(names or cjk),
            name_left=" ".join(_names_left(blanked)) if entities else "",
            change=bool(_CHANGE.search(text)) and not _COMPARED_WITH.search(text),
        )


def parse_intent(
    question: str, vocab: FactSettings | Vocabulary, *, today: date | None = None
) -> Intent:
    """Parse one question with the default rules (see the module docstring)."""
    return RuleIntentParser(vocab).parse(question, today=today)
