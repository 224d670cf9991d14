"""The Google Drive connector against a fake Drive and Directory on loopback, through the sync
engine into a real index: the changes feed, inherited permissions, Google Groups, throttling,
rejected page tokens and interrupted syncs.

Each invariant is shown with a reverse proof: a deliberately broken connector that the same
assertion catches."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.errors import ConfigError
from clearance.secrets import Secret
from clearance.sources.base import ItemRef, Tombstone
from clearance.sources.gdrive import (
    DriveConnector,
    drive_connector,
    parse_options,
    parse_service_account,
)
from clearance.sources.service import source_status, sync_source
from clearance.sources.sync import SyncReport
from gdrive_server import DRIVE, GOOGLE_DOC, KEY_JSON, SUBJECT, FakeDrive

from .conftest import Clock
from .connector_conformance import AllOrNothing, AnyoneWithTheLink, GroupRevocation, InheritedAccess
from .connector_sync import SyncedSource, indexed_app

ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"
KEY = "sources.gd.credentials.service_account"


def user(email: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "user", "role": role, "emailAddress": email}


def group(email: str) -> dict[str, Any]:
    return {"type": "group", "role": "writer", "emailAddress": email}


def domain(name: str) -> dict[str, Any]:
    return {"type": "domain", "role": "reader", "domain": name, "allowFileDiscovery": True}


def anyone(discoverable: bool = False) -> dict[str, Any]:
    return {"type": "anyone", "role": "reader", "allowFileDiscovery": discoverable}


@dataclass
class Workspace(SyncedSource):
    source = "gd"
    drive: FakeDrive
    app: Clearance
    clock: Clock
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def connector(self) -> DriveConnector:
        options = parse_options("gd", self.app.settings.sources["gd"].options)
        account = parse_service_account(Secret(KEY_JSON), KEY)
        return drive_connector("gd", options, account, sleep=self.waits.append)


def doc(file_id: str) -> str:
    return f"gdrive:{DRIVE}/{file_id}"


def make_workspace(tmp_path: Path) -> Iterator[Workspace]:
    with FakeDrive() as drive:
        config = {
            "kind": "gdrive",
            "credentials": {"service_account": "GDRIVE_KEY"},
            "options": {
                "drive_id": DRIVE,
                "subject": SUBJECT,
                "drive_url": drive.drive_url,
                "directory_url": drive.directory_url,
                "token_url": drive.token_url,
                "domains": {"example.com": "group:all-staff"},
            },
        }
        people = (ALICE, BOB, CAROL)
        with indexed_app(tmp_path, "gd", config, people=people, staff_group=True) as (app, clock):
            yield Workspace(drive, app, clock)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    yield from make_workspace(tmp_path)


# --------------------------------------------------------------------------- the first sync


def test_a_shared_drive_is_read_page_by_page_through_throttling_and_errors(
    ws: Workspace,
) -> None:
    drive = ws.drive
    drive.groups["finance@example.com"] = {ALICE, "controllers@example.com"}
    drive.groups["controllers@example.com"] = {BOB}
    drive.members = [group("finance@example.com")]
    for n in range(5):
        drive.add_file(f"f{n}", f"Ledger entry {n}: travel refund.")
    drive.fault("/files", 429, retry_after="7")
    drive.fault("/permissions", 403, after=2, reason="userRateLimitExceeded")
    drive.fault("/members", 503)

    ws.synced()

    expected = {doc(f"f{n}") for n in range(5)}
    assert ws.found(ALICE, "ledger") == expected
    assert ws.found(BOB, "ledger") == expected  # through the nested group
    assert ws.found(CAROL, "ledger") == set()
    assert 7.0 in ws.waits  # Retry-After honoured
    assert drive.calls("/drive/v3/files") > 3  # several pages (page size 2)
    assert not drive.responder_errors


def test_a_google_doc_is_exported_and_a_sharing_change_reads_no_content(ws: Workspace) -> None:
    ws.drive.members = [user(ALICE, "organizer")]
    ws.drive.add_file("memo", "Parking rules for the new garage.", mime=GOOGLE_DOC)
    ws.synced()
    assert ws.found(ALICE, "garage") == {doc("memo")}
    exports = ws.drive.calls("/export")
    ws.drive.share("memo", user(BOB))  # a change in the feed, content untouched
    ws.synced()
    assert ws.drive.calls("/export") == exports
    assert ws.found(BOB, "garage") == {doc("memo")}


def test_a_rejected_token_is_renewed_and_credentials_never_show(ws: Workspace) -> None:
    ws.drive.members = [user(ALICE)]
    ws.drive.add_file("memo", "Salary bands memo.")
    ws.synced()
    ws.drive.revoke_tokens()  # Drive answers 401: the connector asks for a new token
    ws.drive.edit("memo", "Salary bands memo, revised.")
    ws.synced()
    assert ws.drive.issued == 2
    assert ws.found(ALICE, "revised") == {doc("memo")}
    shown = json.dumps([r.to_dict() for r in ws.reports]) + json.dumps(source_status(ws.app))
    assert "PRIVATE KEY" not in shown and "ya29." not in shown
    assert "PRIVATE KEY" not in repr(parse_service_account(Secret(KEY_JSON), KEY))


def test_the_gdrive_kind_is_built_from_configuration(ws: Workspace) -> None:
    ws.drive.members = [user(ALICE)]
    ws.drive.add_file("memo", "Cafeteria menu.")
    reports = sync_source(ws.app, "gd", env={"GDRIVE_KEY": KEY_JSON})
    assert all(r.ok for r in reports)
    assert ws.found(ALICE, "cafeteria") == {doc("memo")}
    with pytest.raises(ConfigError, match="GDRIVE_KEY"):
        sync_source(ws.app, "gd", env={})
    with pytest.raises(ConfigError, match="not a service-account key") as caught:
        sync_source(ws.app, "gd", env={"GDRIVE_KEY": '{"private_key": "hunter2"}'})
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subject": SUBJECT}, "drive_id: required"),
        ({"drive_id": "d"}, "subject: required"),
        ({"drive_id": "d", "subject": "admin"}, "email address"),
        ({"drive_id": "d", "subject": SUBJECT, "drive_url": "ftp://x"}, "http"),
        ({"drive_id": "d", "subject": SUBJECT, "domains": {"example.com": "x"}}, "bad principal"),
        ({"drive_id": "d", "subject": SUBJECT, "sync_groups": "yes"}, "true or false"),
        ({"drive_id": "d", "subject": SUBJECT, "folders": []}, "unknown setting"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_options("gd", options)
    assert "sources.gd.options" in caught.value.message


# --------------------------------------------------------------------------- deletions


def deleted_files_are_still_found(ws: Workspace) -> bool:
    ws.drive.members = [user(ALICE)]
    ws.drive.add_file("menu", "Cafeteria menu: ramen on Fridays.")
    ws.drive.add_file("lunch", "Lunch menu: ramen on Mondays.")
    ws.drive.add_file("travel", "Book trains to Osaka.")
    ws.synced()
    assert ws.found(ALICE, "ramen") == {doc("menu"), doc("lunch")}
    ws.drive.trash("menu")
    ws.drive.purge("lunch")
    ws.synced(permissions=False)  # the feed's changes alone must take them away
    return bool(ws.found(ALICE, "ramen"))


def test_a_deleted_file_disappears_from_search(ws: Workspace) -> None:
    assert not deleted_files_are_still_found(ws)
    assert ws.app.store.get_document(doc("menu")) is None
    assert ws.reports[-1].counts["deleted"] == 2
    assert ws.found(ALICE, "osaka") == {doc("travel")}


def test_reverse_proof_a_connector_that_ignores_trash_and_removals_is_caught(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    change = DriveConnector._change

    def careless(self: DriveConnector, raw: Any) -> ItemRef | Tombstone | None:
        found = change(self, raw)
        return None if isinstance(found, Tombstone) else found

    monkeypatch.setattr(DriveConnector, "_change", careless)
    assert deleted_files_are_still_found(ws)


def test_a_rejected_page_token_starts_a_full_listing(ws: Workspace) -> None:
    ws.drive.members = [user(ALICE)]
    ws.drive.add_file("menu", "Cafeteria menu: ramen on Fridays.")
    ws.drive.add_file("travel", "Book trains to Osaka.")
    ws.synced()
    del ws.drive.files["menu"]  # gone, and the log that said so is gone too
    ws.drive.expired_before = len(ws.drive.log) + 1
    (report,) = ws.sync(permissions=False)
    assert report.ok and report.counts["deleted"] == 1  # the snapshot's absentee is removed
    assert ws.found(ALICE, "ramen") == set()
    assert ws.found(ALICE, "osaka") == {doc("travel")}


# --------------------------------------------------------------------------- permissions


def test_each_sharing_mode_maps_to_what_it_grants_and_no_more(ws: Workspace) -> None:
    cases: dict[str, list[dict[str, Any]]] = {
        "person": [user(ALICE.upper(), "commenter")],
        "group": [group("Finance@example.com")],
        "domain": [domain("example.com")],
        "other-domain": [domain("partner.example")],
        "deleted": [{**user(BOB), "deleted": True}],
        "expired": [{**user(BOB), "expirationTime": "2001-01-01T00:00:00Z"}],
        "odd-type": [{"type": "robot", "role": "reader"}],
        "odd-role": [user(ALICE, "superpower")],
        "no-address": [{"type": "user", "role": "reader"}],
        "mixed": [user(CAROL), {"type": "robot", "role": "reader"}],
    }
    for name, permissions in cases.items():
        ws.drive.add_file(name, f"Case {name}.")
        ws.drive.share(name, *permissions)
    ws.synced()
    acls = {d.doc_id.rpartition("/")[2]: d.acl for d in ws.app.store.list_documents()}
    assert acls == {
        "person": {f"user:{ALICE}"},
        "group": {"group:finance@example.com"},
        "domain": {"group:all-staff"},
        "other-domain": set(),
        "deleted": set(),
        "expired": set(),
        "odd-type": set(),
        "odd-role": set(),
        "no-address": set(),
        "mixed": set(),
    }
    (status,) = source_status(ws.app)
    reasons = {
        e["doc_id"].rpartition("/")[2]: e["reason"] for e in status["visible_to_nobody_examples"]
    }
    assert set(reasons) == {"odd-type", "odd-role", "no-address", "mixed"}
    assert "robot" in reasons["odd-type"] and "superpower" in reasons["odd-role"]


# --------------------------------------------------------------------------- shared scenarios


class TestDriveScenarios(GroupRevocation, InheritedAccess, AnyoneWithTheLink, AllOrNothing):
    """The scenarios every connector runs (tests/sources/connector_conformance.py), on a
    shared drive: its members, Google Groups, domain sharing, folders."""

    CONNECTOR = DriveConnector
    ALICE, BOB = ALICE, BOB

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Workspace]:
        yield from make_workspace(tmp_path)

    def doc(self, name: str) -> str:
        return doc(name)

    def share_with_a_group_of_alice_and_bob(self, src: Workspace, name: str, text: str) -> None:
        src.drive.groups["board@example.com"] = {ALICE, BOB}
        src.drive.members = [group("board@example.com")]
        src.drive.add_file(name, text)

    def remove_alice_from_the_group(self, src: Workspace) -> None:
        src.drive.groups["board@example.com"].discard(ALICE)

    def open_file_and_closed_folder(self, src: Workspace) -> None:
        drive = src.drive
        drive.members = [user(BOB, "organizer")]
        drive.add_folder("general")
        drive.share("general", domain("example.com"))
        drive.add_folder("board")
        drive.add_file("plan", "Merger plan draft.", parent="general")

    def move_plan_into_board(self, src: Workspace) -> None:
        src.drive.move("plan", "board")

    def open_to_anyone_with_the_link(self, src: Workspace, name: str, text: str) -> None:
        src.drive.add_file(name, text)
        src.drive.share(name, anyone(discoverable=True))

    def widen_anyone_to_everyone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        permission = DriveConnector._permission

        def widened(self: DriveConnector, raw: Any) -> set[str] | None:
            found = permission(self, raw)
            return {"everyone"} if found is None else found

        monkeypatch.setattr(DriveConnector, "_permission", widened)

    def readable_by(self, src: Workspace, names: Sequence[str], who: str) -> None:
        for name in names:
            if name not in src.drive.files:
                src.drive.add_file(name, f"Quarterly memo {name}.")
            src.drive.share(name, user(who))

    def stop_answering_permissions_after(self, src: Workspace, answered: int) -> None:
        src.drive.fault("/permissions", 503, times=None, after=answered)
