"""SCIM writes and token scopes on both backends: each write one directory version stored
with its SCIM resources, concurrent provisioning requests losing nothing, and tokens whose
scopes survive the round trip (rows from before scopes keep what they could do)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clearance.access import scim
from clearance.access.directory import Directory, parse_directory
from clearance.api.tokens import TokenStore
from clearance.app import Clearance
from clearance.config import Settings
from clearance.store.postgres import PostgresStore
from clearance.store.sqlite import SQLiteStore

BASE = "https://clearance.example/scim/v2"


@pytest.fixture
def store(backend_store: SQLiteStore | PostgresStore) -> SQLiteStore | PostgresStore:
    """SQLite, then PostgreSQL (tests/pg.py)."""
    return backend_store


def write(kind: str, method: str, ident: str | None, body: Any) -> Any:
    def change(directory: Directory, state: scim.ScimState) -> scim.ScimWrite:
        return scim.apply(
            directory, state, kind=kind, method=method, ident=ident, body=body, base=BASE
        )

    return change


def test_a_scim_write_is_one_directory_version_with_its_resources(
    store: SQLiteStore | PostgresStore, settings_factory: Callable[..., Settings]
) -> None:
    app = Clearance(settings_factory({}), store)
    before = app.directory.version
    done = app.provision(write("Users", "POST", None, {"userName": "ann", "externalId": "e1"}))
    assert done.resource is not None and done.resource["id"] == "ann"
    assert app.directory.version == before + 1
    assert app.principal("ann").active
    directory, state = app.scim_view()
    assert directory.resolve("e1") is not None and state.users["ann"]["externalId"] == "e1"
    app.provision(
        write(
            "Users", "PATCH", "ann", {"Operations": [{"op": "replace", "value": {"active": False}}]}
        )
    )
    assert not app.principal("ann").active  # the next read sees the deactivation


def test_concurrent_provisioning_loses_no_change(
    store: SQLiteStore | PostgresStore, settings_factory: Callable[..., Settings]
) -> None:
    app = Clearance(settings_factory({}), store)
    app.provision(write("Groups", "POST", None, {"displayName": "sales"}))
    names = [f"u{i}" for i in range(8)]
    for name in names:
        app.provision(write("Users", "POST", None, {"userName": name}))
    errors: list[BaseException] = []

    def join(name: str) -> None:
        try:
            app.provision(
                write(
                    "Groups",
                    "PATCH",
                    "sales",
                    {"Operations": [{"op": "add", "path": "members", "value": [{"value": name}]}]},
                )
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=join, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert app.directory.groups["sales"].members == {f"user:{n}" for n in names}


def test_reverse_proof_read_then_write_outside_one_transaction_loses_changes(
    tmp_path: Path, settings_factory: Callable[..., Settings]
) -> None:
    """The naive writer — read the directory, change it, write it back in another
    transaction — loses concurrent members, which the test above would catch."""
    store = SQLiteStore(tmp_path / "naive.db")
    app = Clearance(settings_factory({}), store)
    app.sync_directory_data(
        '{"users": [{"id": "a", "active": true}, {"id": "b", "active": true}], '
        '"groups": [{"id": "sales", "members": []}]}',
        "seed",
    )
    first, second = app.directory, app.directory  # both writers read before either writes
    for reader, member in ((first, "a"), (second, "b")):
        doc = parse_directory(
            {"users": [], "groups": [{"id": "sales", "members": [f"user:{member}"]}],
             "removed_users": []},
            source="naive",
        )  # fmt: skip
        store.set_meta("directory", reader.apply_delta(doc).to_json())
    assert app.directory.groups["sales"].members == {"user:b"}  # "a" was lost
    store.close()


def test_token_scopes_round_trip_and_old_rows_keep_their_rights(
    store: SQLiteStore | PostgresStore,
) -> None:
    tokens = TokenStore(store)
    secret, record = tokens.create("entra-provisioning", scopes=frozenset({"scim"}))
    assert record.scopes == {"scim"}
    verified = tokens.verify(secret)
    assert verified is not None and verified.scopes == {"scim"}
    reader_secret, _ = tokens.create("ann")
    admin_secret, _ = tokens.create("root", admin=True)
    assert tokens.verify(reader_secret).scopes == {"search", "ask"}  # type: ignore[union-attr]
    assert tokens.verify(admin_secret).scopes == {"search", "ask", "admin"}  # type: ignore[union-attr]
    with store.transaction() as db:
        db.execute("UPDATE api_tokens SET scopes = NULL WHERE user_id = 'root'")
    assert tokens.verify(admin_secret).scopes == {"search", "ask", "admin"}  # type: ignore[union-attr]
    for bad, admin in (({"scim", "ask"}, False), ({"admin"}, False), ({"fly"}, False)):
        with pytest.raises(ValueError):
            tokens.create("x", admin=admin, scopes=frozenset(bad))


def test_an_index_from_before_scopes_reads_and_gains_the_column(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "old.db")
    with store.transaction() as db:
        db.execute(
            "CREATE TABLE api_tokens (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, "
            "admin INTEGER NOT NULL, secret_sha256 TEXT NOT NULL, created_at TEXT NOT NULL, "
            "expires_at TEXT, revoked_at TEXT)"
        )
    tokens = TokenStore(store)
    assert tokens.list() == []  # readable before any write adds the column
    secret, _ = tokens.create("ann", scopes=frozenset({"search"}))
    assert tokens.verify(secret).scopes == {"search"}  # type: ignore[union-attr]
    store.close()
