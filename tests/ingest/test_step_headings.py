"""Which sibling headings are steps (clearance.ingest.loaders.common.Outline): numbered in
order from 1, or each opening an item of one list. Their list is a section of its own after
the text above them; the sections under the headings are unchanged."""

from __future__ import annotations

import io

from clearance.config import IngestSettings
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders import html, markdown
from clearance.model import Section


def _md(text: str, room: int = 800) -> list[Section]:
    _, sections = markdown.load(
        io.BytesIO(text.encode()), room, FileBudget("a.md", IngestSettings())
    )
    return sections


def _steps(sections: list[Section]) -> list[Section]:
    return [s for s in sections if s.locator.endswith(",outline=steps")]


def test_numbered_headings_are_listed_under_the_heading_above_them() -> None:
    sections = _md(
        "# Set up a laptop\n\nDo these in order.\n\n## 1. Unbox it\n\nCheck the box. Keep it."
        "\n\n## 2. Charge it\n\nPlug it in.\n\n## 3. Log in\n\n- use your badge number\n"
    )
    (listed,) = _steps(sections)
    assert listed.locator == "section=Set up a laptop,outline=steps"
    assert listed.text == (
        "Set up a laptop\n1. Unbox it — Check the box.\n2. Charge it — Plug it in.\n3. Log in"
    )
    # after the text above them, before the first step's section, which is unchanged
    at = sections.index(listed)
    assert sections[at - 1].text == "Set up a laptop\nDo these in order."
    assert sections[at + 1].text == "1. Unbox it\nCheck the box. Keep it."


def test_without_room_for_first_sentences_only_the_headings_are_listed() -> None:
    text = "".join(f"## Step {n}: Part {n}\n\n{'Words here. ' * 10}\n\n" for n in (1, 2, 3))
    (listed,) = _steps(_md(f"---\ntitle: Guide\n---\n{text}", room=60))
    assert listed.locator == "section=(top),outline=steps"
    assert listed.text == "Guide\n1. Step 1: Part 1\n2. Step 2: Part 2\n3. Step 3: Part 3"


def test_headings_numbered_otherwise_or_not_at_all_are_no_steps() -> None:
    assert not _steps(_md("## 1 Purpose\n\nWhy.\n\n## 2 Policy\n\nWhat.\n"))
    assert not _steps(_md("## 2. Later\n\nA.\n\n## 3. Last\n\nB.\n"))  # not from 1
    assert not _steps(_md("## Values\n\nA.\n\n## Goals\n\nB.\n"))
    assert not _steps(_md("## 1. Only one\n\nA.\n\n## Other\n\nB.\n"))


def test_headings_opening_the_items_of_an_html_list_are_steps() -> None:
    page = (
        "<h3>How we hire</h3><p>What to expect:</p><ul>"
        "<li><h4>Apply</h4><p>Send your CV.</p></li>"
        "<li><div><h4>Interview</h4><p>Meet the team.</p></div></li></ul>"
        "<h3>Benefits</h3><p>Good ones.</p>"
    )
    _, sections = html.load(io.BytesIO(page.encode()), 800, FileBudget("a.html", IngestSettings()))
    (listed,) = _steps(sections)
    assert listed.locator == "section=How we hire,outline=steps"
    assert listed.text == "How we hire\n- Apply — Send your CV.\n- Interview — Meet the team."
