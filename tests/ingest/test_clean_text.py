"""What a site generator or a mail client writes around a page is not its text: front matter
is the title and metadata, template tags and link syntax are gone (their words stay), an
e-mail's header block is titled by its subject."""

from __future__ import annotations

from pathlib import Path

import pytest

from clearance.ingest.loaders import extract, markdown
from clearance.ingest.loaders.markup import front_matter, plain_links, strip_templates

HANDBOOK = """---
title: "Parental leave"
layout: handbook-page
owner: people-ops
last_reviewed: 2025-02-01
tags: [leave, benefits]
---
{% include toc.html %}
{% comment %}
TODO(people-ops): confirm the 2026 figures with legal before publishing.
{% endcomment %}

# {{ page.title }}

Every employee may take [16 weeks of paid parental leave](/handbook/leave/#paid), whatever
their length of service. {% if site.region == "EU" %}Local law may add more.{% endif %}

<div class="callout">Tell your manager at least <b>8 weeks</b> before the leave starts.</div>

See [the benefits overview][benefits] for the rest.

[benefits]: /handbook/benefits/

```liquid
{% raw %}{{ page.title }}{% endraw %}
```
"""

HUGO = """+++
title = "Expense claims"
weight = 20
+++
{{< note >}}
Claims older than 90 days are refused.
{{< /note >}}

Submit a claim within 30 days of the expense. {{% notice tip %}}Photos of receipts are
accepted.{{% /notice %}}
"""

JEKYLL_HTML = """---
title: Office access
---
<html><body>
{% include header.html %}
<h1>{{ page.title }}</h1>
<p>Badges are issued by reception on your first day.</p>
</body></html>
"""

EMAIL = """From: IT Helpdesk <it-helpdesk@example.com>
To: All employees <all@example.com>
Date: Tue, 13 Oct 2026 09:30:00 +0900
Subject: [Maintenance] Okta upgrade, Saturday 17 October
Message-ID: <20261013093000.okta@example.com>

Dear colleagues,

We will upgrade the Okta tenant on Saturday 17 October from 22:00 to 24:00 JST.
Read the [change record](https://change.example.com/CHG-20417) for details.
"""


