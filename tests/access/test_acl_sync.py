"""Document ACL sync (docs/access.md, docs/design.md §7): snapshots, deltas, all-or-nothing, sync times.

Driven through :meth:`Clearance.sync_acls` and the real ``clearance acl sync`` command on a
small corpus ingested with the hashing embedder, so "permission-only" can be checked down to
the stored vectors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearance.access.policy import Action
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.errors import DirectoryError
from clearance.llm.embedding import HashingEmbedder
from clearance.store.sqlite import SQLiteStore
from clitools import cli

CONFIG = """
[store]
path = "data/clearance.db"

[corpora.wiki]
revocation_sla = "1h"

[corpora.hr]
revocation_sla = "15m"

[ingest]
chunk_size = 120
chunk_overlap = 0

[embedding]
provider = "none"
"""

PARAGRAPHS = {
    "wiki:handbook": "Travel handbook. Book flights through the portal.\n\n"
    "Hotels up to the city limit.\n\nReceipts within thirty days of the trip.",
    "wiki:roadmap": "Engineering roadmap. The gateway ships in spring.\n\n"
    "The router follows in autumn with a new radio.",
    "wiki:minutes": "Minutes of the planning meeting. Budget review moved to May.",
    "hr:salaries": "Salary bands for every grade.\n\nReviewed each April by the HR team.",
    "hr:policy": "Leave policy: twenty-five days of paid leave per year.",
}
ACLS = {
    "wiki:handbook": ["group:staff"],
    "wiki:roadmap": ["group:eng"],
    "wiki:minutes": ["user:ann"],
    "hr:salaries": ["group:hr"],
    "hr:policy": ["everyone"],
}
DIRECTORY = {
    "users": [
        {"id": "ann", "active": True},
        {"id": "bob", "active": True},
        {"id": "cleo", "active": True},
    ],
    "groups": [
        {"id": "staff", "members": ["user:ann", "user:bob", "group:hr"]},
        {"id": "eng", "members": ["user:ann"]},
        {"id": "hr", "members": ["user:cleo"]},
    ],
}
USERS = ("ann", "bob", "cleo")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@dataclass
class Env:
    root: Path
    config: Path
    app: Clearance
    clock: Clock

    @property
    def store(self) -> SQLiteStore:
        return self.app.store

    def write(self, name: str, lines: list[Any]) -> Path:
        """A JSONL file; a ``str`` item is written verbatim (for malformed lines)."""
        path = self.root / name
        text = "\n".join(item if isinstance(item, str) else json.dumps(item) for item in lines)
        path.write_text(text + "\n", encoding="utf-8")
        # written "now" on the test's clock: an ACL file counts as read no later than that
        os.utime(path, (self.clock.now.timestamp(), self.clock.now.timestamp()))
        return path

    def acls(self) -> dict[str, frozenset[str]]:
        return {d.doc_id: d.acl for d in self.store.list_documents()}

    def visible(self, user: str, action: Action = Action.RETRIEVE) -> set[str]:
        access = self.app.access()
        flt = access.search_filter(
            access.principal(user), None, self.store.corpora(), action=action
        )
        return self.store.allowed_doc_ids(flt)

    def searched(self, user: str, query: str) -> set[str]:
        return {h.document.doc_id for h in self.app.search(user, query, k=50).hits}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    config = tmp_path / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps(
                {
                    "doc_id": doc_id,
                    "corpus": doc_id.split(":")[0],
                    "title": doc_id.split(":")[1],
                    "text": text,
                    "acl": ACLS[doc_id],
                }
            )
            + "\n"
            for doc_id, text in PARAGRAPHS.items()
        ),
        encoding="utf-8",
    )
    directory = tmp_path / "directory.json"
    directory.write_text(json.dumps(DIRECTORY), encoding="utf-8")
    settings = load_settings(config)
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    app = Clearance(
        settings, SQLiteStore(settings.db_path), embedder=HashingEmbedder(), clock=clock
    )
    try:
        report = app.ingest([], manifest=manifest)
        assert report.counts == {"added": len(PARAGRAPHS)}
        app.sync_directory(directory)
        yield Env(tmp_path, config, app, clock)
    finally:
        app.close()


def content(store: SQLiteStore) -> dict[str, Any]:
    """Everything an ACL sync must not touch: documents minus ACLs, chunks, vectors."""
    out: dict[str, Any] = {}
    for doc in store.list_documents():
        vectors = store.vectors_by_text(doc.doc_id)
        out[doc.doc_id] = {
            "content_hash": doc.content_hash,
            "version": doc.version,
            "sensitivity": doc.sensitivity,
            "title": doc.title,
            "chunks": store.get_chunks(doc.doc_id),
            "vectors": {text: vec.tobytes() for text, vec in sorted(vectors.items())},
        }
    return out


# --------------------------------------------------------------------------- the fixture itself


def test_fixture_starting_point(env: Env) -> None:
    assert env.visible("ann") == {"wiki:handbook", "wiki:roadmap", "wiki:minutes", "hr:policy"}
    assert env.visible("bob") == {"wiki:handbook", "hr:policy"}
    assert env.visible("cleo") == {"wiki:handbook", "hr:salaries", "hr:policy"}
    assert env.store.stats().vectors == env.store.stats().chunks > len(PARAGRAPHS)
    assert env.store.last_acl_syncs() == {"wiki": env.clock.now, "hr": env.clock.now}


# --------------------------------------------------------------------------- snapshot and delta


def test_snapshot_replaces_named_acls_and_revokes_omitted_documents(env: Env) -> None:
    hr_before = {d: a for d, a in env.acls().items() if d.startswith("hr:")}
    path = env.write(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["group:eng"]},  # narrowed
            {"doc_id": "wiki:roadmap", "acl": ["group:eng"]},  # unchanged
            # wiki:minutes omitted → visible to nobody
        ],
    )

    report = env.app.sync_acls(path, "wiki")

    assert report.to_dict() | {"synced_at": None} == {
        "corpus": "wiki",
        "mode": "snapshot",
        "changed": 2,
        "unchanged": 1,
        "revoked": ["wiki:minutes"],
        "unknown": [],
        "unknown_principals": [],
        "warnings": [],
        "synced_at": None,
    }
    acls = env.acls()
    assert acls["wiki:handbook"] == {"group:eng"}
    assert acls["wiki:minutes"] == frozenset()
    assert {d: a for d, a in acls.items() if d.startswith("hr:")} == hr_before
    for user in USERS:
        for action in Action:
            assert "wiki:minutes" not in env.visible(user, action)
    assert env.visible("bob") == {"hr:policy"}
    assert env.visible("ann") == {"wiki:handbook", "wiki:roadmap", "hr:policy"}
    assert "wiki:minutes" not in env.searched("ann", "minutes planning meeting budget")
    decision = env.app.explain("ann", "wiki:minutes")["decisions"]["retrieve"]
    assert decision["allow"] is False
    assert decision["reasons"] == ["no_acl"]

    # ... until it reappears in a later snapshot
    again = env.write(
        "wiki2.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["group:eng"]},
            {"doc_id": "wiki:roadmap", "acl": ["group:eng"]},
            {"doc_id": "wiki:minutes", "acl": ["user:ann"]},
        ],
    )
    report = env.app.sync_acls(again, "wiki")
    assert (report.changed, report.unchanged, report.revoked) == (1, 2, [])
    assert "wiki:minutes" in env.searched("ann", "minutes planning meeting budget")


def test_empty_snapshot_revokes_the_whole_corpus_and_nothing_else(env: Env) -> None:
    report = env.app.sync_acls(env.write("empty.jsonl", []), "wiki")

    assert report.revoked == ["wiki:handbook", "wiki:minutes", "wiki:roadmap"]
    assert env.visible("ann") == {"hr:policy"}
    assert env.visible("cleo") == {"hr:salaries", "hr:policy"}


def test_delta_changes_only_the_named_documents(env: Env) -> None:
    before = env.acls()
    path = env.write("delta.jsonl", [{"doc_id": "wiki:minutes", "acl": ["user:bob"]}])

    report = env.app.sync_acls(path, "wiki", delta=True)

    assert (report.mode, report.changed, report.unchanged, report.revoked) == ("delta", 1, 0, [])
    after = env.acls()
    assert after["wiki:minutes"] == {"user:bob"}
    assert {d: a for d, a in after.items() if d != "wiki:minutes"} == {
        d: a for d, a in before.items() if d != "wiki:minutes"
    }
    assert "wiki:minutes" in env.visible("bob")
    assert "wiki:minutes" not in env.visible("ann")
    assert env.searched("ann", "minutes planning meeting budget") & {"wiki:minutes"} == set()


def test_delta_with_an_empty_acl_revokes_one_document(env: Env) -> None:
    env.app.sync_acls(
        env.write("delta.jsonl", [{"doc_id": "wiki:handbook", "acl": []}]), "wiki", delta=True
    )

    assert all("wiki:handbook" not in env.visible(u, a) for u in USERS for a in Action)
    assert "wiki:roadmap" in env.visible("ann")


def test_an_acl_naming_an_unknown_group_matches_nobody(env: Env) -> None:
    path = env.write("delta.jsonl", [{"doc_id": "wiki:handbook", "acl": ["group:ghosts"]}])
    env.app.sync_acls(path, "wiki", delta=True)

    for user in USERS:
        for action in Action:
            assert "wiki:handbook" not in env.visible(user, action)
        assert "wiki:handbook" not in env.searched(user, "travel handbook flights")

    # The group is resolved at query time: once the directory knows it, its members match,
    # with no ACL or content re-sync.
    delta = env.root / "ghosts.json"
    delta.write_text(json.dumps({"groups": [{"id": "ghosts", "members": ["user:bob"]}]}))
    env.app.sync_directory(delta, delta=True)
    assert "wiki:handbook" in env.searched("bob", "travel handbook flights")
    assert "wiki:handbook" not in env.visible("ann")


def test_unknown_documents_are_reported_and_the_rest_applies(env: Env) -> None:
    path = env.write(
        "delta.jsonl",
        [
            {"doc_id": "wiki:nope", "acl": ["everyone"]},
            {"doc_id": "wiki:roadmap", "acl": ["everyone"]},
        ],
    )

    report = env.app.sync_acls(path, "wiki", delta=True)

    assert report.unknown == ["wiki:nope"]
    assert report.changed == 1
    assert "wiki:roadmap" in env.visible("bob")
    assert env.store.get_document("wiki:nope") is None


# --------------------------------------------------------------------------- permission-only


@pytest.mark.parametrize("delta", [False, True], ids=["snapshot", "delta"])
def test_acl_sync_changes_permissions_only(env: Env, delta: bool) -> None:
    before = content(env.store)
    counts = env.store.stats()
    path = env.write(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["user:cleo"]},
            {"doc_id": "wiki:roadmap", "acl": ["everyone", "group:eng"]},
        ],
    )

    report = env.app.sync_acls(path, "wiki", delta=delta)

    assert report.changed == (2 if delta else 3)
    assert env.acls()["wiki:handbook"] == {"user:cleo"}
    after = content(env.store)
    assert after == before
    assert (env.store.stats().chunks, env.store.stats().vectors) == (counts.chunks, counts.vectors)
    # the stored vectors are byte-identical and still the ones the embedder would compute
    embedder = HashingEmbedder()
    for chunk in env.store.get_chunks("wiki:handbook"):
        stored = env.store.vectors_by_text("wiki:handbook")[chunk.text]
        assert np.array_equal(stored, embedder.embed([chunk.text])[0])


def test_cli_acl_sync_changes_permissions_only(env: Env) -> None:
    before = content(env.store)
    path = env.write("wiki.jsonl", [{"doc_id": "wiki:handbook", "acl": ["user:cleo"]}])

    rc, _, err = cli("--config", env.config, "acl", "sync", path, "--corpus", "wiki", "--json")

    assert rc == 0, err
    assert env.acls()["wiki:handbook"] == {"user:cleo"}
    assert content(env.store) == before


# --------------------------------------------------------------------------- all or nothing

BAD_LINES = {
    "unknown-key": '{"doc_id": "wiki:roadmap", "acl": ["group:eng"], "owner": "ann"}',
    "bad-principal": '{"doc_id": "wiki:roadmap", "acl": ["eng"]}',
    "duplicate-doc": '{"doc_id": "wiki:handbook", "acl": ["everyone"]}',
    "not-json": '{"doc_id": "wiki:roadmap", "acl": [',
    "acl-not-a-list": '{"doc_id": "wiki:roadmap", "acl": "group:eng"}',
    "no-doc-id": '{"acl": ["group:eng"]}',
    "not-an-object": '["wiki:roadmap", ["group:eng"]]',
    "principal-not-a-string": '{"doc_id": "wiki:roadmap", "acl": [7]}',
}
MESSAGES = {
    "unknown-key": "unknown key 'owner'",
    "bad-principal": "bad principal 'eng'",
    "duplicate-doc": "appears twice",
    "not-json": "not valid JSON",
    "acl-not-a-list": "'acl' must be a list",
    "no-doc-id": "'doc_id' must be a non-empty string",
    "not-an-object": "expected an object",
    "principal-not-a-string": "principal must be a string",
}


def bad_file(env: Env, kind: str) -> Path:
    """A good change, then the bad line, then another good change."""
    return env.write(
        "bad.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["user:bob"]},
            BAD_LINES[kind],
            {"doc_id": "wiki:minutes", "acl": ["everyone"]},
        ],
    )


@pytest.mark.parametrize("delta", [False, True], ids=["snapshot", "delta"])
@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_a_bad_line_fails_the_whole_sync_and_records_nothing(
    env: Env, kind: str, delta: bool
) -> None:
    acls, syncs = env.acls(), env.store.last_acl_syncs()
    env.clock.advance(minutes=5)  # a recorded sync time would now differ

    with pytest.raises(DirectoryError) as raised:
        env.app.sync_acls(bad_file(env, kind), "wiki", delta=delta)

    assert "bad.jsonl:2" in raised.value.message
    assert MESSAGES[kind] in raised.value.message
    assert env.acls() == acls
    assert env.store.last_acl_syncs() == syncs


def test_a_document_of_another_corpus_is_an_error(env: Env) -> None:
    acls, syncs = env.acls(), env.store.last_acl_syncs()
    env.clock.advance(minutes=5)
    path = env.write(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["user:bob"]},
            {"doc_id": "hr:salaries", "acl": ["everyone"]},
        ],
    )

    with pytest.raises(DirectoryError, match=r"'hr:salaries' belongs to corpus 'hr', not 'wiki'"):
        env.app.sync_acls(path, "wiki")

    assert env.acls() == acls
    assert env.store.last_acl_syncs() == syncs


def test_cli_bad_file_exits_2_writes_nothing_and_reports_json(env: Env) -> None:
    acls, syncs = env.acls(), env.store.last_acl_syncs()

    rc, out, err = cli(
        "--config", env.config, "acl", "sync", bad_file(env, "bad-principal"), "--corpus", "wiki",
        "--json",
    )  # fmt: skip

    assert rc == 2
    assert json.loads(out) == {
        "error": "directory_error",
        "message": "bad.jsonl:2: acl[0]: bad principal 'eng': use 'user:<id>', 'group:<id>' "
        "or 'everyone'",
    }
    assert "error:" in err
    assert env.acls() == acls
    assert env.store.last_acl_syncs() == syncs


# --------------------------------------------------------------------------- sync times


def test_each_successful_sync_records_its_time(env: Env) -> None:
    t0 = env.clock.now
    t1 = env.clock.advance(minutes=10)
    env.app.sync_acls(
        env.write("a.jsonl", [{"doc_id": "wiki:roadmap", "acl": ["group:eng"]}]), "wiki"
    )
    assert env.store.last_acl_syncs() == {"wiki": t1, "hr": t0}

    t2 = env.clock.advance(minutes=10)
    env.app.sync_acls(env.write("b.jsonl", []), "hr", delta=True)  # no change, still a sync
    assert env.store.last_acl_syncs() == {"wiki": t1, "hr": t2}

    t3 = env.clock.advance(minutes=10)
    report = env.app.sync_acls(
        env.write("c.jsonl", [{"doc_id": "wiki:minutes", "acl": ["user:ann"]}]), "wiki", delta=True
    )
    assert report.synced_at == t3.isoformat()
    assert env.store.last_acl_syncs() == {"wiki": t3, "hr": t2}


def test_a_sync_makes_a_stale_corpus_serve_again(env: Env) -> None:
    query = "travel handbook flights hotels"
    assert "wiki:handbook" in env.searched("bob", query)

    env.clock.advance(hours=1, seconds=1)  # past the wiki SLA (1h)
    assert env.searched("bob", query) == set()
    assert env.visible("bob") == set()  # hr (15m) is stale too

    env.app.sync_acls(
        env.write("wiki.jsonl", [{"doc_id": "wiki:handbook", "acl": ["group:staff"]}]),
        "wiki",
        delta=True,
    )
    assert env.searched("bob", query) == {"wiki:handbook"}
    assert env.visible("bob") == {"wiki:handbook"}  # hr still fails closed


def test_cli_acl_sync_reports_and_records_the_sync_time(env: Env) -> None:
    path = env.write(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["group:staff"]},
            {"doc_id": "wiki:roadmap", "acl": ["group:staff"]},
            {"doc_id": "wiki:ghost", "acl": ["everyone"]},
        ],
    )
    hr_before = env.store.last_acl_syncs()["hr"]
    # The file counts as read when it was written (its mtime), stored to the second: on a
    # busy machine that can be more than a second before this test goes on.
    written = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)

    rc, out, err = cli("--config", env.config, "acl", "sync", path, "--corpus", "wiki", "--json")

    finished = datetime.now(UTC)
    assert rc == 0, err
    report = json.loads(out)
    assert {k: v for k, v in report.items() if k != "synced_at"} == {
        "corpus": "wiki",
        "mode": "snapshot",
        "changed": 2,
        "unchanged": 1,
        "revoked": ["wiki:minutes"],
        "unknown": ["wiki:ghost"],
        "unknown_principals": [],
        "warnings": [],
    }
    synced = env.store.last_acl_syncs()
    assert written - timedelta(seconds=1) <= synced["wiki"] <= finished
    assert datetime.fromisoformat(report["synced_at"]) == synced["wiki"]
    assert synced["hr"] == hr_before
    assert env.visible("bob") == {"wiki:handbook", "wiki:roadmap", "hr:policy"}
    assert env.acls()["wiki:minutes"] == frozenset()


def test_cli_acl_sync_delta_and_human_output(env: Env) -> None:
    path = env.write("wiki.jsonl", [{"doc_id": "wiki:minutes", "acl": ["user:bob"]}])

    rc, out, err = cli("--config", env.config, "acl", "sync", path, "--corpus", "wiki", "--delta")

    assert rc == 0, err
    assert "wiki (delta): 1 changed, 0 unchanged, 0 revoked, 0 unknown" in out
    assert env.acls()["wiki:handbook"] == {"group:staff"}  # untouched by a delta
    assert env.visible("bob") == {"wiki:handbook", "wiki:minutes", "hr:policy"}

    rc, out, _ = cli(
        "--config", env.config, "acl", "sync", env.write("s.jsonl", []), "--corpus", "hr"
    )
    assert rc == 0
    assert "revoked (not in snapshot): hr:policy" in out
    assert "revoked (not in snapshot): hr:salaries" in out
