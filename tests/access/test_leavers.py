"""Leavers and movers take effect on the next query (docs/design.md §7, docs/access.md).

On the ACME demo corpus: a delta directory sync that disables an account, or removes a user
from a nested group, changes what the very next search returns — "the day after", with no
document re-sync at all — and a full re-sync (ingest again + a full directory snapshot)
afterwards gives exactly the same result. Expected sets come from a brute-force oracle over the
raw directory JSON (its own principal-set fixpoint), not from the product's directory code.
"""

from __future__ import annotations

import contextlib
import copy
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearance.access.policy import Action
from clearance.app import Clearance
from clearance.config import Settings, load_settings
from clearance.model import Document, Sensitivity
from clitools import lexical_only

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
DIRECTORY: dict[str, Any] = json.loads((ACME / "directory.json").read_text(encoding="utf-8"))
USERS = sorted(u["id"] for u in DIRECTORY["users"])


# --------------------------------------------------------------------------- the oracle


def principal_set(directory: dict[str, Any], user_id: str) -> set[str]:
    """Brute force: {user, everyone} plus every group with a member already in the set,
    repeated until nothing changes. Disabled or unknown: nothing."""
    users = {u["id"]: u for u in directory["users"]}
    if user_id not in users or not users[user_id]["active"]:
        return set()
    result = {f"user:{user_id}", "everyone"}
    grew = True
    while grew:
        grew = False
        for group in directory["groups"]:
            principal = f"group:{group['id']}"
            if principal not in result and result & set(group.get("members", [])):
                result.add(principal)
                grew = True
    return result


def oracle(
    settings: Settings, documents: list[Document], directory: dict[str, Any], user_id: str
) -> set[str]:
    """What ``user_id`` may retrieve (no assistant; every corpus fresh in these tests)."""
    principals = principal_set(directory, user_id)
    now = datetime.now(UTC)
    return {
        d.doc_id
        for d in documents
        if d.acl & principals
        and d.sensitivity
        <= min(settings.corpus(d.corpus).max_sensitivity, Sensitivity.CONFIDENTIAL)
        and (d.expires_at is None or d.expires_at > now)
        and d.ai_allowed
    }


