"""The ``clearance`` command, run in-process with real files and a real index."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from clearance import __version__
from clitools import Run, assert_one_line_error

# --------------------------------------------------------------------------- init


def test_init_writes_config_and_data_dir_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run(capsys, tmp_path / "unused")
    target = tmp_path / "new"

    rc, out, err = run("init", str(target), config=False)

    assert (rc, err) == (0, "")
    assert f"wrote {target / 'clearance.toml'}" in out
    # What a new user does next, starting with where the configuration is.
    assert f"export CLEARANCE_HOME={shlex.quote(str(target.resolve()))}" in out
    assert "clearance ingest FOLDER" in out
    assert (target / "data").is_dir()
    text = (target / "clearance.toml").read_text(encoding="utf-8")
    assert "[store]" in text and 'provider = "minilm"' in text

    (target / "clearance.toml").write_text("# mine\n", encoding="utf-8")
    rc, out, err = run("init", str(target), config=False)
    assert rc == 2
    assert_one_line_error(err, "already exists (use --force to overwrite)")
    assert (target / "clearance.toml").read_text(encoding="utf-8") == "# mine\n"

    rc, out, _ = run("init", str(target), "--force", "--json", config=False)
    assert rc == 0
    assert json.loads(out) == {
        "config": str(target / "clearance.toml"),
        "data": str(target / "data"),
    }
    assert (target / "clearance.toml").read_text(encoding="utf-8") == text


def test_init_then_status_works_from_the_written_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run(capsys, tmp_path / "clearance.toml")
    assert run("init", str(tmp_path), config=False)[0] == 0

    rc, data = run.json("status")

    assert rc == 0
    assert data["index"] == str(tmp_path / "data" / "clearance.db")
    assert data["documents"] == 0


# --------------------------------------------------------------------------- ingest


def test_ingest_prints_a_summary(run: Run, project: Path) -> None:
    rc, out, err = run("ingest", str(project / "docs"))

    assert (rc, err) == (0, "")
    assert "ingest summary" in out
    assert "added" in out
    assert "3 chunks written in this run" in out


def test_ingest_json_has_stable_keys(run: Run, project: Path) -> None:
    rc, data = run.json("ingest", str(project / "docs"))

    assert rc == 0
    assert list(data) == ["ok", "counts", "chunks", "results", "warnings"]
    assert data["ok"] is True
    assert data["counts"] == {"added": 2}
    assert data["chunks"] == 3
    assert [r["source"] for r in data["results"]] == ["menu.txt", "travel.md"]
    assert data["results"][1] == {
        "source": "travel.md",
        "status": "added",
        "doc_id": "files:travel.md",
        "chunks": 2,
        "error": None,
        "warnings": [],
    }
    rc, again = run.json("ingest", str(project / "docs"))
    assert (rc, again["counts"]) == (0, {"unchanged": 2})


def test_ingest_exits_1_when_a_file_failed_but_keeps_the_rest(run: Run, project: Path) -> None:
    (project / "docs" / "broken.pdf").write_bytes(b"not a pdf at all")
    (project / "orphans").mkdir()
    (project / "orphans" / "o.md").write_text("No ACL here.", encoding="utf-8")

    rc, out, _ = run("ingest", str(project / "docs"), str(project / "orphans" / "o.md"))
    assert rc == 1
    # The line names the file once, though the loader's error names it too (as --json has it).
    assert "failed broken.pdf: corrupt or unreadable PDF file" in out
    assert "warning o.md: no ACL: the document is visible to nobody" in out

    rc, data = run.json("ingest", str(project / "docs"))
    assert rc == 1
    assert data["ok"] is False
    assert data["counts"] == {"failed": 1, "unchanged": 2}
    failed = [r for r in data["results"] if r["status"] == "failed"]
    assert [(r["source"], r["doc_id"]) for r in failed] == [("broken.pdf", None)]
    assert "corrupt or unreadable PDF" in failed[0]["error"]


def test_a_bad_manifest_line_is_named_once(run: Run, project: Path) -> None:
    manifest = project / "lists" / "m.jsonl"
    manifest.parent.mkdir()
    manifest.write_text(
        '{"text": "Leave policy.", "doc_id": "hr:1", "acl": ["everyone"], "acl": []}\n',
        encoding="utf-8",
    )

    rc, out, _ = run("ingest", "--manifest", str(manifest))

    assert rc != 0
    assert "failed m.jsonl:1: key 'acl' appears twice in one object" in " ".join(out.split())
    rc, data = run.json("ingest", "--manifest", str(manifest))
    assert data["results"][0]["error"].endswith("m.jsonl:1: key 'acl' appears twice in one object")


@pytest.mark.parametrize("command", ["ask", "search"])
@pytest.mark.parametrize("blank", ["", "  \t"])
def test_an_empty_question_or_query_argument_is_a_usage_error(
    ingested: Run, command: str, blank: str
) -> None:
    rc, out, err = ingested(command, blank, "--user", "alice")

    assert (rc, out) == (2, "")
    assert_one_line_error(err, f"{'QUESTION' if command == 'ask' else 'QUERY'} is empty")


def test_ingest_without_paths_is_a_usage_error(run: Run) -> None:
    rc, out, err = run("ingest")

    assert (rc, out) == (2, "")
    assert_one_line_error(err, "give at least one PATH or --manifest")


# --------------------------------------------------------------------------- remove and docs


def test_remove(ingested: Run) -> None:
    rc, out, err = ingested("remove", "files:menu.txt")
    assert (rc, out, err) == (0, "removed files:menu.txt\n", "")

    rc, out, err = ingested("remove", "files:menu.txt")
    assert (rc, out) == (3, "")
    assert_one_line_error(err, "no document 'files:menu.txt' in the index")

    rc, data = ingested.json("remove", "files:travel.md")
    assert (rc, data) == (0, {"removed": "files:travel.md"})

    rc, data = ingested.json("remove", "files:travel.md")
    assert rc == 3
    assert data == {"error": "not_found", "message": "no document 'files:travel.md' in the index"}


def test_docs_list(ingested: Run) -> None:
    rc, out, err = ingested("docs", "list")
    assert (rc, err) == (0, "")
    assert "files:travel.md" in out and "Travel policy" in out
    assert out.rstrip().endswith("2 documents")

    rc, data = ingested.json("docs", "list")
    assert rc == 0
    assert [d["doc_id"] for d in data] == ["files:menu.txt", "files:travel.md"]
    assert data[1]["acl"] == ["group:staff"]
    assert data[1]["sensitivity"] == "INTERNAL"
    assert set(data[1]) == {
        "doc_id",
        "title",
        "corpus",
        "source_system",
        "uri",
        "owner",
        "acl",
        "sensitivity",
        "created_at",
        "updated_at",
        "review_at",
        "expires_at",
        "ai_allowed",
        "personal_data",
        "origin",
        "origin_chain",
        "content_hash",
        "version",
        "format",
    }
    rc, data = ingested.json("docs", "list", "--corpus", "elsewhere")
    assert (rc, data) == (0, [])


def test_docs_show(ingested: Run) -> None:
    rc, out, _ = ingested("docs", "show", "files:travel.md", "--chunks")
    assert rc == 0
    assert "title: Travel policy" in out
    assert "files:travel.md#1  section=Travel policy > Limits" in out
    assert "Hotels up to 200 EUR." in out

    rc, data = ingested.json("docs", "show", "files:travel.md")
    assert rc == 0
    assert data["doc_id"] == "files:travel.md"
    assert data["chunks"] == [
        {
            "chunk_id": "files:travel.md#0",
            "locator": "section=Travel policy",
            "sensitivity": "INTERNAL",
        },
        {
            "chunk_id": "files:travel.md#1",
            "locator": "section=Travel policy > Limits",
            "sensitivity": "INTERNAL",
        },
    ]

    rc, out, err = ingested("docs", "show", "files:nope")
    assert rc == 3
    assert_one_line_error(err, "no document 'files:nope' in the index")


# --------------------------------------------------------------------------- search and status


def test_search_as_a_user(ingested: Run) -> None:
    rc, out, err = ingested("search", "hotels in Tokyo", "--user", "ann")
    assert (rc, err) == (0, "")
    assert out.startswith("1. Travel policy  files:travel.md  section=Travel policy")

    rc, data = ingested.json("search", "ramen", "--user", "ann", "-k", "1")
    assert rc == 0
    assert list(data) == ["user", "query", "refused", "results"]
    assert (data["user"], data["query"], data["refused"]) == ("ann", "ramen", None)
    assert len(data["results"]) == 1
    row = data["results"][0]
    assert list(row) == [
        "rank",
        "doc_id",
        "title",
        "locator",
        "uri",
        "corpus",
        "sensitivity",
        "score",
        "lexical_rank",
        "vector_rank",
        "text",
    ]
    assert (row["rank"], row["doc_id"], row["lexical_rank"], row["vector_rank"]) == (
        1,
        "files:menu.txt",
        1,
        None,
    )
    assert row["score"] == round(1 / 61, 6)


def test_search_refusals(ingested: Run) -> None:
    rc, out, _ = ingested("search", "ramen", "--user", "mallory")
    assert (rc, out) == (0, "no results (unknown_user)\n")

    rc, data = ingested.json("search", "ramen", "--user", "mallory")
    assert (data["refused"], data["results"]) == ("unknown_user", [])

    rc, out, err = ingested("search", "ramen", "--user", "ann", "--assistant", "nope")
    assert (rc, out) == (3, "")
    assert_one_line_error(err, "unknown assistant 'nope' (configured: none)")


def test_status(ingested: Run, project: Path) -> None:
    rc, out, err = ingested("status")
    assert (rc, err) == (0, "")
    assert "2 documents, 3 chunks, 0 vectors" in out
    assert "directory v1: 1 users, 1 groups" in out

    rc, data = ingested.json("status")
    assert rc == 0
    assert list(data) == [
        "index",
        "documents",
        "chunks",
        "vectors",
        "size_bytes",
        "by_sensitivity",
        "directory",
        "corpora",
        "sources",
        "embedding",
    ]
    assert data["sources"] == []  # none configured
    assert data["embedding"]["device"] == "cpu"
    assert data["embedding"]["running_on"] is None  # status never loads the model
    assert data["index"] == str(project / "data" / "index.db")
    assert (data["documents"], data["chunks"], data["vectors"]) == (2, 3, 0)
    assert data["by_sensitivity"] == {"INTERNAL": 2}
    assert data["directory"] == {"version": 1, "users": 1, "groups": 1, "failing_closed": None}
    [corpus] = data["corpora"]
    assert corpus["corpus"] == "default"
    assert corpus["documents"] == 2
    assert corpus["failing_closed"] is False
    assert corpus["revocation_sla_seconds"] == 86400.0


# --------------------------------------------------------------------------- errors


def test_a_config_error_is_one_line_with_exit_2(run: Run, project: Path) -> None:
    (project / "clearance.toml").write_text('[corpora.hr]\nrevocation_sla = "soon"\n')

    rc, out, err = run("status")

    assert (rc, out) == (2, "")
    assert_one_line_error(err, "corpora.hr.revocation_sla: expected a duration")

    rc, data = run.json("status")
    assert rc == 2
    assert data["error"] == "config_error"
    assert data["message"].startswith(f"{project / 'clearance.toml'}:2: corpora.hr.revocation_sla:")


def test_a_missing_config_is_exit_2_and_names_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = Run(capsys, tmp_path / "unused")

    rc, _, err = run("status", config=False)

    assert rc == 2
    assert_one_line_error(err, f"no configuration at {tmp_path / 'clearance.toml'}")


def test_clearance_home_is_used_when_no_config_is_given(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    monkeypatch.setenv("CLEARANCE_HOME", str(project))
    run = Run(capsys, project / "unused")

    rc, out, _ = run("status", "--json", config=False)

    assert rc == 0
    assert json.loads(out)["index"] == str(project / "data" / "index.db")


def test_a_bad_directory_file_is_one_line_with_exit_2(run: Run, project: Path) -> None:
    (project / "directory.json").write_text("{not json", encoding="utf-8")

    rc, _, err = run("directory", "sync", str(project / "directory.json"))

    assert rc == 2
    assert_one_line_error(err, "directory.json: $: not valid JSON")
    assert err.startswith("error: directory.json: ")


def test_usage_errors_and_version(run: Run) -> None:
    rc, _, err = run("search", "x")
    assert rc == 2
    assert_one_line_error(err, "Missing option '--user'")

    rc, _, err = run("frobnicate")
    assert rc == 2
    assert_one_line_error(err, "No such command 'frobnicate'")

    rc, out, _ = run("--version", config=False)
    assert (rc, out) == (0, f"clearance, version {__version__}\n")


def test_the_installed_console_script_runs(project: Path) -> None:
    script = Path(sys.executable).parent / "clearance"
    assert script.exists()

    done = subprocess.run(
        [
            str(script),
            "--config",
            str(project / "clearance.toml"),
            "ingest",
            str(project / "docs"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"] == {"added": 2}
    assert (project / "data" / "index.db").is_file()
