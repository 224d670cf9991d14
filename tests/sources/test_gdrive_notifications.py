"""Google Drive change notifications against the fake Drive on loopback, through the sync engine
into a real index: a changes channel opened and replaced (``changes.watch``,
``channels.stop``), its messages checked by the connector as the notification endpoint hands
them over, the change feed resolving a message that names no file, and the targeted sync that
re-reads just those files.

Each security property comes with its reverse proof: a deliberately leaky connector that the
same assertion catches."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from clearance.app import Clearance
from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.base import (
    ChangeFeed,
    ItemPermissions,
    Notice,
    Notifiable,
    Subscribing,
    Subscription,
)
from clearance.sources.gdrive import (
    DriveConnector,
    ServiceAccount,
    drive_connector,
    parse_options,
    parse_service_account,
)
from clearance.sources.notifications import NotificationReceiver
from clearance.sources.registry import build_connector
from clearance.sources.service import (
    notified_sync,
    renew_subscription,
    source_status,
)
from clearance.sources.state import StateTable
from clearance.sources.sync import FEED_KEY, SyncReport
from gdrive_server import DRIVE, KEY_JSON, SUBJECT, FakeDrive, Message
from loopback_server import RecordedRequest

from .conftest import Clock
from .connector_sync import SyncedSource, indexed_app

ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"
SECRET = "drive-channel-token-7Hq2vXk9pLm4"
URL = "https://clearance.example.com/v1/sources/gd/notifications"
ENV = {"GDRIVE_KEY": KEY_JSON, "GDRIVE_CHANNEL": SECRET}


def user(email: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "user", "role": role, "emailAddress": email}


@dataclass
class Watched(SyncedSource):
    """An index over one shared drive whose notifications reach the engine as the endpoint
    hands them over: through the :class:`NotificationReceiver`, then the notified sync the
    scheduler would run."""

    source = "gd"
    drive: FakeDrive
    app: Clearance
    clock: Clock
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)  # what the receiver answered
    forwarded: list[Notice] = field(default_factory=list)  # what reached the scheduler

    def connector(self) -> DriveConnector:
        built = build_connector(self.app.settings, self.app.settings.sources["gd"], ENV)
        assert isinstance(built, DriveConnector)
        return built

    def doc(self, file_id: str) -> str:
        return f"gdrive:{DRIVE}/{file_id}"

    def post(self, messages: list[Message]) -> list[Notice]:
        """Hand each message to the notification endpoint's receiver."""
        receiver = NotificationReceiver(self.app, ENV)
        receiver.attach(lambda name, notice: self.forwarded.append(notice) is None)
        try:
            answered = [receiver.receive("gd", m.headers, {}, m.body) for m in messages]
        finally:
            receiver.close()
        notices = [n for n in answered if n is not None]
        self.notices += notices
        return notices

    def notified(self) -> SyncReport | None:
        """Deliver what Drive queued; when a message was accepted as a change, run the
        sync the scheduler would (a notice naming nothing: through the change feed)."""
        before = len(self.forwarded)
        self.post(self.drive.take_messages())
        if len(self.forwarded) == before:
            return None
        report = notified_sync(self.app, "gd", None, env=ENV)
        self.reports.append(report)
        return report


def open_watched(tmp_path: Path, **options: Any) -> Iterator[Watched]:
    with FakeDrive() as drive:
        config = {
            "kind": "gdrive",
            "notification_url": URL,
            "credentials": {
                "service_account": "GDRIVE_KEY",
                "notification_secret": "GDRIVE_CHANNEL",
            },
            "options": {
                "drive_id": DRIVE,
                "subject": SUBJECT,
                "drive_url": drive.drive_url,
                "directory_url": drive.directory_url,
                "token_url": drive.token_url,
                "sync_groups": False,
                **options,
            },
        }
        people = (ALICE, BOB, CAROL)
        with indexed_app(tmp_path, "gd", config, people=people, staff_group=True) as (app, clock):
            yield Watched(drive, app, clock)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Watched]:
    yield from open_watched(tmp_path)


