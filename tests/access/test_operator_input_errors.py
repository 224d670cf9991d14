"""Bad ACL sync files and directory files: one line naming file, line and key; exit 2; no
traceback; nothing written (docs/access.md).

A sync file is an atomic snapshot or delta, so one bad record fails the whole file: for
permissions a half-applied file is worse than none. Covered here: keys repeated in one object
(never "last wins"), nesting too deep for the parser, numbers too large to convert, and an empty
directory snapshot, which would disable every account and is refused without ``--allow-empty``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.access.directory_file import SCIM_GROUP, SCIM_LIST_RESPONSE, SCIM_USER
from clearance.errors import DirectoryError

from .syncenv import DIRECTORY, SyncEnv, one_line_error, sync_env

DEEP = 100_000


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SyncEnv]:
    with sync_env(tmp_path) as env:
        yield env


# --------------------------------------------------------------------------- ACL sync files

BAD_ACL_LINES = {
    "repeated-acl": (
        '{"doc_id": "wiki:roadmap", "acl": ["user:bob"], "acl": ["everyone"]}',
        "wiki.jsonl:2: key 'acl' appears twice in one object",
    ),
    "repeated-doc-id": (
        '{"doc_id": "wiki:roadmap", "doc_id": "wiki:minutes", "acl": ["everyone"]}',
        "wiki.jsonl:2: key 'doc_id' appears twice in one object",
    ),
    "deep-nesting": (
        '{"doc_id": "wiki:roadmap", "acl": ' + "[" * DEEP + "]" * DEEP + "}",
        "wiki.jsonl:2: not valid JSON: nested too deeply",
    ),
    "huge-number": (
        '{"doc_id": "wiki:roadmap", "acl": [' + "9" * 5000 + "]}",
        "wiki.jsonl:2: not valid JSON",
    ),
    "nan": ('{"doc_id": "wiki:roadmap", "acl": [NaN]}', "wiki.jsonl:2: NaN is not valid JSON"),
    "nested-principal": (
        '{"doc_id": "wiki:roadmap", "acl": [["user:bob"]]}',
        "wiki.jsonl:2: acl[0]: principal must be a string, got list",
    ),
}


@pytest.mark.parametrize("delta", [False, True], ids=["snapshot", "delta"])
@pytest.mark.parametrize("kind", sorted(BAD_ACL_LINES))
def test_a_bad_acl_line_is_one_error_and_nothing_is_applied(
    env: SyncEnv, kind: str, delta: bool
) -> None:
    line, expected = BAD_ACL_LINES[kind]
    before = env.state()
    path = env.write_jsonl(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["user:bob"]},
            line,
            {"doc_id": "wiki:minutes", "acl": ["everyone"]},
        ],
    )

    error = one_line_error(
        *env.run("acl", "sync", path, "--corpus", "wiki", *(["--delta"] if delta else []))
    )

    assert expected in error
    assert len(error) < 300
    assert env.state() == before


def test_acl_json_error_shape(env: SyncEnv) -> None:
    path = env.write_jsonl("wiki.jsonl", [BAD_ACL_LINES["repeated-acl"][0]])

    rc, out, err = env.run("acl", "sync", path, "--corpus", "wiki", "--json")

    assert rc == 2
    assert json.loads(out) == {
        "error": "directory_error",
        "message": "wiki.jsonl:1: key 'acl' appears twice in one object",
    }
    assert err.startswith("error: wiki.jsonl:1: ")


def test_acl_file_lines_are_counted_at_newlines_only(env: SyncEnv) -> None:
    """A U+2028 or U+0085 inside a JSON string does not shift the reported line."""
    path = env.write_jsonl(
        "wiki.jsonl",
        [
            '{"doc_id": "wiki:ghost\u2028page\u0085x", "acl": ["everyone"]}',
            BAD_ACL_LINES["repeated-acl"][0],
        ],
    )

    error = one_line_error(*env.run("acl", "sync", path, "--corpus", "wiki"))

    assert "wiki.jsonl:2: key 'acl' appears twice" in error


# --------------------------------------------------------------------------- directory files


def pretty(data: Any) -> str:
    return json.dumps(data, indent=2)


def line_of(text: str, needle: str, occurrence: int = 2) -> int:
    """1-based line of the ``occurrence``-th ``needle`` in ``text``."""
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    return text.count("\n", 0, index) + 1


def repeated(text: str, needle: str) -> str:
    """``text`` with its first ``needle`` (a ``"key": value`` pair) written twice."""
    return text.replace(needle, f"{needle},\n{needle}", 1)


CLEARANCE_TEXT = pretty(DIRECTORY)
SCIM_TEXT = pretty(
    {
        "schemas": [SCIM_LIST_RESPONSE],
        "Resources": [
            {"schemas": [SCIM_USER], "id": "ann", "active": True},
            {"schemas": [SCIM_USER], "id": "bob", "active": False},
        ],
    }
)

BAD_DIRECTORIES = {
    "repeated-active": (
        "people.json",
        CLEARANCE_TEXT.replace(
            '"id": "bob",\n      "active": true',
            '"id": "bob",\n      "active": true,\n      "active": false',
        ),
        "users[1]: key 'active' appears twice in one object",
        '"active"',
        3,
    ),
    "repeated-members": (
        "people.json",
        repeated(CLEARANCE_TEXT, '"members": [\n        "user:ann"\n      ]'),
        "groups[1]: key 'members' appears twice in one object",
        '"members"',
        3,
    ),
    "repeated-top-level": (
        "people.json",
        CLEARANCE_TEXT[:-2] + ',\n  "users": []\n}',
        "$: key 'users' appears twice in one object",
        '"users"',
        2,
    ),
    "scim-repeated-active": (
        "scim.json",
        SCIM_TEXT.replace('"active": false', '"active": false,\n      "active": true'),
        "Resources[1]: key 'active' appears twice in one object",
        '"active"',
        3,
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_DIRECTORIES))
def test_a_repeated_key_in_a_directory_file_names_file_line_and_object(
    env: SyncEnv, kind: str
) -> None:
    name, text, message, key, occurrence = BAD_DIRECTORIES[kind]
    assert text.count(key) >= occurrence, "the fixture did not repeat the key"
    before = env.state()

    error = one_line_error(*env.run("directory", "sync", env.write(name, text)))

    assert error == f"error: {name}:{line_of(text, key, occurrence)}: {message}"
    assert env.state() == before


OTHER_BAD_DIRECTORIES = {
    "deep-nesting": (
        '{"users": ' + "[" * DEEP + "]" * DEEP + "}",
        "people.json: $: not valid JSON: nested too deeply",
    ),
    "deep-nesting-scim": (
        '{"schemas": [], "Resources": [' + '{"x": ' * DEEP + "1" + "}" * DEEP + "]}",
        "people.json: $: not valid JSON: nested too deeply",
    ),
    "huge-version": (
        '{"users": [], "version": ' + "9" * 5000 + "}",
        "people.json: $: not valid JSON",
    ),
    "infinite-version": ('{"users": [], "version": 1e999}', "people.json: version: expected"),
    "nan-version": ('{"users": [], "version": NaN}', "people.json: $: NaN is not valid JSON"),
    "huge-total-results": (
        '{"schemas": ["' + SCIM_LIST_RESPONSE + '"], "totalResults": ' + "9" * 5000 + "}",
        "people.json: $: not valid JSON",
    ),
}


@pytest.mark.parametrize("delta", [False, True], ids=["snapshot", "delta"])
@pytest.mark.parametrize("kind", sorted(OTHER_BAD_DIRECTORIES))
def test_other_bad_directory_files_are_one_error_and_change_nothing(
    env: SyncEnv, kind: str, delta: bool
) -> None:
    text, expected = OTHER_BAD_DIRECTORIES[kind]
    before = env.state()

    error = one_line_error(
        *env.run("directory", "sync", env.write("people.json", text), *(["--delta"] * delta))
    )

    assert expected in error
    assert len(error) < 300
    assert env.state() == before


MANY_PROBLEMS = {
    "users": [
        {"id": "ana", "active": "yes"},
        {"id": "bo", "active": True},
        {"id": "bo", "active": False},
    ],
    "groups": [{"id": "staff", "members": ["user:ana", "pat"]}],
}


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_every_bad_value_of_a_directory_file_is_reported_at_once(
    env: SyncEnv, json_out: bool
) -> None:
    """A value of the wrong type and a member named without its kind: one line each, in
    the order of the file, so the operator fixes them in one go. (The repeated id ``bo``
    is checked once every record reads well: the next test.)"""
    before = env.state()
    path = env.write_json("people.json", MANY_PROBLEMS)

    rc, out, err = env.run("directory", "sync", path, *(["--json"] * json_out))

    expected = [
        "people.json: users[0].active: expected a boolean, got string",
        "people.json: groups[0].members[1]: ",
    ]
    assert rc == 2, (out, err)
    assert "Traceback" not in out + err
    lines = [line.removeprefix("error: ") for line in err.strip().splitlines()]
    assert len(lines) == 2, err
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), lines
    if json_out:
        assert json.loads(out)["problems"] == lines
    assert env.state() == before


def test_repeated_ids_in_a_directory_file_are_reported_together(env: SyncEnv) -> None:
    data = {
        "users": [{"id": "bo", "active": True}, {"id": "bo", "active": False}],
        "groups": [{"id": "g", "members": []}, {"id": "g", "members": []}],
    }
    before = env.state()

    rc, _, err = env.run("directory", "sync", env.write_json("people.json", data))

    assert rc == 2
    assert err.strip().splitlines() == [
        "error: people.json: users[1].id: duplicate user id 'bo' (first at users[0].id)",
        "error: people.json: groups[1].id: duplicate group id 'g' (first at groups[0].id)",
    ]
    assert env.state() == before


def test_repeated_ids_and_untyped_scim_members_are_reported_together(env: SyncEnv) -> None:
    data = {
        "schemas": [SCIM_LIST_RESPONSE],
        "totalResults": 3,
        "Resources": [
            {"schemas": [SCIM_USER], "id": "ana", "userName": "ana", "active": True},
            {"schemas": [SCIM_USER], "id": "ana", "userName": "ana2", "active": True},
            {
                "schemas": [SCIM_GROUP],
                "id": "g",
                "displayName": "G",
                "members": [{"value": "x1"}, {"value": "x2"}],
            },
        ],
    }
    before = env.state()

    rc, _, err = env.run("directory", "sync", env.write_json("people.json", data))

    untyped = "has no type and is neither a user nor a group in this document"
    assert rc == 2
    assert err.strip().splitlines() == [
        "error: people.json: Resources[1].id: duplicate user id 'ana' (first at Resources[0].id)",
        f"error: people.json: Resources[2].members[0].value: member 'x1' {untyped}; "
        'add "type": "User" or "Group"',
        f"error: people.json: Resources[2].members[1].value: member 'x2' {untyped}; "
        'add "type": "User" or "Group"',
    ]
    assert env.state() == before


def test_a_directory_file_that_is_not_utf8_is_one_error(env: SyncEnv) -> None:
    path = env.root / "people.json"
    path.write_bytes(b'{"users": [{"id": "\xff", "active": true}]}')
    before = env.state()

    error = one_line_error(*env.run("directory", "sync", path))

    assert "cannot read" in error
    assert env.state() == before


def test_scim_dates_are_not_interpreted_so_extreme_ones_cannot_crash(env: SyncEnv) -> None:
    extreme = {"created": "9999-12-31T23:59:59-14:00", "lastModified": "0001-01-01T00:00:00+14:00"}
    text = pretty(
        {
            "schemas": [SCIM_LIST_RESPONSE],
            "Resources": [
                {"schemas": [SCIM_USER], "id": "ann", "active": True, "meta": extreme},
            ],
        }
    )

    rc, out, err = env.run("directory", "sync", env.write("scim.json", text))

    assert rc == 0, err
    assert "1 users (1 active)" in out


# --------------------------------------------------------------------------- empty snapshots

EMPTY_SNAPSHOTS = {
    "no-keys": {},
    "empty-lists": {"users": [], "groups": []},
    "groups-only": {"groups": [{"id": "employees", "members": ["user:ann"]}]},
    "scim-no-resources": {"schemas": [SCIM_LIST_RESPONSE], "totalResults": 0, "Resources": []},
}


@pytest.mark.parametrize("kind", sorted(EMPTY_SNAPSHOTS))
def test_an_empty_snapshot_is_refused_without_allow_empty(env: SyncEnv, kind: str) -> None:
    before = env.state()
    path = env.write_json("people.json", EMPTY_SNAPSHOTS[kind])

    error = one_line_error(*env.run("directory", "sync", path))

    assert error.startswith("error: people.json: the snapshot has no users")
    assert "--allow-empty" in error
    assert env.state() == before
    with pytest.raises(DirectoryError, match="has no users"):
        env.app.sync_directory(path)
    assert env.state() == before
    assert env.app.principal("ann").active


def test_allow_empty_applies_it_with_a_warning(env: SyncEnv) -> None:
    path = env.write_json("people.json", {"users": [], "groups": []})

    rc, out, err = env.run("directory", "sync", path, "--allow-empty")

    assert rc == 0, err
    assert "0 users (0 active), 0 groups" in out
    assert err.strip().splitlines() == ["warning: no active users: every account gets nothing"]
    assert env.state()["directory"]["users"] == []
    assert not env.app.principal("ann").known


def test_allow_empty_json_carries_the_warning(env: SyncEnv) -> None:
    path = env.write_json("people.json", {})

    rc, out, err = env.run("directory", "sync", path, "--allow-empty", "--json")

    assert rc == 0, err
    data = json.loads(out)
    assert (data["users"], data["warnings"]) == (0, ["no active users: every account gets nothing"])


def test_a_snapshot_of_only_disabled_users_is_applied_with_a_warning(env: SyncEnv) -> None:
    path = env.write_json("people.json", {"users": [{"id": "ann", "active": False}]})

    rc, _, err = env.run("directory", "sync", path)

    assert rc == 0, err
    assert err.strip().splitlines() == ["warning: no active users: every account gets nothing"]
    assert not env.app.principal("ann").active


def test_a_delta_without_users_needs_no_allow_empty(env: SyncEnv) -> None:
    path = env.write_json("delta.json", {"groups": [{"id": "new", "members": ["user:bob"]}]})

    rc, _, err = env.run("directory", "sync", path, "--delta")

    assert rc == 0, err
    assert err == ""
    assert "group:new" in env.app.principal("bob").principals
