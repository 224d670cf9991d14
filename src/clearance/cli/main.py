"""The ``clearance`` command. Errors are one line on stderr with an exit code, never a
traceback: 1 operational failure, 2 bad configuration or input, 3 not found."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from clearance import __version__
from clearance.cli import (
    access_cmds,
    ask_cmd,
    db_cmds,
    directory_source_cmds,
    docs_cmds,
    eval_cmd,
    facts_cmds,
    faq_cmds,
    ingest_cmds,
    init_cmd,
    mcp_cmd,
    migrate_cmd,
    note_cmds,
    search_cmd,
    serve_cmd,
    source_cmds,
    status_cmd,
    token_cmds,
    trace_cmds,
)
from clearance.cli.context import AppContext, emit_json, err_console, print_error
from clearance.cli.safe import terminal_safe
from clearance.errors import ClearanceError

__all__ = ["cli", "main", "run"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


for module in (
    init_cmd,
    ingest_cmds,
    docs_cmds,
    search_cmd,
    ask_cmd,
    status_cmd,
    db_cmds,
    migrate_cmd,
    access_cmds,
    directory_source_cmds,
    source_cmds,
    faq_cmds,
    facts_cmds,
    note_cmds,
    trace_cmds,
    eval_cmd,
    token_cmds,
    serve_cmd,
    mcp_cmd,
):
    module.register(cli)


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
