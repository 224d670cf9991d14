"""A handbook's run-in labels ("**Key features**", "**主な機能**") title parts of the topic
above them. The passage under one ("GitLab reimburses up to JPY 15,000 a year.") names
neither the topic nor the question's words, so a question about the health check's cost
never found it (GitLab handbook: "会社の健康診断って、費用はいくらまで…" was refused).

Pinned here: the line the ingest puts above such a passage names the topic too ("Annual
health check — Key features"), the passage is found and quoted for the amount it states;
reverse proof, with the label read as a topic of its own (as before), it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.ingest.loaders.common import Outline
from clearance.store.sqlite import SQLiteStore

from .conftest import staff_handbook

PAGES = {
    "health.md": """# Health benefits

## Annual health check

**Overview**

Every team member may have a full health check each year through the national insurance.

**Key features**

Choose a listed hospital or a clinic you prefer. GitLab reimburses up to JPY 15,000 a year.

**How to claim**

1. Book: make an appointment
2. Attend: have the check
3. Submit: file the receipt in the expense tool
""",
    "expenses.md": """# Spending company money

The company pays for what you need to do your work. File an expense report within 90 days
of the purchase. Spending above the limit needs your manager's approval.
""",
    "remote.md": """# Remote work

You can work from anywhere. The company pays part of your home internet each month.
""",
}

QUESTION = "How much is the annual health check allowance?"


def ask(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> tuple[Clearance, str]:
    directory = write_directory(tmp_path / "directory.json", {"ana": ["staff"]})
    # the default reader: passages quoted, no model
    engine = staff_handbook(tmp_path / "corpus", PAGES, settings_factory(), store, directory)
    result = engine.ask(QUESTION, "ana")
    assert result.status in (Status.ANSWERED, Status.NO_AUTHORIZED_SOURCE), result.answer
    return engine, result.answer


def test_the_amount_under_a_label_is_found_by_its_topic(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    engine, answer = ask(tmp_path, settings_factory, store, write_directory)
    assert "JPY 15,000" in answer, answer
    chunk = next(c for c in engine.store.get_chunks("files:health.md") if "15,000" in c.text)
    assert chunk.text.startswith("Annual health check — Key features\n")
    assert chunk.locator == "section=Health benefits > Annual health check > Key features"
    # the label line is a heading: never quoted as if it answered
    assert "Key features" not in answer


def test_a_label_read_as_a_topic_of_its_own_hides_the_amount(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reverse proof: the ingest as it was, the label alone above the passage."""
    heading = Outline.heading

    def alone(
        self: Outline,
        level: int,
        text: str,
        *,
        label: bool = False,
        listed: tuple[object, bool] | None = None,
    ) -> None:
        heading(self, level, text, listed=listed)

    monkeypatch.setattr(Outline, "heading", alone)
    _, answer = ask(tmp_path, settings_factory, store, write_directory)
    assert "JPY 15,000" not in answer, answer
