"""What a site generator or a mail client writes around a page's text, read as what it is.

Handbooks and wikis are kept as Markdown or HTML for a site generator (Jekyll, Hugo, Eleventy,
MkDocs), and e-mails are exported with their headers; none of that is text a reader sees:

* :func:`front_matter` — a YAML (``---`` … ``---``) or TOML (``+++`` … ``+++``) block opening
  the file is the page's metadata: its fields are returned (``title`` becomes the document's
  title) and the block is never indexed as text;
* :func:`strip_templates` — template tags (``{% include … %}``, ``{% if … %}``, Hugo's
  ``{{< note >}}``, ``{# … #}``, and in a Middleman or Rails page (``.md.erb``) ERB's
  ``<% … %>`` and ``<%# … %>``) are removed and the text between them is kept, except a
  tag that only shows the one quoted string it is given (``{% slack_channel "#ops" %}``),
  which becomes that string; a comment
  block (``{% comment %}`` … ``{% endcomment %}``) is removed whole; an output tag
  (``{{ page.title }}``, ERB's ``<%= current_page.data.title %>``) becomes the front
  matter field it names, else nothing. Fenced code
  (```` ``` ```` / ``~~~``) is left as written;
* :func:`plain_links` — Markdown link syntax in plain text (``[label](url)``,
  ``![alt](src)``, ``[label][ref]``) becomes its words;
* :func:`mail_headers` — the header block of an e-mail export (``From:``, ``To:``,
  ``Subject:`` …) is metadata: its ``Subject`` is the title.

Every function keeps the text's line count (what it removes becomes blank lines or nothing
inside a line), so line numbers in locators and progress still point into the file.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping

import yaml

__all__ = ["front_matter", "mail_headers", "plain_links", "strip_templates"]

_YAML_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_YAML_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_TOML_OPEN = re.compile(r"\A\ufeff?\+\+\+[ \t]*\r?\n")
_TOML_CLOSE = re.compile(r"^\+\+\+[ \t]*$", re.MULTILINE)

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_COMMENT_BLOCK = re.compile(r"\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}", re.DOTALL)
_OUTPUT = re.compile(r"\{\{-?([^{}<%]*?)-?\}\}")
_TAG = re.compile(r"\{%.*?%\}|\{\{[<%].*?[>%]\}\}|\{#.*?#\}", re.DOTALL)
_ERB_OUTPUT = re.compile(r"<%=-?([^%]*?)-?%>")
# ``data['title']`` names the field ``data.title`` does.
_SUBSCRIPT = re.compile(r"\[\s*['\"]?(\w+)['\"]?\s*\]")
_ERB_TAG = re.compile(r"<%(?!=).*?%>", re.DOTALL)

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"\n]*\")?\)")
_INLINE_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\([^)\s]*(?:\s+\"[^\"\n]*\")?\)")
_REFERENCE_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")

_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)")
_MAIL_FIELDS = frozenset({"from", "to", "cc", "bcc", "date", "sent", "subject", "reply-to"})


def _blank(text: str) -> str:
    """``text`` as the line breaks it holds, nothing else."""
    return "\n" * text.count("\n")


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter's fields (scalars as text, lists joined by ``", "``) and ``text``
    with the block blanked out. Without front matter, ``({}, text)``. A block that does not
    parse is still metadata, not text: it is blanked out and gives no fields."""
    for opening, closing, parse in (
        (_YAML_OPEN, _YAML_CLOSE, yaml.safe_load),
        (_TOML_OPEN, _TOML_CLOSE, tomllib.loads),
    ):
        start = opening.match(text)
        if start is None:
            continue
        end = closing.search(text, start.end())
        if end is None:
            return {}, text
        body = text[start.end() : end.start()]
        try:
            data = parse(body)
        except (yaml.YAMLError, tomllib.TOMLDecodeError, ValueError):
            data = None
        fields: dict[str, str] = {}
        if isinstance(data, Mapping):
            for key, value in data.items():
                if isinstance(value, list | tuple):
                    value = ", ".join(str(v) for v in value if not isinstance(v, Mapping))
                if value is not None and not isinstance(value, Mapping):
                    fields[str(key)] = str(value)
        return fields, _blank(text[: end.end()]) + text[end.end() :]
    return {}, text


