"""``authorize()``: who may do what with which document, as a decision with reasons.

Every rule below is evaluated; the decision allows only if **no** rule denies (deny wins),
and a rule that raises is itself a deny (``rule_error``) — unlike authorizers that skip an
erroring policy. The same rules compile into the store's :class:`SearchFilter`
(:meth:`AccessControl.search_filter`), so retrieval only ever runs inside the allowed set.

=====  ==========================  ==============================================  =========
order  rule                        denies when                                     actions
=====  ==========================  ==============================================  =========
1      identity                    user unknown (``unknown_user``) or disabled      all
                                   (``account_disabled``)
2      assistant scope             the document's corpus is not one the assistant   all
                                   may read (``corpus_not_in_assistant``)
3      freshness                   the corpus's last ACL sync is older than its     all
                                   revocation SLA, or never happened
                                   (``corpus_stale``)
4      ceiling                     sensitivity above min(corpus ceiling,            all
                                   assistant ceiling) (``above_ceiling``)
5      restricted                  the document is RESTRICTED (``restricted``)      retrieve
6      expiry                      ``expires_at`` is not in the future              all
                                   (``expired``)
7      AI use                      ``ai_allowed`` is false (``ai_not_allowed``)     retrieve
8      ACL                         no ACL at all (``no_acl``) or no principal of    all
                                   the user's set is in it (``not_in_acl``)
9      real-time check             the source system denies (``realtime_denied``)   retrieve
                                   or cannot answer (``realtime_error``)
=====  ==========================  ==============================================  =========

``retrieve`` is what answers use (the text may enter a prompt). ``view`` is naming a
document (title and link) to someone allowed to read it: RESTRICTED documents can be named
to their readers but never retrieved.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clearance.access.directory import Directory
from clearance.access.realtime import PermissionChecker, RealtimeOutcome
from clearance.config import AssistantSettings, Settings
from clearance.errors import AccessDenied, ConfigError
from clearance.model import Document, Sensitivity
from clearance.store.base import SearchFilter

__all__ = [
    "AccessControl",
    "Action",
    "CorpusFreshness",
    "Decision",
    "Principal",
    "Reason",
    "authorize",
    "ensure_authorized",
]


class Action(enum.Enum):
    RETRIEVE = "retrieve"
    VIEW = "view"


class Reason(enum.Enum):
    ALLOWED = "allowed"
    UNKNOWN_USER = "unknown_user"
    ACCOUNT_DISABLED = "account_disabled"
    CORPUS_NOT_IN_ASSISTANT = "corpus_not_in_assistant"
    CORPUS_STALE = "corpus_stale"
    ABOVE_CEILING = "above_ceiling"
    RESTRICTED = "restricted"
    EXPIRED = "expired"
    AI_NOT_ALLOWED = "ai_not_allowed"
    NO_ACL = "no_acl"
    NOT_IN_ACL = "not_in_acl"
    REALTIME_DENIED = "realtime_denied"
    REALTIME_ERROR = "realtime_error"
    RULE_ERROR = "rule_error"


@dataclass(frozen=True, slots=True)
class Principal:
    """A resolved caller: ``principals`` is empty for unknown or disabled users."""

    user_id: str
    known: bool
    active: bool
    principals: frozenset[str]
    attributes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def resolve(cls, directory: Directory, user_id: str) -> Principal:
        user = directory.users.get(user_id)
        if user is None:
            return cls(user_id, known=False, active=False, principals=frozenset())
        return cls(
            user_id,
            known=True,
            active=user.active,
            principals=directory.principal_set(user_id),
            attributes=dict(user.attributes),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """``allow`` is true only when ``reasons == (Reason.ALLOWED,)``."""

    allow: bool
    reasons: tuple[Reason, ...]
    details: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "allow": self.allow,
            "reasons": [r.value for r in self.reasons],
            "details": list(self.details),
        }


@dataclass(frozen=True, slots=True)
class CorpusFreshness:
    corpus: str
    last_sync: datetime | None
    sla_seconds: float

    def stale(self, now: datetime) -> bool:
        """Fail closed: never synced, or synced longer ago than the SLA (or in the future)."""
        if self.last_sync is None:
            return True
        age = (now - self.last_sync).total_seconds()
        # Compared as floats (no timedelta overflow), and negated so that an SLA that is not
        # a number counts as stale.
        return not (-60 <= age <= self.sla_seconds)


Rule = Callable[[], tuple[Reason, str] | None]


def authorize(
    principal: Principal,
    action: Action,
    document: Document,
    *,
    assistant: AssistantSettings | None,
    corpus_ceiling: Sensitivity,
    freshness: CorpusFreshness,
    now: datetime,
    realtime: Callable[[], RealtimeOutcome | None] | None = None,
) -> Decision:
    """Evaluate every rule of the module table; deny wins; an erroring rule denies.

    ``realtime`` is rule 9's question to the source system (``None``: the corpus needs no
    real-time check); only an ALLOWED outcome lets the document through."""

    def identity() -> tuple[Reason, str] | None:
        if not principal.known:
            return Reason.UNKNOWN_USER, f"user {principal.user_id!r} is not in the directory"
        if not principal.active:
            return Reason.ACCOUNT_DISABLED, f"user {principal.user_id!r} is disabled"
        return None

    def scope() -> tuple[Reason, str] | None:
        if assistant is not None and document.corpus not in assistant.corpora:
            return (
                Reason.CORPUS_NOT_IN_ASSISTANT,
                f"assistant {assistant.name!r} does not read corpus {document.corpus!r}",
            )
        return None

    def fresh() -> tuple[Reason, str] | None:
        if freshness.stale(now):
            last = freshness.last_sync.isoformat() if freshness.last_sync else "never"
            return (
                Reason.CORPUS_STALE,
                f"corpus {document.corpus!r} last ACL sync {last}, SLA {freshness.sla_seconds:g}s",
            )
        return None

    def within_ceiling() -> tuple[Reason, str] | None:
        ceiling = corpus_ceiling
        if assistant is not None:
            ceiling = min(ceiling, assistant.max_sensitivity)
        if document.sensitivity > ceiling:
            return (
                Reason.ABOVE_CEILING,
                f"{document.sensitivity.name} is above the ceiling {ceiling.name}",
            )
        return None

    def restricted() -> tuple[Reason, str] | None:
        if action is Action.RETRIEVE and document.sensitivity >= Sensitivity.RESTRICTED:
            return Reason.RESTRICTED, "RESTRICTED text never enters a prompt"
        return None

    def expiry() -> tuple[Reason, str] | None:
        if document.expires_at is not None and document.expires_at <= now:
            return Reason.EXPIRED, f"expired at {document.expires_at.isoformat()}"
        return None

    def ai_use() -> tuple[Reason, str] | None:
        if action is Action.RETRIEVE and not document.ai_allowed:
            return Reason.AI_NOT_ALLOWED, "the document is marked ai_allowed = false"
        return None

    def acl() -> tuple[Reason, str] | None:
        if not document.acl:
            return Reason.NO_ACL, "the document has no ACL, so nobody may read it"
        if not (document.acl & principal.principals):
            return Reason.NOT_IN_ACL, "none of the user's principals is in the document's ACL"
        return None

    def realtime_rule() -> tuple[Reason, str] | None:
        if action is not Action.RETRIEVE or realtime is None:
            return None
        outcome = realtime()
        if outcome is RealtimeOutcome.ALLOWED:
            return None
        if outcome is RealtimeOutcome.DENIED:
            return Reason.REALTIME_DENIED, "the source system denied access just now"
        return Reason.REALTIME_ERROR, "the source system could not confirm access"

    rules: Iterable[Rule] = (
        identity,
        scope,
        fresh,
        within_ceiling,
        restricted,
        expiry,
        ai_use,
        acl,
        realtime_rule,
    )
    reasons: list[Reason] = []
    details: list[str] = []
    for rule in rules:
        try:
            denied = rule()
        except Exception as exc:  # an erroring rule is a deny, never a skip
            denied = (Reason.RULE_ERROR, f"{rule.__name__} failed: {type(exc).__name__}")
        if denied is not None:
            reasons.append(denied[0])
            details.append(denied[1])
    if reasons:
        return Decision(False, tuple(reasons), tuple(details))
    return Decision(True, (Reason.ALLOWED,), ())


def ensure_authorized(decision: Decision) -> None:
    """Raise :class:`AccessDenied` unless the decision allows."""
    if not decision.allow:
        raise AccessDenied(
            "access denied: " + ", ".join(r.value for r in decision.reasons), decision
        )


class AccessControl:
    """Binds settings, the directory and corpus sync state into decisions and filters."""

    def __init__(
        self,
        settings: Settings,
        directory: Directory,
        last_syncs: Mapping[str, datetime],
        *,
        checkers: Mapping[str, PermissionChecker] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.settings = settings
        self.directory = directory
        self.last_syncs = dict(last_syncs)
        self.checkers = dict(checkers or {})
        self.clock = clock

    def principal(self, user_id: str) -> Principal:
        return Principal.resolve(self.directory, user_id)

    def assistant(self, name: str | None) -> AssistantSettings | None:
        """The named assistant; ``None`` (no assistant: every corpus, each under its own
        ceiling) unless ``[access] require_assistant``, when naming none is refused like
        naming an unknown one."""
        if name is None:
            if self.settings.access.require_assistant:
                known = ", ".join(sorted(self.settings.assistants))
                raise ConfigError(
                    f"an assistant is required ([access] require_assistant; configured: {known})"
                )
            return None
        found = self.settings.assistants.get(name)
        if found is None:
            raise ConfigError(f"unknown assistant {name!r}")
        return found

    def freshness(self, corpus: str) -> CorpusFreshness:
        return CorpusFreshness(
            corpus, self.last_syncs.get(corpus), self.settings.corpus(corpus).revocation_sla_s
        )

    def decide(
        self,
        principal: Principal,
        action: Action,
        document: Document,
        assistant: AssistantSettings | None = None,
        *,
        now: datetime | None = None,
    ) -> Decision:
        checker = self.checkers.get(document.corpus)
        realtime: Callable[[], RealtimeOutcome | None] | None = None
        if checker is not None:

            def realtime() -> RealtimeOutcome | None:
                result = checker.check(principal.user_id, [document.doc_id]).get(document.doc_id)
                return RealtimeOutcome.ERROR if result is None else result.outcome

        return authorize(
            principal,
            action,
            document,
            assistant=assistant,
            corpus_ceiling=self.settings.corpus(document.corpus).max_sensitivity,
            freshness=self.freshness(document.corpus),
            now=now or self.clock(),
            realtime=realtime,
        )

    def search_filter(
        self,
        principal: Principal,
        assistant: AssistantSettings | None,
        known_corpora: Iterable[str],
        *,
        action: Action = Action.RETRIEVE,
        now: datetime | None = None,
    ) -> SearchFilter:
        """Compile rules 1–8 into a store filter (rule 9 runs per candidate afterwards,
        as it needs the source system; it can only remove documents)."""
        now = now or self.clock()
        principals = principal.principals if principal.active else frozenset()
        names = set(assistant.corpora) if assistant is not None else set(known_corpora)
        names |= set() if assistant is not None else set(self.settings.corpora)
        global_ceiling = (
            Sensitivity.RESTRICTED if action is Action.VIEW else Sensitivity.CONFIDENTIAL
        )
        if assistant is not None:
            global_ceiling = min(global_ceiling, assistant.max_sensitivity)
        corpora = {
            name: self.settings.corpus(name).max_sensitivity
            for name in sorted(names)
            if not self.freshness(name).stale(now)
        }
        return SearchFilter(
            principals=principals,
            corpora=corpora,
            max_sensitivity=global_ceiling,
            now=now,
            require_ai_allowed=action is Action.RETRIEVE,
        )
