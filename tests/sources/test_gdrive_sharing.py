"""The Google Drive connector's access mapping and lasting refusals, against the fake Drive on
loopback, through the sync engine into a real index: limited-access folders (and folders above
that cannot be read, or were limited while a run was under way), the shared drive's own
restrictions, every sharing shape (who exactly can read), Google Groups of another
organisation, documents Drive will not export, folders trashed with their contents and
restored, keyless credentials and a user's My Drive.

Each invariant is shown with a reverse proof: a deliberately broken connector that the same
assertion catches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clearance.access.ownership import BLOCKED_KEY
from clearance.app import Clearance
from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources.base import ItemRef
from clearance.sources.gdrive import (
    DriveConnector,
    DriveOptions,
    ItemUnavailable,
    _Restrictions,
    drive_connector,
    parse_options,
    parse_service_account,
)
from clearance.sources.rest import Unrepresentable
from clearance.sources.service import source_status, sync_source
from clearance.sources.sync import SourceSync, SyncReport
from gdrive_server import CLIENT_EMAIL, DRIVE, GOOGLE_DOC, KEY_JSON, SUBJECT, FakeDrive

from .conftest import Clock
from .connector_conformance import Permissions, SharingShapes
from .connector_sync import SyncedSource, indexed_app

ALICE, BOB, CAROL, DANA = (f"{n}@example.com" for n in ("alice", "bob", "carol", "dana"))
KEY = "sources.gd.credentials.service_account"
PARTNER_GROUP = "auditors@partner.example"


def user(email: str, role: str = "reader", **extra: Any) -> dict[str, Any]:
    return {"type": "user", "role": role, "emailAddress": email, **extra}


def group(email: str, role: str = "writer") -> dict[str, Any]:
    return {"type": "group", "role": role, "emailAddress": email}


def domain(name: str) -> dict[str, Any]:
    return {"type": "domain", "role": "reader", "domain": name, "allowFileDiscovery": True}


def anyone(discoverable: bool) -> dict[str, Any]:
    return {"type": "anyone", "role": "reader", "allowFileDiscovery": discoverable}


@dataclass
class Drive(SyncedSource):
    source = "gd"
    drive: FakeDrive
    app: Clearance
    clock: Clock
    keyless: bool = False
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def connector(self) -> DriveConnector:
        options = parse_options("gd", self.app.settings.sources["gd"].options)
        account = None if self.keyless else parse_service_account(Secret(KEY_JSON), KEY)
        return drive_connector("gd", options, account, sleep=self.waits.append)

    def doc(self, file_id: str) -> str:
        options = parse_options("gd", self.app.settings.sources["gd"].options)
        return f"gdrive:{options.space}/{file_id}"

    def access(self) -> dict[str, tuple[frozenset[str], str | None]]:
        """Every document's ACL and, when it is visible to nobody for a reason, the reason."""
        return {
            d.doc_id.rpartition("/")[2]: (frozenset(d.acl), d.extra.get(BLOCKED_KEY))
            for d in self.app.store.list_documents()
        }


@contextmanager
def open_drive(
    tmp_path: Path,
    *,
    sensitivity: str = "CONFIDENTIAL",
    keyless: bool = False,
    **options: Any,
) -> Iterator[Drive]:
    with FakeDrive() as drive:
        settings: dict[str, Any] = {
            "drive_id": DRIVE,
            "subject": SUBJECT,
            "drive_url": drive.drive_url,
            "directory_url": drive.directory_url,
            "token_url": drive.token_url,
            "domains": {"example.com": "group:all-staff"},
            **options,
        }
        if "my_drive" in settings:
            del settings["drive_id"]
        if keyless:
            settings.setdefault("impersonate", CLIENT_EMAIL)
            settings.update(iam_url=drive.iam_url, metadata_url=drive.metadata_url)
        config: dict[str, Any] = {"kind": "gdrive", "options": settings}
        if not keyless:
            config["credentials"] = {"service_account": "GDRIVE_KEY"}
        people = (ALICE, BOB, CAROL, DANA)
        with indexed_app(
            tmp_path, "gd", config, people=people, staff_group=True, sensitivity=sensitivity
        ) as (app, clock):
            yield Drive(drive, app, clock, keyless)


@pytest.fixture
def gd(tmp_path: Path) -> Iterator[Drive]:
    with open_drive(tmp_path) as drive:
        yield drive


