"""The Okta directory reader against a loopback fake of Okta's API (tests/okta_server.py):
paging, statuses, aliases, throttling, and a failed page failing the whole read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.directory import okta as okta_module
from clearance.sources.directory import registry
from clearance.sources.directory.okta import ACTIVE_STATUSES, OktaReader
from conftest import make_settings
from okta_server import TOKEN, OktaOrg, okta_server


@pytest.fixture
def org() -> OktaOrg:
    org = OktaOrg()
    statuses = [
        "ACTIVE",
        "PASSWORD_EXPIRED",
        "RECOVERY",
        "LOCKED_OUT",
        "SUSPENDED",
        "STAGED",
        "PROVISIONED",
        "DEPROVISIONED",
        "SOMETHING_NEW",
    ]
    for i, status in enumerate(statuses):
        org.add_user(f"00u{i}", f"user{i}@example.com", status, email=f"u{i}@mail.example.com")
    for i in range(len(statuses), 25):
        org.add_user(f"00u{i}", f"user{i}@example.com")
    org.groups = {"00gstaff": [f"00u{i}" for i in range(25)], "00gfin": ["00u0", "00u4"]}
    return org


@pytest.fixture
def url(org: OktaOrg) -> Iterator[str]:
    with okta_server(org) as found:
        yield found


def reader(url: str, **kwargs: Any) -> OktaReader:
    return OktaReader("okta", url, Secret(TOKEN), page_size=10, sleep=lambda s: None, **kwargs)


def test_users_and_groups_are_read_through_every_page(url: str, org: OktaOrg) -> None:
    seen: list[tuple[str, int]] = []
    read = reader(url).read(None, lambda what, n: seen.append((what, n)))

    assert len(read.doc.users) == 24  # the deprovisioned user is not listed
    # a deprovisioned member is not a listed user: it stays its Okta id, matching nobody
    assert read.doc.groups["00gstaff"].members == frozenset(
        f"user:user{i}@example.com" if i != 7 else "user:00u7" for i in range(25)
    )
    assert read.doc.groups["00gfin"].members == {"user:user0@example.com", "user:user4@example.com"}
    # users 3 pages, groups 1, staff 3 pages, fin 1
    assert read.api_calls == len(org.requests) == 8
    assert any("after=10" in r for r in org.requests)
    assert ("users", 24) in seen and ("groups", 2) in seen


def test_only_active_password_expired_and_recovery_grant_access(url: str) -> None:
    users = reader(url).read(None).doc.users

    active = {
        u
        for u in ("user0", "user1", "user2", "user3", "user4", "user5", "user6", "user8")
        if users[f"{u}@example.com"].active
    }
    assert active == {"user0", "user1", "user2"}


def _active_after_deactivation_began(url: str, org: OktaOrg) -> dict[str, bool]:
    """user0 (ACTIVE) is being deactivated, user4 (SUSPENDED) too, and user5 (STAGED) is
    being activated: each keeps its status while Okta carries the change out."""
    org.deactivate("00u0")
    org.deactivate("00u4")
    (staged,) = [u for u in org.users if u["id"] == "00u5"]
    staged["transitioningToStatus"] = "ACTIVE"
    users = reader(url).read(None).doc.users
    return {name: users[f"{name}@example.com"].active for name in ("user0", "user4", "user5")}


def test_a_user_whose_deactivation_is_under_way_is_inactive(url: str, org: OktaOrg) -> None:
    """Okta deactivates asynchronously: the leaver still reads ``status: ACTIVE``, with
    ``transitioningToStatus: DEPROVISIONED``, until every app has deprovisioned it."""
    assert _active_after_deactivation_began(url, org) == {
        "user0": False,
        "user4": False,
        "user5": False,  # an activation under way grants nothing before it completes
    }
    org.deactivate("00u0", finished=True)
    assert "user0@example.com" not in reader(url).read(None).doc.users


def test_reverse_proof_a_reader_that_reads_the_status_alone_is_caught(
    url: str, org: OktaOrg, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(okta_module, "active", lambda item: item.get("status") in ACTIVE_STATUSES)
    assert _active_after_deactivation_began(url, org)["user0"]  # the leaver keeps access


def test_login_id_and_email_are_aliases(url: str) -> None:
    user = reader(url).read(None).doc.users["user0@example.com"]
    assert set(user.aliases) == {"00u0", "u0@mail.example.com"}

    by_id = reader(url, user_id="id").read(None).doc
    assert set(by_id.users["00u0"].aliases) == {"user0@example.com", "u0@mail.example.com"}
    assert "user:00u0" in by_id.groups["00gfin"].members


def test_a_429_waits_for_x_rate_limit_reset(url: str, org: OktaOrg) -> None:
    org.throttle = 2
    org.reset_in = 7
    waits: list[float] = []
    okta = OktaReader("okta", url, Secret(TOKEN), sleep=waits.append)

    read = okta.read(None)

    assert len(read.doc.users) == 24
    assert len(waits) == 2 and all(6 <= w <= 8 for w in waits)


def _token_reaches_another_host(url: str, org: OktaOrg) -> tuple[bool, Exception | None]:
    """Whether a read whose next link points at another server (a second fake org, on
    another port) sends that server the token; and what the read raised."""
    elsewhere = OktaOrg()
    with okta_server(elsewhere) as other:
        org.foreign_next = f"{other}/api/v1/users?after=10&limit=10"
        try:
            reader(url).read(None)
        except SourceError as exc:
            return bool(elsewhere.requests), exc
    return bool(elsewhere.requests), None


def test_a_next_link_off_the_org_is_not_followed_with_the_token(url: str, org: OktaOrg) -> None:
    leaked, error = _token_reaches_another_host(url, org)
    assert not leaked
    assert error is not None and "outside org_url" in str(error)


def test_reverse_proof_a_reader_that_follows_any_link_is_caught(
    url: str, org: OktaOrg, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OktaReader, "_ours", lambda self, link: True)
    leaked, _ = _token_reaches_another_host(url, org)
    assert leaked


def test_a_failed_page_fails_the_whole_read(url: str, org: OktaOrg) -> None:
    org.fail_path = "/api/v1/groups/00gfin/users"

    with pytest.raises(SourceError, match="HTTP 500"):
        OktaReader("okta", url, Secret(TOKEN), sleep=lambda s: None).read(None)


def test_a_refused_token_fails_the_read(url: str) -> None:
    with pytest.raises(SourceError, match="HTTP 401"):
        OktaReader("okta", url, Secret("wrong"), sleep=lambda s: None).read(None)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "org_url: required"),
        ({"org_url": "http://okta.example.com"}, "org_url: expected an https"),
        ({"org_url": "https://o.okta.com", "user_id": "mail"}, "user_id: expected"),
        ({"org_url": "https://o.okta.com", "page_size": 500}, "page_size: expected 1 to 200"),
        ({"org_url": "https://o.okta.com", "colour": 1}, "colour: unknown option"),
    ],
)
def test_bad_options_name_the_key(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    settings = make_settings(
        tmp_path,
        {
            "directories": {
                "corp": {"kind": "okta", "credentials": {"token": "OKTA_TOKEN"}, "options": options}
            }
        },
    )
    with pytest.raises(ConfigError, match=f"directories.corp.options.{message}"):
        registry.build_directory_reader(
            settings, settings.directories["corp"], env={"OKTA_TOKEN": TOKEN}
        )


def test_the_okta_kind_is_built_from_settings(tmp_path: Path, url: str) -> None:
    settings = make_settings(
        tmp_path,
        {
            "directories": {
                "corp": {
                    "kind": "okta",
                    "credentials": {"token": "OKTA_TOKEN"},
                    "options": {"org_url": url},
                }
            }
        },
    )
    built = registry.build_directory_reader(
        settings, settings.directories["corp"], env={"OKTA_TOKEN": TOKEN}
    )
    try:
        assert len(built.read(None).doc.users) == 24
    finally:
        built.close()
