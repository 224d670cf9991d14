"""Sensitivity classification (docs/design.md §3): config-driven, deterministic, only ever raises."""

from __future__ import annotations

import pytest

from clearance.config import SensitivitySettings
from clearance.ingest.classify import classify
from clearance.model import Sensitivity

PUBLIC, INTERNAL, CONFIDENTIAL, RESTRICTED = tuple(Sensitivity)

RULES = SensitivitySettings(
    default_level=INTERNAL,
    restricted_filename_patterns=("*board-minutes*", "salaries-*.xlsx"),
    restricted_keywords=("attorney-client privileged", "取締役会資料"),
)


def run(
    label: Sensitivity | None = None,
    filename: str | None = "notes.md",
    text: str = "Quarterly planning notes.",
    rules: SensitivitySettings = RULES,
) -> Sensitivity:
    return classify(rules, label=label, filename=filename, text=text)


def test_without_label_or_match_the_default_level_applies() -> None:
    assert run() is INTERNAL
    assert run(rules=SensitivitySettings(default_level=PUBLIC)) is PUBLIC


@pytest.mark.parametrize("label", list(Sensitivity))
def test_a_source_label_is_kept(label: Sensitivity) -> None:
    assert run(label=label) is label


@pytest.mark.parametrize(
    "filename",
    [
        "2024-board-minutes.pdf",
        "Q3 BOARD-MINUTES final.docx",
        "salaries-2025.xlsx",
        "ＢＯＡＲＤ-minutes.md",
    ],
)
def test_a_restricted_filename_pattern_makes_it_restricted(filename: str) -> None:
    assert run(filename=filename) is RESTRICTED
    assert run(label=PUBLIC, filename=filename) is RESTRICTED


@pytest.mark.parametrize("filename", ["salaries-2025.csv", "minutes.md", "board.md", None])
def test_non_matching_filenames_change_nothing(filename: str | None) -> None:
    assert run(filename=filename) is INTERNAL


@pytest.mark.parametrize(
    "text",
    [
        "This memo is attorney-client privileged.",
        "ATTORNEY-CLIENT PRIVILEGED",
        "ａｔｔｏｒｎｅｙ－ｃｌｉｅｎｔ　ｐｒｉｖｉｌｅｇｅｄ",  # full-width
        "本日の取締役会資料を共有します",  # Japanese keyword inside a sentence
    ],
)
def test_a_restricted_keyword_makes_it_restricted(text: str) -> None:
    assert run(text=text) is RESTRICTED


def test_keywords_match_substrings_but_not_near_misses() -> None:
    assert run(text="attorney client privileged") is INTERNAL  # no hyphen: no match
    assert run(text="取締役会の資料") is INTERNAL


def test_blank_keywords_never_match_everything() -> None:
    rules = SensitivitySettings(restricted_keywords=("", "   "))
    assert run(rules=rules) is INTERNAL


def test_escalate_unknown_applies_only_without_a_label() -> None:
    rules = SensitivitySettings(default_level=PUBLIC, escalate_unknown_to_restricted=True)

    assert run(rules=rules) is RESTRICTED
    assert run(label=PUBLIC, rules=rules) is PUBLIC
    assert run(label=CONFIDENTIAL, rules=rules) is CONFIDENTIAL


def test_classification_never_lowers_a_label() -> None:
    # a PUBLIC label with a restricted keyword becomes RESTRICTED
    assert run(label=PUBLIC, text="attorney-client privileged advice") is RESTRICTED
    # a RESTRICTED label with a PUBLIC default stays RESTRICTED
    assert run(label=RESTRICTED, rules=SensitivitySettings(default_level=PUBLIC)) is RESTRICTED
    # a CONFIDENTIAL label is not lowered to the INTERNAL default
    assert run(label=CONFIDENTIAL) is CONFIDENTIAL


@pytest.mark.parametrize("label", [None, *Sensitivity])
@pytest.mark.parametrize("filename", ["a.md", "board-minutes.md"])
@pytest.mark.parametrize("text", ["plain", "attorney-client privileged"])
def test_result_is_never_below_the_label(
    label: Sensitivity | None, filename: str, text: str
) -> None:
    result = run(label=label, filename=filename, text=text)
    assert label is None or result >= label
    if filename.startswith("board") or "privileged" in text:
        assert result is RESTRICTED
