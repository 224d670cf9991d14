"""Every connector's and directory source's options are read strictly, by one parser: a
valid table broken in exactly one way — a value of the wrong kind (a bool for anything but a
bool, a string for a bool or a number, a number for a string), or a key nobody reads — is a
``ConfigError`` naming that key under its table, never a value taken as something it is not.

``test_reverse_proof_a_lax_parser_fails_the_gate`` swaps in a parser that coerces and
ignores unknown keys; the same assertion must catch it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from clearance.errors import ConfigError
from clearance.sources import options as option_types
from clearance.sources.confluence import parse_options as confluence_options
from clearance.sources.directory.entra import parse_options as entra_options
from clearance.sources.directory.google import parse_options as google_options
from clearance.sources.gdrive import parse_options as drive_options
from clearance.sources.graph import parse_options as graph_options

Parse = Callable[[str, Mapping[str, Any]], object]

#: kind -> (its parser, a valid options table, the key the parser names its table by)
VALID: dict[str, tuple[Parse, dict[str, Any], str]] = {
    "graph": (
        graph_options,
        {
            "tenant_id": "t",
            "client_id": "c",
            "drive_id": "d",
            "graph_url": "https://graph.example",
            "user_id": "upn",
            "organization_principal": "group:all-staff",
            "site_groups": {"Board": "group:board"},
            "sync_groups": True,
            "site_url": "https://contoso.sharepoint.example/sites/x",
            "sync_site_groups": True,
        },
        "sources.x.options",
    ),
    "gdrive": (
        drive_options,
        {
            "drive_id": "d",
            "subject": "admin@example.com",
            "domains": {"example.com": "group:all-staff"},
            "org_domains": ["example.org"],
            "sync_groups": False,
            "channel_hours": 12,
        },
        "sources.x.options",
    ),
    "confluence": (
        confluence_options,
        {
            "base_url": "https://wiki.example",
            "email": "bot@example.com",
            "space_key": "ENG",
            "attachments": False,
            "cloud_id": "c-1",
        },
        "sources.x.options",
    ),
    "entra": (
        entra_options,
        {"tenant_id": "t", "client_id": "c", "page_size": 100, "max_concurrency": 2},
        "directories.x.options",
    ),
    "google": (
        google_options,
        {"subject": "admin@example.com", "page_size": 100, "max_concurrency": 2},
        "directories.x.options",
    ),
}


def wrong_kind(value: object) -> object:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 7
    return True


def broken_tables() -> list[tuple[str, dict[str, Any], str]]:
    """(kind, a table broken in one way, the key its error must name)."""
    cases = []
    for kind, (_, table, _) in VALID.items():
        for key, value in table.items():
            cases.append((kind, {**table, key: wrong_kind(value)}, key))
        cases.append((kind, {**table, "colour": "blue"}, "colour"))
    return cases


def assert_refused_naming(parse: Parse, table: Mapping[str, Any], at: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse("x", table)
    assert any(f"{at}.{key}" in p for p in caught.value.problems), caught.value.problems
    assert all("\n" not in p for p in caught.value.problems)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_the_valid_tables_are_valid(kind: str) -> None:
    parse, table, _ = VALID[kind]
    parse("x", table)


@pytest.mark.parametrize(
    ("kind", "table", "key"),
    broken_tables(),
    ids=[f"{kind}-{key}" for kind, _, key in broken_tables()],
)
def test_a_table_broken_in_one_way_is_refused_naming_the_key(
    kind: str, table: dict[str, Any], key: str
) -> None:
    parse, _, at = VALID[kind]
    assert_refused_naming(parse, table, at, key)


def test_reverse_proof_a_lax_parser_fails_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that keeps whatever it is given, as a hand-written reader that forgot a
    check would."""

    def lax(schema: Any, raw: Mapping[str, Any], at: str, **_: Any) -> Any:
        return dict(raw)

    import clearance.sources.graph as graph

    monkeypatch.setattr(option_types, "parse", lax)
    monkeypatch.setattr(graph, "parse_table", lax)
    parse, table, at = VALID["graph"]
    for key, value in (("sync_groups", "yes"), ("colour", "blue")):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            assert_refused_naming(parse, {**table, key: value}, at, key)