def subscribed(ws: Watched) -> Subscription:
    made = renew_subscription(ws.app, "gd", ENV)
    assert made is not None
    (opened,) = ws.post(ws.drive.take_messages())  # Drive's sync message
    assert (opened.status, opened.body, opened.changes) == (200, "", False)
    return made


def requests_to(drive: FakeDrive, path: str) -> list[RecordedRequest]:
    return [r for r in drive.requests if urlsplit(r.path).path == f"/drive/v3{path}"]


def query_of(request: RecordedRequest) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}


# --------------------------------------------------------------------------- capabilities


def test_the_connector_has_every_notification_capability(ws: Watched) -> None:
    connector = ws.connector()
    try:
        for capability in (ItemPermissions, Notifiable, ChangeFeed, Subscribing):
            assert isinstance(connector, capability)
    finally:
        connector.close()


# --------------------------------------------------------------------------- end to end


def test_a_revocation_at_drive_reaches_the_index_through_one_notification(ws: Watched) -> None:
    drive = ws.drive
    drive.add_file("plan", "Merger plan for the northern region.")
    drive.share("plan", user(ALICE), user(BOB))
    drive.add_file("memo", "Merger memo for the board.")
    drive.share("memo", user(BOB))
    ws.synced()
    assert ws.found(BOB, "merger") == {ws.doc("plan"), ws.doc("memo")}
    corpus_synced = ws.app.store.last_acl_syncs()["docs"]
    subscribed(ws)

    drive.share("plan", user(ALICE))  # Bob loses the plan; the feed logs the file
    memo_reads = drive.calls("/files/memo/permissions")
    report = ws.notified()

    assert report is not None and report.ok, report and report.error
    assert report.kind == "notified"
    assert report.counts["revoked"] == 1
    assert ws.notices[-1].status == 202 and ws.notices[-1].doc_ids is None
    assert ws.found(BOB, "merger") == {ws.doc("memo")}
    assert ws.found(ALICE, "merger") == {ws.doc("plan")}
    assert drive.calls("/files/memo/permissions") == memo_reads  # only the named file read
    assert ws.app.store.last_acl_syncs()["docs"] == corpus_synced  # a partial read
    feed = StateTable(ws.app.store).get("gd").stats[FEED_KEY]
    assert feed == f"{DRIVE}/{SUBJECT} {len(drive.log)}"  # the next notice starts here


def test_the_sync_message_of_a_new_channel_changes_nothing(ws: Watched) -> None:
    ws.drive.add_file("plan", "Merger plan.")
    ws.drive.share("plan", user(BOB))
    ws.synced()
    subscribed(ws)
    assert ws.forwarded == []
    assert ws.notified() is None  # nothing queued since


# --------------------------------------------------------------------------- authentication


def forged_messages(ws: Watched) -> list[Message]:
    """What a sender without the channel token might post, built on a genuine message."""
    ws.drive.add_file("plan", "Merger plan.")
    ws.drive.share("plan", user(BOB))
    ws.synced()
    subscribed(ws)
    ws.drive.share("plan", user(ALICE))
    (genuine,) = ws.drive.take_messages()
    wrong = {**genuine.headers, "x-goog-channel-token": SECRET[:-1] + "X"}
    missing = {k: v for k, v in genuine.headers.items() if k != "x-goog-channel-token"}
    return [Message(URL, wrong), Message(URL, missing)]


def forged_messages_are_taken(ws: Watched) -> bool:
    """Whether a forged message reaches the scheduler or changes the index."""
    forged = forged_messages(ws)
    notices = ws.post(forged)
    return bool(ws.forwarded) or any(not n.refused for n in notices)


def test_a_message_without_the_channel_token_is_refused_and_changes_nothing(
    ws: Watched,
) -> None:
    assert not forged_messages_are_taken(ws)
    assert [n.status for n in ws.notices[-2:]] == [401, 401]
    assert all(SECRET not in n.body for n in ws.notices)
    assert ws.found(BOB, "merger") == {ws.doc("plan")}  # still Bob's until Drive says so


