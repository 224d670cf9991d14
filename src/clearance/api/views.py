"""What the HTTP API and the browser UI both show, computed in one place so they cannot drift
apart: a document's preview and the assistants a caller may use.

A preview is a leak path: it is authorised exactly like retrieval, and a document that does
not exist and one the caller may not read look the same through both doors
(:data:`DOCUMENT_NOT_FOUND`). They also cost the same work: the id is first looked up in the
caller's allowed set — the search filter compiled from the access rules, one store query —
and nothing about a document is read unless that set holds it. So the store runs the same
statements for an absent document and a hidden one, and the access decision with its
real-time check runs only for a document the caller's permissions admit.

A preview asked for at a citation's locator opens at the cited passage: the stored chunk the
locator resolves to (the chunk whose locator parts all belong to the citation's, the most of
them winning, so a fact's ``row``/``col`` resolve to the row or sheet block holding its cell),
with the cited row or cell marked inside it and a little of the chunks just before and after
as context. Every piece shown is a chunk the caller's allowed set admits: a neighbour it does
not admit leaves that side without context, and a locator that resolves to no admitted chunk
gives the document's beginning, exactly as a preview asked for without one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from starlette.convertors import Convertor, register_url_convertor

from clearance.access.policy import Action
from clearance.api.errors import DOCUMENT_NOT_FOUND
from clearance.app import Clearance
from clearance.errors import ConfigError, NotFoundError
from clearance.ingest.locator import format_locator, parse_locator
from clearance.model import Chunk

__all__ = [
    "CONTEXT_CHARS",
    "PREVIEW_CHARS",
    "DocumentId",
    "assistants_for",
    "preview",
    "source_link",
]

#: Characters of a document preview: enough to recognise it, not a copy of it.
PREVIEW_CHARS = 500
#: Characters of context shown on each side of a cited passage, from its neighbouring chunks.
CONTEXT_CHARS = 240
#: URI schemes a preview offers as a link; any other location is shown as text only.
LINK_SCHEMES = frozenset({"http", "https", "file"})


class DocumentId(Convertor[str]):
    """A document id in a route (``{doc_id:document_id}``): the rest of the path, exactly.
    Starlette's ``path`` convertor leaves a final newline outside the id, since its route
    pattern ends in ``$``, which also matches before a trailing newline: ``/documents/a%0a``
    was served as ``a``. This one takes every character, newlines included."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("document_id", DocumentId())


def preview(
    engine: Clearance,
    user_id: str,
    doc_id: str,
    assistant: str | None,
    locator: str | None = None,
) -> dict[str, Any]:
    """The document as ``user_id`` may see it through ``assistant``, at the passage
    ``locator`` cites when given, or :data:`DOCUMENT_NOT_FOUND` (absent and unreadable alike;
    an unknown assistant is a :class:`NotFoundError` naming it)."""
    try:
        caller = engine.caller(user_id, assistant)
    except ConfigError as exc:
        raise NotFoundError(exc.message) from None
    found = caller.document(engine.store, doc_id)
    if found is None:
        raise DOCUMENT_NOT_FOUND
    allowed = caller.filter(Action.RETRIEVE, engine.store.corpora())
    # A chunk may be more sensitive than its document: preview only what was authorised.
    chunks = [
        c
        for c in engine.store.get_chunks(doc_id)
        if c.sensitivity <= found.sensitivity and allowed.admits(found, c)
    ]
    text = " ".join(" ".join(c.text.split()) for c in chunks[:3])
    passage = None if not locator else _passage(chunks, locator)
    return {
        "doc_id": found.doc_id,
        "title": found.title,
        "uri": found.uri,
        "link": source_link(found.uri, passage["locator"] if passage else None),
        "corpus": found.corpus,
        "sensitivity": found.sensitivity.name,
        "updated_at": found.updated_at.isoformat() if found.updated_at else None,
        "preview": text[:PREVIEW_CHARS],
        "preview_truncated": len(text) > PREVIEW_CHARS,
        "passage": passage,
    }


def source_link(uri: str, locator: str | None = None) -> str | None:
    """``uri`` as a link a browser may follow (http, https or file; ``None`` for anything
    else), pointing at the cited page of a PDF (``#page=N``) when ``locator`` names one."""
    parts = urlsplit(uri)
    if parts.scheme.lower() not in LINK_SCHEMES or not (parts.netloc or parts.path):
        return None
    page = dict(_parts(locator)).get("page") if locator else None
    if page is not None and page.isdigit() and parts.path.lower().endswith(".pdf"):
        parts = parts._replace(fragment=f"page={page}")
    return urlunsplit(parts)


