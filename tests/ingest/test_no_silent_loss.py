"""No loader drops text silently (issue item 10).

The review's case: Markdown with lists nested more than ten levels lost everything after the
nesting, later sections included, without a word. The invariant here is stronger than "fail
with a message": every word of the file is in what the loader returns. Words are tokens
``w<N>`` so that they can be counted in and out. Parsing a long Markdown file in segments must
not change what is read either. Each invariant has a reverse proof on a leaky variant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.errors import LoaderError
from clearance.ingest.loaders import Extracted, extract, html
from clearance.ingest.loaders import markdown as md_loader

from . import html_tree_reference

_WORD = re.compile(r"\bw\d+\b")


def assert_nothing_lost(path: Path) -> Extracted:
    """Every word of ``path`` is in the sections extracted from it."""
    words = set(_WORD.findall(path.read_text(encoding="utf-8")))
    try:
        extracted = extract(path, max_chars=800)
    except LoaderError as exc:
        raise AssertionError(f"refused: {exc.message}") from exc
    found = set(_WORD.findall("\n".join(s.text for s in extracted.sections)))
    missing = sorted(words - found, key=lambda w: int(w[1:]))
    assert not missing, f"{len(missing)} words lost, first {missing[:5]}"
    return extracted


def _nested_list(depth: int, first: int) -> str:
    return "\n".join("  " * i + f"- item w{first + i}" for i in range(depth))


def _deep_markdown(path: Path, depth: int = 14) -> Path:
    text = (
        "# Intro\n\nOpening w1000.\n\n"
        + _nested_list(depth, 1)
        + "\n\n# Later\n\nAfter the list w1001.\n\n## Deeper\n\nLast words w1002.\n"
    )
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- markdown nesting


def test_lists_nested_past_the_parsers_limit_lose_nothing(tmp_path: Path) -> None:
    extracted = assert_nothing_lost(_deep_markdown(tmp_path / "deep.md"))
    locators = [s.locator for s in extracted.sections]
    assert locators == ["section=Intro", "section=Later", "section=Later > Deeper"]
    assert extracted.sections[1].text == "Later\nAfter the list w1001."


@pytest.mark.parametrize(
    "body",
    [
        "> " * 30 + "quoted w1\n" + "> " * 30 + "more w2",  # one line re-parses as deep
        "- " * 30 + "item w1\n\ncontinued w2",
        "\n".join("> " * i + f"q w{i}" for i in range(1, 40)),
        "\n".join(">" * min(i, 25) + "  " * i + f"- x w{i}" for i in range(40)),
        "- a w1\n" + "\n".join("  " * i + f"> - w{i + 2}" for i in range(1, 30)),
    ],
)
def test_deep_quotes_and_lists_of_any_shape_lose_nothing(tmp_path: Path, body: str) -> None:
    path = tmp_path / "deep.md"
    path.write_text(f"# A\n\n{body}\n\n# B\n\nend w999\n", encoding="utf-8")
    extracted = assert_nothing_lost(path)
    assert extracted.sections[-1].locator == "section=B"


def test_reverse_proof_without_re_reading_the_nesting_is_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def drop(self: object, first: int, last: int, start: int, end: int) -> None:
        del self, first, last, start, end

    monkeypatch.setattr(md_loader._Reader, "_reread", drop)
    with pytest.raises(AssertionError, match="words lost"):
        assert_nothing_lost(_deep_markdown(tmp_path / "deep.md"))


_depths = st.lists(
    st.tuples(st.sampled_from(["list", "quote", "para", "heading"]), st.integers(0, 40)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(_depths)
def test_nothing_is_lost_at_any_nesting(blocks: list[tuple[str, int]]) -> None:
    import tempfile

    counter = iter(range(10**6))
    parts: list[str] = []
    for kind, depth in blocks:
        if kind == "list":
            parts.append(_nested_list(depth + 1, next(counter) * 100))
        elif kind == "quote":
            parts.append("> " * depth + f"quoted w{next(counter)}")
        elif kind == "para":
            parts.append(f"Plain w{next(counter)} text.")
        else:  # a heading with no text under it is left out by design (Outline.finish)
            parts.append(f"## Heading w{next(counter)}\n\nUnder it w{next(counter)}.")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.md"
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        assert_nothing_lost(path)


# --------------------------------------------------------------------------- markdown segments


Segmenter = Callable[[list[str]], Iterator[tuple[int, int]]]
SEGMENTS: Segmenter = md_loader._segments


def _outcome(path: Path) -> Extracted | str:
    try:
        return extract(path, max_chars=800)
    except LoaderError as exc:
        return exc.message


def assert_segments_change_nothing(path: Path, segments: Segmenter = SEGMENTS) -> None:
    """Reading ``path`` cut wherever ``segments`` allows gives what reading it whole gives."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(md_loader, "_segments", lambda lines: iter([(0, len(lines))]))
        whole = _outcome(path)
        patch.setattr(md_loader, "_segments", segments)
        patch.setattr(md_loader, "_SEGMENT_CHARS", 1)  # cut at every place allowed
        segmented = _outcome(path)
    assert segmented == whole


