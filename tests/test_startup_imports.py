"""`clearance --help` loads no module that only one feature needs: SCIM's models and filter
parser and the LDAP client are imported when provisioning or an LDAP directory source runs,
not by every command (they cost about 0.3 s of CPU at start-up)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scim2_models", "scim2_filter_parser", "ldap3")


def loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys, json\n{statement}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    found: list[str] = json.loads(out.strip().splitlines()[-1])
    return found


def test_the_cli_and_the_engine_load_no_feature_only_module() -> None:
    assert loaded_after("import clearance.cli.main, clearance.app") == []


def test_reverse_proof_the_check_sees_a_feature_module_loaded() -> None:
    assert loaded_after("import clearance.access.scim") == ["scim2_filter_parser", "scim2_models"]
