"""The Google Workspace directory reader against a loopback fake of the Admin SDK Directory
API (tests/google_directory_server.py): paging, nested groups, suspended and archived
accounts, aliases, Drive's id conventions, throttling, and a failed page failing the read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.directory import registry
from clearance.sources.directory.google import GoogleOptions, GoogleReader, google_reader
from clearance.sources.gdrive import parse_service_account
from conftest import make_settings
from google_directory_server import ADMIN, KEY_JSON, Workspace, workspace_server


@pytest.fixture
def workspace() -> Workspace:
    ws = Workspace()
    for i in range(7):
        ws.users.append(
            {
                "id": f"10{i}",
                "primaryEmail": f"User{i}@example.com",
                "aliases": [f"u{i}@example.com"],
                "suspended": i == 2,
                "archived": i == 3,
            }
        )
    ws.groups = {
        "all@example.com": [
            {"type": "GROUP", "email": "eng@example.com", "id": "g1"},
            {"type": "USER", "email": "user0@example.com", "status": "ACTIVE", "id": "100"},
            {"type": "USER", "email": "user6@example.com", "status": "SUSPENDED", "id": "106"},
        ],
        "eng@example.com": [
            {"type": "USER", "email": f"user{i}@example.com", "status": "ACTIVE"}
            for i in range(1, 5)
        ],
        "everyone@example.com": [{"type": "CUSTOMER", "id": "C01"}],
    }
    return ws


@pytest.fixture
def url(workspace: Workspace) -> Iterator[str]:
    with workspace_server(workspace) as found:
        yield found


def reader(url: str, sleep: Any = lambda s: None) -> GoogleReader:
    options = GoogleOptions(
        subject=ADMIN,
        directory_url=f"{url}/admin/directory/v1",
        token_url=f"{url}/token",
        page_size=3,
    )
    account = parse_service_account(Secret(KEY_JSON), "key")
    return google_reader("google", options, account, sleep=sleep)


def test_users_groups_and_nested_groups_follow_drives_ids(url: str, workspace: Workspace) -> None:
    read = reader(url).read(None)
    doc = read.doc

    assert sorted(doc.users) == [f"user{i}@example.com" for i in range(7)]
    assert doc.groups["all@example.com"].members == {
        "group:eng@example.com",
        "user:user0@example.com",
    }
    assert doc.groups["eng@example.com"].members == {
        f"user:user{i}@example.com" for i in range(1, 5)
    }
    assert doc.groups["everyone@example.com"].members == {
        f"user:user{i}@example.com" for i in range(7)
    }
    assert any("pageToken=3" in r for r in workspace.requests)
    # token, users 3 pages, groups 1, members 1 + 1 + 1
    assert read.api_calls == len(workspace.requests) == 8


def test_suspended_and_archived_users_are_inactive(url: str) -> None:
    users = reader(url).read(None).doc.users

    assert {u for u, user in users.items() if not user.active} == {
        "user2@example.com",
        "user3@example.com",
    }


def test_aliases_and_the_numeric_id_are_recorded(url: str) -> None:
    user = reader(url).read(None).doc.users["user0@example.com"]

    assert set(user.aliases) == {"100", "u0@example.com"}


def test_a_403_rate_limit_is_retried(url: str, workspace: Workspace) -> None:
    workspace.throttle = 2
    waits: list[float] = []

    read = reader(url, sleep=waits.append).read(None)

    assert len(read.doc.users) == 7 and len(waits) == 2


def test_a_failed_page_fails_the_whole_read(url: str, workspace: Workspace) -> None:
    workspace.fail_path = "/admin/directory/v1/groups/eng@example.com/members"

    with pytest.raises(SourceError, match="HTTP 503"):
        reader(url).read(None)


def settings_for(tmp_path: Path, options: dict[str, Any]) -> Any:
    table = {"kind": "google", "credentials": {"service_account": "GOOGLE_KEY"}, "options": options}
    return make_settings(tmp_path, {"directories": {"corp": table}})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "subject"),
        ({"subject": "admin"}, "subject: expected the email address"),
        ({"subject": ADMIN, "page_size": 501}, "page_size: expected 1 to 500"),
        ({"subject": ADMIN, "drive_id": "x"}, "drive_id: unknown option"),
    ],
)
def test_bad_options_name_the_key(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    settings = settings_for(tmp_path, options)
    with pytest.raises(ConfigError, match=f"directories.corp.options.{message}"):
        registry.build_directory_reader(
            settings, settings.directories["corp"], env={"GOOGLE_KEY": KEY_JSON}
        )


def test_the_google_kind_is_built_from_settings(tmp_path: Path, url: str) -> None:
    settings = settings_for(
        tmp_path,
        {
            "subject": ADMIN,
            "directory_url": f"{url}/admin/directory/v1",
            "token_url": f"{url}/token",
        },
    )
    built = registry.build_directory_reader(
        settings, settings.directories["corp"], env={"GOOGLE_KEY": KEY_JSON}
    )
    try:
        assert len(built.read(None).doc.users) == 7
    finally:
        built.close()
