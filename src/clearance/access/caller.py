"""The caller: one person, asking through one assistant, under one policy snapshot.

Built once per request by :meth:`clearance.runtime.Runtime.caller`, it is what every read
on somebody's behalf goes through: :meth:`Caller.filter` is the search filter compiled
from the policy (docs/design.md §2), and :meth:`Caller.decide` the per-document decision
with its reasons. Nothing else in the request resolves principals or ceilings again, so a
search and the checks after it judge the same snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from clearance.access.policy import AccessControl, Action, Decision, Principal, Reason
from clearance.config import AssistantSettings
from clearance.model import Document
from clearance.store.base import SearchFilter, Store

__all__ = ["Caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    user_id: str
    principal: Principal
    assistant: AssistantSettings | None
    policy: AccessControl

    @classmethod
    def resolve(cls, policy: AccessControl, user_id: str, assistant: str | None) -> Caller:
        """The caller ``user_id`` through assistant ``assistant`` (an unknown or missing
        assistant raises :class:`~clearance.errors.ConfigError`, see
        :meth:`AccessControl.assistant`)."""
        return cls(user_id, policy.principal(user_id), policy.assistant(assistant), policy)

    @property
    def refused(self) -> str | None:
        """Why nothing may be read at all (``unknown_user``, ``account_disabled``), or None."""
        if not self.principal.known:
            return Reason.UNKNOWN_USER.value
        if not self.principal.active:
            return Reason.ACCOUNT_DISABLED.value
        return None

    def filter(self, action: Action, corpora: Iterable[str]) -> SearchFilter:
        """The store filter for ``action`` over the index's ``corpora``."""
        return self.policy.search_filter(self.principal, self.assistant, corpora, action=action)

    def decide(
        self, action: Action, document: Document, *, now: datetime | None = None
    ) -> Decision:
        """May this caller take ``action`` on ``document`` now (or at ``now``, the moment
        the request's filter was compiled for)? With the reasons."""
        return self.policy.decide(self.principal, action, document, self.assistant, now=now)

    def document(
        self, store: Store, doc_id: str, action: Action = Action.RETRIEVE
    ) -> Document | None:
        """Document ``doc_id`` if this caller may take ``action`` on it now, else None —
        absent and unreadable alike. Rules 1–8 decide as retrieval compiles them, inside
        the store's query, before the document is read; :meth:`decide` then confirms them
        and asks the source system (rule 9) about an admitted document only."""
        flt = replace(self.filter(action, store.corpora()), doc_ids=frozenset({doc_id}))
        if doc_id not in store.allowed_doc_ids(flt):
            return None
        found = store.get_document(doc_id)
        if found is None or not self.decide(action, found).allow:
            return None
        return found
