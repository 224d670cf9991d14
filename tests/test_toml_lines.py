"""A settings error names the file and the line of the key it is about
(``clearance.toml:7: corpora.hr.revocation_sla: …``); ``clearance/toml_lines.py`` finds
that line by reading the TOML text again."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from clearance.config import load_settings
from clearance.errors import ConfigError
from clearance.toml_lines import key_line, split_key

TEXT = """\
# a comment = [not a table]
[store]
path = "index.db"

[corpora.ops]
revocation_sla = "1h"

[corpora.hr]
max_sensitivity = "RESTRICTED"
revocation_sla = "15m"
notes = \"\"\"
[corpora.hr]
revocation_sla = "not this one"
\"\"\"
tags = [
  "a = b",
  "[c]",
]

[corpora."sales team"]
limits.daily = 3
"odd key" = 1

[[assistants]]
name = "general"
"""


@pytest.mark.parametrize(
    ("key", "line"),
    [
        ("store.path", 3),
        ("corpora.hr.revocation_sla", 10),  # not [corpora.ops]'s, nor the look-alike in the string
        ("corpora.hr.tags", 15),
        ("corpora.hr", 8),  # the table itself
        ("corpora.hr.unwritten", 8),  # a key the file leaves out: its table
        ("corpora.sales team.limits.daily", 21),
        ("corpora.sales team.odd key", 22),
        ("assistants[0].name", 25),  # the first [[assistants]]
        ("assistants.name", None),
        ("retrieval.k", None),  # nothing of it is written
    ],
)
def test_a_key_is_found_on_its_own_line(key: str, line: int | None) -> None:
    assert key_line(TEXT, key) == line


def test_keys_are_split_as_toml_writes_them() -> None:
    assert split_key("a.\"b c\".'d'") == ("a", "b c", "d")
    assert split_key('"caf\\u00e9".x') == ("café", "x")
    assert split_key("a b") is None


def leaves(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        if isinstance(value, dict):
            yield from leaves(value, (*prefix, key))
        else:
            yield (*prefix, key)


def test_every_key_of_the_shipped_configuration_is_found_where_it_is_written() -> None:
    text = resources.files("clearance").joinpath("data/default-config.toml").read_text("utf-8")
    lines = text.splitlines()
    found = list(leaves(tomllib.loads(text)))
    assert len(found) > 20
    for key in found:
        number = key_line(text, ".".join(key))
        assert number is not None, key
        assert lines[number - 1].lstrip().startswith(key[-1]), (key, lines[number - 1])


def test_a_settings_error_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_text(TEXT.replace('revocation_sla = "15m"', 'revocation_sla = "soon"'))
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    assert caught.value.message.startswith(f"{path}:10: corpora.hr.revocation_sla: ")
    assert "\n" not in caught.value.message


def test_an_error_in_the_second_table_of_an_array_names_that_table(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_text(
        '[[facts.periods]]\npattern = "h"\ncanonical = "H"\n\n'
        '[[facts.periods]]\npattern = "("\ncanonical = "X"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    assert caught.value.message.startswith(f"{path}:6: facts.periods[1].pattern: ")


def test_an_unknown_key_is_named_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_text('[store]\npath = "x.db"\n\n[retrieval]\nk = 5\nkk = 6\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    assert caught.value.message == f"{path}:6: unknown setting 'retrieval.kk'; did you mean 'k'?"


def test_reverse_proof_a_locator_blind_to_tables_points_at_the_wrong_line() -> None:
    """Matching the last key part alone — the easy shortcut — finds another table's key."""

    def by_name_only(text: str, key: str) -> int | None:
        name = key.split(".")[-1]
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip().startswith(f"{name} ="):
                return number
        return None

    assert by_name_only(TEXT, "corpora.hr.revocation_sla") != 10
    assert key_line(TEXT, "corpora.hr.revocation_sla") == 10
