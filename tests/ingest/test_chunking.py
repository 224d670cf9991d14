"""chunk_sections: examples for each rule, and properties over arbitrary text."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.ingest.chunking import CJK_WEIGHT, chunk_sections
from clearance.model import Section

_WS = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _WS.sub("", text)


def _covers_in_order(original: str, pieces: list[str]) -> bool:
    """Whether ``pieces``, each placed at one of its occurrences in ``original``, in order,
    each starting after the previous start and no later than the previous end, cover
    ``original`` from its first to its last character (so dropping the overlaps of
    consecutive pieces gives back ``original`` exactly)."""
    if not pieces:
        return not original
    if not original.startswith(pieces[0]):
        return False
    starts = {0}  # where the previous piece may have been placed
    for previous, piece in itertools.pairwise(pieces):
        starts = {
            pos
            for start in starts
            for pos in range(start + 1, start + len(previous) + 1)
            if original.startswith(piece, pos)
        }
        if not starts:
            return False
    return any(start + len(pieces[-1]) == len(original) for start in starts)


# --------------------------------------------------------------------------- examples


def test_short_sections_pass_through() -> None:
    sections = [Section("Hello.", "page=1"), Section("World.", "page=2")]
    assert chunk_sections(sections, 100, 10) == [("Hello.", "page=1"), ("World.", "page=2")]


def test_blank_sections_are_dropped() -> None:
    sections = [Section("  \n\t", "page=1"), Section("", "page=2"), Section("x", "page=3")]
    assert chunk_sections(sections, 100, 10) == [("x", "page=3")]


def test_same_locator_sections_merge_while_they_fit() -> None:
    sections = [
        Section("one", "section=A"),
        Section("two", "section=A"),
        Section("three", "section=A"),
        Section("four", "section=B"),
        Section("five", "section=B"),
    ]
    assert chunk_sections(sections, 12, 0) == [
        ("one\n\ntwo", "section=A"),
        ("three", "section=A"),
        ("four\n\nfive", "section=B"),
    ]


def test_atomic_sections_are_never_merged_or_split() -> None:
    row = "Region: Japan | Revenue: 120 | " * 10
    sections = [
        Section("intro", "section=A"),
        Section(row, "section=A,table=1,row=Japan", atomic=True),
        Section("outro", "section=A"),
        Section(" padded ", "section=A,table=1,row=EU", atomic=True),
        Section(" padded ", "section=A,table=1,row=EU", atomic=True),
    ]
    assert chunk_sections(sections, 40, 5) == [
        ("intro", "section=A"),
        (row, "section=A,table=1,row=Japan"),
        ("outro", "section=A"),
        (" padded ", "section=A,table=1,row=EU"),
        (" padded ", "section=A,table=1,row=EU"),
    ]


def test_long_text_splits_at_sentences_with_overlap() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(1, 11))
    pieces = chunk_sections([Section(text, "page=4")], 80, 20)
    assert all(locator == "page=4" for _, locator in pieces)
    assert all(len(piece) <= 80 for piece, _ in pieces)
    assert pieces[0][0] == (  # exactly 80 characters
        "Sentence number 1 is here. Sentence number 2 is here. Sentence number 3 is here."
    )
    # every piece but the last ends a sentence; every piece starts at a word
    assert all(piece.endswith(".") for piece, _ in pieces)
    assert all(text.startswith(piece, text.index(piece)) for piece, _ in pieces)
    words = set(text.split())
    assert all(piece.split()[0] in words for piece, _ in pieces)
    # consecutive pieces share some text (the overlap)
    for (a, _), (b, _) in itertools.pairwise(pieces):
        assert text.index(b) < text.index(a) + len(a)
    assert _covers_in_order(_squash(text), [_squash(p) for p, _ in pieces])


def test_paragraph_breaks_are_preferred() -> None:
    first = "First paragraph has some words in it."
    second = "Second paragraph is also here and long."
    pieces = chunk_sections([Section(f"{first}\n\n{second}", "page=1")], 60, 0)
    assert pieces == [(first, "page=1"), (second, "page=1")]


def test_no_overlap() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    pieces = [p for p, _ in chunk_sections([Section(text, "x=1")], 20, 0)]
    assert " ".join(pieces) == text
    assert all(len(p) <= 20 for p in pieces)


def test_word_longer_than_size_is_cut_at_size() -> None:
    word = "x" * 50
    pieces = [p for p, _ in chunk_sections([Section(f"a {word} b", "x=1")], 20, 5)]
    assert pieces == ["a", word[:20], word[20:40], word[40:] + " b"]


def test_cjk_splits_on_punctuation() -> None:
    text = "売上は前年比で増加しました。利益も大きく増えました。来期も成長を見込みます。"
    # 16 CJK characters: a size of 64 (each counts CJK_WEIGHT characters of spaced text)
    pieces = [p for p, _ in chunk_sections([Section(text, "section=日本")], 16 * CJK_WEIGHT, 0)]
    assert pieces == [
        "売上は前年比で増加しました。",
        "利益も大きく増えました。",
        "来期も成長を見込みます。",
    ]


def test_cjk_without_punctuation_cuts_at_exactly_size() -> None:
    text = "あ" * 25 + "い" * 25
    pieces = [p for p, _ in chunk_sections([Section(text, "lines=1-1")], 20 * CJK_WEIGHT, 0)]
    assert pieces == [text[:20], text[20:40], text[40:]]


def test_a_cjk_character_counts_as_a_token_sized_share_of_the_chunk() -> None:
    """An 800-size chunk of Japanese is about as many tokens as one of English (a CJK
    character is about a token, an English token four or five characters), so two fit a
    prompt's budget side by side and the embedding model reads all of it. English is cut
    as before; a mixed section by its own share of CJK. Reverse proof: counted as plain
    characters, the Japanese chunk would be 800 characters long."""
    japanese = "当期の連結売上高は前期比で増加しました。" * 100
    english = "Revenue for the year rose on the prior year. " * 50
    ja = [p for p, _ in chunk_sections([Section(japanese, "section=概要")], 800, 120)]
    en = [p for p, _ in chunk_sections([Section(english, "section=Summary")], 800, 120)]
    assert max(len(p) for p in ja) <= 800 // CJK_WEIGHT
    assert max(len(p) for p in en) > 800 // 2 and all(len(p) <= 800 for p in en)
    assert _covers_in_order(japanese, ja)
    # A short Japanese section that fits 800 plain characters is still cut.
    assert len(ja) > len(japanese) // 800


def test_deterministic() -> None:
    text = "Lorem ipsum dolor sit amet. " * 40
    sections = [Section(text, "page=1"), Section("row", "page=1,table=1,row=a", atomic=True)]
    assert chunk_sections(sections, 100, 30) == chunk_sections(sections, 100, 30)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (10, 10), (10, -1)])
def test_bad_parameters(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="chunk"):
        chunk_sections([Section("x", "page=1")], size, overlap)


# --------------------------------------------------------------------------- properties

_WORDS = st.text(alphabet=st.sampled_from("abcdefgh日本語売上。、.!? \n"), min_size=0, max_size=400)
_CJK = st.text(alphabet=st.sampled_from("売上利益増加日本語。、！？"), min_size=1, max_size=300)


@st.composite
def _sections(draw: st.DrawFn) -> list[Section]:
    count = draw(st.integers(min_value=0, max_value=6))
    out: list[Section] = []
    for i in range(count):
        text = draw(_WORDS)
        if draw(st.booleans()):  # atomic sections get locators no other section has
            out.append(Section(text, f"page=1,table=1,row={i}", atomic=True))
        else:
            out.append(Section(text, draw(st.sampled_from(["page=1", "page=2", "section=A"]))))
    return out


@st.composite
def _size_overlap(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(min_value=1, max_value=120))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    return size, overlap


@settings(max_examples=300, deadline=None)
@given(sections=_sections(), params=_size_overlap())
def test_properties(sections: list[Section], params: tuple[int, int]) -> None:
    size, overlap = params
    pieces = chunk_sections(sections, size, overlap)
    kept = [s for s in sections if s.text.strip()]
    atomic = {(s.text, s.locator) for s in kept if s.atomic}

    # no non-atomic piece is longer than size, none is blank
    for text, locator in pieces:
        assert text.strip()
        if (text, locator) not in atomic:
            assert len(text) <= size
            assert text == text.strip()

    # atomic sections come out unchanged, in order
    assert [p for p in pieces if p in atomic] == [(s.text, s.locator) for s in kept if s.atomic]

    # every piece keeps a locator of the input
    assert {locator for _, locator in pieces} <= {s.locator for s in kept}

    # dropping overlaps recovers all non-whitespace content in order
    original = "".join(_squash(s.text) for s in sections)
    assert _covers_in_order(original, [_squash(text) for text, _ in pieces])

    # deterministic
    assert chunk_sections(sections, size, overlap) == pieces


@settings(max_examples=200, deadline=None)
@given(text=_CJK, params=_size_overlap())
def test_cjk_property(text: str, params: tuple[int, int]) -> None:
    size, overlap = params
    pieces = [p for p, _ in chunk_sections([Section(text, "lines=1-1")], size, overlap)]
    assert all(0 < len(p) <= size for p in pieces)
    assert _covers_in_order(text, pieces)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=15), min_size=1, max_size=60),
    params=_size_overlap(),
)
def test_words_are_cut_only_when_longer_than_size(
    words: list[str], params: tuple[int, int]
) -> None:
    size, overlap = params
    text = " ".join(words)
    pieces = [p for p, _ in chunk_sections([Section(text, "page=1")], size, overlap)]
    for piece in pieces:
        for word in piece.split(" "):
            if word not in words:  # a fragment: only allowed from a word longer than size
                assert any(len(w) > size and word in w for w in words), (word, piece)


def test_an_overlap_begins_where_a_list_item_or_sentence_begins_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hard-wrapped list (as Markdown handbooks are written): the next piece opens at a
    list item inside the overlap, not mid-sentence at a wrapped line ("listed, have your
    supervisor …"). Reverse proof: overlaps that start at any word open mid-item."""
    items = [
        f"- Step {n}: select your supervisor if your supervisor is not\n  listed, have your "
        f"supervisor follow the steps for item {n}"
        for n in range(12)
    ]
    pieces = [p for p, _ in chunk_sections([Section("\n".join(items), "s")], 300, 120)]
    assert len(pieces) > 2
    for piece in pieces[1:]:
        assert piece.startswith("- Step "), piece[:40]
    from clearance.ingest import chunking

    monkeypatch.setattr(chunking, "_opens_unit", lambda text, index: True)
    anywhere = [p for p, _ in chunk_sections([Section("\n".join(items), "s")], 300, 120)]
    assert not all(p.startswith("- Step ") for p in anywhere[1:])


