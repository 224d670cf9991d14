"""The embedded default provider: answers by quoting, never by writing.

Why: Clearance must work on a laptop with no model and no network, and an answer that can only
quote its sources cannot invent anything. :class:`ExtractiveProvider` is deterministic and uses
the same term analysis as retrieval (:mod:`clearance.analysis`, stemmed, so "days"
matches "Day"), so English words and CJK character bigrams both count.

What is guaranteed:

* **Verbatim.** Every quoted unit in an ``answer`` is a contiguous, unmodified substring of the
  text of the snippet whose marker follows it: ``"<sentence> [S1] <sentence> [S3]"``. List
  items and table rows are quoted one per line (``"<row> [S1]\\n<row> [S1]"``). The one
  exception states an absence and no fact: when the question asks about a name ("the hotel
  limit in Tokyo") that no snippet holds and a table is quoted, the answer opens with
  ``"Tokyo is not among those listed:"`` and then quotes every row of that table.
* **Structure is not prose.** A heading (the line the ingest puts above a section's text, a
  slide title, a short unpunctuated line opening a paragraph) is never quoted and never glued
  to the sentence after it. A table block is quoted as its header line and the rows that
  match the question, never as one run-on line.
* **Enumerations are whole.** A list item is one unit with the lines that continue it, never
  cut after its number ("1." alone is never quoted). When a list item is worth quoting, every
  item of its list in that snippet is quoted, in order, with the sentence that introduces it
  ("… closed on:"), unless the question names items by their label ("Level 4" of "Level 4 →
  up to 2.1 % of pay"): then those items. A how-to question ("How do I …?") is answered by a
  numbered list first, whole, joined by the parts of it other snippets of the same document
  hold (steps 4–5 in the chunk after steps 1–3).
  When a table row is, the rows selected are those of the same category the question names
  (every ``Tokyo / Osaka`` row for "Tokyo"), else those matching it best.
  A nested item keeps the spaces that open its line ("   1." under "2."): its depth.
* **Steps written as headings are a list.** A passage the ingest made of a document's step
  headings (locator part :data:`~clearance.model.STEPS_PART`, "1. Update the README — Add a
  note …" one per line, :class:`clearance.ingest.loaders.common.Outline`) is quoted only for
  a question asking for steps (how-to), a list ("What are …", "Which …") or what comes
  after or before one; its items are about what the heading above them says ("How we
  hire"). Asked what comes after (before) a step named by its label ("what comes after the
  interviews?"), the answer is the item after (before) it in its list, alone. A sentence
  of five words or more that a line already quoted holds is not quoted again.
* **Relevant or nothing.** Only units sharing at least one term with the question are chosen;
  when none does, the answer is ``""`` (the orchestrator then reports that it has no source).
  An abbreviation a passage of the same document defines ("Paid parental leave (PPL)")
  holds the words it stands for; a question asking how much, how many or how long gets
  the sentence that continues a chosen one when only that one states a quantity.
* **Metadata is not content.** An e-mail's header block (``From:``, ``To:``, ``Subject:`` …,
  a forwarded message's included) is never quoted.
* **No borrowed citations.** A unit that itself contains a citation marker such as ``[S2]``
  is never quoted, so every marker in the output was put there by this provider.
* **A question that tells a story first is read as asked.** "I work in engineering. How
  often can I get a new laptop?": its words of the asker's situation ("work", "can", "get")
  make a sentence about interns' laptops hold more of them than "Engineering and Product:
  2.5yrs" under "Laptop refresh". Given a sentence encoder (``similarity``), such a question
  ranks the units that hold its words by their share of the best unit's words plus
  :data:`_READ_WEIGHT` times their cosine with the question (heading and unit together);
  which units may be quoted is decided by their words as before. Not for a question of one
  sentence, whose words are those of what it asks (the held-out sets, written in the
  documents' words, open with the answer less often when the cosine reorders them), nor
  for CJK text, which the bundled encoder cannot read, nor ever over a RESTRICTED snippet's
  text.
* **Deterministic.** The same request always gives the same output. A ``rerank`` is a stable
  ordering of *all* the snippet refs: ``"S2 > S1 > S3"``.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from clearance.analysis import (
    cjk_share,
    document_terms,
    ends_with_abbreviation,
    query_terms,
    search_terms,
    word_pairs,
)
from clearance.errors import EmbeddingError
from clearance.llm.base import ChatRequest, ChatResponse, Snippet
from clearance.llm.multilingual import Similarity
from clearance.model import LABEL_SEPARATOR, STEPS_PART, is_restricted

_log = logging.getLogger(__name__)

__all__ = [
    "ExtractiveProvider",
    "Quote",
    "is_line_unit",
    "split_sentences",
    "states_whole_year_amount",
    "without_asides",
    "years_named",
]

# A Latin sentence ends at . ! ? (possibly repeated, possibly followed by closing quotes or
# brackets) followed by whitespace; a CJK sentence ends at 。！？．, whitespace optional; a line
# break always ends one (bullets, table rows, headings).
# Not before a dash on the same line: "**What?** – Sharing …" is a run-in label and what it
# labels, one sentence, never "What?" and a sentence opening with "– " (a dash opening the
# next line is a list of its own: "– Full-time staff get 25 days.").
_LATIN_END = re.compile(r"(?<![.!?])[.!?]+[\"'”’)\]]*(?=\s)(?![^\S\r\n\u2028\u2029]+[–—](?:\s|$))")
# "etc." inside a sentence: followed by a word in lower case on the same line.
_ETC_GOES_ON = re.compile(r"(?<![A-Za-z])etc\.[^\S\r\n]+[a-z]")
_CJK_END = re.compile(r"(?:[。！？]|．(?![0-9０-９]))+[」』）】〉》\"”’)]*")
# A line break ends a sentence only where the text shows structure: a blank line, or a
# line that starts a list item, a heading or a table row. A lone break is a hard wrap
# inside a sentence ("… on the next business\nday."), so it reads as a space.
_NEWLINE = re.compile(
    r"[\r\n\u2028\u2029]\s*[\r\n\u2028\u2029]+"
    r"|[\r\n\u2028\u2029](?=\s*(?:[-*•・#|]|\d{1,3}[.)]\s))"
)
_LINE = re.compile(r"[^\r\n\u2028\u2029]+")
# The cell separator of the table lines the loaders write ("date | country | office").
_CELL = " | "
_LIST_ITEM = re.compile(r"(?:[-*•・]|\d{1,3}[.)]|[A-Za-z][.)]|\([A-Za-z0-9]{1,3}\))\s")
_TABLE_RULE = re.compile(r"^[\s|:\-–—]+$")
_MARKER = re.compile(r"\[\s*S\d+\s*\]", re.IGNORECASE)
# A heading ends without punctuation and is short.
_HEADING_END = re.compile(r"[.!?。！？:：;；,，、]$")
_HEADING_MAX_CHARS = 60
# The header block of an e-mail ("From: …", "Subject: …"), a forwarded one's included.
_MAIL_HEADER = re.compile(
    r"(?:From|To|Cc|Bcc|Sent|Date|Subject|Reply-To|Message-ID|In-Reply-To|References"
    r"|Return-Path|MIME-Version|Content-Type|Importance|X-[\w-]+)[ \t]*:(?:\s|$)",
    re.IGNORECASE,
)
_MAIL_SENDER = re.compile(r"(?:From|Sent)[ \t]*:", re.IGNORECASE)
_MAIL_DIVIDER = re.compile(r"-{2,}\s*(?:Original Message|Forwarded message)\s*-{2,}", re.I)
# A question asking how to do something ("How do I set up the VPN?"), answered by steps.
_HOW_TO = re.compile(
    r"^\W*(?:how\s+(?:do|can|should|would|does|to)\b|what\s+are\s+the\s+steps\b"
    r"|(?:what\s+)?steps\s+(?:to|for)\b|walk\s+me\s+through\b)"
    r"|手順|やり方|どうやって|どうすれば|如何|怎么|怎样|步骤",
    re.IGNORECASE,
)
_STEP_NUMBER = re.compile(r"(\d+)[.)]\s")
# What separates a list item's label from what it says ("Level 4 → up to …").
_LABEL_END = re.compile(r"\s*(?:→|->|=>|⇒|:|：|–|—|\s-\s|=)")
_LABEL_MAX_TERMS = 4
# A name the question asks about ("… in Tokyo", "… for New York").
_NAMED = re.compile(r"\b(?:in|for|at|of)\s+((?:[A-Z][\w'’.-]*)(?:\s+[A-Z][\w'’.-]*)*)")
# A list item's marker alone, with nothing quotable after it.
_BARE_MARKER = re.compile(r"(?:[-*•・]|\d{1,3}[.)]|[A-Za-z][.)]|\([A-Za-z0-9]{1,3}\))?[\W_]*")
_HEADING_MAX_WORDS = 8

MAX_SENTENCES = 3
#: At most this many items of one list, or rows of one table block, are quoted.
MAX_ENUMERATION = 25


def _lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every non-blank line of ``text``, whitespace-trimmed."""
    out: list[tuple[int, int]] = []
    for m in _LINE.finditer(text):
        s, e = m.start(), m.end()
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def _starts_block(line: str) -> bool:
    """Whether a line starts the way a new paragraph does: unindented, with a capital (or
    a letter of a script without case), not the lower-case or indented tail of a wrap."""
    first = line[:1]
    return first.isupper() or (first.isalpha() and not first.isascii() and not first.islower())


_LETTERED = re.compile(r"(\(?)([A-Za-z])([.)])\s")


def _opens_item(text: str, line: str) -> bool:
    """Whether ``line`` (of ``text``, left-trimmed) opens a list item: a bullet or number,
    or a letter ("A. Fees and tips …", "(b) …") where a line of ``text`` carries the letter
    before or after it the same way. A paragraph opening with an initial ("J. Smith
    approved …") stays prose."""
    if not _LIST_ITEM.match(line):
        return False
    lettered = _LETTERED.match(line)
    if lettered is None:
        return True
    opening, letter, closing = lettered.groups()
    for step in (-1, 1):
        other = chr(ord(letter) + step)
        marker = re.escape(f"{opening}{other}{closing}")
        if other.isalpha() and re.search(rf"(?m)^[ \t]*{marker}\s", text):
            return True
    return False


def _list_ends(text: str) -> list[int]:
    """Where a list item ends because an unindented paragraph follows it on the next line
    ("- 31 December\nVisitors are …"): an indented or lower-case line continues it."""
    raw = list(_LINE.finditer(text))
    return [
        line.end()
        for line, after in itertools.pairwise(raw)
        if _opens_item(text, line.group(0).lstrip())
        and not text[line.end() : after.start()].strip()
        and len(text[line.end() : after.start()].replace("\r\n", "\n")) == 1
        and _starts_block(after.group(0))
    ]


