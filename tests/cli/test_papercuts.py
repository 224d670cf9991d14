"""Operator papercuts found by a new user on their own corpus, each pinned by the real CLI
(in-process, real SQLite file)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from clearance.ingest.pipeline import Ingestor, IngestReport
from clitools import Run, assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]
ASSISTANTS = '\n[corpora.default]\n\n[assistants.general]\ncorpora = ["default"]\n'

# --------------------------------------------------------------------------- --assistant


@pytest.fixture
def with_assistant(ingested: Run, project: Path) -> Run:
    config = project / "clearance.toml"
    config.write_text(config.read_text(encoding="utf-8") + ASSISTANTS, encoding="utf-8")
    return ingested


COMMANDS = {
    "ask": ("ask", "Where are hotels booked?", "--user", "ann"),
    "search": ("search", "hotels", "--user", "ann"),
    "explain": ("explain", "--user", "ann", "--doc", "files:travel.md"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unknown_assistant_is_not_found_exit_3(with_assistant: Run, command: str) -> None:
    rc, out, err = with_assistant(*COMMANDS[command], "--assistant", "nope")

    assert (rc, out) == (3, "")
    assert_one_line_error(err, "unknown assistant 'nope' (configured: general)")

    rc, out, err = with_assistant(*COMMANDS[command], "--assistant", "general")
    assert (rc, err) == (0, "")


REQUIRED = "\n[access]\nrequire_assistant = true\n"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_deployment_can_require_an_assistant(
    with_assistant: Run, project: Path, command: str
) -> None:
    rc, _, _ = with_assistant(*COMMANDS[command])
    assert rc == 0  # optional by default
    config = project / "clearance.toml"
    config.write_text(config.read_text(encoding="utf-8") + REQUIRED, encoding="utf-8")

    rc, out, err = with_assistant(*COMMANDS[command])

    assert (rc, out) == (3, "")
    assert_one_line_error(
        err, "--assistant is required here ([access] require_assistant; configured: general)"
    )
    rc, out, err = with_assistant(*COMMANDS[command], "--assistant", "general")
    assert (rc, err) == (0, "")


def test_the_python_api_refuses_a_missing_assistant_too(with_assistant: Run, project: Path) -> None:
    """The CLI check is not the only wall: the library refuses the same request."""
    from clearance.app import Clearance
    from clearance.config import load_settings
    from clearance.errors import ConfigError

    config = project / "clearance.toml"
    config.write_text(config.read_text(encoding="utf-8") + REQUIRED, encoding="utf-8")
    with Clearance.open(load_settings(config), embedder=None) as app:
        assert app.ask("Where are hotels booked?", "ann").status.value == "unknown_assistant"
        with pytest.raises(ConfigError, match="an assistant is required"):
            app.search("ann", "hotels")
        assert app.search("ann", "hotels", assistant="general").hits


def test_ask_json_keeps_its_status_and_exits_3(with_assistant: Run) -> None:
    rc, out, err = with_assistant(*COMMANDS["ask"], "--assistant", "nope", "--json")

    assert rc == 3
    data = json.loads(out)
    assert (data["status"], data["answer"]) == ("unknown_assistant", "There is no such assistant.")
    assert_one_line_error(err, "unknown assistant 'nope'")


@pytest.mark.parametrize("command", ["search", "explain"])
def test_search_and_explain_json_report_not_found(with_assistant: Run, command: str) -> None:
    rc, data = with_assistant.json(*COMMANDS[command], "--assistant", "nope")

    assert rc == 3
    assert data == {
        "error": "not_found",
        "message": "unknown assistant 'nope' (configured: general)",
    }


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_says_what_omitting_assistant_means(run: Run, command: str) -> None:
    rc, out, _ = run(command, "--help")

    assert rc == 0
    text = " ".join(out.split())
    assert "Without it, no assistant narrows anything: every corpus" in text
    assert (
        "An unknown name exits 3, and so does omitting it where [access] require_assistant" in text
    )


# --------------------------------------------------------------------------- docs list


def _first_column(table: str) -> str:
    """The first column of a rich table's body, its wrapped pieces joined back together."""
    body = table.split("╇", 1)[1]
    cells = [line.split("│")[1].strip() for line in body.splitlines() if line.startswith("│")]
    return "".join(cells)


