"""Stage 2 of the request path: the scope gate (docs/design.md §1).

Some entities (competitors, external companies) must never be answered about. They are
configured in ``[scope.entities]`` as canonical name → aliases, in any language. The gate
runs on the **raw** question, before anything else reads it, and is deterministic: no model,
no fuzzy score, the same question always gives the same result.

Matching rules (each is a guarantee the tests freeze):

* **Normalisation.** Text and aliases are compared after NFKC + casefold, so full-width
  forms (``Ｇｌｏｂｅｘ``), half-width katakana and case never hide an alias.
* **Look-alike letters are folded.** Cyrillic and Greek letters that are drawn like a Latin
  letter (``о`` U+043E, ``е``, ``а``, ``ο`` U+03BF, ``ν`` …) compare as that Latin letter, on
  both sides: ``Glоbex`` with a Cyrillic ``о`` matches ``Globex``. The fold maps one letter
  to one letter, so positions and masking are unchanged.
* **Invisible separators are ignored.** Whitespace and invisible characters (zero-width
  space/joiners, BOM, soft hyphen, variation selectors and the other default-ignorable
  code points) are removed before comparison, *inside* aliases too: ``G l o b e x`` and
  ``Glo\u200bbex`` match ``Globex``, and ``GlobexJapan`` matches the alias
  ``Globex Japan``. Punctuation is significant (``Glo-bex`` does not match).
* **Word boundaries for spaced scripts.** An alias edge that is a letter or digit of a
  script written with spaces (Latin, Cyrillic, Greek, digits, …) must sit on a boundary:
  the neighbouring character in the original text is absent, whitespace, invisible,
  punctuation, or a character of a script written without spaces. So ``Globexa`` does not
  match ``Globex``, but ``Globexの売上`` and ``Globex's`` do. An alias edge in a script
  written without spaces (Han, kana, Hangul, Thai, …) matches anywhere. An invisible
  character next to an alias counts as a boundary: it never hides a match.
* **Longest first, non-overlapping.** Among overlapping candidates the longest alias
  (in normalised characters) wins, ties going to the leftmost; so ``Globex Japan`` is one
  match, not ``Globex`` plus a stray ``Japan``.
* **Masking.** Every matched span, in the *original* string's character positions and
  including any separators inside it, is replaced by as many spaces as it has characters:
  ``len(masked) == len(question)``. Masking runs to a fixpoint, so no alias can be
  reassembled from the masked text (``check(masked)`` finds nothing and leaves it as is).

Composition across characters is preserved: a base character and the combining marks that
follow it (including half-width dakuten) are normalised together, so ``e`` + U+0301
matches ``é`` and ``ｶﾞ`` matches ``ガ``. The gate errs toward refusing: with separators
ignored, a question can match an alias spread over several words (``a g lobe x``); that is
the price of not being fooled by inserted spaces.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clearance.config import ScopeSettings

__all__ = ["ScopeGate", "ScopeResult", "normalise_for_scope"]

# Scripts written without spaces between words: an alias edge in one of these matches
# anywhere, and such a character next to a Latin alias counts as a word boundary.
_UNSPACED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul compatibility Jamo, Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)

# Default-ignorable code points that are not already format (Cf) or control (Cc) characters.
_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xE0100, 0xE01EF),  # variation selectors supplement
)


def _in(ranges: Sequence[tuple[int, int]], ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in ranges)


@functools.lru_cache(maxsize=4096)
def _ignorable(ch: str) -> bool:
    """Whitespace and characters that render as nothing."""
    return (
        ch.isspace()
        or unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp")
        or _in(_IGNORABLE_RANGES, ch)
    )


@functools.lru_cache(maxsize=4096)
def _spaced_word_char(ch: str) -> bool:
    """A letter or digit of a script that separates words with spaces."""
    return ch.isalnum() and not _in(_UNSPACED_RANGES, ch)


@functools.lru_cache(maxsize=4096)
def _continues_unit(ch: str) -> bool:
    """True if ``ch`` composes with the character before it (combining marks, half-width
    dakuten, conjoining Hangul vowels and finals), so both must be normalised together."""
    if unicodedata.combining(ch):
        return True
    if "\u1160" <= ch <= "\u11ff":
        return True
    folded = unicodedata.normalize("NFKC", ch)
    return bool(folded) and unicodedata.combining(folded[0]) != 0


# Lower-case Cyrillic and Greek letters drawn like a Latin letter (after casefold), after
# Unicode's confusables data (UTS #39) for the letters a Latin alias can be spelt with.
_LOOK_ALIKES = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i",
        "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ɡ": "g",
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
    }
)  # fmt: skip


def _fold(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return folded.translate(_LOOK_ALIKES)


@dataclass(frozen=True, slots=True)
class _Stream:
    """The comparison form of a text and the way back to the original positions.

    ``chars`` is the normalised text with every ignorable character removed; ``unit[j]`` is
    the index of the unit that produced ``chars[j]``; ``bounds[u]`` is the original
    ``[start, end)`` of unit ``u``. Units that produced no character (whitespace, invisible
    characters) keep their index, so a gap in ``unit`` means "separated by something
    invisible"."""

    chars: str
    unit: tuple[int, ...]
    bounds: tuple[tuple[int, int], ...]