def _items(text: str, whole: Iterable[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of every list item in ``text`` with the lines that continue it (an
    indented or lower-case line right below it), so "1. Install the client. Version 6.2 is
    required." is one item, never "1." and two sentences. Lines in ``whole`` start none."""
    starts = {s for s, _ in whole}
    raw = list(_LINE.finditer(text))
    out: list[tuple[int, int]] = []
    for i, line in enumerate(raw):
        body = line.group(0).lstrip()
        begin = line.end() - len(body)
        if not _opens_item(text, body) or begin in starts or _CELL in body:
            continue
        end = line.end()
        for after in raw[i + 1 :]:
            gap = text[end : after.start()].replace("\r\n", "\n")
            follow = after.group(0)
            if gap.strip() or len(gap) != 1 or _CELL in follow or not follow.strip():
                break
            if _opens_item(text, follow.lstrip()) or (
                not follow[:1].isspace() and _starts_block(follow)
            ):
                break
            end = after.end()
        while end > begin and text[end - 1].isspace():
            end -= 1
        out.append((begin, end))
    return out


def _spans(text: str, whole: Iterable[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence in ``text``, whitespace-trimmed, non-empty. The
    ``whole`` spans (headings) are units of their own, never cut inside, as are table
    lines and list items: "2. Class of travel", "… | 1. Weihnachtstag" and "1. Open the
    client." are not two sentences each."""
    whole = list(whole)
    kept = [*whole, *((s, e) for s, e in _lines(text) if _CELL in text[s:e])]
    kept += _items(text, whole)
    cuts: set[int] = set()
    for m in _LATIN_END.finditer(text):
        single_period = m.group(0).rstrip("\"'”’)]") == "."
        if single_period and ends_with_abbreviation(text[: m.start() + 1]):
            continue
        if single_period and _ETC_GOES_ON.match(text, m.start() - 3):
            continue  # "the libraries etc. we use": "etc." ends the sentence only before a capital
        cuts.add(m.end())
    for m in _CJK_END.finditer(text):
        cuts.add(m.end())
    for m in _NEWLINE.finditer(text):
        cuts.add(m.start())
        cuts.add(m.end())
    cuts.update(_list_ends(text))
    for s, e in kept:
        cuts.difference_update(range(s + 1, e))
        cuts.update((s, e))
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*sorted(cuts), len(text)]:
        if cut <= start:
            continue
        s, e = start, cut
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((_with_indent(text, s), e))
        start = cut
    return spans


def _with_indent(text: str, start: int) -> int:
    """Where a list item nested under another begins, with the spaces that open its line
    ("   1." under "2."): its depth is part of what it says. Any other span as given."""
    line_start = text.rfind("\n", 0, start) + 1
    if (
        line_start < start
        and not text[line_start:start].strip(" ")
        and _LIST_ITEM.match(text, start)
    ):
        return line_start
    return start


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences; each is a verbatim substring of ``text``.

    Handles Latin punctuation (with common abbreviations such as ``e.g.``, ``Dr.``, ``U.S.`` and
    decimals such as ``6.5`` kept intact), Japanese/Chinese ``。！？``, line breaks that show
    structure (blank lines, list items, headings) and table lines (``cell | cell``).
    """
    return [text[s:e] for s, e in _spans(text)]


#: The words a sentence that asks opens with (the relevance gate reads asks by them too).
ASK_WORDS = (
    r"how|what|which|when|where|who|whom|whose|why|is|are|was|were|do|does|did|can|could"
    r"|should|will|would|must|may|am|have|has"
)
# A question joined to another with "and" ("…, and is there a limit …?", "What's the
# process and who has to approve it?"); "Which benefits are reimbursable and are taxed?"
# asks one thing (no question word after "and" but a verb).
_AND_ASKS = re.compile(
    r"(?:,\s+and|\s+and)\s+(?=(?:how|what|which|when|where|who|whom|why)\b"
    r"|(?:is|are|do|does|can|should|will|would|must)\s+(?:there|it|i|we|you|they|that|this)\b)",
    re.IGNORECASE,
)
#: A sentence that asks, with its question mark or without ("what are the steps").
ASKING = re.compile(rf"(?:{ASK_WORDS})\b|.*\?$", re.IGNORECASE | re.DOTALL)
#: The units quoted at most for one ask of a question asking several things.
_PER_ASK = 2


def asks_of(question: str) -> list[str]:
    """Each thing ``question`` asks: its sentences that ask, each question one of them joins
    with "and"; none where it asks one thing. "How do I request paid parental leave? What
    do I need to send, and to whom?" → three asks."""
    parts = [
        clause.strip(" ,;")
        for sentence in split_sentences(question.strip())
        if ASKING.match(sentence.strip())
        for clause in _AND_ASKS.split(sentence.strip())
    ]
    parts = [p for p in parts if p]
    return parts if len(parts) >= 2 else []


def asking_sentence(question: str) -> str | None:
    """The sentence that asks, where ``question`` first tells the asker's situation in
    sentences of its own ("I've got a 12-hour flight to see a customer. Can I expense an
    upgrade to business class?"); ``None`` for a question of one sentence, or one whose
    last sentence asks nothing. Sentences as answers split them ("e.g." and "2.5" end
    none)."""
    parts = [p.strip() for p in split_sentences(question.strip()) if p.strip()]
    if len(parts) < 2 or not parts[-1].endswith("?"):
        return None
    return parts[-1]


def is_line_unit(text: str) -> bool:
    """Whether ``text`` is a list item or a table line, which an answer shows on a line of
    its own rather than run into the prose around it."""
    return bool(_LIST_ITEM.match(text.lstrip(" "))) or _CELL in text


def _flat(text: str) -> str:
    """``text`` as a locator value is written: NFKC, commas and ``=`` as spaces, casefolded."""
    text = unicodedata.normalize("NFKC", text).replace(",", " ").replace("=", " ")
    return " ".join(text.split()).casefold()


def _section_path(locator: str) -> list[str]:
    """The headings of a ``section=A > B`` locator part, outermost first (none at the top)."""
    for part in locator.split(","):
        key, _, value = part.partition("=")
        if key == "section" and value and value != "(top)":
            return value.split(" > ")
    return []


def _section_heading(locator: str) -> str | None:
    """The innermost heading of a ``section=A > B`` locator part, if there is one."""
    path = _section_path(locator)
    return path[-1] if path else None


def _heading_lines(locator: str) -> tuple[str, ...]:
    """The lines the ingest may put above a section's text: its innermost heading, and that
    heading after its parent's for a handbook's run-in label ("Annual health check — Key
    features", clearance.ingest.loaders.common.Outline)."""
    path = _section_path(locator)
    return (path[-1], LABEL_SEPARATOR.join(path[-2:])) if len(path) > 1 else tuple(path)


def _looks_like_heading(line: str, following: str | None) -> bool:
    """A short line without closing punctuation that opens a paragraph, before text that
    starts as a new block would (not a wrapped sentence's lower-case or numeric tail)."""
    if len(line) > _HEADING_MAX_CHARS or len(line.split()) > _HEADING_MAX_WORDS:
        return False
    if _HEADING_END.search(line) or _LIST_ITEM.match(line) or _CELL in line:
        return False
    if not (line[0].isupper() or line[0].isdigit() or not line[0].isascii()):
        return False
    if following is None or _LIST_ITEM.match(following):
        return True
    first = following[0]
    return not first.isdigit() and not first.islower() and (first.isupper() or not first.isascii())


def _headings(snippet: Snippet, lines: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
    """The lines of ``snippet`` that are headings: the one the ingest put above a section's
    text (it repeats the locator's innermost heading or the title) and short unpunctuated
    lines opening a paragraph. A snippet of one line has no heading: it is all content."""
    text = snippet.text
    if len(lines) < 2:
        return set()
    named = {_flat(n) for n in (*_heading_lines(snippet.locator), snippet.title) if n}
    out: set[tuple[int, int]] = set()
    previous_end = -1
    for i, (s, e) in enumerate(lines):
        opens_paragraph = i == 0 or "\n\n" in text[previous_end:s].replace("\r", "")
        previous_end = e
        if not opens_paragraph:
            continue
        line = text[s:e]
        following = text[lines[i + 1][0] : lines[i + 1][1]] if i + 1 < len(lines) else None
        if _flat(line) in named or _looks_like_heading(line, following):
            out.add((s, e))
    return out


def _mail_headers(text: str, lines: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
    """The lines of ``text`` that are an e-mail's header block: a run of ``Name: value``
    lines (with their indented continuations) holding a sender (``From:``, ``Sent:``) and at
    least one other header, and the divider of a forwarded or quoted message. Metadata of
    the message, never its content."""
    out: set[tuple[int, int]] = set()
    block: list[tuple[int, int]] = []

    def close() -> None:
        named = [text[s:e] for s, e in block if _MAIL_HEADER.match(text[s:e])]
        if len(named) >= 2 and any(_MAIL_SENDER.match(n) for n in named):
            out.update(block)
        block.clear()

    previous_end = -1
    for s, e in lines:
        line = text[s:e]
        if _MAIL_DIVIDER.fullmatch(line):
            close()
            out.add((s, e))
        elif _MAIL_HEADER.match(line):
            if block and "\n\n" in text[previous_end:s].replace("\r", ""):
                close()
            block.append((s, e))
        elif block and s > 0 and text[s - 1] in " \t" and "\n\n" not in text[previous_end:s]:
            block.append((s, e))  # a folded header line
        else:
            close()
        previous_end = e
    close()
    return out


@dataclass(frozen=True, slots=True)
class _Unit:
    """One quotable piece of a snippet. ``group`` numbers the list or table block it belongs
    to (``None`` for prose); ``header`` marks a table's header line; ``lead`` a sentence
    ending in a colon right before a list or table; ``heading`` the heading it stands under."""

    text: str
    group: int | None = None
    table: bool = False
    header: bool = False
    lead: int | None = None
    heading: str = ""


#: How a sentence introducing the list after it ends (see :func:`_units`).
_LEAD_ENDINGS = (":", "：", ",", "，")


def _units(snippet: Snippet) -> list[_Unit]:
    text = snippet.text
    lines = _lines(text)
    headers = _mail_headers(text, lines)
    headings = _headings(snippet, [line for line in lines if line not in headers])
    table_lines = {(s, e) for s, e in lines if _CELL in text[s:e]}
    units: list[_Unit] = []
    group = -1
    previous: str | None = None  # "item" | "row" | "prose"
    heading = _section_heading(snippet.locator) or ""
    item_end = 0  # where the last list item ends
    carried = -1  # the end of the line a list item carries on to
    for s, e in _spans(text, headings | headers):
        piece = text[s:e]
        if (s, e) in headings:
            previous, heading = None, piece
            continue
        if (s, e) in headers or _BARE_MARKER.fullmatch(piece):
            continue
        if (
            previous == "item"
            and (
                s < carried  # the rest of the line the item goes on to
                or (
                    s >= carried  # a next line (none carried on yet, or past the one that was)
                    and (s, e) not in table_lines
                    and not _opens_item(text, piece.lstrip(" "))
                    and text[item_end:s].count("\n") == 1  # the next line, not a paragraph on
                    and not text[item_end:s].strip()
                    and _carries_on(units[-1].text)
                )
            )
        ):
            # The line a list item naming a file or ending in a colon or mid-sentence goes
            # on to is the item's own ("2. actuals.csv" / "This file contains actual outlay …", "…
            # with the command:" / "conda activate …"): a loader of Markdown writes a hard
            # break's line at no indent. Quoted at the item's indent, as one item.
            if s >= carried:
                newline = text.find("\n", s)
                carried = len(text) if newline < 0 else newline
                joint = "\n" + _item_indent(units[-1].text)
            else:
                joint = text[item_end:s]
            last = units[-1]
            units[-1] = _Unit(last.text + joint + piece, last.group, heading=last.heading)
            item_end = e
            continue
        if (s, e) in table_lines:
            if _TABLE_RULE.match(piece):
                continue
            is_header = previous != "row"
            if is_header:
                group += 1
            units.append(_Unit(piece, group, table=True, header=is_header, heading=heading))
            previous = "row"
        elif _opens_item(text, piece.lstrip(" ")):
            if previous != "item":
                group += 1
            units.append(_Unit(piece, group, heading=heading))
            previous, item_end, carried = "item", e, -1
        else:
            units.append(_Unit(piece, heading=heading))
            previous = "prose"
    # A one-line table (a row the ingest stored alone) is a row, not a header.
    sizes = Counter(u.group for u in units if u.table)
    units = [
        _Unit(u.text, u.group, table=True, heading=u.heading)
        if u.table and sizes[u.group] == 1
        else u
        for u in units
    ]
    # A sentence ending in a colon introduces the enumeration that follows it, as one ending
    # in a comma right before a list does ("You should invite the following people to the
    # postmortem meeting," quoted alone names no one).
    out: list[_Unit] = []
    for i, unit in enumerate(units):
        after = units[i + 1] if i + 1 < len(units) else None
        if (
            unit.group is None
            and unit.text.rstrip().endswith(_LEAD_ENDINGS)
            and after is not None
            and after.group is not None
        ):
            unit = _Unit(unit.text, lead=after.group, heading=unit.heading)
        out.append(unit)
    return out


# The words no sentence ends with: a line ending in one is cut mid-sentence. "a" in lower
# case only ("Medicare Part A" ends a name); "in" and "on" only after five words or more
# ("1. Sign in" is a step of its own, "… over 12 hours in" is cut).
_MID_SENTENCE = re.compile(
    r"(?:,|\ba|(?i:\b(?:the|an|to|of|for|and|or|nor|with|at|by|from|into|onto|via|your|our"
    r"|their|its|my|this|these|those|than|as|is|are|be))|(?i:(?:\S+\s+){5,}(?:in|on)))$"
)


def _carries_on(item: str) -> bool:
    """Whether the list item ``item`` (one line) goes on on the line after it: it ends in a
    colon ("… with the command:") or mid-sentence ("1. Follow the" / "GSA-wide steps.", a
    hard-wrapped item), or it is a name alone ("1. [component]_errors.csv", one word
    holding a dot, slash or underscore) that the next line describes."""
    if "\n" in item:
        # an item already carried on goes on again only where its last line is cut too
        # ("- Any travel … over 12 hours in" / "duration is … a Voucher From" /
        # "Authorization.")
        return bool(_MID_SENTENCE.search(item.rstrip().rsplit("\n", 1)[-1]))
    body = _LIST_ITEM.sub("", item.strip(), count=1).strip()
    # a name: one word with a letter and a dot, slash or underscore inside ("e.g.", "3.5"
    # and "etc." are none)
    return (
        body.endswith((":", "："))
        or bool(_MID_SENTENCE.search(body))
        or (
            len(body.split()) == 1
            and any(ch.isalpha() for ch in body)
            and bool(re.search(r"[._/]\w", body))
            and not body.endswith(".")
        )
    )


def _item_indent(item: str) -> str:
    """The indent a list item's own later lines are written at: its text's."""
    stripped = item.lstrip(" ")
    marker = _LIST_ITEM.match(stripped)
    return " " * (len(item) - len(stripped) + (marker.end() if marker else 0))


@dataclass(frozen=True, slots=True)
class Quote:
    """One unit chosen for an answer, and where it came from."""

    ref: str
    sentence: str
    score: int

    @property
    def line(self) -> bool:
        """Shown on a line of its own (a list item or a table line)."""
        return is_line_unit(self.sentence)


def _overlap(question: set[str], text: str) -> int:
    return len(question.intersection(query_terms(text)))


_MONTH_WORD = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december)\b",
    re.IGNORECASE,
)
_YEAR_WORD = re.compile(r"(?<![\d.,$])(?:19|20)\d{2}(?![\d])")
# A year written as part of a date: a heading's "決算会見(2024年5月14日)" or "2024-05-14" is
# when it was said, not the year it reports on.
_DATE_YEAR = re.compile(
    r"(?<![\d.,$])((?:19|20)\d{2})(?:年\s*\d{1,2}\s*月\s*\d{1,2}\s*日|[-/]\d{1,2}[-/]\d{1,2})"
)


# A fiscal year named as one: "fiscal year 2019", "fiscal 2019", "FY 2019", "2024年3月期"
# (not 年度, which companies name by the year it starts or ends in).
_FISCAL_YEAR_NAMED = re.compile(
    r"\b(?:fiscal\s+(?:year\s+)?|FY\s?)((?:19|20)\d{2})\b|((?:19|20)\d{2})\s*年\s*\d{1,2}\s*月\s*期",
    re.IGNORECASE,
)


def _fiscal_years_named(text: str) -> set[str]:
    """The fiscal years ``text`` names as such."""
    return {a or b for a, b in _FISCAL_YEAR_NAMED.findall(text)}


def years_named(text: str) -> set[str]:
    """The years ``text`` names, but for those written as part of a date."""
    return set(_YEAR_WORD.findall(_DATE_YEAR.sub(" ", text)))


_STATED_AMOUNT = re.compile(
    r"(?:[$€£¥]\s?\d[\d,.]*\d|[$€£¥]\s?\d|(?<![\d,.])\d[\d,.]*)"
    r"(?:\s*(?:%|percent|billion|million|thousand|trillion|bn\b|億|兆|万|元|円))?",
    re.IGNORECASE,
)


def _stated_amounts(text: str) -> list[re.Match[str]]:
    """Amounts a text states: a currency sign before digits, or digits before a scale,
    percent or currency word; bare numbers (years, counts) are not amounts."""
    return [
        m
        for m in _STATED_AMOUNT.finditer(text)
        if m.group(0)[0] in "$€£¥" or m.group(0)[-1:].isalpha() or m.group(0)[-1:] in "%億兆万元円"
    ]


_ORDINALS = {"1": 1, "2": 2, "3": 3, "4": 4, "一": 1, "二": 2, "三": 3, "四": 4}
_ENGLISH_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_QUARTER = re.compile(
    r"(?<![0-9A-Za-z])(?:Q([1-4])|([1-4])Q)(?![0-9A-Za-z])|第\s*([1-4一二三四])\s*(?:四半期|季度)"
    r"|\b(first|second|third|fourth)\s+quarter\b",
    re.IGNORECASE,
)
_HALF = re.compile(
    r"(?<![0-9A-Za-z])(?:H([12])|([12])H)(?![0-9A-Za-z])|(上半期|上期|上半年)|(下半期|下期|下半年)"
    r"|\b(first|second)\s+half\b",
    re.IGNORECASE,
)


def _year_parts(text: str) -> set[str]:
    """The quarters and halves a text names (``Q2``, ``第2四半期``, ``third quarter``,
    ``上半期``, ``H1``), as ``Q1``…``Q4`` and ``H1``/``H2``."""
    found: set[str] = set()
    for m in _QUARTER.finditer(text):
        digit = m.group(1) or m.group(2) or m.group(3)
        n = _ORDINALS.get(digit) if digit else _ENGLISH_ORDINALS[m.group(4).casefold()]
        found.add(f"Q{n}")
    for m in _HALF.finditer(text):
        if m.group(1) or m.group(2):
            found.add(f"H{m.group(1) or m.group(2)}")
        elif m.group(3) or (m.group(5) or "").casefold() == "first":
            found.add("H1")
        else:
            found.add("H2")
    return found


_COUNTS = {
    w: n
    for n, w in enumerate(
        [
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ],
        start=1,
    )
}
_MONTH_SPAN = re.compile(
    rf"(?<![\w-])(\d{{1,2}}|{'|'.join(_COUNTS)})[\s-]+months?\b", re.IGNORECASE
)


def _month_spans(text: str) -> set[int]:
    """The counts of months a text names ("the first nine months", "11 months", "a
    six-month period")."""
    return {
        int(m.group(1)) if m.group(1).isdigit() else _COUNTS[m.group(1).casefold()]
        for m in _MONTH_SPAN.finditer(text)
    }


# Words that make an amount one of part of a year: year to date, the first n quarters,
# "1–9月", "年初至报告期末" (the months to the end of the reporting period).
_PART_OF_YEAR = re.compile(
    r"\b(?:ytd|year[\s-]+to[\s-]+date|through|to\s+date)\b|前[一二三两]季度|年初至|累计|累計"
    r"|\d{1,2}\s*[-–~〜～]\s*\d{1,2}\s*月",
    re.IGNORECASE,
)


# Words of a forecast, a plan or a budget: an amount expected, not one reported.
_EXPECTED = re.compile(
    r"\b(?:expect(?:s|ed)?|forecasts?|outlook|guidance|plans?|planned|budget(?:ed)?|project(?:s|ed)|"
    r"target(?:s|ed)?|estimates?|anticipate[sd]?)\b|見通し|予想|計画|目標|见込|見込|预计|预测|计划|目标|预算"
    r"|今期|来期|次期|としている",
    re.IGNORECASE,
)


#: An amount stated for one month ("for the month of July").
_ONE_MONTH = re.compile(r"\b(?:the\s+)?month\s+of\b", re.IGNORECASE)
#: A question asking for what is expected rather than what was.
_ASKS_FORECAST = re.compile(
    r"\b(?:forecasts?|outlook|guidance|projected|projections?|expected|predicted)\b"
    r"|予想|見通し|予測|見込み|预计|预测|展望|指引",
    re.IGNORECASE,
)


def states_whole_year_amount(sentence: str) -> bool:
    """Whether ``sentence`` is one statement of a reported amount for a whole year: it
    states at most three amounts ("1兆1,599億円(前期比2.6%増)"; a page of table cells read
    as one run states many), names no part of a year (a quarter, a half, a count of months
    other than twelve, year to date), and no forecast, plan or budget."""
    amounts = _stated_amounts(sentence)
    if not 0 < len(amounts) <= 3 or len(re.findall(r"\d[\d,.]*", sentence)) > 6:
        return False
    if _year_parts(sentence) or _PART_OF_YEAR.search(sentence) or _EXPECTED.search(sentence):
        return False
    return not (_month_spans(sentence) - {12})


def _with_table_header(units: Sequence[_Unit], index: int) -> str:
    """A unit's text, after its table's header line when it is a table row."""
    unit = units[index]
    if not unit.table or unit.header:
        return unit.text
    header = next((u.text for u in units if u.header and u.group == unit.group), "")
    return f"{header}\n{unit.text}"


# A whole fiscal year named as such: "for fiscal year 2008", "in FY2008", "fiscal 2008".
_WHOLE_FISCAL_YEAR = re.compile(
    r"\b(?:for|in)\s+(?:fiscal\s+(?:year\s+)?|FY\s*)(?:19|20)\d{2}\b", re.I
)


#: What a sentence compares its amounts with, to the clause's end: "… more than recorded in
#: July 2007", "… compared with the same period in 2007".
_COMPARED_TAIL = re.compile(
    # "than" before an amount says how much ("more than $500 billion in 2007"); the clause
    # ends at a comma, a semicolon or a full stop (not a decimal point)
    r"\b(?:than(?!\s+(?:about\s+|around\s+)?[$€£¥]?\d)|compared\s+(?:with|to)|relative\s+to"
    r"|(?:over|during|in)\s+the\s+same\s+period|(?:up|down)\s+from)\b(?:[^.;,]|\.\d)*",
    re.IGNORECASE,
)


def _of_the_period_asked(
    question: str,
    candidates: list[tuple[int, int, int, int]],
    units: Sequence[Sequence[_Unit]],
) -> list[tuple[int, int, int, int]]:
    """When the question names a month or a year ("the deficit in the month of July
    2008"), units stating an amount for no such month or year are left out, as long as
    one unit stating an amount names it: the amounts of other periods beside the one
    asked about answer a different question. The month is the narrower name and decides
    when the question gives one."""
    parts = _year_parts(question)
    if parts:
        # A quarter or half is asked: an amount stated for no such part (a full year's, or
        # another quarter's) is never the answer, even when nothing else is left. A table
        # row's part is named by its table's header line ("2023年第三季度报告 | 本报告期末").
        return [
            c
            for c in candidates
            if not _stated_amounts(units[c[1]][c[2]].text)
            or _year_parts(_with_table_header(units[c[1]], c[2])) & parts
        ]
    spans = _month_spans(question)
    if spans:
        # "the first nine months": an amount stated for another count of months ("the
        # first 10 months") answers another question; one naming no count may be the
        # paragraph's own period ("corporate receipts fell … during the period").
        candidates = [
            c
            for c in candidates
            if not _stated_amounts(units[c[1]][c[2]].text)
            or not (found := _month_spans(units[c[1]][c[2]].text))
            or found & spans
        ]
        # An amount for a whole fiscal year it names ("the deficit for fiscal year 2008
        # will be … $400 billion") or for a month ("recorded for the month of July") is
        # not the months asked, once a unit states an amount for those months.
        counted = [
            c
            for c in candidates
            if _stated_amounts(units[c[1]][c[2]].text)
            and _month_spans(units[c[1]][c[2]].text) & spans
        ]
        if counted:
            candidates = [
                c
                for c in candidates
                if c in counted
                or not _stated_amounts(units[c[1]][c[2]].text)
                or not (
                    _WHOLE_FISCAL_YEAR.search(units[c[1]][c[2]].text)
                    or _MONTH_WORD.search(units[c[1]][c[2]].text)
                )
            ]
    months = {m.casefold() for m in _MONTH_WORD.findall(question)}
    years = set(_YEAR_WORD.findall(question))
    asked = months or years
    if not asked:
        return candidates

    def text(c: tuple[int, int, int, int]) -> str:
        unit = units[c[1]][c[2]]
        return f"{unit.heading} {unit.text}"

    def own_years(c: tuple[int, int, int, int]) -> set[str]:
        # the years of its amounts: not one it compares them with
        unit = units[c[1]][c[2]]
        return years_named(f"{unit.heading} {_COMPARED_TAIL.sub(' ', unit.text)}")

    def only_compared_with(c: tuple[int, int, int, int]) -> bool:
        # "a deficit of $102 billion was recorded for the month of July, about $65 billion
        # more than recorded in July 2007" under "… August 6, 2008": July 2007 is what
        # July 2008 is compared with, and none of the amounts is its own
        unit = units[c[1]][c[2]]
        tails = " ".join(m.group(0) for m in _COMPARED_TAIL.finditer(unit.text))
        own = f"{unit.heading} {_COMPARED_TAIL.sub(' ', unit.text)}"
        return bool(years_named(tails) & years) and not years_named(own) & years

    compared = [
        c for c in candidates if _stated_amounts(units[c[1]][c[2]].text) and only_compared_with(c)
    ]
    candidates = [c for c in candidates if c not in compared]

    # A month of a year or a count of months of one ("July 2007", "the first nine months
    # of fiscal year 2007") is a span of the calendar no other year's amount answers; nor
    # is a year whose only sentence was what another is compared with.
    calendar = bool(years) and bool(months or spans or compared)

    def names(c: tuple[int, int, int, int]) -> bool:
        if months:  # the sentence's own month: a heading's is the date it was written
            own = units[c[1]][c[2]].text
            if not {m.casefold() for m in _MONTH_WORD.findall(own)} & months:
                return False
            # of the year asked, or of no year it says: the sentence's own (a heading's
            # is the date it was written, "… January 8, 2009" over December 2008's)
            named = years_named(_COMPARED_TAIL.sub(" ", own))
            return not calendar or not named or bool(named & years)
        return bool(years_named(text(c)) & years)

    stating = [c for c in candidates if _stated_amounts(units[c[1]][c[2]].text)]
    # An amount a sentence states for a fiscal year it names ("$738 billion for the first
    # eight months of fiscal year 2019") is none of another year asked, even when nothing
    # else is left: "the deficit in 2024" is not answered with 2019's.
    if years:
        other_fiscal = [
            c
            for c in stating
            if (named := _fiscal_years_named(_COMPARED_TAIL.sub(" ", units[c[1]][c[2]].text)))
            and not named & years
            and not own_years(c) & years
        ]
        candidates = [c for c in candidates if c not in other_fiscal]
        stating = [c for c in stating if c not in other_fiscal]
    if calendar:
        # the amounts of a span in another year, by the sentence or its heading ("… in
        # July 2008", "While revenues were about 1 percent lower …" under "… August 6,
        # 2008"), are none of the year asked, even when nothing else is left
        other = [c for c in stating if not names(c) and own_years(c) and not own_years(c) & years]
        candidates = [c for c in candidates if c not in other]
        stating = [c for c in stating if c not in other]
    if not any(names(c) for c in stating):
        return candidates
    kept = [c for c in candidates if c not in stating or names(c)]
    if years and not months and not spans:
        # A whole year asked, and a sentence states the year's amount ("the federal budget
        # deficit for fiscal year 2008 will be in the vicinity of $400 billion"): one stating
        # part of it ("for the first 10 months of fiscal year 2008 … $371 billion") answers
        # another question.

        def partial(c: tuple[int, int, int, int]) -> bool:
            own = units[c[1]][c[2]].text
            return bool(
                _month_spans(own)
                or _year_parts(own)
                or _PART_OF_YEAR.search(own)
                or _ONE_MONTH.search(own)  # "recorded for the month of July"
            )

        def whole_year(c: tuple[int, int, int, int]) -> bool:
            # the sentence names the year itself (a heading's is when it was written)
            own = units[c[1]][c[2]].text
            return bool(years_named(own) & years) and not partial(c)

        if any(whole_year(c) for c in stating):
            kept = [c for c in kept if c not in stating or not partial(c)]
    return kept


# A question asking for one amount.
_ASKS_AMOUNT = re.compile(
    r"\bhow\s+(?:much|many|large|big|high)\b|\bwhat\s+(?:was|were|is|are)\s+the\s+"
    r"(?:amount|total|number|size|value)\b|いくら|幾ら|多少|何(?:円|%|％)"
    # "What is the daily meal allowance?", "… the hotel limit in Tokyo?": a noun phrase
    # ending in what is paid or allowed asks for its amount ("the budget process" and "the
    # federal budget deficit" end in another noun, and ask no amount of it)
    r"|\bwhat(?:'s|\s+(?:was|were|is|are))\s+(?:the|my|our|your)\s+"
    r"(?:(?!(?:of|for|on|in|to|the|a|an)\b)[\w-]+\s+){0,3}?"
    r"(?:allowance|limit|cap|budget|rate|fee|cost|price|salary|stipend|per\s+diem|threshold"
    r"|deductible|reimbursement|payment|bonus)s?"
    r"(?=\s*(?:[?.,;!]|$)|\s+(?:for|in|on|of|when|per|at|to|that|if|while|during|under|from"
    r"|with|each|a|an|the|this|my|our|your)\b)",
    re.IGNORECASE,
)
# A question asking how one amount compares with another ("How much larger was the deficit
# than a year earlier?", "By how much did receipts fall?"): the amounts after the first are
# what it asks about.
_ASKS_COMPARISON = re.compile(
    r"\b(?:more|less|fewer|larger|smaller|bigger|higher|lower|greater|than|compared?|versus"
    r"|vs|differ(?:ence)?|change[ds]?|grow|grew|grown|growth|increase[ds]?|decrease[ds]?"
    r"|rise|rose|risen|fall|fell|fallen|drop(?:ped)?|decline[ds]?)\b"
    # "How much were outlays up in …?" ("What is the sign up fee?", "Is the VPN down?"
    # and "how much was down to the rebates" compare nothing)
    r"|\b(?:was|were|is|are)\s+(?:\w+\s+){1,3}(?:up|down)\s+(?:by|from|in|over|on|during"
    r"|since|compared|year)\b"
    r"|前期比|前年比|同比|環比|环比|増え|増加|減少|伸び|增长|增加|减少|下降|增减|増減",
    re.IGNORECASE,
)
# Where a clause of an English sentence ends: a comma, semicolon or dash before more words.
_CLAUSE_END = re.compile(r",\s+(?=[a-z$])|;\s+|\s+--\s+|\s+[—–]\s+")


# A bracketed aside: "(前期は951億円の営業損失)", "(prior year: $1.2 billion)".
_ASIDE = re.compile(r"[(（][^()（）]*[)）]")


# Who posted a chat message, as exports write it before the message: "[2026-10-05 08:12 ET]
# Tom Reyes (Globex, external): ", "2026-10-05 08:12 - Tom Reyes: ". The speaker's name and
# company say who wrote, not what: "Tom Reyes (Globex, external): Morning." is no answer
# to a question about Globex's gateways.
_SPEAKER = re.compile(
    r"^\s*(?:\[[^\]\n]{0,30}\d{1,2}:\d{2}[^\]\n]{0,20}\]|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4},?\s+\d{1,2}:\d{2}(?::\d{2})?"
    r"(?:\s*[AaPp][Mm])?\s+-)\s*[^:\n]{1,80}:\s"
)


def _without_speaker(text: str) -> str:
    """``text`` without the label of who posted it (:data:`_SPEAKER`)."""
    m = _SPEAKER.match(text)
    return text[m.end() :] if m else text


def _without_marker(sentence: str) -> str:
    """A list item's text without its marker ("1. 予約: …" → "予約: …")."""
    text = sentence.lstrip()
    marker = _LIST_ITEM.match(text)
    return text[marker.end() :] if marker else text


# A number that names a place in a sequence, not an amount: "from day 1 of your
# employment", "step 3", "page 12".
_LABEL_NUMBER = re.compile(
    r"\b(?:day|page|step|section|chapter|item|version|phase|stage|floor|room)\s+\d+\b",
    re.IGNORECASE,
)


# A question asking when: "When do summer hours apply?", "By when must I …?" (not "When I
# travel, how much …?", which asks how much).
_ASKS_WHEN = re.compile(
    r"^\s*(?:by\s+|from\s+|until\s+|since\s+)?when\s+(?:do|does|did|is|are|was|were|will|can|"
    r"should|must|may|would)\b|^\s*what\s+(?:date|day|time|month)\b|いつ|何時から|何日から|什么时候|何时",
    re.IGNORECASE,
)
# A sentence saying when: a date, a month or weekday, a time of day, or a span in days or
# weeks ("May 1 through August 31", "by 10:00", "within 30 days", "every Friday").
_TIME = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+\d{1,2}\b"
    r"|\b\d{1,2}\s+(?:jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b"
    r"|\b\d{1,2}[:.]\d{2}\s*(?:am|pm)?\b|\b\d{1,2}\s*(?:am|pm)\b"
    r"|\b(?:within|before|after|by|until)\s+(?:\d+|one|two|three|four|five|six|seven|ten|thirty)"
    r"\s+(?:business\s+|working\s+|calendar\s+)?(?:days?|weeks?|months?|hours?)\b"
    r"|\d+\s*月\s*\d+\s*日|\d+\s*月|\d+\s*日(?:まで|以内)|\d{4}\s*年",
    re.IGNORECASE,
)


# A sentence giving an example of what another states.
_EXAMPLE = re.compile(r"\s*(?:for\s+(?:example|instance)|e\.\s?g\.)[,:]?\s", re.IGNORECASE)
# A question asking how long or how often: a duration or a frequency answers it. In
# Japanese and Chinese only the forms that ask for a length ("何日間", not "何日まで", which
# may ask by what date), and how far back ("どこまでさかのぼって": "過去 5 年間").
_HOW_LONG = r"\bhow\s+(?:long|often|soon|quickly|frequently)\b"
_ASKS_DURATION = re.compile(
    _HOW_LONG + r"|何(?:時間|分間|日間|週間|[かヶカケ]月|年間)|どのくらいの(?:期間|頻度)"
    r"|どこまで(?:さかのぼ|遡)|何年前まで"
    r"|多久|多长时间|多長時間|几天|幾天|几周|幾週|几个月|幾個月",
    re.IGNORECASE,
)
# The English forms: where an English page's sentences state no length in the words
# :data:`_DURATION` reads, they are no answer to them. A Japanese or Chinese question, or a
# sentence quoted in either, may spell a length otherwise ("三日", "一年", "2年").
_ASKS_DURATION_IN_WORDS = re.compile(_HOW_LONG, re.IGNORECASE)
# A sentence stating a duration or a frequency ("last 15-30 minutes", "every 30 mins",
# "within 5 minutes", "3 calendar days", "weekly", "30分以内"), not a time before or after
# something.
_NUMBER_WORD = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    r"|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy"
    r"|eighty|ninety|hundred|few|several|couple\s+of|many"
)
_UNIT = (
    r"minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|fortnights?|months?|mos?|quarters?"
    r"|years?|yrs?|decades?"
)
_DURATION = re.compile(
    # a number and a unit: "15-30 minutes", "2.5yrs", "6-week", "a couple of weeks"
    # (a year's number is no count of years: "2019 year-end")
    rf"(?:\b(?!(?:19|20)\d\d\b)\d+(?:\.\d+)?(?:\s*(?:-|–|to|or)\s*\d+(?:\.\d+)?)?[\s-]*"
    rf"(?:(?:business|working|calendar)\s+)?(?:seconds?|secs?|{_UNIT})"
    rf"|\b(?:an?\s+)?(?:{_NUMBER_WORD})[\s-]+(?:(?:business|working|calendar)\s+)?(?:{_UNIT})"
    rf"|\ban?[\s-]+(?:(?:business|working|calendar)\s+)?(?:{_UNIT}))\b"
    # "about 24 hours before the meeting" says when, not how long
    r"(?!\s+(?:before|after|prior|ago|earlier|later|in\s+advance)\b)"
    # how often: "weekly", "every sprint", "twice a year"; how long: "as long as you are
    # employed", "immediately"
    r"|\b(?:hourly|daily|weekly|fortnightly|monthly|quarterly|annually|yearly)\b"
    rf"|\b(?:every|each)\s+(?:other\s+)?(?:\d+(?:\.\d+)?\s*|(?:{_NUMBER_WORD})\s+)?"
    rf"(?:{_UNIT}|sprints?|releases?|cycles?|pay\s+periods?|paydays?|shifts?|terms?|semesters?"
    r"|mornings?|evenings?|nights?|weekdays?|weekends?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b"
    r"|\b(?:once|twice|three\s+times)\s+(?:a|an|per|every)\b"
    r"|\bas\s+long\s+as\b|\b(?:immediately|right\s+away|at\s+once|indefinitely)\b"
    # Japanese and Chinese: "30分以内", "3か月"; not a date's day ("4月15日") nor "3分の1"
    r"|(?<![月\d])\d+\s*(?:分(?!の)|時間|日|週間|か月|ヶ月|カ月|年間|天|周|个月|個月|小时|小時|分钟|分鐘)",
    re.IGNORECASE,
)


def _spelled_otherwise(sentence: str) -> bool:
    """Whether ``sentence`` is mostly Japanese or Chinese, which may spell a length in ways
    :data:`_DURATION` does not read ("三日", "一年", "2年"): it is not held to state none."""
    return cjk_share(sentence) > 0.5


def _states_duration(sentence: str) -> bool:
    """Whether ``sentence`` states a duration or a frequency (:data:`_DURATION`), or a
    length, which "how long" asks of a text or a thing as well ("no longer than 2
    paragraphs", "at least 12 characters": :data:`_LENGTH`)."""
    text = _without_marker(sentence)
    return bool(_DURATION.search(text) or _LENGTH.search(text))


# A length: a number (or number word) of paragraphs, characters, words, pages, lines … or
# of a unit of distance.
_LENGTH = re.compile(
    rf"(?:\b(?!(?:19|20)\d\d\b)\d+(?:[.,]\d+)?|\b(?:{_NUMBER_WORD}))[\s-]*"
    r"(?:paragraphs?|characters?|chars|words?|pages?|lines?|sentences?|letters?|digits?"
    r"|bytes|[km]b|kilobytes?|megabytes?|mm|cm|metres?|meters?|km|kilometres?|kilometers?"
    r"|miles?|inches|inch|feet|foot|ft)\b",
    re.IGNORECASE,
)


def _states_time(sentence: str) -> bool:
    """Whether ``sentence`` says when: a date, a month with its day, a weekday, a time of
    day or a span of days or weeks (:data:`_TIME`)."""
    return bool(_TIME.search(_without_marker(sentence)))


# A question asking which version of something: a version number answers it.
_ASKS_VERSION = re.compile(r"(?i:\b(?:which|what)\s+(?:[\w.+-]+\s+){0,3}?versions?\b)")
# A version as pages state one: "1.29", "v2", "version 3", "Python 3.11", "the latest LTS".
_VERSION = re.compile(
    r"\bv?\d+(?:\.\d+)+\b|\b[vV]\d+\b|(?i:\bversion\s+\d)|\b[A-Z][\w+-]*\s+\d+\b(?!\s+versions?\b)"
    r"|(?i:\blatest\b|\bLTS\b|\bnewest\b|\bcurrent\s+(?:stable\s+)?(?:release|version)\b)"
)


def _states_version(sentence: str) -> bool:
    """Whether ``sentence`` states a version (:data:`_VERSION`)."""
    return bool(_VERSION.search(_without_marker(sentence)))


def _states_number(sentence: str) -> bool:
    """Whether ``sentence`` states a number other than a list marker or a label ("We
    provide a home office setup budget from day 1" states no amount)."""
    return bool(_NUMBER.search(_LABEL_NUMBER.sub(" ", _without_marker(sentence))))


def without_asides(sentence: str) -> str:
    """``sentence`` without the bracketed asides that state an amount of their own, when
    what remains still states one: "…260億円(前期は951億円の営業損失)となった。" →
    "…260億円(…)となった。". The prior year's figure beside the one asked for is a
    comparison nobody asked for; the cut is marked, what is kept is verbatim."""
    kept = _ASIDE.sub(lambda m: "(…)" if _stated_amounts(m.group(0)) else m.group(0), sentence)
    return kept if kept != sentence and _stated_amounts(kept) else sentence


def _first_amount(sentence: str, question: set[str]) -> str:
    """A sentence stating two or more amounts, cut after the clause that states the first
    ("The deficit was $738 billion for the first eight months of fiscal year 2019, …, $206
    billion more than …" → up to "2019"), when that clause holds at least as many of the
    question's words as the rest: the amounts after it answer other questions (a change,
    a comparison). The cut is marked with an ellipsis; what is kept is verbatim."""
    amounts = _stated_amounts(sentence)
    if len(amounts) < 2 or is_line_unit(sentence):
        return sentence
    end = _CLAUSE_END.search(sentence, amounts[0].end())
    if end is None or end.start() >= amounts[1].start():
        return sentence
    head, rest = sentence[: end.start()], sentence[end.start() :]
    held = question.intersection(document_terms(head))
    if len(held) < len(question.intersection(document_terms(rest))) or len(head.split()) < 5:
        return sentence
    return head.rstrip(" ,;") + " …"


# Where a sentence joins two clauses each stating an amount of its own subject
# ("Revenues were $49 billion higher and outlays were $255 billion higher than …").
_JOINED_CLAUSE = re.compile(r",?\s+(?:and|while|whereas)\s+|;\s+")
# What an amount is compared with, said once for both clauses (" than during …").
_COMPARED_WITH = re.compile(r"\s+(?:than|compared\s+(?:with|to))\s+")


def _asked_clause(sentence: str, question: set[str]) -> str:
    """A sentence joining two clauses that each state an amount, cut to the one whose
    subject the question names where the other names none of it: asked how much outlays
    rose, "Revenues were $49 billion higher and outlays were $255 billion higher than
    during the first eight months of 2018." → "… outlays were $255 billion higher than
    during the first eight months of 2018." What both clauses are compared with ("than
    …") stays with the clause kept. The cut is marked; what is kept is verbatim."""
    amounts = _stated_amounts(sentence)
    if len(amounts) != 2 or is_line_unit(sentence):
        return sentence
    join = _JOINED_CLAUSE.search(sentence, amounts[0].end(), amounts[1].start())
    if join is None:
        return sentence
    first, second = sentence[: join.start()], sentence[join.end() :]
    subject = {t for t in question if t not in _PERIOD_WORDS}
    # what tells the clauses apart: the question's words one holds and the other not
    held_first = subject.intersection(document_terms(first))
    held_second = subject.intersection(document_terms(_COMPARED_WITH.split(second)[0]))
    own_first, own_second = held_first - held_second, held_second - held_first
    if own_second and not own_first:
        return "… " + second
    if own_first and not own_second:
        compared = _COMPARED_WITH.search(second, amounts[1].end() - join.end())
        tail = second[compared.start() :] if compared else ""
        return f"{first.rstrip(' ,;')} …{tail}" if tail else f"{first.rstrip(' ,;')} …"
    return sentence


def _names_period(question: str) -> bool:
    """Whether ``question`` names the period it asks about (a year, month, quarter, half or
    count of months)."""
    return bool(
        _year_parts(question)
        or _month_spans(question)
        or _MONTH_WORD.search(question)
        or _YEAR_WORD.search(question)
    )


def _answers_for_the_year(quote: Quote, question: str) -> bool:
    """Whether ``quote`` may answer what something was in the period ``question`` names:
    it states an amount (a table line: a number besides its years), or names a year the
    question names, or the question names no year."""
    if _stated_amounts(quote.sentence):
        return True
    if quote.line and re.search(r"\d", _YEAR_WORD.sub(" ", quote.sentence)):
        return True
    years = set(_YEAR_WORD.findall(question))
    return not years or bool(years_named(quote.sentence) & years)


def _one_amount(chosen: Sequence[Quote]) -> list[Quote]:
    """``chosen`` without the prose sentences that state amounts of their own after the first
    one that states an amount: a question asking for one amount of a period it names gets
    the one its best sentence states ("営業利益は…260億円となった。"), not the next best
    sentence's forecast or prior-year figure beside it. List items and table lines are
    kept: they are chosen as a whole (a table's rows, a list's items)."""
    kept: list[Quote] = []
    stated = False
    for q in chosen:
        amounts = not q.line and bool(_stated_amounts(q.sentence))
        if amounts and stated:
            continue
        stated = stated or amounts
        kept.append(q)
    return kept


# A question for what something was: "What was the deficit in …?", "What were receipts …?",
# "What deficit did the government run in July 2008?".
_ASKS_WHAT_WAS = re.compile(
    r"^\s*what\s+(?:was|were|(?:[\w-]+\s+){0,2}(?:deficit|surplus|revenues?|receipts|outlays"
    r"|income|profit|loss|spending|sales|debt|amount|total)\s+(?:did|was|were)\b)",
    re.IGNORECASE,
)
# Words that name when, not what: a year, a month, a count of months, "fiscal", "first".
# They select the period (see _of_the_period_asked) and only break ties between units that
# hold the same words of what the question asks about: a sentence restating "the first 11
# months of fiscal year 2008" does not outrank the one about corporate receipts.
_PERIOD_WORDS = frozenset(
    document_terms(
        """year years fiscal fy calendar month months quarter quarters half first second third
        fourth last ended ending period january february march april may june july august
        september october november december jan feb mar apr jun jul aug sep sept oct nov dec
        one two three four five six seven eight nine ten eleven twelve q1 q2 q3 q4 h1 h2"""
    )
)
#: How much one word of what is asked outweighs every word of when.
_SUBJECT = 16
#: How much a unit's cosine with a question telling a story counts against its share of the
#: best unit's words (:meth:`ExtractiveProvider._as_asked`). Chosen on the Sourcegraph
#: handbook trial, from 1, 2 and 4; RESULTS.md has the figures.
_READ_WEIGHT = 4.0


def _is_period_word(term: str) -> bool:
    return term in _PERIOD_WORDS or term.isdigit()


# The word after "how" that names the form of the answer (an amount, a count, a duration),
# not what it is about: "how much spend you have left" answers no "How much can I spend?".
_HOW_FORM = re.compile(
    r"\bhow\s+(much|many|long|far(?:\s+back)?|often|soon|big|large|high|old)\b", re.IGNORECASE
)


# A question asking since when: "How far back does the actuals file go?"
_ASKS_SINCE = re.compile(r"\bhow\s+far\s+back\b|\bsince\s+when\b", re.IGNORECASE)


# A question asking how much, how many or how long, and a quantity a sentence states.
_ASKS_QUANTITY = re.compile(
    r"\bhow\s+(?:much|many|long|often|far|large|big|high)\b"
    r"|\b(?:maximum|minimum|limit)\b|多少|几|幾|いくら|どのくらい|どれくらい"
    r"|何(?:時間|日|週|か月|ヶ月|%|％|円|人|回)",
    re.IGNORECASE,
)
_QUANTITY = re.compile(
    rf"(?:\d[\d,.]*|\b(?:{'|'.join(_COUNTS)})\b)[\s-]*(?:%|percent|hours?|days?|weeks?|months?"
    r"|years?|minutes?|times|dollars|miles|pay\s+periods?)\b|[$€£¥]\s?\d|\d\s*(?:時間|日|週|年|%|％|円|元)",
    re.IGNORECASE,
)


# Any number a sentence may state: digits, a number word, CJK numerals.
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half|once|twice|"
    r"single|double|none|zero)\b|[一二三四五六七八九十百千万億兆两]",
    re.IGNORECASE,
)


