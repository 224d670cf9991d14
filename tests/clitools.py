"""Helpers shared by test modules: the in-process CLI and the lexical-only demo config."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from clearance.cli.main import main


def cli(*args: str | Path) -> tuple[int, str, str]:
    """Run the real ``clearance`` command in-process: ``(exit code, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def lexical_only(toml: str) -> str:
    """The demo configuration with ``[embedding] provider = "none"`` (no model, fast)."""
    text, n = re.subn(
        r'(?m)^(\[embedding\]\n(?:[^\[\n].*\n|\n)*?provider\s*=\s*)"[^"]*"', r'\1"none"', toml
    )
    assert n == 1, "examples/acme/clearance.toml: no [embedding] provider to override"
    return text


class Run:
    """Runs ``main(argv)`` with ``--config CONFIG`` and captures exit code, stdout and stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str], config: Path) -> None:
        self.capsys = capsys
        self.config = config

    def __call__(self, *args: str, config: bool = True) -> tuple[int, str, str]:
        self.capsys.readouterr()  # drop anything printed before
        argv = (["--config", str(self.config)] if config else []) + list(args)
        rc = main(argv)
        out, err = self.capsys.readouterr()
        return rc, out, err

    def json(self, *args: str) -> tuple[int, Any]:
        rc, out, _ = self(*args, "--json")
        return rc, json.loads(out)


def assert_one_line_error(err: str, text: str) -> None:
    """The CLI's error contract: ``error: …`` on exactly one line, never a traceback."""
    assert err.startswith("error: ")
    assert text in err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
