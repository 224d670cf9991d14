"""Fixtures of the HTTP API tests: a lexical-only project with a small directory (an
employee, a disabled user, an administrator) and documents with ACLs, ingested once per
module, plus a real uvicorn server on a free loopback port."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from clearance.api.app import create_app
from clearance.config import load_settings
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

[server]
rate_limit = "off"  # fuzzing sends hundreds of requests as one user; tests/api/test_limits.py
signin_rate_limit = 'off'  # tests sign in many times from loopback; test_shared_limits.py
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def create_token(config: Path, user: str, *extra: str) -> dict[str, str]:
    """``clearance token create`` run for real: its JSON (``token``, ``id`` …)."""
    rc, out, err = cli("--config", config, "token", "create", "--user", user, *extra, "--json")
    assert rc == 0, err
    created: dict[str, str] = json.loads(out)
    return created


@dataclass
class Live:
    """A real uvicorn server on loopback over the module's project, and its tokens."""

    url: str
    config: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}"}


@contextmanager
def serving_app(app: Any, path: str = "") -> Iterator[str]:
    """``app`` under uvicorn in a thread on a free loopback port; yields its base URL (plus
    ``path``). The peer is the TCP connection's, as ``clearance serve`` takes it
    (``proxy_headers=False``)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            proxy_headers=False,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        server.should_exit = True
        thread.join(15)


def wait_until_serving(url: str, process: subprocess.Popen[Any]) -> None:
    """Wait for a ``clearance serve`` subprocess to answer ``/healthz`` (at most 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"clearance serve exited: {output!r}")
        assert time.monotonic() < deadline, "clearance serve did not start"
        time.sleep(0.1)


@contextmanager
def serving(config: Path) -> Iterator[str]:
    """The app of ``config`` under uvicorn on loopback; yields its base URL."""
    with serving_app(create_app(load_settings(config))) as url:
        yield url


@pytest.fixture(scope="module")
def live(project: Path) -> Iterator[Live]:
    with serving(project) as url:
        server = Live(url, project)
        for user, extra in (("ann", ()), ("bob", ()), ("root", ("--admin",))):
            server.tokens[user] = create_token(project, user, *extra)["token"]
        yield server
