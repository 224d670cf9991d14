"""Metadata from folders, sidecars and manifests: precedence, validation, errors that name
the key and the file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.config import Settings
from clearance.errors import MetadataError
from clearance.ingest.metadata import (
    KEYS,
    folder_metadata,
    parse_metadata,
    read_manifest,
    sidecar_metadata,
    sidecar_path,
)
from clearance.model import Sensitivity
from clearance.store.sqlite import SQLiteStore


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_manifest(path: Path, *lines: object) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n",
        encoding="utf-8",
    )
    return path


# --------------------------------------------------------------------------- precedence


def test_nearer_folder_overrides_farther(tmp_path: Path) -> None:
    write_json(tmp_path / "_meta.json", {"corpus": "ops", "owner": "root", "acl": ["everyone"]})
    write_json(tmp_path / "a" / "_meta.json", {"owner": "middle", "title": "A"})
    write_json(tmp_path / "a" / "b" / "_meta.json", {"owner": "near"})

    meta = folder_metadata(tmp_path / "a" / "b", tmp_path)

    assert meta == {
        "corpus": "ops",
        "owner": "near",
        "title": "A",
        "acl": frozenset({"everyone"}),
    }
    assert folder_metadata(tmp_path / "a", tmp_path)["owner"] == "middle"
    assert folder_metadata(tmp_path, tmp_path)["owner"] == "root"


def test_folder_cache_is_filled_and_used(tmp_path: Path) -> None:
    write_json(tmp_path / "_meta.json", {"owner": "root"})
    cache: dict[Path, dict[str, Any]] = {}

    assert folder_metadata(tmp_path / "x", tmp_path, cache)["owner"] == "root"
    assert cache[tmp_path.resolve()] == {"owner": "root"}
    cache[tmp_path.resolve()] = {"owner": "cached"}
    assert folder_metadata(tmp_path / "x", tmp_path, cache)["owner"] == "cached"


def test_sidecar_is_read_next_to_the_file(tmp_path: Path) -> None:
    doc = tmp_path / "report.pdf"
    assert sidecar_path(doc) == tmp_path / "report.pdf.meta.json"
    assert sidecar_metadata(doc) == {}
    write_json(sidecar_path(doc), {"title": "Report", "sensitivity": "confidential"})

    assert sidecar_metadata(doc) == {"title": "Report", "sensitivity": Sensitivity.CONFIDENTIAL}


def test_folder_then_sidecar_then_manifest_for_one_document(
    tmp_path: Path, settings: Settings, store: SQLiteStore
) -> None:
    docs = tmp_path / "docs"
    write_json(
        docs / "_meta.json",
        {"corpus": "ops", "owner": "far", "title": "T-far", "uri": "u-far", "acl": ["everyone"]},
    )
    write_json(docs / "team" / "_meta.json", {"owner": "near", "title": "T-near", "uri": "u-near"})
    file = docs / "team" / "plan.md"
    file.write_text("# Plan\n\nShip the thing.\n", encoding="utf-8")
    write_json(sidecar_path(file), {"title": "T-sidecar", "uri": "u-sidecar"})
    manifest = write_manifest(
        docs / "manifest.jsonl", {"path": "team/plan.md", "uri": "u-manifest"}
    )

    report = Clearance(settings, store, embedder=None).ingest([], manifest=manifest)

    assert [r.status for r in report.results] == ["added"]
    doc = store.get_document("files:team/plan.md")
    assert doc is not None
    assert doc.corpus == "ops"  # farthest folder only
    assert doc.acl == frozenset({"everyone"})  # farthest folder only
    assert doc.owner == "near"  # nearer folder beats farther
    assert doc.title == "T-sidecar"  # sidecar beats folders
    assert doc.uri == "u-manifest"  # manifest beats sidecar

    # the same file walked as a folder (no manifest) gets the sidecar's uri
    store.delete(doc.doc_id)
    Clearance(settings, store, embedder=None).ingest([docs])
    walked = store.get_document("files:team/plan.md")
    assert walked is not None and walked.uri == "u-sidecar"


# --------------------------------------------------------------------------- validation


def test_every_key_is_parsed_to_its_type() -> None:
    raw = {
        "doc_id": " sharepoint:42 ",
        "title": "Budget",
        "uri": "https://x/42",
        "source_system": "sharepoint",
        "corpus": "finance",
        "owner": "alice",
        "acl": ["user:alice", "group:finance", "everyone", "user:alice"],
        "sensitivity": "restricted",
        "created_at": "2024-04-01",
        "updated_at": "2024-04-01T09:00:00+09:00",
        "review_at": "2025-01-01T00:00:00Z",
        "expires_at": "2030-12-31T23:59:59",
        "ai_allowed": False,
        "personal_data": True,
        "origin": "email",
        "origin_chain": ["email", " human "],
    }

    meta = parse_metadata(raw, "m.json")

    assert meta == {
        "doc_id": "sharepoint:42",
        "title": "Budget",
        "uri": "https://x/42",
        "source_system": "sharepoint",
        "corpus": "finance",
        "owner": "alice",
        "acl": frozenset({"user:alice", "group:finance", "everyone"}),
        "sensitivity": Sensitivity.RESTRICTED,
        "created_at": datetime(2024, 4, 1, tzinfo=UTC),  # naive dates are UTC
        "updated_at": datetime(2024, 4, 1, 0, 0, tzinfo=UTC),  # offsets converted
        "review_at": datetime(2025, 1, 1, tzinfo=UTC),
        "expires_at": datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC),
        "ai_allowed": False,
        "personal_data": True,
        "origin": "email",
        "origin_chain": ("email", "human"),
    }
    assert all(v.tzinfo is UTC for k, v in meta.items() if k.endswith("_at"))


VALID: dict[str, object] = {
    "path": "a.md",
    "text": "body",
    "doc_id": "files:a",
    "title": "t",
    "uri": "u",
    "source_system": "files",
    "corpus": "c",
    "owner": "o",
    "acl": ["everyone"],
    "sensitivity": "PUBLIC",
    "created_at": "2024-01-01",
    "updated_at": "2024-01-01",
    "review_at": "2024-01-01",
    "expires_at": "2024-01-01",
    "ai_allowed": True,
    "personal_data": False,
    "origin": "human",
    "origin_chain": ["human"],
    "deleted": False,
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_documented_key_is_parsed_not_dropped(key: str) -> None:
    """A key listed in KEYS but handled by no branch would be silently ignored."""
    assert key in parse_metadata({key: VALID[key]}, "m.jsonl:1")


def test_empty_acl_is_kept_as_nobody() -> None:
    assert parse_metadata({"acl": []}, "m.json") == {"acl": frozenset()}


def test_a_misspelt_key_names_only_a_key_allowed_where_it_stands() -> None:
    with pytest.raises(MetadataError) as allowed:
        parse_metadata({"pth": "a.md"}, "m.jsonl:1")
    assert allowed.value.message == "m.jsonl:1: unknown key 'pth'; did you mean 'path'?"
    # a sidecar may not name a path: it is not suggested there
    with pytest.raises(MetadataError) as sidecar:
        parse_metadata({"pth": "a.md"}, "a.md.meta.json", forbidden=frozenset({"path"}))
    assert sidecar.value.message == "a.md.meta.json: unknown key 'pth'"


def test_inline_text_is_kept_verbatim() -> None:
    assert parse_metadata({"text": "  indented\n"}, "m")["text"] == "  indented\n"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"acls": ["everyone"]},
            r"^/d/doc\.md\.meta\.json: unknown key 'acls'; did you mean 'acl'\?$",
        ),
        ({"Title": "x"}, r"unknown key 'Title'"),
        ({"created_at": "yesterday"}, r"key 'created_at': not an ISO 8601 date: 'yesterday'"),
        ({"expires_at": 20240101}, r"key 'expires_at': expected an ISO 8601 string"),
        ({"review_at": "2024-13-01"}, r"key 'review_at': not an ISO 8601 date"),
        ({"sensitivity": "SECRET"}, r"key 'sensitivity': bad sensitivity 'SECRET'"),
        ({"sensitivity": 3}, r"key 'sensitivity': bad sensitivity 3"),
        ({"acl": ["bob"]}, r"key 'acl': bad principal 'bob'"),
        ({"acl": ["user:"]}, r"key 'acl': bad principal 'user:'"),
        ({"acl": ["user:bob smith"]}, r"key 'acl': bad principal 'user:bob smith'"),
        ({"acl": ["role:admin"]}, r"key 'acl': bad principal 'role:admin'"),
        ({"acl": [7]}, r"key 'acl': principal must be a string"),
        ({"acl": "everyone"}, r"key 'acl': expected a list of principals"),
        ({"ai_allowed": "false"}, r"key 'ai_allowed': expected true or false"),
        ({"personal_data": 1}, r"key 'personal_data': expected true or false"),
        ({"title": ""}, r"key 'title': expected a non-empty string"),
        ({"owner": 5}, r"key 'owner': expected a non-empty string"),
        ({"origin_chain": "email"}, r"key 'origin_chain': expected a list of origin names"),
        ({"origin_chain": ["email", ""]}, r"key 'origin_chain': expected a list"),
        ({"doc_id": "no-colon"}, r"key 'doc_id' must look like 'source_system:native_id'"),
    ],
)
def test_a_bad_value_names_the_key_and_the_file(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(MetadataError, match=message) as info:
        parse_metadata(raw, "/d/doc.md.meta.json")
    assert info.value.message.startswith("/d/doc.md.meta.json: ")
    assert info.value.exit_code == 2


def test_metadata_must_be_an_object() -> None:
    with pytest.raises(MetadataError, match=r"^m\.json: expected a JSON object$"):
        parse_metadata(["acl"], "m.json")


@pytest.mark.parametrize("key", ["path", "text", "doc_id", "deleted"])
def test_folder_files_refuse_per_document_keys(tmp_path: Path, key: str) -> None:
    value: object = True if key == "deleted" else "files:x" if key == "doc_id" else "x"
    meta = write_json(tmp_path / "_meta.json", {key: value})

    with pytest.raises(MetadataError, match=f"key '{key}' is not allowed here") as info:
        folder_metadata(tmp_path, tmp_path)
    assert str(meta) in info.value.message


@pytest.mark.parametrize("key", ["path", "text", "deleted"])
def test_sidecars_refuse_manifest_only_keys(tmp_path: Path, key: str) -> None:
    value: object = True if key == "deleted" else "x"
    side = write_json(tmp_path / "a.md.meta.json", {key: value})

    with pytest.raises(MetadataError, match=f"key '{key}' is not allowed here") as info:
        sidecar_metadata(tmp_path / "a.md")
    assert str(side) in info.value.message


def test_a_sidecar_may_set_the_doc_id(tmp_path: Path) -> None:
    write_json(tmp_path / "a.md.meta.json", {"doc_id": "wiki:page-7"})
    assert sidecar_metadata(tmp_path / "a.md") == {"doc_id": "wiki:page-7"}


def test_invalid_json_in_a_folder_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "_meta.json").write_text("{acl: everyone}", encoding="utf-8")
    with pytest.raises(MetadataError, match=r"_meta\.json: not valid JSON"):
        folder_metadata(tmp_path, tmp_path)


# --------------------------------------------------------------------------- manifests


def test_manifest_entries_resolve_paths_against_the_manifest(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path / "m.jsonl",
        {"path": "docs/a.md", "acl": ["everyone"]},
        "",
        {"text": "Inline policy text", "doc_id": "hr:policy-1", "title": "Policy"},
        {"doc_id": "files:old.md", "deleted": True},
        {"path": "gone.txt", "deleted": True},
    )

    entries = list(read_manifest(manifest))

    assert [(e.line, e.path) for e in entries] == [
        (1, tmp_path / "docs" / "a.md"),
        (3, None),
        (4, None),
        (5, tmp_path / "gone.txt"),
    ]
    assert entries[0].metadata == {"path": "docs/a.md", "acl": frozenset({"everyone"})}
    assert entries[1].metadata["text"] == "Inline policy text"
    assert entries[2].metadata == {"doc_id": "files:old.md", "deleted": True}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"acl": ["everyone"]}], r"m\.jsonl:1: give exactly one of 'path' or 'text'"),
        ([{"path": "a.md", "text": "x", "doc_id": "x:1"}], r":1: give exactly one of 'path'"),
        ([{"text": "no id"}], r"m\.jsonl:1: an inline 'text' document needs a 'doc_id'"),
        ([{"deleted": True}], r"m\.jsonl:1: a deleted entry needs a 'doc_id' or 'path'"),
        ([{"path": "a.md"}, "{not json"], r"m\.jsonl:2: not valid JSON"),
        (
            ['{"path": "a.md", "acl": ["user:bob"], "acl": ["everyone"]}'],
            r"m\.jsonl:1: key 'acl' appears twice",
        ),
        (
            ['{"path": "a.md", "title": ' + "[" * 5000 + "]" * 5000 + "}"],
            r"m\.jsonl:1: not valid JSON: nested too deeply",
        ),
        (
            [{"path": "a.md", "review_at": "9999-12-31T23:59:59-14:00"}],
            r"m\.jsonl:1: key 'review_at': date out of range",
        ),
        ([{"path": "a.md", "colour": "red"}], r"m\.jsonl:1: unknown key 'colour'"),
        ([{"path": "a.md", "updated_at": "31/12/2024"}], r"m\.jsonl:1: key 'updated_at': not"),
        (['["path", "a.md"]'], r"m\.jsonl:1: expected a JSON object"),
    ],
)
def test_bad_manifest_lines_name_file_and_line(
    tmp_path: Path, lines: list[object], message: str
) -> None:
    """A bad line is reported as that line's error; the lines around it still parse."""
    manifest = write_manifest(tmp_path / "m.jsonl", *lines, {"path": "good.md"})

    entries = list(read_manifest(manifest))

    bad = [e for e in entries if e.error is not None]
    assert len(bad) == 1
    assert re.search(message, bad[0].error or "")
    assert "\n" not in (bad[0].error or "")
    assert entries[-1].error is None
    assert entries[-1].metadata["path"] == "good.md"


def test_manifest_paths_are_normalised(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path / "m.jsonl", {"path": "./docs/../docs/one.md"}, {"path": "../outside.md"}
    )

    first, second = read_manifest(manifest)

    assert (first.path, first.metadata["path"]) == (tmp_path / "docs" / "one.md", "docs/one.md")
    assert second.path == tmp_path.parent / "outside.md"
    assert second.metadata["path"] == str(tmp_path.parent / "outside.md")


def test_an_unreadable_manifest_is_a_metadata_error(tmp_path: Path) -> None:
    with pytest.raises(MetadataError, match=r"missing\.jsonl: cannot read"):
        list(read_manifest(tmp_path / "missing.jsonl"))
