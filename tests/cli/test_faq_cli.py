"""``clearance faq add|list|import|remove`` through the real ``main()`` (exit codes, one-line
errors, ``--json``). If the main CLI does not register the ``faq`` commands, the tests run
them in a group of their own with the same ``--config`` option, still through ``main()``."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest

from clearance.cli import faq_cmds
from clearance.cli import main as main_module
from clearance.cli.context import AppContext
from clearance.config import load_settings
from clearance.store.sqlite import SQLiteStore
from factories import document

Run = Callable[..., tuple[int, str, str]]


def _own_group() -> click.Group:
    @click.group()
    @click.option("--config", type=click.Path(dir_okay=False, path_type=Path), default=None)
    @click.pass_context
    def cli(ctx: click.Context, config: Path | None) -> None:
        ctx.obj = AppContext(config)

    faq_cmds.register(cli)
    return cli


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "clearance.toml"
    path.write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    return path


@pytest.fixture
def run(config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    if "faq" not in main_module.cli.commands:
        monkeypatch.setattr(main_module, "cli", _own_group())

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main_module.main(["--config", str(config), *args])
        out, err = capsys.readouterr()
        return rc, out, err

    return invoke


def add_args(entry_id: str = "vpn", *extra: str) -> list[str]:
    return [
        "faq",
        "add",
        "--id",
        entry_id,
        "--question",
        "How do I connect to the VPN?",
        "--answer",
        "Install the client from the portal.",
        *extra,
    ]


def listed(run: Run) -> list[dict[str, Any]]:
    rc, out, _ = run("faq", "list", "--json")
    assert rc == 0
    data: list[dict[str, Any]] = json.loads(out)
    return data


def index_document(config: Path, doc_id: str, title: str, uri: str) -> None:
    settings = load_settings(config)
    with SQLiteStore(settings.db_path) as store:
        store.upsert(
            document(
                doc_id,
                title=title,
                uri=uri,
                origin_chain=("human",),
                content_hash="x",
            ),
            [],
        )


def assert_one_line_error(rc: int, err: str, code: int, *needles: str) -> None:
    assert rc == code
    assert err.strip().startswith("error:")
    assert err.strip().count("\n") == 0
    for needle in needles:
        assert needle in err


def test_add_then_list(run: Run, config: Path) -> None:
    index_document(config, "wiki:vpn", "VPN guide", "https://wiki.example/vpn")
    rc, out, err = run(
        *add_args(
            "vpn",
            "--alias",
            "VPN setup",
            "--alias",
            "VPNの接続方法",
            "--acl",
            "group:staff",
            "--acl",
            "user:alice",
            "--sensitivity",
            "public",
            "--cite",
            "wiki:vpn#section=2",
            "--cite",
            "wiki:vpn",
            "--valid-from",
            "2025-01-01",
            "--valid-until",
            "2026-01-01T00:00:00+09:00",
            "--json",
        )
    )
    assert rc == 0, err
    added = json.loads(out)
    assert added["replaced"] is False
    assert listed(run) == [
        {
            "id": "vpn",
            "question": "How do I connect to the VPN?",
            "aliases": ["VPN setup", "VPNの接続方法"],
            "answer": "Install the client from the portal.",
            "citations": [
                {
                    "doc_id": "wiki:vpn",
                    "title": "VPN guide",
                    "locator": "section=2",
                    "uri": "https://wiki.example/vpn",
                },
                {
                    "doc_id": "wiki:vpn",
                    "title": "VPN guide",
                    "locator": "",
                    "uri": "https://wiki.example/vpn",
                },
            ],
            "acl": ["group:staff", "user:alice"],
            "sensitivity": "PUBLIC",
            "valid_from": "2025-01-01T00:00:00+00:00",
            "valid_until": "2025-12-31T15:00:00+00:00",
        }
    ]
    rc, out, _ = run("faq", "list")
    assert rc == 0
    assert "vpn" in out and "1 faq entries" in out


def test_add_without_acl_warns_that_nobody_is_served(run: Run) -> None:
    rc, out, err = run(*add_args())
    assert rc == 0
    assert "added faq entry vpn" in out
    assert "nobody will be served" in err
    assert listed(run)[0]["acl"] == []


def test_duplicate_id_needs_replace(run: Run) -> None:
    assert run(*add_args())[0] == 0
    rc, _, err = run(*add_args())
    assert_one_line_error(rc, err, 2, "already exists")
    rc, out, _ = run(*add_args("vpn", "--replace", "--acl", "everyone"))
    assert rc == 0 and "replaced" in out
    assert listed(run)[0]["acl"] == ["everyone"]


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--acl", "staff"], ["--acl", "bad principal 'staff'"]),
        (["--sensitivity", "secret"], ["--sensitivity", "bad sensitivity"]),
        (["--valid-from", "soon"], ["--valid-from", "not an ISO 8601"]),
        (["--valid-from", "2026-01-01", "--valid-until", "2025-01-01"], ["before 'valid_until'"]),
        (["--cite", "wiki:missing#page=1"], ["--cite", "no document 'wiki:missing'"]),
        (["--cite", "#page=1"], ["--cite", "expected DOC_ID"]),
        (["--alias", "？"], ["alias"]),
    ],
)
def test_bad_input_is_exit_2_with_one_line(run: Run, extra: list[str], needles: list[str]) -> None:
    rc, _, err = run(*add_args("vpn", *extra))
    assert_one_line_error(rc, err, 2, *needles)
    assert listed(run) == []


def test_bad_id_is_exit_2(run: Run) -> None:
    rc, _, err = run(*add_args("two words"))
    assert_one_line_error(rc, err, 2, "'id'")


def test_errors_in_json_mode_are_json(run: Run) -> None:
    rc, out, _ = run(*add_args("vpn", "--acl", "staff", "--json"))
    assert rc == 2
    assert json.loads(out)["error"] == "metadata_error"


def test_remove(run: Run) -> None:
    run(*add_args())
    rc, out, _ = run("faq", "remove", "vpn", "--json")
    assert rc == 0 and json.loads(out) == {"removed": "vpn"}
    assert listed(run) == []
    rc, _, err = run("faq", "remove", "vpn")
    assert_one_line_error(rc, err, 3, "no faq entry 'vpn'")


def test_import_and_round_trip_through_list(run: Run, tmp_path: Path) -> None:
    lines = [
        {
            "id": "vpn",
            "question": "How do I connect to the VPN?",
            "aliases": ["VPN setup"],
            "answer": "Install the client.",
            "citations": [{"doc_id": "wiki:vpn", "title": "VPN", "locator": "p=1", "uri": "u"}],
            "acl": ["group:staff"],
            "sensitivity": "INTERNAL",
            "valid_from": "2025-01-01T00:00:00+00:00",
            "valid_until": None,
        },
        {"id": "canteen", "question": "Where is the canteen?", "answer": "Floor 2."},
    ]
    path = tmp_path / "faq.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    rc, out, _ = run("faq", "import", str(path), "--json")
    assert rc == 0
    assert json.loads(out) == {"source": str(path), "added": ["vpn", "canteen"], "replaced": []}
    exported = listed(run)
    assert [e["id"] for e in exported] == ["canteen", "vpn"]
    # What `list --json` prints is importable as is.
    again = tmp_path / "again.jsonl"
    again.write_text("\n".join(json.dumps(e) for e in exported), encoding="utf-8")
    rc, out, _ = run("faq", "import", str(again))
    assert rc == 0 and "0 added, 2 replaced" in out
    assert listed(run) == exported


def test_import_error_names_line_and_key_and_changes_nothing(run: Run, tmp_path: Path) -> None:
    run(*add_args("existing"))
    path = tmp_path / "faq.jsonl"
    good = {"id": "a", "question": "Q?", "answer": "A."}
    path.write_text(
        json.dumps(good) + "\n" + json.dumps(good | {"id": "b", "colour": "blue"}) + "\n",
        encoding="utf-8",
    )
    rc, _, err = run("faq", "import", str(path))
    assert_one_line_error(rc, err, 2, f"{path}:2", "unknown key 'colour'")
    assert [e["id"] for e in listed(run)] == ["existing"]


def test_import_of_a_missing_file_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    rc, _, err = run("faq", "import", str(tmp_path / "missing.jsonl"))
    assert rc == 2
    assert "does not exist" in err


def test_validity_window_is_stored_in_utc(run: Run) -> None:
    run(*add_args("vpn", "--valid-from", "2025-04-01T09:00:00+09:00"))
    start = datetime.fromisoformat(listed(run)[0]["valid_from"])
    assert start == datetime(2025, 4, 1, tzinfo=UTC)
