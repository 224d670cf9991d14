"""Fixtures of the HTTP API tests: a lexical-only project with a small directory (an
employee, a disabled user, an administrator) and documents with ACLs, ingested once per
module, plus a real uvicorn server on a free loopback port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import cli

CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[corpora.default]
description = "Everything in docs/"

[assistants.general]
corpora = ["default"]
"""

DIRECTORY = {
    "users": [
        {"id": "ann", "active": True, "attributes": {}},
        {"id": "bob", "active": False, "attributes": {}},
        {"id": "root", "active": True, "attributes": {}},
    ],
    "groups": [
        {"id": "staff", "members": ["user:ann", "user:bob", "user:root"]},
        {"id": "hr", "members": ["user:root"]},
    ],
}


def make_project(root: Path) -> Path:
    """Writes the project under ``root`` and ingests it; returns the config path."""
    config = root / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    docs = root / "docs"
    docs.mkdir()
    (docs / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    (docs / "travel.md").write_text(
        "# Travel policy\n\nBook trains in Tokyo.\n\n## Limits\n\nHotels up to 200 EUR.\n",
        encoding="utf-8",
    )
    (docs / "salaries.md").write_text(
        "# Salary bands\n\nTravel allowance for the board: 900 EUR per night.\n",
        encoding="utf-8",
    )
    (docs / "salaries.md.meta.json").write_text(json.dumps({"acl": ["group:hr"]}), encoding="utf-8")
    (root / "directory.json").write_text(json.dumps(DIRECTORY), encoding="utf-8")
    rc, _, err = cli("--config", config, "ingest", docs, "--json")
    assert rc == 0, err
    rc, _, err = cli("--config", config, "directory", "sync", root / "directory.json")
    assert rc == 0, err
    return config


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))
