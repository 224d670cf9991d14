"""Small builders shared by the conformance tests."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import numpy as np

from clearance.llm.embedding import HashingEmbedder
from clearance.model import Document, Fact, Sensitivity
from clearance.store.base import SearchFilter, Vector

JST = timezone(timedelta(hours=9))
EVERYONE = frozenset({"everyone"})
TEXTS = ["Revenue grew in the third quarter.", "Costs fell in Tokyo.", "東京の売上高"]
EMBEDDER = HashingEmbedder(dim=32)


def make_doc(doc_id: str = "files:a.md", **changes: object) -> Document:
    """A document with every field set to something other than its default."""
    doc = Document(
        doc_id=doc_id,
        source_system="files",
        corpus="wiki",
        title="Quarterly report",
        uri="https://example.test/a",
        owner="alice",
        acl=frozenset({"group:finance", "user:bob"}),
        sensitivity=Sensitivity.INTERNAL,
        created_at=datetime(2024, 1, 2, 9, 30, tzinfo=JST),
        updated_at=datetime(2024, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        review_at=datetime(2025, 1, 1, tzinfo=UTC),
        expires_at=datetime(2099, 12, 31, 23, 59, tzinfo=UTC),
        ai_allowed=True,
        personal_data=True,
        origin="human",
        origin_chain=("email", "human"),
        content_hash="hash-1",
        version=3,
        path="/docs/a.md",
        format="md",
        extra={"meta_hash": "m1", "nested": {"n": [1, 2]}},
    )
    return dataclasses.replace(doc, **changes)  # type: ignore[arg-type]


def vectors(texts: list[str]) -> list[Vector | None]:
    return list(EMBEDDER.embed(texts))


def vector(text: str) -> Vector:
    return EMBEDDER.embed([text])[0]


def everyone_filter(**changes: object) -> SearchFilter:
    """Everyone, finance and bob, every level, AI use not required."""
    flt = SearchFilter(
        principals=frozenset({"everyone", "group:finance", "user:bob"}),
        max_sensitivity=Sensitivity.RESTRICTED,
        require_ai_allowed=False,
    )
    return dataclasses.replace(flt, **changes)  # type: ignore[arg-type]


def fact(doc_id: str, value: float = 1.0, **slots: str) -> Fact:
    values = {"entity": "North Co", "period": "FY2024", "metric": "revenue", "channel": "total"}
    values.update(slots)
    return Fact(
        value=value, unit="USD m", doc_id=doc_id, locator=f"row=r{value}", raw=str(value), **values
    )


def unit(*axes: float) -> Vector:
    """A unit vector in four dimensions."""
    v = np.asarray(axes, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)
