"""Route stage (DESIGN §1 stage 6): is this a metric question, several, or narrative?

Deterministic and rule-based — no model is asked. The ``[facts]`` vocabulary decides what
a metric, an entity, a channel and a period are (:class:`~clearance.ingest.facts.Vocabulary`;
English and Japanese alike, after NFKC + casefold):

* a question that names a metric is a **metric** question; every metric, entity, period
  and channel it names is collected in order of appearance;
* when it names more than one value of a slot ("Japan and US", "日本と米国",
  "FY2023 vs FY2024", "between FY2024 and FY2025") it is **multi**: its parts are the
  cartesian product of the slots, in question order (metric, entity, period, channel).
  That product grows with the fourth power of the question's length, so it is cut at
  ``MAX_PARTS + 1`` parts: one more than the orchestrator answers, which is enough for it
  to ask for fewer figures (``clarify``) without building the rest;
* a slot the question does not name is ``None`` (the orchestrator then asks to clarify);
* period-looking tokens no period form recognises (``FY20245``, ``Q5 2024``) are listed in
  ``unrecognized``;
* anything else is **narrative**. ``slots_present`` says whether any metric, entity or
  period (recognised or not) appears, which keeps the FAQ short-circuit conservative.

:class:`IntentParser` is the seam: anything with ``parse(question) -> Intent`` can replace
the default :class:`RuleIntentParser`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from clearance.config import FactSettings
from clearance.ingest.facts import Vocabulary

__all__ = [
    "MAX_PARTS",
    "Intent",
    "IntentParser",
    "MetricQuery",
    "RuleIntentParser",
    "parse_intent",
]

IntentKind = Literal["metric", "multi", "narrative"]

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


@dataclass(frozen=True, slots=True)
class Intent:
    kind: IntentKind
    parts: tuple[MetricQuery, ...]
    slots_present: bool
    unrecognized: tuple[str, ...] = ()


@runtime_checkable
class IntentParser(Protocol):
    def parse(self, question: str) -> Intent: ...


def _options(values: list[str]) -> list[str | None]:
    return list(values) if values else [None]


class RuleIntentParser:
    """The default parser: vocabulary matching plus the rules of the module docstring."""

    def __init__(self, vocab: FactSettings | Vocabulary) -> None:
        self.vocab = vocab if isinstance(vocab, Vocabulary) else Vocabulary(vocab)

    def parse(self, question: str) -> Intent:
        vocab = self.vocab
        metrics = vocab.values("metric", question)
        entities = vocab.values("entity", question)
        periods = vocab.values("period", question)
        channels = vocab.values("channel", question)
        unrecognized = tuple(dict.fromkeys(vocab.malformed_periods(question)))
        slots_present = bool(metrics or entities or periods or unrecognized)
        if not metrics:
            return Intent("narrative", (), slots_present, unrecognized)
        product = itertools.product(
            _options(metrics), _options(entities), _options(periods), _options(channels)
        )
        parts = tuple(MetricQuery(*slots) for slots in itertools.islice(product, MAX_PARTS + 1))
        kind: IntentKind = "multi" if len(parts) > 1 else "metric"
        return Intent(kind, parts, slots_present, unrecognized)


def parse_intent(question: str, vocab: FactSettings | Vocabulary) -> Intent:
    """Parse one question with the default rules (see the module docstring)."""
    return RuleIntentParser(vocab).parse(question)
