"""The Graph connector, shape by shape: for every way SharePoint and OneDrive share an item,
exactly who can read it once synced — and the Entra lookups, SharePoint group members and
credentials that decide it, against the fake Graph (and SharePoint) on loopback.

Each invariant is shown with a reverse proof: a deliberately broken connector that the same
assertion catches."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jwt
import pytest

from clearance.access.ownership import BLOCKED_KEY
from clearance.app import Clearance
from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.graph import (
    AssertionCredentials,
    Credential,
    FederatedTokenFile,
    GraphConnector,
    graph_connector,
    parse_certificate,
    parse_options,
)
from clearance.sources.http import SourceClient
from clearance.sources.rest import principal
from clearance.sources.service import source_status, sync_source
from clearance.sources.sync import SyncReport
from graph_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    DRIVE,
    TENANT,
    FakeGraph,
    certificate,
    certificate_pem,
    federated_token,
)

from .conftest import Clock
from .connector_conformance import Permissions, SharingShapes, readers
from .connector_sync import SyncedSource, acl_state, indexed_app, remember_first_answers
from .test_graph import doc, group, link, user

PEOPLE = ("u-alice", "u-bob", "u-carol", "u-dave")
SITE_GROUP = "group:sharepoint/localhost/sites/finance/3"
NOBODY = "nobody"  # the expected ACL of an item visible to nobody


@dataclass
class Shapes(SyncedSource):
    """A drive synced with ``user_id = "id"`` (the default), a certificate credential and
    SharePoint group members read from the site."""

    source = "sp"
    graph: FakeGraph
    app: Clearance
    clock: Clock
    credential: Credential
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def connector(self) -> GraphConnector:
        options = parse_options("sp", self.app.settings.sources["sp"].options)
        return graph_connector("sp", options, self.credential, sleep=self.waits.append)

    def acls(self) -> dict[str, Any]:
        """Each item's ACL, or ``(NOBODY, reason)`` for one visible to nobody."""
        out: dict[str, Any] = {}
        for d in self.app.store.list_documents():
            name = d.doc_id.rpartition("/")[2]
            blocked = d.extra.get(BLOCKED_KEY)
            out[name] = (NOBODY, str(blocked)) if blocked else set(d.acl)
        return out


def options_for(graph: FakeGraph, **extra: Any) -> dict[str, Any]:
    return {
        "tenant_id": TENANT,
        "client_id": CLIENT_ID,
        "drive_id": DRIVE,
        "graph_url": graph.graph_url,
        "login_url": graph.login_url,
        "organization_principal": "group:all-staff",
        "site_url": graph.site_url,
        "sync_site_groups": True,
        "site_groups": {"Board": "group:board-static"},
        **extra,
    }


def make_shapes(tmp_path: Path, *, sensitivity: str = "CONFIDENTIAL") -> Iterator[Shapes]:
    with FakeGraph() as graph:
        graph.register_certificate(certificate("clearance-app"))
        config = {
            "kind": "graph",
            "credentials": {"certificate": "GRAPH_CERTIFICATE"},
            "options": options_for(graph),
        }
        with indexed_app(
            tmp_path, "sp", config, people=PEOPLE, staff_group=True, sensitivity=sensitivity
        ) as (app, clock):
            for object_id in (*PEOPLE, "u-gone"):
                graph.add_user(object_id, f"{object_id.removeprefix('u-')}@contoso.example")
            graph.delete_user("u-gone")
            cert = parse_certificate(certificate_pem("clearance-app"), "test")
            yield Shapes(graph, app, clock, cert)


@pytest.fixture
def shapes(tmp_path: Path) -> Iterator[Shapes]:
    yield from make_shapes(tmp_path)


# --------------------------------------------------------------------------- the table

SITE_USER = "i:0#.f|membership|carol@contoso.example"

