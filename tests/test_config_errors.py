"""A settings file is checked whole: every problem is reported at once, one line each, in
the order of the file, each with the file and line of its key — not one per run."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AliasChoices, AliasPath, BeforeValidator, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

import clearance.config as config_module
import clearance.validation as validation
from clearance.cli.main import main
from clearance.config import Settings, load_settings, settings_from_dict
from clearance.errors import ConfigError
from clearance.validation import problems
from test_config import uncommented_default_config

THREE_PROBLEMS = """\
[store]
path = 42

[retrieval]
k = 5
kk = 6

[corpora.hr]
revocation_sla = "soon"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clearance.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_problem_is_reported_in_file_order_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, THREE_PROBLEMS)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    problems = caught.value.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:6", f"{path}:9"]
    assert problems[0].endswith("store.path: expected str, got int 42")
    assert problems[1].endswith("unknown setting 'retrieval.kk'; did you mean 'k'?")
    assert "corpora.hr.revocation_sla: expected a duration" in problems[2]
    assert caught.value.message == problems[0]
    assert all("\n" not in p for p in problems)


def test_a_check_across_keys_is_reported_with_the_problems_before_it() -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_dict(
            {
                "corpora": {"hr": {"revocation_sla": "soon"}},
                "assistants": {"help": {"corpora": ["nowhere"]}},
            }
        )
    problems = caught.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("corpora.hr.revocation_sla: ")
    assert problems[1] == "assistants.help.corpora: unknown corpus 'nowhere'"


