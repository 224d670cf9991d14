"""Latin names written in katakana (clearance.transliteration)."""

from __future__ import annotations

import pytest

from clearance.transliteration import katakana_words, sounds_alike


@pytest.mark.parametrize(
    ("katakana", "latin"),
    [
        ("コニカミノルタ", "Konica Minolta"),
        ("マイクロソフト", "Microsoft"),
        ("パナソニック", "Panasonic"),
        ("ニンテンドー", "Nintendo"),
        ("ゴールドマン・サックス", "Goldman Sachs"),  # a name of two words
        ("ｺﾆｶﾐﾉﾙﾀ", "Konica Minolta"),  # half-width kana
    ],
)
def test_a_latin_name_written_in_katakana_sounds_alike(katakana: str, latin: str) -> None:
    assert sounds_alike(katakana, latin)


@pytest.mark.parametrize(
    ("katakana", "latin"),
    [
        ("ミノルタ", "Konica Minolta"),  # part of a name is another name
        ("アマゾン", "Amazon"),  # too few consonants to tell from chance
        ("ヘルスケア", "Healthcare"),  # a word, not a name, and spelt otherwise
        ("サービス", "Services"),
        ("コニカミノルタ", "コニカミノルタ"),  # no Latin name
        ("トヨタ", "Toyota"),
    ],
)
def test_other_words_and_short_names_do_not(katakana: str, latin: str) -> None:
    assert not sounds_alike(katakana, latin)


def test_the_katakana_of_a_question_are_its_runs_of_three_or_more() -> None:
    question = "コニカミノルタの2024年3月期の上期って、売上高はどれくらい?ソニーは?"
    assert katakana_words(question) == ["コニカミノルタ", "ソニー"]
    assert katakana_words("売上高は?") == []