def _opens_at_a_unit(text: str, piece: str) -> bool:
    """Whether ``piece`` begins where ``text`` begins or where a sentence, a list item or a
    paragraph of it begins."""
    at = text.index(piece)
    before = text[:at].rstrip()
    return (
        at == 0 or before.endswith(("。", "！", "？", ".", "!", "?")) or text[at:].startswith("- ")
    )


# GitLab's Japanese bereavement policy, as its handbook page words it: sentences with no
# space after "。", one of them a list item.
_BEREAVEMENT = (
    "GitLab では、愛する人を失うことが人生で最も困難な経験の一つであることを理解しています。"
    "このポリシーは、困難な時期のチームメンバーへの柔軟性とサポートへのコミットメントを維持"
    "しながら、忌引休暇のガイドラインを定めています。\n"
    "GitLab の忌引休暇は、私たちの Flexible PTO フレームワークの下に含まれており、損失に直面"
    "したときに必要な時間を取ることができます。この給付は、すべてのチームメンバーに勤務初日"
    "から利用可能です。\n"
    "- 柔軟な期間: 忌引日数に設定された制限はありません。悲しみが各人と状況に固有であることを"
    "認識しています。忌引を継続的または断続的に取ることができます。\n"
    "- 包括的なアプローチ: 故人との関係に基づいて休暇を制限したり段階的にしたりしません。"
)


