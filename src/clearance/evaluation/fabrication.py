"""Fabricated numbers: numbers an answer states that nothing it cites, and nothing the
person asked, accounts for. The target is 0 on every suite.

Numbers are read with the engine's own reader (:func:`~clearance.answer.narrative.numbers_in`:
by value after NFKC, sign dropped, citation markers ignored), so ``1,571`` = ``1571.0`` and a
number counts once per answer however often it is written. A number is **not** fabricated
when it is among the following, and only these — each for the reason given:

1. **the text a citation opens** — every chunk whose locator is exactly the citation's: this
   is the narrative path's guarantee (docs/design.md §5: every number appears in a cited snippet),
   judged per answer here rather than per sentence;
2. **the facts a citation names** — the value, and the entity, period, metric, channel and
   unit labels, of every stored fact of the cited document at exactly the cited locator:
   a structured answer is rendered from these alone. A cell inside a table stored as one
   chunk admits its own fact, never the other numbers of that table;
3. **the cited titles and locators** — a structured answer prints its provenance
   (``source: <title> · slide=3,table=1,…``); those are addresses, not claims;
4. **the question** — the person's own numbers restated (the part of a composite question
   that found no source), and the periods it names in their canonical form when a period
   vocabulary is given (``2025年上半年`` is looked up, and refused, as ``H1 2025``): the
   same period, written the way every answer writes periods;
5. **the result's own reading of the question** — its resolved periods, assumptions and
   clarifying options, each a field of the result that the suite checks on its own
   (options only ever come from facts the caller may read);
6. **comparisons of cited facts, on the figures paths only** (routes ``multi`` and
   ``composite``) — for an ordered pair of cited facts of one metric and one unit, the
   difference of their values and the percentage change on the first's absolute value,
   rounded half up to one decimal: exactly what
   :func:`~clearance.answer.structured.comparison` derives, in the same decimal arithmetic.
   No sum, ratio, other rounding or any derivation for another route is accepted.

Anything else — a total nobody cited, a rounded figure, a year from a document that was
not cited, the number of parts in a refusal — is counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal

from clearance.answer.narrative import numbers_in
from clearance.answer.result import AnswerResult, Route
from clearance.evaluation.citations import Evidence
from clearance.ingest.facts import Vocabulary, format_number
from clearance.model import Chunk, Fact

__all__ = ["accounted_numbers", "comparison_numbers", "fabricated_numbers"]

_FIGURE_ROUTES = frozenset({Route.MULTI, Route.COMPOSITE})
_TENTH = Decimal("0.1")


def _decimal(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def comparison_numbers(facts: Sequence[Fact]) -> set[Decimal]:
    """Class 6 of the module docstring: the differences and percentage changes of every
    ordered pair of ``facts`` with one metric and one unit, as unsigned values."""
    out: set[Decimal] = set()
    for first in facts:
        for second in facts:
            if first is second or (first.metric, first.unit) != (second.metric, second.unit):
                continue
            base, new = _decimal(first.value), _decimal(second.value)
            diff = new - base
            out.add(abs(diff).normalize())
            if base != 0:
                pct = (diff / abs(base) * 100).quantize(_TENTH, rounding=ROUND_HALF_UP)
                out.add(abs(pct).normalize())
    return out


def _fact_text(fact: Fact) -> str:
    labels = (fact.entity, fact.period, fact.metric.replace("_", " "), fact.channel, fact.unit)
    return " ".join((format_number(fact.value), *labels))


def _numbers(texts: Iterable[str]) -> set[Decimal]:
    out: set[Decimal] = set()
    for text in texts:
        out |= numbers_in(text)
    return out


def accounted_numbers(
    question: str,
    result: AnswerResult,
    evidence: Evidence,
    *,
    periods: Vocabulary | None = None,
) -> set[Decimal]:
    """Every number classes 1–6 of the module docstring account for in ``result``."""
    texts: list[str] = [question]
    if periods is not None:
        texts += periods.values("period", question)
    texts += [f"{p.text} {p.period}" for p in result.resolved_periods]
    texts += [*result.assumptions, *result.options]
    cited: list[Fact] = []
    chunks: dict[str, list[Chunk]] = {}
    facts: dict[str, list[Fact]] = {}
    for citation in result.citations:
        if citation.doc_id not in chunks:
            chunks[citation.doc_id] = evidence.get_chunks(citation.doc_id)
            facts[citation.doc_id] = evidence.list_facts(citation.doc_id)
        texts += [citation.title, citation.locator]
        texts += [c.text for c in chunks[citation.doc_id] if c.locator == citation.locator]
        here = [f for f in facts[citation.doc_id] if f.locator == citation.locator]
        texts += [_fact_text(f) for f in here]
        cited += here
    accounted = _numbers(texts)
    if result.route in _FIGURE_ROUTES:
        accounted |= comparison_numbers(cited)
    return accounted


def fabricated_numbers(
    question: str,
    result: AnswerResult,
    evidence: Evidence,
    *,
    periods: Vocabulary | None = None,
) -> list[Decimal]:
    """The numbers of ``result.answer`` nothing accounts for (module docstring), ascending.

    ``question`` is the question as asked; ``evidence`` the store the answer was made from;
    ``periods`` the ``[facts]`` vocabulary the engine read the question with."""
    stated = numbers_in(result.answer)
    if not stated:
        return []
    return sorted(stated - accounted_numbers(question, result, evidence, periods=periods))
