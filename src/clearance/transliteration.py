"""A Latin name written in katakana, as Japanese writes foreign names: コニカミノルタ is
Konica Minolta, マイクロソフト Microsoft.

The katakana is read out in romaji (``jaconv``) and both spellings are reduced to the
consonants they sound: letters that katakana cannot tell apart are made one (c, k and q;
l and r; b and v; s and z), the vowels katakana adds between consonants are dropped
("ku-ro" for the "cro" of Microsoft), and so are h, w and y, which romaji spells where
English spells none ("shi", "kiya"). Two names sound alike when what is left is the same
and long enough (:data:`MIN_CONSONANTS`) that no short name matches by chance: アマゾン
(msn) is not read as Amazon, and ヘルスケア (rsk) as no company.

This is a rule of thumb for names only; a word the katakana translates (サービス for
"services") is no name, and nothing here reads one.
"""

from __future__ import annotations

import re
import unicodedata

import jaconv

__all__ = ["MIN_CONSONANTS", "katakana_sound", "katakana_words", "latin_sound", "sounds_alike"]

#: The fewest consonants two names must share for katakana to be read as a Latin name.
MIN_CONSONANTS = 4

# Katakana, its long vowel mark and the dot between the words of a name (ゴールドマン・サックス).
_KATAKANA_WORD = re.compile(r"[\u30a1-\u30fa\u30fb\u30fc]{3,}")
_ALIKE = str.maketrans({"c": "k", "q": "k", "l": "r", "v": "b", "z": "s", "x": "k"})
_SILENT = re.compile(r"[^bdfgjkmnprst]")
_DOUBLED = re.compile(r"(.)\1+")


def katakana_words(text: str) -> list[str]:
    """The runs of katakana in ``text`` (NFKC, so half-width kana count), in order."""
    return list(dict.fromkeys(_KATAKANA_WORD.findall(unicodedata.normalize("NFKC", text))))


def _consonants(latin: str) -> str:
    """What ``latin`` sounds, reduced as the module docstring says."""
    letters = re.sub(r"[^a-z]", "", latin.casefold().replace("ph", "f").replace("ck", "k"))
    return _DOUBLED.sub(r"\1", _SILENT.sub("", letters.translate(_ALIKE)))


def katakana_sound(katakana: str) -> str:
    """What ``katakana`` sounds, read out in romaji and reduced (the module docstring)."""
    return _consonants(
        jaconv.kana2alphabet(jaconv.kata2hira(unicodedata.normalize("NFKC", katakana)))
    )


def latin_sound(latin: str) -> str:
    """What a name in Latin letters sounds, reduced alike; empty for any other script."""
    return _consonants(latin) if latin.isascii() else ""


def sounds_alike(katakana: str, latin: str) -> bool:
    """Whether ``katakana`` is ``latin`` written as Japanese writes a foreign name."""
    sound = katakana_sound(katakana)
    return len(sound) >= MIN_CONSONANTS and sound == latin_sound(latin)
