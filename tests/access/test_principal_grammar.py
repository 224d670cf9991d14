"""A malformed principal is an error at every entry, never a principal that matches nobody.

The grammar (docs/access.md, :func:`clearance.model.principal_id_problem`) is checked where
principals enter Clearance: a document's metadata ``acl``, an ACL sync file, the members of a
directory group, and — with the same id grammar — the directory's own user and group ids.

Reverse proof: with the old permissive regex monkeypatched into every module that validates
principals, the same assertions fail for each example that it used to let through.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearance import model
from clearance.access.directory import parse_directory
from clearance.access.directory_file import SCIM_LIST_RESPONSE, SCIM_USER
from clearance.errors import MetadataError
from clearance.ingest.metadata import parse_metadata
from clearance.model import EVERYONE, parse_principal

from .syncenv import DIRECTORY, SyncEnv, one_line_error, sync_env

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"

# Malformed principals the old regex ``^(?:user|group):[^\s:][^\s]*$`` accepted (``$`` also
# matches before a final newline); each silently matched nobody.
ACCEPTED_BEFORE = {
    "trailing-newline": "user:alice\n",
    "nul": "user:ali\x00ce",
    "zero-width-space": "user:ali\u200bce",
    "zero-width-joiner": "group:eng\u200d",
    "bidi-override": "user:alice\u202e",
    "two-in-one-comma": "group:eng,group:hr",
    "two-in-one-semicolon": "group:eng;group:hr",
    "wildcard-star": "user:*",
    "wildcard-question": "group:eng?",
    "colon-in-id": "user:a:b",
    "decomposed-accent": "user:jose\u0301",
    "private-use": "user:\ue000",
    "too-long": "user:" + "a" * 257,
}
# Malformed, and refused before too: kept here so the grammar keeps refusing them.
ALWAYS_REFUSED = {
    "leading-space": "user: alice",
    "trailing-space": "user:alice ",
    "tab": "user:al\tice",
    "line-separator": "user:al\u2028ice",
    "nbsp": "group:eng\u00a0hr",
    "empty-id": "user:",
    "no-kind": "alice",
    "capital-kind": "User:alice",
    "capital-everyone": "Everyone",
    "bom-prefix": "\ufeffuser:alice",
}
MALFORMED = ACCEPTED_BEFORE | ALWAYS_REFUSED

WELL_FORMED = [
    "everyone",
    "user:alice",
    "user:ann.lee@acme.example",
    "user:o'brien+test@acme.example",
    "group:finance-emea",
    "group:eng_team-2",
    "user:2819c223-7f76-453a-919d-413861904646",
    "group:営業",
    "user:jos\u00e9",
    "user:" + "a" * 256,
]


def _id(principal: str) -> str | None:
    """The id part of a ``user:``/``group:`` principal, else ``None``."""
    kind, sep, ident = principal.partition(":")
    return ident if sep and kind in ("user", "group") else None


# --------------------------------------------------------------------------- the entries
# Each check raises AssertionError when ``principal`` is accepted (or refused badly).

Check = Callable[[SyncEnv, str], None]


def metadata_refuses(env: SyncEnv, principal: str) -> None:
    try:
        parse_metadata({"title": "Plan", "acl": ["group:eng", principal]}, "plan.txt.meta.json")
    except MetadataError as exc:
        assert exc.message.startswith("plan.txt.meta.json: key 'acl'"), exc.message
        assert "bad principal" in exc.message
        assert exc.message.isprintable(), exc.message
        return
    raise AssertionError(f"metadata acl accepted {principal!r}")


def acl_file_refuses(env: SyncEnv, principal: str) -> None:
    before = env.state()
    path = env.write_jsonl(
        "wiki.jsonl",
        [
            {"doc_id": "wiki:handbook", "acl": ["user:bob"]},
            {"doc_id": "wiki:roadmap", "acl": ["group:eng", principal]},
        ],
    )
    line = one_line_error(*env.run("acl", "sync", path, "--corpus", "wiki"))
    assert "wiki.jsonl:2: acl[1]: bad principal" in line, line
    assert env.state() == before


def directory_member_refuses(env: SyncEnv, principal: str) -> None:
    before = env.state()
    data = json.loads(json.dumps(DIRECTORY))
    data["groups"][1]["members"].append(principal)
    path = env.write_json("people.json", data)
    line = one_line_error(*env.run("directory", "sync", path))
    assert "people.json: groups[1].members[1]: bad" in line, line
    assert env.state() == before


def directory_user_id_refuses(env: SyncEnv, principal: str) -> None:
    ident = _id(principal)
    assert ident is not None
    before = env.state()
    data = json.loads(json.dumps(DIRECTORY))
    data["users"].append({"id": ident, "active": True})
    path = env.write_json("people.json", data)
    line = one_line_error(*env.run("directory", "sync", path))
    assert "people.json: users[2].id: id " in line, line
    assert env.state() == before


def scim_id_refuses(env: SyncEnv, principal: str) -> None:
    ident = _id(principal)
    assert ident is not None
    before = env.state()
    resources = [{"schemas": [SCIM_USER], "id": uid, "active": True} for uid in ("ann", ident)]
    path = env.write_json("scim.json", {"schemas": [SCIM_LIST_RESPONSE], "Resources": resources})
    line = one_line_error(*env.run("directory", "sync", path))
    assert "scim.json: Resources[1].id: id " in line, line
    assert env.state() == before


ENTRIES: dict[str, Check] = {
    "metadata": metadata_refuses,
    "acl-file": acl_file_refuses,
    "directory-member": directory_member_refuses,
    "directory-user-id": directory_user_id_refuses,
    "scim-id": scim_id_refuses,
}
ID_ENTRIES = {"directory-user-id", "scim-id"}


def cases(examples: dict[str, str]) -> list[Any]:
    return [
        pytest.param(entry, principal, id=f"{entry}-{name}")
        for entry in ENTRIES
        for name, principal in examples.items()
        if entry not in ID_ENTRIES or _id(principal)
    ]


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncEnv]:
    """One deployment for all refusals: each check also proves it wrote nothing."""
    with sync_env(tmp_path_factory.mktemp("grammar")) as env:
        yield env


@pytest.mark.parametrize(("entry", "principal"), cases(MALFORMED))
def test_a_malformed_principal_is_refused_at_every_entry(
    shared_env: SyncEnv, entry: str, principal: str
) -> None:
    ENTRIES[entry](shared_env, principal)


# --------------------------------------------------------------------------- reverse proof

_OLD_PRINCIPAL = re.compile(r"^(?:user|group):[^\s:][^\s]*$")


def _old_parse_principal(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"principal must be a string, got {type(value).__name__}")
    if value == EVERYONE or _OLD_PRINCIPAL.match(value):
        return value
    raise ValueError(f"bad principal {value!r}: use 'user:<id>', 'group:<id>' or 'everyone'")


def _old_id_problem(ident: str) -> str | None:
    return None if _OLD_PRINCIPAL.match("user:" + ident) else "is not an id"


@pytest.fixture
def permissive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old regex in every module that imported the validators (ingest, sync, directory…)."""
    swaps = {
        model.parse_principal: _old_parse_principal,
        model.principal_id_problem: _old_id_problem,
    }
    for name, module in list(sys.modules.items()):
        if name == "clearance" or name.startswith("clearance."):
            for attr in ("parse_principal", "principal_id_problem"):
                current = getattr(module, attr, None)
                if current in swaps:
                    monkeypatch.setattr(module, attr, swaps[current])