# --------------------------------------------------------------------------- limited access


def limited_folder_is_read_by_drive_members(gd: Drive) -> bool:
    """Whether a drive member who is not on a limited-access folder reads a file in it."""
    drive = gd.drive
    drive.members = [user(ALICE, "writer"), user(CAROL)]
    drive.add_folder("hr")
    drive.share("hr", user(BOB))
    drive.limit("hr")
    drive.add_file("review", "Performance review of the sales team.", parent="hr")
    drive.add_file("holiday", "Holiday plan for the whole office.")
    gd.synced()
    assert gd.found(BOB, "performance") == {gd.doc("review")}
    assert gd.found(ALICE, "holiday") == {gd.doc("holiday")}  # the rest of the drive is open
    return bool(gd.found(ALICE, "performance") | gd.found(CAROL, "performance"))


def test_a_limited_access_folder_is_closed_to_drive_members_not_added_to_it(gd: Drive) -> None:
    assert not limited_folder_is_read_by_drive_members(gd)
    gd.drive.limit("hr", False)  # inheritance restored: the members read it again
    gd.synced(content=False)
    assert gd.found(ALICE, "performance") == {gd.doc("review")}


def test_reverse_proof_a_connector_that_ignores_inheritance_is_caught(
    gd: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ignoring(self: DriveConnector, permission: Any, limits: Any) -> Any:
        return permission

    monkeypatch.setattr(DriveConnector, "_applies", ignoring)
    assert limited_folder_is_read_by_drive_members(gd)


def test_on_a_limited_item_only_the_rows_drive_says_apply_grant(gd: Drive) -> None:
    drive = gd.drive
    drive.members = [user(ALICE), user(BOB), user(CAROL)]
    drive.add_file("salary", "Salary bands by level.")
    drive.share("salary", user(ALICE))  # Alice: a member and added directly — two rows
    drive.limit("salary")
    drive.add_folder("legal")
    drive.add_folder("cases", parent="legal")
    drive.share("cases", user(BOB))
    drive.limit("cases")
    drive.share("legal", user(CAROL))  # above the limited folder: no longer reaches below it
    drive.add_folder("open", parent="cases")
    drive.add_file("brief", "Litigation brief draft.", parent="open")
    gd.synced()
    assert gd.access()["salary"] == ({f"user:{ALICE}"}, None)
    assert gd.access()["brief"] == ({f"user:{BOB}"}, None)


@pytest.mark.parametrize("withheld", ["permissionDetails", "inheritedPermissionsDisabled"])
def test_what_drive_leaves_unsaid_on_a_limited_item_is_read_narrowly(
    gd: Drive, withheld: str
) -> None:
    drive = gd.drive
    drive.members = [user(ALICE)]
    drive.add_file("memo", "Restructuring memo.")
    drive.share("memo", user(BOB))
    drive.limit("memo")
    drive.add_file("menu", "Cafeteria menu.")
    drive.withheld = {withheld}
    gd.synced()
    access = gd.access()
    assert not gd.found(ALICE, "restructuring")
    if withheld == "permissionDetails":  # cannot tell which entry is direct: nobody
        assert access["memo"][0] == set() and "inherited" in str(access["memo"][1])
        assert access["menu"] == ({f"user:{ALICE}"}, None)  # not limited: unaffected
    else:  # no flag: taken to be limited, so only direct rows grant, on every item
        assert access["memo"] == ({f"user:{BOB}"}, None)
        assert access["menu"] == (set(), None)


# Drive's "Resolve errors" guide: a file the caller may not read is "404: File not found"; a
# 403 refuses the request itself ("User rate limit exceeded", an app not authorized). Either
# way the folder's limit is unread, and what reaches the file below it is unknown.


def unreadable_limited_folder_opens_its_file(gd: Drive, how: str) -> bool:
    """Whether a drive member who is not on a limited folder reads a file in it once the
    folder cannot be read: rate-limited past the retries (403) or gone (404) while its file
    is still there, through a notified (targeted) sync."""
    drive = gd.drive
    drive.members = [user(ALICE, "writer"), user(CAROL)]
    drive.add_folder("vault")
    drive.share("vault", user(BOB))
    drive.limit("vault")  # only Bob reads below it
    drive.add_file("memo", "Acquisition memo, strictly limited.", parent="vault")
    gd.synced()
    assert gd.access()["memo"] == ({f"user:{BOB}"}, None)
    if how == "throttled":
        drive.fault("/files/vault", 403, times=None, reason="userRateLimitExceeded")
    else:
        drive.purge("vault")  # the folder is gone; the file still names it as its parent
    connector = gd.connector()
    try:
        (change,) = connector.permissions_of([gd.doc("memo")])
        SourceSync(gd.app, gd.app.settings.sources["gd"], connector).targeted([gd.doc("memo")])
    finally:
        connector.close()
    assert change.access.unrepresentable is None or not change.access.principals
    return bool(gd.found(ALICE, "acquisition")) or f"user:{ALICE}" in change.access.principals


@pytest.mark.parametrize("how", ["throttled", "gone"])
def test_a_folder_above_that_cannot_be_read_closes_its_files(gd: Drive, how: str) -> None:
    assert not unreadable_limited_folder_opens_its_file(gd, how)
    (acl, why) = gd.access()["memo"]
    assert (
        acl == set()
        and "vault" in str(why)
        and ("403" if how == "throttled" else "404") in str(why)
    )


@pytest.mark.parametrize("how", ["throttled", "gone"])
def test_reverse_proof_a_connector_that_reads_an_unreadable_folder_as_open_is_caught(
    gd: Drive, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = DriveConnector._node

    def opening(self: DriveConnector, file_id: str) -> Any:
        try:
            return node(self, file_id)
        except SourceError as exc:
            if exc.status in (403, 404):
                return None  # the old reading: "above what the subject sees", no limit
            raise

    monkeypatch.setattr(DriveConnector, "_node", opening)
    assert unreadable_limited_folder_opens_its_file(gd, how)


def my_drive_under_a_colleagues_folders(gd: Drive) -> None:
    """Dana's file in Bob's folders: Dana sees team (shared with her), not dept above it."""
    drive = gd.drive
    drive.users = {DANA}
    drive.add_folder("dept", owner=BOB)
    drive.share("dept", user(CAROL))  # Carol reads everything below dept …
    drive.add_folder("team", parent="dept", owner=BOB)
    drive.share("team", user(DANA, "writer"))
    drive.add_file("plan", "Reorganisation plan for the team.", parent="team", owner=DANA)


def limited_during_the_run_is_read_stale(tmp_path: Path) -> bool:
    """Whether a permission sync that stamps the corpus fresh still grants what a folder
    limited after the content sync of the same run (same connector) read it cut off."""
    with open_drive(tmp_path, my_drive=DANA) as gd:
        my_drive_under_a_colleagues_folders(gd)
        connector = gd.connector()
        try:
            engine = SourceSync(gd.app, gd.app.settings.sources["gd"], connector)
            assert engine.content().ok  # fetches plan, reading team with files.get
            assert f"user:{CAROL}" in gd.access()["plan"][0]  # dept's entry reaches plan
            gd.drive.limit("team")  # … until Bob limits team, before the permission sync
            gd.clock.advance(60)
            report = engine.permissions()
            assert report.ok and report.corpus_sync_advanced
        finally:
            connector.close()
        return bool(gd.found(CAROL, "reorganisation"))


def test_a_permission_sync_reads_the_folders_afresh(tmp_path: Path) -> None:
    assert not limited_during_the_run_is_read_stale(tmp_path)


def test_reverse_proof_a_connector_that_keeps_the_tree_of_the_content_sync_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveConnector, "_forget", lambda self: None)
    assert limited_during_the_run_is_read_stale(tmp_path)


def test_my_drive_a_folder_the_user_cannot_see_ends_the_walk(tmp_path: Path) -> None:
    """Dana cannot see dept (404): the walk up ends there, as at the top of her My Drive,
    and the entries Drive lists on plan apply unless a folder she sees limits them."""
    with open_drive(tmp_path, my_drive=DANA) as gd:
        my_drive_under_a_colleagues_folders(gd)
        gd.synced()
        assert gd.found(CAROL, "reorganisation") == {gd.doc("plan")}
        gd.drive.limit("team")
        gd.synced(content=False)
        assert gd.found(CAROL, "reorganisation") == set()
        assert gd.found(DANA, "reorganisation") == {gd.doc("plan")}


# --------------------------------------------------------------------------- drive restrictions
#
# Workspace Admin Help, "Control access to files and folders in shared drives": changing a
# shared drive's restrictions "does not automatically remove existing users or change a
# file's sharing permissions" — permissions.list keeps the entry, and Drive denies it.

EVE = "eve@contractor.example"


def restricted_drive_is_read_by(gd: Drive, restriction: str, value: bool | None = True) -> set[str]:
    """Who of Bob (no member, added to the file) and Eve (an outside address the directory
    knows, added to the file) still finds it once the drive is restricted."""
    gd.app.sync_directory_data(
        json.dumps({"users": [{"id": EVE, "active": True, "attributes": {}}]}),
        "contractor",
        delta=True,
    )
    drive = gd.drive
    drive.members = [user(ALICE, "writer")]
    drive.add_file("forecast", "Quarterly forecast for the board.")
    drive.share("forecast", user(BOB), user(EVE))
    gd.synced()
    assert gd.found(BOB, "forecast") == gd.found(EVE, "forecast") == {gd.doc("forecast")}
    drive.restrict(**{restriction: value})  # the entries stay listed
    gd.synced(content=False)
    assert gd.found(ALICE, "forecast") == {gd.doc("forecast")}  # a member of the domain
    return {who for who in (BOB, EVE) if gd.found(who, "forecast")}


def test_a_members_only_drive_is_closed_to_those_added_to_its_files(gd: Drive) -> None:
    assert restricted_drive_is_read_by(gd, "driveMembersOnly") == set()


def test_a_domain_only_drive_is_closed_to_outside_addresses(gd: Drive) -> None:
    assert restricted_drive_is_read_by(gd, "domainUsersOnly") == {BOB}  # Bob: example.com


def test_a_restriction_drives_get_leaves_out_counts_as_set(gd: Drive) -> None:
    """A flag missing from the drive's answer may be on: the drive is read as restricted."""
    assert restricted_drive_is_read_by(gd, "driveMembersOnly", None) == set()


def test_a_permission_without_rows_in_a_members_only_drive_reads_as_nobody(gd: Drive) -> None:
    """Without ``permissionDetails`` Drive does not say whether the grantee is a member."""
    connector = gd.connector()
    try:
        rules = _Restrictions(members_only=True, domain_only=False)
        with pytest.raises(Unrepresentable):
            connector._admitted({"id": "p1", "type": "user", "role": "reader"}, rules)
        with pytest.raises(Unrepresentable):
            connector._admitted({"id": "p1", "type": "user", "permissionDetails": []}, rules)
    finally:
        connector.close()


@pytest.mark.parametrize("restriction", ["driveMembersOnly", "domainUsersOnly"])
def test_reverse_proof_a_connector_that_ignores_the_drives_restrictions_is_caught(
    gd: Drive, restriction: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveConnector, "_admitted", lambda self, permission, rules: True)
    assert EVE in restricted_drive_is_read_by(gd, restriction)


def test_a_domain_only_drive_drops_a_groups_outside_members(gd: Drive) -> None:
    drive = gd.drive
    drive.groups["finance@example.com"] = {ALICE, EVE}
    drive.members = [group("finance@example.com")]
    drive.add_file("budget", "Budget.")
    drive.restrict(domainUsersOnly=True)
    connector = gd.connector()
    try:
        snapshot = connector.groups()
    finally:
        connector.close()
    assert snapshot is not None
    assert snapshot.groups["finance@example.com"] == {f"user:{ALICE}"}


def test_restrictions_are_read_once_a_run_and_again_after_a_drive_change(gd: Drive) -> None:
    drive = gd.drive
    drive.members = [user(ALICE)]
    drive.add_file("a", "A.")
    drive.add_file("b", "B.")
    connector = gd.connector()
    try:
        (*_, last) = connector.content_changes(None)
        assert len(connector.permissions_of([gd.doc("a"), gd.doc("b")])) == 2
        assert drive.calls(f"/drives/{DRIVE}") == 1  # once, for both files
        assert not connector._restrictions().members_only
        drive.restrict(driveMembersOnly=True)
        list(connector.content_changes(last.cursor))  # the feed names the drive itself
        assert connector._restrictions().members_only
        assert drive.calls(f"/drives/{DRIVE}") == 2
    finally:
        connector.close()


# --------------------------------------------------------------------------- the table

# sharing shape -> (the file's own permissions, who reads it, why nobody does)
SHAPES: dict[str, tuple[list[dict[str, Any]], set[str], str | None]] = {
    "user-reader": ([user(ALICE)], {f"user:{ALICE}"}, None),
    "user-commenter": ([user(ALICE, "commenter")], {f"user:{ALICE}"}, None),
    "user-writer": ([user(ALICE, "writer")], {f"user:{ALICE}"}, None),
    "user-owner": ([user(ALICE, "owner")], {f"user:{ALICE}"}, None),
    "group": ([group("Finance@example.com")], {"group:finance@example.com"}, None),
    "domain-mapped": ([domain("example.com")], {"group:all-staff"}, None),
    "domain-unmapped": ([domain("partner.example")], set(), None),
    "anyone-discoverable": ([anyone(True)], set(), "anyone who has the link"),
    "anyone-undiscoverable": ([anyone(False)], set(), "anyone who has the link"),
    "external-group": ([group(PARTNER_GROUP)], {f"group:{PARTNER_GROUP}"}, None),
    "deleted-user": ([user(BOB, deleted=True)], set(), None),
    "pending-owner": ([user(CAROL, "writer", pendingOwner=True)], {f"user:{CAROL}"}, None),
    "unknown-type": ([{"type": "robot", "role": "reader"}], set(), "'robot'"),
    "unknown-role": ([user(ALICE, "superpower")], set(), "'superpower'"),
    "metadata-view": ([user(BOB, view="metadata")], set(), None),
    "permissions-refused": ([user(ALICE)], set(), "HTTP 403"),
}


# Every file but one Drive refuses to describe also grants the drive's member, Alice.
SHAPE_LIST = [
    Permissions(
        name,
        permissions,
        frozenset(readers | {f"user:{ALICE}"}) if why is None else f"nobody: {why}",
    )
    for name, (permissions, readers, why) in SHAPES.items()
]


def the_drive(drive: FakeDrive) -> None:
    """What every shape is shared in: a Google Group, another organisation's group, and a
    drive whose one member is Alice, holding a file of the Google Group (a sync in which
    the Directory API refuses every group is refused as a whole)."""
    drive.groups["finance@example.com"] = {ALICE}
    drive.external_groups = {PARTNER_GROUP}
    drive.members = [user(ALICE)]
    drive.add_file("finance-plan", "Finance plan.")
    drive.share("finance-plan", group("Finance@example.com"))


class TestDriveSharing(SharingShapes):
    """Each shape of the table, on its own drive (tests/sources/connector_conformance.py)."""

    SHAPES = SHAPE_LIST

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Drive]:
        with open_drive(tmp_path) as drive:
            yield drive

    def share(self, src: Drive, shape: Permissions, monkeypatch: pytest.MonkeyPatch) -> str:
        the_drive(src.drive)
        src.drive.add_file(shape.name, f"Case {shape.name}.")
        src.drive.share(shape.name, *shape.permissions)
        src.drive.fault(
            "/files/permissions-refused/permissions",
            403,
            times=None,
            reason="insufficientFilePermissions",
        )
        return src.doc(shape.name)