def apply_delta(directory: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The oracle's own reading of a Clearance-JSON delta: removals, then whole-record upserts."""
    out = copy.deepcopy(directory)
    gone_users, gone_groups = (
        set(delta.get("removed_users", [])),
        set(delta.get("removed_groups", [])),
    )
    users = {u["id"]: u for u in out["users"] if u["id"] not in gone_users}
    groups = {g["id"]: g for g in out["groups"] if g["id"] not in gone_groups}
    users.update({u["id"]: u for u in delta.get("users", [])})
    groups.update({g["id"]: g for g in delta.get("groups", [])})
    return {"users": list(users.values()), "groups": list(groups.values())}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus ingested once (lexical only); returns the index file to copy."""
    root = tmp_path_factory.mktemp("acme-base")
    config = root / "clearance.toml"
    config.write_text(lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8")))
    settings = load_settings(config)
    with Clearance.open(settings) as app:
        report = app.ingest([], manifest=ACME / "manifest.jsonl")
        assert report.counts == {"added": 73, "absent": 1}
        app.sync_directory(ACME / "directory.json")
    return settings.db_path


@dataclass
class Demo:
    root: Path
    app: Clearance
    directory: dict[str, Any]  # what the oracle believes the directory is

    def documents(self) -> list[Document]:
        return self.app.store.list_documents()

    def expected(self, user_id: str) -> set[str]:
        return oracle(self.app.settings, self.documents(), self.directory, user_id)

    def allowed(self, user_id: str, action: Action = Action.RETRIEVE) -> set[str]:
        access = self.app.access()
        flt = access.search_filter(
            access.principal(user_id), None, self.app.store.corpora(), action=action
        )
        return self.app.store.allowed_doc_ids(flt)

    def searched(self, user_id: str, query: str) -> set[str]:
        return {h.document.doc_id for h in self.app.search(user_id, query, k=50).hits}

    def delta(self, name: str, delta: dict[str, Any]) -> None:
        path = self.root / name
        path.write_text(json.dumps(delta), encoding="utf-8")
        self.app.sync_directory(path, delta=True)
        self.directory = apply_delta(self.directory, delta)

    def state(self) -> dict[str, Any]:
        """Everything a document re-sync would touch: ACLs, content, sync times."""
        return {
            "documents": [
                (d.doc_id, sorted(d.acl), d.content_hash, d.version) for d in self.documents()
            ],
            "chunks": self.app.store.stats().chunks,
            "syncs": self.app.store.last_acl_syncs(),
        }


@pytest.fixture
def demo(base: Path, tmp_path: Path) -> Iterator[Demo]:
    """A private copy of the ingested demo index."""
    config = tmp_path / "clearance.toml"
    config.write_text(lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8")))
    settings = load_settings(config)
    settings.db_path.parent.mkdir(parents=True)
    with (
        contextlib.closing(sqlite3.connect(base)) as src,
        contextlib.closing(sqlite3.connect(settings.db_path)) as dst,
    ):
        src.backup(dst)
    with Clearance.open(settings) as app:
        yield Demo(tmp_path, app, copy.deepcopy(DIRECTORY))


def titles(demo: Demo) -> list[str]:
    return sorted({d.title for d in demo.documents()})


# --------------------------------------------------------------------------- the oracle agrees


def test_starting_point_matches_the_oracle_for_every_user(demo: Demo) -> None:
    for user in USERS:
        assert demo.allowed(user) == demo.expected(user), user
    assert demo.expected("hiro") and not demo.expected("erin")


# --------------------------------------------------------------------------- disabled accounts


def test_disabling_an_account_empties_the_very_next_search(demo: Demo) -> None:
    user = "hiro"
    before, state = demo.allowed(user), demo.state()
    assert before and all(demo.searched(user, t) <= before for t in titles(demo))
    assert any(demo.searched(user, t) for t in titles(demo))
    others = {u: demo.allowed(u) for u in USERS if u != user}
    record = next(u for u in DIRECTORY["users"] if u["id"] == user)

    demo.delta("disable.json", {"users": [{**record, "active": False}]})

    for title in titles(demo):
        result = demo.app.search(user, title, k=50)
        assert result.hits == [], title
        assert result.refused == "account_disabled"
    assert demo.allowed(user) == set()
    assert demo.allowed(user, Action.VIEW) == set()
    assert demo.expected(user) == set()
    explained = demo.app.explain(user, sorted(before)[0])
    assert explained["principal"]["principals"] == []
    assert "account_disabled" in explained["decisions"]["retrieve"]["reasons"]
    # nobody else changed, and no document was re-synced
    assert {u: demo.allowed(u) for u in USERS if u != user} == others
    assert demo.state() == state


def test_a_disabled_account_named_directly_in_an_acl_still_gets_nothing(demo: Demo) -> None:
    """erin is disabled in the demo directory yet listed on a customer record by name."""
    named = [d for d in demo.documents() if "user:erin" in d.acl]
    assert named
    for doc in named:
        assert demo.app.search("erin", doc.title, k=50).hits == []
        decision = demo.app.explain("erin", doc.doc_id)["decisions"]["view"]
        assert decision["allow"] is False
        assert "account_disabled" in decision["reasons"]


def test_re_enabling_restores_access_on_the_next_query(demo: Demo) -> None:
    record = next(u for u in DIRECTORY["users"] if u["id"] == "bob")
    before = demo.allowed("bob")
    demo.delta("off.json", {"users": [{**record, "active": False}]})
    assert demo.allowed("bob") == set()

    demo.delta("on.json", {"users": [record]})

    assert demo.allowed("bob") == before == demo.expected("bob")


# --------------------------------------------------------------------------- movers

MOVES = {
    # hiro leaves sales-japan (⊂ dept-sales ⊂ employees ⊂ all-staff) but stays on the Japan
    # account team
    "hiro-leaves-sales-japan": ("hiro", {"groups": [{"id": "sales-japan", "members": []}]}),
    # carol's team group is deleted; she stays a manager
    "team-alpha-removed": ("carol", {"removed_groups": ["eng-team-alpha"]}),
    # mike leaves the sre-rotation ⇄ eng-oncall cycle but stays in security-team
    "mike-leaves-the-cycle": (
        "mike",
        {"groups": [{"id": "sre-rotation", "members": ["group:eng-oncall"]}]},
    ),
}


@pytest.mark.parametrize("move", sorted(MOVES))
def test_leaving_a_nested_group_loses_exactly_what_only_it_granted(demo: Demo, move: str) -> None:
    user, delta = MOVES[move]
    before_oracle, state = demo.expected(user), demo.state()
    assert demo.allowed(user) == before_oracle
    others = {u: demo.allowed(u) for u in USERS if u != user}
    before_sets = {u: principal_set(demo.directory, u) for u in USERS}
    by_id = {d.doc_id: d for d in demo.documents()}

    demo.delta("move.json", delta)

    after_oracle = demo.expected(user)
    lost, kept = before_oracle - after_oracle, after_oracle
    assert lost, "the move must take something away"
    assert kept, "and leave something"
    assert after_oracle <= before_oracle
    assert demo.allowed(user) == after_oracle
    # exactly the documents no remaining principal reaches
    remaining = principal_set(demo.directory, user)
    assert lost == {d for d in before_oracle if not (by_id[d].acl & remaining)}
    # the very next query: lost documents are gone, kept ones are still found by title
    for doc_id in lost:
        assert doc_id not in demo.searched(user, by_id[doc_id].title)
    for doc_id in kept:
        assert doc_id in demo.searched(user, by_id[doc_id].title)
    # everyone else: exactly what the oracle says (unchanged unless they shared the group)
    for other in USERS:
        assert demo.allowed(other) == demo.expected(other), other
    unaffected = {u for u in others if principal_set(demo.directory, u) == before_sets[u]}
    assert {u: demo.allowed(u) for u in unaffected} == {u: others[u] for u in unaffected}
    assert demo.state() == state  # no document re-sync was needed


# --------------------------------------------------------------------------- day after = re-sync


def test_the_day_after_equals_a_full_resync(demo: Demo) -> None:
    hiro = next(u for u in DIRECTORY["users"] if u["id"] == "hiro")
    demo.delta("disable.json", {"users": [{**hiro, "active": False}]})
    demo.delta("move.json", MOVES["team-alpha-removed"][1])
    queries = [*titles(demo)[::5], "revenue FY2025", "incident runbook", "salary bands"]

    def observe() -> dict[str, Any]:
        return {
            user: (
                demo.allowed(user),
                demo.allowed(user, Action.VIEW),
                [sorted(demo.searched(user, q)) for q in queries],
            )
            for user in USERS
        }

    day_after = observe()
    for user in USERS:
        assert day_after[user][0] == demo.expected(user), user
    assert day_after["hiro"][0] == set()

    # full re-sync: every document ingested again, then the directory as a full snapshot
    report = demo.app.ingest([], manifest=ACME / "manifest.jsonl")
    assert report.counts == {"unchanged": 73, "absent": 1}
    snapshot = demo.root / "snapshot.json"
    snapshot.write_text(json.dumps(demo.directory), encoding="utf-8")
    demo.app.sync_directory(snapshot)

    assert observe() == day_after
