"""Shared plumbing for CLI commands: finding the config, opening the service, printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from clearance.cli.safe import make_console, safe, terminal_safe

if TYPE_CHECKING:
    from rich.progress import Progress
    from rich.table import Table

    from clearance.app import Clearance
    from clearance.config import Settings
    from clearance.trace.actions import Recorder

__all__ = [
    "EXISTING_FILE",
    "AppContext",
    "console",
    "emit_json",
    "err_console",
    "folded_table",
    "json_option",
    "pass_app",
    "pass_app_json",
    "print_error",
    "print_progress",
    "printed_json",
    "progress",
    "warn",
]

#: Human output. Data goes through :func:`clearance.cli.safe.safe` before it is printed.
console = make_console()
err_console = make_console(stderr=True)


@dataclass
class AppContext:
    config: Path | None

    def settings(self) -> Settings:
        from clearance.config import load_settings

        return load_settings(self.config)

    @contextmanager
    def open(self) -> Iterator[Clearance]:
        from clearance.app import Clearance

        app = Clearance.open(self.settings())
        try:
            yield app
        finally:
            app.close()

    @contextmanager
    def acting(self, action: str, target: str) -> Iterator[tuple[Clearance, Recorder]]:
        """:meth:`open`, with the block recorded as an administrator action of
        :func:`cli_actor` (its outcome, and the detail the block adds to the recorder)."""
        with self.open() as app, app.actions().action(cli_actor(), action, target) as act:
            yield app, act


pass_app = click.make_pass_decorator(AppContext)


def emit_json(data: Any) -> None:
    """Machine-readable output: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def printed_json(as_json: bool, data: Any) -> bool:
    """With ``--json``: ``data`` printed by :func:`emit_json`, and ``True`` so the command
    skips its human output; without it, nothing printed and ``False``."""
    if as_json:
        emit_json(data)
    return as_json


def progress(label: str) -> Progress:
    """The progress bar of long commands: ``label``, bar, n of m, time, and the current
    item's name as plain text (never markup or emoji codes). ``label`` may name a task
    field (``{task.fields[stage]}``). Gone from the terminal when done."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", markup=False),
        console=console,
        transient=True,
    )


def print_progress(message: str) -> None:
    """A line of progress on stderr, dimmed and printed as its literal text."""
    err_console.print(terminal_safe(message), style="dim", markup=False, highlight=False)


def warn(message: str) -> None:
    """A warning on stderr, one line, after the result it qualifies."""
    err_console.print(f"[yellow]warning:[/yellow] {safe(message)}")


def folded_table(*columns: str, **options: Any) -> Table:
    """A table with a header whose long cells break across lines within their column
    instead of being cut off with "…": the ids it shows are needed whole ('trace show',
    'explain', 'remove' and 'docs show' take them)."""
    from rich.table import Table

    table = Table(show_header=True, **options)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def print_error(message: str) -> None:
    """The one-line error on stderr: ``error: MESSAGE``, with the message made safe (it
    may quote a file name or an id, and must not break onto a second line)."""
    err_console.print(f"[red]error:[/red] {safe(message)}")


def json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")(func)


def pass_app_json(func: Any) -> Any:
    """What nearly every command takes: the :class:`AppContext` and, last of its options,
    ``--json`` (``as_json``)."""
    return json_option(pass_app(func))


#: An argument naming a file that must exist.
EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


#: What omitting ``--assistant`` means, shared by every command that takes it.
ASSISTANT_HELP = (
    "Without it, no assistant narrows anything: every corpus, each under its own "
    "max_sensitivity; the user's permissions apply either way. An unknown name exits 3, "
    "and so does omitting it where [access] require_assistant = true."
)


def not_blank(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The callback of a QUESTION or QUERY argument: one left empty or blank is a slip at
    the command line, not a question. The engine answers a question with nothing to
    search for as it answers any it has no source for, which here would read as if the
    documents held nothing."""
    if not value.strip():
        raise click.UsageError(f"{param.human_readable_name} is empty", ctx)
    return value


def cli_actor() -> str:
    """Who runs an administrator command, for the action log: ``cli:<os user>``."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment
        return "cli:unknown"