def test_a_file_in_a_limited_folder_is_read_by_the_folder_alone(gd: Drive) -> None:
    the_drive(gd.drive)
    gd.drive.add_folder("vault")
    gd.drive.share("vault", user(BOB))
    gd.drive.limit("vault")
    gd.drive.add_file("inherited-limited", "Case inherited-limited.", parent="vault")
    gd.synced()
    assert gd.access()["inherited-limited"] == ({f"user:{BOB}"}, None)


def test_an_anyone_link_reads_as_everyone_only_in_a_public_corpus(tmp_path: Path) -> None:
    with open_drive(tmp_path, sensitivity="PUBLIC") as gd:
        for discoverable in (True, False):
            name = f"link-{discoverable}"
            gd.drive.add_file(name, f"Case {name}.")
            gd.drive.share(name, anyone(discoverable))
        gd.synced()
        assert gd.access() == {
            "link-True": ({"everyone"}, None),
            "link-False": ({"everyone"}, None),
        }


# --------------------------------------------------------------------------- groups


def share_with_an_outside_group(gd: Drive) -> list[SyncReport]:
    drive = gd.drive
    drive.groups["finance@example.com"] = {ALICE}
    drive.external_groups = {PARTNER_GROUP}
    drive.members = [group("finance@example.com")]
    drive.add_file("ledger", "General ledger close checklist.")
    drive.share("ledger", group(PARTNER_GROUP))
    return gd.sync()


