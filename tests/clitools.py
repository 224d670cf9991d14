"""Helpers shared by test modules: the in-process CLI and the lexical-only demo config."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

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