def _prose_then_next(
    at: Sequence[tuple[int, int] | None], units: Sequence[Sequence[_Unit]]
) -> Iterator[tuple[int, int, int, _Unit]]:
    """For each chosen sentence of prose (in order) that a unit under the same heading
    follows in its snippet: its place in ``chosen``, snippet, unit and that next unit."""
    for i, place in enumerate(at):
        if place is None:
            continue
        s_index, u_index = place
        unit = units[s_index][u_index]
        if unit.group is not None or u_index + 1 >= len(units[s_index]):
            continue
        after = units[s_index][u_index + 1]
        if after.heading == unit.heading:
            yield i, s_index, u_index + 1, after


def _with_quantity(
    chosen: list[Quote],
    at: Sequence[tuple[int, int] | None],
    units: Sequence[Sequence[_Unit]],
    quoted: set[tuple[int, int]],
    snippets: Sequence[Snippet],
) -> list[Quote]:
    """``chosen`` with, when none of it states a quantity and the question asks for one,
    the sentence right after the first chosen sentence that states one and continues it
    (the same paragraph's prose under the same heading): "You can receive Administrative
    Leave in order to vote." is answered by "You can receive up to 4 hours for each
    election event.", which holds none of the question's words."""
    if any(_QUANTITY.search(q.sentence) for q in chosen):
        return chosen
    for i, s_index, next_index, after in _prose_then_next(at, units):
        if (
            after.group is None
            and after.lead is None
            and (s_index, next_index) not in quoted
            and not _MARKER.search(after.text)
            and _QUANTITY.search(after.text)
        ):
            ref = snippets[s_index].ref
            return [*chosen[: i + 1], Quote(ref, after.text, 0), *chosen[i + 1 :]]
    return chosen