def test_a_group_of_another_organisation_is_unknown_and_the_sync_completes(gd: Drive) -> None:
    reports = share_with_an_outside_group(gd)
    assert all(r.ok for r in reports), [r.error for r in reports]
    assert reports[-1].corpus_sync_advanced
    assert gd.found(ALICE, "ledger") == {gd.doc("ledger")}
    assert any(PARTNER_GROUP in w and "another organisation" in w for w in reports[-1].warnings)
    assert f"group:{PARTNER_GROUP}" in reports[-1].unknown_principals
    connector = gd.connector()
    try:
        assert connector.groups() is not None
        (warning,) = connector.warnings
        assert PARTNER_GROUP in warning and "another organisation" in warning
    finally:
        connector.close()


def test_refused_credentials_still_fail_the_permission_sync(gd: Drive) -> None:
    gd.drive.directory_refused = True  # 403 forbidden for every group: the subject, not them
    reports = share_with_an_outside_group(gd)
    assert not reports[-1].ok and "403" in (reports[-1].error or "")
    (status,) = source_status(gd.app)
    assert status["state"] == "failing"


def refused_group_of_our_own_domain_fails(gd: Drive) -> bool:
    share_with_an_outside_group(gd)
    gd.drive.external_groups.add("board@example.com")  # ours, yet refused: a privilege gap
    gd.drive.share("ledger", group("board@example.com"))
    reports = gd.sync(content=False)
    return not reports[-1].ok


