"""Strict JSON for operator inputs: manifests, sidecars, ``_meta.json``, ACL and directory
files, and replies of source systems.

Python's :func:`json.loads` keeps the *last* of a repeated key (``{"acl": ["user:bob"],
"acl": ["everyone"]}`` silently means everyone) and lets a deeply nested document raise
``RecursionError``. Here both are one :class:`JSONInputError` with a message fit to print
after the name of the file and line, so a bad record can be reported and skipped without a
traceback and without stopping the records around it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JSONInputError", "loads"]


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
        return json.loads(text, object_pairs_hook=_reject_duplicates, parse_constant=no_constant)
    except JSONInputError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise JSONInputError("not valid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. bytes that are not UTF-8
        raise JSONInputError(f"not valid JSON: {exc}") from None
