"""Two folders with a file at the same place (``gdp/README.md`` and ``co2/README.md``)
derive one default doc_id (``files:README.md``). Ingested in one run, both were refused
naming each other only as "README.md"; ingested one after the other, the second silently
replaced the first document, whatever its folder's corpus and ACL. Now the second is
refused, naming the file it would replace, and nothing is lost; a folder moved away is
still the same document."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from clearance.app import Clearance
from clearance.config import Settings
from clearance.llm.mock import MockProvider
from clearance.store.sqlite import SQLiteStore


def folder(root: Path, name: str, readme: str, acl: list[str]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "_meta.json").write_text(json.dumps({"acl": acl}), encoding="utf-8")
    (path / "README.md").write_text(readme, encoding="utf-8")
    return path


def test_a_file_at_the_same_place_in_another_folder_never_replaces_the_first(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    gdp = folder(tmp_path, "gdp", "# GDP\nCountry GDP in current US dollars.", ["group:econ"])
    co2 = folder(tmp_path, "co2", "# CO2\nFossil emissions since 1750.", ["everyone"])
    app = Clearance(settings_factory({}), store, provider=MockProvider())
    assert [r.status for r in app.ingest([gdp]).results] == ["added"]

    (second,) = app.ingest([co2]).results
    assert second.status == "failed"
    assert str(gdp / "README.md") in (second.error or "")
    assert "common parent folder" in (second.error or "")
    kept = store.get_document("files:README.md")
    assert kept is not None and kept.acl == frozenset({"group:econ"})
    assert kept.path == str(gdp / "README.md")

    # in one run, each names the other by its path
    both = {r.error for r in app.ingest([gdp, co2]).results if r.status == "failed"}
    assert any(str(co2 / "README.md") in (e or "") for e in both), both

    # reverse proof: the folder moved away is the same document, updated in place
    shutil.rmtree(gdp)
    (moved,) = app.ingest([co2]).results
    assert moved.status == "updated", moved
    kept = store.get_document("files:README.md")
    assert kept is not None and kept.path == str(co2 / "README.md")
    assert kept.acl == frozenset({"everyone"})