def test_a_refused_group_of_the_organisation_fails_the_sync(gd: Drive) -> None:
    assert refused_group_of_our_own_domain_fails(gd)


def test_reverse_proof_a_connector_that_takes_every_refused_group_as_foreign_is_caught(
    gd: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveOptions, "organisation", property(lambda self: frozenset()))
    assert not refused_group_of_our_own_domain_fails(gd)


# --------------------------------------------------------------------------- lasting refusals


def test_a_doc_drive_will_not_export_is_reported_by_name(gd: Drive) -> None:
    drive = gd.drive
    drive.members = [user(ALICE)]
    drive.add_file("huge", "Quarterly numbers.", mime=GOOGLE_DOC)
    drive.files["huge"].too_large = True
    drive.add_file("small", "Parking rules.", mime=GOOGLE_DOC)
    report, _ = gd.sync()
    (error,) = report.item_errors
    assert gd.doc("huge") in error and "exportSizeLimitExceeded" in error
    assert gd.found(ALICE, "parking") == {gd.doc("small")}
    connector = gd.connector()
    try:
        with pytest.raises(ItemUnavailable, match="export size limit"):
            connector.fetch(ItemRef(gd.doc("huge"), "v", "huge"))
    finally:
        connector.close()


def test_the_cursor_moves_past_a_doc_drive_will_not_export_and_its_old_text_goes(
    gd: Drive,
) -> None:
    drive = gd.drive
    drive.members = [user(ALICE)]
    drive.add_file("huge", "Quarterly numbers, first draft.", mime=GOOGLE_DOC)
    gd.synced()
    assert gd.found(ALICE, "quarterly") == {gd.doc("huge")}
    drive.edit("huge", "Quarterly numbers, grown past the export limit.")
    drive.files["huge"].too_large = True
    (report,) = gd.sync(permissions=False)
    assert report.cursor_advanced and report.item_errors
    assert gd.found(ALICE, "quarterly") == set()  # no stale text served
    exports = drive.calls("/export")
    gd.sync(permissions=False)
    assert drive.calls("/export") == exports  # not tried again until it changes