def _parts(locator: str) -> list[tuple[str, str]]:
    try:
        return parse_locator(locator)
    except ValueError:
        return []


def _passage(chunks: list[Chunk], locator: str) -> dict[str, Any] | None:
    """The cited chunk among ``chunks`` (all of them admitted), its marked spans and the
    context of its admitted neighbours; ``None`` when ``locator`` resolves to none."""
    cited = set(_parts(locator))
    if not cited:
        return None
    best: tuple[int, int] | None = None  # (parts matched, index)
    for i, chunk in enumerate(chunks):
        own = set(_parts(chunk.locator))
        if own and own <= cited and (best is None or len(own) > best[0]):
            best = (len(own), i)
    if best is None:
        return None
    index = best[1]
    chunk = chunks[index]
    text = chunk.text.strip()
    rest = [(k, v) for k, v in _parts(locator) if (k, v) not in set(_parts(chunk.locator))]
    before = chunks[index - 1] if index > 0 else None
    after = chunks[index + 1] if index + 1 < len(chunks) else None
    return {
        "locator": chunk.locator,
        "before": _tail(before.text) if before and before.ordinal == chunk.ordinal - 1 else "",
        "text": text,
        "after": _head(after.text) if after and after.ordinal == chunk.ordinal + 1 else "",
        "marks": [list(span) for span in _marks(text, rest)],
    }


def _tail(text: str) -> str:
    text = text.strip()
    if len(text) <= CONTEXT_CHARS:
        return text
    cut = text[-CONTEXT_CHARS:]
    space = cut.find(" ")
    return "… " + (cut[space + 1 :] if 0 <= space < len(cut) // 2 else cut)


def _head(text: str) -> str:
    text = text.strip()
    if len(text) <= CONTEXT_CHARS:
        return text
    cut = text[:CONTEXT_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > len(cut) // 2 else cut) + " …"


_ROW_KEYS = ("row", "series")
_COL_KEYS = ("col", "category")


def _marks(text: str, rest: list[tuple[str, str]]) -> list[tuple[int, int]]:
    """The spans of ``text`` the citation points at beyond its chunk: the line of the cited
    row, narrowed to the cited column's cell; the whole text when it names no more, or when
    the row is not found in it."""
    whole = [(0, len(text))]
    wanted = dict(rest)
    row = next((wanted[k] for k in _ROW_KEYS if k in wanted), None)
    col = next((wanted[k] for k in _COL_KEYS if k in wanted), None)
    if row is None and col is None:
        return whole
    lines = _lines(text)
    header = [cell for _, cell in _cells(*lines[0])] if lines else []
    for number, (start, line) in enumerate(lines):
        cells = _cells(start, line)
        if row is not None and not any(_same(_value(cell), row) for _, cell in cells):
            continue
        for i, (at, cell) in enumerate(cells):
            name = _name(cell)
            heading = header[i] if number and i < len(header) else None
            if col is not None and any(_same(n, col) for n in (name, heading) if n is not None):
                return [(at, at + len(cell))]
        if row is not None:
            return [(start, start + len(line))]
    return whole


def _lines(text: str) -> list[tuple[int, str]]:
    """The non-blank lines of ``text`` with their offsets."""
    out, start = [], 0
    for line in text.split("\n"):
        if line.strip():
            out.append((start, line))
        start += len(line) + 1
    return out


def _cells(start: int, line: str) -> list[tuple[int, str]]:
    """The ``" | "``-separated cells of a line with their offsets in the text."""
    out, at = [], start
    for cell in line.split(" | "):
        out.append((at, cell))
        at += len(cell) + 3
    return out


def _name(cell: str) -> str | None:
    """``"FY2024: 1,234"`` → ``"FY2024"``: the header a row's cell is written with."""
    name, sep, _ = cell.partition(": ")
    return name if sep else None


def _value(cell: str) -> str:
    """``"Metric: Revenue"`` → ``"Revenue"``; a bare cell is its own value."""
    _, sep, value = cell.partition(": ")
    return value if sep else cell


def _same(text: str, value: str) -> bool:
    """Whether a cell reads as a locator value (a locator cleans ``,`` and ``=`` away)."""
    return format_locator(("x", text)).casefold() == format_locator(("x", value)).casefold()


def assistants_for(engine: Clearance, user_id: str) -> list[dict[str, Any]]:
    """The assistants ``user_id`` may use: every configured one for an active directory
    user, none for a disabled or unknown account."""
    if not engine.principal(user_id).active:
        return []
    return [
        {
            "name": a.name,
            "description": a.description,
            "corpora": list(a.corpora),
            "max_sensitivity": a.max_sensitivity.name,
        }
        for a in sorted(engine.settings.assistants.values(), key=lambda a: a.name)
    ]
