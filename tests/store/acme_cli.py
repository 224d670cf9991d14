"""The ACME demo corpus behind the real ``clearance`` CLI, for the tests that drive a store
through it (end to end on PostgreSQL, ``clearance migrate``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clitools import cli, lexical_only

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"


def home(root: Path, store: str) -> Path:
    """A work directory with the demo's settings, lexical only, and ``store`` as its
    ``[store]`` table; the path of its settings file."""
    root.mkdir()
    config = lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8"))
    config = config.replace('[store]\npath = "data/clearance.db"\n', store)
    assert store in config
    (root / "clearance.toml").write_text(config, encoding="utf-8")
    return root / "clearance.toml"


def run_json(config: Path, *args: str) -> Any:
    """``clearance --config CONFIG ARGS --json``, which must succeed; its parsed output."""
    rc, out, err = cli("--config", config, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def comparable(data: Any) -> Any:
    """Output without what differs per run (ids, times)."""
    if isinstance(data, dict):
        return {
            k: comparable(v)
            for k, v in data.items()
            if not re.search(r"(^|_)(id|ms|latency|timings?|created_at)$", k)
        }
    if isinstance(data, list):
        return [comparable(v) for v in data]
    return data
