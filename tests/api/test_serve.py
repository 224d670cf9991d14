"""``clearance serve`` for real, in a subprocess, and the ``[server]`` settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from api.conftest import create_token, free_port, wait_until_serving
from clearance.config import ServerSettings, settings_from_dict
from clearance.errors import ConfigError


def test_server_settings_default_to_loopback_8080_and_1_mib() -> None:
    assert settings_from_dict({}).server == ServerSettings("127.0.0.1", 8080, 1024 * 1024)


def test_server_settings_parse_and_refuse_bad_values() -> None:
    server = settings_from_dict({"server": {"host": "0.0.0.0", "port": 9000}}).server

    assert (server.host, server.port) == ("0.0.0.0", 9000)
    for bad in ({"port": 0}, {"port": 70000}, {"max_body_bytes": 0}, {"hots": "x"}):
        with pytest.raises(ConfigError, match="server"):
            settings_from_dict({"server": bad})


def test_clearance_serve_answers_on_the_given_port(project: Path) -> None:
    port = free_port()
    token = create_token(project, "ann")["token"]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clearance.cli.main",
            "--config",
            str(project),
            "serve",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process)
        me = httpx.get(f"{url}/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert me.json()["user"] == "ann"
        assert "server" not in me.headers
    finally:
        process.terminate()
        process.wait(15)
        if process.stdout:
            process.stdout.close()