# --------------------------------------------------------------------------- trashed folders


def trashed_folder_contents_are_found(gd: Drive) -> bool:
    drive = gd.drive
    drive.members = [user(ALICE)]
    drive.add_folder("projects")
    drive.add_folder("archive", parent="projects")
    drive.add_file("atlas", "Project Atlas budget.", parent="projects")
    drive.add_file("orion", "Project Orion budget.", parent="archive")
    drive.add_file("lunch", "Lunch budget.")
    gd.synced()
    assert gd.found(ALICE, "budget") == {gd.doc(n) for n in ("atlas", "orion", "lunch")}
    drive.trash("projects")  # the feed says so of the folder alone
    gd.synced(permissions=False)
    assert gd.found(ALICE, "lunch") == {gd.doc("lunch")}
    return bool(gd.found(ALICE, "project"))


def test_a_trashed_folder_takes_its_indexed_descendants_with_it(gd: Drive) -> None:
    assert not trashed_folder_contents_are_found(gd)
    assert gd.reports[-1].counts["deleted"] == 2


def test_reverse_proof_a_connector_that_forgets_a_folders_descendants_is_caught(
    gd: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveConnector, "_fallen", lambda self, change: [])
    assert trashed_folder_contents_are_found(gd)


def restored_folder_contents_are_found(gd: Drive) -> bool:
    """Whether a folder restored from the trash (one change, for the folder: Drive restores
    its descendants with it, as it trashed them) brings its documents back."""
    trashed_folder_contents_are_found(gd)
    gd.drive.files["projects"].trashed = False
    gd.drive._changed("projects")
    reports = gd.sync()
    assert all(r.ok for r in reports)
    assert gd.found(ALICE, "lunch") == {gd.doc("lunch")}
    return gd.found(ALICE, "project") == {gd.doc("atlas"), gd.doc("orion")}


