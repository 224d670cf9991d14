"""Making data safe to print on an operator's terminal.

Everything the CLI prints for a human may come from a document: titles, ids, file names,
chunk text, error messages that quote them. A terminal interprets some characters as
commands (ESC sequences clear the screen or move the cursor, BEL rings, CR overwrites the
line) and some as layout (U+202E reverses the text after it, zero-width characters hide
text). Rich adds two interpreters of its own: ``[bold]`` markup and ``:emoji:`` codes
(``wiki:a:b:c`` would print as ``wiki🅰b:c``).

:func:`terminal_safe` shows every such character visibly (``\\x1b``, ``\\u202e``) and
:func:`safe` also escapes rich markup, for data placed inside a markup string or a table
cell. The consoles below never replace emoji codes and never highlight. Together that is
the guarantee: **data is printed as its literal text, and nothing in it acts on the
terminal**. ``--json`` output is for programs and keeps the exact data (JSON escapes the
C0 controls itself).

A backslash is not escaped, so literal text ``\\x1b`` and an escaped ESC print alike:
the point is that nothing acts on the terminal, not a reversible encoding (use ``--json``).
"""

from __future__ import annotations

import re
import unicodedata

from rich.console import Console
from rich.markup import escape

__all__ = ["make_console", "safe", "terminal_safe"]

# Controls (C0, DEL, C1), format characters (bidi overrides and isolates, zero-width
# characters, soft hyphen, tags), lone surrogates (undecodable file names) and the Unicode
# line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Printable ASCII is always safe; everything else is looked at one character at a time.
_SUSPECT = re.compile(r"[^\x20-\x7e]")


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def terminal_safe(value: object, *, multiline: bool = False) -> str:
    """``str(value)`` with every control, format and separator character shown as an
    escape (``\\x1b``, ``\\u202e``), so it cannot act on a terminal.

    ``multiline=True`` keeps newlines and tabs, for text that is legitimately several lines
    (an answer, a chunk); names, ids, titles, sources and error messages stay on one line.
    """

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if multiline and char in "\n\t":
            return char
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            return _visible(char)
        return char

    return _SUSPECT.sub(replace, str(value))


def safe(value: object, *, multiline: bool = False) -> str:
    """:func:`terminal_safe`, then rich markup escaped: for data inside a markup string
    (``console.print(f"[bold]{safe(title)}[/bold]")``) or a table cell."""
    return escape(terminal_safe(value, multiline=multiline))


def make_console(*, stderr: bool = False) -> Console:
    """A console for data: markup on (for our own styles only; data goes through
    :func:`safe`), emoji codes never replaced, no automatic highlighting, no wrapping."""
    return Console(stderr=stderr, emoji=False, highlight=False, soft_wrap=True)
