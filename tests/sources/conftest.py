"""A folder synced by the filesystem connector into a real index, with a clock the test moves."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearance.app import Clearance
from clearance.llm.embedding import HashingEmbedder
from clearance.sources.service import sync_source
from clearance.sources.sync import SyncReport
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

T0 = datetime(2025, 3, 1, 9, 0, 0, tzinfo=UTC)


class CountingEmbedder(HashingEmbedder):
    """The in-package hashing embedder, counting every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.texts += len(texts)
        return super().embed(texts)


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Share:
    """The folder, an index over it and the knobs the tests turn."""

    root: Path
    app: Clearance
    clock: Clock
    embedder: CountingEmbedder
    reports: list[SyncReport] = field(default_factory=list)

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def meta(self, folder: str, **values: Any) -> None:
        target = self.root / folder / "_meta.json" if folder else self.root / "_meta.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")

    def sync(self, *, content: bool = True, permissions: bool = True) -> list[SyncReport]:
        reports = sync_source(self.app, "share", content=content, permissions=permissions)
        self.reports.extend(reports)
        return reports

    def found(self, user: str, word: str) -> set[str]:
        """Documents whose hits for ``user`` contain ``word`` (vector search also returns
        near misses; only a hit that holds the word counts)."""
        hits = self.app.search(user, word).hits
        return {h.document.doc_id for h in hits if word.lower() in h.chunk.text.lower()}


def make_share(
    tmp_path: Path, *, sla: str = "1h", options: dict[str, Any] | None = None
) -> Iterator[Share]:
    root = tmp_path / "share"
    root.mkdir()
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"docs": {"revocation_sla": sla}},
            "sources": {
                "share": {
                    "kind": "filesystem",
                    "corpus": "docs",
                    "options": {"path": str(root), **(options or {})},
                }
            },
        },
    )
    clock = Clock()
    embedder = CountingEmbedder()
    app = Clearance(
        settings,
        SQLiteStore(tmp_path / "index.db"),
        embedder=embedder,
        clock=clock,
        checkers={},
    )
    directory = {
        "users": [
            {"id": "alice", "active": True, "attributes": {}},
            {"id": "bob", "active": True, "attributes": {}},
        ],
        "groups": [
            {"id": "staff", "members": ["user:alice", "user:bob"]},
            {"id": "hr", "members": ["user:bob"]},
        ],
    }
    app.sync_directory_data(json.dumps(directory), "directory.json")
    try:
        yield Share(root, app, clock, embedder)
    finally:
        app.close()


@pytest.fixture
def share(tmp_path: Path) -> Iterator[Share]:
    yield from make_share(tmp_path)


ShareFactory = Callable[..., Share]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test class with ``SHAPES`` (connector_conformance.SharingShapes) runs its
    ``shape`` tests once per shape, named by it."""
    shapes = getattr(metafunc.cls, "SHAPES", None)
    if shapes is not None and "shape" in metafunc.fixturenames:
        metafunc.parametrize("shape", shapes, ids=[s.name for s in shapes])
