"""The Microsoft Graph connector against a fake Graph on loopback, through the sync engine
into a real index: delta paging, permissions with inheritance and sharing links, Entra group
members, throttling, expired delta tokens and interrupted syncs.

Each invariant is shown with a reverse proof: a deliberately broken connector that the same
assertion catches."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from clearance.app import Clearance
from clearance.errors import ConfigError
from clearance.secrets import Secret
from clearance.sources.base import Access
from clearance.sources.graph import GraphConnector, graph_connector, parse_options
from clearance.sources.service import source_status, sync_source
from clearance.sources.sync import SyncReport
from graph_server import CLIENT_ID, CLIENT_SECRET, DRIVE, TENANT, FakeGraph
from loopback_server import RecordedRequest, Reply, ScriptedServer, closed_url, json_reply

from .conftest import Clock
from .connector_conformance import AllOrNothing, AnyoneWithTheLink, GroupRevocation, InheritedAccess
from .connector_sync import SyncedSource, indexed_app

ALICE, BOB, CAROL = "alice@contoso.example", "bob@contoso.example", "carol@contoso.example"


def user(object_id: str) -> dict[str, Any]:
    return {"roles": ["read"], "grantedToV2": {"user": {"id": object_id, "displayName": "x"}}}


def group(object_id: str) -> dict[str, Any]:
    return {"roles": ["write"], "grantedToV2": {"group": {"id": object_id, "displayName": "x"}}}


def link(scope: str | None, *people: str) -> dict[str, Any]:
    out: dict[str, Any] = {"roles": ["read"], "link": {"type": "view", "webUrl": "https://s/l"}}
    if scope is not None:
        out["link"]["scope"] = scope
    if people:
        out["grantedToIdentitiesV2"] = [{"user": {"id": p}} for p in people]
    return out


@dataclass
class Tenant(SyncedSource):
    source = "sp"
    graph: FakeGraph
    app: Clearance
    clock: Clock
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def connector(self) -> GraphConnector:
        options = parse_options("sp", self.app.settings.sources["sp"].options)
        return graph_connector("sp", options, Secret(CLIENT_SECRET), sleep=self.waits.append)


def doc(item_id: str) -> str:
    return f"graph:{DRIVE}/{item_id}"


def make_tenant(
    tmp_path: Path, *, sensitivity: str = "CONFIDENTIAL", sla: str = "1h"
) -> Iterator[Tenant]:
    with FakeGraph() as graph:
        config = {
            "kind": "graph",
            "credentials": {"client_secret": "GRAPH_CLIENT_SECRET"},
            "options": {
                "tenant_id": TENANT,
                "client_id": CLIENT_ID,
                "drive_id": DRIVE,
                "graph_url": graph.graph_url,
                "login_url": graph.login_url,
                "user_id": "upn",
                "organization_principal": "group:all-staff",
            },
        }
        people = (ALICE, BOB, CAROL)
        with indexed_app(
            tmp_path,
            "sp",
            config,
            people=people,
            staff_group=True,
            sensitivity=sensitivity,
            sla=sla,
        ) as (app, clock):
            for object_id, upn in (("u-alice", ALICE), ("u-bob", BOB), ("u-carol", CAROL)):
                graph.add_user(object_id, upn)
            yield Tenant(graph, app, clock)


@pytest.fixture
def tenant(tmp_path: Path) -> Iterator[Tenant]:
    yield from make_tenant(tmp_path)


# --------------------------------------------------------------------------- the first sync


def test_a_drive_is_read_page_by_page_through_throttling_and_errors(tenant: Tenant) -> None:
    graph = tenant.graph
    graph.groups["g-finance"] = {"u-alice", "g-controllers"}
    graph.groups["g-controllers"] = {"u-bob"}
    graph.share("root", group("g-finance"))
    for n in range(5):
        graph.add_file(f"f{n}", f"Ledger entry {n}: travel refund.")
    graph.fault("/root/delta", 429, retry_after="7")
    graph.fault("/permissions", 503, after=2)
    graph.fault("/transitiveMembers", 502)

    tenant.synced()

    expected = {doc(f"f{n}") for n in range(5)}
    assert tenant.found(ALICE, "ledger") == expected
    assert tenant.found(BOB, "ledger") == expected  # through the nested group
    assert tenant.found(CAROL, "ledger") == set()
    assert 7.0 in tenant.waits  # Retry-After honoured
    assert graph.calls("/root/delta") > 3  # several pages (page size 2)
    assert graph.downloads and all("authorization" not in r.headers for r in graph.downloads)
    assert not graph.responder_errors


def test_an_expired_token_is_renewed_and_credentials_never_show(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("memo", "Salary bands memo.")
    tenant.synced()
    tenant.graph.revoke_tokens()  # Graph answers 401: the connector asks for a new token
    tenant.graph.edit("memo", "Salary bands memo, revised.")
    tenant.synced()
    assert tenant.graph.issued == 2
    assert tenant.found(ALICE, "revised") == {doc("memo")}

    monkeypatch.setattr("graph_server.CLIENT_SECRET", "rotated")  # the app secret is refused
    (report,) = tenant.sync(content=False)
    assert report.error is not None and "credentials refused" in report.error
    shown = json.dumps([r.to_dict() for r in tenant.reports]) + json.dumps(
        source_status(tenant.app)
    )
    assert CLIENT_SECRET not in shown and "token-1" not in shown and "token-2" not in shown


def token_reaches_another_host(tenant: Tenant) -> tuple[bool, SyncReport]:
    """Whether a delta next link pointing at another server makes the connector send it
    the Graph token (and the sync's report)."""
    seen: list[str] = []

    def thief(request: RecordedRequest) -> Reply:
        seen.append(request.headers.get("authorization", ""))
        return json_reply({"value": [], "@odata.deltaLink": "x"})

    with ScriptedServer(RecordedRequest, thief) as other:
        tenant.graph.foreign_next_link = other.url_for("/v1.0/drives/x/root/delta?token=1")
        (report,) = tenant.sync(permissions=False)
    return any(seen), report


def test_a_next_link_outside_graph_url_is_not_followed_with_the_token(tenant: Tenant) -> None:
    leaked, report = token_reaches_another_host(tenant)
    assert not leaked
    assert report.error is not None and "outside graph_url" in report.error


def test_reverse_proof_a_connector_that_follows_any_link_is_caught(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(GraphConnector, "_ours", lambda self, link: True)
    leaked, _ = token_reaches_another_host(tenant)
    assert leaked


def test_reverse_proof_a_download_with_the_token_is_caught(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        GraphConnector,
        "_download",
        lambda self, raw, doc_id: (
            self.client.request("GET", raw["@microsoft.graph.downloadUrl"]).content
        ),
    )
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("memo", "Cafeteria menu.")
    tenant.synced()
    assert any("authorization" in r.headers for r in tenant.graph.downloads)


def test_the_graph_kind_is_built_from_configuration(tenant: Tenant) -> None:
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("memo", "Cafeteria menu.")
    env = {"GRAPH_CLIENT_SECRET": CLIENT_SECRET}
    reports = sync_source(tenant.app, "sp", env=env)
    assert all(r.ok for r in reports)
    assert tenant.found(ALICE, "cafeteria") == {doc("memo")}
    with pytest.raises(ConfigError, match="GRAPH_CLIENT_SECRET"):
        sync_source(tenant.app, "sp", env={})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"client_id": "a", "drive_id": "d"}, "tenant_id: required"),
        ({"tenant_id": "t", "client_id": "a", "drive_id": "d", "user_id": "sid"}, "user_id"),
        ({"tenant_id": "t", "client_id": "a", "drive_id": "d", "graph_url": "ftp://x"}, "http"),
        (
            {"tenant_id": "t", "client_id": "a", "drive_id": "d", "organization_principal": "x"},
            "bad principal",
        ),
        ({"tenant_id": "t", "client_id": "a", "drive_id": "d", "drives": []}, "unknown setting"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_options("sp", options)
    assert "sources.sp.options" in caught.value.message


# --------------------------------------------------------------------------- deletions


def deleted_file_is_still_found(tenant: Tenant) -> bool:
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("menu", "Cafeteria menu: ramen on Fridays.")
    tenant.graph.add_file("travel", "Book trains to Osaka.")
    tenant.synced()
    assert tenant.found(ALICE, "ramen") == {doc("menu")}
    tenant.graph.delete("menu")
    tenant.synced(permissions=False)  # the delta's tombstone alone must take it away
    return bool(tenant.found(ALICE, "ramen"))


def test_a_deleted_file_disappears_from_search(tenant: Tenant) -> None:
    assert not deleted_file_is_still_found(tenant)
    assert tenant.app.store.get_document(doc("menu")) is None
    assert tenant.reports[-1].counts["deleted"] == 1


def test_reverse_proof_a_connector_that_ignores_the_deleted_facet_is_caught(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = GraphConnector._entry
    monkeypatch.setattr(
        GraphConnector, "_entry", lambda self, raw: None if "deleted" in raw else entry(self, raw)
    )
    assert deleted_file_is_still_found(tenant)


def test_an_expired_delta_token_starts_a_full_resync(tenant: Tenant) -> None:
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("menu", "Cafeteria menu: ramen on Fridays.")
    tenant.graph.add_file("travel", "Book trains to Osaka.")
    tenant.synced()
    tenant.graph.delete("menu")
    tenant.graph.items.pop("menu")  # gone from the service's change log, too
    tenant.graph.expired_before = tenant.graph.seq + 1
    (report,) = tenant.sync(permissions=False)
    assert report.ok and report.counts["deleted"] == 1  # the snapshot's absentee is removed
    assert tenant.found(ALICE, "ramen") == set()
    assert tenant.found(ALICE, "osaka") == {doc("travel")}
    assert any("token=full" in r.path for r in tenant.graph.requests[-8:])


# --------------------------------------------------------------------------- permissions


def test_each_sharing_mode_maps_to_what_it_grants_and_no_more(tenant: Tenant) -> None:
    graph = tenant.graph
    graph.add_folder("shared", inherits=False)
    cases: dict[str, list[dict[str, Any]]] = {
        "org": [link("organization")],
        "people": [link("users", "u-alice", "u-carol")],
        "people-unscoped": [link(None, "u-bob")],
        "existing": [link("existingAccess")],
        "expired": [{**user("u-alice"), "expirationDateTime": "2001-01-01T00:00:00Z"}],
        "invited": [{"roles": ["read"], "invitation": {"email": "x@example.org"}}],
        "app": [{"roles": ["read"], "grantedToV2": {"application": {"id": "a1"}}}],
        "site-group": [{"roles": ["read"], "grantedToV2": {"siteGroup": {"id": "3"}}}],
        "odd-type": [{"roles": ["read"], "grantedToV2": {"robot": {"id": "r"}}}],
        "odd-role": [{**user("u-alice"), "roles": ["superpower"]}],
        "odd-scope": [link("galaxy")],
        "claims": [
            {
                "roles": ["read"],
                "grantedToV2": {"siteUser": {"loginName": f"i:0#.f|membership|{CAROL}"}},
            }
        ],
    }
    for name, permissions in cases.items():
        graph.add_file(name, f"Case {name}.", parent="shared")
        graph.share(name, *permissions)
    tenant.synced()
    acls = {d.doc_id.rpartition("/")[2]: d.acl for d in tenant.app.store.list_documents()}
    assert acls == {
        "org": {"group:all-staff"},
        "people": {f"user:{ALICE}", f"user:{CAROL}"},
        "people-unscoped": {f"user:{BOB}"},
        "existing": set(),
        "expired": set(),
        "invited": set(),
        "app": set(),
        "site-group": set(),
        "odd-type": set(),
        "odd-role": set(),
        "odd-scope": set(),
        "claims": {f"user:{CAROL}"},
    }
    (status,) = source_status(tenant.app)
    reasons = {
        e["doc_id"].rpartition("/")[2]: e["reason"] for e in status["visible_to_nobody_examples"]
    }
    assert set(reasons) == {"site-group", "odd-type", "odd-role", "odd-scope"}
    assert "site_groups" in reasons["site-group"] and "robot" in reasons["odd-type"]


def test_unmapped_organisation_links_grant_nobody_and_site_groups_map() -> None:
    options = parse_options(
        "sp",
        {
            "tenant_id": TENANT,
            "client_id": CLIENT_ID,
            "drive_id": DRIVE,
            "graph_url": closed_url("/v1.0"),
            "site_groups": {"Contoso Members": "group:all-staff"},
        },
    )
    connector = graph_connector("sp", options, Secret(CLIENT_SECRET))
    try:
        site = {"roles": ["read"], "grantedToV2": {"siteGroup": {"displayName": "Contoso Members"}}}
        assert connector._map([link("organization")]) == Access.of()
        assert connector._map([site]) == Access.of("group:all-staff")
    finally:
        connector.close()


# --------------------------------------------------------------------------- shared scenarios


class TestGraphScenarios(GroupRevocation, InheritedAccess, AnyoneWithTheLink, AllOrNothing):
    """The scenarios every connector runs (tests/sources/connector_conformance.py), on
    OneDrive and SharePoint: Entra groups, sharing links, folders that stop inheriting."""

    CONNECTOR = GraphConnector
    ALICE, BOB = ALICE, BOB
    OBJECT_ID: ClassVar[dict[str, str]] = {ALICE: "u-alice", BOB: "u-bob"}

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Tenant]:
        yield from make_tenant(tmp_path)

    def doc(self, name: str) -> str:
        return doc(name)

    def share_with_a_group_of_alice_and_bob(self, src: Tenant, name: str, text: str) -> None:
        src.graph.groups["g-board"] = {"u-alice", "u-bob"}
        src.graph.share("root", group("g-board"))
        src.graph.add_file(name, text)

    def remove_alice_from_the_group(self, src: Tenant) -> None:
        src.graph.remove_member("g-board", "u-alice")

    def open_file_and_closed_folder(self, src: Tenant) -> None:
        src.graph.share("root", link("organization"))
        src.graph.add_folder("board")
        src.graph.share("board", user("u-bob"), inherits=False)
        src.graph.add_file("plan", "Merger plan draft.")

    def move_plan_into_board(self, src: Tenant) -> None:
        src.graph.move("plan", "board")

    def open_to_anyone_with_the_link(self, src: Tenant, name: str, text: str) -> None:
        src.graph.add_file(name, text)
        src.graph.share(name, link("anonymous"), inherits=False)

    def widen_anyone_to_everyone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        link_of = GraphConnector._link

        def widened(self: GraphConnector, ident: Any, raw: Any, permission: Any) -> set[str] | None:
            found = link_of(self, ident, raw, permission)
            return {"everyone"} if found is None else found

        monkeypatch.setattr(GraphConnector, "_link", widened)

    def readable_by(self, src: Tenant, names: Sequence[str], who: str) -> None:
        for name in names:
            if name not in src.graph.items:
                src.graph.add_file(name, f"Quarterly memo {name}.")
            src.graph.share(name, user(self.OBJECT_ID[who]))

    def stop_answering_permissions_after(self, src: Tenant, answered: int) -> None:
        src.graph.fault("/permissions", 503, times=None, after=answered)


# --------------------------------------------------------------------------- content


def test_a_permission_change_reads_no_content(tenant: Tenant) -> None:
    tenant.graph.share("root", user("u-alice"))
    tenant.graph.add_file("memo", "Parking rules.")
    tenant.synced()
    downloads = len(tenant.graph.downloads)
    tenant.graph.share("root", user("u-bob"))
    tenant.synced()
    assert len(tenant.graph.downloads) == downloads
    assert tenant.found(BOB, "parking") == {doc("memo")}
    assert tenant.found(ALICE, "parking") == set()