# A question asking which ones ("Which countries can't I work from?"): the enumeration is
# the answer.
_ASKS_WHICH = re.compile(r"^\W*which\b|^\W*what\s+are\b|どの|哪些", re.IGNORECASE)
# A question asking what follows (or precedes) one step: "what comes after the interviews?",
# "What happens before the reference checks?", "what's the next step after onboarding?".
# ``what`` is the step named.
_ASKS_NEXT = re.compile(
    r"\bwhat(?:'s|’s|\s+is|\s+are)?\s+(?:(?:comes?|happens?|follows?|is|are)\s+"
    r"|(?:the\s+)?next\s+(?:step\s+|stage\s+)?(?:comes?\s+)?)"
    r"(?P<side>after|before)\s+(?P<what>[^?.!,;]+)",
    re.IGNORECASE,
)


# A sentence opening with a word that points back ("This includes work while traveling",
# "They are paid at …", "この休暇は…"): what it points to is in the sentence before it. Not
# "It", which opens as many sentences pointing nowhere ("It is important to …").
_POINTS_BACK = re.compile(
    r"^(?:(?:This|These|That|Those|They|Such|Its|Their)\b|この|これ|その|それ|此|该|這|这)"
)


def _with_antecedent(
    chosen: list[Quote],
    at: list[tuple[int, int] | None],
    units: Sequence[Sequence[_Unit]],
    quoted: set[tuple[int, int]],
    snippets: Sequence[Snippet],
) -> None:
    """An answer opening with a sentence that points back ("This includes work while
    traveling for personal reasons.") opens with the sentence of prose before it instead
    ("We cannot support or employ teammates in any of these countries …"), where the snippet
    holds one that is not quoted yet. In place."""
    if not chosen or at[0] is None or not _POINTS_BACK.match(chosen[0].sentence.lstrip()):
        return
    s_index, u_index = at[0]
    before = (s_index, u_index - 1)
    if u_index == 0 or before in quoted:
        return
    unit = units[s_index][u_index - 1]
    if unit.group is not None or unit.lead is not None or unit.header or _asks(unit):
        return
    if u_index == 1 and snippets[s_index].text.lstrip().startswith(unit.text.strip()):
        return  # what opens a chunk may be half a sentence its cut left: it explains nothing
    quoted.add(before)
    chosen.insert(0, Quote(snippets[s_index].ref, unit.text, 0))
    at.insert(0, before)


