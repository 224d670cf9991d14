"""Builders of model values for tests: a ``Document`` with every field, and its chunks.

``Document`` has no defaults on purpose: production code must state every security-relevant
field. A test states the fields it is about and takes the rest from here::

    doc = document("wiki:plan", acl={"user:ann"}, sensitivity=Sensitivity.CONFIDENTIAL)
    store.upsert(doc, chunks(doc, ["Revenue plan", "Margins"]))

Defaults: readable by everyone, INTERNAL, AI use allowed, no personal data, written by a
human, in the corpus ``default``, never reviewed or expiring. ``source_system``, ``uri`` and
``content_hash`` are derived from ``doc_id``; a chunk inherits its document's sensitivity and
origin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any

from clearance.model import EVERYONE, Chunk, Document, Sensitivity

__all__ = ["chunk", "chunks", "document"]


def document(
    doc_id: str,
    *,
    source_system: str | None = None,
    corpus: str = "default",
    title: str = "",
    uri: str | None = None,
    owner: str | None = None,
    acl: AbstractSet[str] = frozenset({EVERYONE}),
    sensitivity: Sensitivity = Sensitivity.INTERNAL,
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    review_at: datetime | None = None,
    expires_at: datetime | None = None,
    ai_allowed: bool = True,
    personal_data: bool = False,
    origin: str = "human",
    origin_chain: Sequence[str] = (),
    content_hash: str | None = None,
    version: int = 1,
    path: str | None = None,
    format: str = "txt",
    extra: Mapping[str, Any] | None = None,
) -> Document:
    """A document with every field set.

    Derived unless given: ``source_system`` is the part of ``doc_id`` before its first ``:``
    (an id without one must name it), ``uri`` is ``https://example.test/<doc_id>`` and
    ``content_hash`` is ``h-<doc_id>``. ``acl`` may be any set (stored as a frozenset; an
    empty one means nobody). ``sensitivity`` is passed through as given, so a test may
    hand in a raw label on purpose.
    """
    if source_system is None:
        prefix, colon, _ = doc_id.partition(":")
        if not colon:
            raise ValueError(f"doc_id {doc_id!r} has no 'source:' prefix: pass source_system")
        source_system = prefix
    return Document(
        doc_id=doc_id,
        source_system=source_system,
        corpus=corpus,
        title=title,
        uri=f"https://example.test/{doc_id}" if uri is None else uri,
        owner=owner,
        acl=frozenset(acl),
        sensitivity=sensitivity,
        created_at=created_at,
        updated_at=updated_at,
        review_at=review_at,
        expires_at=expires_at,
        ai_allowed=ai_allowed,
        personal_data=personal_data,
        origin=origin,
        origin_chain=tuple(origin_chain),
        content_hash=f"h-{doc_id}" if content_hash is None else content_hash,
        version=version,
        path=path,
        format=format,
        extra={} if extra is None else extra,
    )


def chunk(
    doc: Document,
    text: str,
    *,
    ordinal: int = 0,
    locator: str | None = None,
    sensitivity: Sensitivity | None = None,
    origin: str | None = None,
) -> Chunk:
    """Chunk ``ordinal`` of ``doc``: id ``<doc_id>#<ordinal>``, locator ``section=<ordinal + 1>``
    and the document's sensitivity and origin unless given."""
    return Chunk(
        chunk_id=f"{doc.doc_id}#{ordinal}",
        doc_id=doc.doc_id,
        ordinal=ordinal,
        text=text,
        locator=f"section={ordinal + 1}" if locator is None else locator,
        sensitivity=doc.sensitivity if sensitivity is None else sensitivity,
        origin=doc.origin if origin is None else origin,
    )


def chunks(
    doc: Document,
    texts: Iterable[str],
    *,
    locator: str = "section={n}",
    sensitivity: Sensitivity | None = None,
) -> list[Chunk]:
    """One chunk of ``doc`` per text, numbered from 0.

    ``locator`` is a template: ``{i}`` is the chunk's ordinal, ``{n}`` the ordinal + 1
    (so the default gives ``section=1``, ``section=2``, …; ``"page=1"`` is the same for all).
    """
    return [
        chunk(doc, text, ordinal=i, locator=locator.format(i=i, n=i + 1), sensitivity=sensitivity)
        for i, text in enumerate(texts)
    ]
