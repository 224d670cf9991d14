"""Graph change notifications against the fake Graph on loopback, through the sync engine into
a real index: the validation handshake, clientState, the delta with sharing changes resolving a
notification into a targeted sync (folder sharing changes naming every file beneath), expired
delta tokens, and subscriptions made, renewed and made again as Graph's contract says.

Each security property is shown with a reverse proof: a deliberately leaky connector that the
same assertion catches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources.base import Access, Notice, Subscription
from clearance.sources.graph import GraphConnector, graph_connector, parse_options
from clearance.sources.service import source_status
from clearance.sources.state import StateTable
from clearance.sources.sync import FEED_KEY, SourceSync, SyncReport
from graph_server import CLIENT_SECRET, DRIVE, RESOURCE
from loopback_server import RecordedRequest, Reply, ScriptedServer

from .test_graph import ALICE, BOB, Tenant, doc, make_tenant, user

SECRET = "n0tification-shared-secret-7f3a"
PATH = "/v1/sources/sp/notifications"
MAX_LIFETIME = timedelta(minutes=42300)


def connector(tenant: Tenant, secret: str | None = SECRET) -> GraphConnector:
    options = parse_options("sp", tenant.app.settings.sources["sp"].options)
    return graph_connector(
        "sp",
        options,
        Secret(CLIENT_SECRET),
        sleep=tenant.waits.append,
        notification_secret=None if secret is None else Secret(secret),
    )


class Endpoint(ScriptedServer[RecordedRequest]):
    """Clearance's notification endpoint as Graph sees it: each request is checked by the
    connector and answered with its notice (what ``clearance serve`` does), the notices kept."""

    def __init__(self, graph_connector: GraphConnector) -> None:
        super().__init__(RecordedRequest, self._answer)
        self.connector = graph_connector
        self.notices: list[Notice] = []

    def _answer(self, request: RecordedRequest) -> Reply:
        parts = urlsplit(request.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        notice = self.connector.notification(request.headers, query, request.body)
        self.notices.append(notice)
        return Reply(notice.status, notice.body.encode(), content_type=notice.content_type)

    @property
    def url(self) -> str:
        return self.url_for(PATH)


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[Tenant]:
    yield from make_tenant(tmp_path)


@pytest.fixture
def endpoint(tenant: Tenant) -> Iterator[Endpoint]:
    listening = connector(tenant)
    try:
        with Endpoint(listening) as server:
            yield server
    finally:
        listening.close()


def feed_sync(tenant: Tenant) -> SyncReport:
    """What the scheduler runs for a notice that names nothing."""
    graph = connector(tenant)
    try:
        report = SourceSync(tenant.app, tenant.app.settings.sources["sp"], graph).from_feed()
    finally:
        graph.close()
    tenant.reports.append(report)
    return report


def shared_drive(tenant: Tenant) -> None:
    """Alice and Bob read the whole drive; ``proj/deep`` holds two files, the root one."""
    graph = tenant.graph
    graph.share("root", user("u-alice"), user("u-bob"))
    graph.add_folder("proj")
    graph.add_folder("deep", parent="proj")
    graph.add_file("plan", "Roadmap plan for the kiwi launch.", parent="deep")
    graph.add_file("budget", "Budget sheet for the kiwi launch.", parent="deep")
    graph.add_file("memo", "Cafeteria memo about the kiwi tasting.")
    tenant.synced()
    assert tenant.found(BOB, "kiwi") == {doc("plan"), doc("budget"), doc("memo")}


# --------------------------------------------------------------------------- the handshake


def test_the_validation_handshake_echoes_the_token_as_plain_text(tenant: Tenant) -> None:
    graph = connector(tenant)
    token = "Validation: Testing client application reachability for subscription 42"
    notice = graph.notification({}, {"validationToken": token}, b"")
    assert (notice.status, notice.content_type, notice.body) == (200, "text/plain", token)
    assert not notice.changes
    for bad in ("", "x" * 1025, "line\nbreak"):
        refused = graph.notification({}, {"validationToken": bad}, b"")
        assert refused.status == 400 and not refused.changes
    graph.close()


# --------------------------------------------------------------------------- clientState


def notification(client_state: Any, **entry: Any) -> bytes:
    value = {
        "subscriptionId": "8d4b7c0e-58a4-4b55-9ad1-3a2b9f6c1d2e",
        "subscriptionExpirationDateTime": "2026-12-31T00:00:00Z",
        "changeType": "updated",
        "resource": RESOURCE,
        "tenantId": "2a8ba9d4-0d86-4c3e-b4a3-8f9d2c6e1f10",
        "clientState": client_state,
        **entry,
    }
    return json.dumps({"value": [value]}).encode()


def forgeries_refused(graph: GraphConnector) -> bool:
    """Whether every forged notification is refused with 401 and names no change."""
    forged = [
        notification("guess"),
        notification(None),
        notification(SECRET[:-1]),
        notification(SECRET + "x"),
        json.dumps(
            {"value": [json.loads(notification(SECRET))["value"][0], {"clientState": "guess"}]}
        ).encode(),
    ]
    notices = [graph.notification({}, {}, body) for body in forged]
    return all(n.status == 401 and not n.changes and n.doc_ids == frozenset() for n in notices)


def test_a_wrong_client_state_is_refused_and_changes_nothing(tenant: Tenant) -> None:
    graph = connector(tenant)
    assert forgeries_refused(graph)
    accepted = graph.notification({}, {}, notification(SECRET))
    assert accepted.status == 202 and accepted.doc_ids is None and accepted.content
    unconfigured = connector(tenant, secret=None)
    assert unconfigured.notification({}, {}, notification(SECRET)).status == 401
    for body in (b"not json", b"{}", b'{"value": []}', notification(SECRET, subscriptionId="")):
        assert graph.notification({}, {}, body).status == 400
    graph.close()
    unconfigured.close()


def test_reverse_proof_a_notification_check_that_skips_client_state_is_caught(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(GraphConnector, "_authentic", lambda self, presented: True)
    graph = connector(tenant)
    assert not forgeries_refused(graph)
    graph.close()


@pytest.mark.parametrize("event", ["missed", "reauthorizationRequired", "subscriptionRemoved"])
def test_lifecycle_events_are_unknown_changes(tenant: Tenant, event: str) -> None:
    graph = connector(tenant)
    body = notification(SECRET, lifecycleEvent=event)
    notice = graph.notification({}, {}, body)
    assert notice.status == 202 and notice.doc_ids is None
    assert graph.notification({}, {}, notification("guess", lifecycleEvent=event)).status == 401
    strange = graph.notification({}, {}, notification(SECRET, lifecycleEvent="strange"))
    assert strange.status == 400
    graph.close()


# --------------------------------------------------------------------------- end to end


def test_a_permission_removed_reaches_the_index_through_a_notification(
    tenant: Tenant, endpoint: Endpoint
) -> None:
    shared_drive(tenant)
    assert isinstance(StateTable(tenant.app.store).get("sp").stats[FEED_KEY], str)
    subscriber = connector(tenant)
    subscriber.subscribe(endpoint.url, None)
    subscriber.close()

    tenant.graph.share("memo", user("u-alice"), inherits=False)  # Bob loses the memo

    assert tenant.graph.delivered[-1][1] == 202
    assert endpoint.notices[-1].doc_ids is None  # Graph does not say what changed
    reads_before = tenant.graph.calls("/permissions")
    report = feed_sync(tenant)
    assert report.ok and report.kind == "notified", report.error
    assert report.counts["listed"] == 1 and report.counts["revoked"] == 1
    assert tenant.graph.calls("/permissions") - reads_before == 1  # one item read, not three
    assert tenant.found(BOB, "kiwi") == {doc("plan"), doc("budget")}
    assert tenant.found(ALICE, "kiwi") == {doc("plan"), doc("budget"), doc("memo")}


def folder_share_reaches_bob(tenant: Tenant) -> bool:
    """Whether Bob still finds the files beneath ``proj`` after ``proj`` stopped inheriting
    his access, once the notified sync ran."""
    position = StateTable(tenant.app.store).get("sp").stats[FEED_KEY]
    tenant.graph.share("proj", user("u-alice"), inherits=False)
    graph = connector(tenant)
    named, _ = graph.changed_since(position)
    graph.close()
    assert doc("memo") not in named  # outside the folder
    assert feed_sync(tenant).ok
    return bool(tenant.found(BOB, "kiwi") & {doc("plan"), doc("budget")})


def test_a_folder_sharing_change_names_every_file_beneath_it(tenant: Tenant) -> None:
    shared_drive(tenant)
    assert not folder_share_reaches_bob(tenant)
    assert tenant.found(BOB, "kiwi") == {doc("memo")}
    assert tenant.found(ALICE, "kiwi") == {doc("plan"), doc("budget"), doc("memo")}


def test_reverse_proof_a_feed_without_folder_descendants_is_caught(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared_drive(tenant)
    monkeypatch.setattr(GraphConnector, "_descendants", lambda self, folders: set())
    assert folder_share_reaches_bob(tenant)


def test_a_file_moved_into_a_restricted_folder_is_named(tenant: Tenant) -> None:
    shared_drive(tenant)
    tenant.graph.add_folder("vault", inherits=False)
    tenant.graph.share("vault", user("u-alice"), inherits=False)
    position = StateTable(tenant.app.store).get("sp").stats[FEED_KEY]
    tenant.graph.move("memo", "vault")
    graph = connector(tenant)
    named, following = graph.changed_since(position)
    assert doc("memo") in named and doc("plan") not in named
    assert graph.changed_since(following)[0] == frozenset()  # nothing since
    graph.close()
    assert feed_sync(tenant).ok
    assert doc("memo") not in tenant.found(BOB, "kiwi")


def test_an_expired_delta_token_falls_back_to_a_full_permission_sync(tenant: Tenant) -> None:
    shared_drive(tenant)
    position = StateTable(tenant.app.store).get("sp").stats[FEED_KEY]
    tenant.graph.expired_before = tenant.graph.seq + 1
    tenant.graph.share("memo", user("u-alice"), inherits=False)
    graph = connector(tenant)
    with pytest.raises(SourceError) as caught:
        graph.changed_since(position)
    assert caught.value.status == 410
    with pytest.raises(SourceError) as other:
        graph.changed_since(f"another-drive {position.partition(' ')[2]}")
    assert other.value.status == 410
    graph.close()
    report = feed_sync(tenant)
    assert report.ok and report.kind == "permissions", report.error
    assert tenant.found(BOB, "kiwi") == {doc("plan"), doc("budget")}


def test_the_feed_sends_the_sharing_change_headers_and_keeps_its_own_cursor(
    tenant: Tenant,
) -> None:
    shared_drive(tenant)
    before = StateTable(tenant.app.store).get("sp")
    tenant.graph.share("memo", user("u-alice"), inherits=False)
    assert feed_sync(tenant).ok
    after = StateTable(tenant.app.store).get("sp")
    assert after.content_cursor == before.content_cursor  # the content feed is not consumed
    assert after.stats[FEED_KEY] != before.stats[FEED_KEY]
    feeds = [r for r in tenant.graph.requests if "/root/delta" in r.path and "prefer" in r.headers]
    assert feeds and all(
        r.headers["prefer"]
        == "deltashowremovedasdeleted, deltatraversepermissiongaps, deltashowsharingchanges, "
        "hierarchicalsharing"
        for r in feeds
    )
    assert any("token=latest" in r.path for r in feeds)


def test_permissions_of_reads_just_the_named_items(tenant: Tenant) -> None:
    shared_drive(tenant)
    tenant.graph.delete_user("u-bob")  # looked up in Entra again: grants nothing now
    tenant.graph.fault("/items/budget/permissions", 403, times=None)
    graph = connector(tenant)
    read = {
        c.doc_id: c.access
        for c in graph.permissions_of(
            [doc("plan"), doc("budget"), doc("gone"), "graph:another-drive/plan"]
        )
    }
    assert read[doc("plan")] == Access.of(f"user:{ALICE}")
    assert read[doc("budget")].unrepresentable is not None
    assert set(read) == {doc("plan"), doc("budget")}
    tenant.graph.fault("/items/plan/permissions", 500, times=None)
    with pytest.raises(SourceError):
        list(graph.permissions_of([doc("plan")]))
    graph.close()


# --------------------------------------------------------------------------- subscriptions


def posted(tenant: Tenant, method: str) -> list[Any]:
    return [
        r.json for r in tenant.graph.requests if r.method == method and "/subscriptions" in r.path
    ]


def test_subscribe_renew_and_make_again_as_the_contract_says(
    tenant: Tenant, endpoint: Endpoint
) -> None:
    graph = connector(tenant)
    before = datetime.now(UTC)
    made = graph.subscribe(endpoint.url, None)
    (body,) = posted(tenant, "POST")
    assert set(body) == {
        "changeType",
        "notificationUrl",
        "lifecycleNotificationUrl",
        "resource",
        "expirationDateTime",
        "clientState",
    }
    assert body["changeType"] == "updated" and body["resource"] == f"/drives/{DRIVE}/root"
    assert body["notificationUrl"] == body["lifecycleNotificationUrl"] == endpoint.url
    assert body["clientState"] == SECRET
    asked = datetime.fromisoformat(body["expirationDateTime"].replace("Z", "+00:00"))
    assert before + MAX_LIFETIME - timedelta(minutes=2) < asked <= before + MAX_LIFETIME
    assert made.id in tenant.graph.subscriptions and made.expires_at == asked
    assert made.state == {"resource": f"/drives/{DRIVE}/root"}
    assert [v[2] for v in tenant.graph.validations] == ["echoed", "echoed"]

    renewed = graph.subscribe(endpoint.url, made)
    assert renewed.id == made.id
    (patch,) = posted(tenant, "PATCH")
    assert set(patch) == {"expirationDateTime"}
    assert len(posted(tenant, "POST")) == 1

    tenant.graph.drop_subscription(made.id)  # expired, or removed by Graph
    again = graph.subscribe(endpoint.url, renewed)
    assert again.id != made.id and again.id in tenant.graph.subscriptions
    assert len(posted(tenant, "PATCH")) == 2 and len(posted(tenant, "POST")) == 2

    moved = Subscription("old-drive-sub", again.expires_at, {"resource": "/drives/x/root"})
    graph.subscribe(endpoint.url, moved)  # another drive's: made anew, the old one deleted
    assert any(
        r.method == "DELETE" and r.path.endswith("/subscriptions/old-drive-sub")
        for r in tenant.graph.requests
    )
    assert tenant.graph.lifecycle(again.id, "missed") == 202
    graph.close()


def test_an_endpoint_that_fails_the_handshake_gets_no_subscription(tenant: Tenant) -> None:
    with ScriptedServer(
        RecordedRequest, lambda r: Reply(200, b"ok", content_type="text/plain")
    ) as bad:
        graph = connector(tenant)
        with pytest.raises(SourceError) as caught:
            graph.subscribe(bad.url_for(PATH), None)
        graph.close()
    assert caught.value.status == 400 and not tenant.graph.subscriptions
    assert SECRET not in str(caught.value)


def secret_shown(tenant: Tenant, endpoint: Endpoint) -> bool:
    """Whether the notification secret shows in a subscription's state, a report, the
    source's status or an error, over subscribing, renewing, notifications and failures."""
    shown: list[str] = []
    graph = connector(tenant)
    made = graph.subscribe(endpoint.url, None)
    shown.append(json.dumps(dict(made.state)))
    shown.append(json.dumps(dict(graph.subscribe(endpoint.url, made).state)))
    tenant.graph.share("memo", user("u-alice"), inherits=False)
    shown.extend(n.body for n in endpoint.notices)
    shown.append(graph.notification({}, {}, notification("guess")).body)
    tenant.graph.fault("/subscriptions", 500, times=None)
    with pytest.raises(SourceError) as caught:
        graph.subscribe(endpoint.url, made)
    shown.append(str(caught.value))
    graph.close()
    shown.extend(json.dumps(r.to_dict()) for r in [*tenant.reports, feed_sync(tenant)])
    shown.append(json.dumps(source_status(tenant.app)))
    return any(SECRET in s for s in shown)


def test_the_secret_never_shows(tenant: Tenant, endpoint: Endpoint) -> None:
    shared_drive(tenant)
    assert not secret_shown(tenant, endpoint)


def test_reverse_proof_a_subscription_state_holding_the_secret_is_caught(
    tenant: Tenant, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = GraphConnector._subscription

    def leaky(self: GraphConnector, raw: Any, resource: str, asked: datetime) -> Subscription:
        made = original(self, raw, resource, asked)
        return Subscription(made.id, made.expires_at, {**made.state, "clientState": SECRET})

    monkeypatch.setattr(GraphConnector, "_subscription", leaky)
    shared_drive(tenant)
    assert secret_shown(tenant, endpoint)


def test_a_sharing_change_on_the_library_root_names_every_file(tenant: Tenant) -> None:
    shared_drive(tenant)
    tenant.graph.share("root", user("u-alice"))  # Bob loses the whole library
    report = feed_sync(tenant)
    assert report.ok and report.kind == "notified", report.error
    assert report.counts["listed"] == 3
    assert tenant.found(BOB, "kiwi") == set()
    assert tenant.found(ALICE, "kiwi") == {doc("plan"), doc("budget"), doc("memo")}
