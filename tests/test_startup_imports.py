"""Start-up loads only what the command needs.

`clearance --help` loads none of the engine: not the settings, not the store, not numpy or
the HTTP and JWT libraries. `clearance status` opens the index, so it loads the store, but
not numpy (the in-memory search copies and the embedder load with the first search), the
answer engine, the connectors, the HTTP client or the feature-only libraries (SCIM's models
and filter parser, the LDAP client), nor what other commands load where they use it: the
directory file reader (status reads the index's own copy of the directory), ACL sync,
trace and note modules, the other commands' modules. Measured with ``python -X importtime``:
these modules are most of the CPU a command spends before it does any work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Loaded by no command that does not use them.
FEATURE_ONLY = ("scim2_models", "scim2_filter_parser", "ldap3", "fastapi", "onnxruntime")
#: The answer engine, the connectors, HTTP and JWT.
ENGINE = (
    "httpx",
    "jwt",
    "numpy",
    "clearance.store.memory",
    "clearance.llm.embedding",
    "clearance.answer.orchestrator",
    "clearance.answer.periods",
    "clearance.ingest.facts",
    "clearance.ingest.pipeline",
    "clearance.sources.sync",
)
#: Loaded where a command uses them: opening the index and reading its settings and its
#: copy of the directory need none of them.
LOADED_WHERE_USED = (
    "clearance.access.directory_file",  # reads directory documents, not the index's copy
    "clearance.access.sync",
    "clearance.answer.result",
    "clearance.glossary",
    "clearance.ingest.metadata",
    "clearance.llm.base",
    "clearance.retrieval.retriever",  # with the first search
    "clearance.sources.base",
    "clearance.sources.service",  # with no source configured
    "clearance.trace.actions",
    "clearance.trace.log",
    "clearance.trace.record",
)
#: Other commands' modules, and what they load to register: a command loads its own
#: (`--help`, which lists every command, loads them all).
OTHER_COMMANDS = (
    "clearance.api.tokens",
    "clearance.cli.ask_cmd",
    "clearance.cli.ingest_cmds",
    "clearance.cli.serve_cmd",
    "clearance.cli.token_cmds",
)
#: Loaded by `clearance status` neither.
NOT_FOR_STATUS = (*FEATURE_ONLY, *ENGINE, *LOADED_WHERE_USED, *OTHER_COMMANDS)
#: Loaded by `clearance --help` neither: nothing of the engine at all.
NOT_FOR_HELP = (
    *FEATURE_ONLY,
    *ENGINE,
    *LOADED_WHERE_USED,
    "clearance.config",
    "clearance.app",
    "pydantic",
    "socket",
    "importlib.resources",
)

_PROBE = """
import json, sys
from clearance.cli.main import cli
try:
    cli.main(args=sys.argv[2:], prog_name="clearance", standalone_mode=False)
except SystemExit:
    pass
watched = json.loads(sys.argv[1])
print(json.dumps(sorted(m for m in watched if m in sys.modules)))
"""


def loaded_by(args: list[str], watched: tuple[str, ...], home: Path | None = None) -> list[str]:
    """Which of ``watched`` a fresh interpreter has loaded after ``clearance ARGS``."""
    env = {**os.environ, **({"CLEARANCE_HOME": str(home)} if home else {})}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(watched), *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    found: list[str] = json.loads(out.strip().splitlines()[-1])
    return found


def test_help_loads_nothing_of_the_engine() -> None:
    assert loaded_by(["--help"], NOT_FOR_HELP) == []


def test_status_loads_the_store_but_not_the_answer_engine_or_connectors(tmp_path: Path) -> None:
    (tmp_path / "clearance.toml").write_text('[store]\npath = "index.db"\n', encoding="utf-8")
    assert loaded_by(["status"], NOT_FOR_STATUS, tmp_path) == []
    # It did open the index (so the check above is about a command that ran).
    assert loaded_by(["status"], ("clearance.store.sqlite",), tmp_path) == [
        "clearance.store.sqlite"
    ]


def test_status_of_a_synced_directory_loads_nothing_another_command_uses(tmp_path: Path) -> None:
    """The demo's settings (most tables) and its directory synced into the index: status
    reads both, and loads neither the directory file reader nor any other command's
    modules."""
    acme = ROOT / "examples" / "acme"
    (tmp_path / "clearance.toml").write_text(
        (acme / "clearance.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    env = {**os.environ, "CLEARANCE_HOME": str(tmp_path)}
    subprocess.run(
        [sys.executable, "-c", _PROBE, "[]", "directory", "sync", str(acme / "directory.json")],
        check=True,
        capture_output=True,
        env=env,
    )
    assert loaded_by(["status"], NOT_FOR_STATUS, tmp_path) == []
    # It did read the stored directory (so the check above is about a directory it read).
    shown = subprocess.run(
        [sys.executable, "-c", _PROBE, "[]", "status"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert "directory v1: 18 users, 25 groups" in shown


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("import clearance.access.scim", ["scim2_filter_parser", "scim2_models"]),
        ("import clearance.answer.orchestrator", ["clearance.answer.orchestrator"]),
    ],
)
def test_reverse_proof_the_probe_sees_a_loaded_module(statement: str, expected: list[str]) -> None:
    code = (
        f"import sys, json\n{statement}\n"
        f"print(json.dumps(sorted(m for m in {NOT_FOR_STATUS!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert set(expected) <= set(json.loads(out.strip().splitlines()[-1]))