def test_reverse_proof_a_connector_that_skips_the_token_check_is_caught(
    ws: Watched, monkeypatch: pytest.MonkeyPatch
) -> None:
    def trusting(self: DriveConnector, headers: Any, query: Any, body: bytes) -> Notice:
        state = headers.get("x-goog-resource-state")
        return Notice.reply("") if state == "sync" else Notice.unknown_changes()

    monkeypatch.setattr(DriveConnector, "notification", trusting)
    assert forged_messages_are_taken(ws)


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"x-goog-channel-token": "t" * 257}, 400),
        ({"x-goog-channel-token": "tok\x7fen"}, 400),
        ({"x-goog-resource-state": ""}, 400),
        ({"x-goog-resource-state": "Change!"}, 400),
        ({"x-goog-channel-id": ""}, 400),
        ({"x-goog-message-number": "seven"}, 400),
        ({"x-goog-resource-state": "sync"}, 200),
        ({"x-goog-resource-state": "update"}, 202),  # a files-channel state: still a change
    ],
)
def test_malformed_messages_are_refused_and_states_are_read(
    ws: Watched, change: dict[str, str], status: int
) -> None:
    headers = {
        "x-goog-channel-id": str(uuid.uuid4()),
        "x-goog-channel-token": SECRET,
        "x-goog-resource-id": "o3hgv000001sdjfh",
        "x-goog-resource-state": "change",
        "x-goog-message-number": "2",
        **change,
    }
    connector = ws.connector()
    try:
        notice = connector.notification(headers, {}, b"")
    finally:
        connector.close()
    assert notice.status == status
    assert ws.drive.requests == [] or all("/token" in r.path for r in ws.drive.requests)


def test_without_a_notification_secret_every_message_is_refused(tmp_path: Path) -> None:
    with FakeDrive() as drive:
        options = parse_options(
            "gd", {"drive_id": DRIVE, "subject": SUBJECT, "drive_url": drive.drive_url}
        )
        connector = drive_connector("gd", options, _account())
        try:
            headers = {
                "x-goog-channel-id": "c",
                "x-goog-channel-token": "",
                "x-goog-resource-state": "change",
            }
            assert connector.notification(headers, {}, b"").status == 401
            headers["x-goog-channel-token"] = "anything"
            assert connector.notification(headers, {}, b"").status == 401
            with pytest.raises(ConfigError, match=r"credentials\.notification_secret"):
                connector.subscribe(URL, None)
        finally:
            connector.close()
        assert drive.calls("/changes/watch") == 0


def _account() -> ServiceAccount:
    return parse_service_account(Secret(KEY_JSON), "sources.gd.credentials.service_account")


# --------------------------------------------------------------------------- the change feed


def folder_revocation_reaches_its_descendants(ws: Watched) -> bool:
    """Whether Bob, removed from a shared folder, stops reading the files below it after
    one notification (Drive logs the folder alone)."""
    drive = ws.drive
    drive.add_folder("projects")
    drive.add_folder("archive", parent="projects")
    drive.add_file("atlas", "Project Atlas budget.", parent="projects")
    drive.add_file("orion", "Project Orion budget.", parent="archive")
    drive.add_file("lunch", "Lunch budget.")
    drive.share("projects", user(BOB))
    drive.share("lunch", user(BOB))
    ws.synced()
    assert ws.found(BOB, "budget") == {ws.doc(n) for n in ("atlas", "orion", "lunch")}
    subscribed(ws)
    drive.share("projects")  # Bob removed from the folder
    report = ws.notified()
    assert report is not None and report.ok, report and report.error
    assert ws.found(BOB, "lunch") == {ws.doc("lunch")}
    return not ws.found(BOB, "project")


def test_a_folder_sharing_change_names_every_file_below_it(ws: Watched) -> None:
    assert folder_revocation_reaches_its_descendants(ws)
    assert ws.reports[-1].counts["revoked"] == 2


