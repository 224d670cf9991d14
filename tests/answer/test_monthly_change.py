"""A change asked between two months of a monthly series ("from December 2024 to January
2025"), over a CSV named as data repositories name them (``eia-henry-hub-natural-gas-
monthly.csv``: ``Month,Price``). The two months are read as the two ends of a change, and
the file's name reads as words, never as a path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.store.sqlite import SQLiteStore


def test_a_change_between_two_months_is_both_months_side_by_side(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    corpus = tmp_path / "market"
    corpus.mkdir()
    (corpus / "eia-henry-hub-natural-gas-monthly.csv").write_text(
        "Month,Price\n2024-11,2.12\n2024-12,3.01\n2025-01,4.13\n2025-02,4.19\n", "utf-8"
    )
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"dave": ["staff"]}))
    result = engine.ask(
        "By how much did the Henry Hub natural gas price change from December 2024 to "
        "January 2025?",
        "dave",
    )
    assert result.status is Status.ANSWERED, result.answer
    assert "3.01" in result.answer and "4.13" in result.answer
    assert "up 1.12 (+37.2%)" in result.answer
    assert "EIA Henry Hub Natural Gas Monthly" in result.answer
    assert "eia-henry-hub" not in result.answer
    # a span of months in a label is still a span, not two months
    span = engine.ask("What was the average price from December 2024 to January 2025?", "dave")
    assert "up 1.12" not in span.answer