def load(tmp_path: Path, name: str, text: str) -> tuple[str | None, list[str], list[str]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    extracted = extract(path, max_chars=1200)
    return (
        extracted.title,
        [s.text for s in extracted.sections],
        [s.locator for s in extracted.sections],
    )


def test_a_handbook_pages_front_matter_is_its_title_and_liquid_is_not_text(
    tmp_path: Path,
) -> None:
    title, texts, _ = load(tmp_path, "parental-leave.md", HANDBOOK)
    assert title == "Parental leave"
    text = "\n".join(texts)
    for markup in ("layout:", "people-ops", "last_reviewed", "{%", "{{ page", "](", "<div", "<b>"):
        assert markup not in text.split("{% raw %}")[0], (markup, text)
    assert "TODO" not in text  # a comment block is not shown on the page
    assert "Every employee may take 16 weeks of paid parental leave, whatever" in text
    assert "Local law may add more." in text  # the text a condition wraps is kept
    assert "Tell your manager at least 8 weeks before the leave starts." in text
    assert "See the benefits overview for the rest." in text
    assert "{% raw %}{{ page.title }}{% endraw %}" in text  # fenced code is left as written


def test_toml_front_matter_and_hugo_shortcodes(tmp_path: Path) -> None:
    title, texts, _ = load(tmp_path, "expenses.md", HUGO)
    assert title == "Expense claims"
    text = "\n".join(texts)
    assert "weight" not in text and "{{" not in text and "+++" not in text, text
    assert "Claims older than 90 days are refused." in text
    assert "Photos of receipts are\naccepted." in text or "Photos of receipts are" in text


def test_an_unrendered_html_page_reads_as_it_would_show(tmp_path: Path) -> None:
    title, texts, _ = load(tmp_path, "office.html", JEKYLL_HTML)
    assert title == "Office access"
    text = "\n".join(texts)
    assert "{%" not in text and "{{" not in text and "title:" not in text, text
    assert "Badges are issued by reception on your first day." in text


def test_an_email_exports_subject_is_its_title(tmp_path: Path) -> None:
    title, texts, locators = load(tmp_path, "okta.txt", EMAIL)
    assert title == "[Maintenance] Okta upgrade, Saturday 17 October"
    # The headers stay searchable (answers never quote them: tests/llm/test_extractive_clean).
    assert texts[0].startswith("From: IT Helpdesk"), texts
    assert "Read the change record for details." in "\n".join(texts)
    assert locators[0].startswith("lines=1-")


def test_a_text_file_without_mail_headers_keeps_every_line(tmp_path: Path) -> None:
    notes = "Note: bring your badge.\nFrom the lobby, take the lift to floor 3.\n"
    title, texts, _ = load(tmp_path, "notes.txt", notes)
    assert title is None
    assert texts == [notes.strip()]


def test_front_matter_that_does_not_parse_is_still_not_text() -> None:
    fields, text = front_matter("---\ntitle: [unclosed\n---\nBody text.\n")
    assert fields == {}
    assert text == "\n\n\nBody text.\n"
    assert strip_templates("a {{ page.owner }} b", {"owner": "Ops"}) == "a Ops b"


def test_a_tag_that_only_shows_its_string_becomes_that_string() -> None:
    """ "post in {% slack_channel "people-ops" %} or email …" (the TTS handbook) reads
    "post in people-ops or email …", and a page link's target tag leaves the link's label.
    Reverse proof: control and include tags, with or without a quoted argument, leave
    nothing; the line count is kept."""
    text = (
        'post in {% slack_channel "people-ops" %} or email us\n'
        "[FMLA]({% page 'travel-and-leave/fmla' %}) leave\n"
        '{% include "step-indicator.html" %}\n'
        '{% if site.x == "y" %}shown{% endif %}\n'
    )
    out = strip_templates(text)
    assert out.splitlines()[0] == "post in people-ops or email us"
    assert plain_links(out).splitlines()[1] == "FMLA leave"
    assert "step-indicator" not in out and "site.x" not in out and "shown" in out
    assert out.count("\n") == text.count("\n")


BOLD_HEADINGS = """# Benefits

## Health

<details>
<summary><strong>Annual health check</strong></summary>

**Overview**

Every team member may have one health check a year.

**Key features**

GitLab reimburses up to JPY 15,000 a year.

**Note:** bring your insurance card.

</details>

**Contact**

Write to total-rewards@example.com.
"""


def test_bold_lines_and_a_details_summary_are_headings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Handbooks title their parts with a bold line of its own ("**Key features**") and
    fold them into <details> whose <summary> names them: those are headings, so the
    locator says where a passage stands and no answer starts with "Overview". A bold
    label opening a sentence ("**Note:** bring …") is text. A bold line labels a part of
    the topic above it, so the line above its text names that topic too: "Annual health
    check — Key features" is found by a question about the health check, which "Key
    features" alone never was. Reverse proof: the same page read with bold lines as text
    glues "Key features" to the sentence after it."""
    _, texts, locators = load(tmp_path, "benefits.md", BOLD_HEADINGS)
    assert locators == [
        "section=Benefits > Health > Annual health check > Overview",
        "section=Benefits > Health > Annual health check > Key features",
        "section=Benefits > Health > Contact",
    ], locators
    assert texts[1] == (
        "Annual health check — Key features\nGitLab reimburses up to JPY 15,000 a year.\n"
        "Note: bring your insurance card."
    ), texts
    assert texts[0] == (
        "Annual health check — Overview\nEvery team member may have one health check a year."
    )
    assert texts[2] == "Health — Contact\nWrite to total-rewards@example.com."
    monkeypatch.setattr(markdown, "_bold_heading", lambda token, text: False)
    _, texts, locators = load(tmp_path, "benefits.md", BOLD_HEADINGS)
    assert "Key features\nGitLab reimburses" in "\n".join(texts)
    assert "section=Benefits > Health > Annual health check > Key features" not in locators


LODGING = """# Travel

## Lodging

We advise spending within reason for the location you are visiting, with a $300 USD per
night maximum spend limit (including taxes, fees, and parking).

> [!NOTE]
> Spending over $300 USD per night requires additional approvals from Finance.

> [!WARNING] Book early
> Rates double in the week of the offsite.

> [!tip]- Receipts
> Keep them until the claim is paid.

> A quote that names [!NOTE] in passing keeps it as written.
"""


def test_an_alert_or_callout_reads_as_its_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handbook's "> [!NOTE]" block quote shows as a "Note" box, and an answer quoting it
    said "[!NOTE] Spending over $300 USD per night requires …". The marker reads as the
    label GitHub shows (Obsidian's callouts, any word and folded, likewise), a callout's
    title stays after it, and the marker anywhere but at a quote's start is text. Reverse
    proof: read without the alert rule, the marker is in the text again."""
    _, texts, _ = load(tmp_path, "travel.md", LODGING)
    text = "\n".join(texts)
    assert "Note: Spending over $300 USD per night requires additional approvals" in text
    assert "Warning: Book early\nRates double" in text
    assert "Tip: Receipts\nKeep them" in text
    assert "[!WARNING]" not in text and "[!tip]" not in text
    assert "A quote that names [!NOTE] in passing keeps it as written." in text
    monkeypatch.setattr(markdown, "_alert", lambda text: text)
    _, texts, _ = load(tmp_path, "travel.md", LODGING)
    assert "[!NOTE]" in "\n".join(texts).split("in passing")[0]


SEVERITY = """# Severity levels {#severity-levels}

Incidents are classified by severity.

!!! tip "Always Assume The Worst"
     If you are unsure which level an incident is, **treat it as the higher one**.

!!! question "Can a SEV-3 be a major incident?"
     All SEV-2's are major incidents.

!!! note
    Check the status page first.

    - Post in Slack.
    - Page the IC.

See [Failure Friday](https://example.com/ff){:target="_blank" } for testing.

## Alert priority {: #priority .wide }

???+ warning "High Priority Alerts"
    Anything that wakes up a human must be actionable.

```
config = {:keep => "this"}
```
"""


def test_a_mkdocs_admonition_reads_as_the_box_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PagerDuty's incident response docs (MkDocs) write notes as admonitions, and their
    text was indexed as '!!! tip "Always Assume The Worst"' with the body run on after it.
    An admonition reads as the box shows it: its title (else its kind) opening its body,
    whose list stays a list. Reverse proof: without the rule, the markers are text again."""
    _, texts, _ = load(tmp_path, "severity.md", SEVERITY)
    text = "\n".join(texts)
    assert "Always Assume The Worst:\nIf you are unsure which level an incident is" in text
    assert "Can a SEV-3 be a major incident?\nAll SEV-2's are major incidents." in text
    assert "Note:\nCheck the status page first.\n- Post in Slack.\n- Page the IC." in text
    assert "High Priority Alerts:\nAnything that wakes up a human" in text
    assert "!!!" not in text and "???" not in text
    monkeypatch.setattr(markdown, "_admonitions", lambda lines: lines)
    _, texts, _ = load(tmp_path, "severity.md", SEVERITY)
    assert '!!! tip "Always Assume The Worst"' in "\n".join(texts)


def test_an_attribute_list_is_markup_not_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heading's custom id ("## 試用期間 {#probation-period}", as Hugo and MkDocs pages
    write them) was part of the section's name in every locator, and a link's
    "{:target="_blank" }" part of the sentence quoted. Both are markup; code keeps what it
    says. Reverse proof: read as text, they are back."""
    title, texts, locators = load(tmp_path, "severity.md", SEVERITY)
    text = "\n".join(texts)
    assert title == "Severity levels"
    assert "section=Severity levels > Alert priority" in locators
    assert "See Failure Friday for testing." in text
    assert "{:" not in text.replace('{:keep => "this"}', "") and "{#" not in text
    assert 'config = {:keep => "this"}' in text
    monkeypatch.setattr(markdown, "_attributes_dropped", lambda text, after_link: text)
    monkeypatch.setattr(markdown, "_TRAILING_ATTRIBUTES", markdown.re.compile(r"(?!x)x"))
    title, texts, _ = load(tmp_path, "severity.md", SEVERITY)
    assert title == "Severity levels {#severity-levels}"
    assert '{:target="_blank" }' in "\n".join(texts)


BRACES = """# Settings

Set {x=1} in prose, pass {a=1, b=2} and cite {#1}: these are text.

!!! note "Outer"
    Outer body.

    !!! warning "Inner"
        Inner body.

```
!!! note "Example"
    code stays as written
```
"""


def test_braces_and_admonitions_that_are_text_or_code_stay(tmp_path: Path) -> None:
    """Braces in prose that are no attribute list after a heading, a paragraph or a link
    stay text; an admonition inside another is read in turn; one inside fenced code is
    code, left as written."""
    _, texts, _ = load(tmp_path, "settings.md", BRACES)
    text = "\n".join(texts)
    assert "Set {x=1} in prose, pass {a=1, b=2} and cite {#1}: these are text." in text
    assert "Outer:\nOuter body.\nInner:\nInner body." in text
    assert '!!! note "Example"\n    code stays as written' in text


ERB_PAGE = """---
title: Code freezes
owner_slack: "#ops"
---
# <%= current_page.data.title %>

<%# a note for the site's authors %>
<% if current_page.data.review_by %>Reviewed yearly.<% end %>
Code freezes introduce many risks. Ask in <%= current_page.data.owner_slack %>.

<%= partial "footer" %>

```erb
<%= keep.this %>
```
"""


def test_a_middleman_page_s_erb_tags_are_read_as_a_site_renders_them(tmp_path: Path) -> None:
    """The Ministry of Justice's technical guidance writes every page's heading as
    ``# <%= current_page.data.title %>`` in ``.html.md.erb`` files: the tags were indexed
    as text, and every section cited under "<% current_page.data.title %>"."""
    out = strip_templates(ERB_PAGE, {"title": "Code freezes", "owner_slack": "#ops"}, erb=True)
    assert "# Code freezes\n" in out
    assert "Reviewed yearly." in out and "<%" not in out.split("```")[0]
    assert "Ask in #ops." in out
    assert "partial" not in out and "a note for" not in out
    assert "<%= keep.this %>" in out  # fenced code is left as written
    assert out.count("\n") == ERB_PAGE.count("\n")

    title, texts, locators = load(tmp_path, "code-freezes.html.md.erb", ERB_PAGE)
    assert title == "Code freezes"
    assert any("Code freezes introduce many risks" in t for t in texts)
    assert not any("current_page" in t for t in texts)
    assert all("<%" not in loc for loc in locators), locators


def test_erb_is_text_outside_an_erb_page_and_a_tag_keeps_its_lines(tmp_path: Path) -> None:
    """A page about ERB writes "<%" in inline code: outside an ``.erb`` file it is text,
    and nothing between two such spans is lost. A tag spanning lines keeps them."""
    about = "Open a tag with `<%`.\n\n## Expenses\nClaims are due within 30 days.\n\nClose: `%>`."
    assert strip_templates(about, {}) == about
    _, texts, _ = load(tmp_path, "erb-howto.md", about)
    assert any("Claims are due within 30 days." in t for t in texts)

    spanning = "<%= current_page\n .data['title'] %>\nnext"
    out = strip_templates(spanning, {"title": "Code\nfreezes"}, erb=True)
    assert out == "Code freezes\n\nnext"


def test_only_templated_markdown_is_read_of_erb_files(tmp_path: Path) -> None:
    from clearance.ingest.loaders import file_format, file_stem

    assert file_stem(Path("a/code-freezes.html.md.erb")) == "code-freezes"
    assert file_stem(Path("notes.md.erb")) == "notes" and file_stem(Path("x.md")) == "x"

    assert file_format(Path("a/code-freezes.html.md.erb")) == "md"
    assert file_format(Path("NOTES.MARKDOWN.ERB")) == "md"
    assert file_format(Path("layout.html.erb")) is None
    assert file_format(Path("x.erb")) is None
    assert file_format(Path("x.md")) == "md"
