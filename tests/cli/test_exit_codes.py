"""Exit codes the README defines — 1 operational, 2 bad input, 3 not found — where a command
used to give another: an unknown ``--user`` of ``ask`` is not found (exit 3), told apart
from a disabled account (answered ``account_disabled``, exit 0); ``serve`` on a port in use
fails with exit 1 before it says it is serving."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from api.conftest import make_project
from clitools import cli


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("exit-codes"))  # ann active, bob disabled


def test_ask_as_a_user_the_directory_does_not_hold_is_not_found(project: Path) -> None:
    rc, out, err = cli("--config", project, "ask", "Hotels limits", "--user", "nobody")

    assert rc == 3, (out, err)
    assert out == ""
    assert err.strip() == "error: user 'nobody' is not in the directory"


def test_ask_as_a_disabled_user_is_still_answered_account_disabled(project: Path) -> None:
    rc, out, err = cli("--config", project, "ask", "Hotels limits", "--user", "bob", "--json")

    assert rc == 0, err
    assert json.loads(out)["status"] == "account_disabled"


def serve_on_a_taken_port(
    project: Path, *extra: str
) -> tuple[int, subprocess.CompletedProcess[str]]:
    """``clearance serve`` on a port another socket is listening on: (port, result)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        command = [sys.executable, "-m", "clearance.cli.main", "--config", str(project)]
        result = subprocess.run(
            [*command, "serve", "--port", str(port), *extra],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    return port, result


@pytest.mark.parametrize("extra", [(), ("--workers", "2")], ids=["one-process", "workers"])
def test_serve_on_a_port_in_use_fails_with_exit_1_before_saying_it_serves(
    project: Path, extra: tuple[str, ...]
) -> None:
    port, result = serve_on_a_taken_port(project, *extra)

    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "serving" not in result.stdout + result.stderr
    assert (
        result.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
