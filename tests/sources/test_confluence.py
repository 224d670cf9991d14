"""The Confluence connector against a fake Confluence Cloud on loopback, through the sync
engine into a real index: cursor and offset paging, space permissions, page restrictions
inherited down the page tree, attachments, group members, throttling and interrupted syncs.

Each invariant is shown with a reverse proof: a deliberately broken connector that the same
assertion catches."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.errors import ConfigError
from clearance.secrets import Secret
from clearance.sources.base import Access, ContentPage
from clearance.sources.confluence import ConfluenceConnector, confluence_connector, parse_options
from clearance.sources.http import SourceClient
from clearance.sources.service import source_status, sync_source
from clearance.sources.sync import SourceSync, SyncReport
from confluence_server import EMAIL, SPACE_KEY, TOKEN, FakeConfluence
from loopback_server import RecordedRequest, Reply, ScriptedServer, json_reply

from .conftest import Clock
from .connector_conformance import AllOrNothing, AnyoneWithTheLink, GroupRevocation
from .connector_sync import SyncedSource, indexed_app

ALICE, BOB, CAROL = "acc-alice", "acc-bob", "acc-carol"


@dataclass
class Site(SyncedSource):
    source = "wiki"
    wiki: FakeConfluence
    app: Clearance
    clock: Clock
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)

    def connector(self) -> ConfluenceConnector:
        options = parse_options("wiki", self.app.settings.sources["wiki"].options)
        return confluence_connector("wiki", options, Secret(TOKEN), sleep=self.waits.append)


def doc(native_id: str) -> str:
    return f"confluence:{SPACE_KEY}/{native_id}"


def make_site(tmp_path: Path, *, sensitivity: str = "CONFIDENTIAL") -> Iterator[Site]:
    with FakeConfluence() as wiki:
        config = {
            "kind": "confluence",
            "credentials": {"api_token": "CONFLUENCE_API_TOKEN"},
            "options": {"base_url": wiki.base_url, "email": EMAIL, "space_key": SPACE_KEY},
        }
        people = (ALICE, BOB, CAROL)
        with indexed_app(
            tmp_path, "wiki", config, people=people, staff_group=False, sensitivity=sensitivity
        ) as (app, clock):
            wiki.groups["g-eng"] = [ALICE, BOB]
            yield Site(wiki, app, clock)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    yield from make_site(tmp_path)


# --------------------------------------------------------------------------- the first sync


def test_a_space_is_read_page_by_page_through_throttling_and_errors(site: Site) -> None:
    wiki = site.wiki
    wiki.grant_space("group", "g-eng")
    wiki.add_page("home", "<p>Welcome to engineering.</p>")
    for n in range(4):
        wiki.add_page(f"p{n}", f"<h1>Runbook {n}</h1><p>Restart the ledger service.</p>", "home")
    wiki.attach("p1", "att9", "oncall.txt", "text/plain", b"Oncall rota: ledger pager.")
    wiki.fault("/pages", 429, retry_after="7")
    wiki.fault("/restriction/", 503, after=2)
    wiki.fault("/membersByGroupId", 502)

    site.synced()

    expected = {doc(f"p{n}") for n in range(4)} | {doc("att9")}
    assert site.found(ALICE, "ledger") == expected
    assert site.found(BOB, "ledger") == expected
    assert site.found(CAROL, "ledger") == set()
    assert 7.0 in site.waits  # Retry-After honoured
    assert wiki.calls("/spaces/98304/pages") > 3  # several cursor pages (page size 2)
    document = site.app.store.get_document(doc("p2"))
    assert document is not None and document.uri.endswith("/wiki/spaces/ENG/pages/p2")
    assert not wiki.responder_errors
    shown = json.dumps([r.to_dict() for r in site.reports]) + json.dumps(source_status(site.app))
    assert TOKEN not in shown


def test_refused_credentials_fail_the_sync_without_showing_the_token(site: Site) -> None:
    site.wiki.grant_space("group", "g-eng")
    site.wiki.add_page("home", "<p>Welcome.</p>")
    site.wiki.token = "rotated"
    (report,) = site.sync(content=False)
    assert report.error is not None and "credentials refused" in report.error
    assert TOKEN not in json.dumps(report.to_dict()) + json.dumps(source_status(site.app))


def token_reaches_another_host(site: Site, *, next_link: bool) -> tuple[bool, SyncReport]:
    """Whether the token reaches another server — through a next link pointing there
    (``next_link``) or an attachment download redirected there — and the sync's report."""
    seen: list[str] = []

    def other_host(request: RecordedRequest) -> Reply:
        seen.append(request.headers.get("authorization", ""))
        if next_link:
            return json_reply({"results": [], "_links": {}})
        return Reply(body=b"Oncall rota: ledger pager.", content_type="text/plain")

    site.wiki.grant_space("group", "g-eng")
    site.wiki.add_page("home", "<p>Welcome.</p>")
    site.wiki.attach("home", "att9", "oncall.txt", "text/plain", b"unused")
    with ScriptedServer(RecordedRequest, other_host) as other:
        if next_link:
            site.wiki.foreign_next_link = other.url_for("/wiki/api/v2/spaces/98304/pages?c=1")
        else:
            site.wiki.media_url = other.url_for("")
        (report, _) = site.sync()
    return any(seen), report


