"""Where a dotted key stands in a TOML file, so a settings error can name its line.

Python's ``tomllib`` keeps no positions. :func:`key_line` reads the text again, line by line,
tracking the current table (``[a.b]`` and ``[[a.b]]`` headers, bare or quoted key parts) and
the dotted keys assigned under it (``x.y = …``; the n-th ``[[a.b]]`` is ``a.b[n]``, as
settings errors name it), and returns the line of the deepest entry
that the key names: the assignment itself, or the header of the table it lies in. Lines
inside multi-line strings and arrays are skipped. When nothing matches, there is no line and
the error names the file alone.
"""

from __future__ import annotations

import json
import re

__all__ = ["key_line", "split_key"]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LITERAL = re.compile(r"'([^']*)'")


def split_key(text: str) -> tuple[str, ...] | None:
    """``a."b c".d`` → ``("a", "b c", "d")``; None when ``text`` is not a TOML key."""
    parts: list[str] = []
    rest = text.strip()
    while True:
        for pattern in (_BARE, _BASIC, _LITERAL):
            match = pattern.match(rest)
            if match:
                part = match.group(1) if match.groups() else match.group(0)
                parts.append(_unescape(part) if pattern is _BASIC else part)
                rest = rest[match.end() :].lstrip()
                break
        else:
            return None
        if not rest:
            return tuple(parts)
        if not rest.startswith("."):
            return None
        rest = rest[1:].lstrip()


def _unescape(part: str) -> str:
    """A basic string's escapes (``\\"``, ``\\u00e9`` …) read as TOML reads them."""
    if "\\" not in part:
        return part
    try:
        return str(json.loads(f'"{part}"'))
    except ValueError:
        return part


def _key_of_assignment(line: str) -> tuple[str, ...] | None:
    """The key of ``key = value`` (the ``=`` outside quotes), or None."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "=":
            return split_key(line[:i])
    return None


def key_line(text: str, key: str) -> int | None:
    """The 1-based line of ``key`` (dotted, as settings errors name it) in TOML ``text``."""
    wanted = tuple(key.split("."))
    table: tuple[str, ...] = ()
    seen: dict[tuple[str, ...], int] = {}  # array-of-tables path → entries so far
    best: tuple[int, int] | None = None  # (depth matched, line)
    open_brackets = 0
    in_multiline = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_multiline:
            if in_multiline in line:
                in_multiline = ""
            continue
        if open_brackets:
            open_brackets += line.count("[") - line.count("]")
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            header = re.fullmatch(r"\[\[?\s*(.+?)\s*\]\]?\s*(?:#.*)?", line)
            parts = split_key(header.group(1)) if header else None
            if parts is None:
                continue
            if line.startswith("[["):
                # The n-th ``[[a.b]]`` is ``a.b[n]`` in an error, as the settings name it.
                index = seen[parts] = seen.get(parts, -1) + 1
                parts = (*parts[:-1], f"{parts[-1]}[{index}]")
            table = entry = parts
        else:
            assigned = _key_of_assignment(line)
            if assigned is None:
                continue
            entry = table + assigned
            value = line.split("=", 1)[1].strip()
            for fence in ('"""', "'''"):
                if value.startswith(fence) and value.count(fence) == 1:
                    in_multiline = fence
            if value.startswith("[") and not in_multiline:
                open_brackets = value.count("[") - value.count("]")
        depth = _common(entry, wanted)
        if depth == len(entry) and (best is None or depth > best[0]):
            best = (depth, number)
    return None if best is None else best[1]


def _common(entry: tuple[str, ...], wanted: tuple[str, ...]) -> int:
    n = 0
    for a, b in zip(entry, wanted, strict=False):
        if a != b:
            break
        n += 1
    return n