# A sentence stating an amount "during the period" names its period in a sentence before.
_THE_PERIOD = re.compile(
    r"\b(?:the|that|this|same)\s+(?:same\s+)?period\b|同期間|该期间|該期間|同期内", re.IGNORECASE
)


#: How many sentences back the one naming "the period" may be.
_PERIOD_LOOKBACK = 3


def _with_the_period(
    chosen: list[Quote],
    at: list[tuple[int, int] | None],
    units: Sequence[Sequence[_Unit]],
    quoted: set[tuple[int, int]],
    snippets: Sequence[Snippet],
) -> None:
    """Each quoted sentence of prose stating an amount for "the period" without naming it
    ("… corporate receipts fell by about 15 percent during the period.") with the sentence
    of prose before it in front, where that one names the period ("Total receipts for the
    first 11 months of fiscal year 2008 were …") and is not quoted yet: an amount is
    never shown without the period it covers, least of all a part of a year. In place."""
    i = 0
    while i < len(chosen):
        place = at[i]
        quote = chosen[i]
        i += 1
        if (
            place is None
            or quote.line
            or not _stated_amounts(quote.sentence)
            or not _THE_PERIOD.search(quote.sentence)
            or _month_spans(quote.sentence)
            or _YEAR_WORD.search(quote.sentence)
        ):
            continue
        s_index, u_index = place
        for j in range(u_index - 1, max(u_index - 1 - _PERIOD_LOOKBACK, -1), -1):
            unit = units[s_index][j]
            if (
                unit.group is not None
                or unit.header
                or unit.heading != units[s_index][u_index].heading
            ):
                break
            if not _stated_amounts(unit.text) or not (
                _month_spans(unit.text) or _YEAR_WORD.search(unit.text)
            ):
                continue  # the period is named by a sentence stating the paragraph's figures
            if (s_index, j) not in quoted:
                quoted.add((s_index, j))
                chosen.insert(i - 1, Quote(snippets[s_index].ref, unit.text, 0))
                at.insert(i - 1, (s_index, j))
                i += 1
            break


def _with_the_list(
    chosen: list[Quote],
    at: Sequence[tuple[int, int] | None],
    units: Sequence[Sequence[_Unit]],
    quoted: set[tuple[int, int]],
    snippets: Sequence[Snippet],
) -> list[Quote]:
    """``chosen`` with, when the question asks which ones and none of it is a list's item,
    the list right after the first chosen sentence under the same heading: "We cannot
    employ teammates in any of these countries … This includes work while traveling." is
    followed by "- Cuba", "- Iran" …, which hold none of the question's words but are what
    it asks for (a sentence ending in a colon introduces its list already)."""
    if any(place is not None and units[place[0]][place[1]].group is not None for place in at):
        return chosen
    for i, s_index, _, after in _prose_then_next(at, units):
        if after.group is None or after.table:
            continue
        members = [
            (s_index, j)
            for j in _list_members(units[s_index], after.group)
            if (s_index, j) not in quoted and units[s_index][j].group is not None
        ]
        if not members or any(_MARKER.search(units[s_index][j].text) for _, j in members):
            continue
        ref = snippets[s_index].ref
        listed = [Quote(ref, units[s_index][j].text, 0) for _, j in members]
        return [*chosen[: i + 1], *listed, *chosen[i + 1 :]]
    return chosen


def _place(
    snippets: Sequence[Snippet], units: Sequence[Sequence[_Unit]], s: int, u: int
) -> tuple[str, str]:
    """The document and heading unit ``u`` of snippet ``s`` stands under."""
    return snippets[s].doc_id, units[s][u].heading


