"""Citation validity: the document exists, the person may read it, and the locator opens
stored text — exactly, or as a labelled cell of a table stored as one chunk."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from clearance.evaluation import citations
from clearance.evaluation.citations import check_citations, citation_validity, locate
from clearance.model import Chunk

from .conftest import DECK, DECK_CELL, MEMO, REPORT, SECTION, World, cell


def problems(world: World, user: str, *cited: tuple[str, str]) -> list[str | None]:
    checks = check_citations(
        world.result("x", *cited), user, evidence=world.store, access=world.access
    )
    return [c.problem for c in checks]


def test_a_chunk_with_the_locator_is_valid(world: World) -> None:
    assert problems(world, "ann", (REPORT, SECTION), (DECK, DECK_CELL)) == [None, None]


def test_a_labelled_cell_inside_a_table_chunk_is_valid(world: World) -> None:
    assert problems(
        world, "ann", (REPORT, cell("FY2025")), (REPORT, cell("FY2024", "Headcount"))
    ) == [
        None,
        None,
    ]


BAD_PLACES = [
    pytest.param(cell("FY2023"), id="a column the table does not have"),
    pytest.param(cell("FY2025", "Operating profit"), id="a row the table does not have"),
    pytest.param(f"{SECTION},table=1", id="a table but no cell"),
    pytest.param(f"{SECTION},page=2,row=Revenue (USD m)", id="a part that is no cell address"),
    pytest.param("section=Results > Jap", id="a prefix of a value, not of the parts"),
    pytest.param("section=Results", id="a shorter heading path"),
    pytest.param("page=7", id="a page the document does not have"),
    pytest.param("section", id="not a locator"),
]


@pytest.mark.parametrize("locator", BAD_PLACES)
def test_a_locator_that_opens_no_text_is_invalid(world: World, locator: str) -> None:
    assert problems(world, "ann", (REPORT, locator)) == ["the locator opens no stored text"]


def test_a_deck_cell_does_not_resolve_to_the_slide_text(world: World) -> None:
    """``slide=3`` is a chunk, but the slide's text does not hold the table's cells."""
    assert problems(world, "ann", (DECK, "slide=3,table=1,row=Revenue (USD m),col=FY2024")) == [
        "the locator opens no stored text"
    ]


def test_the_loose_prefix_rule_is_caught(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: a resolver that accepts any chunk whose locator starts the citation's
    lets every bad place above through, so the same assertion fails."""

    def loose(chunks: Sequence[Chunk], locator: str) -> Chunk | None:
        return next((c for c in chunks if locator.startswith(c.locator)), None)

    monkeypatch.setattr(citations, "locate", loose)
    assert problems(world, "ann", (REPORT, f"{SECTION},table=1")) == [None]
    assert problems(world, "ann", (REPORT, cell("FY2023"))) == [None]


def test_an_unknown_document_is_invalid(world: World) -> None:
    assert problems(world, "ann", ("wiki:nothing", "page=1")) == ["no such document"]


def test_a_document_the_person_may_not_read_is_invalid(world: World) -> None:
    assert problems(world, "bea", (REPORT, SECTION)) == ["bea may not read it"]
    assert problems(world, "nobody", (REPORT, SECTION)) == ["nobody may not read it"]


def test_a_restricted_document_may_be_named_to_its_readers_only(world: World) -> None:
    assert problems(world, "bea", (MEMO, "page=1")) == [None]
    assert problems(world, "ann", (MEMO, "page=1")) == ["ann may not read it"]


def test_readability_follows_the_assistant(world: World) -> None:
    """Through an assistant that does not read the document's corpus, it is not readable."""
    checks = check_citations(
        world.result("x", (REPORT, SECTION)),
        "ann",
        evidence=world.store,
        access=world.access,
        assistant="public",
    )
    assert [c.problem for c in checks] == ["ann may not read it"]


def test_the_rate_counts_citations(world: World) -> None:
    checks = check_citations(
        world.result("x", (REPORT, SECTION), (REPORT, "page=9")),
        "ann",
        evidence=world.store,
        access=world.access,
    )
    assert citation_validity(checks) == 0.5
    assert citation_validity([]) is None
    assert locate([], SECTION) is None
