"""The log of administrator actions: each directory sync, ACL sync, ingestion, token change
and SCIM write made through the CLI or the HTTP API is one row with its actor and outcome,
readable by ``clearance audit --actor`` and ``GET /v1/actions`` (administrators only), on
SQLite and PostgreSQL."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from clearance.store.postgres import PostgresStore
from clearance.store.sqlite import SQLiteStore
from clearance.trace.actions import AdminActions
from clitools import cli

from .conftest import DIRECTORY, create_token, make_project, serving

ME = f"cli:{getpass.getuser()}"


def audit(config: Path, *extra: str) -> list[dict[str, Any]]:
    rc, out, err = cli("--config", config, "audit", *extra, "--json")
    assert rc == 0, err
    actions: list[dict[str, Any]] = json.loads(out)["actions"]
    return actions


def test_each_cli_action_is_one_entry_with_its_actor_and_outcome(tmp_path: Path) -> None:
    config = make_project(tmp_path)  # ingests docs/ and syncs the directory, by the CLI
    token = create_token(config, "ann")
    rc, _, err = cli("--config", config, "token", "revoke", token["id"])
    assert rc == 0, err
    bad = tmp_path / "broken.json"
    bad.write_text("{", encoding="utf-8")
    rc, _, _ = cli("--config", config, "directory", "sync", bad)
    assert rc != 0
    entries = audit(config, "--actor", ME)
    assert [e["action"] for e in reversed(entries)] == [
        "ingest",
        "directory.sync",
        "token.create",
        "token.revoke",
        "directory.sync",
    ]
    assert entries[0]["outcome"].startswith("failed: ") and entries[0]["target"] == "broken.json"
    assert entries[1]["target"] == token["id"] and entries[1]["outcome"] == "ok"
    assert "secret" not in json.dumps(entries) and token["token"] not in json.dumps(entries)
    assert [e["action"] for e in audit(config, "--action", "token")] == [
        "token.revoke",
        "token.create",
    ]
    assert audit(config, "--actor", "someone-else") == []
    rc, _, err = cli("--config", config, "audit", "--doc", "files:travel.md", "--actor", ME)
    assert rc == 2 and "--doc" in err


def test_http_and_scim_actions_name_who_did_them(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    admin = create_token(config, "root", "--admin")["token"]
    reader = create_token(config, "ann")["token"]
    provisioning = create_token(config, "okta-provisioning", "--scope", "scim")["token"]
    with serving(config) as url:
        as_admin = {"Authorization": f"Bearer {admin}"}
        synced = httpx.post(
            f"{url}/v1/directory/sync", content=json.dumps(DIRECTORY), headers=as_admin
        )
        assert synced.status_code == 200, synced.text
        made = httpx.post(
            f"{url}/scim/v2/Users",
            json={"userName": "new.hire@acme.test"},
            headers={"Authorization": f"Bearer {provisioning}"},
        )
        assert made.status_code == 201, made.text
        listed = httpx.get(f"{url}/v1/actions", params={"actor": "root"}, headers=as_admin)
        assert listed.status_code == 200
        assert [(a["action"], a["outcome"]) for a in listed.json()["actions"]] == [
            ("directory.sync", "ok")
        ]
        scim = httpx.get(f"{url}/v1/actions", params={"action": "scim"}, headers=as_admin)
        assert [(a["actor"], a["action"], a["target"]) for a in scim.json()["actions"]] == [
            ("okta-provisioning", "scim.users.create", "new.hire@acme.test")
        ]
        # Reverse proof of the gate: a reader is refused what the administrator reads.
        refused = httpx.get(f"{url}/v1/actions", headers={"Authorization": f"Bearer {reader}"})
        assert refused.status_code == 403


@pytest.fixture
def store(backend_store: SQLiteStore | PostgresStore) -> SQLiteStore | PostgresStore:
    """SQLite, then PostgreSQL (tests/pg.py)."""
    return backend_store


def test_the_action_log_reads_the_same_on_both_backends(
    store: SQLiteStore | PostgresStore,
) -> None:
    now = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
    clock = [now]
    log = AdminActions(store, clock=lambda: clock[0])
    assert log.entries() == []
    log.record("root", "directory.sync", "request body", detail={"version": 2})
    clock[0] = now + timedelta(minutes=5)
    with pytest.raises(ValueError), log.action("entra", "scim.users.patch", "ann"):
        raise ValueError("bad op")
    clock[0] = now + timedelta(minutes=10)
    with log.action(None, "ingest", "x"):  # no actor: a library call, not logged
        pass
    entries = log.entries()
    assert [(e["actor"], e["action"], e["outcome"]) for e in entries] == [
        ("entra", "scim.users.patch", "failed: bad op"),
        ("root", "directory.sync", "ok"),
    ]
    assert entries[1]["detail"] == {"version": 2}
    assert [e["actor"] for e in log.entries(since=now + timedelta(minutes=1))] == ["entra"]
    assert [e["actor"] for e in log.entries(action="scim")] == ["entra"]
    assert log.entries(action="scim.users") == log.entries(action="scim")
    assert log.entries(action="sci") == []  # a prefix is a whole dotted part
