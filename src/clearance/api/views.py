"""What the HTTP API and the browser UI both show, computed in one place so they cannot drift
apart: a document's preview and the assistants a caller may use.

A preview is a leak path: it is authorised exactly like retrieval, and a document that does
not exist and one the caller may not read look the same through both doors
(:data:`DOCUMENT_NOT_FOUND`). They also cost the same work: the id is first looked up in the
caller's allowed set — the search filter compiled from the access rules, one store query —
and nothing about a document is read unless that set holds it. So the store runs the same
statements for an absent document and a hidden one, and the access decision with its
real-time check runs only for a document the caller's permissions admit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.convertors import Convertor, register_url_convertor

from clearance.access.policy import Action
from clearance.api.errors import DOCUMENT_NOT_FOUND
from clearance.app import Clearance
from clearance.errors import ConfigError, NotFoundError

__all__ = ["PREVIEW_CHARS", "DocumentId", "assistants_for", "preview"]

#: Characters of a document preview: enough to recognise it, not a copy of it.
PREVIEW_CHARS = 500


class DocumentId(Convertor[str]):
    """A document id in a route (``{doc_id:document_id}``): the rest of the path, exactly.
    Starlette's ``path`` convertor leaves a final newline outside the id, since its route
    pattern ends in ``$``, which also matches before a trailing newline: ``/documents/a%0a``
    was served as ``a``. This one takes every character, newlines included."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("document_id", DocumentId())


def preview(engine: Clearance, user_id: str, doc_id: str, assistant: str | None) -> dict[str, Any]:
    """The document as ``user_id`` may see it through ``assistant``, or
    :data:`DOCUMENT_NOT_FOUND` (absent and unreadable alike; an unknown assistant is a
    :class:`NotFoundError` naming it)."""
    access = engine.access()
    try:
        assistant_settings = access.assistant(assistant)
    except ConfigError as exc:
        raise NotFoundError(exc.message) from None
    # Rules 1-8 as retrieval compiles them decide before the document is read; the decision
    # then confirms them and asks the source system (rule 9) about an admitted document only.
    principal = access.principal(user_id)
    allowed = access.search_filter(principal, assistant_settings, engine.store.corpora())
    allowed = replace(allowed, doc_ids=frozenset({doc_id}))
    if doc_id not in engine.store.allowed_doc_ids(allowed):
        raise DOCUMENT_NOT_FOUND
    found = engine.store.get_document(doc_id)
    if (
        found is None
        or not access.decide(principal, Action.RETRIEVE, found, assistant_settings).allow
    ):
        raise DOCUMENT_NOT_FOUND
    # A chunk may be more sensitive than its document: preview only what was authorised.
    chunks = [
        c
        for c in engine.store.get_chunks(doc_id)
        if c.sensitivity <= found.sensitivity and allowed.admits(found, c)
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