#: sharing shape -> (its permissions, exactly who can read the item: principals, or
#: (NOBODY, a fragment of the reason))
TABLE: dict[str, tuple[list[dict[str, Any]], Any]] = {
    "direct-user": ([user("u-alice")], {"user:u-alice"}),
    "deleted-user": ([user("u-gone")], set()),
    "disabled-user": ([user("u-dave")], set()),
    "entra-group": ([group("g-finance")], {"group:g-finance"}),
    "sharepoint-group": (
        [{"roles": ["read"], "grantedToV2": {"siteGroup": {"id": "3", "displayName": "Fin"}}}],
        {SITE_GROUP},
    ),
    "sharepoint-group-static": (
        [{"roles": ["read"], "grantedToV2": {"siteGroup": {"id": "4", "displayName": "Board"}}}],
        {"group:board-static"},
    ),
    "site-user": (
        [{"roles": ["read"], "grantedToV2": {"siteUser": {"loginName": SITE_USER}}}],
        {"user:u-carol"},
    ),
    "site-user-local": (
        [{"roles": ["read"], "grantedToV2": {"siteUser": {"loginName": "i:0#.w|corp\\x"}}}],
        (NOBODY, "has no Entra account"),
    ),
    "organization-link": ([link("organization")], {"group:all-staff"}),
    "users-link": ([link("users", "u-alice", "u-carol")], {"user:u-alice", "user:u-carol"}),
    "users-link-deleted": ([link("users", "u-gone")], set()),
    "anonymous-link": ([link("anonymous")], (NOBODY, "anyone who has the link")),
    "existing-access-link": ([link("existingAccess")], set()),
    "expired": ([{**user("u-alice"), "expirationDateTime": "2001-01-01T00:00:00Z"}], set()),
    "never-expires": (
        [{**user("u-alice"), "expirationDateTime": "0001-01-01T00:00:00Z"}],
        {"user:u-alice"},
    ),
    "pending-invitation": (
        [{"roles": ["read"], "invitation": {"email": "x@example.org", "signInRequired": True}}],
        set(),
    ),
    "application": ([{"roles": ["read"], "grantedToV2": {"application": {"id": "a1"}}}], set()),
    "unknown-role": (
        [{**user("u-alice"), "roles": ["superpower"]}],
        (NOBODY, "role superpower is not understood"),
    ),
    "unknown-scope": ([link("galaxy")], (NOBODY, "scope 'galaxy'")),
    "unknown-type": (
        [{"roles": ["read"], "grantedToV2": {"robot": {"id": "r"}}}],
        (NOBODY, "robot"),
    ),
    "one-unknown-among-known": (
        [user("u-alice"), link("galaxy")],
        (NOBODY, "scope 'galaxy'"),
    ),
    "forbidden-403": ([user("u-alice")], (NOBODY, "HTTP 403")),
}


SHAPES = [
    Permissions(
        name,
        permissions,
        f"nobody: {wanted[1]}" if isinstance(wanted, tuple) else frozenset(wanted),
    )
    for name, (permissions, wanted) in TABLE.items()
]


def the_tenant(graph: FakeGraph) -> None:
    """What every shape is shared in: a disabled user, an Entra group, a SharePoint site
    group holding a user and that group, and a folder that stops inheriting."""
    graph.disable_user("u-dave")
    graph.groups["g-finance"] = {"u-bob"}
    graph.add_site_group(3, "u-carol", "g-finance")
    graph.add_folder("shared", inherits=False)


class TestGraphSharing(SharingShapes):
    """Each shape of the table, on its own drive (tests/sources/connector_conformance.py)."""

    SHAPES = SHAPES

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Shapes]:
        yield from make_shapes(tmp_path)

    def share(self, src: Shapes, shape: Permissions, monkeypatch: pytest.MonkeyPatch) -> str:
        the_tenant(src.graph)
        src.graph.add_file(shape.name, f"Case {shape.name}.", parent="shared")
        src.graph.share(shape.name, *shape.permissions)
        src.graph.fault("/items/forbidden-403/permissions", 403, times=None)
        return doc(shape.name)


