"""``clearance facts suggest``: ``[facts]`` vocabulary entries proposed from what was
ingested, as TOML the operator can paste (and ``--json``). Pasted into the configuration,
the suggestion loads, and the metrics, entities and lines it names are the ones the tables
use — so the vocabulary is a refinement the operator starts from, never a prerequisite."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import click
from click.testing import CliRunner

from clearance.app import Clearance
from clearance.cli import facts_cmds
from clearance.cli.context import AppContext
from clearance.config import settings_from_dict


def write_tables(folder: Path) -> None:
    folder.mkdir()
    with (folder / "segments.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(
            [
                ["Net sales by reportable segment (USD m)", "2024", "2023"],
                ["Americas", "167,045", "162,560"],
                ["Greater China", "66,952", "72,559"],
                ["Total net sales", "391,035", "383,285"],
            ]
        )
    (folder / "_meta.json").write_text(
        json.dumps({"acl": ["everyone"], "title": "Apple Inc. — Form 10-K 2024"}),
        encoding="utf-8",
    )


def test_suggest_proposes_pasteable_vocabulary_from_the_tables(tmp_path: Path) -> None:
    config = tmp_path / "clearance.toml"
    config.write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    write_tables(tmp_path / "corpus")
    app = Clearance.open(settings_from_dict({"embedding": {"provider": "none"}}, root=tmp_path))
    try:
        assert app.ingest([tmp_path / "corpus"]).failed == []
    finally:
        app.close()

    group = click.Group()
    facts_cmds.register(group)
    runner = CliRunner()
    obj = AppContext(config)
    as_json = runner.invoke(group, ["facts", "suggest", "--json"], obj=obj)
    assert as_json.exit_code == 0, as_json.output
    suggested = json.loads(as_json.output)
    assert "net sales" in suggested["metrics"]
    assert set(suggested["channels"]) == {"Americas", "Greater China"}
    assert suggested["metric_units"] == {"net sales": "USD m"}
    assert suggested["periods"] == ["FY2023", "FY2024"]
    assert suggested["entities"] == {"Apple Inc.": ["Apple"]}  # from the title

    text = runner.invoke(group, ["facts", "suggest"], obj=obj)
    assert text.exit_code == 0, text.output
    assert text.output == suggested["toml"]
    pasted = tomllib.loads('[embedding]\nprovider = "none"\n' + text.output)
    settings = settings_from_dict(pasted, root=tmp_path)
    assert "net sales" in settings.facts.metrics
    assert "Greater China" in settings.facts.channels

    # once pasted, nothing more is proposed
    config.write_text('[embedding]\nprovider = "none"\n' + text.output, encoding="utf-8")
    again = runner.invoke(group, ["facts", "suggest", "--json"], obj=AppContext(config))
    assert again.exit_code == 0, again.output
    rest = json.loads(again.output)
    assert (rest["metrics"], rest["entities"], rest["channels"]) == ({}, {}, {})
