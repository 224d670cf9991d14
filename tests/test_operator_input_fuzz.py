"""Fuzzing every file an operator hands Clearance: manifests, sidecars, ``_meta.json``, ACL
sync files and directory files (Clearance JSON and SCIM 2.0).

Every input starts as a VALID record and is broken in exactly one way that is invalid by
construction: a wrong type for a documented key, an unknown, forbidden or repeated key, a
missing required key, a bad principal or id, a date past the last representable instant,
nesting thousands deep, NaN or a 5000-digit number, a raw control character in a string,
truncated text, a BOM, stray bytes that are not UTF-8. The real ``clearance`` command then runs
in-process on a real SQLite file, its output going through UTF-8 streams like a terminal's,
and the contract is checked for every example:

* no traceback (an exception escaping :func:`clearance.cli.main.main` fails the example),
  exit code 2;
* one line names the place: ``m.jsonl:2``, the metadata file's path, ``wiki.jsonl:2``, or
  ``people.json`` with the JSON path (or line) of the problem;
* nothing of the bad record is written. Records that stand alone (manifest lines, files
  under a folder) leave the others ingested with their ACLs; files applied atomically (ACL and
  directory syncs) leave the stored ACLs, sync times and directory exactly as they were.

Where a mutation could happen to be valid (a random string for a date) the library's own
parser decides and the example is dropped, never the assertion. ``test_the_contract_catches_
a_leaky_json_reader`` is the reverse proof: with :func:`json.loads` ("last key wins") in place
of the strict reader, the same assertion helpers fail on a concrete repeated-key input.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clearance import jsonio
from clearance.access.directory_file import (
    SCIM_BULK_REQUEST,
    SCIM_ENTERPRISE_USER,
    SCIM_GROUP,
    SCIM_LIST_RESPONSE,
    SCIM_USER,
)
from clearance.cli.main import main
from clearance.errors import MetadataError
from clearance.ingest.metadata import KEYS, parse_metadata
from clearance.model import parse_principal
from clearance.store.sqlite import SQLiteStore

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# ============================================================================ the project

CONFIG = """\
[store]
path = "data/clearance.db"

[corpora.wiki]
revocation_sla = "1h"

[corpora.hr]

