"""The Entra ID directory reader against a loopback fake of Graph (tests/entra_server.py):
paging, nested groups, disabled accounts, aliases, the Graph connector's ``user_id``,
throttling, and a failed page failing the whole read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.directory import registry
from clearance.sources.directory.entra import EntraOptions, EntraReader, entra_reader
from conftest import make_settings
from entra_server import CLIENT_ID, SECRET, TENANT, Tenant, entra_server


@pytest.fixture
def tenant() -> Tenant:
    tenant = Tenant()
    for i in range(12):
        tenant.users.append(
            {
                "id": f"oid-{i}",
                "userPrincipalName": f"user{i}@contoso.com",
                "mail": f"user{i}@contoso.example" if i != 11 else None,
                "accountEnabled": i != 3,
                "onPremisesSamAccountName": f"CONTOSO{i}",
                "otherMails": [f"u{i}@personal.example"],
            }
        )
    tenant.users[5].pop("accountEnabled")  # not reported: inactive
    tenant.groups = {
        "g-all": [("group", "g-eng"), ("user", "oid-0"), ("device", "dev-1")],
        "g-eng": [("user", f"oid-{i}") for i in range(1, 9)],
    }
    return tenant


@pytest.fixture
def url(tenant: Tenant) -> Iterator[str]:
    with entra_server(tenant) as found:
        yield found


def reader(url: str, **kwargs: Any) -> EntraReader:
    options = EntraOptions(
        tenant_id=TENANT,
        client_id=CLIENT_ID,
        graph_url=f"{url}/v1.0",
        login_url=url,
        page_size=5,
        **kwargs,
    )
    return entra_reader("entra", options, Secret(SECRET), sleep=lambda s: None)


def test_users_groups_and_nested_groups_are_read_through_every_page(
    url: str, tenant: Tenant
) -> None:
    read = reader(url).read(None)
    doc = read.doc

    assert len(doc.users) == 12
    assert doc.groups["g-all"].members == {"group:g-eng", "user:oid-0"}  # the device reads nothing
    assert doc.groups["g-eng"].members == {f"user:oid-{i}" for i in range(1, 9)}
    assert any("$skiptoken=5" in r for r in tenant.requests)
    # token, users 3 pages, groups 1, g-all 1, g-eng 2
    assert read.api_calls == len(tenant.requests) == 8


def test_disabled_or_unreported_accounts_are_inactive(url: str) -> None:
    users = reader(url).read(None).doc.users

    assert {u for u, user in users.items() if not user.active} == {"oid-3", "oid-5"}


def test_every_name_is_an_alias(url: str) -> None:
    user = reader(url).read(None).doc.users["oid-0"]

    assert set(user.aliases) == {
        "user0@contoso.com",
        "user0@contoso.example",
        "contoso0",
        "u0@personal.example",
    }


def test_user_id_matches_the_graph_connectors_option(url: str) -> None:
    read = reader(url, user_id="upn").read(None)
    assert "user:user0@contoso.com" in read.doc.groups["g-all"].members
    assert "oid-0" in read.doc.users["user0@contoso.com"].aliases

    by_mail = reader(url, user_id="mail").read(None)
    assert len(by_mail.doc.users) == 11
    assert by_mail.warnings == ("user oid-11 has no mail: left out (user_id = 'mail')",)


def test_a_429_waits_for_retry_after(url: str, tenant: Tenant) -> None:
    tenant.throttle = 2
    waits: list[float] = []
    options = EntraOptions(TENANT, CLIENT_ID, graph_url=f"{url}/v1.0", login_url=url)

    read = entra_reader("entra", options, Secret(SECRET), sleep=waits.append).read(None)

    assert len(read.doc.users) == 12 and waits == [3.0, 3.0]


def test_a_failed_page_fails_the_whole_read(url: str, tenant: Tenant) -> None:
    tenant.fail_path = "/v1.0/groups/g-eng/members"

    with pytest.raises(SourceError, match="HTTP 503"):
        reader(url).read(None)


def test_a_refused_secret_fails_the_read(url: str) -> None:
    options = EntraOptions(TENANT, CLIENT_ID, graph_url=f"{url}/v1.0", login_url=url)
    with pytest.raises(SourceError):
        entra_reader("entra", options, Secret("wrong"), sleep=lambda s: None).read(None)


def settings_for(tmp_path: Path, options: dict[str, Any]) -> Any:
    return make_settings(
        tmp_path,
        {
            "directories": {
                "corp": {
                    "kind": "entra",
                    "credentials": {"client_secret": "ENTRA_SECRET"},
                    "options": options,
                }
            }
        },
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"client_id": "c"}, "tenant_id"),
        ({"tenant_id": "t", "client_id": "c", "user_id": "sam"}, "user_id: expected one of"),
        ({"tenant_id": "t", "client_id": "c", "page_size": 5000}, "page_size: expected 1 to 999"),
        ({"tenant_id": "t", "client_id": "c", "drive_id": "d"}, "drive_id: unknown option"),
    ],
)
def test_bad_options_name_the_key(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    settings = settings_for(tmp_path, options)
    with pytest.raises(ConfigError, match=f"directories.corp.options.{message}"):
        registry.build_directory_reader(
            settings, settings.directories["corp"], env={"ENTRA_SECRET": SECRET}
        )


def test_the_entra_kind_is_built_from_settings(tmp_path: Path, url: str) -> None:
    settings = settings_for(
        tmp_path,
        {"tenant_id": TENANT, "client_id": CLIENT_ID, "graph_url": f"{url}/v1.0", "login_url": url},
    )
    built = registry.build_directory_reader(
        settings, settings.directories["corp"], env={"ENTRA_SECRET": SECRET}
    )
    try:
        assert len(built.read(None).doc.users) == 12
    finally:
        built.close()


def delta_reader(url: str) -> EntraReader:
    options = EntraOptions(
        TENANT, CLIENT_ID, graph_url=f"{url}/v1.0", login_url=url, page_size=5, delta=True
    )
    return entra_reader("entra", options, Secret(SECRET), sleep=lambda s: None)


def test_delta_reads_after_the_first_fetch_only_changes(url: str, tenant: Tenant) -> None:
    entra = delta_reader(url)
    first = entra.read(None)
    assert len(first.doc.users) == 12
    assert first.doc.groups["g-all"].members == {"group:g-eng", "user:oid-0"}

    tenant.users[0]["accountEnabled"] = False  # disabled
    del tenant.users[11]  # deleted
    tenant.groups["g-eng"].remove(("user", "oid-1"))
    tenant.groups["g-new"] = [("user", "oid-2")]
    del tenant.groups["g-all"]
    tenant.requests.clear()

    second = entra.read(first.cursor)

    assert all("$deltatoken=" in r for r in tenant.requests)
    assert second.api_calls == 2  # one page of changes each
    assert not second.doc.users["oid-0"].active
    assert "oid-11" not in second.doc.users and len(second.doc.users) == 11
    assert second.doc.groups["g-eng"].members == {f"user:oid-{i}" for i in range(2, 9)}
    assert second.doc.groups["g-new"].members == {"user:oid-2"}
    assert "g-all" not in second.doc.groups


def test_a_reader_without_the_previous_snapshot_starts_a_fresh_round(
    url: str, tenant: Tenant
) -> None:
    cursor = delta_reader(url).read(None).cursor
    tenant.requests.clear()

    read = delta_reader(url).read(cursor)  # another process: only the cursor survived

    assert len(read.doc.users) == 12
    assert not any("$deltatoken=" in r for r in tenant.requests)


def test_an_expired_delta_link_fails_the_read_and_the_next_starts_afresh(
    url: str, tenant: Tenant
) -> None:
    entra = delta_reader(url)
    first = entra.read(None)
    tenant.tokens.clear()  # every delta token expired

    with pytest.raises(SourceError, match="HTTP 410"):
        entra.read(first.cursor)
    assert len(entra.read(first.cursor).doc.users) == 12
