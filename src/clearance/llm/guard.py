"""The egress guard (stage 12): the single gate in front of every LLM call.

Every provider call — rerank judge and synthesiser alike — goes through
:meth:`EgressGuard.complete`, which receives the request's authorised set and re-checks
every snippet about to leave the process:

1. the snippet's chunk is in this request's decision set, for the same document;
2. neither the snippet nor (on re-check) its stored chunk/document is RESTRICTED;
3. its corpus is one this request may read;
4. an independent re-check against the store (``recheck``) re-evaluates the decision from
   stored data and confirms the text is exactly the stored chunk text;
5. every snippet's text actually appears in the rendered messages (nothing was rendered
   that is not accounted for by a checked snippet's label).

Any mismatch aborts the call with :class:`GuardError` (``internal_guard``) and logs it; the
provider is never contacted. Nothing else in the package calls ``Provider.complete``
(a test enforces this).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from clearance.errors import ClearanceError, GuardError, ProviderError
from clearance.llm.base import ChatRequest, ChatResponse, Provider, Snippet
from clearance.model import is_restricted

__all__ = ["AuthorizedSet", "EgressGuard", "Recheck", "RecheckResult", "check_request"]

log = logging.getLogger("clearance.llm.guard")


@dataclass(frozen=True, slots=True)
class RecheckResult:
    allowed: bool
    text: str | None  # the stored chunk text, None if the chunk no longer exists
    restricted: bool


#: Re-evaluates one chunk for this request's principal from stored data.
Recheck = Callable[[str], RecheckResult]


@dataclass(frozen=True, slots=True)
class AuthorizedSet:
    """The decision set of one request: the chunks its principal may send to a model."""

    user_id: str
    chunks: Mapping[str, str]  # chunk_id → doc_id
    corpora: frozenset[str]


def check_request(
    request: ChatRequest, authorized: AuthorizedSet, recheck: Recheck | None
) -> list[str]:
    """Every reason this request must not leave; empty means it may."""
    problems: list[str] = []
    rendered = "\n".join(m.content for m in request.messages)
    for snippet in request.snippets:
        problems.extend(_check_snippet(snippet, authorized, recheck, rendered))
    return problems


def _check_snippet(
    snippet: Snippet, authorized: AuthorizedSet, recheck: Recheck | None, rendered: str
) -> list[str]:
    where = f"{snippet.ref} ({snippet.chunk_id})"
    problems: list[str] = []
    if authorized.chunks.get(snippet.chunk_id) != snippet.doc_id:
        problems.append(f"{where}: not in this request's authorised set")
    if is_restricted(snippet.sensitivity):
        problems.append(f"{where}: RESTRICTED")
    if snippet.corpus not in authorized.corpora:
        problems.append(f"{where}: corpus {snippet.corpus!r} not allowed for this request")
    if recheck is not None:
        try:
            again = recheck(snippet.chunk_id)
        except ClearanceError as exc:
            problems.append(f"{where}: re-check failed ({exc.code})")
        else:
            if not again.allowed:
                problems.append(f"{where}: re-check denies")
            if again.restricted:
                problems.append(f"{where}: stored as RESTRICTED")
            if again.text != snippet.text:
                problems.append(f"{where}: text differs from the stored chunk")
    if f"[{snippet.ref}]" not in rendered:
        problems.append(f"{where}: not rendered under its label")
    return problems


class EgressGuard:
    """Wraps one provider; the only object in the package that may call it."""

    def __init__(self, provider: Provider) -> None:
        self._provider = provider
        self.blocked = 0

    @property
    def provider_name(self) -> str:
        return self._provider.name

    def complete(
        self, request: ChatRequest, authorized: AuthorizedSet, recheck: Recheck | None
    ) -> ChatResponse:
        problems = check_request(request, authorized, recheck)
        if problems:
            self.blocked += 1
            log.warning(
                "egress guard blocked a %s call for %d snippet problem(s): %s",
                request.purpose,
                len(problems),
                "; ".join(problems),
            )
            raise GuardError("internal_guard: " + "; ".join(problems))
        try:
            return self._provider.complete(request)
        except ClearanceError:
            raise
        except Exception as exc:  # a third-party provider's own error: translate, never leak
            raise ProviderError(
                f"provider {self._provider.name!r} failed: {type(exc).__name__}"
            ) from exc
