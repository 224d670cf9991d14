"""Figure questions answered from the demo files that exercise the table layouts fact
extraction reads (native PPTX charts, an XLSX whose top-left cell names the entity, a slide
table with the period in its title), through the real ``clearance ask --json`` on the
ingested demo corpus. Each answer must carry exactly the expected citation — the document
and the locator of the chart point or cell — and the number at that locator must be in the
document's stored text, so the citation opens what it claims.

The cases live in ``data/fact_layout_questions.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clearance.ingest.facts import format_number
from clearance.ingest.locator import parse_locator
from clitools import cli

from .conftest import AcmeIndex, readable

DATA: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "fact_layout_questions.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = DATA["cases"]


def _id(case: dict[str, Any]) -> str:
    return f"{case['persona']}-{case['question']}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_figure_from_each_layout_is_answered_with_its_citation(
    acme: AcmeIndex, case: dict[str, Any]
) -> None:
    rc, out, err = cli(
        "--config", acme.config, "ask", case["question"], "--user", case["persona"], "--json"
    )
    assert rc == 0, err
    result = json.loads(out)
    assert result["status"] == case["status"], result
    for text in case["answer"]:
        assert text in result["answer"], result["answer"]
    cited = [{"doc_id": c["doc_id"], "locator": c["locator"]} for c in result["citations"]]
    assert cited == case["cited"]
    assert {c["doc_id"] for c in cited} <= readable(case["persona"])
    for text in case.get("absent", []):
        assert text not in out
    for citation in cited:
        assert_locator_opens_the_figure(acme, citation["doc_id"], citation["locator"])


def assert_locator_opens_the_figure(acme: AcmeIndex, doc_id: str, locator: str) -> None:
    """The cited fact's locator starts with a stored chunk's locator, and that chunk's text
    shows the figure as the document writes it."""
    (fact,) = [f for f in acme.facts(doc_id) if f.locator == locator]
    parts = parse_locator(locator)
    texts = [
        c.text
        for c in acme.chunks(doc_id)
        if parts[: len(parse_locator(c.locator))] == parse_locator(c.locator)
    ]
    assert texts, f"{doc_id}: no stored chunk at {locator}"
    assert any(fact.raw in t or format_number(fact.value) in t for t in texts), texts


def test_every_fact_of_the_layout_examples_opens_its_stored_text(acme: AcmeIndex) -> None:
    """Not only the asked ones: every fact of the three example files, and none is 0."""
    layout_docs = ("sharepoint:ops-2003", "sharepoint:ops-2004", "sharepoint:ops-2005")
    counts = {doc: len(acme.facts(doc)) for doc in layout_docs}
    # 3 regions × 2 metrics × 4 quarters; 3 regions × 4 quarters of headcount, joiners and
    # leavers (the last two named by their row labels); 3 × 3 cells but one "—"
    assert counts == {
        "sharepoint:ops-2003": 24,
        "sharepoint:ops-2004": 36,
        "sharepoint:ops-2005": 8,
    }
    for doc in layout_docs:
        for fact in acme.facts(doc):
            assert_locator_opens_the_figure(acme, doc, fact.locator)
        assert all(f.value != 0 for f in acme.facts(doc))
