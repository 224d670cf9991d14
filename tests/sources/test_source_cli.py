"""``clearance source list|sync|status`` and ``clearance sync --all``, in-process, on a
real project folder. Credentials are environment variable names and never appear in output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import Run, cli

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[corpora.docs]
revocation_sla = "1h"

[sources.share]
kind = "filesystem"
corpus = "docs"
permission_interval = "5m"
credentials = {{ token = "SHARE_TOKEN" }}

[sources.share.options]
path = "{share}"
"""


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    share = tmp_path / "share"
    share.mkdir()
    (share / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    (share / "plan.md").write_text("Reorganisation plan.", encoding="utf-8")
    (tmp_path / "clearance.toml").write_text(CONFIG.format(share=share), encoding="utf-8")
    monkeypatch.setenv("SHARE_TOKEN", "tok-VERY-secret-value")
    return Run(capsys, tmp_path / "clearance.toml")


def test_list_sync_and_status_speak_json_and_never_show_credentials(run: Run) -> None:
    rc, listed = run.json("source", "list")
    assert rc == 0 and listed[0]["source"] == "share" and listed[0]["kind"] == "filesystem"

    rc, synced = run.json("source", "sync", "share")
    assert rc == 0 and synced["ok"]
    assert [s["kind"] for s in synced["syncs"]] == ["content", "permissions"]
    assert synced["syncs"][0]["counts"]["added"] == 1

    rc, status = run.json("source", "status")
    assert rc == 0 and status[0]["state"] == "ok" and status[0]["documents"] == 1

    rc, again = run.json("sync", "--all")
    assert rc == 0 and again["syncs"][0]["counts"]["unchanged"] == 1

    everything = "".join(
        run(*args)[1] + run(*args)[2]
        for args in (
            ("source", "list"),
            ("source", "status"),
            ("source", "list", "--json"),
            ("source", "status", "--json"),
            ("source", "sync", "share"),
        )
    )
    assert "tok-VERY-secret-value" not in everything
    assert "SHARE_TOKEN" not in everything


def test_a_manual_ingest_of_a_synced_file_exits_2_naming_the_source(
    run: Run, tmp_path: Path
) -> None:
    assert run("source", "sync", "share")[0] == 0
    rc, out, err = run("ingest", str(tmp_path / "share"), "--corpus", "docs")
    assert rc == 2
    assert "belongs to source 'share'" in out + err


def test_a_failing_source_exits_1_and_status_says_why(run: Run, tmp_path: Path) -> None:
    (tmp_path / "share").rename(tmp_path / "gone")
    rc, result = run.json("source", "sync", "share")
    assert rc == 1 and not result["ok"]
    _, status = run.json("source", "status", "share")
    assert status[0]["state"] == "failing" and "does not exist" in status[0]["last_error"]


def test_an_unknown_source_exits_3(run: Run) -> None:
    rc, _, err = run("source", "sync", "nope")
    assert rc == 3 and "no source 'nope' is configured (configured: share)" in err


def test_the_general_status_shows_each_source_and_why_it_fails(run: Run, tmp_path: Path) -> None:
    rc, status = run.json("status")
    assert rc == 0 and status["sources"][0]["state"] == "never_synced"
    assert run("source", "sync", "share")[0] == 0
    (source,) = run.json("status")[1]["sources"]
    assert source["kind"] == "filesystem" and source["corpus"] == "docs"
    assert source["state"] == "ok" and not source["failing"] and source["last_error"] is None
    assert source["last_content_sync"] and source["last_permission_sync"]
    assert 0 <= source["lag_seconds"] < source["revocation_sla_seconds"] == 3600

    (tmp_path / "share").rename(tmp_path / "gone")
    assert run("source", "sync", "share")[0] == 1
    (failing,) = run.json("status")[1]["sources"]
    assert failing["failing"] and failing["state"] == "failing"
    assert "does not exist" in failing["last_error"]
    assert failing["last_permission_sync"] == source["last_permission_sync"]  # not advanced
    rc, out, _ = run("status")
    assert rc == 0 and "share" in out and "failing" in out and "does not exist" in out
    shown = out + json.dumps(run.json("status")[1])
    assert "tok-VERY-secret-value" not in shown and "SHARE_TOKEN" not in shown


def test_init_says_a_folders_files_are_the_organisations_own_and_how_to_mark_external_ones(
    tmp_path: Path,
) -> None:
    rc, out, err = cli("init", tmp_path / "project")
    assert rc == 0, err
    note = " ".join(out.split())
    assert 'count as your organisation\'s own writing (origin "human"' in note
    assert '"origin": "external_web"' in note and "[trust.source_origins]" in note