def test_one_problem_keeps_the_one_line_shape(tmp_path: Path) -> None:
    path = write(tmp_path, '[corpora.hr]\nrevocation_sla = "soon"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    assert caught.value.problems == (caught.value.message,)
    assert "problems" not in caught.value.to_dict()


def test_the_cli_prints_each_problem_on_its_own_line_and_lists_them_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, THREE_PROBLEMS)
    assert main(["--config", str(path), "status"]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 3
    assert all(line.startswith("error: ") for line in lines)
    assert "Traceback" not in err

    assert main(["--config", str(path), "status", "--json"]) == 2
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert data["error"] == "config_error"
    assert len(data["problems"]) == 3 and data["message"] == data["problems"][0]


def test_reverse_proof_a_reader_that_stops_at_the_first_problem_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def first_only(error: object, **wording: Any) -> list[str]:
        return problems(error, **wording)[:1]

    monkeypatch.setattr(validation, "problems", first_only)
    with pytest.raises(AssertionError):
        test_every_problem_is_reported_in_file_order_with_its_line(tmp_path)


# --------------------------------------------------------------------------- the fuzz gate
# The shipped file with its examples switched on, broken in exactly one way that is invalid
# by construction: a value of the wrong kind (a bool for anything but a bool, a string for a
# bool or a number), or a key nobody reads. Strictness is the contract: every such file is a
# ConfigError whose problems name the broken key, each with the file and a line.


def leaves(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, value in table.items():
        key = (*prefix, name)
        out.extend(leaves(value, key) if isinstance(value, dict) else [key])
    return out


def tables(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, value in table.items():
        if isinstance(value, dict) and name not in ("options", "credentials"):
            out.extend(tables(value, (*prefix, name)))
    return out


def toml_key(parts: tuple[str, ...]) -> str:
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else json.dumps(p) for p in parts)


def wrong_kind(value: object) -> object:
    """A value no key whose valid value is ``value`` accepts."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return str(value)
    return True


def broken(data: dict[str, Any], key: tuple[str, ...], value: object) -> dict[str, Any]:
    out = copy.deepcopy(data)
    table = out
    for part in key[:-1]:
        table = table.setdefault(part, {})
    table[key[-1]] = value
    return out


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def dump_toml(table: dict[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """``table`` as TOML: its values, then its tables and arrays of tables."""
    lines = [
        f"{toml_key((k,))} = {toml_value(v)}"
        for k, v in table.items()
        if not isinstance(v, dict)
        and not (isinstance(v, list) and v and all(isinstance(i, dict) for i in v))
    ]
    for name, value in table.items():
        key = (*prefix, name)
        if isinstance(value, dict):
            lines += [f"\n[{toml_key(key)}]", dump_toml(value, key)]
        elif isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
            for item in value:
                lines += [f"\n[[{toml_key(key)}]]", dump_toml(item, key)]
    return "\n".join(lines)


def assert_refused_naming(path: Path, data: dict[str, Any], key: tuple[str, ...]) -> None:
    path.write_text(dump_toml(data), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    problems = caught.value.problems
    dotted = ".".join(key)
    assert any(dotted in p for p in problems), (dotted, problems)
    assert all(re.match(rf"{re.escape(str(path))}(:\d+)?: ", p) for p in problems), problems


SHIPPED = uncommented_default_config()
# options and credentials belong to their kind, which validates them when a connector is built
CHECKED_LEAVES = [k for k in leaves(SHIPPED) if "options" not in k and "credentials" not in k]


def test_the_shipped_file_written_back_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "clearance.toml"
    path.write_text(dump_toml(SHIPPED), encoding="utf-8")
    assert load_settings(path, {}).server.port == SHIPPED["server"]["port"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_every_file_broken_in_one_way_is_refused_naming_the_key(
    tmp_path: Path, data: st.DataObject
) -> None:
    if data.draw(st.booleans(), label="unknown key"):
        table = data.draw(st.sampled_from(tables(SHIPPED)), label="table")
        key = (*table, "zz_" + data.draw(st.text("abcxyz", min_size=1, max_size=6)))
        value: object = 1
    else:
        key = data.draw(st.sampled_from(CHECKED_LEAVES), label="key")
        original = SHIPPED
        for part in key:
            original = original[part]
        value = wrong_kind(original)
    assert_refused_naming(tmp_path / "clearance.toml", broken(SHIPPED, key, value), key)


def test_reverse_proof_a_lax_reader_fails_the_fuzz_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that coerces ("800" → 800, "yes" → true) and ignores keys it does not know."""

    def lax(data: object) -> dict[str, Any]:
        return {}

    monkeypatch.setattr(
        config_module, "_schema", lambda tables: Annotated[Settings, BeforeValidator(lax)]
    )
    for key, value in ((("ingest", "chunk_size"), "800"), (("store", "zz"), 1)):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            assert_refused_naming(tmp_path / "clearance.toml", broken(SHIPPED, key, value), key)


# --------------------------------------------------------------------------- did you mean


@pydantic_dataclass(config={"extra": "forbid"})
class _Aliased:
    """Keys written otherwise than their fields: one alias, a choice of two, a path."""

    plain: int = 0
    renamed_s: int = Field(default=0, validation_alias="renamed")
    chosen_s: int = Field(default=0, validation_alias=AliasChoices("chosen", "picked"))
    pathed_s: int = Field(default=0, validation_alias=AliasPath("pathed", 0))


@pytest.mark.parametrize(
    ("typo", "suggested"),
    [("plan", "plain"), ("renamd", "renamed"), ("chosn", "chosen"), ("pathd", "pathed")],
)
def test_a_suggestion_names_the_key_a_file_writes(typo: str, suggested: str) -> None:
    with pytest.raises(ConfigError) as info:
        validation.validate(_Aliased, {typo: 1})
    assert info.value.message == f"unknown setting {typo!r}; did you mean {suggested!r}?"


@pytest.mark.parametrize("typo", ["renamed_s", "chosen_ss", "pathed_ss"])
def test_a_field_name_the_file_cannot_write_is_never_suggested(typo: str) -> None:
    with pytest.raises(ConfigError) as info:
        validation.validate(_Aliased, {typo: 1})
    assert "_s'?" not in info.value.message, info.value.message
