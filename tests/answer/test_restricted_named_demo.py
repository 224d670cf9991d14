"""RESTRICTED sources are named to their readers on the demo as shipped: with the embedding
model on, RESTRICTED chunks have no vector, so a search over everything the reader may view
ranked them below what the vector search found and they never reached the few used for
naming. The board's minutes question of the shipped suite (`sensitive-restricted-named`)
and the security team's own incident question were refused. Naming now searches the
reader's RESTRICTED material on its own; a reverse proof restores the old search and is
caught by the same assertions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clearance.answer.result import Citation, Status
from clearance.answer.routes.restricted import (
    RESTRICTED_FLAG,
    RESTRICTED_NAMED,
    RestrictedNamingRoute,
    _probe,
)
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.model import is_restricted
from clearance.store.base import SearchFilter

from .conftest import ACME, AcmeIndex, clean_env, cli
from .test_restricted_named import restricted_content

INCIDENT = "What happened in the ransomware attempt at the Columbus repair centre?"
REPORT = "fileshare:sec/IR-2026-0312"
MINUTES = "sharepoint:board-2025-03-minutes"
BOARD = "What did the board approve for the FY2025 budget in the March 2025 minutes?"

pytestmark = pytest.mark.embeddings


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    """The demo exactly as its README builds it: the shipped configuration, embeddings on."""
    root = tmp_path_factory.mktemp("acme-demo")
    config = root / "clearance.toml"
    config.write_text(
        (ACME / "clearance.toml").read_text(encoding="utf-8")
        + f"\n[ingest]\nroots = [{json.dumps(str(ACME))}]\n",
        encoding="utf-8",
    )
    with clean_env():
        rc, _, err = cli("--config", config, "directory", "sync", ACME / "directory.json")
        assert rc == 0, err
        rc, _, err = cli("--config", config, "ingest", "--manifest", ACME / "manifest.jsonl")
        assert rc == 0, err
        app = Clearance.open(load_settings(config))
        try:
            assert app.embedder is not None
            yield AcmeIndex(root, config, app)
        finally:
            app.close()


def _named(result: Any) -> list[str]:
    if RESTRICTED_FLAG not in result.flags or not result.answer.startswith(RESTRICTED_NAMED):
        return []
    return [c.doc_id for c in result.citations]


def test_the_security_team_is_named_its_incident_report(demo: AcmeIndex) -> None:
    result = demo.app.ask(INCIDENT, "mike")
    assert result.status is Status.ANSWERED, result.to_dict()
    assert _named(result) == [REPORT]
    assert result.citations[0].uri.startswith("file://")
    assert restricted_content(demo, result) == []


def test_the_board_is_named_its_minutes(demo: AcmeIndex) -> None:
    for assistant in (None, "hr"):
        assert _named(demo.app.ask(BOARD, "jun", assistant=assistant)) == [MINUTES]


def test_nobody_else_is_named_them_nor_searched_for(
    demo: AcmeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[SearchFilter] = []
    original = type(demo.app.store).lexical_search

    def spy(self: Any, query: str, flt: SearchFilter, k: int) -> list[tuple[str, float]]:
        if flt.doc_ids is not None:
            searched.append(flt)
        return original(self, query, flt, k)

    monkeypatch.setattr(type(demo.app.store), "lexical_search", spy)
    for persona in ("alice", "grace", "frank"):
        result = demo.app.ask(INCIDENT, persona)
        assert result.status is Status.NO_AUTHORIZED_SOURCE and result.citations == ()
    assert searched == []
    demo.app.ask(INCIDENT, "mike")
    assert searched and all(f.doc_ids == frozenset(_mikes(demo)) for f in searched)


def _mikes(demo: AcmeIndex) -> set[str]:
    return {
        d.doc_id
        for d in demo.app.store.list_documents("sensitive")
        if is_restricted(d.sensitivity) and "group:security-team" in d.acl
    }


def test_the_shipped_suite_names_the_minutes_from_the_demo(demo: AcmeIndex, tmp_path: Path) -> None:
    data = yaml.safe_load((ACME / "eval.yaml").read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["id"] == "sensitive-restricted-named"]
    data["stages"] = [s for s in data["stages"] if s["name"] == "sensitive"]
    data["refresh"] = [str(ACME / m) for m in data.get("refresh", [])]
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    rc, out, err = cli("--config", demo.config, "eval", suite, "--json")
    assert rc == 0, err
    (case,) = json.loads(out)["results"]
    assert case["problems"] == []


def test_the_search_of_before_is_caught(demo: AcmeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reverse proof: naming from the top hits of a search over everything viewable, fused
    as that search then fused (plain RRF). Each retriever's first hit is now kept among
    the fused, which happens to bring these two reports into the general search's top
    five; naming still searches the caller's RESTRICTED material on its own, which does
    not depend on where a general search ranks them."""
    import clearance.retrieval.hybrid as hybrid

    monkeypatch.setattr(hybrid, "_with_each_lists_first", lambda ranked, lists, k: ranked[:k])

    def top_hits(self: RestrictedNamingRoute, request: Any) -> tuple[Citation, ...]:
        found = self.ctx.runtime.search_viewable(request.user_id, request.masked)
        probes = [
            _probe(i, h, self.ctx.settings.trust.origins)
            for i, h in enumerate(found.hits, 1)
            if is_restricted(h.document.sensitivity)
        ]
        return tuple(Citation(p.doc_id, p.title, p.locator, p.uri, p.trust) for p in probes)[:1]

    monkeypatch.setattr(RestrictedNamingRoute, "_restricted_sources", top_hits)
    assert _named(demo.app.ask(INCIDENT, "mike")) != [REPORT]
    assert _named(demo.app.ask(BOARD, "jun")) != [MINUTES]
