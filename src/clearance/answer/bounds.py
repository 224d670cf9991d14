"""Input bounds of the request path: how long a question (or search query) may be.

A question longer than ``[answer] max_question_chars`` is refused with
:class:`~clearance.errors.QuestionError` before any stage runs — before identity, the scope
gate, routing or retrieval read it — so every stage only ever sees bounded input. The
check sits at every entry point (``Clearance.ask``, ``Clearance.search`` and
``Orchestrator.ask``), each calling :func:`check_question`, so no path is unbounded.

A refused question writes no trace: the request never started, there is no status to
record, and the caller already holds the error. The message gives the length and the
limit, never the text.
"""

from __future__ import annotations

from clearance.errors import QuestionError

__all__ = ["MAX_QUESTION_CHARS_KEY", "check_question"]

#: The setting that bounds a question, as named in error messages and the docs.
MAX_QUESTION_CHARS_KEY = "[answer] max_question_chars"


def check_question(question: object, limit: int, *, what: str = "question") -> str:
    """Return ``question`` if it is a ``str`` of at most ``limit`` characters (code
    points), else raise :class:`~clearance.errors.QuestionError` (exit code 2)."""
    if not isinstance(question, str):
        raise QuestionError(f"the {what} must be text (str), not {type(question).__name__}")
    if len(question) > limit:
        raise QuestionError(
            f"the {what} is {len(question):,} characters long; the limit is {limit:,} "
            f"(set by {MAX_QUESTION_CHARS_KEY})"
        )
    return question
