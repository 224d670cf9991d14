"""The command reference in docs/cli.md is generated from the commands; it must not drift."""

from __future__ import annotations

from pathlib import Path

from clearance.cli.docgen import render

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_matches_the_commands() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run python -m clearance.cli.docgen > docs/cli.md"
    )


def test_every_command_is_in_the_reference() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in ("ingest", "search", "ask", "explain", "directory sync", "acl sync", "status"):
        assert f"## `clearance {command}`" in text