def test_reverse_proof_a_feed_that_omits_folder_descendants_is_caught(
    ws: Watched, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DriveConnector, "_descendants", lambda self, folder: [])
    assert not folder_revocation_reaches_its_descendants(ws)


def test_the_feed_names_changed_removed_and_descendant_files_and_moves_its_position(
    ws: Watched,
) -> None:
    drive = ws.drive
    drive.add_folder("hr")
    drive.add_file("review", "Review.", parent="hr")
    drive.add_file("old", "Old.")
    drive.add_file("quiet", "Quiet.")
    connector = ws.connector()
    try:
        named, start = connector.changed_since(None)
        assert named == frozenset()
        assert start == f"{DRIVE}/{SUBJECT} {len(drive.log)}"
        drive.limit("hr")
        drive.purge("old")
        named, end = connector.changed_since(start)
        assert named == {ws.doc("hr"), ws.doc("review"), ws.doc("old")}
        assert end == f"{DRIVE}/{SUBJECT} {len(drive.log)}"
        assert connector.changed_since(end) == (frozenset(), end)
    finally:
        connector.close()


def test_an_expired_position_is_410_and_the_notice_runs_a_full_permission_sync(
    ws: Watched,
) -> None:
    drive = ws.drive
    drive.add_file("plan", "Merger plan.")
    drive.share("plan", user(BOB))
    ws.synced()
    subscribed(ws)
    position = StateTable(ws.app.store).get("gd").stats[FEED_KEY]
    drive.share("plan", user(ALICE))
    drive.expired_before = len(drive.log)  # Drive no longer accepts the stored token
    connector = ws.connector()
    try:
        with pytest.raises(SourceError) as expired:
            connector.changed_since(position)
        with pytest.raises(SourceError) as elsewhere:
            connector.changed_since(f"0AnotherDrive/{SUBJECT} {len(drive.log)}")
    finally:
        connector.close()
    assert expired.value.status == 410 and elsewhere.value.status == 410

    report = ws.notified()
    assert report is not None and report.ok, report and report.error
    assert report.kind == "permissions"  # the safety net, not a partial read
    assert ws.found(BOB, "merger") == set()
    assert StateTable(ws.app.store).get("gd").stats[FEED_KEY] != position


def test_a_change_of_the_shared_drive_itself_runs_a_full_permission_sync(ws: Watched) -> None:
    ws.drive.add_file("plan", "Merger plan.")
    ws.drive.share("plan", user(BOB))
    ws.synced()
    subscribed(ws)
    ws.drive.restrict(domainUsersOnly=True)
    report = ws.notified()
    assert report is not None and report.ok, report and report.error
    assert report.kind == "permissions"


# --------------------------------------------------------------------------- item permissions


def test_item_permissions_map_as_the_listing_does_and_leave_out_what_is_gone(
    ws: Watched,
) -> None:
    drive = ws.drive
    drive.members = [user(ALICE, "writer")]
    drive.add_folder("hr")
    drive.share("hr", user(BOB))
    drive.add_file("review", "Review.", parent="hr")
    drive.add_file("binned", "Binned.")
    drive.add_file("purged", "Purged.")
    drive.add_file("hidden", "Hidden.")
    connector = ws.connector()
    try:
        wanted = [ws.doc(n) for n in ("review", "binned", "purged", "hidden", "hr")]
        wanted += ["gdrive:0AnotherDrive/review", "files:review"]
        first = {c.doc_id: c.access for c in connector.permissions_of(wanted)}
        assert first[ws.doc("review")].principals == {f"user:{ALICE}", f"user:{BOB}"}
        drive.limit("hr")  # the same connector must not keep the folder it read
        drive.trash("binned")
        drive.purge("purged")
        drive.fault("/files/hidden", 403, reason="insufficientFilePermissions")
        changes = {c.doc_id: c.access for c in connector.permissions_of(wanted)}
    finally:
        connector.close()
    assert set(changes) == {ws.doc("review"), ws.doc("hidden")}
    assert changes[ws.doc("review")].principals == {f"user:{BOB}"}
    assert changes[ws.doc("hidden")].unrepresentable == "Drive refused to show the file (HTTP 403)"


