"""The Confluence connector on OAuth 2.0 (3LO): the API base found through
``accessible-resources``, the refresh token Atlassian rotates kept across syncs (the old one
is refused once spent), and no token ever shown or stored in the index."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from clearance.app import Clearance
from clearance.sources.confluence import RefreshTokenFile
from clearance.sources.service import source_status, sync_source
from confluence_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    CLOUD_ID,
    FIRST_REFRESH_TOKEN,
    SPACE_KEY,
    FakeConfluence,
)

from .connector_sync import indexed_app

ALICE = "acc-alice"
ENV = {
    "CONFLUENCE_CLIENT_ID": CLIENT_ID,
    "CONFLUENCE_CLIENT_SECRET": CLIENT_SECRET,
    "CONFLUENCE_REFRESH_TOKEN": FIRST_REFRESH_TOKEN,
}


def doc(native_id: str) -> str:
    return f"confluence:{SPACE_KEY}/{native_id}"


class OAuthSite:
    def __init__(self, wiki: FakeConfluence, app: Clearance, root: Path) -> None:
        self.wiki = wiki
        self.app = app
        self.token_file = root / "data" / "wiki.confluence-oauth.json"

    def sync(self, env: dict[str, str] | None = None) -> list[str | None]:
        return [r.error for r in sync_source(self.app, "wiki", env=env or ENV)]

    def found(self, who: str, word: str) -> set[str]:
        hits = self.app.search(who, word).hits
        return {h.document.doc_id for h in hits if word.lower() in h.chunk.text.lower()}


def make_oauth_site(tmp_path: Path, **options: str) -> Iterator[OAuthSite]:
    with FakeConfluence() as wiki:
        config = {
            "kind": "confluence",
            "credentials": {
                "client_id": "CONFLUENCE_CLIENT_ID",
                "client_secret": "CONFLUENCE_CLIENT_SECRET",
                "refresh_token": "CONFLUENCE_REFRESH_TOKEN",
            },
            "options": {
                "base_url": wiki.base_url,
                "space_key": SPACE_KEY,
                "auth_url": wiki.base_url,
                "api_url": wiki.base_url,
                **options,
            },
        }
        with indexed_app(tmp_path, "wiki", config, people=(ALICE,), staff_group=False) as (
            app,
            _,
        ):
            wiki.grant_space("user", ALICE)
            wiki.add_page("menu", "<p>Cafeteria menu: ramen on Fridays.</p>")
            wiki.attach("menu", "att1", "prices.txt", "text/plain", b"Ramen costs four euros.")
            yield OAuthSite(wiki, app, tmp_path)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[OAuthSite]:
    yield from make_oauth_site(tmp_path)


def test_syncs_go_through_the_gateway_and_keep_the_rotated_refresh_token(
    site: OAuthSite,
) -> None:
    assert site.sync() == [None, None]
    assert site.found(ALICE, "ramen") == {doc("menu"), doc("att1")}
    api = [r.path for r in site.wiki.requests if "/wiki/" in r.path]
    assert api and all(p.startswith(f"/ex/confluence/{CLOUD_ID}/wiki/") for p in api)
    assert site.wiki.calls("/oauth/token/accessible-resources") == 1

    site.wiki.edit("menu", "<p>Cafeteria menu: udon on Fridays.</p>")
    assert site.sync() == [None, None]  # the configured token is spent: the kept one is used
    assert site.found(ALICE, "udon") == {doc("menu")}
    assert site.wiki.used_refresh_tokens == [FIRST_REFRESH_TOKEN, "refresh-token-1"]
    assert stat.S_IMODE(site.token_file.stat().st_mode) == 0o600


def test_the_token_endpoint_refuses_a_spent_refresh_token(site: OAuthSite) -> None:
    assert site.sync() == [None, None]
    form = {
        "grant_type": "refresh_token",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "refresh_token": FIRST_REFRESH_TOKEN,
    }
    refused = httpx.post(f"{site.wiki.base_url}/oauth/token", json=form)
    assert refused.status_code == 403 and refused.json()["error"] == "invalid_grant"


def test_reverse_proof_a_connector_that_forgets_the_rotated_token_fails_the_next_sync(
    site: OAuthSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(RefreshTokenFile, "replace", lambda self, token: None)
    assert site.sync() == [None, None]
    errors = site.sync()
    assert all(e is not None and "refused the refresh token" in e for e in errors)
    assert all("CONFLUENCE_REFRESH_TOKEN" in (e or "") for e in errors)


def test_no_token_is_shown_or_stored_in_the_index(site: OAuthSite, tmp_path: Path) -> None:
    assert site.sync() == [None, None]
    site.sync()
    shown = json.dumps(source_status(site.app)) + repr(site.app.settings.sources["wiki"])
    index = b"".join(p.read_bytes() for p in tmp_path.glob("index.db*"))
    secrets = [FIRST_REFRESH_TOKEN, "refresh-token-1", "refresh-token-2", CLIENT_SECRET]
    secrets += sorted(site.wiki.access_tokens)
    for secret in secrets:
        assert secret not in shown
        assert secret.encode() not in index


def test_a_newly_configured_refresh_token_wins_over_the_kept_one(site: OAuthSite) -> None:
    assert site.sync() == [None, None]
    site.wiki.refresh_token = "reauthorised"  # the operator authorised the app again
    assert site.sync({**ENV, "CONFLUENCE_REFRESH_TOKEN": "reauthorised"}) == [None, None]
    assert site.wiki.used_refresh_tokens[-1] == "reauthorised"


def test_a_configured_cloud_id_skips_accessible_resources(tmp_path: Path) -> None:
    for site in make_oauth_site(tmp_path, cloud_id=CLOUD_ID):
        assert site.sync() == [None, None]
        assert site.wiki.calls("accessible-resources") == 0
        assert site.found(ALICE, "ramen") == {doc("menu"), doc("att1")}


def test_a_site_the_grant_does_not_reach_fails_the_sync_naming_the_fix(tmp_path: Path) -> None:
    for site in make_oauth_site(tmp_path):
        site.app.settings.sources["wiki"].options["base_url"] = "https://other.atlassian.net"
        errors = site.sync()
        assert all(e is not None and "cloud_id" in e for e in errors)