def test_a_japanese_piece_opens_at_a_sentence_with_no_space_after_the_last() -> None:
    """Japanese puts no space after "。", so the overlap of a piece found no sentence start
    and the next piece opened inside a word ("ットメントを維持しながら", quoted as an answer's
    first sentence). Every piece now opens at a sentence or list item, and the text is
    still covered. Reverse proof: the pattern without the CJK sentence end opens mid-word."""
    pieces = [p for p, _ in chunk_sections([Section(_BEREAVEMENT, "s")], 800, 200)]
    assert len(pieces) > 2
    assert all(_opens_at_a_unit(_BEREAVEMENT, p) for p in pieces), [p[:12] for p in pieces]
    assert "".join(_BEREAVEMENT.split()).endswith("".join(pieces[-1].split()))
    for sentence in _BEREAVEMENT.replace("\n", "").split("。")[:-1]:
        assert any(sentence in p for p in pieces), sentence


def test_reverse_proof_without_the_cjk_sentence_end(monkeypatch: pytest.MonkeyPatch) -> None:
    from clearance.ingest import chunking

    spaced_only = re.compile(
        r"(?<=[.!?。！？])[\s]+|\n[^\S\n]*(?=[-*•]\s|\d+[.)]\s)|\n[^\S\n]*\n\s*"
    )
    monkeypatch.setattr(chunking, "_UNIT_START", spaced_only)
    monkeypatch.setattr(
        chunking,
        "_overlap_unit",
        lambda text, pos, start, end: chunking._next_unit(text, start, end),
    )
    pieces = [p for p, _ in chunk_sections([Section(_BEREAVEMENT, "s")], 800, 200)]
    assert not all(_opens_at_a_unit(_BEREAVEMENT, p) for p in pieces)


