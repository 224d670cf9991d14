"""Ways content could reach the wrong people through ingestion, each reproduced as an
outside review found it, each with a reverse proof: the same assertion run against the old,
leaky behaviour must fail.

1. classifier patterns that silently matched nothing;
2. a ``_meta.json`` above the ingested folder;
3. file symlinks followed out of the ingested folder;
4. manifest paths escaping the manifest's folder;
5. a partial ingest reviving a stale corpus;
6. an unconfigured corpus name bypassing the configured one;
7. duplicates (paths, doc ids, repeated JSON keys) widening access.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance import jsonio
from clearance.app import Clearance
from clearance.ingest import classify, metadata, pipeline
from clearance.ingest.pipeline import IngestReport
from clearance.model import Sensitivity
from clearance.store.sqlite import SQLiteStore
from conftest import SettingsFactory

# --------------------------------------------------------------------------- helpers


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


def write_json(path: Path, data: object) -> Path:
    return write(path, json.dumps(data))


def manifest(path: Path, *lines: object) -> Path:
    return write(
        path, "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)
    )


def statuses(report: IngestReport) -> dict[str, str]:
    return {r.source: r.status for r in report.results}


def errors(report: IngestReport) -> dict[str, str]:
    return {r.source: r.error or "" for r in report.results if r.error}


def all_text(store: SQLiteStore) -> str:
    return "\n".join(c.text for d in store.list_documents() for c in store.get_chunks(d.doc_id))


@pytest.fixture
def app_for(settings_factory: SettingsFactory, store: SQLiteStore) -> Callable[..., Clearance]:
    def make(data: dict[str, Any] | None = None, **kwargs: Any) -> Clearance:
        return Clearance(settings_factory(data), store, embedder=None, **kwargs)

    return make


def reverse_proof(check: Callable[[], None]) -> None:
    """``check`` must fail under the leaky variant the caller has patched in."""
    with pytest.raises(AssertionError):
        check()


# --------------------------------------------------------------------------- 1 classifier


BOARD = "Board minutes: the board approved the Globex settlement of 4.2 million."


@pytest.fixture
def board_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    write_json(docs / "_meta.json", {"acl": ["everyone"]})
    write(docs / "2024_Board_Minutes.md", BOARD)
    write(docs / "board_minutes" / "march.md", "March: the board met.")
    write(docs / "falcon.md", "Status of Project  Falcon: on track.")
    write(docs / "menu.md", "Cafeteria menu: soup.")
    return docs


def classified(app: Clearance, docs: Path) -> dict[str, Sensitivity]:
    report = app.ingest([docs])
    assert report.failed == []
    return {d.doc_id: d.sensitivity for d in app.store.list_documents()}


def check_substring_patterns(app: Clearance, docs: Path) -> None:
    labels = classified(app, docs)
    assert labels["files:2024_Board_Minutes.md"] is Sensitivity.RESTRICTED
    assert labels["files:board_minutes/march.md"] is Sensitivity.RESTRICTED  # a folder name
    assert labels["files:menu.md"] is Sensitivity.INTERNAL


SUBSTRING_RULES = {"sensitivity": {"restricted_filename_patterns": ["board_minutes"]}}


def test_1_a_pattern_without_glob_characters_is_a_case_insensitive_path_substring(
    app_for: Callable[..., Clearance], board_folder: Path
) -> None:
    check_substring_patterns(app_for(SUBSTRING_RULES), board_folder)


def test_1_reverse_proof_glob_only_patterns_are_caught(
    app_for: Callable[..., Clearance], board_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def glob_only(raw: str, *, anywhere: bool) -> classify.Pattern:
        folded = classify._fold(raw)
        return classify.Pattern(raw, None, re.compile(fnmatch.translate(folded)))

    monkeypatch.setattr(classify.Pattern, "compile", staticmethod(glob_only))
    reverse_proof(lambda: check_substring_patterns(app_for(SUBSTRING_RULES), board_folder))


def test_1_glob_patterns_keep_glob_semantics_and_keywords_follow_the_same_rule(
    app_for: Callable[..., Clearance], board_folder: Path
) -> None:
    app = app_for(
        {
            "sensitivity": {
                "restricted_filename_patterns": ["*_board_*.md"],
                "restricted_keywords": ["project*falcon", "GLOBEX SETTLEMENT"],
            }
        }
    )
    labels = classified(app, board_folder)
    assert labels["files:2024_Board_Minutes.md"] is Sensitivity.RESTRICTED
    assert labels["files:falcon.md"] is Sensitivity.RESTRICTED  # keyword glob, anywhere
    assert labels["files:board_minutes/march.md"] is Sensitivity.INTERNAL  # glob: no match
    assert labels["files:menu.md"] is Sensitivity.INTERNAL


def test_1_every_pattern_that_matched_no_file_is_reported(
    app_for: Callable[..., Clearance], board_folder: Path
) -> None:
    app = app_for(
        {
            "sensitivity": {
                "restricted_filename_patterns": ["board_minutes", "salaries-*.xlsx"],
                "restricted_keywords": ["attorney-client privileged", "settlement"],
            }
        }
    )
    report = app.ingest([board_folder])

    assert [w for w in report.warnings if w.startswith("[sensitivity]")] == [
        "[sensitivity] restricted_filename_patterns entry 'salaries-*.xlsx' matched no file "
        "in this run",
        "[sensitivity] restricted_keywords entry 'attorney-client privileged' matched no "
        "document in this run",
    ]
    assert report.to_dict()["warnings"] == report.warnings


# --------------------------------------------------------------------------- 2 ancestors


def check_ancestor_meta_ignored(app: Clearance, tmp_path: Path) -> None:
    write_json(tmp_path / "_meta.json", {"acl": ["everyone"]})
    write(tmp_path / "srv" / "docs" / "c" / "hr-case.md", "Investigation notes.")
    app.ingest([tmp_path / "srv" / "docs" / "c"])
    doc = app.store.get_document("files:hr-case.md")
    assert doc is not None
    assert doc.acl == frozenset()  # visible to nobody, not to everyone


def test_2_a_meta_json_above_the_ingested_folder_is_never_read(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    check_ancestor_meta_ignored(app_for(), tmp_path)


def test_2_reverse_proof_merging_up_to_the_filesystem_root_is_caught(
    app_for: Callable[..., Clearance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = metadata.folder_metadata

    def up_to_slash(directory: Path, root: Path, cache: Any = None) -> dict[str, Any]:
        return real(directory, Path(directory.anchor), cache)

    monkeypatch.setattr(pipeline, "folder_metadata", up_to_slash)
    reverse_proof(lambda: check_ancestor_meta_ignored(app_for(), tmp_path))


def test_2_a_configured_root_bounds_inheritance_from_above(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write_json(tmp_path / "_meta.json", {"acl": ["everyone"]})
    write_json(tmp_path / "srv" / "_meta.json", {"acl": ["group:staff"]})
    write(tmp_path / "srv" / "docs" / "c" / "a.md", "Alpha.")
    app = app_for({"ingest": {"roots": [str(tmp_path / "srv")]}})

    app.ingest([tmp_path / "srv" / "docs" / "c"])

    doc = app.store.get_document("files:a.md")
    assert doc is not None and doc.acl == frozenset({"group:staff"})


def test_2_a_path_outside_the_configured_roots_is_refused(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write(tmp_path / "elsewhere" / "a.md", "Alpha.")
    app = app_for({"ingest": {"roots": [str(tmp_path / "srv")]}})

    report = app.ingest([tmp_path / "elsewhere"])

    assert [r.status for r in report.results] == ["failed"]
    assert "outside the configured [ingest] roots" in (report.results[0].error or "")
    assert app.store.list_documents() == []


# --------------------------------------------------------------------------- 3 symlinks

SECRET = "root:x:0:0:secret-line"


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """docs/ with a file link leaving the folder, a link inside it and a folder link."""
    outside = write(tmp_path / "etc" / "passwd.txt", SECRET)
    docs = tmp_path / "docs"
    write_json(docs / "_meta.json", {"acl": ["everyone"]})
    write(docs / "real.txt", "A real document.")
    (docs / "passwd.txt").symlink_to(outside)
    (docs / "alias.txt").symlink_to(docs / "real.txt")
    (docs / "etc").symlink_to(tmp_path / "etc", target_is_directory=True)
    return docs


def check_no_link_leaves_the_root(app: Clearance, docs: Path) -> IngestReport:
    report = app.ingest([docs])
    assert SECRET not in all_text(app.store)
    assert app.store.get_document("files:passwd.txt") is None
    assert statuses(report)["passwd.txt"] == "skipped"
    assert "symbolic link" in errors(report)["passwd.txt"]
    return report


def test_3_symlinks_are_not_followed_by_default_and_each_is_reported(
    app_for: Callable[..., Clearance], linked: Path
) -> None:
    report = check_no_link_leaves_the_root(app_for(), linked)

    assert statuses(report) == {
        "alias.txt": "skipped",
        "etc": "skipped",
        "passwd.txt": "skipped",
        "real.txt": "added",
    }
    assert errors(report)["etc"] == "symbolic link to a folder, not followed"
    assert "follow_symlinks" in errors(report)["alias.txt"]


def test_3_opted_in_links_are_followed_only_inside_the_root(
    app_for: Callable[..., Clearance], linked: Path
) -> None:
    report = check_no_link_leaves_the_root(app_for({"ingest": {"follow_symlinks": True}}), linked)

    assert "outside the ingested root" in errors(report)["passwd.txt"]
    # alias.txt and real.txt are the same file: ambiguous, both refused, neither written
    assert statuses(report)["alias.txt"] == "failed"
    assert "the same file" in errors(report)["alias.txt"]


def test_3_reverse_proof_following_every_link_is_caught(
    app_for: Callable[..., Clearance], linked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def follow_all(self: pipeline.Ingestor, link: Path, roots: Any) -> tuple[Path, None]:
        return Path(os.path.realpath(link)), None

    monkeypatch.setattr(pipeline.Ingestor, "_follow", follow_all)
    reverse_proof(lambda: check_no_link_leaves_the_root(app_for(), linked))


def test_3_a_link_swapped_in_after_planning_is_refused_when_read(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    outside = write(tmp_path / "etc" / "passwd.txt", SECRET)
    docs = tmp_path / "docs"
    target = write(docs / "a.txt", "harmless")
    app = app_for()
    ingestor = pipeline.Ingestor(app.settings, app.store, None)
    jobs = ingestor.plan([docs])
    target.unlink()
    target.symlink_to(outside)

    report = ingestor.run(jobs)

    assert [r.status for r in report.results] == ["failed"]
    assert SECRET not in all_text(app.store)


# --------------------------------------------------------------------------- 4 manifests


@pytest.fixture
def escaping(tmp_path: Path) -> Path:
    write(tmp_path / "outside.txt", SECRET)
    write(tmp_path / "outside-too.txt", SECRET)
    write(tmp_path / "m" / "inside.txt", "Inside text.")
    return manifest(
        tmp_path / "m" / "manifest.jsonl",
        {"path": str(tmp_path / "outside-too.txt"), "acl": ["everyone"]},
        {"path": "../outside.txt", "acl": ["everyone"]},
        {"path": "inside.txt", "acl": ["everyone"]},
    )


def check_manifest_confined(app: Clearance, m: Path) -> IngestReport:
    report = app.ingest([], manifest=m)
    assert SECRET not in all_text(app.store)
    assert statuses(report) == {
        "manifest.jsonl:1": "failed",
        "manifest.jsonl:2": "failed",
        "manifest.jsonl:3": "added",
    }
    return report


def test_4_manifest_paths_outside_the_manifest_folder_are_refused(
    app_for: Callable[..., Clearance], escaping: Path
) -> None:
    report = check_manifest_confined(app_for(), escaping)

    for line in ("manifest.jsonl:1", "manifest.jsonl:2"):
        assert "is outside the manifest's folder; refused" in errors(report)[line]
    assert report.exit_code == 2


def test_4_reverse_proof_unconfined_manifest_paths_are_caught(
    app_for: Callable[..., Clearance], escaping: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def anywhere(self: pipeline.Ingestor, path: Path, roots: Any) -> tuple[Path, Path, None]:
        return path, Path(path.anchor), None

    monkeypatch.setattr(pipeline.Ingestor, "_confine", anywhere)
    reverse_proof(lambda: check_manifest_confined(app_for(), escaping))


def test_4_configured_roots_decide_what_a_manifest_may_read(
    app_for: Callable[..., Clearance], escaping: Path, tmp_path: Path
) -> None:
    app = app_for({"ingest": {"roots": [str(tmp_path)]}})

    report = app.ingest([], manifest=escaping)

    assert set(statuses(report).values()) == {"added"}


def test_4_a_manifest_path_through_a_symlink_is_refused(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write(tmp_path / "etc" / "passwd.txt", SECRET)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "etc").symlink_to(tmp_path / "etc", target_is_directory=True)
    m = manifest(tmp_path / "m" / "manifest.jsonl", {"path": "etc/passwd.txt", "acl": ["everyone"]})

    report = app_for().ingest([], manifest=m)

    assert statuses(report) == {"manifest.jsonl:1": "failed"}
    assert SECRET not in all_text(app_for().store)


def test_16_the_manifest_in_use_is_not_ingested_as_a_file(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write(tmp_path / "docs" / "a.md", "Alpha.")
    m = manifest(tmp_path / "docs" / "manifest.jsonl", {"path": "a.md", "acl": ["everyone"]})

    report = app_for().ingest([tmp_path / "docs"], manifest=m)

    assert statuses(report) == {"manifest.jsonl:1": "added"}


# --------------------------------------------------------------------------- 5 partial sync


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


HR = {"corpora": {"hr": {"revocation_sla": "5s"}}}


@pytest.fixture
def hr_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "hr"
    write_json(docs / "_meta.json", {"acl": ["user:maria"], "corpus": "hr"})
    write(docs / "policy.md", "Parental leave policy: sixteen weeks.")
    write(docs / "case.md", "Case notes about the leave dispute.")
    return docs


def maria_sees(app: Clearance) -> list[str]:
    write_directory(app)
    return sorted(h.document.doc_id for h in app.search("maria", "parental leave").hits)


def write_directory(app: Clearance) -> None:
    path = app.settings.root / "directory.json"
    write_json(path, {"users": [{"id": "maria", "active": True}], "groups": []})
    app.sync_directory(path)


def check_partial_ingest_keeps_the_corpus_stale(
    app_for: Callable[..., Clearance], hr_folder: Path, tmp_path: Path
) -> IngestReport:
    clock = Clock()
    app = app_for(HR, clock=clock)
    app.ingest([hr_folder])
    assert maria_sees(app) == ["files:case.md", "files:policy.md"]
    clock.now += timedelta(seconds=10)  # past the SLA: the corpus serves nobody
    assert maria_sees(app) == []

    new = tmp_path / "new"
    write_json(new / "_meta.json", {"acl": ["user:maria"], "corpus": "hr"})
    write(new / "note.md", "A new note about parental leave policy.")
    report = app.ingest([new])

    assert statuses(report) == {"note.md": "added"}
    assert maria_sees(app) == []  # still stale: policy.md and case.md were not re-read
    return report


def test_5_a_partial_ingest_does_not_revive_a_stale_corpus(
    app_for: Callable[..., Clearance], hr_folder: Path, tmp_path: Path
) -> None:
    report = check_partial_ingest_keeps_the_corpus_stale(app_for, hr_folder, tmp_path)

    assert [w for w in report.warnings if w.startswith("corpus ")] == [
        "corpus 'hr': permission sync time not advanced, because this run covered 1 of its "
        "3 documents (ingest its whole folder or manifest, or run 'clearance acl sync')"
    ]


def test_5_reverse_proof_advancing_on_any_write_is_caught(
    app_for: Callable[..., Clearance],
    hr_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(SQLiteStore, "list_documents", lambda self, corpus=None: [])
    reverse_proof(lambda: check_partial_ingest_keeps_the_corpus_stale(app_for, hr_folder, tmp_path))


def test_5_a_complete_ingest_of_the_corpus_revives_it(
    app_for: Callable[..., Clearance], hr_folder: Path
) -> None:
    clock = Clock()
    app = app_for(HR, clock=clock)
    app.ingest([hr_folder])
    clock.now += timedelta(seconds=10)
    assert maria_sees(app) == []

    report = app.ingest([hr_folder])  # every document of hr re-read: a complete sync

    assert set(statuses(report).values()) == {"unchanged"}
    assert report.warnings == []
    assert maria_sees(app) == ["files:case.md", "files:policy.md"]


def test_5_a_failed_file_keeps_its_corpus_from_advancing(
    app_for: Callable[..., Clearance], hr_folder: Path
) -> None:
    clock = Clock()
    app = app_for(HR, clock=clock)
    app.ingest([hr_folder])
    clock.now += timedelta(seconds=10)
    write(hr_folder / "case.md.meta.json", '{"acl": ["user:maria"], "acl": ["everyone"]}')

    report = app.ingest([hr_folder])

    assert statuses(report)["case.md"] == "failed"
    assert maria_sees(app) == []
    assert "because a file failed" in report.warnings[0]


# --------------------------------------------------------------------------- 6 corpora

STRICT_HR = {
    "ingest": {"allow_unconfigured_corpora": False},
    "corpora": {"hr": {"revocation_sla": "15m"}},
}


def check_near_miss_refused(app: Clearance, tmp_path: Path) -> IngestReport:
    m = manifest(
        tmp_path / "m.jsonl",
        {"text": "Salary review notes.", "doc_id": "hr:1", "corpus": "HR", "acl": ["everyone"]},
        {"text": "Offsite plan.", "doc_id": "fin:1", "corpus": "finance", "acl": ["everyone"]},
        {"text": "Leave policy.", "doc_id": "hr:2", "corpus": "hr", "acl": ["everyone"]},
    )
    report = app.ingest([], manifest=m)
    assert statuses(report)["m.jsonl:1"] == "failed"
    assert app.store.get_document("hr:1") is None
    assert statuses(report)["m.jsonl:3"] == "added"
    return report


def test_6_an_unconfigured_corpus_is_refused_and_a_near_miss_named(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    report = check_near_miss_refused(app_for(STRICT_HR), tmp_path)

    assert errors(report)["m.jsonl:1"] == (
        "corpus 'HR' is not configured; did you mean 'hr'? (corpus names are compared exactly)"
    )
    assert errors(report)["m.jsonl:2"].startswith(
        "corpus 'finance' is not configured (configured: 'hr'); add "
        "[corpora.finance] or set [ingest] allow_unconfigured_corpora = true"
    )
    assert report.exit_code == 2


def test_6_reverse_proof_accepting_any_corpus_name_is_caught(
    app_for: Callable[..., Clearance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline.Ingestor, "corpus_problem", lambda self, name: None)
    reverse_proof(lambda: check_near_miss_refused(app_for(STRICT_HR), tmp_path))


def test_6_the_opt_in_allows_new_corpora_but_never_a_near_miss(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    app = app_for({**STRICT_HR, "ingest": {"allow_unconfigured_corpora": True}})
    report = check_near_miss_refused(app, tmp_path)
    assert statuses(report)["m.jsonl:2"] == "added"


def test_6_the_corpus_option_is_checked_before_anything_is_read(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write(tmp_path / "docs" / "a.md", "Alpha.")
    with pytest.raises(Exception, match=r"--corpus: corpus ' hr' is not configured; did you"):
        app_for(STRICT_HR).ingest([tmp_path / "docs"], corpus=" hr")


# --------------------------------------------------------------------------- 7 duplicates


def check_duplicates_refused(app: Clearance, tmp_path: Path) -> IngestReport:
    write(tmp_path / "docs" / "one.md", "HR only: the salary bands.")
    write(tmp_path / "docs" / "two.md", "Two.")
    m = manifest(
        tmp_path / "m.jsonl",
        {"path": "docs/one.md", "acl": ["group:hr"]},
        {"path": "./docs/one.md", "acl": ["everyone"]},
        {"path": "docs/two.md", "acl": ["group:hr"]},
        {"text": "Two, again.", "doc_id": "files:docs/two.md", "acl": ["everyone"]},
    )
    report = app.ingest([], manifest=m)
    assert set(statuses(report).values()) == {"failed"}
    assert app.store.list_documents() == []
    return report


def test_7_duplicate_paths_and_doc_ids_are_refused_together(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    report = check_duplicates_refused(app_for(), tmp_path)

    assert errors(report)["m.jsonl:2"] == (
        "doc_id 'files:docs/one.md' also comes from m.jsonl:1; refused"
    )
    assert "also comes from m.jsonl:3" in errors(report)["m.jsonl:4"]


def test_7_reverse_proof_without_the_duplicate_check_is_caught(
    app_for: Callable[..., Clearance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "_refuse_duplicates", lambda jobs: jobs)
    reverse_proof(lambda: check_duplicates_refused(app_for(), tmp_path))


REPEATED = '{"acl": ["user:bob"], "acl": ["everyone"]}'


def check_repeated_keys_refused(app: Clearance, tmp_path: Path) -> IngestReport:
    docs = tmp_path / "docs"
    write(docs / "sub" / "_meta.json", REPEATED)
    write(docs / "sub" / "a.md", "Bob's review.")
    write(docs / "b.md", "Bob's salary.")
    write(docs / "b.md.meta.json", REPEATED)
    write(docs / "c.md", "Bob's plan.")
    write(docs / "c.md.meta.json", '{"acl": ["user:bob"]}')
    m = manifest(tmp_path / "m.jsonl", '{"text": "x", "doc_id": "a:1", ' + REPEATED[1:])
    report = app.ingest([docs], manifest=m)
    assert statuses(report) == {
        "b.md": "failed",
        "c.md": "added",
        "m.jsonl:1": "failed",
        "sub/a.md": "failed",
    }
    return report


def test_7_a_repeated_json_key_is_an_error_in_every_metadata_source(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    report = check_repeated_keys_refused(app_for(), tmp_path)
    for source in ("b.md", "m.jsonl:1", "sub/a.md"):
        assert "key 'acl' appears twice in one object" in errors(report)[source]


def test_7_reverse_proof_last_key_wins_is_caught(
    app_for: Callable[..., Clearance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonio, "loads", json.loads)
    reverse_proof(lambda: check_repeated_keys_refused(app_for(), tmp_path))


# --------------------------------------------------------------------------- sanity


def test_helpers_see_real_documents(app_for: Callable[..., Clearance], tmp_path: Path) -> None:
    """The checks above would pass vacuously if nothing were ever ingested."""
    write(tmp_path / "d" / "a.md", "Alpha text.")
    app = app_for()
    app.ingest([tmp_path / "d"])
    assert "Alpha text." in all_text(app.store)


# --------------------------------------------------------------------------- 14 unknown principals


def check_unknown_principals_reported(app: Clearance, tmp_path: Path) -> None:
    write_directory(app)
    docs = tmp_path / "typo"
    write_json(docs / "_meta.json", {"acl": ["group:employes", "user:maria", "everyone"]})
    write(docs / "a.md", "Alpha.")
    report = app.ingest([docs])
    assert report.results[0].warnings == ("group:employes is not in the directory",)


def test_14_ingest_reports_principals_the_directory_does_not_know(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    check_unknown_principals_reported(app_for(), tmp_path)


def test_14_reverse_proof_silence_about_unknown_principals_is_caught(
    app_for: Callable[..., Clearance], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.access.directory import Directory

    monkeypatch.setattr(Directory, "unknown_principals", lambda self, principals: [])
    reverse_proof(lambda: check_unknown_principals_reported(app_for(), tmp_path))


def test_14_before_any_directory_sync_nothing_is_reported(
    app_for: Callable[..., Clearance], tmp_path: Path
) -> None:
    write_json(tmp_path / "d" / "_meta.json", {"acl": ["group:employes"]})
    write(tmp_path / "d" / "a.md", "Alpha.")
    assert app_for().ingest([tmp_path / "d"]).results[0].warnings == ()
