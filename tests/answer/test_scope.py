"""The scope gate (docs/design.md §1 stage 2): deterministic alias matching on the raw question.

Examples pin the documented rules (normalisation, separators, word boundaries, longest
first, masking); property tests check the guarantees over arbitrary text: the masked text
has the question's length, differs only by spaces, contains no alias any more, and inserted
separators or full-width forms never hide an alias.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from clearance.answer.scope import ScopeGate, ScopeResult, normalise_for_scope
from clearance.config import ScopeSettings, settings_from_dict

ENTITIES: dict[str, tuple[str, ...]] = {
    "Globex": ("Globex", "グローベックス", "GBX"),
    "Globex Japan": ("Globex Japan", "グローベックス・ジャパン"),
    "Initech": ("Initech", "イニテック", "Initech Corp"),
    "Café Mondial": ("Café Mondial",),
    "大阪": ("大阪",),
    "東京": ("東京",),
}
GATE = ScopeGate(ScopeSettings(ENTITIES))
ALIASES = sorted({a for aliases in ENTITIES.values() for a in aliases})
LATIN_ALIASES = [a for a in ALIASES if a.isascii()]

# Whitespace and invisible characters an attacker (or a sloppy paste) may insert.
SEPARATORS = [
    " ",
    "  ",
    "\t",
    "\n",
    "\u3000",
    "\u00a0",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
]


def full_width(text: str) -> str:
    """ASCII → full-width forms (what a Japanese IME produces), space → ideographic space."""
    return "".join(
        "\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text
    )


def gate(entities: dict[str, tuple[str, ...]]) -> ScopeGate:
    return ScopeGate(ScopeSettings(entities))


# ------------------------------------------------------------------------------------------------
# Examples
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "entity"),
    [
        ("What does Globex sell?", "Globex"),
        ("what does GLOBEX sell?", "Globex"),
        ("gbx revenue", "Globex"),
        ("Ｇｌｏｂｅｘ", "Globex"),
        ("Ｇ ｌ ｏ ｂ ｅ ｘ の売上", "Globex"),
        ("G l o b e x", "Globex"),
        ("Gl\u043ebex revenue", "Globex"),  # Cyrillic о
        ("GL\u041eB\u0415X", "Globex"),  # Cyrillic О and Е, upper case
        ("\u0399nitech results", "Initech"),  # Greek capital iota
        ("Glo\u200bbex pricing", "Globex"),
        ("Glo\nbex", "Globex"),
        ("グローベックスの売上は？", "Globex"),
        ("ｸﾞﾛｰﾍﾞｯｸｽの売上", "Globex"),  # half-width katakana with half-width dakuten
        ("株式会社グローベックス社について", "Globex"),  # CJK aliases match anywhere
        ("Globexの売上", "Globex"),  # a CJK neighbour is a word boundary
        ("Globex's results", "Globex"),
        ("(Globex)", "Globex"),
        ("x\u200bGlobex", "Globex"),  # an invisible neighbour never hides a match
        ("cafe\u0301 mondial menu", "Café Mondial"),  # decomposed é
        ("CAFÉ MONDIAL", "Café Mondial"),
        ("イニテックとは", "Initech"),
    ],
)
def test_alias_matches(question: str, entity: str) -> None:
    result = GATE.check(question)
    assert result.entities == (entity,)
    assert result.out_of_scope
    assert len(result.masked) == len(question)
    assert result.masked != question


@pytest.mark.parametrize(
    "question",
    [
        "Globexa is a made-up word",  # alias inside a longer Latin word
        "MyGlobex",
        "Globex2025",
        "GBXL",
        "Glo-bex",  # punctuation is significant
        "What is our revenue?",
        "",
        "   ",
        "東 西 大 学",
    ],
)
def test_no_match(question: str) -> None:
    result = GATE.check(question)
    assert result == ScopeResult((), question)
    assert not result.out_of_scope


def test_masks_the_original_span_including_inserted_separators() -> None:
    question = "ask G l o\u200bb e x now"
    result = GATE.check(question)
    assert result.entities == ("Globex",)
    assert result.masked == "ask " + " " * len("G l o\u200bb e x") + " now"
    assert result.spans == ((4, 4 + len("G l o\u200bb e x")),)


def test_masking_keeps_everything_outside_the_spans() -> None:
    question = "Compare Globex and Initech with us."
    result = GATE.check(question)
    assert result.entities == ("Globex", "Initech")
    assert result.masked == "Compare        and         with us."


def test_entities_in_order_of_first_appearance_and_deduplicated() -> None:
    result = GATE.check("イニテック vs Globex vs GBX vs Initech")
    assert result.entities == ("Initech", "Globex")


@pytest.mark.parametrize(
    ("question", "entities", "masked"),
    [
        ("Globex Japan revenue", ("Globex Japan",), "             revenue"),
        ("GlobexJapan revenue", ("Globex Japan",), "            revenue"),
        ("Ｇｌｏｂｅｘ　Ｊａｐａｎ", ("Globex Japan",), " " * 12),
        ("Globex revenue", ("Globex",), "       revenue"),
        # "Japanese" is not "Japan": the longer alias fails its boundary, the shorter one wins
        ("Globex Japanese site", ("Globex",), "       Japanese site"),
        ("グローベックス・ジャパンの売上", ("Globex Japan",), " " * 12 + "の売上"),
        ("Initech Corp and Initech", ("Initech",), " " * 12 + " and " + " " * 7),
    ],
)
def test_longest_alias_first(question: str, entities: tuple[str, ...], masked: str) -> None:
    result = GATE.check(question)
    assert result.entities == entities
    assert result.masked == masked


def test_overlapping_aliases_longest_wins_then_leftmost() -> None:
    g = gate({"North Star": (), "Star Labs": ("Star Laboratories",), "Labs Team": ()})
    # "North Star" (9) vs "Star Laboratories" (16): the longer one wins, "North" stays.
    result = g.check("North Star Laboratories")
    assert result.entities == ("Star Labs",)
    assert result.masked == "North" + " " * 18
    # "North Star" (9) vs "Star Labs" (8): the longer one wins; "Labs" alone is no alias.
    result = g.check("North Star Labs")
    assert result.entities == ("North Star",)
    assert result.masked == " " * 10 + " Labs"
    # "Star Labs" vs "Labs Team" (both 8): the leftmost wins; "Team" alone is no alias.
    result = g.check("Star Labs Team")
    assert result.entities == ("Star Labs",)
    assert result.masked == " " * 9 + " Team"


def test_masking_runs_to_a_fixpoint() -> None:
    # Masking 大阪 brings 東 and 京 together; the gate must not leave 東京 behind.
    result = GATE.check("東大阪京")
    assert set(result.entities) == {"東京", "大阪"}
    assert result.masked == "    "
    assert GATE.check(result.masked) == ScopeResult((), result.masked)


def test_an_alias_shared_by_two_entities_reports_both() -> None:
    g = gate({"Acme": ("ACME Corp",), "Acme Holdings": ("acme corp",)})
    assert g.check("ACME corp news").entities == ("Acme", "Acme Holdings")


def test_canonical_name_is_always_an_alias() -> None:
    g = gate({"Globex": ("グローベックス",)})
    assert g.check("about globex").entities == ("Globex",)


def test_empty_configuration_matches_nothing() -> None:
    g = ScopeGate(ScopeSettings())
    assert g.empty
    for question in ("Globex", "", "東京", "G l o b e x"):
        assert g.check(question) == ScopeResult((), question)


def test_aliases_that_normalise_to_nothing_are_ignored() -> None:
    g = gate({"Blank": ("\u200b", "   ")})
    assert not g.empty  # the canonical name still counts
    assert g.check("a \u200b b").entities == ()
    assert g.check("blank").entities == ("Blank",)


def test_built_from_the_configuration_file_section(tmp_path: Path) -> None:
    settings = settings_from_dict(
        {"scope": {"entities": {"Globex": ["グローベックス", "GBX"]}}}, root=tmp_path
    )
    g = ScopeGate(settings.scope)
    assert g.check("ＧＢＸ の件").entities == ("Globex",)
    assert g.check("グローベックス").entities == ("Globex",)


def test_normalise_for_scope() -> None:
    assert normalise_for_scope("Ｇ ｌ\u200bｏ\tＢ") == "glob"
    assert normalise_for_scope("ｸﾞ") == "グ"
    assert normalise_for_scope("e\u0301") == "é"
    assert normalise_for_scope(" \u200b\u3000") == ""


# ------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------

any_text = st.text(max_size=60)
context = st.text(alphabet=" 0123456789.,;:?!()-、。？", max_size=12)


@given(st.one_of(any_text, st.builds(lambda a, t: a + t, st.sampled_from(ALIASES), any_text)))
def test_masked_has_the_length_of_the_question_and_differs_only_by_spaces(question: str) -> None:
    result = GATE.check(question)
    assert len(result.masked) == len(question)
    assert all(m == q or m == " " for m, q in zip(result.masked, question, strict=True))
    for start, end in result.spans:
        assert result.masked[start:end] == " " * (end - start)
    assert bool(result.entities) == (result.masked != question)


@given(any_text, st.sampled_from(ALIASES), any_text)
def test_masking_is_idempotent_and_leaves_no_alias(before: str, alias: str, after: str) -> None:
    result = GATE.check(before + alias + after)
    again = GATE.check(result.masked)
    assert again == ScopeResult((), result.masked)


@given(
    st.sampled_from(ALIASES),
    st.data(),
    context,
    context,
)
def test_inserted_separators_never_hide_an_alias(
    alias: str, data: st.DataObject, before: str, after: str
) -> None:
    pieces = [alias[0]]
    for ch in alias[1:]:
        pieces.append("".join(data.draw(st.lists(st.sampled_from(SEPARATORS), max_size=2))))
        pieces.append(ch)
    variant = "".join(pieces)
    question = f"{before} {variant} {after}"
    result = GATE.check(question)
    assert any(alias in ENTITIES[e] for e in result.entities)
    start = len(before) + 1
    assert result.masked[start : start + len(variant)] == " " * len(variant)


@given(st.sampled_from(LATIN_ALIASES), st.data(), context, context)
def test_full_width_and_case_variants_match(
    alias: str, data: st.DataObject, before: str, after: str
) -> None:
    cased = "".join(c.upper() if data.draw(st.booleans()) else c.lower() for c in alias)
    wide = "".join(full_width(c) if data.draw(st.booleans()) else c for c in cased)
    question = f"{before} {wide} {after}"
    result = GATE.check(question)
    assert any(alias in ENTITIES[e] for e in result.entities)
    start = len(before) + 1
    assert result.masked[start : start + len(wide)] == " " * len(wide)


@given(any_text)
def test_text_without_any_alias_is_unchanged(question: str) -> None:
    stream = normalise_for_scope(question)
    assume(not any(normalise_for_scope(a) in stream for a in ALIASES))
    assert GATE.check(question) == ScopeResult((), question)


@given(st.text(alphabet="0123456789 qwvz.,?!\u200b\u3000\nＱＷ", max_size=80))
def test_unrelated_text_is_unchanged(question: str) -> None:
    assert GATE.check(question) == ScopeResult((), question)
