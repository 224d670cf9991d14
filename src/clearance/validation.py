"""Operator input checked by pydantic models, its errors rendered as one line each.

Settings and operator files are described by types that pydantic validates: dataclasses with
strict scalars (``StrictInt`` refuses ``True`` and ``"800"``), unknown keys refused, and
``Annotated`` validators for what a type cannot say (a duration, a principal). A validator
refuses a value by raising :class:`Invalid` with the sentence an operator reads.

:func:`problems` turns a ``ValidationError`` into those sentences, one per error, each
starting with the dotted key it concerns (``corpora.hr.revocation_sla: expected a duration
…``; the n-th entry of an array is ``a.b[n]``), so that :mod:`clearance.toml_lines` can find
the key's line in the file. Every error is kept: a file with three bad keys reports three
lines, not one a run.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clearance.errors import ConfigError

__all__ = ["Invalid", "got", "key_path", "problems", "validate"]


class Invalid(ValueError):
    """A value refused. ``message`` is what the operator reads, after the key.

    ``at`` names a key below the one being validated (``chunk_overlap`` when a check on the
    whole ``[ingest]`` table refuses it); ``keyed`` marks a message that already starts with
    its own key and is used as it is."""

    def __init__(self, message: str, *, at: str = "", keyed: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.at = at
        self.keyed = keyed


def got(value: object) -> str:
    """``got int 42``: the type and value a message refuses."""
    return f"got {type(value).__name__} {value!r}"


_TYPE_NAMES = {
    "int_type": "int",
    "int_parsing": "int",
    "int_from_float": "int",
    "float_type": "float",
    "float_parsing": "float",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "string_type": "str",
    "list_type": "list",
    "tuple_type": "list",
}
_TABLE_TYPES = frozenset(
    {"dict_type", "mapping_type", "dataclass_type", "dataclass_exact_type", "model_type"}
)
_UNKNOWN_TYPES = frozenset({"extra_forbidden", "unexpected_keyword_argument"})
_MISSING_TYPES = frozenset({"missing", "missing_argument", "missing_keyword_only_argument"})


def key_path(loc: Iterable[object]) -> str:
    """``("facts", "periods", 0, "pattern")`` → ``facts.periods[0].pattern``."""
    key = ""
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
        else:
            key = f"{key}.{part}" if key else str(part)
    return key


def _join(key: str, at: str) -> str:
    if not at:
        return key
    if not key:
        return at
    return f"{key}{at}" if at.startswith("[") else f"{key}.{at}"


def _problem(error: Mapping[str, Any], at: str, unknown: str) -> str:
    key = _join(at, key_path(error["loc"]))
    kind = error["type"]
    value = error.get("input")
    if kind == "value_error":
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, Invalid):
            return cause.message if cause.keyed else f"{_join(key, cause.at)}: {cause.message}"
    if kind in _UNKNOWN_TYPES:
        loc = error["loc"]
        table = _join(at, key_path(loc[:-1]))
        return unknown.format(key=key, name=loc[-1] if loc else key, table=table)
    if kind in _TABLE_TYPES:
        return f"{key}: expected a table" if key else "expected a table"
    if kind in _TYPE_NAMES:
        return f"{key}: expected {_TYPE_NAMES[kind]}, {got(value)}"
    if kind in _MISSING_TYPES:
        return f"{key}: required"
    message = str(error.get("msg", kind)).removeprefix("Value error, ")
    return f"{key}: {message}" if key else message


def problems(error: Any, *, at: str = "", unknown: str = "unknown setting {key!r}") -> list[str]:
    """One sentence per error of ``error`` (a pydantic ``ValidationError``), in its order,
    without repeats. ``at`` is the key of the validated value itself (``sources.gd.options``);
    ``unknown`` words an unknown key: ``{key}`` is its whole key, ``{name}`` its last part
    and ``{table}`` the key of the table it is in."""
    raw: Sequence[Mapping[str, Any]] = error.errors()
    return list(dict.fromkeys(_problem(e, at, unknown) for e in raw))


@functools.cache
def _adapter(schema: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


def validate(
    schema: Any,
    data: object,
    *,
    at: str = "",
    context: dict[str, Any] | None = None,
    unknown: str = "unknown setting {key!r}",
) -> Any:
    """``data`` validated as ``schema`` (a settings dataclass, or an ``Annotated`` type),
    or a :class:`ConfigError` holding every problem, each named by its key below ``at``
    (``unknown`` words an unknown key).
    The validator is built on first use of each schema, not on import."""
    from pydantic import ValidationError

    try:
        return _adapter(schema).validate_python(data, context=context)
    except ValidationError as exc:
        found = problems(exc, at=at, unknown=unknown)
        raise ConfigError(found[0], problems=found) from None
