"""The ``clearance`` command. Errors are one line on stderr with an exit code, never a
traceback: 1 operational failure, 2 bad configuration or input, 3 not found."""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any

import click

from clearance import __version__
from clearance.cli.context import AppContext, emit_json, err_console, print_error
from clearance.cli.safe import terminal_safe
from clearance.errors import ClearanceError

__all__ = ["COMMANDS", "cli", "main", "run"]

#: The module of ``clearance.cli`` that defines each command. A module registers its
#: commands when one of them is run, asked for help or listed, so running a command does not
#: load the others and what they import (``tests/cli/test_command_table.py`` holds this table
#: to what the modules register).
COMMANDS = {
    "acl": "access_cmds",
    "ask": "ask_cmd",
    "audit": "trace_cmds",
    "db": "db_cmds",
    "directory": "access_cmds",
    "directory-source": "directory_source_cmds",
    "docs": "docs_cmds",
    "eval": "eval_cmd",
    "explain": "access_cmds",
    "facts": "facts_cmds",
    "faq": "faq_cmds",
    "ingest": "ingest_cmds",
    "init": "init_cmd",
    "mcp": "mcp_cmd",
    "migrate": "migrate_cmd",
    "note": "note_cmds",
    "remove": "ingest_cmds",
    "search": "search_cmd",
    "serve": "serve_cmd",
    "source": "source_cmds",
    "stats": "trace_cmds",
    "status": "status_cmd",
    "sync": "source_cmds",
    "token": "token_cmds",
    "trace": "trace_cmds",
}


class _Commands(click.Group):
    """The ``clearance`` group: each command is registered by its module (:data:`COMMANDS`)
    on first use, so help, errors and the commands themselves are those the modules
    define."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registered: set[str] = set()

    def _register(self, modules: set[str]) -> None:
        for module in sorted(modules - self._registered):
            importlib.import_module(f"clearance.cli.{module}").register(self)
            self._registered.add(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            self._register({COMMANDS[cmd_name]})
        else:
            # No command has this name (a typo): with every command registered, the error
            # suggests the closest ones, as it always has.
            self._register(set(COMMANDS.values()))
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._register(set(COMMANDS.values()))
        return super().list_commands(ctx)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Configuration file (else $CLEARANCE_HOME/clearance.toml, else ./clearance.toml).",
)
@click.version_option(__version__, prog_name="clearance")
@click.pass_context
def cli(ctx: click.Context, config: Path | None) -> None:
    """Clearance: answers only from what the asker may read, with every source cited."""
    ctx.obj = AppContext(config)


class _SafeFormatter(logging.Formatter):
    """Log lines quote file names and ids too: nothing in them may act on the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record), multiline=True)


def _configure_logging() -> None:
    """Clearance's own warnings go to stderr, made terminal-safe; third-party chatter
    (pypdf's complaints about a corrupt file, which the loader already reports as one clear
    error) stays quiet."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    logger = logging.getLogger("clearance")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(_SafeFormatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code; no process-wide side effects, so it can be
    called in-process (tests, embedding). The console script is :func:`run`."""
    args = sys.argv[1:] if argv is None else argv
    try:
        rc = cli.main(args=args, prog_name="clearance", standalone_mode=False)
    except ClearanceError as exc:
        if "--json" in args:
            emit_json(exc.to_dict())
        for problem in exc.problems:
            print_error(problem)
        return exc.exit_code
    except click.exceptions.Abort:
        err_console.print("aborted")
        return 130
    except click.ClickException as exc:
        print_error(exc.format_message())
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    return rc if isinstance(rc, int) else 0


def run() -> None:
    """The ``clearance`` console script: configure logging for a terminal, then exit."""
    _configure_logging()
    sys.exit(main())


if __name__ == "__main__":
    run()
