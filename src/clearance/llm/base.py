"""The provider seam: what an LLM (or a stand-in) receives and returns.

A :class:`ChatRequest` carries both the rendered ``messages`` *and* the structured
``snippets`` they were rendered from, so the egress guard can check every snippet that is
about to leave the process and providers that need no model (extractive) can work from
structure. Providers are only ever called through :mod:`clearance.llm.guard`.

Citation convention: snippets are labelled ``[S1]``, ``[S2]`` … in the prompt, and an
answer cites them with the same markers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from clearance.model import Sensitivity

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "Provider",
    "ProviderFactory",
    "Snippet",
]

Purpose = Literal["answer", "rerank"]


@dataclass(frozen=True, slots=True)
class Snippet:
    """One retrieved chunk as it is shown to a model, with everything needed to check it."""

    ref: str  # "S1", "S2", …
    chunk_id: str
    doc_id: str
    title: str
    locator: str
    uri: str
    text: str
    sensitivity: Sensitivity
    corpus: str
    origin: str
    trust: str = "untrusted"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    purpose: Purpose
    question: str
    messages: tuple[ChatMessage, ...]
    snippets: tuple[Snippet, ...] = ()
    max_tokens: int = 512
    temperature: float = 0.0
    # Phrases the organisation's vocabulary ([retrieval.synonyms]) holds equivalent to
    # phrases of the question: a quoting provider matches them as it matches the question.
    equivalents: tuple[str, ...] = ()
    # Names in the question of whom it is about (a company the facts know): they choose the
    # documents, not the sentence of one that answers, so a quoting provider weighs them as
    # it weighs the words of a period.
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChatResponse:
    text: str
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """An LLM or a deterministic stand-in. Any failure raises ``ProviderError``."""

    name: str

    def complete(self, request: ChatRequest) -> ChatResponse: ...


ProviderFactory = Callable[..., Provider]
