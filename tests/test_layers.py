"""The import contracts (``[tool.importlinter]`` in pyproject.toml, docs/design.md §11):
every import inside ``clearance`` points down, with no ``TYPE_CHECKING`` exception, and no
two modules of a package import each other, directly or round a circle.

The test command runs ``lint-imports`` on the tree; here the same contract is run on a
copy of the package, once as it is (kept) and once with one upward import added (broken),
so the check is shown able to fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(tmp_path: Path, edit: tuple[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contract over a copy of the package, after
    appending ``edit[1]`` to module file ``edit[0]``."""
    package = tmp_path / "src" / "clearance"
    shutil.copytree(
        ROOT / "src" / "clearance", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if edit is not None:
        module, line = edit
        with (package / module).open("a", encoding="utf-8") as f:
            f.write(f"\n{line}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_package_keeps_its_layers(tmp_path: Path) -> None:
    result = lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "named"),
    [
        # the store reaching up to the composition root
        ("store/base.py", "from clearance.app import Clearance  # noqa", "clearance.app"),
        # an upward import hidden from type checkers is still upward
        (
            "access/policy.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from clearance.answer.orchestrator import Orchestrator  # noqa",
            "clearance.answer",
        ),
        # the HTTP API borrowing from the CLI
        ("api/views.py", "from clearance.cli import context  # noqa", "clearance.cli"),
        # a circle inside one layer: the errors module reaching back to the app that uses it
        (
            "api/errors.py",
            "from clearance.api import app  # noqa",
            "No cycles are allowed in clearance.api",
        ),
    ],
)
def test_reverse_proof_an_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, line: str, named: str
) -> None:
    result = lint(tmp_path, (module, line))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and named in result.stdout
