"""Search with real-time checks (stage 8; docs/access.md "Real-time checks").

``Clearance.search`` asks the source system about candidates of corpora with
``realtime_check = true`` only; a denied or failed document is dropped and the search re-runs
with it excluded *inside the filter*, so the result is still the top-k of what remains.
Expected results come from a brute force: the unfiltered lexical ranking, restricted to what
remains allowed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearance.access.realtime import FakePermissionChecker, RealtimeOutcome, RealtimeResult
from clearance.app import Clearance
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

# Every document says "salary"; more often (in texts of equal length) ranks higher.
HR = [f"hr:{n}" for n in range(6)]
WIKI = [f"wiki:{n}" for n in range(4)]
DOCS = {
    **{d: ("hr", " ".join(["salary"] * (8 - n) + ["note"] * n)) for n, d in enumerate(HR)},
    **{
        d: ("wiki", " ".join(["salary"] * (4 - n) + ["memo"] * (5 + n))) for n, d in enumerate(WIKI)
    },
    "wiki:other": ("wiki", "holiday calendar for the office"),
}
ADMIT_ALL = SearchFilter(
    principals=frozenset({"group:staff"}),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=datetime(2000, 1, 1, tzinfo=UTC),
    require_ai_allowed=False,
)

MakeApp = Callable[..., Clearance]


@pytest.fixture
def make_app(
    settings_factory: Callable[..., Any],
    store: SQLiteStore,
    tmp_path: Path,
    write_directory: Callable[..., Path],
) -> Iterator[MakeApp]:
    """``make_app(checker)``: the corpus ingested, with ``checker`` as the hr corpus's
    real-time checker (the wiki corpus has none)."""
    settings = settings_factory(
        {
            "corpora": {
                "wiki": {},
                "hr": {
                    "realtime_check": True,
                    "revocation_sla": "15m",
                    "realtime": {"url": "http://127.0.0.1:9/never-called"},
                },
            }
        }
    )
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps(
                {"doc_id": d, "corpus": c, "title": "doc", "text": t, "acl": ["group:staff"]}
            )
            + "\n"
            for d, (c, t) in DOCS.items()
        ),
        encoding="utf-8",
    )
    directory = write_directory(tmp_path / "directory.json", {"ann": ["staff"], "bob": []})
    setup = Clearance(settings, store, checkers={})
    assert setup.ingest([], manifest=manifest).counts == {"added": len(DOCS)}
    setup.sync_directory(directory)

    def make(checker: Any) -> Clearance:
        return Clearance(settings, store, checkers={"hr": checker})

    yield make  # the store fixture closes the file


def doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit("#", 1)[0]


def brute_force(app: Clearance, query: str, k: int, removed: set[str]) -> list[str]:
    """Unfiltered lexical ranking (every doc here is readable by ann), minus ``removed``."""
    ranking = [doc_of(c) for c, _ in app.store.lexical_search(query, ADMIT_ALL, 10_000)]
    return [d for d in ranking if d not in removed][:k]


def result_ids(app: Clearance, query: str, k: int, user: str = "ann") -> list[str]:
    return [h.document.doc_id for h in app.search(user, query, k=k).hits]


def test_the_ranking_interleaves_the_corpora(make_app: MakeApp) -> None:
    app = make_app(FakePermissionChecker({("ann", d): True for d in HR}))
    expected = [*HR[:5], WIKI[0], HR[5], *WIKI[1:]]
    assert brute_force(app, "salary", 10, set()) == expected
    assert result_ids(app, "salary", 10) == expected


@pytest.mark.parametrize("k", [1, 3, 5, 8])
def test_denied_documents_are_replaced_by_the_next_allowed_ones(make_app: MakeApp, k: int) -> None:
    denied = {HR[0], HR[2]}
    checker = FakePermissionChecker({("ann", d): d not in denied for d in HR})
    app = make_app(checker)

    result = app.search("ann", "salary", k=k)

    ids = [h.document.doc_id for h in result.hits]
    assert ids == brute_force(app, "salary", k, denied)
    assert len(ids) == k
    assert set(result.realtime_dropped) <= denied
    assert all(r.outcome is RealtimeOutcome.DENIED for r in result.realtime_dropped.values())


def test_errors_drop_the_document_and_the_rest_refills(make_app: MakeApp) -> None:
    failing = {HR[1], HR[3]}
    checker = FakePermissionChecker({("ann", d): True for d in HR}, errors=failing)
    app = make_app(checker)

    result = app.search("ann", "salary", k=5)

    assert [h.document.doc_id for h in result.hits] == brute_force(app, "salary", 5, failing)
    assert result.realtime_dropped == dict.fromkeys(
        failing, RealtimeResult.error("connection_error")
    )


def test_the_checker_is_asked_only_about_documents_of_realtime_corpora(
    make_app: MakeApp,
) -> None:
    checker = FakePermissionChecker({("ann", d): d != HR[0] for d in HR}, errors={HR[4]})
    app = make_app(checker)

    result_ids(app, "salary", 10)
    result_ids(app, "salary memo", 3)

    asked = [d for _, ids in checker.calls for d in ids]
    assert asked, "hr documents were candidates"
    assert set(asked) <= set(HR)
    assert all(user == "ann" for user, _ in checker.calls)
    assert all(len(ids) == len(set(ids)) for _, ids in checker.calls)

    # a query whose candidates are all wiki documents never reaches the source system
    checker.calls.clear()
    assert result_ids(app, "holiday calendar", 5) == ["wiki:other"]
    assert checker.calls == []


def test_a_user_without_access_causes_no_check(make_app: MakeApp) -> None:
    """bob is in no group: the filter leaves no candidates, so nothing is asked."""
    checker = FakePermissionChecker({("bob", d): True for d in HR})
    app = make_app(checker)

    assert result_ids(app, "salary", 5, user="bob") == []
    assert checker.calls == []


def test_every_realtime_document_denied_leaves_the_other_corpora(make_app: MakeApp) -> None:
    app = make_app(FakePermissionChecker())  # default deny

    result = app.search("ann", "salary", k=4)

    assert [h.document.doc_id for h in result.hits] == WIKI
    assert set(result.realtime_dropped) <= set(HR)


class _Raising:
    def __init__(self) -> None:
        self.calls = 0

    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
        self.calls += 1
        raise TimeoutError("source system did not answer")


def test_a_raising_checker_drops_that_corpus_and_never_raises(make_app: MakeApp) -> None:
    checker = _Raising()
    app = make_app(checker)

    result = app.search("ann", "salary", k=5)

    assert [h.document.doc_id for h in result.hits] == WIKI
    assert checker.calls >= 1
    assert {r.reason for r in result.realtime_dropped.values()} == {"checker_exception"}


def test_out_of_refills_never_serves_an_unconfirmed_document(make_app: MakeApp) -> None:
    """k=1 and the five best are all denied: more rounds than the refill budget. Whatever is
    returned was confirmed (possibly fewer than k, never a denied one)."""
    denied = set(HR[:5])
    checker = FakePermissionChecker({("ann", d): d not in denied for d in HR})
    app = make_app(checker)

    for k in (1, 2):
        result = app.search("ann", "salary", k=k)
        ids = [h.document.doc_id for h in result.hits]
        assert not set(ids) & denied
        assert ids == brute_force(app, "salary", k, denied)[: len(ids)]


def test_explain_reports_the_realtime_decision(make_app: MakeApp) -> None:
    checker = FakePermissionChecker({("ann", HR[0]): False, ("ann", HR[1]): True}, errors={HR[2]})
    app = make_app(checker)

    def reasons(doc_id: str, action: str) -> list[str]:
        decision = app.explain("ann", doc_id)["decisions"][action]
        return list(decision["reasons"])

    assert reasons(HR[0], "retrieve") == ["realtime_denied"]
    assert reasons(HR[1], "retrieve") == ["allowed"]
    assert reasons(HR[2], "retrieve") == ["realtime_error"]
    assert reasons(HR[0], "view") == ["allowed"]  # naming needs no real-time check
    assert reasons(WIKI[0], "retrieve") == ["allowed"]
    assert {d for _, ids in checker.calls for d in ids} == {HR[0], HR[1], HR[2]}