def test_a_next_link_outside_base_url_is_not_followed_with_the_token(site: Site) -> None:
    leaked, report = token_reaches_another_host(site, next_link=True)
    assert not leaked
    assert report.error is not None and "outside base_url" in report.error


def test_reverse_proof_a_connector_that_follows_any_link_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_ours", lambda self, link: link)
    leaked, _ = token_reaches_another_host(site, next_link=True)
    assert leaked


def test_a_download_redirected_to_the_media_host_goes_there_without_the_token(
    site: Site,
) -> None:
    leaked, report = token_reaches_another_host(site, next_link=False)
    assert report.ok and not leaked
    assert site.found(ALICE, "pager") == {doc("att9")}


def test_reverse_proof_a_download_that_carries_the_token_along_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    def carried(self: ConfluenceConnector, raw: Any, doc_id: str, page_id: str) -> bytes:
        url = f"{self._base}/wiki{raw['downloadLink']}"
        response = self.client._client.get(url)  # the redirect, followed by hand
        return self.client.request("GET", response.headers["Location"]).content

    monkeypatch.setattr(ConfluenceConnector, "_download", carried)
    leaked, _ = token_reaches_another_host(site, next_link=False)
    assert leaked


def test_the_confluence_kind_is_built_from_configuration(site: Site) -> None:
    site.wiki.grant_space("user", ALICE)
    site.wiki.add_page("menu", "<p>Cafeteria menu.</p>")
    reports = sync_source(site.app, "wiki", env={"CONFLUENCE_API_TOKEN": TOKEN})
    assert all(r.ok for r in reports)
    assert site.found(ALICE, "cafeteria") == {doc("menu")}
    with pytest.raises(ConfigError, match="CONFLUENCE_API_TOKEN"):
        sync_source(site.app, "wiki", env={})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"email": "e", "space_key": "K"}, "base_url: required"),
        ({"base_url": "ftp://x", "email": "e", "space_key": "K"}, "http"),
        ({"base_url": "https://x.atlassian.net/wiki", "email": "e", "space_key": "K"}, "/wiki"),
        ({"base_url": "https://x", "space_key": "K"}, "email: required"),
        ({"base_url": "https://x", "email": "e", "space_key": "K", "spaces": []}, "unknown"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_options("wiki", options)
    assert "sources.wiki.options" in caught.value.message


# --------------------------------------------------------------------------- deletions


def deleted_page_is_still_found(site: Site) -> bool:
    site.wiki.grant_space("user", ALICE)
    site.wiki.add_page("menu", "<p>Cafeteria menu: ramen on Fridays.</p>")
    site.wiki.add_page("travel", "<p>Book trains to Osaka.</p>")
    site.synced()
    assert site.found(ALICE, "ramen") == {doc("menu")}
    site.wiki.delete("menu")
    site.synced(permissions=False)  # the content listing alone must take it away
    return bool(site.found(ALICE, "ramen"))


def test_a_deleted_page_disappears_from_search(site: Site) -> None:
    assert not deleted_page_is_still_found(site)
    assert site.app.store.get_document(doc("menu")) is None
    assert site.found(ALICE, "osaka") == {doc("travel")}


def test_reverse_proof_a_listing_that_is_not_a_snapshot_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = ConfluenceConnector.content_changes

    def partial(self: ConfluenceConnector, cursor: str | None) -> Iterator[ContentPage]:
        for page in listing(self, cursor):
            yield ContentPage(page.items, page.cursor, snapshot=False, last=page.last)

    monkeypatch.setattr(ConfluenceConnector, "content_changes", partial)
    assert deleted_page_is_still_found(site)


# --------------------------------------------------------------------------- permissions


def child_stays_visible(site: Site) -> bool:
    wiki = site.wiki
    wiki.grant_space("group", "g-eng")
    wiki.add_page("board", "<p>Board area.</p>")
    wiki.add_page("plans", "<p>Plans index.</p>", "board")
    wiki.add_page("merger", "<p>Merger plan draft.</p>", "plans")
    site.synced()
    assert site.found(ALICE, "merger") == {doc("merger")}
    wiki.restrict("board", users=(BOB,))  # on the grandparent; the page itself is untouched
    site.synced(content=False)  # the permission sync alone must take the access away
    assert site.found(BOB, "merger") == {doc("merger")}
    return bool(site.found(ALICE, "merger"))


def test_a_page_restriction_added_to_a_parent_hides_its_children(site: Site) -> None:
    assert not child_stays_visible(site)


def test_reverse_proof_a_connector_that_ignores_ancestors_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_chain", lambda self, page_id: [page_id])
    assert child_stays_visible(site)


def test_each_restricted_level_narrows_and_outsiders_of_the_space_stay_out(site: Site) -> None:
    wiki = site.wiki
    wiki.grant_space("group", "g-eng")  # alice and bob; not carol
    wiki.add_page("top", "<p>Top.</p>")
    wiki.add_page("mid", "<p>Mid.</p>", "top")
    wiki.add_page("leaf", "<p>Salary bands.</p>", "mid")
    wiki.add_page("open", "<p>Open.</p>")
    wiki.attach("leaf", "att1", "bands.csv", "text/csv", b"band,salary\nL1,100\n")
    wiki.restrict("top", groups=("g-eng",))
    wiki.restrict("mid", users=(BOB, CAROL))  # carol is named but cannot view the space
    site.synced()
    acls = {d.doc_id: d.acl for d in site.app.store.list_documents()}
    assert acls[doc("leaf")] == {f"user:{BOB}"}
    assert acls[doc("att1")] == {f"user:{BOB}"}  # an attachment follows its page
    assert acls[doc("top")] == {f"user:{ALICE}", f"user:{BOB}"}  # a restriction: users
    assert acls[doc("open")] == {"group:g-eng"}  # groups kept whole where nothing narrows


def restriction_between_phases_is_missed(site: Site) -> bool:
    """Whether a restriction added after the content sync of a run, and before its
    permission sync, is missed by that permission sync."""
    site.wiki.grant_space("group", "g-eng")
    site.wiki.add_page("plans", "<p>Plans index.</p>")
    site.wiki.add_page("merger", "<p>Merger plan draft.</p>", "plans")
    connector = site.connector()
    try:
        engine = SourceSync(site.app, site.app.settings.sources["wiki"], connector)
        assert engine.content().ok
        site.wiki.restrict("plans", users=(BOB,))
        assert engine.permissions().ok
    finally:
        connector.close()
    assert site.found(BOB, "merger") == {doc("merger")}
    return bool(site.found(ALICE, "merger"))


def test_a_permission_sync_rereads_what_the_content_sync_of_its_run_read(site: Site) -> None:
    assert not restriction_between_phases_is_missed(site)


def test_reverse_proof_a_connector_that_reuses_the_content_phase_reads_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_forget", lambda self: None)
    assert restriction_between_phases_is_missed(site)


def found_past_200(site: Site) -> tuple[set[str], set[str]]:
    """What alice (the 231st user of a restriction) and bob (the 451st member of a group)
    find of a page restricted to both."""
    wiki = site.wiki
    wiki.page_size = 50
    wiki.groups["g-all"] = [f"acc-{n}" for n in range(450)] + [BOB]
    wiki.grant_space("group", "g-all")
    wiki.grant_space("user", ALICE)
    wiki.add_page("memo", "<p>Parking rules.</p>")
    wiki.restrict("memo", users=(*(f"acc-{n}" for n in range(230)), ALICE), groups=("g-all",))
    site.synced()
    return site.found(ALICE, "parking"), site.found(BOB, "parking")


def test_restrictions_and_groups_are_read_past_200_entries(site: Site) -> None:
    assert found_past_200(site) == ({doc("memo")}, {doc("memo")})
    restrictions, members = (site.wiki.calls(p) for p in ("/restriction/", "/membersByGroupId"))
    site.synced(content=False)  # 231 restricted users: 2 requests; 451 members: 3
    assert site.wiki.calls("/restriction/") - restrictions == 2
    assert site.wiki.calls("/membersByGroupId") - members == 3


def test_reverse_proof_a_connector_that_reads_only_the_first_page_is_caught(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = SourceClient.pages
    monkeypatch.setattr(
        SourceClient,
        "pages",
        lambda self, url, following, **kw: itertools.islice(pages(self, url, following, **kw), 1),
    )
    assert found_past_200(site) == (set(), set())


def test_an_anonymous_space_still_admits_who_a_restriction_names(site: Site) -> None:
    site.wiki.grant_space("access_class", "anonymous-users")
    site.wiki.add_page("deck", "<p>Board deck: acquisition targets.</p>")
    site.wiki.restrict("deck", users=(BOB,))
    site.synced()
    assert site.found(BOB, "acquisition") == {doc("deck")}
    assert site.found(ALICE, "acquisition") == set()


def test_an_unknown_principal_type_makes_the_page_visible_to_nobody_with_the_reason(
    site: Site,
) -> None:
    site.wiki.grant_space("group", "g-eng")
    site.wiki.add_page("open", "<p>Open roadmap.</p>")
    site.wiki.add_page("odd", "<p>Odd roadmap.</p>")
    site.wiki.restricted_users("odd")[:] = [{"type": "robot", "accountId": "r2"}]
    site.synced()
    assert site.found(ALICE, "roadmap") == {doc("open")}
    (status,) = source_status(site.app)
    (example,) = status["visible_to_nobody_examples"]
    assert example["doc_id"] == doc("odd") and "'robot'" in example["reason"]

    site.wiki.grant_space("access_class", "all-licensed-users")  # not statable as principals
    site.synced(content=False)
    assert site.found(ALICE, "roadmap") == set()


# --------------------------------------------------------------------------- all or nothing


class TestConfluenceScenarios(GroupRevocation, AnyoneWithTheLink, AllOrNothing):
    """The scenarios every connector runs (tests/sources/connector_conformance.py), on a
    Confluence space: space permissions, page restrictions and groups. A page's place in
    the tree is covered by test_a_page_restriction_added_to_a_parent_hides_its_children."""

    CONNECTOR = ConfluenceConnector
    MEMBERS = "_read_members"
    ALICE, BOB = ALICE, BOB

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Site]:
        yield from make_site(tmp_path)

    def doc(self, name: str) -> str:
        return doc(name)

    def share_with_a_group_of_alice_and_bob(self, src: Site, name: str, text: str) -> None:
        src.wiki.grant_space("group", "g-eng")
        src.wiki.add_page(name, f"<p>{text}</p>")
        src.wiki.restrict(name, groups=("g-eng",))

    def remove_alice_from_the_group(self, src: Site) -> None:
        src.wiki.groups["g-eng"].remove(ALICE)

    def open_to_anyone_with_the_link(self, src: Site, name: str, text: str) -> None:
        src.wiki.grant_space("access_class", "anonymous-users")
        src.wiki.add_page(name, f"<p>{text}</p>")

    def widen_anyone_to_everyone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        access = ConfluenceConnector._access

        def widened(self: ConfluenceConnector, page_id: str) -> Access:
            found = access(self, page_id)
            return Access(found.principals | {"everyone"}) if found.anyone_with_link else found

        monkeypatch.setattr(ConfluenceConnector, "_access", widened)

    def readable_by(self, src: Site, names: Sequence[str], who: str) -> None:
        for name in names:
            if name not in src.wiki.pages:
                src.wiki.grant_space("group", "g-eng")
                src.wiki.add_page(name, f"<p>Quarterly memo {name}.</p>")
            src.wiki.restrict(name, users=(who,))

    def stop_answering_permissions_after(self, src: Site, answered: int) -> None:
        src.wiki.fault("/restriction/", 503, times=None, after=answered)

    def shrug_off_unreadable_permissions(self, monkeypatch: pytest.MonkeyPatch) -> None:
        super().shrug_off_unreadable_permissions(monkeypatch)
        monkeypatch.setattr(ConfluenceConnector, "_restriction_or_none", lambda self, cid: None)


def test_a_permission_change_reads_no_content(site: Site) -> None:
    site.wiki.grant_space("group", "g-eng")
    site.wiki.add_page("memo", "<p>Parking rules.</p>")
    site.synced()
    assert any("body-format=storage" in r.path for r in site.wiki.requests)
    before = len(site.wiki.requests)
    site.wiki.restrict("memo", users=(BOB,))
    site.synced()
    assert not any("body-format" in r.path for r in site.wiki.requests[before:])
    assert site.found(BOB, "parking") == {doc("memo")}
    assert site.found(ALICE, "parking") == set()
