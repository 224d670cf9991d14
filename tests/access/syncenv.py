"""A small real deployment for the operator-input tests: a config file, a SQLite index with a
few documents ingested from a manifest, and a synced directory — driven through the real
``clearance`` command in-process (:func:`clitools.cli`).

``state()`` is everything a failed sync must leave untouched (ACLs, sync times, the stored
directory), so "nothing written" is one equality.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clearance.app import Clearance
from clearance.config import load_settings
from clearance.llm.embedding import HashingEmbedder
from clearance.store.sqlite import SQLiteStore
from clitools import cli

CONFIG = """
[store]
path = "data/clearance.db"

[corpora.wiki]
revocation_sla = "1h"

[embedding]
provider = "none"
"""

DOCUMENTS = {
    "wiki:handbook": ("Travel handbook. Book flights through the portal.", ["group:employees"]),
    "wiki:roadmap": ("Engineering roadmap. The gateway ships in spring.", ["group:eng"]),
    "wiki:minutes": ("Minutes of the planning meeting.", ["user:ann"]),
}

DIRECTORY: dict[str, Any] = {
    "users": [{"id": "ann", "active": True}, {"id": "bob", "active": True}],
    "groups": [
        {"id": "employees", "members": ["user:ann", "user:bob"]},
        {"id": "eng", "members": ["user:ann"]},
    ],
}


@dataclass
class SyncEnv:
    root: Path
    config: Path
    app: Clearance

    def run(self, *args: str | Path) -> tuple[int, str, str]:
        """``clearance --config <config> ARGS`` in-process: ``(exit code, stdout, stderr)``."""
        return cli("--config", self.config, *args)

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return path

    def write_jsonl(self, name: str, lines: list[Any]) -> Path:
        """A JSONL file; a ``str`` item is written verbatim (for malformed lines)."""
        body = "\n".join(item if isinstance(item, str) else json.dumps(item) for item in lines)
        return self.write(name, body + "\n")

    def write_json(self, name: str, data: Any) -> Path:
        return self.write(name, json.dumps(data, indent=2))

    def state(self) -> dict[str, Any]:
        """What a refused sync must not change."""
        store = self.app.store
        return {
            "acls": {d.doc_id: d.acl for d in store.list_documents()},
            "syncs": store.last_acl_syncs(),
            "directory": store.get_meta("directory"),
        }


@contextmanager
def sync_env(root: Path) -> Iterator[SyncEnv]:
    config = root / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    manifest = root / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps(
                {"doc_id": doc_id, "corpus": "wiki", "title": doc_id, "text": text, "acl": acl}
            )
            + "\n"
            for doc_id, (text, acl) in DOCUMENTS.items()
        ),
        encoding="utf-8",
    )
    directory = root / "directory.json"
    directory.write_text(json.dumps(DIRECTORY), encoding="utf-8")
    settings = load_settings(config)
    app = Clearance(settings, SQLiteStore(settings.db_path), embedder=HashingEmbedder())
    try:
        assert app.ingest([], manifest=manifest).counts == {"added": len(DOCUMENTS)}
        app.sync_directory(directory)
        yield SyncEnv(root, config, app)
    finally:
        app.close()


def one_line_error(rc: int, out: str, err: str) -> str:
    """Assert the CLI refused with exit 2 and exactly one error line, no traceback; return it."""
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]