def test_item_permissions_raise_when_drive_does_not_answer(ws: Watched) -> None:
    ws.drive.add_file("plan", "Merger plan.")
    ws.drive.fault("/files/plan", 503, times=None)
    connector = drive_connector(
        "gd",
        parse_options("gd", ws.app.settings.sources["gd"].options),
        _account(),
        sleep=ws.waits.append,
    )
    try:
        with pytest.raises(SourceError):
            connector.permissions_of([ws.doc("plan")])
    finally:
        connector.close()


# --------------------------------------------------------------------------- subscriptions


def frozen_connector(ws: Watched, now: float, **options: Any) -> DriveConnector:
    raw = {**ws.app.settings.sources["gd"].options, **options}
    return drive_connector(
        "gd",
        parse_options("gd", raw),
        _account(),
        notification_secret=Secret(SECRET),
        wall_clock=lambda: now,
    )


def test_subscribe_opens_a_changes_channel_and_stops_the_one_it_replaces(ws: Watched) -> None:
    drive = ws.drive
    drive.add_file("plan", "Merger plan.")
    now = time.time() - 5
    connector = frozen_connector(ws, now)
    try:
        first = connector.subscribe(URL, None)
        second = connector.subscribe(URL, first)
    finally:
        connector.close()

    watches = requests_to(drive, "/changes/watch")
    assert [r.method for r in watches] == ["POST", "POST"]
    params = query_of(watches[0])
    assert params["pageToken"] == str(len(drive.log))
    assert params["driveId"] == DRIVE
    assert params["supportsAllDrives"] == "true"
    assert params["includeItemsFromAllDrives"] == "true"
    body = watches[0].json
    assert set(body) == {"id", "type", "address", "token", "expiration"}
    assert body["id"] == first.id and uuid.UUID(first.id).version == 4
    assert (body["type"], body["address"], body["token"]) == ("web_hook", URL, SECRET)
    week_ms = int((now + 7 * 24 * 3600) * 1000)
    assert body["expiration"] == str(week_ms)
    assert first.expires_at == datetime.fromtimestamp(week_ms / 1000, UTC)
    assert first.state == {
        "resource_id": drive.channels[first.id].resource_id,
        "page_token": str(len(drive.log)),
    }

    (stop,) = requests_to(drive, "/channels/stop")
    assert stop.method == "POST"
    assert stop.json == {"id": first.id, "resourceId": first.state["resource_id"]}
    assert "supportsAllDrives" not in query_of(stop)  # channels.stop has no such parameter
    assert second.id != first.id
    assert drive.channels[first.id].stopped and not drive.channels[second.id].stopped

    drive.take_messages()
    drive.edit("plan", "Merger plan, revised.")
    assert [m.headers["x-goog-channel-id"] for m in drive.take_messages()] == [second.id]


def test_a_my_drive_channel_watches_that_users_own_files() -> None:
    dana = "dana@example.com"
    with FakeDrive() as drive:
        drive.users.add(dana)
        raw = {
            "my_drive": dana,
            "subject": SUBJECT,
            "drive_url": drive.drive_url,
            "token_url": drive.token_url,
            "sync_groups": False,
        }
        options = parse_options("gd", raw)
        connector = drive_connector("gd", options, _account(), notification_secret=Secret(SECRET))
        try:
            made = connector.subscribe(URL, None)
        finally:
            connector.close()
        (watch,) = requests_to(drive, "/changes/watch")
        params = query_of(watch)
        assert "driveId" not in params
        assert params["restrictToMyDrive"] == "true"
        assert params["includeItemsFromAllDrives"] == "false"
        drive.take_messages()
        drive.add_file("notes", "Dana's notes.", owner=dana)
        drive.add_file("plan", "A shared-drive plan.")
        (message,) = drive.take_messages()
        assert message.headers["x-goog-channel-id"] == made.id


