"""A well-formed principal the directory does not know is kept — it matches nobody — and
reported: ``group:employes is not in the directory`` (docs/access.md).

``acl sync`` and ``explain`` report it, through the API and the real command; the directory
answers the question with :meth:`Directory.unknown_principals`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clearance.access.directory import Directory, Group, User, unknown_principal_warning

from .syncenv import SyncEnv, sync_env

TYPO = "group:employes is not in the directory"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SyncEnv]:
    with sync_env(tmp_path) as env:
        yield env


def typo_file(env: SyncEnv) -> Path:
    return env.write_jsonl(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["group:employes"]},  # the typo
            {"doc_id": "wiki:roadmap", "acl": ["group:eng", "user:ann", "everyone"]},
        ],
    )


# --------------------------------------------------------------------------- the directory


def test_unknown_principals_names_only_what_the_directory_lacks() -> None:
    directory = Directory(
        [User("ann", True), User("erin", False)], [Group("eng", frozenset({"user:ann"}))]
    )

    unknown = directory.unknown_principals(
        ["everyone", "user:ann", "user:erin", "group:eng", "group:employes", "user:zed",
         "group:employes"]
    )  # fmt: skip

    assert unknown == ["group:employes", "user:zed"]  # sorted, once; disabled erin is known
    assert unknown_principal_warning("group:employes") == TYPO


def test_a_directory_that_knows_the_group_reports_nothing() -> None:
    """The check can tell a typo from a real group (its reverse)."""
    assert Directory([], [Group("employes")]).unknown_principals(["group:employes"]) == []
    assert Directory().unknown_principals(["group:employes"]) == ["group:employes"]


# --------------------------------------------------------------------------- acl sync


def test_acl_sync_applies_and_reports_an_unknown_group(env: SyncEnv) -> None:
    report = env.app.sync_acls(typo_file(env), "wiki", delta=True)

    assert report.unknown_principals == ["group:employes"]
    assert report.warnings == [TYPO]
    assert report.to_dict()["warnings"] == [TYPO]
    # kept, as written: it matches nobody until the directory learns the group
    assert env.state()["acls"]["wiki:handbook"] == {"group:employes"}
    access = env.app.access()
    for user in ("ann", "bob"):
        flt = access.search_filter(access.principal(user), None, env.app.store.corpora())
        assert "wiki:handbook" not in env.app.store.allowed_doc_ids(flt)


def test_cli_acl_sync_warns_about_an_unknown_group(env: SyncEnv) -> None:
    rc, out, err = env.run("acl", "sync", typo_file(env), "--corpus", "wiki", "--delta")

    assert rc == 0, err
    assert "wiki (delta): 2 changed" in out
    assert err.strip().splitlines() == [f"warning: {TYPO}"]


def test_cli_acl_sync_json_lists_unknown_principals(env: SyncEnv) -> None:
    rc, out, _ = env.run("acl", "sync", typo_file(env), "--corpus", "wiki", "--json")

    assert rc == 0, out
    report = json.loads(out)
    assert report["unknown_principals"] == ["group:employes"]
    assert report["warnings"] == [TYPO]


def test_acl_sync_of_known_principals_warns_about_nothing(env: SyncEnv) -> None:
    path = env.write_jsonl("ok.jsonl", [{"doc_id": "wiki:handbook", "acl": ["group:employees"]}])

    rc, _, err = env.run("acl", "sync", path, "--corpus", "wiki", "--delta")

    assert rc == 0, err
    assert err == ""
    assert env.app.sync_acls(path, "wiki", delta=True).warnings == []


# --------------------------------------------------------------------------- explain


def test_explain_reports_the_unknown_group_of_the_document(env: SyncEnv) -> None:
    env.app.sync_acls(typo_file(env), "wiki", delta=True)

    data = env.app.explain("ann", "wiki:handbook")

    assert data["document"]["unknown_principals"] == ["group:employes"]
    assert data["warnings"] == [TYPO]
    assert data["decisions"]["retrieve"]["reasons"] == ["not_in_acl"]
    known = env.app.explain("ann", "wiki:roadmap")
    assert (known["document"]["unknown_principals"], known["warnings"]) == ([], [])


def test_cli_explain_warns_about_the_unknown_group(env: SyncEnv) -> None:
    env.app.sync_acls(typo_file(env), "wiki", delta=True)

    rc, out, err = env.run("explain", "--user", "ann", "--doc", "wiki:handbook")

    assert rc == 0, err
    assert "retrieve: DENY" in out
    assert err.strip().splitlines() == [f"warning: {TYPO}"]

    rc, out, err = env.run("explain", "--user", "ann", "--doc", "wiki:handbook", "--json")
    assert rc == 0, err
    assert json.loads(out)["warnings"] == [TYPO]


def test_the_warning_goes_once_the_directory_learns_the_group(env: SyncEnv) -> None:
    env.app.sync_acls(typo_file(env), "wiki", delta=True)
    delta = env.write_json("delta.json", {"groups": [{"id": "employes", "members": ["user:bob"]}]})
    assert env.run("directory", "sync", delta, "--delta")[0] == 0

    rc, out, err = env.run("explain", "--user", "bob", "--doc", "wiki:handbook")

    assert rc == 0, err
    assert err == ""
    assert "retrieve: ALLOW" in out
