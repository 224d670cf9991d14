"""Invariant: nothing a document contains acts on the operator's terminal.

Titles, ids, file names and text are printed as their literal text: control characters,
bidi overrides and other invisible format characters are shown as escapes (``\\x1b``,
``\\u202e``), rich markup in data stays literal and emoji codes are never replaced
(``wiki:a:b:c`` must not print as ``wiki🅰b:c``). The reverse proofs run the same commands
through a printer without escaping, and through the old emoji-replacing console, and show
that the same checks reject them.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console

from clearance.cli import safe as safe_module
from clearance.cli.safe import safe, terminal_safe
from clitools import Run

HOSTILE = "\x1b[2J \x07 \u202e root:x:0:0 wiki:a:b:c [bold]x[/bold]"
TITLE = "Quarterly\nreport " + HOSTILE
REPORT = "report\x1b[2J\x07\u202e.md"  # a file name is data too


@pytest.fixture
def hostile(run: Run, project: Path) -> Run:
    """The CLI fixture's index plus documents whose names, titles and text are hostile."""
    docs = project / "docs"
    (docs / "wiki.md").write_text(f"Budget figures {HOSTILE} for the offsite.\n", "utf-8")
    (docs / "wiki.md.meta.json").write_text(
        json.dumps({"doc_id": "wiki:a:b:c", "title": TITLE}), encoding="utf-8"
    )
    (docs / REPORT).write_text(f"# Offsite {HOSTILE}\n\nOffsite budget {HOSTILE}.\n", "utf-8")
    (docs / "skip\x1b[2J.xyz").write_text("unsupported", encoding="utf-8")
    rc, _, _ = run("directory", "sync", str(project / "directory.json"))
    assert rc == 0
    return run