def test_a_folder_restored_from_the_trash_brings_its_documents_back(gd: Drive) -> None:
    assert restored_folder_contents_are_found(gd)
    assert gd.reports[-1].counts["not_in_index"] == 0


def test_reverse_proof_a_connector_that_forgets_a_restored_folders_contents_is_caught(
    gd: Drive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveConnector, "_risen", lambda self, change: [])
    assert not restored_folder_contents_are_found(gd)


# --------------------------------------------------------------------------- credentials


def test_keyless_credentials_sign_through_the_iam_credentials_api(tmp_path: Path) -> None:
    with open_drive(tmp_path, keyless=True) as gd:
        gd.drive.groups["finance@example.com"] = {ALICE}
        gd.drive.members = [group("finance@example.com")]
        gd.drive.add_file("memo", "Keyless memo on office moves.")
        reports = sync_source(gd.app, "gd", env={})  # no key configured, none needed
        assert all(r.ok for r in reports), [r.error for r in reports]
        assert gd.found(ALICE, "keyless") == {gd.doc("memo")}
        (claims, *_) = gd.drive.sign_requests
        assert claims["iss"] == CLIENT_EMAIL and claims["sub"] == SUBJECT
        assert claims["aud"] == gd.drive.token_url
        assert claims["exp"] - claims["iat"] <= 3600
        assert "drive.readonly" in claims["scope"]
        shown = json.dumps([r.to_dict() for r in reports]) + json.dumps(source_status(gd.app))
        assert "ya29." not in shown and "eyJ" not in shown
        connector = gd.connector()
        try:
            assert "ya29." not in repr(connector.client._client.auth)
        finally:
            connector.close()


def test_keyless_credentials_the_iam_api_refuses_fail_the_sync(tmp_path: Path) -> None:
    other = "other@project.iam.gserviceaccount.com"
    with open_drive(tmp_path, keyless=True, impersonate=other) as gd:
        gd.drive.add_file("memo", "Memo.")
        (report,) = gd.sync(permissions=False)
        assert not report.ok and "403" in (report.error or "")


# --------------------------------------------------------------------------- My Drive


def test_a_users_my_drive_is_synced_as_that_user(tmp_path: Path) -> None:
    with open_drive(tmp_path, my_drive=DANA) as gd:
        drive = gd.drive
        drive.users = {DANA}
        drive.groups["finance@example.com"] = {BOB}
        drive.add_folder("plans", owner=DANA)
        drive.add_file("offsite", "Offsite agenda draft.", parent="plans", owner=DANA)
        drive.share("plans", group("finance@example.com", "reader"))
        drive.add_file("notes", "Private notes on hiring.", owner=DANA)
        drive.add_file("theirs", "Carol's agenda draft.", owner=CAROL)
        drive.share("theirs", user(DANA))  # shared with Dana, not hers: not synced
        drive.add_file("shared", "Shared drive agenda draft.")  # the shared drive: not synced
        gd.synced()
        assert gd.found(DANA, "agenda") == {gd.doc("offsite")}
        assert gd.found(DANA, "hiring") == {gd.doc("notes")}  # the owner reads her own
        assert gd.found(BOB, "agenda") == {gd.doc("offsite")}  # through the folder's group
        assert gd.found(ALICE, "hiring") == set()
        assert gd.access()["notes"] == ({f"user:{DANA}"}, None)
        drive.trash("notes")
        drive.add_file("later", "Later thoughts on hiring.", owner=DANA)
        gd.synced()
        assert gd.found(DANA, "hiring") == {gd.doc("later")}