def test_a_channel_drive_already_ended_does_not_stop_the_new_one(
    ws: Watched, caplog: pytest.LogCaptureFixture
) -> None:
    connector = frozen_connector(ws, time.time() - 5, channel_hours=2)
    gone = Subscription("5e1f0c1e-0000-4000-8000-000000000000", datetime.now(UTC), {})
    unknown = Subscription(
        "5e1f0c1e-0000-4000-8000-000000000001", datetime.now(UTC), {"resource_id": "nope"}
    )
    try:
        with caplog.at_level(logging.WARNING, logger="clearance.sources"):
            made = connector.subscribe(URL, gone)
            again = connector.subscribe(URL, unknown)  # 404 from Drive: ended already
    finally:
        connector.close()
    assert not ws.drive.channels[made.id].stopped and not ws.drive.channels[again.id].stopped
    assert (made.expires_at - datetime.now(UTC)).total_seconds() < 2 * 3600
    assert "has no resource id" in caplog.text
    assert len(requests_to(ws.drive, "/channels/stop")) == 1


@pytest.mark.parametrize("hours", [0, 169, 1.5, True, "168"])
def test_channel_hours_is_bounded_by_what_drive_allows(hours: Any) -> None:
    raw = {"drive_id": DRIVE, "subject": SUBJECT, "channel_hours": hours}
    with pytest.raises(ConfigError, match="channel_hours"):
        parse_options("gd", raw)


def test_a_channel_token_drive_cannot_carry_is_a_config_error(ws: Watched) -> None:
    options = parse_options("gd", ws.app.settings.sources["gd"].options)
    for bad in ("x" * 257, "t\u00e9st"):
        connector = drive_connector("gd", options, _account(), notification_secret=Secret(bad))
        try:
            with pytest.raises(ConfigError) as caught:
                connector.subscribe(URL, None)
        finally:
            connector.close()
        assert bad not in caught.value.message
    assert ws.drive.calls("/changes/watch") == 0


# --------------------------------------------------------------------------- secrecy


def leaked_secret(ws: Watched, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Everything the engine keeps or shows after subscribing, renewing, notified syncs and
    a failing renewal that contains the channel token."""
    ws.drive.add_file("plan", "Merger plan.")
    ws.drive.share("plan", user(BOB))
    with caplog.at_level(logging.DEBUG):
        ws.synced()
        first = subscribed(ws)
        renewed = renew_subscription(ws.app, "gd", ENV)
        ws.drive.share("plan", user(ALICE))
        ws.notified()
        ws.drive.fault("/changes/watch", 400, reason="push.webhookUrlUnauthorized")
        errors: list[str] = []
        try:
            renew_subscription(ws.app, "gd", ENV)
        except SourceError as exc:
            errors.append(exc.message)
    assert errors, "the failing renewal must fail"
    shown = {
        "subscription": json.dumps([dict(first.state), dict(renewed.state if renewed else {})]),
        "state": json.dumps(StateTable(ws.app.store).get("gd").stats, default=str),
        "reports": json.dumps([r.to_dict() for r in ws.reports], default=str),
        "status": json.dumps(source_status(ws.app), default=str),
        "notices": json.dumps([n.body for n in ws.notices]),
        "errors": json.dumps(errors),
        "log": caplog.text,
    }
    return [where for where, text in shown.items() if SECRET in text]


def test_the_channel_token_never_leaves_the_connector(
    ws: Watched, caplog: pytest.LogCaptureFixture
) -> None:
    assert leaked_secret(ws, caplog) == []
    assert ws.drive.channels  # the token did reach Drive, where it belongs
    assert all(c.token == SECRET for c in ws.drive.channels.values())


def test_reverse_proof_a_subscription_that_keeps_the_token_in_its_state_is_caught(
    ws: Watched, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = DriveConnector.subscribe

    def keeping(self: DriveConnector, url: str, current: Subscription | None) -> Subscription:
        made = original(self, url, current)
        token = self._channel_token().reveal()
        return Subscription(made.id, made.expires_at, {**made.state, "token": token})

    monkeypatch.setattr(DriveConnector, "subscribe", keeping)
    assert "subscription" in leaked_secret(ws, caplog)
