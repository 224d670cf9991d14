"""Strict JSON for operator inputs: manifests, sidecars, ``_meta.json``, ACL and directory
files, and replies of source systems.

Python's :func:`json.loads` keeps the *last* of a repeated key (``{"acl": ["user:bob"],
"acl": ["everyone"]}`` silently means everyone), lets a deeply nested document raise
``RecursionError`` and accepts lone surrogate escapes (``"\ud800"``) that no UTF-8 file,
database or terminal can hold. Here both are one :class:`JSONInputError` with a message fit to print
after the name of the file and line, so a bad record can be reported and skipped without a
traceback and without stopping the records around it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["JSONInputError", "lines", "loads"]

_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONInputError(ValueError):
    """Text that is not one strict JSON value; the message says why, without a location
    prefix beyond JSON's own line and column."""


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JSONInputError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def loads(text: str | bytes) -> Any:
    """Parse one JSON value, refusing repeated keys, nesting deeper than the parser's
    recursion limit, ``NaN``/``Infinity`` and anything else :mod:`json` refuses."""

    def no_constant(name: str) -> Any:
        raise JSONInputError(f"{name} is not valid JSON")

    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=no_constant)
        _refuse_surrogates(value)
        return value
    except JSONInputError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise JSONInputError("not valid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. bytes that are not UTF-8
        raise JSONInputError(f"not valid JSON: {exc}") from None


def _refuse_surrogates(value: Any) -> None:
    """A string holding half of a surrogate pair (only a ``\\uD800``-style escape yields
    one) cannot be stored or printed as UTF-8: refuse it here, naming where it is
    (``key 'title'``, ``key 'acl'[0]``), not in the database."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise JSONInputError(f"{where or 'value'}: a string holds an unpaired surrogate")
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    inside = f"{where}: " if where else ""
                    raise JSONInputError(f"{inside}a key holds an unpaired surrogate")
                stack.append((child, f"{where}[{key!r}]" if where else f"key {key!r}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


def lines(data: bytes) -> Iterator[tuple[int, str | None, str | None]]:
    """JSONL bytes → ``(line number, text, None)`` or ``(line number, None, error)`` for a
    line that is not UTF-8, so one bad line fails alone and is named by its number. Lines
    end at ``\\n`` only (a U+2028 or form feed inside a string is not a line end); a UTF-8
    byte-order mark at the start is ignored."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            yield (
                number,
                None,
                f"not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
            )