def test_docs_list_wraps_long_ids_and_never_shortens_them(run: Run, project: Path) -> None:
    long_id = "wiki:" + "-".join(f"space{i}/page{i}" for i in range(12))
    docs = project / "docs"
    for name in ("travel.md", "menu.txt"):
        (docs / name).unlink()
    (docs / "page.md").write_text("A page.\n", encoding="utf-8")
    (docs / "page.md.meta.json").write_text(json.dumps({"doc_id": long_id}), encoding="utf-8")
    assert run("ingest", str(docs), "--json")[0] == 0

    rc, out, _ = run("docs", "list")

    assert rc == 0
    assert "…" not in out
    assert _first_column(out) == long_id


# --------------------------------------------------------------------------- ingest output


def test_ingest_names_every_skipped_file_and_why(run: Run, project: Path) -> None:
    (project / "docs" / "notes.xyz").write_text("not a supported format", encoding="utf-8")

    rc, out, _ = run("ingest", str(project / "docs"))

    assert rc == 0
    assert "skipped notes.xyz: unsupported file type\n" in out


def test_a_reason_shared_by_many_files_is_printed_for_the_first_three(
    run: Run, project: Path
) -> None:
    """A folder whose corpus is not configured fails every file for one reason: the first
    three files are printed with it, then how many more it stopped, instead of the same
    line per file. The JSON report keeps each file. Skipped files are each named."""
    folder = project / "handbook"
    folder.mkdir()
    (folder / "_meta.json").write_text(
        json.dumps({"corpus": "handbook", "acl": ["group:staff"]}), encoding="utf-8"
    )
    for name in ("leave.md", "travel.md", "equipment.md", "fmla.md", "overtime.md"):
        (folder / name).write_text(f"# {name}\n\nText.\n", encoding="utf-8")

    rc, out, _ = run("ingest", str(folder))

    assert rc != 0
    assert out.count("corpus 'handbook' is not configured") == 3, out
    assert "failed 2 more files for the same reason (--json lists each)" in out
    rc, data, _ = run("ingest", str(folder), "--json")
    assert [r["status"] for r in json.loads(data)["results"]] == ["failed"] * 5
    # With a second reason, each count says which reason it is: its first file.
    other = project / "finance"
    other.mkdir()
    (other / "_meta.json").write_text(
        json.dumps({"corpus": "finance", "acl": ["group:staff"]}), encoding="utf-8"
    )
    for name in ("a.md", "b.md", "c.md", "d.md"):
        (other / name).write_text(f"# {name}\n\nText.\n", encoding="utf-8")
    rc, out, _ = run("ingest", str(folder), str(other))
    assert "failed 2 more files for the same reason as " in out, out
    assert "failed 1 more file for the same reason as " in out, out

    (project / "docs" / "a.xyz").write_text("x", encoding="utf-8")
    (project / "docs" / "b.zzz").write_text("x", encoding="utf-8")
    rc, out, _ = run("ingest", str(project / "docs"))
    assert "skipped a.xyz: unsupported file type\n" in out
    assert "skipped b.zzz: unsupported file type\n" in out


def test_ingest_prints_run_level_warnings(
    run: Run, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Ingestor.run

    def run_with_a_warning(self: Ingestor, *args: Any, **kwargs: Any) -> IngestReport:
        report = real_run(self, *args, **kwargs)
        report.warnings.append("classifier pattern 'budget' matched nothing")
        return report

    monkeypatch.setattr(Ingestor, "run", run_with_a_warning)

    rc, out, _ = run("ingest", str(project / "docs"))

    assert rc == 0
    assert "warning: classifier pattern 'budget' matched nothing\n" in out


def test_the_chunk_count_is_of_chunks_written(run: Run, project: Path) -> None:
    rc, out, _ = run("ingest", str(project / "docs"))
    assert (rc, out.splitlines()[-1]) == (0, "3 chunks written in this run")

    rc, out, _ = run("ingest", str(project / "docs"))  # nothing changed
    assert (rc, out.splitlines()[-1]) == (0, "0 chunks written in this run")


# --------------------------------------------------------------------------- install


def test_readme_says_how_to_reach_the_command_and_keeps_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block[1].splitlines()]
    assert commands == ["python3 tasks.py demo", "python3 tasks.py test"]

    using = readme.split("## Using it", 1)[1].split("\n## ", 1)[0]
    assert ". .venv/bin/activate" in using
    assert ".venv/bin/clearance" in using


def test_pyproject_licence_is_an_spdx_string_for_a_backend_that_reads_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"]
