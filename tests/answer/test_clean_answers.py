"""Through the whole narrative path with the default extractive provider, the clean answers
of issue 22 survive the orchestrator's checks: the note that a table does not list a name
stays (it holds no number and cites the table), and a how-to's steps arrive whole, one per
line, each with its citation."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import settings_from_dict
from clearance.store.sqlite import SQLiteStore

from .conftest import AcmeIndex

PRINTER = (
    "Adding the office printer to your laptop takes two minutes:\n"
    "1. Open Settings and choose Printers & Scanners.\n"
    "2. Click Add printer and pick PRN-4F-01 from the list.\n"
    "   If it is not listed, enter the address print.example.com by hand.\n"
    "3. Print a test page to check the printer works."
)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Clearance]:
    settings = settings_from_dict(
        {"embedding": {"provider": "none"}, "ingest": {"allow_unconfigured_corpora": True}},
        root=tmp_path,
    )
    engine = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None)
    directory = tmp_path / "directory.json"
    directory.write_text(
        json.dumps({"users": [{"id": "jane", "active": True}], "groups": []}), encoding="utf-8"
    )
    engine.sync_directory(directory)
    engine.add_note(
        PRINTER,
        origin="human",
        corpus="handbook",
        acl=["everyone"],
        title="Printer setup",
        doc_id="handbook:printer",
    )
    yield engine
    engine.close()


def test_a_city_the_travel_policy_does_not_list_is_said_to_be_missing(acme: AcmeIndex) -> None:
    result = acme.app.ask("What is the hotel limit in Tokyo?", "alice")
    assert result.status is Status.ANSWERED, result.to_dict()
    lines = result.answer.split("\n")
    assert lines[0] == "Tokyo is not among those listed: [S1]", result.answer
    assert len(lines) > 2 and all(line.startswith("City: ") for line in lines[1:]), result.answer
    assert all("Hotel limits" in c.locator for c in result.citations)


def test_a_how_to_gets_its_steps_whole(app: Clearance) -> None:
    result = app.ask("How do I add the office printer to my laptop?", "jane")
    assert result.status is Status.ANSWERED, result.to_dict()
    steps = [line for line in result.answer.split("\n") if re.match(r"\d+\. ", line)]
    assert [s[:2] for s in steps] == ["1.", "2.", "3."], result.answer
    assert "enter the address print.example.com by hand. [S1]" in steps[1]
    assert not re.search(r"(?m)^\d+\.\s*\[S\d+\]$", result.answer)
