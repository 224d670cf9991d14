"""API tokens: shown once, stored hashed, verified by id and constant-time comparison,
refused once revoked or expired."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from clearance.api.tokens import TokenStore, parse_token
from clearance.store.sqlite import SQLiteStore
from clitools import cli

from .conftest import Live, create_token


@pytest.fixture
def tokens(tmp_path: Path) -> TokenStore:
    return TokenStore(SQLiteStore(tmp_path / "index.db"))


def test_a_created_token_verifies_and_only_its_hash_is_stored(
    tokens: TokenStore, tmp_path: Path
) -> None:
    token, record = tokens.create("ann")

    verified = tokens.verify(token)

    assert verified is not None and verified.user_id == "ann" and not verified.admin
    parsed = parse_token(token)
    assert parsed is not None and parsed[0] == record.id
    raw = (tmp_path / "index.db").read_bytes()
    assert parsed[1].encode() not in raw
    for suffix in ("-wal", "-shm"):
        extra = tmp_path / f"index.db{suffix}"
        assert not extra.exists() or parsed[1].encode() not in extra.read_bytes()


def test_wrong_secret_malformed_and_unknown_tokens_are_refused(tokens: TokenStore) -> None:
    token, record = tokens.create("ann")
    last = "A" if token[-1] != "A" else "B"

    assert tokens.verify(token[:-1] + last) is None
    assert tokens.verify("not a token") is None
    assert tokens.verify(token.replace(record.id, "0" * 12)) is None
    assert tokens.verify(token + "x") is None


def test_reading_tokens_never_creates_the_table(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.db")
    tokens = TokenStore(store)

    assert tokens.verify("clr_000000000000_" + "a" * 43) is None
    assert tokens.list() == []

    with sqlite3.connect(tmp_path / "index.db") as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert "api_tokens" not in names


def test_revocation_and_expiry_refuse_the_token(tokens: TokenStore) -> None:
    token, record = tokens.create("ann", expires_in_s=3600)
    tokens.revoke(record.id)
    assert tokens.verify(token) is None

    past = datetime.now(UTC) - timedelta(days=2)
    old = TokenStore(tokens.store, clock=lambda: past)
    expired, _ = old.create("ann", expires_in_s=86400)
    assert tokens.verify(expired) is None
    assert old.verify(expired) is not None


def test_token_cli_creates_once_lists_without_secret_and_revokes(project: Path) -> None:
    rc, out, err = cli("--config", project, "token", "create", "--user", "ann", "--json")
    assert rc == 0, err
    created = json.loads(out)
    assert created["token"].startswith("clr_") and created["expires"] is None

    rc, out, _ = cli(
        "--config",
        project,
        "token",
        "create",
        "--user",
        "root",
        "--admin",
        "--expires",
        "30d",
        "--json",
    )
    admin = json.loads(out)
    assert rc == 0 and admin["admin"] is True and admin["expires"] is not None

    rc, out, _ = cli("--config", project, "token", "list", "--json")
    listed = {t["id"]: t for t in json.loads(out)["tokens"]}
    assert rc == 0 and created["id"] in listed and admin["id"] in listed
    assert created["token"] not in out and "token" not in listed[created["id"]]

    rc, out, _ = cli("--config", project, "token", "revoke", created["id"])
    assert rc == 0
    rc, out, _ = cli("--config", project, "token", "list", "--json")
    assert {t["id"]: t for t in json.loads(out)["tokens"]}[created["id"]]["revoked"]

    assert cli("--config", project, "token", "revoke", "nope")[0] == 3


def test_token_for_a_user_not_in_the_directory_warns(project: Path) -> None:
    rc, out, err = cli("--config", project, "token", "create", "--user", "ghost")

    assert rc == 0
    assert "not in the directory" in err
    assert "clr_" in out


def test_token_cli_refuses_a_bad_duration(project: Path) -> None:
    rc, _, err = cli("--config", project, "token", "create", "--user", "ann", "--expires", "soon")

    assert rc == 2 and "--expires" in err


def test_a_token_reaches_only_the_routes_of_its_scopes(live: Live) -> None:
    """A token made for searching cannot ask, nor a reader administer; /v1/me lists the
    scopes. Reverse proof: the default token of the same user does both."""
    searcher = create_token(live.config, "ann", "--scope", "search")["token"]
    headers = {"Authorization": f"Bearer {searcher}"}
    assert (
        httpx.post(f"{live.url}/v1/search", json={"query": "trains"}, headers=headers).status_code
        == 200
    )
    refused = httpx.post(f"{live.url}/v1/ask", json={"question": "Trains?"}, headers=headers)
    assert refused.status_code == 403 and "'ask'" in refused.text
    me = httpx.get(f"{live.url}/v1/me", headers=headers).json()
    assert me["scopes"] == ["search"]
    default = {"Authorization": f"Bearer {live.tokens['ann']}"}
    assert (
        httpx.post(f"{live.url}/v1/ask", json={"question": "Trains?"}, headers=default).status_code
        == 200
    )
    assert httpx.get(f"{live.url}/v1/me", headers=default).json()["scopes"] == ["ask", "search"]


def test_token_cli_refuses_scopes_no_token_may_have(project: Path) -> None:
    for extra in (("--scope", "scim", "--scope", "ask"), ("--scope", "admin")):
        rc, _, err = cli("--config", project, "token", "create", "--user", "ann", *extra)
        assert rc == 2 and "--scope" in err, err
