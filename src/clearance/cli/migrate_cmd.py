"""``clearance migrate --from sqlite:PATH --to postgres:DSN``: an index moved between
backends without re-embedding, verified at the end (:mod:`clearance.migrate`)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, emit_json, pass_app_json, progress
from clearance.cli.safe import safe, terminal_safe
from clearance.errors import ConfigError

if TYPE_CHECKING:
    from clearance.config import Settings
    from clearance.migrate import MigrationReport

__all__ = ["register"]


def _settings(app_ctx: AppContext) -> Settings:
    """The settings file when there is one (password variables, pool size, corpus SLAs),
    else the defaults: both ends are named on the command line."""
    from clearance.config import find_config, settings_from_dict

    if app_ctx.config is None and not find_config().is_file():
        return settings_from_dict({})
    return app_ctx.settings()


def _print_counts(report: MigrationReport) -> None:
    from clearance.migrate import summary_line

    verification = report.verification
    assert verification is not None
    table = Table("table", "source", "target")
    for name, counts in verification.counts.items():
        table.add_row(name, str(counts["source"]), str(counts["target"]))
    console.print(table)
    console.print(safe(summary_line(report)))


def register(cli: click.Group) -> None:
    @cli.command("migrate")
    @click.option("--from", "source", required=True, metavar="sqlite:PATH|postgres:DSN")
    @click.option("--to", "target", required=True, metavar="sqlite:PATH|postgres:DSN")
    @click.option(
        "--reader-dsn",
        default=None,
        metavar="DSN",
        help="The reading role of a PostgreSQL end, which the verification searches run as "
        "(default: [store] dsn). postgres:DSN itself is the owning, writing role.",
    )
    @click.option(
        "--append",
        is_flag=True,
        help="Continue into a target that already holds part of this source (an "
        "interrupted migration): documents already copied are skipped.",
    )
    @click.option("--force", is_flag=True, help="Empty a target that holds anything first.")
    @pass_app_json
    def migrate_cmd(
        app_ctx: AppContext,
        source: str,
        target: str,
        reader_dsn: str | None,
        append: bool,
        force: bool,
        as_json: bool,
    ) -> None:
        """Copy an index to another backend as stored — documents, ACLs, chunks, vectors
        (never re-embedded), facts, metadata and the synced directory, ACL sync times, FAQ,
        API tokens, sessions, source state and traces — one document per transaction, then
        verify: rows per table and every document compared, and a sample of searches for a
        few users must return the same chunks on both sides (else exit 1).

        The target must be empty unless --append or --force. A PostgreSQL target must
        have its schema (clearance db upgrade). Passwords come from the variables of
        [store] password_env / writer_password_env.

        JSON: {"from", "to", "documents", "copied", "skipped", "chunks_copied", "rows",
        "seconds", "verified", "verification": {"counts", "searches_compared", "users",
        "queries", "searches_skipped", "problems"}}."""
        from clearance.migrate import migrate, open_endpoint, parse_endpoint

        if append and force:
            raise ConfigError("--append and --force exclude each other")
        ends = parse_endpoint(source, "--from"), parse_endpoint(target, "--to")
        if ends[0] == ends[1]:
            raise ConfigError("--from and --to name the same index")
        settings = _settings(app_ctx)
        mode = "append" if append else "force" if force else "new"
        with ExitStack() as stack:
            opened = [
                open_endpoint(end, settings, reader_dsn=reader_dsn, must_exist=i == 0)
                for i, end in enumerate(ends)
            ]
            for store in opened:
                stack.callback(store.close)
            if as_json:
                report = migrate(opened[0], opened[1], settings, mode=mode)
                emit_json(report.to_dict())
                return
            with progress("migrating") as bar:
                task = bar.add_task("", total=None)

                def advance(done: int, total: int, doc_id: str) -> None:
                    bar.update(task, completed=done, total=total, description=terminal_safe(doc_id))

                report = migrate(opened[0], opened[1], settings, mode=mode, on_progress=advance)
            _print_counts(report)
