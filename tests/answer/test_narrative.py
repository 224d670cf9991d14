"""The checks on a model's narrative answer (clearance.answer.narrative, docs/design.md §5 and
invariant 7): citation markers, uncited sentences, numbers verified against the snippets a
sentence cites, conflicting sources, and the relevance gate before the prompt."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.answer.narrative import (
    CheckedAnswer,
    Sentence,
    _pairs,
    check_answer,
    content_terms,
    find_conflicts,
    numbers_in,
    relevant_snippets,
)
from clearance.llm.base import Snippet
from clearance.model import Sensitivity


def snip(ref: str, text: str, *, doc_id: str | None = None, title: str = "Source") -> Snippet:
    return Snippet(
        ref=ref,
        chunk_id=f"{doc_id or ref}#0",
        doc_id=doc_id or f"doc:{ref}",
        title=title,
        locator="section=1",
        uri=f"https://example.test/{ref}",
        text=text,
        sensitivity=Sensitivity.INTERNAL,
        corpus="ops",
        origin="human",
        trust="trusted",
    )


OFFICE = snip("S1", "The Tokyo office opens at 8:30 on weekdays. It has 1,320 square metres.")
VISITORS = snip("S2", "Visitors sign in at the front desk and receive a badge.")
PARKING = snip("S3", "Parking costs 25 dollars a day; the fee is 6.50 for an hour.")
SNIPPETS = (OFFICE, VISITORS, PARKING)


def kept(checked: CheckedAnswer) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.text, s.refs) for s in checked.sentences]


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1,320", {"1320"}),
        ("1320", {"1320"}),
        ("１，３２０", {"1320"}),
        ("1,320.0 and 6.50", {"1320", "6.5"}),
        ("FY2025 grew -3.5%", {"2025", "3.5"}),
        ("costs 5 [S12] [S3]", {"5"}),
        ("no digits here", set()),
    ],
)
def test_numbers_compare_by_value(text: str, values: set[str]) -> None:
    assert numbers_in(text) == {Decimal(v).normalize() for v in values}


@pytest.mark.parametrize("written", ["1320", "1,320", "１，３２０", "1,320.00", "１３２０"])
def test_a_number_written_another_way_is_still_supported(written: str) -> None:
    checked = check_answer(f"The office has {written} square metres. [S1]", SNIPPETS)
    assert checked.removed_for_numbers == 0
    assert kept(checked) == [(f"The office has {written} square metres.", ("S1",))]


@pytest.mark.parametrize("written", ["1,321", "13,200", "132", "1.32"])
def test_a_number_absent_from_the_cited_snippet_removes_the_sentence(written: str) -> None:
    checked = check_answer(f"The office has {written} square metres. [S1]", SNIPPETS)
    assert checked.sentences == ()
    assert checked.removed_for_numbers == 1


def test_a_number_must_be_in_a_snippet_that_sentence_cites() -> None:
    """25 is in S3, but the sentence cites S1: the number is refused."""
    checked = check_answer("Parking costs 25 dollars a day. [S1]", SNIPPETS)
    assert checked.sentences == () and checked.removed_for_numbers == 1
    ok = check_answer("Parking costs 25 dollars a day, 6.5 an hour. [S3]", SNIPPETS)
    assert kept(ok) == [("Parking costs 25 dollars a day, 6.5 an hour.", ("S3",))]


def test_leaving_out_punctuation_does_not_borrow_numbers_from_the_next_claim() -> None:
    """A marker followed by more words ends the claim: "costs 25 [S1] … [S3]" is two
    claims, and 25 must be in S1 — not in the S3 of the claim that follows."""
    checked = check_answer(
        "Parking costs 25 dollars [S1] Visitors sign in at the desk [S2]", SNIPPETS
    )
    assert kept(checked) == [("Visitors sign in at the desk", ("S2",))]
    assert checked.removed_for_numbers == 1
    honest = check_answer(
        "Parking costs 25 dollars [S3] Visitors sign in at the desk [S2]", SNIPPETS
    )
    assert kept(honest) == [
        ("Parking costs 25 dollars", ("S3",)),
        ("Visitors sign in at the desk", ("S2",)),
    ]


def test_only_the_fabricated_sentence_goes() -> None:
    answer = (
        "The Tokyo office opens at 8:30 on weekdays. [S1] "
        "Support is open 24/7 and costs 9,999 USD. [S1] "
        "Visitors sign in at the front desk. [S2]"
    )
    checked = check_answer(answer, SNIPPETS)
    assert kept(checked) == [
        ("The Tokyo office opens at 8:30 on weekdays.", ("S1",)),
        ("Visitors sign in at the front desk.", ("S2",)),
    ]
    assert checked.removed_for_numbers == 1
    assert "9,999" not in checked.render()


# --------------------------------------------------------------------------- markers


def test_markers_a_splitter_put_on_the_next_sentence_are_moved_back() -> None:
    answer = "The Tokyo office opens at 8:30. [S1] Visitors sign in at the front desk. [S2]"
    checked = check_answer(answer, SNIPPETS)
    assert kept(checked) == [
        ("The Tokyo office opens at 8:30.", ("S1",)),
        ("Visitors sign in at the front desk.", ("S2",)),
    ]
    assert checked.inferred == ()
    assert checked.render() == (
        "The Tokyo office opens at 8:30. [S1] Visitors sign in at the front desk. [S2]"
    )


def test_several_markers_and_marker_only_pieces_attach_to_the_sentence_they_close() -> None:
    checked = check_answer("Visitors get a badge at the desk. [S2][S1] [S3]", SNIPPETS)
    assert kept(checked) == [("Visitors get a badge at the desk.", ("S2", "S1", "S3"))]
    assert checked.cited_refs == ["S2", "S1", "S3"]


def test_an_uncited_sentence_is_an_inference_however_much_it_overlaps_a_snippet() -> None:
    """Sharing words with a snippet is not stating what it says: without a valid marker
    the sentence is kept apart, never given a citation it did not make."""
    checked = check_answer("Visitors receive a badge at the front desk.", SNIPPETS)
    assert checked.sentences == ()
    assert checked.inferred == (Sentence("Visitors receive a badge at the front desk.", ()),)


def test_a_sentence_the_model_marks_inferred_is_an_inference_even_when_cited() -> None:
    answer = (
        "Visitors sign in at the front desk. [S2] "
        "[inferred] So a visitor without a badge was never signed in. [S2] "
        "Guests probably wait in the lobby."
    )
    checked = check_answer(answer, SNIPPETS)
    assert kept(checked) == [("Visitors sign in at the front desk.", ("S2",))]
    assert checked.inferred == (
        Sentence("So a visitor without a badge was never signed in.", ("S2",)),
        Sentence("Guests probably wait in the lobby.", ()),
    )


@pytest.mark.parametrize("marker", ["[inferred]", "[Inferred]", "[ INFERRED ]"])
def test_the_inferred_marker_is_read_in_any_spelling_and_never_shown(marker: str) -> None:
    checked = check_answer(f"{marker} The desk is busy in the morning. [S2]", SNIPPETS)
    assert checked.inferred == (Sentence("The desk is busy in the morning.", ("S2",)),)
    assert "inferred" not in checked.render().lower()


def test_a_number_in_an_inference_must_be_in_a_snippet_it_cites() -> None:
    """An inference is no licence to invent: 1,320 is in S1, so the cited inference may
    carry it; an uncited one may carry no number at all, and 9,999 is in no snippet."""
    answer = (
        "[inferred] With 1,320 square metres the office is large. [S1] "
        "[inferred] It could seat 9,999 people. [S1] "
        "The office is probably 1,320 square metres."
    )
    checked = check_answer(answer, SNIPPETS)
    assert checked.inferred == (Sentence("With 1,320 square metres the office is large.", ("S1",)),)
    assert checked.removed_for_numbers == 2


def test_an_uncited_sentence_that_overlaps_nothing_is_an_inference() -> None:
    checked = check_answer("Bananas are yellow. [S7]", SNIPPETS)
    assert checked.sentences == ()
    assert checked.inferred == (Sentence("Bananas are yellow.", ()),)


@pytest.mark.parametrize(
    ("marker", "refs"), [("[s2]", ("S2",)), ("[ S2 ]", ("S2",)), ("[S2][S9]", ("S2",))]
)
def test_marker_spelling_and_markers_naming_no_snippet(marker: str, refs: tuple[str, ...]) -> None:
    """Case and spaces do not matter; a marker naming no snippet in the prompt is removed,
    and a sentence left with none is an inference."""
    checked = check_answer(f"Visitors receive a badge. {marker}", SNIPPETS)
    assert kept(checked) == [("Visitors receive a badge.", refs)]
    only_unknown = check_answer("Visitors receive a badge. [S9]", SNIPPETS)
    assert only_unknown.sentences == () and len(only_unknown.inferred) == 1


def test_an_empty_answer_keeps_nothing() -> None:
    assert check_answer("", SNIPPETS).sentences == ()
    assert check_answer("   [S1] ", SNIPPETS).sentences == ()


_PIECES = st.sampled_from(
    [
        "The Tokyo office opens at 8:30 on weekdays.",
        "It has 1,320 square metres.",
        "It has 1,999 square metres.",
        "Parking costs 25 dollars a day.",
        "Visitors sign in at the front desk.",
        "Bananas are yellow.",
        "The fee is 6.5 for an hour.",
        "[S1]",
        "[S2]",
        "[S3]",
        "[S4]",
        "[s3]",
        "[inferred]",
        " ",
        "\n",
        "7",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=12).map(" ".join))
def test_kept_sentences_only_cite_prompt_snippets_that_hold_their_numbers(answer: str) -> None:
    by_ref = {s.ref: s for s in SNIPPETS}
    checked = check_answer(answer, SNIPPETS)
    for sentence in checked.sentences:
        assert sentence.refs and set(sentence.refs) <= set(by_ref)
        supported = set().union(*(numbers_in(by_ref[r].text) for r in sentence.refs))
        assert numbers_in(sentence.text) <= supported
        assert "[" not in sentence.text
    for sentence in checked.inferred:
        assert set(sentence.refs) <= set(by_ref)
        supported = set().union(*(numbers_in(by_ref[r].text) for r in sentence.refs))
        assert numbers_in(sentence.text) <= supported


# --------------------------------------------------------------------------- conflicts

PUBLIC = snip(
    "S1",
    "Standard plan customers can reach support Monday to Friday, 9:00–17:00 local time.",
    doc_id="public:faq",
)
INTERNAL = snip(
    "S2",
    "Coverage: Standard plan customers are served Monday to Friday, 8:00–20:00 local time.",
    doc_id="ops:policy",
)
SAME_DOC = snip(
    "S3",
    "Standard plan customers can reach support Monday to Friday, 8:00–20:00 local time.",
    doc_id="public:faq",
)
AGREES = snip(
    "S4",
    "Standard plan customers can reach support Monday to Friday, 9:00–17:00 local time.",
    doc_id="ops:other",
)
UNRELATED = snip("S5", "The canteen serves lunch from 11:30 to 14:00.", doc_id="ops:canteen")


def answer_citing(snippet: Snippet) -> CheckedAnswer:
    return CheckedAnswer((Sentence(snippet.text, (snippet.ref,)),), 0)


def test_another_document_stating_other_numbers_is_a_conflict() -> None:
    found = find_conflicts(answer_citing(PUBLIC), [PUBLIC, INTERNAL, UNRELATED])
    assert found == [(INTERNAL.text, "S2")]


def test_no_conflict_with_the_same_document_agreement_or_unrelated_text() -> None:
    assert find_conflicts(answer_citing(PUBLIC), [PUBLIC, SAME_DOC]) == []
    assert find_conflicts(answer_citing(PUBLIC), [PUBLIC, AGREES]) == []
    assert find_conflicts(answer_citing(PUBLIC), [PUBLIC, UNRELATED]) == []


def test_sentences_without_numbers_raise_no_conflict() -> None:
    words = snip("S1", "Standard plan customers can reach support by e-mail.", doc_id="a")
    other = snip("S2", "Standard plan customers can reach support by e-mail 5 days.", doc_id="b")
    assert find_conflicts(answer_citing(words), [words, other]) == []


def test_each_conflicting_sentence_is_reported_once() -> None:
    checked = CheckedAnswer(
        (Sentence(PUBLIC.text, ("S1",)), Sentence(PUBLIC.text + " Really.", ("S1",))), 0
    )
    assert find_conflicts(checked, [PUBLIC, INTERNAL]) == [(INTERNAL.text, "S2")]


ASKED = "How many hours of annual leave do I earn per pay period?"
ANNUAL = replace(
    snip("S1", "You earn 4 hours per pay period in your first three years.", doc_id="leave"),
    title="Leave types",
    locator="section=Types of leave > Annual leave",
)


def test_another_kind_of_the_asked_thing_is_no_conflict() -> None:
    """The question asks about annual leave and the answer's section is about it; a
    sentence on sick leave, or on comp time, states other numbers about something else."""
    sick = replace(
        snip("S2", "You earn 4 sick leave hours per pay period, 104 in a year.", doc_id="sick"),
        title="Advanced sick leave",
    )
    comp = replace(
        snip(
            "S3",
            "Comp time hours you earn in your first years expire after 26 pay periods.",
            doc_id="comp",
        ),
        title="Overtime",
        locator="section=Compensatory (Comp) time",
    )
    snippets = [ANNUAL, sick, comp]
    assert find_conflicts(answer_citing(ANNUAL), snippets, question=ASKED) == []
    # Reverse proof: without the question's topic, both are taken for disagreements.
    assert find_conflicts(answer_citing(ANNUAL), snippets) == [
        (sick.text, "S2"),
        (comp.text, "S3"),
    ]


def test_the_asked_thing_named_in_the_other_sentence_or_its_section_is_a_conflict() -> None:
    in_section = replace(
        snip("S2", "You earn 5 hours per pay period in your first three years.", doc_id="b"),
        title="HR guide",
        locator="section=Annual leave",
    )
    in_sentence = replace(
        snip("S3", "Annual leave: you earn 6 hours per pay period in year one.", doc_id="c"),
        title="FAQ",
    )
    found = find_conflicts(answer_citing(ANNUAL), [ANNUAL, in_section, in_sentence], question=ASKED)
    assert found == [(in_section.text, "S2"), (in_sentence.text, "S3")]


def test_headings_pair_words_within_a_part_never_across_punctuation_or_parts() -> None:
    """ "Types of leave > Annual leave" names annual leave, not a "leave annual"; a title
    and the section below it are two parts; a run of CJK characters is several terms and
    pairs with nothing, whatever order a set gives them in."""
    assert _pairs(["Leave types", "Types of leave > Annual leave"]) == {
        ("leave", "type"),
        ("annual", "leave"),
    }
    assert _pairs(["HR handbook", "Leave"]) == {("hr", "handbook")}
    assert (
        _pairs(["Sick-leave rules"])
        == _pairs(["Sick 🤒 leave rules"])
        == {
            ("sick", "leave"),
            ("leave", "rule"),
        }
    )
    assert _pairs(["带薪育儿假 leave policy"]) == {("leave", "policy")}


def test_a_sentence_stating_some_of_the_answers_numbers_disagrees() -> None:
    """A figure for the same thing beside "20 days a year, 5 days carried over": "5 days
    a year" disagrees, though 5 is among the answer's numbers."""
    answer = snip("S1", "Annual leave is 20 days a year, 5 days carried over.", doc_id="a")
    other = snip("S2", "Annual leave is 5 days a year, none carried over.", doc_id="b")
    assert find_conflicts(answer_citing(answer), [answer, other]) == [(other.text, "S2")]