[embedding]
provider = "none"
"""

SEED_DOCUMENTS = {
    "wiki:one": ("Travel handbook. Book flights through the portal.", ["user:ann"]),
    "wiki:two": ("Engineering roadmap. The gateway ships in spring.", ["group:eng"]),
    "wiki:three": ("Minutes of the planning meeting.", ["everyone"]),
    "hr:pay": ("Salary bands for the engineering ladder.", ["group:hr"]),
}

SEED_DIRECTORY = {
    "users": [
        {"id": "ann", "active": True},
        {"id": "bob", "active": True},
        {"id": "cat", "active": True},
    ],
    "groups": [
        {"id": "eng", "members": ["user:ann", "group:leads"]},
        {"id": "leads", "members": ["user:bob"]},
        {"id": "hr", "members": ["user:cat"]},
    ],
}


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


@dataclass(frozen=True)
class Project:
    """A config file and a real SQLite index under ``root``, driven by the real command."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "clearance.toml"

    def run(self, *args: str | Path) -> Result:
        """``clearance --config CONFIG ARGS`` in-process. stdout is a strict UTF-8 stream,
        as on a terminal, so output that could not be printed fails here too."""
        out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
        out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict")
        err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace")
        with redirect_stdout(out), redirect_stderr(err):
            rc = main(["--config", str(self.config), *(str(a) for a in args)])
            out.flush()
            err.flush()
        out.detach()
        err.detach()
        return Result(rc, out_bytes.getvalue().decode(), err_bytes.getvalue().decode())

    def write(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def acls(self) -> dict[str, frozenset[str]]:
        return {doc_id: acl for doc_id, (acl, *_) in self.state()["documents"].items()}

    def state(self) -> dict[str, Any]:
        """Everything a refused sync must leave as it was."""
        store = SQLiteStore(self.root / "data" / "clearance.db")
        try:
            return {
                "documents": {
                    d.doc_id: (d.acl, d.corpus, d.content_hash, d.version, d.title)
                    for d in store.list_documents()
                },
                "syncs": store.last_acl_syncs(),
                "directory": store.get_meta("directory"),
            }
        finally:
            store.close()


def jsonl(*records: Mapping[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def new_project(root: Path, *, seeded: bool) -> Project:
    """A project; ``seeded``: with documents ingested and a directory synced."""
    root.mkdir(parents=True, exist_ok=True)
    project = Project(root)
    project.config.write_text(CONFIG, encoding="utf-8")
    if seeded:
        seed = project.write(
            "seed.jsonl",
            jsonl(
                *(
                    {"doc_id": d, "corpus": d.split(":")[0], "text": t, "acl": acl}
                    for d, (t, acl) in SEED_DOCUMENTS.items()
                )
            ),
        )
        assert project.run("ingest", "--manifest", seed, "--json").rc == 0
        people = project.write("seed-people.json", json.dumps(SEED_DIRECTORY).encode())
        assert project.run("directory", "sync", people).rc == 0
    return project


# ============================================================================ JSON values

NASTY = (
    "\x00\x01\x08\x1b\x7f\x85\xa0\xad\u200b\u200d\u202e\u2066\u2028\u2029\ufeff"
    "\ud800\udfff\ue000\U0001f600"
)


def _has_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate in any string or key (the JSON reader
    refuses such a value before any other check can name what else is wrong with it)."""
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


texts = st.text(st.characters() | st.sampled_from(NASTY), max_size=10)
HUGE = [2**63, -(2**63) - 1, 2**64, 10**100, -(10**300)]
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(HUGE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
not_strings = json_values.filter(lambda v: not isinstance(v, str))
not_lists = json_values.filter(lambda v: not isinstance(v, list))
not_bools = json_values.filter(lambda v: not isinstance(v, bool))
not_objects = json_values.filter(lambda v: not isinstance(v, dict))
# Every one of these is str.isspace(), so ``strip()`` leaves nothing.
blanks = st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u3000"))


@dataclass(frozen=True)
class Raw:
    """JSON text spliced in verbatim: what :func:`json.dumps` would never write."""

    text: str


# Text no strict JSON reader may accept, whatever key it stands for. (No raw "\n" or "\r":
# in a JSONL file that is a line break, not a bad value.)
NOT_JSON = [
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "9" * 5000,
    "-" + "9" * 5000,
    "undefined",
    "'ann'",
    "tru",
    "nul",
    "01",
    ".5",
    "+1",
    "0x1F",
    "[1,]",
    '{"a": 1,}',
    '{"a" 1}',
    '"a\x00b"',
    '"a\x1fb"',
    '"tab\there"',
    '"form\x0cfeed"',
    '"\\x41"',
    '"\\u12"',
    '"unterminated',
]
# Valid JSON, but ±infinity: a wrong type for every key.
INFINITE = ["1e999", "-1e999", "1E400"]
DEPTHS = [2, 3, 100, 999, 1000, 1001, 5000, 100_000]
deep_nesting = st.builds(
    lambda n, array: "[" * n + "]" * n if array else '{"a": ' * n + "1" + "}" * n,
    st.sampled_from(DEPTHS),
    st.booleans(),
)
raw_values = st.sampled_from(NOT_JSON + INFINITE) | deep_nesting
NOT_UTF8 = [b"\xff", b"\xfe", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]


def dumps(value: Any, *, ascii: bool, indent: int | None = None) -> str:
    """JSON text; non-ASCII written raw unless ``ascii`` — but a lone surrogate can only
    travel escaped (a file holds UTF-8)."""
    text = json.dumps(value, ensure_ascii=ascii, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=indent)
    return text


# ============================================================================ principals and ids

FORBIDDEN_ID_CHARS = (
    " \t\n\x0b\x0c\x85\xa0\u2028\u3000:,;*?\x00\x1b\x7f\xad\u200b\u200d\u202e\u2066\ufeff"
    "\ud800\ue000\u0378"
)
id_parts = st.text("abcxyz019._-@", max_size=4)
bad_ids = st.sampled_from(
    ["", "e\u0301", "x" * 257, "bulkId:x", "ann\n", "*", "group:eng", "\u200b"]
) | st.builds(lambda a, c, b: a + c + b, id_parts, st.sampled_from(FORBIDDEN_ID_CHARS), id_parts)
BAD_PRINCIPALS = [
    "user:alice\n",
    "user:*",
    "group:a,group:b",
    "user:ali\u200bce",
    "user:",
    "group:",
    "Everyone",
    "everyone ",
    " user:ann",
    "user: ann",
    "User:ann",
    "role:admin",
    "user:ann\u202e",
    "group:\ufeffeng",
    "user:e\u0301",
    "user:" + "a" * 257,
    "user:\ud800",
    "",
    "*",
]


def is_principal(value: object) -> bool:
    try:
        parse_principal(value)
    except ValueError:
        return False
    return True


bad_principals = (
    st.sampled_from(BAD_PRINCIPALS)
    | st.builds(lambda kind, ident: f"{kind}:{ident}", st.sampled_from(["user", "group"]), bad_ids)
    | texts.filter(lambda s: not is_principal(s))
    | not_strings
)
good_principals = st.sampled_from(["user:ann", "group:eng", "everyone", "user:new.hire@acme"])


def with_one_bad(
    good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]
) -> st.SearchStrategy[list[Any]]:
    """Lists of good items with one bad item somewhere among them."""
    return st.builds(
        lambda items, item, at: [*items[:at], item, *items[at:]],
        st.lists(good, max_size=3),
        bad,
        st.integers(0, 3),
    )


# ============================================================================ metadata values


def metadata_is_invalid(key: str, value: object) -> bool:
    """The library's own verdict on ``{key: value}``, for strategies that draw arbitrary
    text where most but not all of it is invalid (dates, sensitivity labels)."""
    try:
        parse_metadata({key: value}, "probe")
    except MetadataError:
        return True
    return False


BAD_DATES = [
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "2024-13-01",
    "2024-02-30",
    "2024-01-01T24:00:01",
    "yesterday",
    "",
    " 2024-01-01",
]
bad_dates = (
    not_strings
    | st.sampled_from(BAD_DATES)
    | texts.filter(lambda s: metadata_is_invalid("created_at", s))
)
bad_strings = not_strings | blanks
CONFIGURED_CORPORA = ("wiki", "hr", "default")

#: For every documented metadata key, values that are invalid for it (docs/metadata.md).
#: A ``path`` is wrong whatever it is: the records below carry inline ``text`` or are folder
#: files. ``deleted`` never gets ``true``: a deletion by ``doc_id`` is a valid line.
INVALID: dict[str, st.SearchStrategy[Any]] = {
    "path": json_values,
    "text": not_strings,
    "doc_id": bad_strings | texts.filter(lambda s: s.strip() and ":" not in s),
    "title": bad_strings,
    "uri": bad_strings,
    "source_system": bad_strings,
    "corpus": bad_strings
    | st.sampled_from(["Wiki", "WIKI", "wiki\u200b", "nope"])
    | texts.filter(lambda s: s.strip() and s.strip() not in CONFIGURED_CORPORA),
    "owner": bad_strings,
    "acl": not_lists | with_one_bad(good_principals, bad_principals),
    "sensitivity": not_strings
    | st.sampled_from(["SECRET", "public ish", "", "RESTRICTED\x00"])
    | texts.filter(lambda s: metadata_is_invalid("sensitivity", s)),
    "created_at": bad_dates,
    "updated_at": bad_dates,
    "review_at": bad_dates,
    "expires_at": bad_dates,
    "ai_allowed": not_bools,
    "personal_data": not_bools,
    "origin": bad_strings,
    "origin_chain": not_lists
    | with_one_bad(st.sampled_from(["human", "email", " "]), not_strings | st.just("")),
    "deleted": not_bools,
}
UNKNOWN_KEYS = st.sampled_from(
    ["ACL", "acl ", "Acl", "acls", "docId", "doc-id", "\u200bacl", "acl\x00", "sensitivty"]
) | texts.filter(lambda k: k not in KEYS)


# ============================================================================ breaking a record


@dataclass(frozen=True)
class Bad:
    """A broken record: its bytes, how it was broken, and what its error must mention."""

    data: bytes
    how: str
    where: tuple[str, ...] = ()  # one of these must be in the error (empty: no requirement)

    def __repr__(self) -> str:
        data = self.data if len(self.data) <= 300 else self.data[:300] + b"..."
        return f"Bad({data!r}, how={self.how!r}, where={self.where!r})"


def names_where(bad: Bad, error: str) -> bool:
    """Whether ``error`` names where ``bad`` is broken. A record that holds a lone surrogate
    anywhere (a string or key no UTF-8 file can hold) is refused by the JSON reader for that
    before any other check runs, so naming it is the right answer too."""
    if not bad.where or any(w in error for w in bad.where):
        return True
    try:
        parsed = json.loads(bad.data)
    except ValueError:
        return False
    return _has_surrogate(parsed) and "unpaired surrogate" in error


Path_ = tuple[str | int, ...]
SLOT = "\x00slot\x00"
SAME = object()  # a repeated key written with the value it already has


def json_path(path: Path_) -> str:
    """The JSON path the directory parser names: ``users[1].active``, ``$["urn:…"]``."""
    out = "$"
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", step):
            out = step if out == "$" else f"{out}.{step}"
        else:
            out += f"[{json.dumps(step)}]"
    return out


def at(doc: Any, path: Path_) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def replaced(doc: Any, path: Path_, value: Any) -> Any:
    doc = copy.deepcopy(doc)
    at(doc, path[:-1])[path[-1]] = value
    return doc


def removed(doc: Any, path: Path_) -> Any:
    doc = copy.deepcopy(doc)
    del at(doc, path[:-1])[path[-1]]
    return doc


@dataclass(frozen=True)
class Record:
    """A valid document and the places in it that can be broken.

    ``slots``: value path → values invalid there; ``required``: keys whose absence is an
    error; ``closed``: objects whose keys are a closed set; ``objects``: objects in which a
    repeated key is tried; ``locate``: for a broken value path, what its error must mention.
    """

    value: dict[str, Any]
    slots: Mapping[Path_, st.SearchStrategy[Any]]
    required: Sequence[Path_] = ()
    closed: Sequence[Path_] = ((),)
    objects: Sequence[Path_] = ((),)
    indent: int | None = None
    locate: Callable[[Path_], tuple[str, ...]] = lambda path: ()
    unparsable: tuple[str, ...] = ()  # what an error about unparsable text must mention
    names_repeats: bool = False  # a repeated key's error names its line and object
    min_length: int = 1  # truncation keeps at least this many characters

    def render(self, doc: Any, ascii: bool) -> str:
        return dumps(doc, ascii=ascii, indent=self.indent)

    def spliced(self, path: Path_, raw: str, ascii: bool) -> str:
        text = self.render(replaced(self.value, path, SLOT), ascii)
        token = json.dumps(SLOT)
        assert text.count(token) == 1
        return text.replace(token, raw)

    def mutations(self, *, not_utf8: bool = True) -> st.SearchStrategy[Bad]:
        ascii = st.booleans()

        def wrong(path: Path_) -> st.SearchStrategy[Bad]:
            return st.builds(
                lambda v, a: Bad(
                    self.render(replaced(self.value, path, v), a).encode(),
                    f"{json_path(path)} = {v!r}",
                    self.locate(path),
                ),
                self.slots[path],
                ascii,
            )

        def raw(path: Path_) -> st.SearchStrategy[Bad]:
            # Where the contract takes an object (SCIM ``meta``), nested objects the parser
            # can read are a valid value, not a broken one: splice only nesting past the
            # parser's depth there.
            values = raw_values
            try:
                seed = at(self.value, path)
            except (KeyError, IndexError, TypeError):
                seed = None  # a slot the seed leaves out
            if isinstance(seed, dict):
                values = raw_values.filter(lambda r: not r.startswith("{") or len(r) > 30_000)
            return st.builds(
                lambda r, a: Bad(
                    self.spliced(path, r, a).encode(),
                    f"{json_path(path)} = raw {r[:40]!r}",
                    self.locate(path) + self.unparsable if self.unparsable else (),
                ),
                values,
                ascii,
            )

        def missing(path: Path_) -> Bad:
            return Bad(
                self.render(removed(self.value, path), True).encode(),
                f"without {json_path(path)}",
                self.locate(path[:-1]) if path[:-1] else (repr(path[0]), *self.locate(path)),
            )

        def unknown(obj: Path_) -> st.SearchStrategy[Bad]:
            return st.builds(
                lambda k, v, a: Bad(
                    self.render(replaced(self.value, (*obj, k), v), a).encode(),
                    f"unknown key {json_path((*obj, k))}",
                    ("unknown key",),
                ),
                UNKNOWN_KEYS.filter(lambda k: k not in at(self.value, obj)),
                json_values,
                ascii,
            )

        def repeated(obj: Path_) -> st.SearchStrategy[Bad]:
            keys = sorted(at(self.value, obj))
            return st.builds(
                lambda k, v, a: self.repeat(
                    obj, k, at(self.value, (*obj, k)) if v is SAME else v, a
                ),
                st.sampled_from(keys),
                st.just(SAME) | json_values,
                ascii,
            )

        text = self.render(self.value, True)
        encoded = text.encode()
        whole = [
            st.integers(self.min_length, len(text) - 1).map(
                lambda k: Bad(text[:k].encode(), f"truncated to {k}", self.unparsable)
            ),
            st.just(Bad(b"\xef\xbb\xbf" + encoded, "UTF-8 BOM", self.unparsable)),
            st.sampled_from([" x", "}", "{}", ",", "]", " 1", "\x00", " // note", " #"]).map(
                lambda tail: Bad((text + tail).encode(), f"+ {tail!r}", self.unparsable)
            ),
            st.sampled_from(["x", ")", ",", "\x00", "\ufeff"]).map(
                lambda head: Bad((head + text).encode(), f"{head!r} +", self.unparsable)
            ),
            st.sampled_from(DEPTHS).map(
                lambda n: Bad(b"[" * n + b"]" * n, f"{n} nested arrays", self.unparsable)
            ),
            not_objects.map(
                lambda v: Bad(dumps(v, ascii=True).encode(), f"top level {v!r}", self.locate(()))
            ),
        ]
        if not_utf8:
            whole.append(
                st.builds(
                    lambda b, i: Bad(
                        encoded[:i] + b + encoded[i:], f"{b!r} at byte {i}", ("cannot read",)
                    ),
                    st.sampled_from(NOT_UTF8),
                    st.integers(0, len(encoded)),
                )
            )
        slots = st.sampled_from(sorted(self.slots, key=repr))
        # Weights by repetition: a wrong value for one documented key is most of the surface.
        parts = [
            *[slots.flatmap(wrong)] * 4,
            *[slots.flatmap(raw)] * 2,
            *[st.sampled_from(self.objects).flatmap(repeated)] * 2,
            *[st.one_of(whole)] * 2,
        ]
        if self.required:
            parts.append(st.sampled_from(self.required).map(missing))
        if self.closed:
            parts.append(st.sampled_from(self.closed).flatmap(unknown))
        return st.one_of(parts)

    def repeat(self, obj: Path_, key: str, value: Any, ascii: bool) -> Bad:
        """``key`` written a second time in the object at ``obj`` (maybe with its own value:
        a strict reader refuses even that)."""
        text = self.render(replaced(self.value, (*obj, SLOT), value), ascii)
        token = json.dumps(SLOT)
        assert text.count(token) == 1
        line = text.count("\n", 0, text.index(token)) + 1
        text = text.replace(token, dumps(key, ascii=ascii))
        where = (
            (f":{line}: {json_path(obj)}: key {key!r} appears twice in one object",)
            if self.names_repeats
            else ()
        )
        return Bad(text.encode(), f"repeated {json_path((*obj, key))}", where)


def key_named(path: Path_) -> tuple[str, ...]:
    """Metadata errors name the key (``key 'acl'``, ``'path' or 'text'``); a refused corpus
    names the corpus (``corpus 'Wiki' is not configured``)."""
    if not path:
        return ()
    return (repr(path[-1]), "corpus '") if path[-1] == "corpus" else (repr(path[-1]),)


# ============================================================================ 1. manifests

MANIFEST_GOOD_1 = {
    "doc_id": "wiki:one",
    "corpus": "wiki",
    "text": "Alpha text.",
    "acl": ["user:ann"],
}
MANIFEST_GOOD_3 = {
    "doc_id": "wiki:three",
    "corpus": "wiki",
    "text": "Gamma text.",
    "acl": ["group:eng"],
}
MANIFEST_STORED = {"wiki:one": frozenset({"user:ann"}), "wiki:three": frozenset({"group:eng"})}
FULL_RECORD: dict[str, Any] = {
    "doc_id": "wiki:bad",
    "title": "Bad",
    "uri": "https://wiki.example/bad",
    "source_system": "wiki",
    "corpus": "wiki",
    "owner": "ann",
    "acl": ["user:ann", "group:eng"],
    "sensitivity": "INTERNAL",
    "created_at": "2024-01-01T00:00:00Z",
    "updated_at": "2024-02-01T00:00:00+01:00",
    "review_at": "2030-01-01",
    "expires_at": "2099-01-01T00:00:00",
    "ai_allowed": True,
    "personal_data": False,
    "origin": "human",
    "origin_chain": ["human"],
    "text": "Delta text that must never be stored.",
}
MANIFEST = Record(
    FULL_RECORD,
    slots={(key,): INVALID[key] for key in KEYS},
    required=[("text",), ("doc_id",)],
    locate=key_named,
)
# A line that is valid JSON and valid metadata but not a valid manifest entry.
manifest_structure = st.sampled_from(
    [
        Bad(b'{"deleted": true, "corpus": "wiki"}', "deletion naming nothing"),
        Bad(b'{"doc_id": "wiki:bad", "acl": ["everyone"]}', "neither path nor text"),
        *(
            Bad(json.dumps({"path": p, "corpus": "wiki"}).encode(), f"path {p}")
            for p in ["../outside.txt", "/etc/passwd", "docs/../../x.txt", "/"]
        ),
    ]
)
manifest_lines = MANIFEST.mutations(not_utf8=False) | manifest_structure


def assert_manifest_line_refused(project: Project, bad: Bad, *, as_json: bool) -> None:
    """Line 2 is refused with one line naming ``m.jsonl:2``; lines 1 and 3 are stored."""
    assert b"\n" not in bad.data
    manifest = project.write(
        "m.jsonl", jsonl(MANIFEST_GOOD_1) + bad.data + b"\n" + jsonl(MANIFEST_GOOD_3)
    )

    r = project.run("ingest", "--manifest", manifest, *(["--json"] * as_json))

    assert r.rc == 2, r
    assert "Traceback" not in r.out + r.err
    if as_json:
        report = json.loads(r.out)
        assert "results" in report, report  # not a refusal of the whole run
        results = report["results"]
        assert [x["source"] for x in results if x["status"] != "failed"] == [
            "m.jsonl:1",
            "m.jsonl:3",
        ], results
        [failed] = [x for x in results if x["status"] == "failed"]
        assert failed["source"] == "m.jsonl:2"
        error = failed["error"]
        assert len(error.splitlines()) == 1, error
    else:
        failed_lines = [line for line in r.out.splitlines() if line.startswith("failed ")]
        assert len(failed_lines) == 1, r
        assert failed_lines[0].startswith("failed m.jsonl:2: "), failed_lines
        error = failed_lines[0]
    # The line's own errors repeat the place: parse errors name the manifest's path.
    assert not error.startswith(("m.jsonl:1", "m.jsonl:3", f"{manifest}:1", f"{manifest}:3"))
    assert names_where(bad, error), (bad.where, error)
    assert project.acls() == MANIFEST_STORED


@FUZZ
@given(bad=manifest_lines, as_json=st.booleans())
def test_a_bad_manifest_line_is_refused_alone(tmp_path: Path, bad: Bad, as_json: bool) -> None:
    assert_manifest_line_refused(new_project(tmp_path, seeded=False), bad, as_json=as_json)


def test_manifest_lines_end_at_newlines_only(tmp_path: Path) -> None:
    """A U+2028, U+0085 or form feed inside a JSON string is part of the line: it neither
    breaks a valid record in two nor shifts the numbers of the lines after it."""
    project = new_project(tmp_path, seeded=False)
    odd = {**MANIFEST_GOOD_1, "doc_id": "wiki:odd", "title": "a\u2028b\x85c\x0cd\u2029e"}
    manifest = project.write(
        "m.jsonl",
        dumps(odd, ascii=False).encode()
        + b"\n"
        + b'{"doc_id": "wiki:bad", "text": "x", "acl": [], "acl": ["everyone"]}\n',
    )

    r = project.run("ingest", "--manifest", manifest, "--json")

    results = {x["source"]: x for x in json.loads(r.out)["results"]}
    assert sorted(results) == ["m.jsonl:1", "m.jsonl:2"], results
    assert results["m.jsonl:1"]["status"] == "added"
    assert results["m.jsonl:2"]["error"].startswith(f"{manifest}:2: key 'acl' appears twice")
    assert r.rc == 2
    assert project.acls() == {"wiki:odd": frozenset({"user:ann"})}


# ============================================================================ 2. sidecars, _meta.json

SIDECAR_KEYS = set(KEYS) - {"path", "text", "deleted"}
FOLDER_KEYS = SIDECAR_KEYS - {"doc_id"}


def folder_file_slots(allowed: set[str]) -> dict[Path_, st.SearchStrategy[Any]]:
    """A key not allowed in the file is wrong whatever its value. A corpus is only broken
    by type here: an unconfigured one is refused naming the document, not the metadata
    file (test_an_unconfigured_corpus_names_the_metadata_file)."""
    slots: dict[Path_, st.SearchStrategy[Any]] = {
        (k,): INVALID[k] if k in allowed else json_values for k in KEYS
    }
    slots["corpus",] = bad_strings
    return slots


SIDECAR = Record(
    {k: v for k, v in FULL_RECORD.items() if k in SIDECAR_KEYS},
    slots=folder_file_slots(SIDECAR_KEYS),
    indent=2,
    locate=key_named,
    min_length=0,
)
FOLDER = Record(
    {k: v for k, v in FULL_RECORD.items() if k in FOLDER_KEYS},
    slots=folder_file_slots(FOLDER_KEYS),
    locate=key_named,
    min_length=0,
)


def folder_tree(project: Project) -> Path:
    """docs/ with a good ``_meta.json``, a good sidecar, plain files and a ``bad/`` folder."""
    docs = project.root / "docs"
    if not docs.exists():
        files = {
            "_meta.json": json.dumps({"corpus": "wiki", "acl": ["group:eng"]}),
            "top.txt": "Top of the tree.",
            "good.txt": "A file with its own sidecar.",
            "good.txt.meta.json": json.dumps({"acl": ["user:ann"], "title": "Good"}),
            "bad.txt": "A file whose sidecar is broken.",
            "ok/x.txt": "A file in a sound folder.",
            "bad/y.txt": "A file in the broken folder.",
            "bad/deeper/z.txt": "A file below the broken folder.",
        }
        for name, text in files.items():
            project.write(f"docs/{name}", text.encode())
    return docs


FOLDER_STORED = {
    "files:top.txt": frozenset({"group:eng"}),
    "files:good.txt": frozenset({"user:ann"}),
    "files:ok/x.txt": frozenset({"group:eng"}),
}


def assert_metadata_file_refused(
    project: Project, bad: Bad, *, sidecar: bool, as_json: bool
) -> None:
    """The files the bad metadata file applies to fail, each with one line naming it; the
    other files are stored with their ACLs."""
    docs = folder_tree(project)
    real = Path(os.path.realpath(docs))
    eng = frozenset({"group:eng"})
    if sidecar:
        meta, failing = real / "bad.txt.meta.json", ["bad.txt"]
        stored = FOLDER_STORED | {"files:bad/y.txt": eng, "files:bad/deeper/z.txt": eng}
    else:
        meta, failing = real / "bad" / "_meta.json", ["bad/deeper/z.txt", "bad/y.txt"]
        stored = FOLDER_STORED | {"files:bad.txt": eng}
    meta.write_bytes(bad.data)

    r = project.run("ingest", docs, *(["--json"] * as_json))

    assert r.rc == 2, r
    assert "Traceback" not in r.out + r.err
    if as_json:
        results = json.loads(r.out)["results"]
        failed = {x["source"]: x["error"] for x in results if x["status"] == "failed"}
        assert sorted(failed) == failing, results
        errors = list(failed.values())
        assert all(len(e.splitlines()) == 1 for e in errors), errors
    else:
        lines = sorted(line for line in (r.out + r.err).splitlines() if line.startswith("failed "))
        assert len(lines) == len(failing), r
        for line, source in zip(lines, failing, strict=True):
            assert line.startswith(f"failed {source}: "), line
        errors = [line.split(": ", 1)[1] for line in lines]
    for error in errors:
        assert error.startswith(f"{meta}: "), error
        assert names_where(bad, error), (bad.where, error)
    assert project.acls() == stored


@FUZZ
@given(bad=SIDECAR.mutations(), as_json=st.booleans())
def test_a_bad_sidecar_fails_only_its_file(tmp_path: Path, bad: Bad, as_json: bool) -> None:
    project = new_project(tmp_path, seeded=False)
    assert_metadata_file_refused(project, bad, sidecar=True, as_json=as_json)


@FUZZ
@given(bad=FOLDER.mutations(), as_json=st.booleans())
def test_a_bad_folder_meta_fails_only_its_folder(tmp_path: Path, bad: Bad, as_json: bool) -> None:
    project = new_project(tmp_path, seeded=False)
    assert_metadata_file_refused(project, bad, sidecar=False, as_json=as_json)


# ============================================================================ 3. ACL sync files

ACL_GOOD_1 = {"doc_id": "wiki:one", "acl": ["user:bob"]}
ACL_GOOD_3 = {"doc_id": "wiki:three", "acl": ["group:leads"]}


def acl_key_named(path: Path_) -> tuple[str, ...]:
    return {("doc_id",): ("'doc_id'", "appears twice"), ("acl",): ("'acl'", "acl[")}.get(path, ())


ACL_RECORD = Record(
    {"doc_id": "wiki:two", "acl": ["user:cat", "group:leads"]},
    slots={
        ("doc_id",): not_strings | st.just("") | st.just("wiki:one"),  # "wiki:one": line 1's
        ("acl",): not_lists | with_one_bad(good_principals, bad_principals),
    },
    required=[("doc_id",), ("acl",)],
    locate=acl_key_named,
)


def seeded_project(root: Path) -> Project:
    """The seeded project of this test function, made by its first example: a refused
    sync writes nothing, so every example can share it."""
    if (root / "clearance.toml").exists():
        return Project(root)
    return new_project(root, seeded=True)


def one_error_line(r: Result) -> str:
    """Exit 2, no traceback, exactly one line on stderr: ``error: …``."""
    assert r.rc == 2, r
    assert "Traceback" not in r.out + r.err
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("error: "), lines
    return lines[0]


def assert_acl_file_refused(project: Project, bad: Bad, *, delta: bool, as_json: bool) -> None:
    """One line naming ``wiki.jsonl:2``; ACLs, sync times and the directory unchanged."""
    assert b"\n" not in bad.data
    before = project.state()
    path = project.write("wiki.jsonl", jsonl(ACL_GOOD_1) + bad.data + b"\n" + jsonl(ACL_GOOD_3))

    r = project.run(
        "acl", "sync", path, "--corpus", "wiki", *(["--delta"] * delta), *(["--json"] * as_json)
    )

    line = one_error_line(r)
    assert line.startswith("error: wiki.jsonl:2: "), line
    assert names_where(bad, line), (bad.where, line)
    if as_json:
        message = json.loads(r.out)["message"]
        assert message.startswith("wiki.jsonl:2: ")
        assert len(message.splitlines()) == 1, message
    assert project.state() == before


@FUZZ
@given(bad=ACL_RECORD.mutations(not_utf8=False), delta=st.booleans(), as_json=st.booleans())
def test_a_bad_acl_line_fails_the_whole_sync(
    tmp_path: Path, bad: Bad, delta: bool, as_json: bool
) -> None:
    project = seeded_project(tmp_path)
    assert_acl_file_refused(project, bad, delta=delta, as_json=as_json)


# ============================================================================ 4. directory files

any_user = st.sampled_from(["ann", "bob", "cat"])


def json_location(path: Path_) -> tuple[str, ...]:
    """What a directory error about the value at ``path`` must name: the object holding it
    (``users[1]`` for ``users[1].active``: a missing or contradicting key is reported on
    its object), or the key itself at the top level."""
    return (json_path(path[:-1] if len(path) > 1 else path),)


def except_(*allowed: Any) -> Callable[[Any], bool]:
    return lambda v: not any(v == a and type(v) is type(a) for a in allowed)


not_bool_or_null = json_values.filter(lambda v: v is not None and not isinstance(v, bool))
not_string_or_null = json_values.filter(lambda v: v is not None and not isinstance(v, str))
not_object_or_null = json_values.filter(lambda v: v is not None and not isinstance(v, dict))
bad_members = not_lists | with_one_bad(
    st.sampled_from(["user:ann", "group:leads", "user:nobody"]),
    bad_principals | st.just("everyone"),
)
bad_attributes = (
    json_values.filter(lambda v: v is not None and not isinstance(v, dict))
    | st.dictionaries(texts, not_strings, min_size=1)
    | st.just({"": "x"})
)

CLEARANCE_DIRECTORY = Record(
    {
        "version": 7,
        "users": [
            {"id": "ann", "active": True, "attributes": {"department": "eng", "name": "Ann"}},
            {"id": "bob", "active": True},
            {"id": "cat", "active": False, "attributes": {}},
        ],
        "groups": [
            {"id": "eng", "members": ["user:ann", "group:leads"]},
            {"id": "leads", "members": ["user:bob"]},
            {"id": "hr", "members": []},
        ],
    },
    slots={
        ("version",): json_values.filter(
            lambda v: isinstance(v, bool) or not isinstance(v, int) or v < 0
        )
        | st.integers(max_value=-1),
        ("users",): not_lists,
        ("groups",): not_lists,
        ("removed_users",): not_lists | st.just(["ann"]) | with_one_bad(any_user, bad_ids),
        ("removed_groups",): not_lists | st.just(["eng"]) | bad_ids.map(lambda i: [i]),
        **{("users", i): not_objects for i in range(3)},
        **{("users", i, "id"): not_strings | bad_ids for i in range(3)},
        ("users", 1, "id"): not_strings | bad_ids | st.sampled_from(["ann", "cat"]),
        **{("users", i, "active"): not_bools for i in range(3)},
        ("users", 0, "attributes"): bad_attributes,
        ("users", 0, "attributes", "department"): not_strings,
        ("users", 2, "attributes"): bad_attributes,
        **{("groups", i): not_objects for i in range(3)},
        **{("groups", i, "id"): not_strings | bad_ids for i in range(3)},
        ("groups", 2, "id"): not_strings | bad_ids | st.just("eng"),
        **{("groups", i, "members"): bad_members for i in range(3)},
        ("groups", 0, "members", 1): not_strings | bad_principals | st.just("everyone"),
    },
    required=[("users", 0, "id"), ("users", 1, "active"), ("groups", 1, "id")],
    closed=[(), ("users", 0), ("users", 1), ("groups", 0)],
    objects=[(), ("users", 0), ("users", 0, "attributes"), ("groups", 1)],
    indent=2,
    locate=json_location,
    unparsable=(": $: ",),
    names_repeats=True,
)

SCIM_LIST = Record(
    {
        "schemas": [SCIM_LIST_RESPONSE],
        "totalResults": 3,
        "Resources": [
            {
                "schemas": [SCIM_USER, SCIM_ENTERPRISE_USER],
                "id": "ann",
                "userName": "ann@acme.example",
                "active": True,
                "name": {"formatted": "Ann Lee"},
                SCIM_ENTERPRISE_USER: {"department": "eng"},
                "meta": {"resourceType": "User"},
            },
            {"schemas": [SCIM_USER], "id": "bob", "active": False, "displayName": "Bob"},
            {
                "schemas": [SCIM_GROUP],
                "id": "eng",
                "displayName": "Engineering",
                "members": [
                    {"value": "ann", "type": "User"},
                    {"value": "bob", "$ref": "https://idp.example/scim/v2/Users/bob"},
                ],
            },
        ],
    },
    slots={
        ("schemas",): not_lists
        | with_one_bad(st.just(SCIM_LIST_RESPONSE), not_strings)
        | st.lists(texts, max_size=2).filter(
            lambda s: not {SCIM_LIST_RESPONSE, SCIM_BULK_REQUEST, SCIM_USER, SCIM_GROUP} & set(s)
        ),
        ("totalResults",): json_values.filter(except_(None, 3)),
        ("Resources",): not_lists,
        **{("Resources", i): not_objects for i in range(3)},
        **{("Resources", i, "id"): not_strings | bad_ids for i in range(3)},
        ("Resources", 1, "id"): not_strings | bad_ids | st.just("ann"),
        ("Resources", 1, "schemas"): not_lists
        | with_one_bad(st.just(SCIM_USER), not_strings)
        | st.just([SCIM_USER, SCIM_GROUP])
        | st.just([]),
        ("Resources", 0, "active"): not_bool_or_null,
        ("Resources", 1, "active"): not_bool_or_null,
        ("Resources", 0, "userName"): not_string_or_null,
        ("Resources", 1, "displayName"): not_string_or_null,
        ("Resources", 0, "name"): not_object_or_null,
        ("Resources", 0, "name", "formatted"): not_string_or_null,
        ("Resources", 0, SCIM_ENTERPRISE_USER): not_object_or_null,
        ("Resources", 0, SCIM_ENTERPRISE_USER, "department"): not_string_or_null,
        ("Resources", 0, "meta"): not_objects,
        ("Resources", 0, "meta", "resourceType"): json_values.filter(except_("User"))
        | st.sampled_from(["Group", "user", "Device"]),
        ("Resources", 2, "members"): not_lists.filter(lambda v: v is not None),
        ("Resources", 2, "members", 0): not_objects,
        ("Resources", 2, "members", 0, "value"): not_strings | bad_ids,
        ("Resources", 2, "members", 0, "type"): not_string_or_null
        | texts.filter(lambda s: s.lower() not in ("user", "group")),
    },
    required=[("Resources", 0, "id"), ("Resources", 2, "members", 0, "value")],
    closed=[],
    objects=[(), ("Resources", 0), ("Resources", 0, "name"), ("Resources", 2, "members", 0)],
    indent=2,
    locate=json_location,
    unparsable=(": $: ",),
    names_repeats=True,
)

SCIM_BULK = Record(
    {
        "schemas": [SCIM_BULK_REQUEST],
        "Operations": [
            {
                "method": "POST",
                "path": "/Users",
                "data": {"schemas": [SCIM_USER], "id": "dan", "active": True},
            },
            {"method": "DELETE", "path": "/Users/bob"},
            {
                "method": "PUT",
                "path": "/Groups/eng",
                "data": {"schemas": [SCIM_GROUP], "members": [{"value": "ann", "type": "User"}]},
            },
        ],
    },
    slots={
        ("Operations",): not_lists,
        **{("Operations", i): not_objects for i in range(3)},
        **{
            ("Operations", i, "method"): not_strings
            | texts.filter(lambda s: s.upper() not in ("POST", "PUT", "PATCH", "DELETE"))
            for i in range(3)
        },
        ("Operations", 0, "path"): not_strings | st.sampled_from(["/Groups/x", "/Devices", ""]),
        ("Operations", 1, "path"): not_strings
        | bad_ids.filter(lambda i: "/" not in i).map(lambda i: f"/Users/{i}")
        | st.sampled_from(["/Users/bob/x", "/Widgets/1", "/Users/", "Users/bob"]),
        ("Operations", 0, "data"): not_objects,
        ("Operations", 0, "data", "id"): not_strings | bad_ids,
        ("Operations", 2, "data", "members"): not_lists.filter(lambda v: v is not None),
    },
    required=[("Operations",), ("Operations", 1, "path"), ("Operations", 0, "method")],
    closed=[],
    objects=[(), ("Operations", 1), ("Operations", 2, "data")],
    indent=2,
    locate=json_location,
    unparsable=(": $: ",),
    names_repeats=True,
)

directory_files = st.one_of(
    st.tuples(CLEARANCE_DIRECTORY.mutations(), st.booleans()),
    st.tuples(SCIM_LIST.mutations(), st.booleans()),
    st.tuples(SCIM_BULK.mutations(), st.just(True)),  # a BulkRequest is always a delta
)


def assert_directory_file_refused(
    project: Project, bad: Bad, *, delta: bool, as_json: bool
) -> None:
    """A line for each problem, each naming ``people.json`` and where in it, one of them
    the bad value's place; ACLs, syncs and directory unchanged."""
    before = project.state()
    path = project.write("people.json", bad.data)

    r = project.run("directory", "sync", path, *(["--delta"] * delta), *(["--json"] * as_json))

    assert r.rc == 2, r
    assert "Traceback" not in r.out + r.err
    lines = r.err.splitlines()
    assert lines, r
    for line in lines:
        assert re.match(r"error: (\S*/)?people\.json(:\d+)?: ", line), line
    assert any(names_where(bad, line) for line in lines), (bad.where, lines)
    if as_json:
        error = json.loads(r.out)
        problems = error.get("problems", [error["message"]])
        assert all(len(p.splitlines()) == 1 for p in problems), problems
        assert len(problems) == len(lines), (problems, lines)
    assert project.state() == before


@FUZZ
@given(file=directory_files, as_json=st.booleans())
def test_a_bad_directory_file_changes_nothing(
    tmp_path: Path, file: tuple[Bad, bool], as_json: bool
) -> None:
    bad, delta = file
    project = seeded_project(tmp_path)
    assert_directory_file_refused(project, bad, delta=delta, as_json=as_json)


# ============================================================================ every key, reverse proof


def test_every_documented_metadata_key_is_fuzzed() -> None:
    """A key added to the metadata contract must get its invalid values here too."""
    assert set(INVALID) == set(KEYS)


def _acl_check(root: Path, data: bytes) -> None:
    assert_acl_file_refused(seeded_project(root), Bad(data, "leak"), delta=True, as_json=False)


def _directory_check(root: Path, data: bytes) -> None:
    project = seeded_project(root)
    assert_directory_file_refused(project, Bad(data, "leak"), delta=False, as_json=True)


LEAKS: dict[str, tuple[Callable[[Path, bytes], None], bytes]] = {
    "manifest": (
        lambda root, data: assert_manifest_line_refused(
            new_project(root, seeded=False), Bad(data, "leak"), as_json=False
        ),
        b'{"doc_id": "wiki:bad", "corpus": "wiki", "text": "Delta.", "acl": ["user:ann"], '
        b'"acl": ["everyone"]}',
    ),
    "sidecar": (
        lambda root, data: assert_metadata_file_refused(
            new_project(root, seeded=False), Bad(data, "leak"), sidecar=True, as_json=True
        ),
        b'{"acl": ["user:ann"], "acl": ["everyone"]}',
    ),
    "folder-meta": (
        lambda root, data: assert_metadata_file_refused(
            new_project(root, seeded=False), Bad(data, "leak"), sidecar=False, as_json=False
        ),
        b'{"corpus": "wiki", "acl": ["group:hr"], "acl": ["everyone"]}',
    ),
    "acl-file": (_acl_check, b'{"doc_id": "wiki:two", "acl": [], "acl": ["everyone"]}'),
    "directory": (
        _directory_check,
        b'{"users": [{"id": "ann", "active": true, "active": false}]}',
    ),
}


@pytest.mark.parametrize("kind", sorted(LEAKS))
def test_the_contract_catches_a_leaky_json_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Reverse proof. The strict reader refuses a record that names a key twice; put
    Python's own ``json.loads`` (the last ``"acl"`` wins: everyone) in its place and the
    record goes through — and the very assertion the fuzz tests use must fail."""
    check, data = LEAKS[kind]
    check(tmp_path, data)  # the real reader: refused, nothing written

    monkeypatch.setattr(jsonio, "loads", json.loads)
    with pytest.raises(AssertionError):
        check(tmp_path, data)


# ============================================================================ found by fuzzing
# Defects the fuzzing above found, each fixed and pinned here with the input that showed it.

SURROGATE_RECORDS = {
    "manifest-title": {**MANIFEST_GOOD_1, "doc_id": "wiki:bad", "title": "\ud800"},
    "manifest-doc-id": {**MANIFEST_GOOD_1, "doc_id": "wiki:\udfff"},
    "manifest-text": {**MANIFEST_GOOD_1, "doc_id": "wiki:bad", "text": "a\ud800b"},
}


@pytest.mark.parametrize("kind", sorted(SURROGATE_RECORDS))
def test_a_lone_surrogate_is_refused_like_any_bad_record(tmp_path: Path, kind: str) -> None:
    bad = Bad(json.dumps(SURROGATE_RECORDS[kind]).encode(), kind)
    assert_manifest_line_refused(new_project(tmp_path, seeded=False), bad, as_json=False)


def test_acl_sync_json_prints_whatever_it_accepted(tmp_path: Path) -> None:
    project = seeded_project(tmp_path)
    path = project.write("wiki.jsonl", b'{"doc_id": "wiki:\\ud800", "acl": ["user:ann"]}\n')

    r = project.run("acl", "sync", path, "--corpus", "wiki", "--delta", "--json")

    assert r.rc in (0, 2), r


def test_bytes_that_are_not_utf8_fail_only_their_manifest_line(tmp_path: Path) -> None:
    bad = Bad(b'{"doc_id": "wiki:bad", "corpus": "wiki", "text": "x\xff"}', "not UTF-8")
    assert_manifest_line_refused(new_project(tmp_path, seeded=False), bad, as_json=True)


def test_bytes_that_are_not_utf8_are_reported_at_their_acl_line(tmp_path: Path) -> None:
    bad = Bad(b'{"doc_id": "wiki:two", "acl": ["user:\xff"]}', "not UTF-8")
    assert_acl_file_refused(seeded_project(tmp_path), bad, delta=False, as_json=False)


def test_a_document_of_another_corpus_is_reported_at_its_acl_line(tmp_path: Path) -> None:
    bad = Bad(b'{"doc_id": "hr:pay", "acl": ["everyone"]}', "another corpus")
    assert_acl_file_refused(seeded_project(tmp_path), bad, delta=False, as_json=False)


@pytest.mark.parametrize("sidecar", [True, False], ids=["sidecar", "folder-meta"])
def test_an_unconfigured_corpus_names_the_metadata_file(tmp_path: Path, sidecar: bool) -> None:
    bad = Bad(b'{"corpus": "Wiki"}', "unconfigured corpus")
    project = new_project(tmp_path, seeded=False)
    assert_metadata_file_refused(project, bad, sidecar=sidecar, as_json=False)


def test_a_directory_key_no_file_can_hold_is_refused_naming_it(tmp_path: Path) -> None:
    """The case the fuzzer found: an unknown key that is also a lone surrogate is refused by
    the JSON reader, which names it as such; nothing changes."""
    data = b'{"users": [{"id": "ann", "active": true, "\\ud800": 1}], "groups": []}'
    bad = Bad(data, "a lone surrogate as a key", ("unpaired surrogate",))
    assert_directory_file_refused(seeded_project(tmp_path), bad, delta=False, as_json=False)