def test_inherited_entries_and_site_group_members_reach_exactly_their_readers(
    shapes: Shapes,
) -> None:
    """A folder's sharing reaches the file below it (``inheritedFrom``); a SharePoint
    group's members come from SharePoint, its Entra group's from Entra."""
    the_tenant(shapes.graph)
    shapes.graph.add_folder("team", inherits=False)
    shapes.graph.share("team", user("u-bob"), inherits=False)
    shapes.graph.add_file("inherited", "Case inherited.", parent="team")
    shapes.graph.share("inherited", user("u-alice"))
    (sharepoint,) = [s for s in SHAPES if s.name == "sharepoint-group"]
    shapes.graph.add_file(sharepoint.name, "Case sharepoint-group.", parent="shared")
    shapes.graph.share(sharepoint.name, *sharepoint.permissions)
    shapes.synced()
    assert readers(shapes.app, doc("inherited")) == frozenset({"user:u-alice", "user:u-bob"})
    assert shapes.found("u-carol", "sharepoint-group") == {doc("sharepoint-group")}
    assert shapes.found("u-bob", "sharepoint-group") == {doc("sharepoint-group")}
    assert shapes.found("u-alice", "sharepoint-group") == set()


def test_an_organisation_link_grants_nobody_without_organization_principal(
    shapes: Shapes,
) -> None:
    options = parse_options("sp", options_for(shapes.graph, organization_principal=None))
    connector = graph_connector("sp", options, shapes.credential)
    try:
        shapes.graph.add_file("f", "x")
        shapes.graph.share("f", link("organization"), inherits=False)
        assert connector._access("f") == connector._map([])
    finally:
        connector.close()


def test_an_anonymous_link_in_a_public_corpus_is_everyone(tmp_path: Path) -> None:
    for shapes in make_shapes(tmp_path, sensitivity="PUBLIC"):
        shapes.graph.add_file("flyer", "Open day flyer.")
        shapes.graph.share("flyer", link("anonymous"), inherits=False)
        shapes.synced()
        assert shapes.acls() == {"flyer": {"everyone"}}


# --------------------------------------------------------------------------- deleted users


def deleted_user_reads(tenant: Shapes) -> bool:
    """Whether a user deleted from Entra still reads a file shared with them directly, after
    the next permission sync (``user_id = "id"``: the id alone would name them)."""
    tenant.graph.add_file("memo", "Severance terms memo.")
    tenant.graph.share("memo", user("u-alice"), inherits=False)
    tenant.synced()
    assert tenant.found("u-alice", "severance") == {doc("memo")}
    tenant.graph.delete_user("u-alice")
    tenant.synced(content=False)
    return bool(tenant.found("u-alice", "severance"))


def test_a_user_deleted_from_entra_grants_nobody_in_id_mode(shapes: Shapes) -> None:
    assert not deleted_user_reads(shapes)


