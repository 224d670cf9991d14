"""What the HTTP API and the browser UI both show, computed in one place so they cannot drift
apart: a document's preview and the assistants a caller may use.

A preview is a leak path: it is authorised exactly like retrieval, and a document that does
not exist and one the caller may not read look the same through both doors
(:data:`DOCUMENT_NOT_FOUND`).
"""

from __future__ import annotations

from typing import Any

from clearance.access.policy import Action
from clearance.api.errors import DOCUMENT_NOT_FOUND
from clearance.app import Clearance
from clearance.errors import ConfigError, NotFoundError
from clearance.model import Sensitivity

__all__ = ["PREVIEW_CHARS", "assistants_for", "preview"]

#: Characters of a document preview: enough to recognise it, not a copy of it.
PREVIEW_CHARS = 500


def preview(engine: Clearance, user_id: str, doc_id: str, assistant: str | None) -> dict[str, Any]:
    """The document as ``user_id`` may see it through ``assistant``, or
    :data:`DOCUMENT_NOT_FOUND` (absent and unreadable alike; an unknown assistant is a
    :class:`NotFoundError` naming it)."""
    access = engine.access()
    try:
        assistant_settings = access.assistant(assistant)
    except ConfigError as exc:
        raise NotFoundError(exc.message) from None
    # The same work whether the document exists or not, as far as it can be: who the caller
    # is is resolved first (a real-time check of an existing document still costs a round
    # trip an absent one does not; docs/server.md says so).
    principal = access.principal(user_id)
    found = engine.store.get_document(doc_id)
    if found is None:
        raise DOCUMENT_NOT_FOUND
    decision = access.decide(principal, Action.RETRIEVE, found, assistant_settings)
    if not decision.allow:
        raise DOCUMENT_NOT_FOUND
    # A chunk may be more sensitive than its document: preview only what was authorised.
    chunks = [
        c
        for c in engine.store.get_chunks(doc_id)
        if c.sensitivity <= found.sensitivity and c.sensitivity < Sensitivity.RESTRICTED
    ]
    text = " ".join(" ".join(c.text.split()) for c in chunks[:3])
    return {
        "doc_id": found.doc_id,
        "title": found.title,
        "uri": found.uri,
        "corpus": found.corpus,
        "sensitivity": found.sensitivity.name,
        "updated_at": found.updated_at.isoformat() if found.updated_at else None,
        "preview": text[:PREVIEW_CHARS],
        "preview_truncated": len(text) > PREVIEW_CHARS,
    }


def assistants_for(engine: Clearance, user_id: str) -> list[dict[str, Any]]:
    """The assistants ``user_id`` may use: every configured one for an active directory
    user, none for a disabled or unknown account."""
    if not engine.principal(user_id).active:
        return []
    return [
        {
            "name": a.name,
            "description": a.description,
            "corpora": list(a.corpora),
            "max_sensitivity": a.max_sensitivity.name,
        }
        for a in sorted(engine.settings.assistants.values(), key=lambda a: a.name)
    ]
