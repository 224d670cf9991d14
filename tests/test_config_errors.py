"""A settings file is checked whole: every problem is reported at once, one line each, in
the order of the file, each with the file and line of its key — not one per run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import clearance.config as config_module
from clearance.cli.main import main
from clearance.config import load_settings, settings_from_dict
from clearance.errors import ConfigError

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
    assert problems[1].endswith("unknown setting 'retrieval.kk'")
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
    def raise_at_once(self: object, message: str, default: object) -> object:
        raise ConfigError(message)

    monkeypatch.setattr(config_module._Table, "_bad", raise_at_once)
    with pytest.raises(AssertionError):
        test_every_problem_is_reported_in_file_order_with_its_line(tmp_path)
