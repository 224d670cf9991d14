"""Directory sources: configuration, the all-or-nothing sync, state on both stores, and the
directory SLA that makes every user the source provides get nothing once it has passed.

Readers here are in-process fakes of :class:`~clearance.sources.directory.base.DirectoryReader`
so the service's guarantees are tested apart from any provider's HTTP API. Each fail-closed
assertion is run once more against a deliberately leaky variant (a service that serves the
stale directory) to show the same assertion catches it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.access.directory import DirectoryDoc, Group, User
from clearance.app import Clearance
from clearance.config import Settings
from clearance.errors import ConfigError, SourceError
from clearance.sources.directory import registry
from clearance.sources.directory.base import DirectoryRead, Progress
from clearance.sources.directory.service import (
    directory_source_status,
    sync_directory_source,
)
from clearance.sources.scheduler import Scheduler
from clearance.store.base import Store
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings
from factories import chunks, document
from pg import PgDatabase, server

QUERY = "London revenue"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def snapshot(users: dict[str, list[str]], inactive: tuple[str, ...] = ()) -> DirectoryDoc:
    groups: dict[str, set[str]] = {}
    for user, names in users.items():
        for name in names:
            groups.setdefault(name, set()).add(f"user:{user}")
    return DirectoryDoc(
        source="fake",
        users={u: User(u, active=u not in inactive, aliases=(f"{u}@example.com",)) for u in users},
        groups={g: Group(g, frozenset(m)) for g, m in groups.items()},
    )


class FakeReader:
    """Hands back the snapshots it is given in turn; ``None`` raises as a failed page does."""

    def __init__(self, *reads: DirectoryDoc | None) -> None:
        self.reads = list(reads)
        self.cursors: list[str | None] = []
        self.closed = False

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        self.cursors.append(cursor)
        doc = self.reads.pop(0)
        if doc is None:
            raise SourceError("page 3 of /users: HTTP 500")
        if progress is not None:
            progress("users", len(doc.users))
        return DirectoryRead(doc, api_calls=7, cursor=f"cursor-{len(self.cursors)}")

    def close(self) -> None:
        self.closed = True


def directory_settings(root: Path, **extra: Any) -> Settings:
    table = {"kind": "fake", "interval": "5m", "sla": "1h", **extra}
    return make_settings(
        root,
        {
            "corpora": {"wiki": {"revocation_sla": "1h"}},
            "directories": {"corp": table},
        },
    )


def serving(settings: Settings, store: Store, clock: Clock) -> Clearance:
    app = Clearance(settings, store, embedder=None, clock=clock)
    doc = document("wiki:london", corpus="wiki", acl=frozenset({"group:staff"}))
    store.upsert(doc, chunks(doc, ["Revenue of the London office grew."]))
    return app


def hits(app: Clearance, user: str) -> list[str]:
    app.store.record_acl_sync("wiki", app.clock())  # keep the corpus itself fresh
    return [h.document.doc_id for h in app.search(user, QUERY).hits]


@pytest.fixture(autouse=True)
def no_fake_kind_left() -> Iterator[None]:
    yield
    registry._KINDS._factories.pop("fake", None)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(tmp_path: Path, store: SQLiteStore, clock: Clock) -> Clearance:
    return serving(directory_settings(tmp_path), store, clock)


# ---------------------------------------------------------------------------- configuration


def test_a_directory_source_is_configured_with_interval_sla_and_credentials(
    tmp_path: Path,
) -> None:
    settings = directory_settings(
        tmp_path, credentials={"client_secret": "GRAPH_SECRET"}, options={"tenant": "t"}
    )

    source = settings.directories["corp"]

    assert (source.kind, source.interval_s, source.sla_s) == ("fake", 300.0, 3600.0)
    assert source.credentials == {"client_secret": "GRAPH_SECRET"}
    assert source.options == {"tenant": "t"}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"interval": "1h", "sla": "1h"}, "directories.corp.interval: 3600s is not shorter"),
        ({"sla": "0s"}, "directories.corp.sla: must be longer than 0"),
        ({"kind": ""}, "directories.corp.kind: required"),
        ({"credentials": {"token": "not a name"}}, "directories.corp.credentials.token"),
        ({"colour": "red"}, "directories.corp.colour"),
    ],
)
def test_bad_directory_settings_name_the_key(
    tmp_path: Path, table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        directory_settings(tmp_path, **table)


def test_two_directory_sources_are_refused_because_each_owns_the_whole_directory(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match="only one directory source"):
        make_settings(
            tmp_path,
            {"directories": {"a": {"kind": "entra"}, "b": {"kind": "okta"}}},
        )


def test_an_unknown_kind_names_the_key_and_the_known_kinds(tmp_path: Path) -> None:
    settings = directory_settings(tmp_path, kind="nis")

    with pytest.raises(ConfigError, match=r"directories\.corp\.kind: unknown kind 'nis'"):
        registry.build_directory_reader(settings, settings.directories["corp"], env={})


def test_a_registered_kind_is_built_with_its_options_and_secrets(tmp_path: Path) -> None:
    built: list[tuple[str, Any, str]] = []

    def factory(name: str, options: Any, context: registry.DirectoryContext) -> FakeReader:
        built.append((name, dict(options), context.secret("token").reveal()))
        return FakeReader()

    registry.register_directory_reader("fake", factory)
    settings = directory_settings(
        tmp_path, credentials={"token": "DIR_TOKEN"}, options={"domain": "example.com"}
    )

    reader = registry.build_directory_reader(
        settings, settings.directories["corp"], env={"DIR_TOKEN": "s3cret"}
    )

    assert isinstance(reader, FakeReader)
    assert built == [("corp", {"domain": "example.com"}, "s3cret")]


def test_a_missing_credential_names_the_key(tmp_path: Path) -> None:
    def factory(name: str, options: Any, context: registry.DirectoryContext) -> FakeReader:
        context.secret("token")
        return FakeReader()

    registry.register_directory_reader("fake", factory)
    settings = directory_settings(tmp_path)

    with pytest.raises(ConfigError, match=r"directories\.corp\.credentials\.token: required"):
        registry.build_directory_reader(settings, settings.directories["corp"], env={})


# ---------------------------------------------------------------------------- sync


def test_a_sync_applies_the_snapshot_as_one_version_and_removes_what_it_lacks(
    app: Clearance,
) -> None:
    seen: list[tuple[str, int]] = []
    first = sync_directory_source(
        app,
        "corp",
        reader=FakeReader(snapshot({"ann": ["staff"], "bob": ["staff"]})),
        progress=lambda what, n: seen.append((what, n)),
    )
    version = app.directory.version
    second = sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))

    assert first.ok and second.ok and seen == [("users", 2)]
    assert app.directory.version == version + 1
    assert set(app.directory.users) == {"ann"}
    assert hits(app, "ann") == ["wiki:london"]
    assert hits(app, "bob") == []
    assert app.directory.resolve("ANN@example.com") is not None


def test_a_failed_read_applies_nothing_and_keeps_the_last_success(
    app: Clearance, clock: Clock
) -> None:
    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))
    before = app.directory
    clock.now += timedelta(minutes=10)

    report = sync_directory_source(app, "corp", reader=FakeReader(None))

    assert not report.ok and "HTTP 500" in (report.error or "")
    assert app.directory == before
    [row] = directory_source_status(app)
    assert row["last_success"] == T0.isoformat()
    assert row["last_attempt"] == clock.now.isoformat()
    assert "HTTP 500" in row["last_error"]


def test_a_snapshot_without_users_is_refused(app: Clearance) -> None:
    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))

    report = sync_directory_source(app, "corp", reader=FakeReader(snapshot({})))

    assert not report.ok and "no users" in (report.error or "")
    assert set(app.directory.users) == {"ann"}


def test_the_cursor_of_one_read_is_handed_to_the_next(app: Clearance) -> None:
    reader = FakeReader(snapshot({"ann": []}), snapshot({"ann": []}))
    sync_directory_source(app, "corp", reader=reader)
    sync_directory_source(app, "corp", reader=reader)

    assert reader.cursors == [None, "cursor-1"]


def test_the_scheduler_reads_the_directory_source_on_its_interval(
    tmp_path: Path, store: SQLiteStore, clock: Clock
) -> None:
    reads: list[FakeReader] = []

    def factory(name: str, options: Any, context: registry.DirectoryContext) -> FakeReader:
        reads.append(FakeReader(snapshot({"ann": ["staff"]}), snapshot({"ann": ["staff"]})))
        return reads[-1]

    registry.register_directory_reader("fake", factory)
    app = serving(directory_settings(tmp_path), store, clock)
    scheduler = Scheduler(app, clock=clock)

    scheduler.tick()
    clock.now += timedelta(minutes=1)
    scheduler.tick()
    clock.now += timedelta(minutes=5)
    scheduler.tick()

    # one reader, kept between syncs so a delta reader keeps its snapshot
    assert len(reads) == 1 and reads[0].cursors == [None, "cursor-1"]
    assert [r.ok for r in scheduler.directory_reports] == [True]
    scheduler.close_directory_readers()
    assert reads[0].closed


# ---------------------------------------------------------------------------- the SLA


def stale_then_searched(app: Clearance, clock: Clock) -> list[str]:
    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))
    assert hits(app, "ann") == ["wiki:london"]
    clock.now += timedelta(minutes=59)
    assert hits(app, "ann") == ["wiki:london"]  # within the sla
    sync_directory_source(app, "corp", reader=FakeReader(None))  # the provider is down
    clock.now += timedelta(minutes=2)
    return hits(app, "ann")


def test_past_the_directory_sla_every_user_it_provides_gets_nothing(
    app: Clearance, clock: Clock
) -> None:
    assert stale_then_searched(app, clock) == []
    assert app.principal("ann").principals == frozenset()
    reason = app.status()["directory"]["failing_closed"]
    assert "longer ago than its sla of 3600s" in reason
    explained = app.explain("ann", "wiki:london")
    assert explained["principal"]["directory_failing_closed"] == reason
    assert not explained["decisions"]["retrieve"]["allow"]
    [row] = directory_source_status(app)
    assert row["failing_closed"] and row["reason"] == reason


def test_reverse_proof_a_service_serving_the_stale_directory_is_caught(
    app: Clearance, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "directory_failing_closed", lambda: None)

    assert stale_then_searched(app, clock) == ["wiki:london"]


def test_the_next_success_serves_again(app: Clearance, clock: Clock) -> None:
    stale_then_searched(app, clock)

    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))

    assert hits(app, "ann") == ["wiki:london"]
    assert app.status()["directory"]["failing_closed"] is None


def test_a_source_that_never_synced_fails_closed(app: Clearance, write_directory: Any) -> None:
    path = write_directory(app.settings.root / "d.json", {"ann": ["staff"]})
    app.sync_directory(path)  # an upload does not stand for the configured source

    assert hits(app, "ann") == []
    assert "never synced" in app.status()["directory"]["failing_closed"]


def test_a_last_success_in_the_future_fails_closed(app: Clearance, clock: Clock) -> None:
    clock.now += timedelta(days=1)
    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"]})))
    clock.now -= timedelta(days=1)

    assert hits(app, "ann") == []


# ---------------------------------------------------------------------------- state on both stores


def state_round_trip(app: Clearance, clock: Clock) -> dict[str, Any]:
    sync_directory_source(app, "corp", reader=FakeReader(snapshot({"ann": ["staff"], "bob": []})))
    clock.now += timedelta(minutes=90)
    [row] = directory_source_status(app)
    return row


def test_state_is_kept_in_sqlite(app: Clearance, clock: Clock) -> None:
    row = state_round_trip(app, clock)

    assert (row["api_calls"], row["users"], row["groups"]) == (7, 2, 1)
    assert row["lag_seconds"] == 5400.0 and row["failing_closed"]


@pytest.fixture
def pg_store() -> Iterator[Store]:
    from clearance.store.postgres import PostgresStore

    found = server()
    database: PgDatabase = found.database()
    store = PostgresStore(database.reader_dsn, database.writer_dsn)
    try:
        yield store
    finally:
        store.close()
        found.drop(database)


def test_state_is_kept_in_postgres(tmp_path: Path, pg_store: Store, clock: Clock) -> None:
    app = serving(directory_settings(tmp_path), pg_store, clock)

    row = state_round_trip(app, clock)

    assert (row["api_calls"], row["users"], row["groups"]) == (7, 2, 1)
    assert row["lag_seconds"] == 5400.0 and row["failing_closed"]
    assert set(app.directory.users) == {"ann", "bob"}


# ---------------------------------------------------------------------------- a failing page


def after_a_failing_page(app: Clearance, reader_class: type[Any]) -> list[str]:
    """ann reads the document through group staff; then staff's member page fails once."""
    from clearance.secrets import Secret
    from okta_server import TOKEN, OktaOrg, okta_server

    org = OktaOrg()
    org.add_user("00u1", "ann")
    org.groups = {"staff": ["00u1"]}
    with okta_server(org) as url:
        okta = reader_class("corp", url, Secret(TOKEN), sleep=lambda s: None)
        assert sync_directory_source(app, "corp", reader=okta).ok
        assert hits(app, "ann") == ["wiki:london"]
        org.fail_path = "/api/v1/groups/staff/users"
        sync_directory_source(app, "corp", reader=okta)
        okta.close()
    return hits(app, "ann")


def test_a_failing_page_changes_nothing(app: Clearance) -> None:
    from clearance.sources.directory.okta import OktaReader

    assert after_a_failing_page(app, OktaReader) == ["wiki:london"]


def test_reverse_proof_a_reader_skipping_a_failed_page_is_caught(app: Clearance) -> None:
    from clearance.sources.directory.okta import OktaReader

    class Skipping(OktaReader):
        def _list(self, path: str) -> Iterator[Any]:
            try:
                yield from list(super()._list(path))
            except SourceError:
                return  # a page that failed is left out: the group looks empty

    assert after_a_failing_page(app, Skipping) == []
