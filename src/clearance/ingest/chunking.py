"""Sections → chunk texts, each with the locator of the section it came from.

:func:`chunk_sections` guarantees, for ``size > 0`` and ``0 <= overlap < size``:

* whitespace-only sections are dropped;
* an atomic section (a table row, a sheet block) is emitted whole and unchanged, whatever
  its length, because a row cut in two loses the header that gives its numbers meaning;
* consecutive non-atomic sections with the same locator are merged (joined by a blank line)
  while the result fits ``size``, so a page of short paragraphs is one chunk, not ten;
* a non-atomic section longer than ``size`` is cut into pieces of at most ``size``
  characters. A cut is made, in order of preference, at a paragraph break, a line break, the
  end of a sentence (``.!?…`` before whitespace, or ``。！？``), any whitespace or ``、`` /
  ``，``, between two CJK characters (a script written without spaces, so unpunctuated CJK
  text is cut at exactly ``size`` characters); a boundary in the second half of the window
  is preferred to an earlier one, and a word is cut only when it is longer than ``size`` on
  its own;
* consecutive pieces of one section overlap by about ``overlap`` characters (at most half of
  the earlier piece, and starting at a word boundary, so the overlap never begins mid-word);
  where a sentence, a list item or a paragraph begins inside that overlap, the overlap
  begins there (it is then shorter); where none does, at the last one in the earlier
  piece's second half (it is then longer), else where the earlier piece ends if a unit
  begins there (no overlap). A piece opens mid-sentence only when no unit starts in any
  of these places;
* non-atomic pieces are stripped of surrounding whitespace and never empty; every piece keeps
  its section's locator; the same input always gives the same output.

Sizes count characters of text written with spaces; a Chinese or Japanese character counts
as :data:`CJK_WEIGHT` of them. Models read text in tokens, and one CJK character is about a
token where an English token is four or five characters: an 800-character page of Japanese
is four times the tokens of an English one, past what the embedding model reads and what a
prompt's budget holds beside another passage. A section's size and overlap are scaled by its
own mix of scripts, so English text is cut exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from clearance.analysis import ends_with_abbreviation
from clearance.model import Section

__all__ = ["CJK_WEIGHT", "chunk_sections"]

# Each pattern marks cut points: a piece may end where group "cut" starts (for whitespace
# boundaries the whitespace is dropped) or, for CJK punctuation, right after it.
_BOUNDARIES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?P<cut>\n[^\S\n]*\n)"),  # paragraph break
    re.compile(r"(?P<cut>\n)"),  # line break
    re.compile(r"(?<=[.!?…])(?P<cut>\s)|(?<=[。！？])(?P<cjk>)"),  # sentence end
    re.compile(r"(?P<cut>\s)|(?<=[、，])(?P<cjk>)"),  # word / clause
)


# Where a quotable unit begins: after a sentence's end, at a list item or a paragraph.
# Chinese and Japanese put no space after "。": the next sentence begins right after it
# (after a closing quote or bracket when one follows).
_UNIT_START = re.compile(
    r"(?<=[.!?。！？])[\s]+|[。！？][」』）)]*(?=\S)"
    r"|\n[^\S\n]*(?=[-*•]\s|\d+[.)]\s)|\n[^\S\n]*\n\s*"
)


def _unit_starts(text: str, lo: int, hi: int) -> Iterator[int]:
    """Where units begin in ``text[lo:hi]`` (see :data:`_UNIT_START`), in order; never after
    an abbreviation's period ("(ie. James, Tim, or Charles)" is one sentence)."""
    for m in _UNIT_START.finditer(text, lo, hi):
        if text[m.start() - 1 : m.start()] == "." and ends_with_abbreviation(
            text[max(0, m.start() - 24) : m.start()]
        ):
            continue
        yield m.end()


def _opens_unit(text: str, index: int) -> bool:
    """Whether a unit begins at ``index`` (see :data:`_UNIT_START`)."""
    return index in _unit_starts(text, max(0, index - 16), index + 1)


def _next_unit(text: str, start: int, end: int) -> int:
    """The first unit start in ``(start, end)``, else ``start``."""
    unit = next((u for u in _unit_starts(text, start, end) if start < u), None)
    return unit if unit is not None and unit < end else start


def _overlap_unit(text: str, pos: int, start: int, end: int) -> int:
    """Where the piece after ``text[pos:end]`` begins when its overlap would begin at
    ``start``, inside a unit: the first unit start in ``(start, end)``; else the last one
    in the earlier piece's second half (a longer overlap, still at most half of it); else
    ``end`` when a unit begins there (no overlap: a short overlap of Japanese, about 40
    characters, often holds no sentence start, and a piece opening "ットメントを維持し
    ながら" quotes as a fragment); else ``start``."""
    unit = _next_unit(text, start, end)
    if unit != start:
        return unit
    earlier = [
        u
        for u in _unit_starts(text, pos + (end - pos) // 2, start)
        if pos + (end - pos) // 2 <= u < start
    ]
    if earlier:
        return earlier[-1]
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    return after if after < len(text) and _opens_unit(text, after) else start


def _is_cjk(char: str) -> bool:
    """Characters of scripts written without spaces between words (Chinese, Japanese)."""
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x3000 <= code <= 0x303F  # CJK punctuation
        or 0x20000 <= code <= 0x2FFFF  # CJK extensions B–F
    )