def problems(text: str, *, expect: tuple[str, ...] = ("wiki:a:b:c",)) -> list[str]:
    """Everything wrong with one command's human output (empty: safe and literal)."""
    found = [
        f"raw U+{ord(c):04X}"
        for c in sorted(set(text))
        if c not in "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]
    found += [f"missing literal {s!r}" for s in expect if s not in text]
    found += ["emoji replaced"] * ("🅰" in text or "❌" in text)
    return found


def outputs(run: Run, project: Path) -> dict[str, str]:
    """The human output (stdout + stderr) of every command the invariant covers."""
    commands: dict[str, tuple[str, ...]] = {
        "ingest": ("ingest", str(project / "docs")),
        "search": ("search", "offsite budget", "--user", "ann"),
        "ask": ("ask", "What is the offsite budget?", "--user", "ann"),
        "docs list": ("docs", "list"),
        "explain": ("explain", "--user", "ann", "--doc", "wiki:a:b:c"),
        "explain file name": ("explain", "--user", "ann", "--doc", f"files:{REPORT}"),
        "error": ("docs", "show", "wiki:a:b:c\n\x1b[2J[bold]x[/bold]"),
    }
    out = {name: "".join(run(*argv)[1:]) for name, argv in commands.items()}
    missing = project / "wiki:a:b:c\n\x1b[2J[bold]x[/bold].toml"
    out["config error"] = "".join(run("--config", str(missing), "status", config=False)[1:])
    return out


def test_document_data_never_acts_on_the_terminal(hostile: Run, project: Path) -> None:
    out = outputs(hostile, project)

    for name, text in out.items():
        expect = {
            "ingest": ("skip\\x1b[2J.xyz",),
            "explain file name": ("report\\x1b[2J",),
        }.get(name, ("wiki:a:b:c",))
        assert problems(text, expect=expect) == [], (name, text)
    # Data is shown, visibly escaped, not dropped.
    for name in ("search", "ask"):
        assert "Quarterly\\x0areport \\x1b[2J \\x07 \\u202e root:x:0:0" in out[name], name
        assert "[bold]x[/bold]" in out[name], name
    assert "skipped skip\\x1b[2J.xyz: unsupported file type" in out["ingest"]
    assert "files:report\\x1b[2J\\x07\\u202e.md" in out["explain file name"]
    assert out["error"] == (
        "error: no document 'wiki:a:b:c\\n\\x1b[2J[bold]x[/bold]' in the index\n"
    )
    assert out["config error"].startswith(
        f"error: no configuration at {project}/wiki:a:b:c\\x0a\\x1b[2J[bold]x[/bold].toml:"
    )
    assert out["config error"].count("\n") == 1
    for token in ("root:x:0:0", "[bold]x[/bold]", "\\u202e"):
        assert token in out["docs list"]


def test_the_json_output_keeps_the_exact_data(hostile: Run, project: Path) -> None:
    hostile("ingest", str(project / "docs"))

    rc, rows = hostile.json("docs", "list")

    assert rc == 0
    assert {d["doc_id"]: d["title"] for d in rows}["wiki:a:b:c"] == TITLE


def _patch_everywhere(monkeypatch: pytest.MonkeyPatch, name: str, old: object, new: object) -> int:
    """Rebind ``name`` in every CLI module that imported ``old`` (they use ``from … import``)."""
    patched = 0
    for module in list(sys.modules.values()):
        if module.__name__.startswith("clearance.cli") and getattr(module, name, None) is old:
            monkeypatch.setattr(module, name, new)
            patched += 1
    return patched


def _unescaped(value: object, *, multiline: bool = False) -> str:
    """The leaky stub: prints data as it came."""
    return str(value)


def test_reverse_proof_an_unescaping_printer_is_rejected(
    hostile: Run, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _patch_everywhere(monkeypatch, "safe", safe, _unescaped) > 5
    assert _patch_everywhere(monkeypatch, "terminal_safe", terminal_safe, _unescaped) >= 1

    out = outputs(hostile, project)

    assert "raw U+001B" in problems(out["search"])
    assert "raw U+202E" in problems(out["ask"])
    assert "raw U+001B" in problems(out["explain file name"])
    assert "raw U+001B" in problems(out["ingest"])
    assert "raw U+001B" in problems(out["config error"])
    assert out["config error"].count("\n") == 2  # the one-line error is broken
    assert "[bold]x[/bold]" not in out["search"]  # read as markup: the data is rewritten


def test_reverse_proof_an_emoji_replacing_console_is_rejected(
    hostile: Run, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clearance.cli import context

    old = Console(highlight=False, soft_wrap=True)  # the console before: emoji codes on
    assert _patch_everywhere(monkeypatch, "console", context.console, old) > 5

    out = outputs(hostile, project)

    for name in ("search", "ask", "docs list", "explain"):
        assert "emoji replaced" in problems(out[name]), name
        assert "missing literal 'wiki:a:b:c'" in problems(out[name]), name


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ("plain text, ünïcode, 日本語", "plain text, ünïcode, 日本語"),
        ("a\x1b[2Jb", "a\\x1b[2Jb"),
        ("bell\x07 cr\r nul\x00 del\x7f c1\x9b", "bell\\x07 cr\\x0d nul\\x00 del\\x7f c1\\x9b"),
        ("line\nbreak\ttab", "line\\x0abreak\\x09tab"),
        ("\u202aembed\u202c \u2066isolate\u2069 \u202eoverride", None),
        ("zero\u200bwidth\u200d joiner\ufeff bom\u00ad", None),
        ("sep\u2028line\u2029para", "sep\\u2028line\\u2029para"),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("lone surrogate \udcff", "lone surrogate \\udcff"),
    ],
)
def test_terminal_safe_shows_every_unsafe_character(data: str, shown: str | None) -> None:
    result = terminal_safe(data)

    assert problems(result, expect=()) == []
    if shown is not None:
        assert result == shown
    assert "\\u202e" in terminal_safe("\u202e") and "\\u2066" in terminal_safe("\u2066")


def test_multiline_text_keeps_its_newlines_and_tabs_only() -> None:
    assert terminal_safe("a\nb\tc\r\n\x1b", multiline=True) == "a\nb\tc\\x0d\n\\x1b"


def test_safe_also_escapes_markup_and_the_consoles_never_replace_emoji() -> None:
    data = "[bold]x[/bold] wiki:a:b:c root:x:0:0 C:\\dir\\"
    console = safe_module.make_console()
    with console.capture() as captured:
        console.print(f"[bold]{safe(data)}[/bold]")

    assert captured.get() == data + "\n"
