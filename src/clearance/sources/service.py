"""Configured sources, run and reported: what ``clearance source …``, ``clearance sync`` and
the scheduler call.

Status is built here only (``clearance source status --json`` and the scheduler's log use
it): per source, the last content and permission syncs, the lag against the corpus's
revocation SLA, the last error, the documents it keeps visible to nobody and why, and the
principals its ACLs name that the directory does not know. Nothing in it carries a
credential: settings hold environment variable *names*, and status shows none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clearance.access.directory import unknown_principal_warning
from clearance.access.ownership import BLOCKED_KEY, owner_of
from clearance.config import SourceSettings
from clearance.errors import ClearanceError, NotFoundError
from clearance.runtime import Runtime
from clearance.sources.state import SourceState, StateTable

if TYPE_CHECKING:
    # The connector protocols load with subscriptions, not with `clearance status`.
    from clearance.sources.base import Subscription
    from clearance.sources.sync import SourceSync, SyncReport

__all__ = [
    "SUBSCRIPTION_KEY",
    "configured_source",
    "notified_sync",
    "renew_subscription",
    "source_status",
    "source_summary",
    "stored_subscription",
    "subscription_due",
    "sync_source",
]

#: How many documents visible to nobody status lists by name (all are counted).
_SHOWN_BLOCKED = 20


def configured_source(runtime: Runtime, name: str) -> SourceSettings:
    """``[sources.<name>]``, or :class:`NotFoundError` listing the configured ones."""
    source = runtime.settings.sources.get(name)
    if source is None:
        known = ", ".join(sorted(runtime.settings.sources)) or "none"
        raise NotFoundError(f"no source {name!r} is configured (configured: {known})")
    return source


def sync_source(
    runtime: Runtime,
    name: str,
    *,
    content: bool = True,
    permissions: bool = True,
    on_progress: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[SyncReport]:
    """Build the source's connector and run its syncs. A connector that cannot even be
    built (a missing credential, a bad option) fails every requested sync, and the source
    is recorded failing, like any other sync failure."""
    with _engine(runtime, name, on_progress, env) as engine:
        return engine.run(content=content, permissions=permissions)


def notified_sync(
    runtime: Runtime,
    name: str,
    doc_ids: Iterable[str] | None,
    *,
    on_progress: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> SyncReport:
    """The sync a notification asked for: a targeted permission sync of ``doc_ids``; when
    ``None`` (the source did not say what changed), a targeted sync of what the connector's
    change feed names, or a full permission sync (:meth:`SourceSync.from_feed`). A connector
    that cannot be built fails it, as in :func:`sync_source`."""
    with _engine(runtime, name, on_progress, env) as engine:
        return engine.from_feed() if doc_ids is None else engine.targeted(doc_ids)


@contextmanager
def _engine(
    runtime: Runtime,
    name: str,
    on_progress: Callable[[str], None] | None,
    env: Mapping[str, str] | None,
) -> Iterator[SourceSync]:
    """The sync engine of source ``name``, its connector closed afterwards. A connector that
    cannot be built records the source failing, and is raised."""
    source = configured_source(runtime, name)
    try:
        from clearance.sources.registry import build_connector  # the connectors load here
        from clearance.sources.sync import SourceSync

        connector = build_connector(runtime.settings, source, env)
    except ClearanceError as exc:
        StateTable(runtime.store).failed(name, exc.message, runtime.clock())
        raise
    try:
        yield SourceSync(runtime, source, connector, on_progress=on_progress)
    finally:
        connector.close()


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _condition(
    source: SourceSettings | None, state: SourceState | None, lag: float | None, sla_s: float
) -> str:
    if source is None:
        return "not_configured"
    if state is not None and state.failing:
        return "failing"
    if lag is None:
        return "never_synced"
    return "behind" if lag > sla_s else "ok"


def source_summary(runtime: Runtime) -> list[dict[str, Any]]:
    """Per configured source, what the general status shows: kind, corpus, the last syncs,
    the permission lag against the corpus's revocation SLA, and whether (and why) it is
    failing. Read from the source state table and settings only — unlike
    :func:`source_status`, it never lists the index's documents, so ``GET /v1/status``
    stays cheap on a large index. Never a credential: settings hold variable names, and
    none is shown."""
    now = runtime.clock()
    states = StateTable(runtime.store).all()
    out = []
    for name, source in sorted(runtime.settings.sources.items()):
        state = states.get(name)
        sla_s = runtime.settings.corpus(source.corpus).revocation_sla_s
        synced = state.permission_synced_at if state else None
        lag = None if synced is None else round((now - synced).total_seconds(), 3)
        condition = _condition(source, state, lag, sla_s)
        out.append(
            {
                "source": name,
                "kind": source.kind,
                "corpus": source.corpus,
                "state": condition,
                "failing": condition == "failing",
                "last_content_sync": _iso(state.content_synced_at if state else None),
                "last_permission_sync": _iso(synced),
                "lag_seconds": lag,
                "revocation_sla_seconds": sla_s,
                "last_error": state.last_error if state else None,
            }
        )
    return out


def source_status(runtime: Runtime) -> list[dict[str, Any]]:
    """One entry per configured source (and per source still owning documents after it
    left the configuration), sorted by name."""
    now = runtime.clock()
    states = StateTable(runtime.store).all()
    syncs = runtime.store.last_acl_syncs()
    directory = runtime.directory
    owned: dict[str, list[Any]] = {}
    for document in runtime.store.list_documents():
        owner = owner_of(document)
        if owner is not None:
            owned.setdefault(owner, []).append(document)
    out = []
    for name in sorted(set(runtime.settings.sources) | set(owned)):
        source = runtime.settings.sources.get(name)
        state = states.get(name)
        documents = owned.get(name, [])
        corpus_name = source.corpus if source else (documents[0].corpus if documents else "")
        corpus = runtime.settings.corpus(corpus_name)
        permission_synced = state.permission_synced_at if state else None
        lag = None if permission_synced is None else (now - permission_synced).total_seconds()
        corpus_synced = syncs.get(corpus_name)
        failing_closed = (
            corpus_synced is None or (now - corpus_synced).total_seconds() > corpus.revocation_sla_s
        )
        blocked = sorted(
            (d.doc_id, str(d.extra[BLOCKED_KEY])) for d in documents if d.extra.get(BLOCKED_KEY)
        )
        unknown = directory.unknown_principals(p for d in documents for p in d.acl)
        condition = _condition(source, state, lag, corpus.revocation_sla_s)
        warnings = [unknown_principal_warning(p) for p in unknown]
        if failing_closed and documents:
            warnings.append(
                f"corpus {corpus_name!r} is past its revocation SLA: it serves nobody until a "
                "complete permission sync"
            )
        out.append(
            {
                "source": name,
                "kind": source.kind if source else None,
                "corpus": corpus_name,
                "state": condition,
                "documents": len(documents),
                "last_content_sync": _iso(state.content_synced_at if state else None),
                "last_permission_sync": _iso(permission_synced),
                "lag_seconds": None if lag is None else round(lag, 3),
                "revocation_sla_seconds": corpus.revocation_sla_s,
                "corpus_failing_closed": failing_closed,
                "content_interval_seconds": source.content_interval_s if source else None,
                "permission_interval_seconds": source.permission_interval_s if source else None,
                "last_error": state.last_error if state else None,
                "failing_since": _iso(state.failing_since if state else None),
                "visible_to_nobody": len(blocked),
                "visible_to_nobody_examples": [
                    {"doc_id": d, "reason": r} for d, r in blocked[:_SHOWN_BLOCKED]
                ],
                "unknown_principals": unknown,
                "warnings": warnings,
            }
        )
    return out


#: Where in the source's state its notification subscription is kept.
SUBSCRIPTION_KEY = "subscription"


def stored_subscription(runtime: Runtime, name: str) -> tuple[Subscription, datetime] | None:
    """The source's current subscription and when it was made, as kept in its state."""
    from clearance.sources.base import Subscription

    raw = StateTable(runtime.store).get(name).stats.get(SUBSCRIPTION_KEY)
    if not isinstance(raw, dict):
        return None
    try:
        made = Subscription(
            str(raw["id"]), datetime.fromisoformat(raw["expires_at"]), dict(raw["state"])
        )
        return made, datetime.fromisoformat(raw["created_at"])
    except (KeyError, TypeError, ValueError):
        return None  # unreadable: subscribe again


