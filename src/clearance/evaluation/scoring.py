"""Scoring answers against expectations: outcome classes, figure accuracy, and the four
rates plus the fabricated-number count over a set of cases.

Outcome classes (:func:`outcome_of`): ``answered``; ``clarified`` (a clarifying
question); ``refused`` (every refusal status: not found, unrecognised parameter, no
readable source, out-of-scope entity, disabled account, unknown assistant); ``failed``
(``degraded``: the provider failed, so the case measured nothing and is wrong whatever was
expected).

The rates, each over the cases it applies to (``None`` when there are none):

=========================  ==========================================  =====================
rate                       a case counts when                          it is right when
=========================  ==========================================  =====================
numeric accuracy           it expects a figure                         answered, the figure
                                                                       written exactly as
                                                                       expected with its
                                                                       unit, and a citation
                                                                       of an expected source
                                                                       holds that value in
                                                                       that unit
refusal correctness        it expects an answer or a refusal           refused exactly when
                                                                       a refusal is expected
                                                                       (refusing an
                                                                       answerable question
                                                                       and answering one
                                                                       that must be refused
                                                                       both count against)
clarification correctness  always                                      it asks to clarify
                                                                       exactly when that is
                                                                       expected (both
                                                                       directions)
citation validity          per citation, every case                    :mod:`~clearance.
                                                                       evaluation.citations`
=========================  ==========================================  =====================

plus the fabricated-number count (:mod:`~clearance.evaluation.fabrication`), summed over
the cases. A question expected to be clarified does not count for refusal correctness: a
refusal there is the clarification rate's error, and counting it twice would weigh it twice.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from clearance.access.policy import AccessControl
from clearance.answer.narrative import numbers_in
from clearance.answer.result import AnswerResult, Status
from clearance.answer.structured import written_amount
from clearance.evaluation.citations import CitationCheck, Evidence, check_citations
from clearance.evaluation.fabrication import fabricated_numbers
from clearance.ingest.facts import Vocabulary
from clearance.model import Fact

__all__ = [
    "Case",
    "CaseScore",
    "Figure",
    "Outcome",
    "Rate",
    "Summary",
    "figure_problems",
    "outcome_of",
    "rate_of",
    "score_case",
    "summarise",
]


class Outcome(enum.Enum):
    ANSWERED = "answered"
    CLARIFIED = "clarified"
    REFUSED = "refused"
    FAILED = "failed"


_REFUSALS = frozenset(
    {
        Status.NOT_FOUND,
        Status.UNRECOGNIZED_PARAM,
        Status.NO_AUTHORIZED_SOURCE,
        Status.OUT_OF_SCOPE_ENTITY,
        Status.ACCOUNT_DISABLED,
        Status.UNKNOWN_ASSISTANT,
    }
)


def outcome_of(status: Status) -> Outcome:
    """The outcome class of a result status (module docstring)."""
    if status is Status.ANSWERED:
        return Outcome.ANSWERED
    if status is Status.CLARIFY:
        return Outcome.CLARIFIED
    if status in _REFUSALS:
        return Outcome.REFUSED
    return Outcome.FAILED


@dataclass(frozen=True, slots=True)
class Figure:
    """An expected figure: ``value`` as the answer writes it (``1,571``), its ``unit``
    (``""`` for none) and the documents any one of which must be cited for it."""

    value: str
    unit: str
    sources: tuple[str, ...]

    def __post_init__(self) -> None:
        if not re.fullmatch(r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?|-?\d+(?:\.\d+)?", self.value):
            raise ValueError(f"expected figure {self.value!r} is not one number")
        if not self.sources:
            raise ValueError(f"expected figure {self.value!r} names no source to be cited")

    @property
    def number(self) -> Decimal:
        return Decimal(self.value.replace(",", ""))

    @property
    def text(self) -> str:
        return f"{self.value} {self.unit}".strip()


@dataclass(frozen=True, slots=True)
class Case:
    """One question asked by one person, and what must come of it."""

    id: str
    question: str
    user: str
    expected: Outcome
    assistant: str | None = None
    figure: Figure | None = None

    def __post_init__(self) -> None:
        if self.expected is Outcome.FAILED:
            raise ValueError(f"case {self.id}: a failure is never the expected outcome")
        if self.figure is not None and self.expected is not Outcome.ANSWERED:
            raise ValueError(f"case {self.id}: a figure is only expected of an answer")


def _states(answer: str, figure: Figure) -> bool:
    """``answer`` writes the figure exactly, not as part of a longer number or word: its
    value then its unit (``486.9 USD m``), or as a figure answer says it (``USD 486.9 m``,
    :func:`~clearance.answer.structured.written_amount`)."""
    for text in dict.fromkeys((figure.text, written_amount(figure.value, figure.unit))):
        pattern = rf"(?<![\w.,+-]){re.escape(text)}(?![\w]|[.,]\d)"
        if re.search(pattern, answer) is not None:
            return True
    return False


def _holds(fact: Fact, figure: Figure) -> bool:
    return Decimal(repr(float(fact.value))) == figure.number and fact.unit == figure.unit


def figure_problems(result: AnswerResult, figure: Figure, evidence: Evidence) -> list[str]:
    """Why ``result`` does not answer ``figure`` (empty: it does). The value must be written
    with its unit, and one citation of an expected source must hold it: a stored fact at
    that exact locator with that value and unit, or — for a cited passage rather than a
    cell — text at that locator stating the value."""
    problems: list[str] = []
    if result.status is not Status.ANSWERED:
        problems.append(f"status is {result.status.value}, not answered")
    if not _states(result.answer, figure):
        problems.append(f"the answer does not state {figure.text!r}")
    cited = [c for c in result.citations if c.doc_id in figure.sources]
    if not cited:
        problems.append(f"none of {', '.join(figure.sources)} is cited")
    for citation in cited:
        facts = [f for f in evidence.list_facts(citation.doc_id) if f.locator == citation.locator]
        if facts:
            if any(_holds(f, figure) for f in facts):
                return problems
            continue
        passages = [
            c for c in evidence.get_chunks(citation.doc_id) if c.locator == citation.locator
        ]
        if any(abs(figure.number) in numbers_in(c.text) for c in passages):
            return problems
    if cited:
        problems.append(f"no cited place in {', '.join(figure.sources)} holds {figure.text!r}")
    return problems


@dataclass(frozen=True, slots=True)
class CaseScore:
    """What one case came to."""

    case: Case
    actual: Outcome
    status: str
    figure_problems: tuple[str, ...] | None
    citations: tuple[CitationCheck, ...]
    fabricated: tuple[Decimal, ...]

    @property
    def figure_right(self) -> bool | None:
        return None if self.figure_problems is None else not self.figure_problems

    @property
    def refusal_right(self) -> bool | None:
        expected = self.case.expected
        if expected is Outcome.REFUSED:
            return self.actual is Outcome.REFUSED
        if expected is Outcome.ANSWERED:
            return self.actual in (Outcome.ANSWERED, Outcome.CLARIFIED)
        return None

    @property
    def clarification_right(self) -> bool:
        if self.actual is Outcome.FAILED:
            return False
        return (self.actual is Outcome.CLARIFIED) == (self.case.expected is Outcome.CLARIFIED)

    def problems(self) -> list[str]:
        """Every way this case falls short of the measures, in words."""
        out: list[str] = []
        if self.refusal_right is False or not self.clarification_right:
            out.append(f"expected {self.case.expected.value}, got {self.status}")
        out += list(self.figure_problems or ())
        out += [
            f"citation {c.citation.doc_id} · {c.citation.locator}: {c.problem}"
            for c in self.citations
            if not c.valid
        ]
        if self.fabricated:
            out.append("fabricated numbers: " + ", ".join(str(n) for n in self.fabricated))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "expected": self.case.expected.value,
            "outcome": self.actual.value,
            "status": self.status,
            "figure_right": self.figure_right,
            "citations": [c.to_dict() for c in self.citations],
            "fabricated": [str(n) for n in self.fabricated],
            "problems": self.problems(),
        }


def score_case(
    case: Case,
    result: AnswerResult,
    *,
    evidence: Evidence,
    access: AccessControl,
    periods: Vocabulary | None = None,
) -> CaseScore:
    """Judge one result against its case with every measure of this package; ``periods``
    is the ``[facts]`` vocabulary the engine reads questions with."""
    figure = (
        tuple(figure_problems(result, case.figure, evidence)) if case.figure is not None else None
    )
    citations = check_citations(
        result, case.user, evidence=evidence, access=access, assistant=case.assistant
    )
    return CaseScore(
        case=case,
        actual=outcome_of(result.status),
        status=result.status.value,
        figure_problems=figure,
        citations=tuple(citations),
        fabricated=tuple(fabricated_numbers(case.question, result, evidence, periods=periods)),
    )


@dataclass(frozen=True, slots=True)
class Rate:
    right: int
    total: int

    @property
    def value(self) -> float | None:
        return self.right / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {"right": self.right, "total": self.total, "rate": self.value}


def rate_of(verdicts: Sequence[bool | None]) -> Rate:
    """The share of ``verdicts`` that are right, over those that were judged (not ``None``)."""
    judged = [v for v in verdicts if v is not None]
    return Rate(sum(judged), len(judged))


@dataclass(frozen=True, slots=True)
class Summary:
    """The four rates and the fabricated-number count over ``scores``."""

    scores: tuple[CaseScore, ...]
    numeric_accuracy: Rate = field(init=False)
    refusal_correctness: Rate = field(init=False)
    clarification_correctness: Rate = field(init=False)
    citation_validity: Rate = field(init=False)
    fabricated_numbers: int = field(init=False)

    def __post_init__(self) -> None:
        s = self.scores
        set_ = object.__setattr__
        set_(self, "numeric_accuracy", rate_of([c.figure_right for c in s]))
        set_(self, "refusal_correctness", rate_of([c.refusal_right for c in s]))
        set_(self, "clarification_correctness", rate_of([c.clarification_right for c in s]))
        set_(self, "citation_validity", rate_of([x.valid for c in s for x in c.citations]))
        set_(self, "fabricated_numbers", sum(len(c.fabricated) for c in s))

    def rates(self) -> dict[str, Rate]:
        return {
            "numeric accuracy": self.numeric_accuracy,
            "refusal correctness": self.refusal_correctness,
            "clarification correctness": self.clarification_correctness,
            "citation validity": self.citation_validity,
        }

    def failures(self) -> dict[str, list[str]]:
        """Case id → its problems, for the cases that have any."""
        return {c.case.id: p for c in self.scores if (p := c.problems())}

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": len(self.scores),
            "rates": {name.replace(" ", "_"): r.to_dict() for name, r in self.rates().items()},
            "fabricated_numbers": self.fabricated_numbers,
            "failures": self.failures(),
            "results": [c.to_dict() for c in self.scores],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    def table(self) -> str:
        """The figures as a small text table, then one line per failing case."""
        lines = [f"{'measure':<27} {'right':>5} / {'total':<5}  rate"]
        for name, r in self.rates().items():
            shown = "n/a" if r.value is None else f"{r.value:.3f}"
            lines.append(f"{name:<27} {r.right:>5} / {r.total:<5}  {shown}")
        lines.append(f"{'fabricated numbers':<27} {self.fabricated_numbers:>5}")
        for case_id, problems in self.failures().items():
            lines.append(f"  {case_id}: " + "; ".join(problems))
        return "\n".join(lines)


def summarise(scores: Sequence[CaseScore]) -> Summary:
    return Summary(tuple(scores))