#: What one CJK character counts for in a chunk's size (see the module docstring).
CJK_WEIGHT = 4


def _scaled(text: str, size: int, overlap: int) -> tuple[int, int]:
    """``size`` and ``overlap`` in characters of ``text``: smaller by its share of CJK."""
    ratio = len(text) / _weighted_len(text)
    scaled = max(1, int(size * ratio))
    return scaled, min(int(overlap * ratio), scaled - 1)


def _weighted_len(text: str) -> int:
    """``text``'s length with each CJK character counted :data:`CJK_WEIGHT` times."""
    return len(text) + (CJK_WEIGHT - 1) * sum(1 for char in text if _is_cjk(char))


def _cut_points(text: str, pos: int, limit: int, pattern: re.Pattern[str]) -> list[int]:
    """Piece ends in ``(pos, limit]`` that ``pattern`` offers."""
    ends: list[int] = []
    for match in pattern.finditer(text, pos, min(limit + 1, len(text))):
        end = match.start("cut") if match.group("cut") is not None else match.end()
        if pos < end <= limit:
            ends.append(end)
    return ends


def _cjk_cut(text: str, floor: int, limit: int) -> int | None:
    """The last end in ``[floor, limit]`` between two characters one of which is CJK."""
    for end in range(min(limit, len(text) - 1), floor - 1, -1):
        if _is_cjk(text[end - 1]) or _is_cjk(text[end]):
            return end
    return None


def _cut(text: str, pos: int, size: int, floor: int) -> int | None:
    """Where the piece starting at ``pos`` ends (exclusive), ``floor <= end <= pos + size``;
    None when only cutting a word would do.

    ``text[pos]`` is not whitespace, so every such piece has content; ``floor`` (at most
    ``pos + size``) makes each piece reach past the previous one. Boundaries are tried by
    preference in the second half of the window first; failing that, the last boundary of
    any kind.
    """
    limit = pos + size
    half = max(floor, pos + size // 2)
    for pattern in _BOUNDARIES:
        ends = _cut_points(text, pos, limit, pattern)
        if ends and ends[-1] >= half:
            return ends[-1]
    cjk = _cjk_cut(text, half, limit)
    if cjk is not None:
        return cjk
    ends = [end for pattern in _BOUNDARIES for end in _cut_points(text, pos, limit, pattern)]
    ends = [end for end in ends if end >= floor]
    return max(ends) if ends else None


def _starts_word(text: str, index: int) -> bool:
    """Whether a piece may start at ``index`` without starting mid-word."""
    before, here = text[index - 1], text[index]
    return before.isspace() or here.isspace() or _is_cjk(before) or _is_cjk(here)


def _split(text: str, size: int, overlap: int) -> list[str]:
    """Cut one stripped text into pieces as described in the module docstring."""
    pieces: list[str] = []
    pos = fresh = previous_end = 0  # fresh: where the piece would start without overlap
    n = len(text)
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        while fresh < n and text[fresh].isspace():
            fresh += 1
        if pos >= n:
            break
        if n - pos <= size:
            pieces.append(text[pos:].rstrip())
            break
        end = _cut(text, pos, size, floor=max(previous_end + 1, pos + 1))
        if end is None and pos < fresh:
            # The overlap would force a cut inside a word that fits on its own: give up
            # the overlap rather than the word.
            pos = fresh
            if n - pos <= size:
                pieces.append(text[pos:].rstrip())
                break
            end = _cut(text, pos, size, floor=pos + 1)
        if end is None:  # a single word longer than size: cut it
            end = pos + size
        pieces.append(text[pos:end].rstrip())
        previous_end = fresh = end
        start = max(end - min(overlap, (end - pos) // 2), pos + 1)
        while start < end and not _starts_word(text, start):
            start += 1
        # Begin the overlap where a sentence, a list item or a paragraph begins, when one
        # does inside it: a piece that opens mid-sentence ("listed, have your supervisor
        # …", a hard-wrapped line) quotes as a fragment when its neighbour is not retrieved.
        pos = start if _opens_unit(text, start) else _overlap_unit(text, pos, start, end)
    return pieces


def _merged(sections: Sequence[Section], size: int) -> list[Section]:
    """Drop blank sections; merge runs of same-locator non-atomic sections that fit ``size``."""
    out: list[Section] = []
    for section in sections:
        if not section.text.strip():
            continue
        if section.atomic:
            out.append(section)
            continue
        text = section.text.strip()
        last = out[-1] if out else None
        if (
            last is not None
            and not last.atomic
            and last.locator == section.locator
            and _weighted_len(last.text) + 2 + _weighted_len(text) <= size
        ):
            out[-1] = Section(f"{last.text}\n\n{text}", last.locator)
        else:
            out.append(Section(text, section.locator))
    return out


def chunk_sections(sections: Sequence[Section], size: int, overlap: int) -> list[tuple[str, str]]:
    """``(text, locator)`` pieces of ``sections``, in order (see the module docstring)."""
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be >= 0 and < size ({size}), got {overlap}")
    pieces: list[tuple[str, str]] = []
    for section in _merged(sections, size):
        if section.atomic or _weighted_len(section.text) <= size:
            pieces.append((section.text, section.locator))
        else:
            scaled = _scaled(section.text, size, overlap)
            pieces.extend((piece, section.locator) for piece in _split(section.text, *scaled))
    return pieces