_BLOCKS = [
    "# Title w1",
    "Plain paragraph w2\nwith a second line w3.",
    "- item w4\n\n  continued in the item w5\n- item w6",
    "1. first w7\n2. second w8",
    "> quoted w9\n\n> quoted again w10",
    "```\n# comment w11\n\nnot a heading w12\n```",
    "~~~~python\ncode w13\n\nmore code w14\n~~~~",
    "<pre>\nfirst w15\n\nSecond line w16\n</pre>",
    "<!--\nhidden\n\nStill hidden\n-->",
    "<script>\nvar x;\n\nVar y;\n</script>",
    "Region | Revenue\n--- | ---\nJapan w17 | 120",
    "Setext heading w18\n===",
    "    indented code w19\n\n    more w20",
    "<div>\nhtml block w21\n</div>",
    "## Sub heading w22",
    "日本語の段落 w23",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_BLOCKS), min_size=1, max_size=12), st.sampled_from(["\n\n", "\n"]))
def test_reading_in_segments_reads_what_the_whole_file_says(blocks: list[str], sep: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "doc.md"
        path.write_text(sep.join(blocks) + "\n", encoding="utf-8")
        assert_segments_change_nothing(path)


def test_reverse_proof_cutting_after_any_blank_line_changes_what_is_read(tmp_path: Path) -> None:
    def naive(lines: list[str]) -> Iterator[tuple[int, int]]:
        start = 0
        for i in range(1, len(lines)):
            if not lines[i - 1].strip():
                yield start, i
                start = i
        yield start, len(lines)

    path = tmp_path / "doc.md"
    path.write_text("# Title\n\n```\nfirst\n\n# comment in code\n```\n", encoding="utf-8")
    assert_segments_change_nothing(path)
    with pytest.raises(AssertionError):
        assert_segments_change_nothing(path, naive)


# --------------------------------------------------------------------------- html nesting


def _deep_html(path: Path, depth: int) -> Path:
    path.write_text(
        "<h1>Top w1</h1>"
        + "<div>" * depth
        + "deep <b>w2</b> text"
        + "</div>" * depth
        + "<h2>After w3</h2><p>later w4</p>",
        encoding="utf-8",
    )
    return path


def test_deeply_nested_html_is_read_in_full(tmp_path: Path) -> None:
    extracted = assert_nothing_lost(_deep_html(tmp_path / "deep.html", 5000))
    assert [s.locator for s in extracted.sections] == [
        "section=Top w1",
        "section=Top w1 > After w3",
    ]


def test_reverse_proof_a_recursive_tree_walk_fails_on_deep_html(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(html, "load", html_tree_reference.load)
    with pytest.raises(AssertionError, match="refused"):
        assert_nothing_lost(_deep_html(tmp_path / "deep.html", 5000))


_TAGS = [
    "div", "p", "span", "b", "h1", "h2", "h3", "table", "tbody", "tr", "td", "th", "pre",
    "script", "style", "title", "head", "ul", "li", "br", "img", "ruby", "rt", "noscript",
    "caption", "textarea", "section", "hr",
]  # fmt: skip
_token = st.one_of(
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(["td", "th"]).map(lambda t: f'<{t} colspan="2">'),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(["<br/>", "<div/>", "<!-- note -->", "<![CDATA[raw]]>", "<!DOCTYPE html>"]),
    st.sampled_from(["w1", "w2 w3", " ", "\n", "  \n ", "a &amp; b", "&lt;x&gt;", "caf&#233;"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_token, max_size=40))
def test_streaming_html_reads_what_the_tree_walk_read(tokens: list[str]) -> None:
    """The streaming reader bounds memory without changing what is read (the tree walk is
    the loader it replaced)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "page.html"
        path.write_text("".join(tokens), encoding="utf-8")
        streamed = _outcome(path)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(html, "load", html_tree_reference.load)
            walked = _outcome(path)
    assert streamed == walked