def subscription_due(runtime: Runtime, name: str, now: datetime) -> bool:
    """Whether source ``name`` should subscribe now: it has a ``notification_url`` and no
    subscription, or its subscription has less than a quarter of its lifetime left."""
    source = runtime.settings.sources.get(name)
    if source is None or source.notification_url is None:
        return False
    stored = stored_subscription(runtime, name)
    if stored is None:
        return True
    current, created = stored
    return now >= current.expires_at - (current.expires_at - created) / 4


def renew_subscription(
    runtime: Runtime, name: str, env: Mapping[str, str] | None = None
) -> Subscription | None:
    """Create or renew source ``name``'s notification subscription and keep it in the
    source's state; ``None`` when its connector does not subscribe itself (the operator
    registers the webhook at the source). Raises what the connector raised: the current
    subscription is kept, and the scheduled syncs keep the corpus fresh meanwhile."""
    source = configured_source(runtime, name)
    if source.notification_url is None:
        return None
    from clearance.sources.base import Subscribing
    from clearance.sources.registry import build_connector  # the connectors load here

    connector = build_connector(runtime.settings, source, env)
    try:
        if not isinstance(connector, Subscribing):
            return None
        stored = stored_subscription(runtime, name)
        now = runtime.clock()
        made = connector.subscribe(source.notification_url, None if stored is None else stored[0])
    finally:
        connector.close()
    kept = {
        "id": made.id,
        "expires_at": made.expires_at.isoformat(),
        "created_at": now.isoformat(),
        "state": dict(made.state),
    }
    StateTable(runtime.store).update(name, stats={SUBSCRIPTION_KEY: kept})
    return made