def _stream(text: str) -> _Stream:
    chars: list[str] = []
    unit: list[int] = []
    bounds: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and _continues_unit(text[j]):
            j += 1
        u = len(bounds)
        bounds.append((i, j))
        for ch in _fold(text[i:j]):
            if not _ignorable(ch):
                chars.append(ch)
                unit.append(u)
        i = j
    return _Stream("".join(chars), tuple(unit), tuple(bounds))


def normalise_for_scope(text: str) -> str:
    """The comparison form the gate uses: NFKC + casefold, whitespace and invisible
    characters removed. Exposed so callers and tests can see what an alias becomes."""
    return _stream(text).chars


@dataclass(frozen=True, slots=True)
class ScopeResult:
    """What the gate found.

    ``entities`` are the canonical names matched, in order of first appearance; ``masked``
    is the question with every matched span replaced by equal-length spaces (same length as
    the question); ``spans`` are the masked ``[start, end)`` ranges of the original string,
    sorted. Offsets only — no question text — so a result may be traced."""

    entities: tuple[str, ...]
    masked: str
    spans: tuple[tuple[int, int], ...] = ()

    @property
    def out_of_scope(self) -> bool:
        """True when the question names a configured entity: refuse ``out_of_scope_entity``."""
        return bool(self.entities)


@dataclass(frozen=True, slots=True)
class _Alias:
    chars: str
    entities: tuple[str, ...]
    left_boundary: bool
    right_boundary: bool


