"""Operator input checked by pydantic models, its errors rendered as one line each.

Settings and operator files are described by types that pydantic validates: dataclasses with
strict scalars (``StrictInt`` refuses ``True`` and ``"800"``), unknown keys refused, and
``Annotated`` validators for what a type cannot say (a duration, a principal). A validator
refuses a value by raising :class:`Invalid` with the sentence an operator reads.

:func:`problems` turns a ``ValidationError`` into those sentences, one per error, each
starting with the key it concerns as its kind of file names keys (a :class:`Wording`):
settings say ``corpora.hr.revocation_sla: expected a duration …`` (the n-th entry of an array
is ``a.b[n]``, so that :mod:`clearance.toml_lines` can find the key's line), a metadata or
FAQ record says ``key 'acl': …``, a directory file ``users[3].active: expected a boolean,
got string``. Every error is kept: a file with three bad keys reports
three lines, not one a run. :func:`validate` builds each schema's validator on first use,
so importing a module that declares one costs nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clearance.errors import ConfigError

__all__ = [
    "SETTINGS",
    "Invalid",
    "Loc",
    "Wording",
    "got",
    "key_path",
    "non_empty",
    "problems",
    "quoted_key",
    "validate",
]


#: Where a value is: its keys and indexes from the top, ``("users", 0, "id")``.
Loc = tuple[str | int, ...]


class Invalid(ValueError):
    """A value refused. ``message`` is what the operator reads, after the key.

    ``at`` names a key below the one being validated (``chunk_overlap`` when a check on the
    whole ``[ingest]`` table refuses it), as text or as its parts (for a key that holds a dot
    itself); ``keyed`` marks a message that already starts with its own key and is used as
    it is."""

    def __init__(self, message: str, *, at: str | Loc = "", keyed: bool = False) -> None:
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


def quoted_key(loc: Sequence[object]) -> str:
    """``("citations", 0)`` → ``key 'citations'[0]``: a JSON record's key as its files
    name it."""
    if not loc:
        return ""
    return f"key {loc[0]!r}" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])


_AT_PART = re.compile(r"\[(\d+)\]|([^.\[]+)")


def _parts(at: str | Loc) -> Loc:
    """``a.b[2].c`` → ``("a", "b", 2, "c")``; parts are kept as they are."""
    if not isinstance(at, str):
        return at
    return tuple(int(i) if i else name for i, name in _AT_PART.findall(at))


def non_empty(message: str = "expected a non-empty string", *, strip: bool = False) -> Any:
    """A validator for a string with something in it (``strip``: returned stripped);
    anything else is refused with ``message``."""
    from pydantic import PlainValidator

    def check(value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Invalid(message)
        return value.strip() if strip else value

    return PlainValidator(check)


@dataclass(frozen=True, slots=True)
class Wording:
    """How one kind of file names its problems. ``key`` names a key from its parts;
    ``unknown`` and ``missing`` word an unknown and a missing key, with ``{key}`` (the key
    named), ``{name}`` (its last part) and ``{table}`` (the table it is in, named; when
    that is the top, a leading ``": "`` is dropped); ``table`` refuses what is not a table.
    ``expected``, when given, words every refused type instead, from the type's name
    (``str``, ``int``, ``bool``, ``list``, ``table`` …) and the value refused."""

    key: Callable[[Sequence[object]], str] = key_path
    unknown: str = "unknown setting {key!r}"
    missing: str = "{key}: required"
    table: str = "expected a table"
    expected: Callable[[str, object], str] | None = None

    def name(self, loc: Sequence[object], message: str) -> str:
        key = self.key(loc)
        return f"{key}: {message}" if key else message

    def fill(self, template: str, loc: Sequence[object]) -> str:
        text = template.format(
            key=self.key(loc), name=loc[-1] if loc else "", table=self.key(loc[:-1])
        )
        return text.removeprefix(": ")


#: Settings files: ``corpora.hr.revocation_sla: …``, ``unknown setting 'store.pth'``.
SETTINGS = Wording()


def _problem(
    error: Mapping[str, Any],
    at: str | Loc,
    wording: Wording,
    schema: Any,
    unwritten: frozenset[str],
) -> str:
    loc = (*_parts(at), *error["loc"])
    kind = error["type"]
    value = error.get("input")
    if kind == "value_error":
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, Invalid):
            if cause.keyed:
                return cause.message
            return wording.name((*loc, *_parts(cause.at)), cause.message)
    if kind in _UNKNOWN_TYPES:
        return wording.fill(wording.unknown, loc) + _did_you_mean(schema, error["loc"], unwritten)
    if kind in _MISSING_TYPES:
        return wording.fill(wording.missing, loc)
    if wording.expected is not None and (kind in _TABLE_TYPES or kind in _TYPE_NAMES):
        return wording.name(loc, wording.expected(_TYPE_NAMES.get(kind, "table"), value))
    if kind in _TABLE_TYPES:
        return wording.name(loc, wording.table)
    if kind in _TYPE_NAMES:
        return wording.name(loc, f"expected {_TYPE_NAMES[kind]}, {got(value)}")
    return wording.name(loc, str(error.get("msg", kind)).removeprefix("Value error, "))


def problems(
    error: Any,
    *,
    at: str | Loc = "",
    wording: Wording = SETTINGS,
    schema: Any = None,
    unwritten: frozenset[str] = frozenset(),
) -> list[str]:
    """One sentence per error of ``error`` (a pydantic ``ValidationError``), in its order,
    without repeats, named by ``wording``. ``at`` is the key of the validated value itself
    (``sources.gd.options``). Given the ``schema`` validated, an unknown key near one of
    the keys a file may write there names it (``unknown setting
    'corpora.hr.max_sensitivty'; did you mean 'max_sensitivity'?``): keys as the file
    writes them (a field's alias), never one of ``unwritten`` (which the file may not
    set, though the schema has them)."""
    raw: Sequence[Mapping[str, Any]] = error.errors()
    return list(dict.fromkeys(_problem(e, at, wording, schema, unwritten) for e in raw))


def _did_you_mean(schema: Any, loc: Sequence[object], unwritten: frozenset[str]) -> str:
    """``"; did you mean 'acl'?"`` when the last key of ``loc`` is close to a key that
    ``schema`` allows beside it, else nothing; never an error of its own, as it only
    words one."""
    if schema is None or not loc or not isinstance(loc[-1], str):
        return ""
    import difflib  # only on an error

    try:
        keys = [k for k in _keys_at(schema, loc[:-1]) if k not in unwritten]
    except Exception:  # a type this walk does not know: no suggestion
        return ""
    close = difflib.get_close_matches(loc[-1], keys, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _keys_at(schema: Any, loc: Sequence[object]) -> list[str]:
    """The keys ``schema`` allows in the table at ``loc`` (a dataclass's fields, a typed
    dict's keys), following fields, mapping values and list items; none where it cannot
    tell."""
    kind = schema
    for part in (*loc, None):
        while typing.get_origin(kind) is typing.Annotated or _optional(kind):
            kind = typing.get_args(kind)[0]
        fields = _fields(kind)
        if part is None:
            return list(fields or ())
        args = typing.get_args(kind)
        if fields is not None:
            if part not in fields:
                return []
            kind = fields[part]
        elif typing.get_origin(kind) in (dict, Mapping) and isinstance(part, str) and args:
            kind = args[-1]
        elif typing.get_origin(kind) in (list, Sequence) and isinstance(part, int) and args:
            kind = args[0]
        elif typing.get_origin(kind) is tuple and isinstance(part, int) and args:
            kind = (
                args[0]
                if len(args) == 2 and args[1] is Ellipsis
                else args[min(part, len(args) - 1)]
            )
        else:
            return []
    return []  # pragma: no cover (the loop returns at its last part)


def _optional(kind: Any) -> bool:
    args = typing.get_args(kind)
    return (
        typing.get_origin(kind) in (typing.Union, types.UnionType)
        and len(args) == 2
        and type(None) in args
    )


def _fields(kind: Any) -> dict[str, Any] | None:
    """A dataclass's or typed dict's keys as a file writes them (a dataclass field's
    ``validation_alias``, else its name; fields not set by ``__init__`` left out), each
    with its type; ``None`` for other types."""
    # (typing_extensions' typed dicts, which pydantic wants before Python 3.12, are not
    # typing's: they are told by the keys they record.)
    if isinstance(kind, type) and hasattr(kind, "__required_keys__"):
        return dict(typing.get_type_hints(kind, include_extras=True))
    if not dataclasses.is_dataclass(kind):
        return None
    from pydantic.fields import FieldInfo

    hints = typing.get_type_hints(kind, include_extras=True)
    keys: dict[str, Any] = {}
    for field in dataclasses.fields(kind):
        if not field.init:
            continue
        hint = hints[field.name]
        infos = (
            [field.default, *typing.get_args(hint)[1:]]
            if typing.get_origin(hint) is typing.Annotated
            else [field.default]
        )
        aliases = [i.validation_alias for i in infos if isinstance(i, FieldInfo)]
        aliases = [a for a in aliases if a is not None]
        if not aliases:
            keys[field.name] = hint
        elif (key := _written_key(aliases[0])) is not None:
            keys[key] = hint
    return keys


def _written_key(alias: Any) -> str | None:
    """The key a file writes for a field of this ``validation_alias``: the alias, the
    first plain key of its choices, the first step of its path; ``None`` when it names
    none (the field is then not suggested: its name would be refused)."""
    if isinstance(alias, str):
        return alias
    for choice in getattr(alias, "choices", ()):
        key = _written_key(choice)
        if key is not None:
            return key
    path = getattr(alias, "path", None)
    return path[0] if path and isinstance(path[0], str) else None


@functools.cache
def _adapter(schema: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(schema)


def validate(
    schema: Any,
    data: object,
    *,
    at: str | Loc = "",
    context: dict[str, Any] | None = None,
    wording: Wording = SETTINGS,
    keys_from: Any = None,
    unwritten: frozenset[str] = frozenset(),
) -> Any:
    """``data`` validated as ``schema`` (a dataclass, or an ``Annotated`` type), or a
    :class:`ConfigError` holding every problem, each named by its key below ``at`` in the
    ``wording`` of its kind of file, an unknown key with the allowed key it is close to
    (read from ``keys_from`` when ``schema`` describes less than the whole file; never
    one of ``unwritten``, keys the schema has that a file may not set). The
    validator is built on first use of each schema, not on import."""
    from pydantic import ValidationError

    try:
        return _adapter(schema).validate_python(data, context=context)
    except ValidationError as exc:
        found = problems(
            exc, at=at, wording=wording, schema=keys_from or schema, unwritten=unwritten
        )
        raise ConfigError(found[0], problems=found) from None