def test_reverse_proof_a_connector_that_trusts_the_object_id_is_caught(
    shapes: Shapes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(GraphConnector, "_user", lambda self, key: principal(f"user:{key}"))
    assert deleted_user_reads(shapes)


def test_each_user_is_looked_up_once_per_sync_and_again_the_next(shapes: Shapes) -> None:
    shapes.graph.page_size = 50
    for n in range(12):
        shapes.graph.add_file(f"f{n}", f"Note {n}.")
        shapes.graph.share(f"f{n}", user("u-alice"), link("users", "u-alice"), inherits=False)
    shapes.synced()
    first = shapes.graph.calls("/users/u-alice")
    assert first == 2  # the content sync's, and the permission sync's
    shapes.synced(content=False)
    assert shapes.graph.calls("/users/u-alice") == first + 1


def failed_lookup(tenant: Shapes, status: int) -> tuple[SyncReport, bool]:
    """A permission sync during which Entra fails to answer user lookups with ``status``:
    its report, and whether it changed any ACL."""
    tenant.graph.add_file("memo", "Severance terms memo.")
    tenant.graph.share("memo", user("u-alice"), inherits=False)
    tenant.synced()
    before = acl_state(tenant.app)
    tenant.graph.share("memo", user("u-bob"), inherits=False)
    tenant.clock.advance(60)
    tenant.graph.fault("/users/", status, times=None)
    (report,) = tenant.sync(content=False)
    return report, acl_state(tenant.app) != before


@pytest.mark.parametrize("status", [503, 403])
def test_a_user_lookup_that_fails_fails_the_permission_sync(shapes: Shapes, status: int) -> None:
    report, changed = failed_lookup(shapes, status)
    assert not report.ok and str(status) in (report.error or "")
    assert not changed


def test_reverse_proof_a_connector_that_trusts_the_id_when_entra_fails_is_caught(
    shapes: Shapes, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookup = GraphConnector._lookup

    def trusting(self: GraphConnector, key: str) -> Any:
        try:
            return lookup(self, key)
        except SourceError:
            return principal(f"user:{key}")

    monkeypatch.setattr(GraphConnector, "_lookup", trusting)
    report, changed = failed_lookup(shapes, 503)
    assert report.ok and changed  # bob granted on an id Entra never confirmed


# --------------------------------------------------------------------------- SharePoint groups


def removed_site_member_reads(tenant: Shapes) -> bool:
    """Whether a member removed from a SharePoint group in SharePoint still reads what the
    group was granted, after the next permission sync."""
    tenant.graph.add_site_group(3, "u-alice", "u-bob")
    tenant.graph.add_file("plan", "Budget plan.")
    site_group = {"siteGroup": {"id": "3", "displayName": "Finance Members"}}
    tenant.graph.share("plan", {"roles": ["read"], "grantedToV2": site_group}, inherits=False)
    tenant.synced()
    assert tenant.found("u-alice", "budget") == {doc("plan")}
    tenant.graph.add_site_group(3, "u-bob")  # alice removed in SharePoint
    tenant.synced(content=False)
    assert tenant.found("u-bob", "budget") == {doc("plan")}
    return bool(tenant.found("u-alice", "budget"))


def test_a_member_removed_from_a_sharepoint_group_loses_access(shapes: Shapes) -> None:
    assert not removed_site_member_reads(shapes)


def test_reverse_proof_a_connector_that_keeps_first_seen_site_members_is_caught(
    shapes: Shapes, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember_first_answers(monkeypatch, GraphConnector, "_site_members")
    assert removed_site_member_reads(shapes)


def test_unresolvable_site_group_members_grant_nothing_and_are_reported(shapes: Shapes) -> None:
    shapes.graph.page_size = 2  # the members come in several pages
    shapes.graph.add_site_group(
        3,
        "u-alice",
        "i:0#.f|membership|gone@contoso.example",  # deleted from Entra: grants nothing
        "i:0#.w|corp\\legacy",  # a login that is no Entra user
        "c:0o.c|federateddirectoryclaimprovider|g_o",  # a Microsoft 365 group's owners
    )
    shapes.graph.add_site_group(5)  # a group with no members
    shapes.graph.add_file("plan", "Budget plan.")
    shared = [{"roles": ["read"], "grantedToV2": {"siteGroup": {"id": n}}} for n in ("3", "5", "9")]
    shapes.graph.share("plan", *shared, inherits=False)  # group 9 was deleted in SharePoint
    content, report = shapes.sync()
    assert content.ok and report.ok
    groups = {g.id: set(g.members) for g in shapes.app.directory.groups.values()}
    assert groups[SITE_GROUP.removeprefix("group:")] == {"user:u-alice"}
    assert groups["sharepoint/localhost/sites/finance/5"] == set()
    assert groups["sharepoint/localhost/sites/finance/9"] == set()
    text = " ".join(report.warnings)
    assert "legacy" in text and "g_o" in text and "gone@" not in text


def test_a_client_secret_is_refused_for_sharepoint_groups(tmp_path: Path) -> None:
    with FakeGraph() as graph:
        config = {
            "kind": "graph",
            "credentials": {"client_secret": "GRAPH_CLIENT_SECRET"},
            "options": options_for(graph),
        }
        with (
            indexed_app(tmp_path, "sp", config, people=PEOPLE, staff_group=False) as (app, _),
            pytest.raises(ConfigError, match=r"sync_site_groups: .* client secret"),
        ):
            sync_source(app, "sp", env={"GRAPH_CLIENT_SECRET": CLIENT_SECRET})
        # and SharePoint itself refuses such a token, as SharePoint Online does
        options = parse_options("sp", options_for(graph))
        connector = graph_connector("sp", options, Secret(CLIENT_SECRET))
        try:
            graph.add_site_group(3, "u-alice")
            with pytest.raises(SourceError, match="401"):
                connector._site_members("3")
        finally:
            connector.close()


# --------------------------------------------------------------------------- credentials


def test_a_certificate_from_the_environment_or_a_file_authenticates(
    shapes: Shapes, tmp_path: Path
) -> None:
    shapes.graph.add_file("memo", "Parking rules.")
    shapes.graph.share("memo", user("u-alice"), inherits=False)
    pem = certificate_pem("clearance-app").decode()
    assert all(r.ok for r in sync_source(shapes.app, "sp", env={"GRAPH_CERTIFICATE": pem}))
    assert shapes.found("u-alice", "parking") == {doc("memo")}
    header = jwt.get_unverified_header(shapes.graph.assertions[-1])
    assert header["alg"] == "PS256" and "x5t#S256" in header

    pem_file = tmp_path / "app.pem"
    pem_file.write_text(pem)
    settings = shapes.app.settings.sources["sp"]
    options = {**settings.options, "certificate_file": str(pem_file)}
    source = replace(settings, credentials={}, options=options)
    sources = {**shapes.app.settings.sources, "sp": source}
    shapes.app.settings = replace(shapes.app.settings, sources=sources)
    assert all(r.ok for r in sync_source(shapes.app, "sp", env={}))


def token_with(graph: FakeGraph, proof: Any, **kwargs: Any) -> str:
    """The token endpoint's answer to an assertion from ``proof``: a token, or the error."""
    with SourceClient(source="sp", max_concurrency=1, max_retries=0) as tokens:
        scope = f"{graph.url_for('')}/.default"
        auth = AssertionCredentials(tokens, graph.token_url, CLIENT_ID, proof, scope, **kwargs)
        try:
            return auth.token().reveal()
        except SourceError as exc:
            return str(exc)


def test_the_token_endpoint_checks_the_assertion_signature_audience_and_expiry(
    shapes: Shapes,
) -> None:
    graph = shapes.graph
    good = parse_certificate(certificate_pem("clearance-app"), "k")
    assert token_with(graph, good).startswith("token-")
    stranger = parse_certificate(certificate_pem("stranger"), "k")  # not registered
    assert "401" in token_with(graph, stranger)
    forged = replace(stranger, thumbprint=good.thumbprint)  # registered thumbprint, wrong key
    assert "401" in token_with(graph, forged)
    assert "401" in token_with(graph, good, wall_clock=lambda: 1_000_000_000.0)  # expired
    with SourceClient(source="sp", max_concurrency=1, max_retries=0) as tokens:
        scope = f"{graph.url_for('')}/.default"
        elsewhere = AssertionCredentials(tokens, graph.token_url, CLIENT_ID, good, scope)
        form = elsewhere.grant()
        form["client_assertion"] = good.assertion(CLIENT_ID, "https://other/token", time.time())
        response = tokens._client.post(graph.token_url, data=form)
        assert response.status_code == 401 and "AADSTS700212" in response.text  # audience


def test_a_federated_token_file_is_read_again_at_every_renewal(
    shapes: Shapes, tmp_path: Path
) -> None:
    graph = shapes.graph
    graph.federate()
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text(federated_token())
    shapes.credential = FederatedTokenFile(token_file, "sources.sp.options.federated_token_file")
    graph.add_file("memo", "Parking rules.")
    graph.share("memo", user("u-alice"), inherits=False)
    shapes.synced()
    assert shapes.found("u-alice", "parking") == {doc("memo")}

    rotated = federated_token()
    token_file.write_text(rotated)  # the platform rotates the token
    graph.revoke_tokens()
    shapes.synced(content=False)
    assert graph.assertions[-1] == rotated

    token_file.write_text(federated_token(lifetime_s=-60))  # expired: refused
    graph.revoke_tokens()
    (report,) = shapes.sync(content=False)
    assert not report.ok and "credentials refused" in (report.error or "")
    token_file.write_text(federated_token(subject="system:serviceaccount:other:x"))
    (report,) = shapes.sync(content=False)
    assert not report.ok
    token_file.unlink()
    (report,) = shapes.sync(content=False)
    assert not report.ok and "federated token cannot be read" in (report.error or "")


def test_credentials_never_show(shapes: Shapes, tmp_path: Path) -> None:
    pem = certificate_pem("clearance-app").decode()
    shapes.graph.add_file("memo", "Parking rules.")
    shapes.graph.share("memo", user("u-alice"), inherits=False)
    sync_source(shapes.app, "sp", env={"GRAPH_CERTIFICATE": pem})
    shapes.graph.certificates.clear()  # the certificate is removed from the app
    shapes.graph.revoke_tokens()
    reports = sync_source(shapes.app, "sp", env={"GRAPH_CERTIFICATE": pem})
    assert not reports[-1].ok
    shown = json.dumps([r.to_dict() for r in reports]) + json.dumps(source_status(shapes.app))
    shown += repr(shapes.credential) + repr(parse_certificate(pem.encode(), "k"))
    key_lines = pem.splitlines()[1:-1]
    assert not any(line in shown for line in key_lines if len(line) > 20)
    assert not any(a in shown for a in shapes.graph.assertions)
    assert "token-" not in shown


@pytest.mark.parametrize(
    ("credentials", "extra", "env", "message"),
    [
        ({}, {}, {}, "exactly one of credentials.client_secret"),
        (
            {"certificate": "C"},
            {"federated_token_file": "/f"},
            {"C": "x"},
            "got credentials.certificate, options.federated_token_file",
        ),
        ({"certificate": "C"}, {}, {"C": "not a pem"}, "credentials.certificate: expected a PEM"),
        ({}, {"certificate_file": "/nonexistent/app.pem"}, {}, "certificate_file: cannot read"),
        ({}, {"certificate_file": ""}, {}, "certificate_file: expected the path"),
        ({}, {"sync_site_groups": "yes"}, {}, "sync_site_groups: expected true or false"),
    ],
)
def test_bad_credentials_are_refused_naming_the_key(
    shapes: Shapes,
    credentials: dict[str, str],
    extra: dict[str, Any],
    env: dict[str, str],
    message: str,
) -> None:
    settings = shapes.app.settings.sources["sp"]
    source = replace(settings, credentials=credentials, options={**settings.options, **extra})
    shapes.app.settings = replace(
        shapes.app.settings, sources={**shapes.app.settings.sources, "sp": source}
    )
    with pytest.raises(ConfigError, match=message) as caught:
        sync_source(shapes.app, "sp", env=env)
    assert "sources.sp" in caught.value.message and "not a pem" not in caught.value.message


def test_a_pem_whose_certificate_is_not_its_keys_is_refused() -> None:
    key_only = certificate_pem("one").split(b"-----BEGIN CERTIFICATE-----")[0]
    other = certificate_pem("two").split(b"-----END PRIVATE KEY-----\n")[1]
    with pytest.raises(ConfigError, match="no certificate in it belongs"):
        parse_certificate(key_only + other, "sources.sp.credentials.certificate")
    with pytest.raises(ConfigError, match="sync_site_groups: needs"):
        parse_options(
            "sp",
            {"tenant_id": "t", "client_id": "c", "drive_id": "d", **{"sync_site_groups": True}},
        )