def test_a_heading_naming_the_thing_without_another_kind_still_contradicts() -> None:
    general = replace(
        snip(
            "S2", "You earn 6 hours of leave per pay period in your first three years.", doc_id="b"
        ),
        title="HR handbook",
        locator="section=Leave",
    )
    found = find_conflicts(answer_citing(ANNUAL), [ANNUAL, general], question=ASKED)
    assert found == [(general.text, "S2")]


def test_a_question_whose_words_no_cited_heading_holds_keeps_every_conflict() -> None:
    """Nothing narrows the topic when the answer's source names none of the question's
    words: the paraphrased support hours still disagree."""
    asked = "When can Standard plan customers reach support?"
    found = find_conflicts(answer_citing(PUBLIC), [PUBLIC, INTERNAL, UNRELATED], question=asked)
    assert found == [(INTERNAL.text, "S2")]


def _fiscal_years(text: str) -> set[str]:
    return set(re.findall(r"FY\d{4}", text))


def test_figures_of_different_periods_are_no_conflict() -> None:
    """FY2024's revenue does not contradict FY2025's: rows of one table, two documents."""
    fy2025 = snip("S1", "Results by region: Japan — Revenue (USD m), FY2025: 486.9", doc_id="a")
    fy2024 = snip("S2", "Results by region: Japan — Revenue (USD m), FY2024: 448.2", doc_id="b")
    other_fy2025 = snip(
        "S3", "Results by region: Japan — Revenue (USD m), FY2025: 490.1", doc_id="c"
    )
    checked = answer_citing(fy2025)
    assert find_conflicts(checked, [fy2025, fy2024, other_fy2025], periods=_fiscal_years) == [
        (other_fy2025.text, "S3")  # the same period with another figure still is one
    ]
    # Reverse proof: without the periods, the other year is taken for a disagreement.
    assert (fy2024.text, "S2") in find_conflicts(checked, [fy2025, fy2024])


# --------------------------------------------------------------------------- relevance gate


def test_content_terms_drop_numbers_and_stem_plurals() -> None:
    assert content_terms("How many flights in FY2025 for 3 offices?") == {
        "many",
        "flight",
        "office",
    }
    assert content_terms("What is the class?") == {"class"}


def test_relevant_snippets_need_enough_of_the_question() -> None:
    portal = snip("S1", "Enter the portal address and sign in.", title="VPN guide")
    vpn_only = snip("S2", "The VPN disconnects after 12 hours.", title="Network notes")
    titled = snip("S3", "Sign in with Okta.", title="VPN Portal")
    other = snip("S4", "Lunch is at noon.", title="Canteen")
    question = "What is the VPN portal address?"  # vpn, portal, address: 2 needed
    assert relevant_snippets(question, [portal, vpn_only, titled, other]) == [portal, titled]
    assert relevant_snippets(question, [vpn_only], min_coverage=0.3) == [vpn_only]
    assert relevant_snippets(question, [titled], min_coverage=1.0) == []


def test_a_question_without_content_terms_has_no_relevant_snippets() -> None:
    assert relevant_snippets("What is it?", SNIPPETS) == []
    assert relevant_snippets("2025?", SNIPPETS) == []
