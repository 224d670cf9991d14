"""The standard names of financial-statement lines across English, Japanese and Chinese
(``clearance.glossary``): each name belongs to one line, and a name finds the others."""

from __future__ import annotations

from clearance import glossary


def test_every_name_belongs_to_one_line() -> None:
    seen: dict[str, int] = {}
    for number, names in enumerate(glossary.lines()):
        assert len(names) >= 2, names
        for name in names:
            assert glossary.key(name) not in seen, (name, seen.get(glossary.key(name)), number)
            seen[glossary.key(name)] = number


def test_a_name_finds_the_lines_other_names_in_other_languages() -> None:
    assert {"operating profit", "operating income", "营业利润"} <= set(
        glossary.equivalents("営業利益")
    )
    assert "営業利益" not in glossary.equivalents("営業利益")
    assert glossary.equivalents("Revenue") == glossary.equivalents("  revenue ")
    assert glossary.equivalents("Intelligent Cloud revenue") == ()  # a qualified line is its own


def test_same_line_picks_the_names_a_caller_has() -> None:
    metrics = ["Revenue", "売上高", "营业收入", "営業利益", "Intelligent Cloud Revenue"]
    assert glossary.same_line("revenue", metrics) == ["売上高", "营业收入"]
    assert glossary.same_line("売上高", metrics) == ["Revenue", "营业收入"]
    # Reverse proof: operating profit is another line than revenue.
    assert "営業利益" not in glossary.same_line("Revenue", metrics)
    assert glossary.same_line("headcount", metrics) == []
