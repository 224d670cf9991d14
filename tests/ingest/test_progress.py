"""Long files show progress while they are read and embedded (issue: a 20 MB CSV ran for
minutes with nothing on screen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearance.app import Clearance
from clearance.ingest import limits, pipeline
from clearance.llm.embedding import HashingEmbedder
from clearance.store.sqlite import SQLiteStore
from conftest import SettingsFactory


@pytest.fixture
def every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Report at every opportunity instead of once a second, so no test waits on a clock."""
    monkeypatch.setattr(limits, "_PROGRESS_INTERVAL_S", 0.0)
    monkeypatch.setattr(pipeline, "_PROGRESS_INTERVAL_S", 0.0)


def test_a_long_table_reports_rows_read_and_chunks_embedded(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore, every_step: None
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    rows = "\n".join(f"region-{i},{i * 7},note number {i} about sales" for i in range(3000))
    (docs / "big.csv").write_text("region,revenue,note\n" + rows + "\n", encoding="utf-8")
    app = Clearance(settings_factory(), store, embedder=HashingEmbedder(dim=16))
    seen: list[tuple[str, str]] = []

    report = app.ingest([docs], on_progress=lambda source, where: seen.append((source, where)))

    assert [r.status for r in report.results] == ["added"]
    assert {source for source, _ in seen} == {"big.csv"}
    wheres = [where for _, where in seen]
    assert any(w.startswith("row ") for w in wheres)
    embedding = [w for w in wheres if w.startswith("embedding ")]
    total = report.results[0].chunks
    assert embedding[-1] == f"embedding {total}/{total} chunks"
    assert len(embedding) == -(-total // pipeline._EMBED_STEP)  # one report per batch


def test_no_reporter_means_no_reports_and_the_same_result(
    tmp_path: Path, settings_factory: SettingsFactory, store: SQLiteStore, every_step: None
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    app = Clearance(settings_factory(), store, embedder=HashingEmbedder(dim=16))

    assert [r.status for r in app.ingest([docs]).results] == ["added"]