def _other_section(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether two units stand in two sections of one document: both know their heading
    (a chunk that starts inside a section does not), and the headings differ. Units of
    two documents are not judged so: another document may well answer the rest."""
    return a[0] == b[0] and bool(a[1]) and bool(b[1]) and a[1] != b[1]


def _named_otherwise(question: set[str], best_heading: str, unit: _Unit) -> bool:
    """Whether ``unit`` stands in a sibling of the best unit's section, one of the same
    kind (the headings share a word: Dental Insurance beside Medical Insurance), and lacks a
    word of the question the best unit's heading is named by: asked about the medical plan's
    premium, "The company pays 100% of the premium" under Dental Insurance answers for
    another plan, though it holds every other word. A section of another kind ("Flights"
    beside "Class of travel") may answer the same question, and is judged as before."""
    best = set(document_terms(best_heading))
    if not best & set(document_terms(unit.heading)):
        return False
    held = question.intersection(document_terms(unit.text)) | question.intersection(
        document_terms(unit.heading)
    )
    return bool(question.intersection(best) - held)


# "Paid parental leave (PPL)": a name written out, then its abbreviation in brackets.
_DEFINED = re.compile(r"([^\W\d_][\w'’-]*(?:[ \t]+[\w'’-]+){0,9})[ \t]*\(([A-Z][A-Za-z]{1,7})\)")
_SMALL_WORDS = frozenset(["a", "an", "and", "for", "in", "of", "on", "or", "the", "to", "with"])


def _abbreviations(snippets: Sequence[Snippet]) -> dict[str, dict[str, set[str]]]:
    """Per document, each abbreviation its passages define ("Paid parental leave (PPL)",
    "Voluntary Leave Transfer Program (VLTP)") → the terms of what it stands for: its
    letters are the initials of the words before the brackets. A passage saying "use the
    PPL within a year" then holds "paid", "parental" and "leave" for the question."""
    out: dict[str, dict[str, set[str]]] = {}
    for snippet in snippets:
        for m in _DEFINED.finditer(f"{snippet.title}\n{snippet.text}"):
            abbr = m.group(2)
            words = m.group(1).split()
            content = [i for i, w in enumerate(words) if w.casefold() not in _SMALL_WORDS]
            if len(content) < len(abbr):
                continue
            first = content[-len(abbr)]
            initials = "".join(words[i][0] for i in content[-len(abbr) :])
            if initials.casefold() != abbr.casefold():
                continue
            terms = set(document_terms(" ".join(words[first:])))
            for key in document_terms(abbr):
                out.setdefault(snippet.doc_id, {}).setdefault(key, set()).update(terms)
    return out


def _score(
    question: set[str],
    unit: _Unit,
    expansions: Mapping[str, set[str]] | None = None,
    named: frozenset[str] = frozenset(),
    counted: _Counted | None = None,
) -> int:
    """The question terms ``unit`` holds, plus those of its heading when it holds any (a
    list item under "Class of travel" answers a question about the class of travel), the
    words of what is asked counting :data:`_SUBJECT` times a word of when or of whom (the
    terms of the names in ``named``: "コニカミノルタ", six terms of a script written without
    spaces, does not make a sentence about sales outrank one about operating profit).
    ``expansions``: the document's abbreviations, whose written-out terms a unit using one
    holds too. ``counted``: what a question asking how much or how many counts, so a unit
    saying the opposite of one of its words (:func:`_contradicts`), or counting another
    kind of it (:func:`_counts_another_kind`), counts nothing; asked whether ("Is FMLA
    leave paid?"), "unpaid" is the answer."""
    score, opposite = _score_saying(question, unit, expansions, named, counted)
    return 0 if opposite else score


#: A web address written out, with or without its scheme ("vltp.gsa.gov").
_WEB_ADDRESS = re.compile(
    r"\bhttps?://\S|(?<![\w@.-])(?:www\.\w|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:gov|com|org|net|edu"
    r"|mil|io)\b(?![@.\w]))",
    re.IGNORECASE,
)
#: What a unit holding a web address is, in the words a question asks for one with.
_WEB_WORDS = frozenset(document_terms("website web site url link"))


def _score_saying(
    question: set[str],
    unit: _Unit,
    expansions: Mapping[str, set[str]] | None,
    named: frozenset[str],
    counted: _Counted | None,
) -> tuple[int, bool]:
    """:func:`_score` before a contradiction counts, and whether ``unit`` says the opposite
    of what a question asking how much or how many asks (the unit analysed once)."""
    text = _without_speaker(unit.text)
    terms = set(document_terms(text))
    # a question's word the unit writes as two ("AppleCare" / "Apple Care"), or one
    # ("set up" / "setup"), is held as the question writes it
    terms.update(joined for _, _, joined in word_pairs(text) if joined in question)
    if expansions:
        for abbr in terms & expansions.keys():
            terms |= expansions[abbr]
    if _WEB_ADDRESS.search(text):
        # "Which website do I enroll on?" is answered by "- Go to https://transitapp…",
        # which says no "website": an address is one
        terms |= _WEB_WORDS
    own = question.intersection(terms)
    if not own:
        return 0, False
    held = own | question.intersection(document_terms(unit.heading))
    period = sum(1 for t in held if _is_period_word(t) or t in named)
    opposite = counted is not None and (
        _contradicts(question, terms) or _counts_another_kind(counted, text, terms)
    )
    return _SUBJECT * (len(held) - period) + period, opposite


def _asks(unit: _Unit) -> bool:
    """Whether ``unit`` is a question of the page's own (a sentence of prose ending in "?")."""
    return unit.group is None and unit.text.rstrip().endswith(("?", "？"))


# What a question asking how much or how many counts, and the words before it naming its
# kind: "How many hours of annual leave does …" counts "leave" of the kind "annual".
_ASKED_COUNT = re.compile(
    r"\bhow\s+(?:much|many)\s+(?:(?:hours?|days?|weeks?|months?|years?)\s+of\s+)?"
    r"(?P<kinds>(?:[^\W\d_][\w'’-]*\s+){1,3}?)(?P<head>[^\W\d_][\w'’-]*)\s+"
    r"(?:do|does|did|can|could|will|would|is|are|was|were|may|might|should|must|has|have)\b",
    re.IGNORECASE,
)
# A quantity a sentence states and the few words after it: "4 hours of sick leave".
_COUNTED_PHRASE = re.compile(
    rf"(?:\d[\d,.]*|\b(?:{'|'.join(_COUNTS)})\b)[\s-]+"
    r"(?P<words>[^\W\d_][\w'’-]*(?:\s+[^\W\d_][\w'’-]*){0,5})",
    re.IGNORECASE,
)


# The units a quantity is counted in, which name no kind of what is counted.
_UNIT_TERMS = frozenset(search_terms("hours days weeks months years workweeks"))


@dataclass(frozen=True, slots=True)
class _Counted:
    """What a question asking how much or how many counts (index terms): ``head`` the thing
    counted and ``kinds`` the words naming which kind of it, both empty when the question
    says no kind ("How much revenue did …"). ``others``: the kinds the passages set beside
    an asked one ("annual and sick leave"), the only words that make a count another kind's."""

    head: str = ""
    kinds: frozenset[str] = frozenset()
    others: frozenset[str] = frozenset()


def _counted(question: str) -> _Counted | None:
    """What ``question`` counts, or None when it asks no quantity."""
    if not _ASKS_QUANTITY.search(question):
        return None
    m = _ASKED_COUNT.search(question)
    head = search_terms(m["head"]) if m else []
    if m is None or len(head) != 1:
        return _Counted()
    kinds = frozenset(search_terms(m["kinds"])) - _UNIT_TERMS  # "days of vacation": no kind
    return _Counted(head[0], kinds) if kinds else _Counted()


# Two kinds of one thing set side by side: "annual and sick leave", "sick or annual leave".
# (A look-ahead, so "earn and use annual and sick leave" is read at every word.)
_SIDE_BY_SIDE = re.compile(
    r"(?=\b([^\W\d_][\w'’-]*),?\s+(?:and|or|&|and/or)\s+([^\W\d_][\w'’-]*)\s+"
    r"([^\W\d_][\w'’-]*))",
    re.IGNORECASE,
)


def _with_other_kinds(counted: _Counted | None, texts: Iterable[str]) -> _Counted | None:
    """``counted`` with the kinds ``texts`` set beside one asked, before the same thing:
    "earn and use annual and sick leave" makes sick leave another kind than annual leave.
    Words the passages never set beside the kind asked ("unused", "accrued", "parental"
    before "leave") say more of a count, not that it is another kind's."""
    if counted is None or not counted.kinds:
        return counted
    others: set[str] = set()
    for text in texts:
        for m in _SIDE_BY_SIDE.finditer(text):
            if search_terms(m[3]) != [counted.head]:
                continue
            pair = [set(search_terms(m[1])), set(search_terms(m[2]))]
            for one, other in (pair, pair[::-1]):
                if one & counted.kinds:
                    others |= other - counted.kinds
    return replace(counted, others=frozenset(others))


def _count_phrases(counted: _Counted, text: str) -> Iterator[set[str]]:
    """The kinds of each quantity ``text`` states of the thing counted ("4 hours of sick
    leave": {"sick"}; "4 hours of leave": none)."""
    for m in _COUNTED_PHRASE.finditer(text):
        words = [search_terms(w) for w in m["words"].split()]
        if [counted.head] in words:
            yield {t for w in words[: words.index([counted.head])] for t in w} - _UNIT_TERMS


def _counts_another_kind(counted: _Counted, text: str, terms: set[str]) -> bool:
    """Whether ``text`` (of index ``terms``) states the quantity of another kind of what is
    counted, one the passages set beside the kind asked, and nowhere names the kind asked:
    "Full-time employees earn 4 hours of sick leave per pay period" does not say how many
    hours of annual leave they earn where the page speaks of "annual and sick leave"."""
    if not counted.others or counted.kinds & terms:
        return False
    found = False
    for kinds in _count_phrases(counted, text):
        if not kinds & counted.others:
            return False  # "4 hours of leave", "of accrued leave": the kind asked may be it
        found = True
    return found


def _counts_any_kind(counted: _Counted, text: str) -> bool:
    """Whether ``text`` states a quantity of the thing counted of no kind at all ("6 hours
    of leave"), which the kind asked may be."""
    return any(not kinds for kinds in _count_phrases(counted, text))


def _contradicts(question: set[str], terms: set[str]) -> bool:
    """Whether a unit says the opposite of a word of the question and never the word itself:
    "12 weeks of unpaid leave" does not answer "How many weeks of paid leave?"."""
    return any(t not in terms and (f"un{t}" in terms or f"non{t}" in terms) for t in question)


def _floor(scores: Iterable[int], share: float = 0.5) -> int:
    """The least score a unit beside the best needs: ``share`` of the best's words of what
    is asked (or, when the question names nothing but a period, of its words)."""
    best = max(scores)
    if best >= _SUBJECT:
        return _SUBJECT * math.ceil(best // _SUBJECT * share)
    return max(1, math.ceil(best * share))


#: What a unit under another heading of the best one's document needs, against the best:
#: a neighbouring section that shares some words ("carry over a maximum of 15 days", under
#: Military leave) answers another question than the one the best section answers.
_ELSEWHERE = 0.75


def _cells(row: str) -> list[str]:
    return [" ".join(c.split()).casefold() for c in row.split(_CELL)]


def _category_terms(rows: Sequence[str]) -> list[set[str]]:
    """Per row, the terms of its cells in category columns: columns whose values repeat
    (at most half as many distinct values as rows), such as an office or a country, as
    opposed to a row's own name or date."""
    cells = [_cells(row) for row in rows]
    width = max((len(c) for c in cells), default=0)
    categorical = {
        i for i in range(width) if len({c[i] for c in cells if i < len(c)}) * 2 <= len(rows)
    }
    return [
        {t for i, cell in enumerate(row) if i in categorical for t in document_terms(cell)}
        for row in cells
    ]


class ExtractiveProvider:
    """Quotes the units that best match the question. No model; see the module docstring.

    Selection for ``answer``: every unit of every snippet (sentence, list item, table row) is
    scored by the number of distinct question terms it contains. Candidates are ranked by
    score, then by snippet order (the retrieval rank), then by position in the snippet. The
    best one is always taken (if its score is positive); up to ``max_sentences - 1`` more are
    added when they score at least half as well as the best, so a weak sentence does not
    dilute a strong one. A list or a table block counts as one choice and is quoted whole
    (see the module docstring). Identical units (overlapping chunks repeat text) are quoted
    once, under the first snippet that has them.
    """

    name = "extractive"

    def __init__(
        self, *, max_sentences: int = MAX_SENTENCES, similarity: Similarity | None = None
    ) -> None:
        if max_sentences < 1:
            raise ValueError("max_sentences must be at least 1")
        self.max_sentences = max_sentences
        #: The sentence encoder a question telling a story is read with (module docstring).
        self.similarity = similarity

    def reading_with(self, similarity: Similarity | None) -> ExtractiveProvider:
        """This provider, reading a question that tells a story with ``similarity``."""
        return ExtractiveProvider(max_sentences=self.max_sentences, similarity=similarity)

    def complete(self, request: ChatRequest) -> ChatResponse:
        if request.purpose == "rerank":
            text = " > ".join(s.ref for s in self.rank(request.question, request.snippets))
        else:
            parts: list[str] = []
            previous: Quote | None = None
            for q in self.answering_each_ask(request):
                if previous is not None:
                    parts.append("\n" if q.line or previous.line else " ")
                parts.append(f"{q.sentence} [{q.ref}]")
                previous = q
            text = "".join(parts)
        return ChatResponse(text=text, model=self.name)

    def answering_each_ask(self, request: ChatRequest) -> list[Quote]:
        """:meth:`quotes`, and where the question asks two things or more (each sentence that
        asks, each question joined with "and": "What's the process and who has to approve
        it?"), the best unit for each ask that the quotes lack, from the documents already
        quoted, after them. The quotes of the whole follow its most frequent words, and
        answered one ask only ("… the 240-hour carry-over" to "How much annual leave will I
        earn each pay period, and is there a limit on how much I can roll over?")."""
        chosen = self.quotes(request)
        asks = asks_of(request.question)
        if not chosen or len(asks) < 2:
            return chosen
        refs = {q.ref for q in chosen}
        within = tuple(s for s in request.snippets if s.ref in refs)
        room = self.max_sentences  # what the asks may add, at most

        def plain(text: str) -> str:
            return " ".join(text.replace("…", " ").split())

        def quoted(q: Quote) -> bool:  # already in the answer, whole or cut ("…")
            mine = plain(q.sentence)
            return any(mine in plain(c.sentence) or plain(c.sentence) in mine for c in chosen)

        for ask in asks:
            found = self.quotes(replace(request, question=ask, snippets=within))
            if not found:
                continue
            top = max(q.score for q in found)
            best = [q for q in found if q.score == top]
            if any(quoted(q) for q in best):
                continue
            for q in best[: min(_PER_ASK, room)]:
                chosen.append(q)
                room -= 1
        return chosen

    def quotes(self, request: ChatRequest, *, stating_only: bool = False) -> list[Quote]:
        """The units an ``answer`` consists of, in output order (possibly none).
        ``stating_only``: only units that state what the question asks for are candidates
        (the second look of a question asking how much, how long or how often, when the
        units chosen first state no amount or duration)."""
        asks_length = bool(_ASKS_DURATION_IN_WORDS.search(request.question))
        asks_version = bool(_ASKS_VERSION.search(request.question))
        states = (
            _states_version if asks_version else _states_duration if asks_length else _states_number
        )
        question = set(search_terms(request.question))
        # "how long", "how often": the form of the answer (a duration, a frequency), not
        # what it is about ("longer absences like sabbatical" answers no "how long")
        question -= {t for m in _HOW_FORM.finditer(request.question) for t in search_terms(m[1])}
        if not question:
            return []
        question.update(t for phrase in request.equivalents for t in search_terms(phrase))
        if not question:
            return []
        units = [_units(s) for s in request.snippets]
        beside = _next_step(request.question, units)
        if beside is not None:
            return [Quote(request.snippets[beside[0]].ref, units[beside[0]][beside[1]].text, 1)]
        named = frozenset(t for name in request.names for t in search_terms(name)) - {
            t for phrase in request.equivalents for t in search_terms(phrase)
        }
        defined = _abbreviations(request.snippets)
        counted = _with_other_kinds(_counted(request.question), (s.text for s in request.snippets))
        candidates: list[tuple[int, int, int, int]] = []  # (-score, snippet, unit, score)
        seen: set[str] = set()
        opposite: dict[str, int] = {}  # per document, its best unit saying the opposite
        asks_when = bool(_ASKS_WHEN.match(request.question))
        asks_list = any(p.search(request.question) for p in (_HOW_TO, _ASKS_WHICH, _ASKS_NEXT))
        for s_index, snippet_units in enumerate(units):
            if not asks_list and _lists_steps(request.snippets[s_index]):
                continue  # the headings of a document's steps: only what asks for them
            asked = 0  # the score of a question the page asks, for the unit answering it
            for u_index, unit in enumerate(snippet_units):
                if unit.header or _MARKER.search(unit.text):
                    continue
                flat = " ".join(unit.text.split())
                if flat in seen:
                    continue
                doc_id = request.snippets[s_index].doc_id
                score, says_opposite = _score_saying(
                    question, unit, defined.get(doc_id), named, counted
                )
                if says_opposite:
                    opposite[doc_id] = max(opposite.get(doc_id, 0), score)
                    score = 0
                score, asked = max(score, asked), 0
                if _asks(unit):
                    # A page's own question ("Is there an expectation to work over the
                    # weekends?") is what it answers next, never an answer: the unit after it
                    # is quoted for what the two share with the question asked.
                    asked = score
                    continue
                if (
                    score == 0
                    and unit.group is not None
                    and _lists_steps(request.snippets[s_index])
                ):
                    # A step heading of the list asked for ("2. Screening call") names the
                    # step; the heading above the list ("How we hire") says of what.
                    score = _score(question, _Unit(unit.heading), None, named, counted)
                if score == 0 and asks_when and _states_time(unit.text):
                    # "When do summer hours apply?" under the heading "Summer Hours": "We
                    # work 4-day weeks from May 1 through August 31" says when, in words of
                    # its own; the heading says of what.
                    score = _score(question, _Unit(unit.heading), None, named, counted)
                if score == 0 and stating_only and states(unit.text):
                    # Looking again for an amount: a sentence stating one under a heading
                    # that names what is asked ("年次健康診断 — 主な機能": "GitLab は年間最大
                    # ¥15,000 を払い戻します") says how much of it, in words of its own.
                    score = _score(question, _Unit(unit.heading), None, named, counted)
                if score > 0:
                    seen.add(flat)
                    candidates.append((-score, s_index, u_index, score))
        # What a document answers the count with is its best unit: where that says the
        # opposite ("12 administrative weeks of unpaid leave" to "how many weeks of paid
        # parental leave?") or counts another kind ("4 hours of sick leave" to "how many
        # hours of annual leave?"), the document's lesser units (who is eligible) answer
        # something else, and none of them is quoted; nor is another document's lesser
        # unit, unless it names the kind asked.
        least = max(opposite.values(), default=0)

        def answers_elsewhere(text: str) -> bool:
            # a lesser unit of another document that names the kind asked, or counts the
            # thing of no kind ("Staff accrue 6 hours of leave per pay period")
            if counted is None:
                return False
            return bool(counted.kinds.intersection(search_terms(text))) or _counts_any_kind(
                counted, text
            )

        candidates = [
            c
            for c in candidates
            if c[3] >= opposite.get(request.snippets[c[1]].doc_id, 0)
            and (c[3] >= least or answers_elsewhere(units[c[1]][c[2]].text))
        ]
        if not candidates:
            return []
        candidates = _of_the_period_asked(request.question, candidates, units)
        if _ASKS_FORECAST.search(request.question):
            # A forecast is asked ("2025年3月期の売上高の予想は?"): an amount a sentence states
            # as done (the year's actual, "当期における…連結売上高は…1兆1,599億円") is not it.
            candidates = [
                c
                for c in candidates
                if not _stated_amounts(units[c[1]][c[2]].text)
                or _EXPECTED.search(units[c[1]][c[2]].text)
            ]
        if not candidates:
            return []
        candidates = self._as_asked(request, candidates, units)
        if stating_only:
            candidates = [c for c in candidates if states(units[c[1]][c[2]].text)]
            if not candidates:
                return []
        floor = _floor(c[3] for c in candidates)
        best_place = _place(request.snippets, units, *min(candidates)[1:3])
        elsewhere = _floor((c[3] for c in candidates), _ELSEWHERE)
        steps = _step_lists(units) if _HOW_TO.search(request.question) else {}
        # A how-to question is answered by its steps: units of a numbered list come first.
        # An example ("For instance, an employee who …") illustrates the rule a unit as
        # good as it states: the rule opens the answer.
        candidates.sort(
            key=lambda c: (
                (c[1], units[c[1]][c[2]].group) not in steps,
                c[0],
                bool(_EXAMPLE.match(units[c[1]][c[2]].text)),
                c,
            )
        )
        if asks_when:
            # When is asked: the answer opens with the best unit saying when (a date, a
            # month, a weekday, "within 30 days"), not with one that only names the topic.
            timed = next(
                (
                    c
                    for c in candidates
                    if c[3] >= elsewhere and _states_time(units[c[1]][c[2]].text)
                ),
                None,
            )
            if timed is not None and timed != candidates[0]:
                candidates.remove(timed)
                candidates.insert(0, timed)
        elif _ASKS_DURATION.search(request.question):
            # How long or how often is asked: the answer opens with the best unit stating a
            # duration or a frequency ("These meetings should generally last 15-30 minutes"),
            # not with one sharing more of the question's other words ("Post a link … about
            # 24 hours before the meeting"): one of the passage retrieval ranks first, or
            # one scoring three quarters of the best.
            lasting = next(
                (
                    c
                    for c in candidates
                    if (c[3] >= elsewhere or c[1] == 0) and _states_duration(units[c[1]][c[2]].text)
                ),
                None,
            )
            if lasting is not None and lasting != candidates[0]:
                candidates.remove(lasting)
                candidates.insert(0, lasting)
                best_place = _place(request.snippets, units, *lasting[1:3])
        elif _ASKS_AMOUNT.search(request.question) or _ASKS_SINCE.search(request.question):
            # How much, how many or how far back is asked: the answer opens with the best unit
            # stating a number ("We expect new teammates to spend up to $2,000"), not with a
            # pointer to where the budget is looked up; one continuing the best unit's
            # sentence stays after it, and one scoring under three quarters of the best (a data
            # file's rows beside the README's sentence) does not move. Not how often or how
            # long: a unit stating any number ("Runs 3/6/12 performance reviews", a manager's
            # job table) is no answer to them.
            stating = next(
                (
                    c
                    for c in candidates
                    if c[3] >= elsewhere and _states_number(units[c[1]][c[2]].text)
                ),
                None,
            )
            if stating is not None and stating != candidates[0]:
                follows = candidates[0][1:3] == (stating[1], stating[2] - 1)
                candidates.remove(stating)
                candidates.insert(1 if follows else 0, stating)
        scores = {(c[1], c[2]): c[3] for c in candidates}
        tables = _tables(request.snippets, units)
        table_of = {row: key for key, table in tables.items() for row in table.rows}
        selected, undecided = _selected_rows(tables, units, question, scores)
        fuller = _fuller_units(request.snippets, units)
        fragments = {
            (s, 0)
            for s, snippet_units in enumerate(units)
            if snippet_units and (s, 0) not in fuller and _starts_mid_sentence(snippet_units[0])
        }
        chosen: list[Quote] = []
        at: list[tuple[int, int] | None] = []  # where each chosen unit stands
        picked: set[tuple[object, ...]] = set()
        places = 0  # the choices that quoted something: a unit quoted already takes none
        quoted: set[tuple[int, int]] = set()
        texts: set[str] = set()
        for _, s_index, u_index, score in candidates:
            if score < floor or (s_index, u_index) in quoted:
                continue
            place = _place(request.snippets, units, s_index, u_index)
            if _other_section(place, best_place) and (
                score < elsewhere
                or _named_otherwise(question, best_place[1], units[s_index][u_index])
            ):
                continue
            if places >= self.max_sentences:
                break
            unit = units[s_index][u_index]
            key: tuple[object, ...]
            members: list[tuple[int, int]]
            note: str | None = None
            table_key = table_of.get((s_index, u_index))
            if table_key is None and unit.lead is not None:  # the sentence above a table
                rows = [(s_index, i) for i, x in enumerate(units[s_index]) if x.group == unit.lead]
                table_key = next((table_of[r] for r in rows if r in table_of), None)
            if table_key is not None:
                key = table_key
                table = tables[key]
                names = _unlisted(request) if key in undecided else []
                if names:
                    note = f"{' and '.join(names)} {'is' if len(names) == 1 else 'are'} "
                    note += UNLISTED
                    listed = {r for r in table.rows if not _MARKER.search(units[r[0]][r[1]].text)}
                    members = _table_members(table, listed, units)
                else:
                    members = _table_members(table, selected, units)
            elif unit.group is not None or unit.lead is not None:
                group = unit.group if unit.group is not None else unit.lead
                assert group is not None
                key = (s_index, group)
                members = [(s_index, i) for i in _list_members(units[s_index], group)]
                if (s_index, group) in steps:
                    members, merged = _whole_steps(request.snippets, steps, units, (s_index, group))
                    picked.update(merged - {key})
                else:
                    members = _named_items(
                        units,
                        members,
                        question,
                        # the rest of this list in another chunk: same document, not
                        # another section (a list of another section naming "Vacation:" is
                        # not it; a chunk starting mid-list knows no heading)
                        named_elsewhere=any(
                            _names_item(units, s2, i2, question)
                            for s2, snippet_units in enumerate(units)
                            if s2 != s_index
                            and request.snippets[s2].doc_id == request.snippets[s_index].doc_id
                            for i2 in range(len(snippet_units))
                            if not _other_section(
                                _place(request.snippets, units, s2, i2),
                                _place(request.snippets, units, s_index, u_index),
                            )
                        ),
                    )
            else:
                # a sentence of its own: never the key of a list (``(snippet, group)``)
                key, members = (s_index, u_index, "unit"), [(s_index, u_index)]
            if key in picked or not members:
                continue
            picked.add(key)
            before = len(chosen)
            if note is not None:
                chosen.append(Quote(request.snippets[members[0][0]].ref, note, 0))
                at.append(None)
            for m in members:
                m = fuller.get(m, m)  # a chunk that starts mid-sentence: the whole sentence
                flat = " ".join(units[m[0]][m[1]].text.split())
                if m in quoted or flat in texts or _said_already(flat, texts):
                    continue
                if m in fragments and chosen:
                    continue  # half a sentence no passage here completes: not beside whole ones
                quoted.add(m)
                texts.add(flat)
                ref = request.snippets[m[0]].ref
                chosen.append(Quote(ref, units[m[0]][m[1]].text, scores.get(m, 0)))
                at.append(m)
            places += len(chosen) > before
        _narrow_columns(chosen, at, units, question)
        _with_antecedent(chosen, at, units, quoted, request.snippets)
        _with_the_period(chosen, at, units, quoted, request.snippets)
        if _ASKS_QUANTITY.search(request.question):
            chosen = _with_quantity(chosen, at, units, quoted, request.snippets)
        elif _ASKS_WHICH.search(request.question):
            chosen = _with_the_list(chosen, at, units, quoted, request.snippets)
        if _ASKS_AMOUNT.search(request.question) and not any(
            _states_number(q.sentence) for q in chosen
        ):
            # "How much is the transit benefit?" over a page that says how to enrol and
            # never what it pays: sentences without a number do not answer how much (a
            # step's "1." is its place in the list, no number it states). What does state
            # one is looked at once more on its own: the coverage table's row "緊急医療 |
            # 最大$250,000" holds fewer of the question's words than the prose around it.
            return [] if stating_only else self.quotes(request, stating_only=True)
        if asks_version and not any(_states_version(q.sentence) for q in chosen):
            # "Which Kubernetes version must our clusters run?" over pages that name
            # Kubernetes and "2 versions of the service" but no version of it: no answer,
            # and what states a version is looked at once more on its own
            return [] if stating_only else self.quotes(request, stating_only=True)
        if asks_length and not any(
            _states_duration(q.sentence) or _spelled_otherwise(q.sentence) for q in chosen
        ):
            # "How long do I have to shadow an existing IC before I join the rotation?" over
            # a page saying who shadows and never for how long: no duration, no answer, and
            # what states one is looked at once more on its own.
            return [] if stating_only else self.quotes(request, stating_only=True)
        dated = _names_period(request.question)
        if (
            _ASKS_WHAT_WAS.search(request.question)
            and dated
            and not any(_answers_for_the_year(q, request.question) for q in chosen)
        ):
            # "What was the federal budget deficit in fiscal year 1980?" over a README whose
            # sentences state no amount and name other years (1984, 2023): about the topic,
            # not an answer for the period asked.
            return []
        if _ASKS_COMPARISON.search(request.question):
            if not _ASKS_AMOUNT.search(request.question):
                return chosen
            # "How much did outlays rise …?": the amount of what is asked, not the other
            # clause's
            return [replace(q, sentence=_asked_clause(q.sentence, question)) for q in chosen]
        if _ASKS_AMOUNT.search(request.question):
            # How much is asked: a list's items or a table's rows stating no number beside
            # a sentence saying how much (the steps to claim beside "GitLab pays back up to
            # ¥15,000 a year") do not answer it, nor the line introducing them. A sentence
            # of prose stays: it says what the amount is of.
            chosen = [
                q
                for q in chosen
                if _states_number(q.sentence)
                or q.sentence.endswith(UNLISTED)  # what is listed follows, with its amounts
                or not (q.line or q.sentence.rstrip().endswith((":", "：")))
            ]
            if dated:
                chosen = _one_amount(chosen)
            chosen = [
                replace(q, sentence=without_asides(_first_amount(q.sentence, question)))
                for q in chosen
            ]
        elif _ASKS_WHAT_WAS.search(request.question) and dated:
            # "What was the deficit in the first 10 months of fiscal year 2008?" asks for one
            # amount too, but which sentence states it is less sure than for "how much":
            # each sentence keeps its first amount, and no sentence is left out.
            chosen = [replace(q, sentence=_first_amount(q.sentence, question)) for q in chosen]
        return chosen

    def _as_asked(
        self,
        request: ChatRequest,
        candidates: list[tuple[int, int, int, int]],
        units: Sequence[Sequence[_Unit]],
    ) -> list[tuple[int, int, int, int]]:
        """``candidates`` ranked as a question telling a story asks (module docstring): by
        the share of the best unit's words plus :data:`_READ_WEIGHT` times the cosine, their
        first element the new rank (ties keep the order by words). Unchanged without an
        encoder, for a question of one sentence, for CJK text and where any candidate stands
        in a RESTRICTED snippet; and when the encoder fails, which is logged."""
        if (
            self.similarity is None
            or asking_sentence(request.question) is None
            or cjk_share(request.question) > 0.5
        ):
            return candidates
        texts: list[str] = []
        for _, s_index, u_index, _ in candidates:
            unit = units[s_index][u_index]
            if is_restricted(request.snippets[s_index].sensitivity) or cjk_share(unit.text) > 0.5:
                return candidates
            texts.append(f"{unit.heading}\n{unit.text}" if unit.heading else unit.text)
        try:
            cosines = self.similarity.similarity(request.question, texts)
        except EmbeddingError as exc:
            _log.warning("the question was read by its words alone: %s", exc)
            return candidates
        best = max(c[3] for c in candidates)
        read = sorted(
            zip(candidates, cosines, strict=True),
            key=lambda pair: (-(pair[0][3] / best + _READ_WEIGHT * pair[1]), pair[0]),
        )
        return [(rank - len(read), c[1], c[2], c[3]) for rank, (c, _) in enumerate(read)]

    @staticmethod
    def rank(question: str, snippets: Sequence[Snippet]) -> list[Snippet]:
        """Snippets by descending term overlap with ``question``; equal scores keep their order."""
        terms = set(query_terms(question))
        return sorted(snippets, key=lambda s: -_overlap(terms, s.text))


@dataclass(frozen=True, slots=True)
class _Table:
    """The rows of one table present in a request, over every snippet that holds some,
    with the header line of each snippet's block (``None`` for rows stored alone)."""

    rows: list[tuple[int, int]]
    headers: list[tuple[int, int]]


def _tables(
    snippets: Sequence[Snippet], units: Sequence[Sequence[_Unit]]
) -> dict[tuple[str, str, str], _Table]:
    """Table rows grouped by table: same document, header line and heading."""
    tables: dict[tuple[str, str, str], _Table] = {}
    for s_index, snippet_units in enumerate(units):
        header: tuple[int, int] | None = None
        for u_index, unit in enumerate(snippet_units):
            if unit.header:
                header = (s_index, u_index)
            elif unit.table:
                head = " ".join(units[header[0]][header[1]].text.split()) if header else ""
                key = (snippets[s_index].doc_id, head, unit.heading)
                table = tables.setdefault(key, _Table([], []))
                table.rows.append((s_index, u_index))
                if header is not None and not table.headers:
                    table.headers.append(header)
    return tables


def _selected_rows(
    tables: Mapping[tuple[str, str, str], _Table],
    units: Sequence[Sequence[_Unit]],
    question: set[str],
    scores: Mapping[tuple[int, int], int],
) -> tuple[set[tuple[int, int]], set[tuple[str, str, str]]]:
    """The table rows worth quoting, judged per table: the rows of the categories the
    question names ("Frankfurt" names the office column: every Frankfurt row), else the
    rows holding the most question terms that tell the table's rows apart ("London" among
    the cities, not "limit", which every row holds), else the best-scoring rows. Also the
    tables of that last kind, whose rows the question names none of."""
    out: set[tuple[int, int]] = set()
    undecided: set[tuple[str, str, str]] = set()
    for key, table in tables.items():
        rows = [r for r in table.rows if not _MARKER.search(units[r[0]][r[1]].text)]
        if not rows:
            continue
        texts = [units[s][u].text for s, u in rows]
        if _lacks_the_year_asked(question, texts):
            continue
        named = [len(question & c) for c in _category_terms(texts)]
        held = [question.intersection(document_terms(t)) for t in texts]
        shared = set.intersection(*held)
        telling = [len(h - shared) for h in held]
        ranked = [scores.get(row, 0) for row in rows]
        for counts in (named, telling, ranked):
            best = max(counts)
            if best > 0:
                kept = [i for i, n in enumerate(counts) if n == best]
                if counts is not ranked and _lacks_the_year_asked(
                    question, [texts[i] for i in kept]
                ):
                    break  # the rows of the line asked, none of them of the year asked
                if counts is named:
                    kept = _telling_apart(kept, held)
                out.update(rows[i] for i in kept)
                if counts is ranked:
                    undecided.add(key)
                break
    return out, undecided


_YEAR_TERM = re.compile(r"(?:19|20)\d{2}")


def _lacks_the_year_asked(question: set[str], rows: Sequence[str]) -> bool:
    """Whether the table's rows are years (a cell of most is one) and none is a year the
    question asks about: "customs duties in fiscal year 2025" is not answered by the rows
    of 1982 to 1990 that a long-format block retrieved holds (beside another line's 2025)."""
    asked = {t for t in question if _YEAR_TERM.fullmatch(t)}
    if not asked:
        return False
    years = [{c.strip() for c in _cells(r) if _YEAR_TERM.fullmatch(c.strip())} for r in rows]
    dated = sum(1 for y in years if y)
    return dated * 2 >= len(years) and not any(y & asked for y in years)


def _telling_apart(kept: list[int], held: Sequence[set[str]]) -> list[int]:
    """Of the rows of the categories a question names, those holding the most of its other
    terms that tell them apart: "revenues in fiscal year 2009" names the revenue rows of a
    long-format table, and its year names one of them. All of them when nothing tells
    them apart ("Which holidays does the Frankfurt office observe?")."""
    if len(kept) < 2:
        return kept
    shared = set.intersection(*(held[i] for i in kept))
    telling = {i: len(held[i] - shared) for i in kept}
    best = max(telling.values())
    return kept if best == 0 else [i for i in kept if telling[i] == best]


def _table_members(
    table: _Table, selected: set[tuple[int, int]], units: Sequence[Sequence[_Unit]]
) -> list[tuple[int, int]]:
    """A table as quoted: the lead sentence and header line, then its selected rows in
    snippet order (at most :data:`MAX_ENUMERATION`). Empty when no row is selected."""
    rows = [r for r in table.rows if r in selected][:MAX_ENUMERATION]
    if not rows:
        return []
    lead: list[tuple[int, int]] = []
    for s, u in table.headers:
        group = units[s][u].group
        lead += [(s, i) for i, x in enumerate(units[s]) if x.lead is not None and x.lead == group]
    return [*lead, *table.headers, *rows]


#: The end of the line an answer opens with when a table does not list what is asked.
UNLISTED = "not among those listed:"

#: A table at least this wide is quoted with only the columns a question asks about.
WIDE_TABLE = 5
# A cell stating a figure; "△3,746" and "▲" are how Japanese tables write a loss, and "-" or
# "—" stands for a figure not given.
_FIGURE_CELL = re.compile(r"[-+(△▲]?[$€£¥]?\d[\d,]*(?:\.\d+)?\)?\s?%?|[-—–]")


def _row_cells(line: str) -> list[str]:
    """A table line's cells, empty ones kept ("25.03 | | 3.18" has three)."""
    return [" ".join(c.split()) for c in line.split("|")]


def _narrow_columns(
    chosen: list[Quote],
    at: list[tuple[int, int] | None],
    units: Sequence[Sequence[_Unit]],
    question: set[str],
) -> None:
    """Quote a wide table's header and rows with only the columns that answer: the columns
    of figures whose header holds the most of the question's words ("EBITDA" of
    fourteen), and those where
    a quoted row holds one (the company's name, the year asked). "What is 3M's EBITDA?"
    over a row of fourteen figures is answered "Name | EBITDA / 3M | 6488000000". A table
    whose asked cell is empty in every row quoted is not quoted at all (it does not say).
    Nothing changes when no header names what is asked, or the table is narrow already."""
    i = 0
    while i < len(chosen):
        place = at[i]
        if place is None or not units[place[0]][place[1]].header:
            i += 1
            continue
        header = _row_cells(chosen[i].sentence)
        end = i + 1
        while end < len(chosen) and (row := at[end]) is not None and chosen[end].line:
            unit = units[row[0]][row[1]]
            if not unit.table or unit.header:
                break
            end += 1
        rows = [_row_cells(q.sentence) for q in chosen[i + 1 : end]]
        if len(header) >= WIDE_TABLE and rows and all(len(r) == len(header) for r in rows):
            # only a column of figures is what is asked: a header matching the question
            # over names or years ("fiscal_year") says which rows, not what they state
            figures = [
                all(not r[c] or _FIGURE_CELL.fullmatch(r[c]) for r in rows)
                and not any(_YEAR_TERM.fullmatch(r[c]) for r in rows)
                for c in range(len(header))
            ]
            # the words naming the rows quoted ("2023年3月期第2四半期") say which row, not
            # which column ("四半期利益" shares 四半期 with the row, not with what is asked)
            which = question.intersection(*(set(document_terms(r[0])) for r in rows[:1]))
            overlap = [
                len((question - which).intersection(document_terms(h))) if figures[c] else 0
                for c, h in enumerate(header)
            ]
            best = max(overlap)
            asked = {c for c, n in enumerate(overlap) if best and n == best}
            naming = {
                c
                for r in rows
                for c, cell in enumerate(r)
                if c not in asked
                and not _FIGURE_CELL.fullmatch(cell)  # a value names nothing ("19.2": "2")
                and question.intersection(document_terms(cell))
            } or {0}
            keep = sorted(asked | naming)
            if asked and not any(r[c] for r in rows for c in asked):
                # the cell asked for is empty in every row quoted: the table does not say
                del chosen[i:end], at[i:end]
                continue
            if asked and len(keep) < len(header):
                for j, cells in zip(range(i, end), [header, *rows], strict=True):
                    chosen[j] = replace(chosen[j], sentence=" | ".join(cells[c] for c in keep))
        i = end


def _step_lists(units: Sequence[Sequence[_Unit]]) -> dict[tuple[int, int], tuple[int, int]]:
    """``(snippet, group)`` → ``(first, last)`` step number of every numbered list."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for s_index, snippet_units in enumerate(units):
        numbers: dict[int, list[int]] = {}
        for unit in snippet_units:
            m = _STEP_NUMBER.match(unit.text)
            if unit.group is not None and m:
                numbers.setdefault(unit.group, []).append(int(m.group(1)))
        for group, found in numbers.items():
            out[(s_index, group)] = (found[0], found[-1])
    return out


def _whole_steps(
    snippets: Sequence[Snippet],
    steps: Mapping[tuple[int, int], tuple[int, int]],
    units: Sequence[Sequence[_Unit]],
    start: tuple[int, int],
) -> tuple[list[tuple[int, int]], set[tuple[int, int]]]:
    """The numbered list ``start`` quoted whole, with its introduction, joined by the parts
    of it that other snippets of the same document hold (a list the ingest cut in two: the
    part that starts where this one stops, and the one this one continues)."""
    doc = snippets[start[0]].doc_id
    chain = [start]
    while True:  # parts before
        first = steps[chain[0]][0]
        before = [k for k, (_, last) in steps.items() if last == first - 1 and k not in chain]
        before = [k for k in before if snippets[k[0]].doc_id == doc]
        if first <= 1 or not before:
            break
        chain.insert(0, before[0])
    while True:  # parts after
        last = steps[chain[-1]][1]
        after = [k for k, (first, _) in steps.items() if first == last + 1 and k not in chain]
        after = [k for k in after if snippets[k[0]].doc_id == doc]
        if not after:
            break
        chain.append(after[0])
    members = [(s, i) for s, group in chain for i in _list_members(units[s], group)]
    return members, set(chain)


def _starts_mid_sentence(unit: _Unit) -> bool:
    """Whether a passage's first unit is the end of a sentence a chunk cut ("should outline
    the specifics of …"): prose opening with a word in lower case ("iPhone" is a name, and
    a table's header line or a list item is not prose)."""
    if unit.table or unit.header or is_line_unit(unit.text) or not unit.text.strip():
        return False
    first = unit.text.split(maxsplit=1)[0]
    return first.isalpha() and first.islower()


def _fuller_units(
    snippets: Sequence[Snippet], units: Sequence[Sequence[_Unit]]
) -> dict[tuple[int, int], tuple[int, int]]:
    """The first unit of a passage that starts mid-sentence (chunks overlap, so one may
    begin with "not be redelegated:"), mapped to the unit of another passage of the same
    document that it is the end of; and the last unit of a passage that a chunk's end cut
    ("… send an email to Alexandra"), mapped to the unit of another passage that it is the
    start of. Quoting the fragment would end an answer's line on half a sentence."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for s, snippet_units in enumerate(units):
        if not snippet_units:
            continue
        last = len(snippet_units) - 1
        tail = " ".join(snippet_units[last].text.split())
        for s2, other in enumerate(units):
            if s2 == s or snippets[s2].doc_id != snippets[s].doc_id or not tail:
                continue
            longer = [
                i2
                for i2, unit in enumerate(other)
                if len(" ".join(unit.text.split())) > len(tail)
                and " ".join(unit.text.split()).startswith(tail)
            ]
            if longer:
                out[(s, last)] = (s2, longer[0])
                break
    for s, snippet_units in enumerate(units):
        if not snippet_units:
            continue
        head = " ".join(snippet_units[0].text.split())
        if not head or not head[0].islower():
            continue
        for s2, other in enumerate(units):
            if s2 == s or snippets[s2].doc_id != snippets[s].doc_id:
                continue
            for i2, unit in enumerate(other):
                text = " ".join(unit.text.split())
                if len(text) > len(head) and text.endswith(head):
                    out[(s, 0)] = (s2, i2)
                    break
            if (s, 0) in out:
                break
    return out


def _label_terms(unit: _Unit) -> set[str]:
    """The terms of a list item's label ("Level 4:", "Employee-family medical coverage:")."""
    if unit.group is None:
        return set()
    body = _LIST_ITEM.sub("", unit.text, count=1)
    cut = _LABEL_END.search(body)
    return set(search_terms(body[: cut.start()])) if cut else set()


def _is_named(unit: _Unit, question: set[str]) -> bool:
    """Whether a list item's label ("Level 4:", "APHIS:") is all words of the question."""
    terms = _label_terms(unit)
    return bool(terms) and len(terms) <= _LABEL_MAX_TERMS and terms <= question


def _names_item(units: Sequence[Sequence[_Unit]], s: int, i: int, question: set[str]) -> bool:
    """Whether the question names list item ``i`` of snippet ``s``, by its whole label or by
    its label's own words among its list's part in that snippet."""
    unit = units[s][i]
    if unit.group is None:
        return False
    if _is_named(unit, question):
        return True
    part = [(s, j) for j in _list_members(units[s], unit.group)]
    return (s, i) in _named_by_difference(units, part, question)


def _named_by_difference(
    units: Sequence[Sequence[_Unit]], members: list[tuple[int, int]], question: set[str]
) -> list[tuple[int, int]]:
    """The items whose label's own words — those not every label of the list shares — are
    all words of the question: "the family medical plan" names "Employee-family medical
    coverage:" among the employee-only, -partner and -child(ren) lines, though the question
    says neither "employee" nor "coverage". None unless every item has a label."""
    items = [m for m in members if units[m[0]][m[1]].group is not None]
    labels = [_label_terms(units[s][i]) for s, i in items]
    if len(items) < 2 or not all(labels):
        return []
    shared = set.intersection(*labels)
    return [
        m
        for m, terms in zip(items, labels, strict=True)
        if (own := terms - shared) and own <= question
    ]


def _named_items(
    units: Sequence[Sequence[_Unit]],
    members: list[tuple[int, int]],
    question: set[str],
    *,
    named_elsewhere: bool = False,
) -> list[tuple[int, int]]:
    """The items of a list the question names by their label ("Level 4" in "Level 4 → up
    to 2.1 % of pay"), with the sentence that introduces the list; all of ``members`` when
    it names none of them, or every one. When the question names an item of the same
    document's list in another passage (a list split across two chunks), a part naming
    none is nothing."""
    named = [m for m in members if _is_named(units[m[0]][m[1]], question)]
    named = named or _named_by_difference(units, members, question)
    items = sum(units[s][i].group is not None for s, i in members)
    if not named:
        return [] if named_elsewhere else members
    named = _with_sub_items(units, members, named)
    if len(named) == items:
        return members
    return [m for m in members if units[m[0]][m[1]].group is None or m in named]


def _with_sub_items(
    units: Sequence[Sequence[_Unit]], members: list[tuple[int, int]], named: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """``named`` with the items nested under each one that is a label alone: "- Transit
    Coordinator:" says nothing by itself, and its sub-items ("- DC employees: FAS-Transit
    Subsidy", "- Other regions: …") are what it is set to. The items after it written at a
    deeper indent, up to the next one at its own."""
    out = list(named)
    for m in named:
        unit = units[m[0]][m[1]]
        body = _LIST_ITEM.sub("", unit.text.strip(), count=1).strip()
        if "\n" in unit.text.strip() or not body.endswith((":", "：")):
            continue
        indent = len(unit.text) - len(unit.text.lstrip(" "))
        for other in members[members.index(m) + 1 :]:
            text = units[other[0]][other[1]].text
            if other[0] != m[0] or len(text) - len(text.lstrip(" ")) <= indent:
                break
            if other not in out:
                out.append(other)
    return out


def _lists_steps(snippet: Snippet) -> bool:
    """Whether ``snippet`` is the list the ingest made of a document's step headings (its
    locator holds :data:`~clearance.model.STEPS_PART`)."""
    return STEPS_PART in snippet.locator.split(",")


#: The fewest words of a sentence left out for being part of a line already quoted.
_SAID_WORDS = 5


def _said_already(flat: str, texts: Iterable[str]) -> bool:
    """Whether a sentence of :data:`_SAID_WORDS` words or more is part of a unit already
    quoted: a step's first sentence after the list of steps that holds it ("1. Update the
    README — Add a note …" then "Add a note …")."""
    return len(flat.split()) >= _SAID_WORDS and any(flat in text for text in texts)


def _next_step(question: str, units: Sequence[Sequence[_Unit]]) -> tuple[int, int] | None:
    """Where the question asks what comes after (or before) a step named by its label
    ("what comes after the interviews?" of "3. Interviews — You'll be invited …"): the item
    after (before) the first item so named, in the first snippet whose list has one there.
    The label's words must all be those of the step asked about, and the item beside it is
    of the same list; ``None`` when no list names it or it is the last (first) one."""
    m = _ASKS_NEXT.search(question)
    if m is None:
        return None
    asked = set(search_terms(m["what"]))
    step = -1 if m["side"].casefold() == "before" else 1
    if not asked:
        return None
    for s_index, snippet_units in enumerate(units):
        for u_index, unit in enumerate(snippet_units):
            terms = _label_terms(unit)
            if not terms or len(terms) > _LABEL_MAX_TERMS or not terms <= asked:
                continue
            items = [i for i, u in enumerate(snippet_units) if u.group == unit.group]
            at = items.index(u_index) + step
            if 0 <= at < len(items) and not _MARKER.search(snippet_units[items[at]].text):
                return s_index, items[at]
    return None


def _unlisted(request: ChatRequest) -> list[str]:
    """The names the question asks about ("the hotel limit in Tokyo") that none of the
    snippets holds: the table quoted does not list them."""
    held: set[str] = set()
    for snippet in request.snippets:
        held.update(document_terms(f"{snippet.title}\n{snippet.locator}\n{snippet.text}"))
    out: list[str] = []
    for m in _NAMED.finditer(request.question):
        name = m.group(1).rstrip(".'’")
        terms = set(document_terms(name))
        if terms and not terms <= held and not any(c.isdigit() for c in name):
            out.append(name)
    return list(dict.fromkeys(out))


def _list_members(units: Sequence[_Unit], group: int | None) -> list[int]:
    """A list as quoted: the sentence that introduces it, then every item."""
    lead = [i for i, u in enumerate(units) if u.lead is not None and u.lead == group]
    items = [i for i, u in enumerate(units) if u.group == group and not _MARKER.search(u.text)]
    return lead + items[:MAX_ENUMERATION]