def test_an_overlap_with_no_unit_start_reaches_back_or_gives_way() -> None:
    """English sentences longer than the overlap: where no sentence begins inside the
    overlap, the next piece opens at the last sentence of the earlier piece's second half,
    or, with none there, where the earlier piece ends; never mid-sentence. Each piece
    still reaches past the one before."""
    sentences = [
        f"Sentence {n} is long enough that an overlap of forty characters never holds the "
        f"start of another sentence, number {n}."
        for n in range(12)
    ]
    text = " ".join(sentences)
    pieces = [p for p, _ in chunk_sections([Section(text, "s")], 300, 40)]
    assert len(pieces) > 3
    assert all(p.startswith("Sentence ") for p in pieces), [p[:20] for p in pieces]
    ends = [text.index(p) + len(p) for p in pieces]
    assert ends == sorted(set(ends)) and ends[-1] == len(text)
    assert all(s in " ".join(pieces) for s in sentences)


def test_reverse_proof_an_overlap_taken_where_it_falls(monkeypatch: pytest.MonkeyPatch) -> None:
    from clearance.ingest import chunking

    monkeypatch.setattr(
        chunking,
        "_overlap_unit",
        lambda text, pos, start, end: chunking._next_unit(text, start, end),
    )
    text = " ".join(
        f"Sentence {n} is long enough that an overlap of forty characters never holds the "
        f"start of another sentence, number {n}."
        for n in range(12)
    )
    pieces = [p for p, _ in chunk_sections([Section(text, "s")], 300, 40)]
    assert not all(p.startswith("Sentence ") for p in pieces)


def test_no_piece_opens_after_an_abbreviations_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "… check in with the Exec team member for your team (ie. James, Tim, or Charles) to
    get their confirmation …" is one sentence: a piece opened at "James, Tim, or Charles) to
    get their confirmation", quoted as an answer's first sentence. Reverse proof: with the
    period of "ie." ending a sentence, a piece opens there."""
    from clearance.ingest import chunking

    text = " ".join(
        f"Rule {n}: please check in with the relevant Exec team member for your team (ie. "
        f"James, Tim, or Charles) to get their confirmation before any side gig."
        for n in range(12)
    )
    pieces = [p for p, _ in chunk_sections([Section(text, "s")], 300, 80)]
    assert len(pieces) > 2
    assert all(p.startswith("Rule ") for p in pieces), [p[:30] for p in pieces]
    monkeypatch.setattr(chunking, "ends_with_abbreviation", lambda before: False)
    pieces = [p for p, _ in chunk_sections([Section(text, "s")], 300, 80)]
    assert any(p.startswith("James") for p in pieces), [p[:30] for p in pieces]
