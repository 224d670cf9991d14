"""Rows as both stores write and read them: one definition of a document's columns, of
what an upsert must satisfy, and of how a stored row becomes a model object again."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from clearance.errors import StoreError
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import Vector

__all__ = [
    "CHUNK_SELECT",
    "DOC_COLUMNS",
    "FACT_SELECT",
    "check_upsert",
    "chunk_from_row",
    "document_from_row",
    "document_row",
    "epoch",
    "fact_from_row",
    "fact_row",
    "from_epoch",
    "merge_patch",
]

DOC_COLUMNS = (
    "doc_id, source_system, corpus, title, uri, owner, sensitivity, created_at, updated_at, "
    "review_at, expires_at, ai_allowed, personal_data, origin, origin_chain, content_hash, "
    "version, path, format, extra"
)


def epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def from_epoch(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def check_upsert(
    document: Document,
    chunks: Sequence[Chunk],
    vectors: Sequence[Vector | None] | None,
    facts: Sequence[Fact],
) -> set[int]:
    """Refuse a write no store may hold, naming the document; returns the vectors' widths
    (one at most)."""
    if vectors is not None and len(vectors) != len(chunks):
        raise StoreError(f"{document.doc_id}: {len(chunks)} chunks but {len(vectors)} vectors")
    for chunk in chunks:
        if chunk.doc_id != document.doc_id:
            raise StoreError(f"chunk {chunk.chunk_id} does not belong to {document.doc_id}")
        if chunk.sensitivity < document.sensitivity:
            raise StoreError(f"chunk {chunk.chunk_id} is less sensitive than its document")
    # Facts are visible exactly where their document is: each must belong to it.
    for fact in facts:
        if fact.doc_id != document.doc_id:
            raise StoreError(f"a fact at {fact.locator} does not belong to {document.doc_id}")
    # One index holds one vector space: a row of another width would break every later
    # vector search, so it is refused here, naming the document.
    import numpy as np  # loaded with the first write, not with every command

    for i, vector in enumerate(vectors or ()):
        if vector is not None and not np.isfinite(np.asarray(vector, dtype=np.float32)).all():
            raise StoreError(f"{document.doc_id}: the vector of chunk {i} is not finite")
    dims = {int(np.asarray(v).size) for v in vectors or () if v is not None}
    if len(dims) > 1:
        raise StoreError(f"{document.doc_id}: vectors of different dimensions {sorted(dims)}")
    return dims


def document_row(document: Document) -> tuple[Any, ...]:
    """The values of :data:`DOC_COLUMNS`, in order (booleans as 0/1)."""
    return (
        document.doc_id,
        document.source_system,
        document.corpus,
        document.title,
        document.uri,
        document.owner,
        int(document.sensitivity),
        epoch(document.created_at),
        epoch(document.updated_at),
        epoch(document.review_at),
        epoch(document.expires_at),
        int(document.ai_allowed),
        int(document.personal_data),
        document.origin,
        json.dumps(list(document.origin_chain)),
        document.content_hash,
        document.version,
        document.path,
        document.format,
        json.dumps(dict(document.extra), sort_keys=True),
    )


def document_from_row(row: Sequence[Any], acl: frozenset[str]) -> Document:
    """A document from the values of :data:`DOC_COLUMNS` and its ACL."""
    return Document(
        doc_id=row[0],
        source_system=row[1],
        corpus=row[2],
        title=row[3],
        uri=row[4],
        owner=row[5],
        acl=acl,
        sensitivity=Sensitivity(row[6]),
        created_at=from_epoch(row[7]),
        updated_at=from_epoch(row[8]),
        review_at=from_epoch(row[9]),
        expires_at=from_epoch(row[10]),
        ai_allowed=bool(row[11]),
        personal_data=bool(row[12]),
        origin=row[13],
        origin_chain=tuple(json.loads(row[14])),
        content_hash=row[15],
        version=row[16],
        path=row[17],
        format=row[18],
        extra=json.loads(row[19]),
    )


#: The chunks' columns as :func:`chunk_from_row` reads them (both backends select them so).
CHUNK_SELECT = (
    "SELECT c.chunk_id, d.doc_id, c.ordinal, c.text, c.locator, c.sensitivity, c.origin "
    "FROM chunks c JOIN documents d ON d.key = c.doc_key"
)
#: The facts' columns as :func:`fact_from_row` reads them.
FACT_SELECT = (
    "SELECT d.doc_id, f.entity, f.period, f.metric, f.channel, f.value, f.unit, f.locator, "
    "f.raw FROM facts f JOIN documents d ON d.key = f.doc_key"
)


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """``(chunk_id, doc_id, ordinal, text, locator, sensitivity, origin)`` → a chunk."""
    return Chunk(
        chunk_id=row[0],
        doc_id=row[1],
        ordinal=row[2],
        text=row[3],
        locator=row[4],
        sensitivity=Sensitivity(row[5]),
        origin=row[6],
    )


def fact_from_row(row: Sequence[Any]) -> Fact:
    """``(doc_id, entity, period, metric, channel, value, unit, locator, raw)`` → a fact."""
    return Fact(
        entity=row[1],
        period=row[2],
        metric=row[3],
        channel=row[4],
        value=float(row[5]),
        unit=row[6],
        doc_id=row[0],
        locator=row[7],
        raw=row[8],
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch (SQLite's ``json_patch``): objects merge key by key, a
    ``None`` value removes its key, anything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def fact_row(doc_key: int | None, fact: Fact) -> tuple[Any, ...]:
    """The ``facts`` columns after ``doc_key`` (entity, period, metric, channel, value,
    unit, raw, locator), as both stores insert them."""
    return (
        doc_key,
        fact.entity,
        fact.period,
        fact.metric,
        fact.channel,
        float(fact.value),
        fact.unit,
        fact.raw,
        fact.locator,
    )