@pytest.mark.parametrize(("entry", "principal"), cases(ACCEPTED_BEFORE))
def test_reverse_proof_the_old_regex_lets_each_example_through(
    tmp_path: Path, permissive: None, entry: str, principal: str
) -> None:
    with sync_env(tmp_path) as env, pytest.raises(AssertionError):
        ENTRIES[entry](env, principal)


# --------------------------------------------------------------------------- what stays valid


@pytest.mark.parametrize("principal", WELL_FORMED)
def test_well_formed_principals_are_accepted(principal: str) -> None:
    assert parse_principal(principal) == principal
    ident = _id(principal)
    if ident is not None:
        doc = parse_directory(
            {
                "users": [{"id": ident, "active": True}],
                "groups": [{"id": ident, "members": [principal]}],
            },
            source="ok.json",
        )
        assert set(doc.users) == set(doc.groups) == {ident}


def _acls(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "acl" and isinstance(item, list):
                yield from item
            else:
                yield from _acls(item)
    elif isinstance(value, list):
        for item in value:
            yield from _acls(item)


def test_every_principal_of_the_acme_example_is_well_formed() -> None:
    principals: set[Any] = set()
    for path in sorted(ACME.rglob("*.json")) + sorted(ACME.rglob("*.jsonl")):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            records = [json.loads(text)]
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        for record in records:
            principals.update(_acls(record))
    assert len(principals) > 10
    for principal in principals:
        assert parse_principal(principal) == principal
    for name in ("directory.json", "directory.scim.json"):
        doc = parse_directory((ACME / name).read_text(encoding="utf-8"), source=name)
        assert doc.users


@given(st.text(max_size=12))
def test_the_grammar_as_a_property(ident: str) -> None:
    """Accepted exactly when every character is allowed; a refusal is one printable line."""
    allowed = (
        0 < len(ident) <= 256
        and unicodedata.is_normalized("NFC", ident)
        and all(ch.isprintable() and not ch.isspace() and ch not in ":,;*?" for ch in ident)
    )
    try:
        parse_principal(f"group:{ident}")
    except ValueError as exc:
        assert not allowed
        assert str(exc).isprintable()
    else:
        assert allowed