class ScopeGate:
    """Deterministic matcher of ``[scope.entities]``, compiled once per settings.

    Construction normalises every alias once, drops the ones that normalise to nothing and
    merges aliases shared by several entities (a match reports all of them).
    :meth:`check` is pure and thread-safe."""

    def __init__(self, settings: ScopeSettings) -> None:
        by_chars: dict[str, list[str]] = {}
        for canonical, aliases in settings.entities.items():
            for alias in (canonical, *aliases):
                chars = normalise_for_scope(alias)
                if not chars:
                    continue
                owners = by_chars.setdefault(chars, [])
                if canonical not in owners:
                    owners.append(canonical)
        self._aliases: tuple[_Alias, ...] = tuple(
            _Alias(
                chars=chars,
                entities=tuple(owners),
                left_boundary=_spaced_word_char(chars[0]),
                right_boundary=_spaced_word_char(chars[-1]),
            )
            for chars, owners in sorted(by_chars.items())
        )

    @property
    def empty(self) -> bool:
        """True when no entity is configured: :meth:`check` never matches."""
        return not self._aliases

    def check(self, question: str) -> ScopeResult:
        """Match the raw question and mask what matched (see the module docstring)."""
        if not self._aliases:
            return ScopeResult((), question)
        found = self._fixpoint(_stream(question))
        found.sort(key=lambda f: (f[0], f[1]))
        entities = tuple(dict.fromkeys(name for _, _, names in found for name in names))
        spans = _merge_spans((s, e) for s, e, _ in found)
        # Masked through the merged spans: a later round's span can enclose every earlier
        # one, and blanking each of them in turn would be quadratic again.
        pieces: list[str] = []
        done = 0
        for start, end in spans:
            pieces += (question[done:start], " " * (end - start))
            done = end
        pieces.append(question[done:])
        return ScopeResult(entities, "".join(pieces), spans)

    def _fixpoint(self, stream: _Stream) -> list[tuple[int, int, tuple[str, ...]]]:
        """Every span masked, as original ``[start, end)`` with the entities matched.

        Masking can bring two separated pieces of an alias together ("東大阪京" with
        aliases 大阪 and 東京), so matching repeats in rounds until a round matches
        nothing. Masked characters are whitespace, which the comparison form drops, so
        masking a span is deleting its units' characters from the stream (a linked list
        here) and leaves a *junction* where the neighbours now meet. Every occurrence that
        is new in a round crosses or touches a junction of the previous round (any other
        one was already a candidate, and lost to an overlapping winner), so after the
        first round only windows of ``longest alias`` characters on each side of a
        junction are searched: linear in the question, where re-reading the whole
        question every round was quadratic (one round per match in "g g g … lobex lobex").

        Rounds are otherwise exactly what :meth:`_select` does with a whole text: among
        overlapping candidates the longest wins, ties going to the leftmost."""
        chars, unit, bounds = stream.chars, stream.unit, stream.bounds
        n = len(chars)
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        head = 0  # the first live position (n when none is left)
        reach = max(len(a.chars) for a in self._aliases)
        windows: list[list[int]] = [list(range(n))]
        found: list[tuple[int, int, tuple[str, ...]]] = []
        while True:
            chosen = self._select(self._candidates(stream, windows, prev, nxt))
            if not chosen:
                return found
            # Each winner masks its units whole: merge the winners' unit ranges, then
            # delete each range's characters, left to right (so a recorded left neighbour
            # is never deleted afterwards).
            ranges: list[list[int]] = []
            for covered, alias in chosen:
                first, last = unit[covered[0]], unit[covered[-1]]
                found.append((bounds[first][0], bounds[last][1], alias.entities))
                ranges.append([first, last, covered[0]])
            ranges.sort()
            merged: list[list[int]] = []
            for rng in ranges:
                if merged and rng[0] <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], rng[1])
                else:
                    merged.append(rng)
            lefts: dict[int, None] = {}
            for first, last, anchor in merged:
                lo = hi = anchor
                while prev[lo] != -1 and unit[prev[lo]] >= first:
                    lo = prev[lo]
                while nxt[hi] != n and unit[nxt[hi]] <= last:
                    hi = nxt[hi]
                left, right = prev[lo], nxt[hi]
                if left == -1:
                    head = right
                else:
                    nxt[left] = right
                if right != n:
                    prev[right] = left
                lefts[left] = None
            windows = []
            for left in lefts:
                back: list[int] = []
                p = left
                while p != -1 and len(back) < reach:
                    back.append(p)
                    p = prev[p]
                back.reverse()
                p = head if left == -1 else nxt[left]
                while p != n and len(back) < 2 * reach:
                    back.append(p)
                    p = nxt[p]
                windows.append(back)

    def _candidates(
        self,
        stream: _Stream,
        windows: Sequence[Sequence[int]],
        prev: Sequence[int],
        nxt: Sequence[int],
    ) -> list[tuple[list[int], _Alias]]:
        """Every occurrence of an alias on its word boundaries inside the windows (runs of
        consecutive live stream positions), each once, as (positions, alias)."""
        seen: dict[tuple[int, int], tuple[list[int], _Alias]] = {}
        for window in windows:
            text = "".join(stream.chars[p] for p in window)
            for alias in self._aliases:
                size = len(alias.chars)
                pos = text.find(alias.chars)
                while pos != -1:
                    covered = list(window[pos : pos + size])
                    key = (covered[0], size)
                    if key not in seen and _on_boundaries(stream, covered, alias, prev, nxt):
                        seen[key] = (covered, alias)
                    pos = text.find(alias.chars, pos + 1)
        return list(seen.values())

    @staticmethod
    def _select(
        candidates: list[tuple[list[int], _Alias]],
    ) -> list[tuple[list[int], _Alias]]:
        """Non-overlapping candidates: the longest alias first, ties to the leftmost."""
        candidates.sort(key=lambda c: (-len(c[0]), c[0][0]))
        taken: set[int] = set()
        out: list[tuple[list[int], _Alias]] = []
        for covered, alias in candidates:
            if taken.isdisjoint(covered):
                taken.update(covered)
                out.append((covered, alias))
        return out


def _on_boundaries(
    stream: _Stream,
    covered: Sequence[int],
    alias: _Alias,
    prev: Sequence[int],
    nxt: Sequence[int],
) -> bool:
    """Whether an occurrence at the live positions ``covered`` sits on word boundaries.
    Positions of the neighbours come from the live list; whether something invisible (or
    masked) separates them comes from their units, which masking never renumbers."""
    start, end = covered[0], covered[-1]
    before, after = prev[start], nxt[end]
    if alias.left_boundary and before != -1:
        gap = stream.unit[start] - stream.unit[before] > 1
        if not gap and _spaced_word_char(stream.chars[before]):
            return False
    if alias.right_boundary and after != len(stream.chars):
        gap = stream.unit[after] - stream.unit[end] > 1
        if not gap and _spaced_word_char(stream.chars[after]):
            return False
    return True


def _merge_spans(spans: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)
