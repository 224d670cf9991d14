"""Fixtures of the CLI tests: a project with a lexical-only config, two documents and a
directory file, and the in-process ``clearance`` bound to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import Run

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with a lexical-only config, documents and a directory file."""
    (tmp_path / "clearance.toml").write_text(CONFIG, encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    (docs / "travel.md").write_text(
        "# Travel policy\n\nBook trains in Tokyo.\n\n## Limits\n\nHotels up to 200 EUR.\n",
        encoding="utf-8",
    )
    (docs / "menu.txt").write_text("Cafeteria menu: ramen on Fridays.\n", encoding="utf-8")
    (tmp_path / "directory.json").write_text(
        json.dumps(
            {
                "users": [{"id": "ann", "active": True, "attributes": {}}],
                "groups": [{"id": "staff", "members": ["user:ann"]}],
            }
        ),
        encoding="utf-8",
    )
    return tmp_path


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], project: Path) -> Run:
    return Run(capsys, project / "clearance.toml")


@pytest.fixture
def ingested(run: Run, project: Path) -> Run:
    rc, _, _ = run("ingest", str(project / "docs"), "--json")
    assert rc == 0
    rc, _, _ = run("directory", "sync", str(project / "directory.json"))
    assert rc == 0
    return run
