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

__all__ = ["MIN_CONSONANTS", "katakana_words", "sounds_alike"]

#: The fewest consonants two names must share for katakana to be read as a Latin name.
MIN_CONSONANTS = 4

_KATAKANA_WORD = re.compile(r"[\u30a1-\u30fa\u30fc]{3,}")
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


def sounds_alike(katakana: str, latin: str) -> bool:
    """Whether ``katakana`` is ``latin`` written as Japanese writes a foreign name."""
    if not latin.isascii():
        return False
    romaji = jaconv.kana2alphabet(jaconv.kata2hira(unicodedata.normalize("NFKC", katakana)))
    sound = _consonants(romaji)
    return len(sound) >= MIN_CONSONANTS and sound == _consonants(latin)
