"""Input bounds of the request path: how long a question (or search query) may be, and that
it is valid Unicode.

A question longer than ``[answer] max_question_chars`` is refused with
:class:`~clearance.errors.QuestionError` before any stage runs — before identity, the scope
gate, routing or retrieval read it — so every stage only ever sees bounded input. The
check sits at every entry point (``Clearance.ask``, ``Clearance.search`` and
``Orchestrator.ask``), each calling :func:`check_question`, so no path is unbounded.

Text that is not valid Unicode — a lone UTF-16 surrogate, as a JSON ``"\\ud800"`` escape or
an undecodable command-line byte gives — is refused the same way, naming the field and
where the surrogate is: tokenizers and encoders downstream would fail on it with their own
messages.

A refused question writes no trace: the request never started, there is no status to
record, and the caller already holds the error. The message gives the length and the
limit, never the text.
"""

from __future__ import annotations

import re

from clearance.errors import QuestionError

__all__ = ["MAX_QUESTION_CHARS_KEY", "check_question", "unicode_problem"]

#: The setting that bounds a question, as named in error messages and the docs.
MAX_QUESTION_CHARS_KEY = "[answer] max_question_chars"


_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_problem(text: str) -> str | None:
    """Why ``text`` is not valid Unicode (where its first lone surrogate is), or ``None``."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"character {found.start() + 1} is a lone surrogate (U+{ord(found.group()):04X})"


def check_question(question: object, limit: int, *, what: str = "question") -> str:
    """Return ``question`` if it is a ``str`` of at most ``limit`` characters (code
    points), else raise :class:`~clearance.errors.QuestionError` (exit code 2)."""
    if not isinstance(question, str):
        raise QuestionError(f"the {what} must be text (str), not {type(question).__name__}")
    problem = unicode_problem(question)
    if problem is not None:
        raise QuestionError(f"the {what} is not valid Unicode: {problem}")
    if len(question) > limit:
        raise QuestionError(
            f"the {what} is {len(question):,} characters long; the limit is {limit:,} "
            f"(set by {MAX_QUESTION_CHARS_KEY})"
        )
    return question
