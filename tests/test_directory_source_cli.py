"""``clearance directory-source sync|status`` against the loopback Okta fake: JSON output,
exit codes, state across commands, and credentials never shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clitools import Run
from okta_server import TOKEN, OktaOrg, okta_server

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[directories.corp]
kind = "okta"
interval = "5m"
sla = "1h"
credentials = {{ token = "OKTA_TOKEN" }}

[directories.corp.options]
org_url = "{url}"
"""


@pytest.fixture
def org() -> OktaOrg:
    org = OktaOrg()
    org.add_user("00u1", "ann@example.com")
    org.add_user("00u2", "bob@example.com", "SUSPENDED")
    org.groups = {"00gstaff": ["00u1", "00u2"]}
    return org


@pytest.fixture
def run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    org: OktaOrg,
) -> Iterator[Run]:
    with okta_server(org) as url:
        (tmp_path / "clearance.toml").write_text(CONFIG.format(url=url), encoding="utf-8")
        monkeypatch.setenv("OKTA_TOKEN", TOKEN)
        yield Run(capsys, tmp_path / "clearance.toml")


def test_status_before_any_sync_says_it_fails_closed(run: Run) -> None:
    rc, rows = run.json("directory-source", "status")

    assert rc == 0 and rows[0]["failing_closed"] and "never synced" in rows[0]["reason"]


def test_sync_then_status_speak_json_and_never_show_the_token(run: Run, org: OktaOrg) -> None:
    rc, report = run.json("directory-source", "sync", "corp")
    assert rc == 0 and report["ok"]
    assert (report["users"], report["groups"], report["api_calls"]) == (2, 1, 3)

    rc, rows = run.json("directory-source", "status")
    assert rc == 0 and not rows[0]["failing_closed"] and rows[0]["api_calls"] == 3

    rc, status = run.json("status")
    assert rc == 0 and status["directory"]["users"] == 2
    assert status["directory"]["failing_closed"] is None

    org.fail_path = "/api/v1/groups"
    rc, failed = run.json("directory-source", "sync", "corp")
    assert rc == 1 and not failed["ok"] and "HTTP 500" in failed["error"]
    rc, status = run.json("status")
    assert status["directory"]["users"] == 2  # nothing applied

    shown = json.dumps([report, rows, status, failed]) + "".join(
        run("directory-source", "status")[1:]
    )
    assert TOKEN not in shown


def test_an_unknown_source_is_not_found(run: Run) -> None:
    rc, _out, err = run("directory-source", "sync", "nope")

    assert rc != 0 and "no directory source 'nope'" in err


def test_clearance_status_says_first_when_the_directory_fails_closed(run: Run) -> None:
    """Before the first sync every user gets nothing: `clearance status` says so in words;
    after a successful sync it says nothing of the kind."""
    rc, out, _ = run("status")
    assert rc == 0 and "FAILING CLOSED" in out and "never synced" in out
    rc, _ = run.json("directory-source", "sync", "corp")
    assert rc == 0
    rc, out, _ = run("status")
    assert rc == 0 and "FAILING CLOSED" not in out
