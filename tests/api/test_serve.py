"""``clearance serve`` for real, in a subprocess, and the ``[server]`` settings."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import uvicorn

from api.conftest import create_token, free_port, make_project, wait_until_serving
from clearance.cli.serve_cmd import no_delay
from clearance.config import ServerSettings, settings_from_dict
from clearance.errors import ConfigError
from clitools import cli


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


def child_pids(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_serve_with_workers_applies_a_directory_sync_to_every_worker(tmp_path: Path) -> None:
    """Two worker processes, each with its own in-memory copy: a directory sync by another
    process (the CLI) disables the account for the very next request, whichever worker
    takes it. Each request opens a new connection, so the kernel spreads them over both.
    (tests/test_directory_freshness.py holds the reverse proof of the cache this relies on.)"""
    config = make_project(tmp_path)
    token = create_token(config, "ann")["token"]
    port = free_port()
    command = [sys.executable, "-m", "clearance.cli.main", "--config", str(config), "serve"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def refusals() -> list[str | None]:
        found = []
        for _ in range(12):
            with httpx.Client(base_url=url, timeout=10) as client:  # a new connection each
                response = client.post(
                    "/v1/search",
                    json={"query": "Hotels"},
                    headers={"Authorization": f"Bearer {token}"},
                )
            assert response.status_code == 200
            found.append(response.json()["refused"])
        return found

    try:
        wait_until_serving(url, process)
        assert len(child_pids(process.pid)) >= 2
        assert refusals() == [None] * 12

        directory = json.loads((tmp_path / "directory.json").read_text())
        directory["users"][0]["active"] = False  # ann
        (tmp_path / "off.json").write_text(json.dumps(directory), encoding="utf-8")
        rc, _, err = cli("--config", config, "directory", "sync", tmp_path / "off.json")
        assert rc == 0, err

        assert refusals() == ["account_disabled"] * 12
    finally:
        process.terminate()
        process.wait(30)
        if process.stdout:
            process.stdout.close()


@pytest.mark.parametrize("off", [True, False], ids=["no_delay", "reverse-proof-uvicorn-socket"])
def test_worker_connections_are_accepted_with_nagle_off(off: bool) -> None:
    """The workers' shared socket is uvicorn's, which asyncio does not recognise as TCP, so
    nothing would turn Nagle off on accepted connections (and responses written in two
    parts would wait for the client's delayed ACK). ``no_delay`` sets it on the listening
    socket, and accepted connections inherit it; uvicorn's socket as it comes does not."""
    listener = uvicorn.Config(lambda: None, host="127.0.0.1", port=0).bind_socket()
    if off:
        no_delay(listener)
    listener.listen()
    with listener, socket.create_connection(listener.getsockname()):
        accepted, _ = listener.accept()
        with accepted:
            assert bool(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)) is off
