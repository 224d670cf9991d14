"""A small real index for the evaluation checks: a SQLite store holding a report (a
section with a table stored as one chunk, and its facts), a deck (one chunk per cell), a
RESTRICTED memo, and an access control over a two-person directory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

import factories
from clearance.access.directory import Directory
from clearance.access.policy import AccessControl
from clearance.answer.result import AnswerResult, Citation, Route, Status
from clearance.ingest.facts import Vocabulary
from clearance.model import Fact, Sensitivity
from clearance.store.sqlite import SQLiteStore
from conftest import SettingsFactory

NOW = datetime(2026, 10, 15, 9, 0, tzinfo=UTC)
REPORT = "wiki:report"
DECK = "wiki:deck"
MEMO = "wiki:memo"
SECTION = "section=Results > Japan"
TABLE_TEXT = (
    "Results: Japan\n"
    "Metric | FY2024 | FY2025\n"
    "Revenue (USD m) | 448.2 | 486.9\n"
    "Headcount | 1,305 | 1,362"
)
NOTE_TEXT = "Japan grew because of 12 new enterprise accounts in Kansai."


def fact(period: str, value: float, locator: str, *, doc_id: str = REPORT) -> Fact:
    return Fact("ACME Japan", period, "revenue", "total", value, "USD m", doc_id, locator)


def cell(col: str, row: str = "Revenue (USD m)") -> str:
    return f"{SECTION},table=1,row={row},col={col}"


FY2024 = fact("FY2024", 448.2, cell("FY2024"))
FY2025 = fact("FY2025", 486.9, cell("FY2025"))
DECK_CELL = "slide=3,table=1,row=Revenue (USD m),col=FY2025"


@dataclass
class World:
    store: SQLiteStore
    access: AccessControl
    periods: Vocabulary

    def citation(self, doc_id: str, locator: str) -> Citation:
        document = self.store.get_document(doc_id)
        title = document.title if document is not None else "?"
        return Citation(doc_id, title, locator, f"https://example.test/{doc_id}")

    def result(
        self,
        answer: str,
        *cited: tuple[str, str],
        status: Status = Status.ANSWERED,
        route: Route = Route.STRUCTURED,
    ) -> AnswerResult:
        citations = tuple(self.citation(d, loc) for d, loc in cited)
        return AnswerResult(status, answer, route, citations)


@pytest.fixture
def world(tmp_path: Path, settings_factory: SettingsFactory) -> Iterator[World]:
    store = SQLiteStore(tmp_path / "clearance.db")
    readers = {"group:finance"}
    report = factories.document(REPORT, corpus="docs", title="Annual report 2025", acl=readers)
    store.upsert(
        report,
        [
            factories.chunk(report, TABLE_TEXT, ordinal=0, locator=SECTION),
            factories.chunk(report, NOTE_TEXT, ordinal=1, locator="section=Why"),
        ],
        facts=[FY2024, FY2025],
    )
    deck = factories.document(DECK, corpus="docs", title="Investor deck", acl=readers)
    store.upsert(
        deck,
        [
            factories.chunk(deck, "Japan\nResults by region", ordinal=0, locator="slide=3"),
            factories.chunk(
                deck, "Japan — Revenue (USD m), FY2025: 486.9", ordinal=1, locator=DECK_CELL
            ),
        ],
        facts=[fact("FY2025", 486.9, DECK_CELL, doc_id=DECK)],
    )
    memo = factories.document(
        MEMO,
        corpus="docs",
        title="Board memo",
        acl={"user:bea"},
        sensitivity=Sensitivity.RESTRICTED,
    )
    store.upsert(memo, [factories.chunk(memo, "The board met on 3 March.", locator="page=1")])
    directory = Directory.from_json(
        {
            "users": [{"id": "ann", "active": True}, {"id": "bea", "active": True}],
            "groups": [{"id": "finance", "members": ["user:ann"]}],
        }
    )
    settings = settings_factory(
        {
            "corpora": {
                "docs": {"revocation_sla": "1h", "max_sensitivity": "RESTRICTED"},
                "public": {"revocation_sla": "1h"},
            },
            "assistants": {"public": {"corpora": ["public"]}},
            "facts": {"metrics": {"revenue": ["revenue"]}, "entities": {"ACME Japan": ["Japan"]}},
        }
    )
    access = AccessControl(settings, directory, {"docs": NOW}, clock=lambda: NOW)
    try:
        yield World(store, access, Vocabulary(settings.facts))
    finally:
        store.close()