def _outside_fences(
    text: str, change: re.Pattern[str], replace: Callable[[re.Match[str]], str]
) -> str:
    """``change.sub(replace, …)`` on the parts of ``text`` outside fenced code blocks."""
    parts: list[str] = []
    position = 0
    fence: str | None = None
    for m in _FENCE.finditer(text):
        marker = m.group(1)
        if fence is None:
            parts.append(change.sub(replace, text[position : m.start()]))
            position, fence = m.start(), marker
        elif marker[0] == fence[0] and len(marker) >= len(fence):
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            parts.append(text[position:line_end])
            position, fence = line_end, None
    tail = text[position:]
    parts.append(tail if fence is not None else change.sub(replace, tail))
    return "".join(parts)


def strip_templates(
    text: str, fields: Mapping[str, str] | None = None, *, erb: bool = False
) -> str:
    """``text`` without template tags (see the module docstring); ERB's too with ``erb``
    (a file whose name says it is ERB: ``<%`` in any other page is text, as in a page
    about ERB)."""
    known = {k.casefold(): v for k, v in (fields or {}).items()}

    def output(m: re.Match[str]) -> str:
        expression = _SUBSCRIPT.sub(r".\1", m.group(1).split("|", 1)[0].strip())
        value = known.get(expression.rsplit(".", 1)[-1].casefold())
        if value is None:
            return _blank(m.group(0))
        # one line where the tag stood, and the lines the tag spanned after it
        return " ".join(value.split()) + _blank(m.group(0))

    text = _outside_fences(text, _COMMENT_BLOCK, lambda m: _blank(m.group(0)))
    text = _outside_fences(text, _TAG, _tag_words)
    if erb:
        text = _outside_fences(text, _ERB_TAG, lambda m: _blank(m.group(0)))
        text = _outside_fences(text, _ERB_OUTPUT, output)
    return _outside_fences(text, _OUTPUT, output)


# A tag a site renders as the words it is given: one quoted argument, and a name that is
# no control tag (``{% slack_channel "#people-ops" %}`` → ``#people-ops``; a page link's
# ``{% page "travel/fmla" %}`` → its path, which link syntax then drops for the label).
_WORDS_TAG = re.compile(r"\{%-?\s*([A-Za-z_][\w.-]*)\s+(?:\"([^\"\n]*)\"|'([^'\n]*)')\s*-?%\}")
_CONTROL_TAGS = frozenset(
    re.findall(
        r"\w+",
        """assign block break call capture case comment continue cycle decrement else elsif
        embed endblock endcall endcapture endcase endcomment endfor endif endmacro endraw
        endset endunless endwith extends filter for from if import include include_relative
        increment liquid macro raw render set tablerow unless when with""",
    )
)


def _tag_words(m: re.Match[str]) -> str:
    """What a template tag leaves in the text: the words of a tag that only shows them
    (see :data:`_WORDS_TAG`), else nothing (blank lines where it spanned lines)."""
    words = _WORDS_TAG.fullmatch(m.group(0))
    if words is not None and words.group(1).casefold() not in _CONTROL_TAGS:
        return words.group(2) if words.group(2) is not None else words.group(3)
    return _blank(m.group(0))


def plain_links(text: str) -> str:
    """``text`` with Markdown link syntax as its words: a link's label, an image's alt text,
    an autolink's address."""
    text = _IMAGE.sub(r"\1", text)
    text = _INLINE_LINK.sub(r"\1", text)
    text = _REFERENCE_LINK.sub(r"\1", text)
    return _AUTOLINK.sub(r"\1", text)


def mail_headers(text: str) -> tuple[dict[str, str], str]:
    """The header block opening an e-mail export (``Name: value`` lines and their folded
    continuations up to the first blank line, holding ``From`` and at least one of ``To``,
    ``Subject``, ``Date``) as fields, lower-case names, and ``text`` with it blanked out.
    Anything else: ``({}, text)``."""
    lines = text.split("\n")
    fields: dict[str, str] = {}
    last: str | None = None
    end = 0
    for i, line in enumerate(lines):
        if not line.strip():
            end = i
            break
        if line[:1] in " \t" and last is not None:
            fields[last] += " " + line.strip()
            continue
        m = _HEADER.fullmatch(line.lstrip("\ufeff").rstrip("\r"))
        if m is None:
            return {}, text
        last = m.group(1).casefold()
        fields[last] = fields.get(last, "") + m.group(2).strip()
    else:
        return {}, text
    if "from" not in fields or not fields.keys() & (_MAIL_FIELDS - {"from"}):
        return {}, text
    return fields, "\n" * end + "\n".join(lines[end:])
