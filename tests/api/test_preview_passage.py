"""A preview asked for at a citation's locator opens at the cited passage: the chunk the
locator resolves to, its cited row or cell marked, a little admitted context around it, and a
link to the source at the cited page. Nothing of a chunk the caller may not read is shown."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from api.conftest import create_token, make_project, serving_app
from clearance.api.app import create_app
from clearance.api.views import _passage, source_link
from clearance.config import load_settings
from clearance.model import Chunk, Sensitivity


def chunk(ordinal: int, locator: str, text: str) -> Chunk:
    return Chunk(f"d#{ordinal}", "d", ordinal, text, locator, Sensitivity.INTERNAL, "human")


TABLE = [
    chunk(0, "section=Results", "Results\nOperating profit by region, in USD m."),
    chunk(1, "section=Results,table=1,row=Japan", "Region: Japan | FY2024: 55.0 | FY2025: 61.2"),
    chunk(2, "section=Results,table=1,row=US", "Region: US | FY2024: 40.1 | FY2025: 44.9"),
]
SHEET = [
    chunk(
        0,
        "sheet=P&L,range=A1:C3",
        "Line | FY2024 | FY2025\nRevenue | 1 200 | 1 320\nCost | 800 | 850",
    ),
]


def marked(passage: dict[str, object]) -> list[str]:
    text = str(passage["text"])
    return [text[a:b] for a, b in passage["marks"]]  # type: ignore[attr-defined]


def test_a_row_citation_opens_at_its_row_with_the_rows_around_it() -> None:
    passage = _passage(TABLE, "section=Results,table=1,row=Japan")
    assert passage is not None
    assert marked(passage) == ["Region: Japan | FY2024: 55.0 | FY2025: 61.2"]
    assert passage["before"] == "Results\nOperating profit by region, in USD m."
    assert passage["after"] == "Region: US | FY2024: 40.1 | FY2025: 44.9"


def test_a_figure_citation_marks_its_cell_in_a_row_or_a_sheet_block() -> None:
    row = _passage(TABLE, "section=Results,table=1,row=Japan,col=FY2025")
    assert row is not None and marked(row) == ["FY2025: 61.2"]
    block = _passage(SHEET, "sheet=P&L,range=A1:C3,row=Cost,col=FY2025")
    assert block is not None and marked(block) == ["850"]
    only_row = _passage(SHEET, "sheet=P&L,range=A1:C3,row=Revenue")
    assert only_row is not None and marked(only_row) == ["Revenue | 1 200 | 1 320"]


def test_a_neighbour_the_caller_may_not_read_gives_no_context() -> None:
    admitted = [TABLE[0], TABLE[2]]  # chunk 1 is not in the caller's allowed set
    passage = _passage(admitted, "section=Results,table=1,row=US")
    assert passage is not None and passage["before"] == "" and passage["after"] == ""
    assert _passage(admitted, "section=Results,table=1,row=Japan,col=FY2025") is not None
    # ... resolved to the section's prose, never to the hidden row
    assert _passage(admitted, "section=Results,table=1,row=Japan")["text"].startswith("Results")  # type: ignore[index]


def test_a_locator_that_resolves_to_nothing_gives_no_passage() -> None:
    assert _passage(TABLE, "page=3") is None
    assert _passage(TABLE, "not a locator") is None


@pytest.mark.parametrize(
    ("uri", "locator", "link"),
    [
        ("https://x.example/guide.pdf", "page=2", "https://x.example/guide.pdf#page=2"),
        ("https://x.example/guide.PDF#page=9", "page=2", "https://x.example/guide.PDF#page=2"),
        ("file:///srv/share/guide.pdf", "page=4", "file:///srv/share/guide.pdf#page=4"),
        ("https://x.example/deck.pptx", "slide=3", "https://x.example/deck.pptx"),
        ("https://x.example/wiki/1601", "page=2", "https://x.example/wiki/1601"),
        ("javascript:alert(1)", None, None),
        ("travel.md", None, None),
    ],
)
def test_the_location_is_a_link_to_the_cited_page_where_the_uri_supports_it(
    uri: str, locator: str | None, link: str | None
) -> None:
    assert source_link(uri, locator) == link


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    project = make_project(tmp_path_factory.mktemp("passage"))
    token = create_token(project, "ann")["token"]
    with (
        serving_app(create_app(load_settings(project))) as url,
        httpx.Client(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"}
        ) as client,
    ):
        yield client


def test_the_api_returns_the_cited_passage_and_the_same_404_for_a_hidden_one(
    api: httpx.Client,
) -> None:
    found = api.get(
        "/v1/documents/files:travel.md", params={"locator": "section=Travel policy > Limits"}
    )
    assert found.status_code == 200, found.text
    passage = found.json()["passage"]
    assert passage["locator"] == "section=Travel policy > Limits"
    assert "Hotels up to 200 EUR" in passage["text"]
    assert passage["before"].startswith("Travel policy")
    assert passage["marks"] == [[0, len(passage["text"])]]
    assert api.get("/v1/documents/files:travel.md").json()["passage"] is None
    hidden = api.get("/v1/documents/files:salaries.md", params={"locator": "section=Salary bands"})
    absent = api.get("/v1/documents/files:salariez.md", params={"locator": "section=Salary bands"})
    assert (hidden.status_code, hidden.content) == (absent.status_code, absent.content)
    assert hidden.status_code == 404
