"""``clearance ingest`` and ``clearance remove``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from clearance.cli.context import (
    AppContext,
    console,
    emit_json,
    pass_app_json,
    printed_json,
    progress,
)
from clearance.cli.safe import safe, terminal_safe
from clearance.errors import NotFoundError

if TYPE_CHECKING:
    from clearance.ingest.pipeline import FileResult


#: How many files one failure's reason is printed for before the rest are counted.
_SHOWN = 3


def register(cli: click.Group) -> None:
    @cli.command("ingest")
    @click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
    @click.option(
        "--manifest", type=click.Path(dir_okay=False, path_type=Path), help="JSONL manifest."
    )
    @click.option("--corpus", help="Corpus for documents whose metadata names none.")
    @pass_app_json
    @click.pass_context
    def ingest(
        ctx: click.Context,
        app_ctx: AppContext,
        paths: tuple[Path, ...],
        manifest: Path | None,
        corpus: str | None,
        as_json: bool,
    ) -> None:
        """Ingest files and folders (and a manifest) into the index.

        Prints a line per failed or skipped file and per warning, with the reason (a failure
        shared by many files for the first three, then how many more it stopped), then a
        summary. A failed file never stops the others. Exits 2 if any metadata, manifest
        line or path was refused (bad input), else 1 if any file could not be read or stored.
        """
        if not paths and manifest is None:
            raise click.UsageError("give at least one PATH or --manifest")
        with app_ctx.acting("ingest", corpus or "(by metadata)") as (app, act):
            act.detail.update(
                paths=len(paths), manifest=None if manifest is None else manifest.name
            )
            if as_json:
                report = app.ingest(list(paths), manifest=manifest, corpus=corpus)
                emit_json(report.to_dict())
            else:
                with progress("ingesting") as bar:
                    task = bar.add_task("", total=None)

                    def planned(n: int) -> None:
                        bar.update(task, total=n)

                    # a failure's reason → the files it stopped: a reason shared by a
                    # folder's files (its corpus not configured) is printed for the first
                    # few, then counted. A skip's reason is about the file itself: every
                    # skipped file is named.
                    failures: Counter[str] = Counter()
                    first: dict[str, str] = {}  # reason → the first file it failed

                    def done(result: FileResult) -> None:
                        bar.update(task, advance=1, description=terminal_safe(result.source))
                        source = safe(result.source)
                        if result.status == "failed" and result.error:
                            failures[result.error] += 1
                            first.setdefault(result.error, source)
                        if result.status in ("failed", "skipped") and (
                            result.status == "skipped" or failures[result.error or ""] <= _SHOWN
                        ):
                            style = "red" if result.status == "failed" else "yellow"
                            error = _without_source(result.error or "", result.source)
                            reason = f": {safe(error)}" if error else ""
                            bar.console.print(
                                f"[{style}]{result.status}[/{style}] {source}{reason}"
                            )
                        for warning in result.warnings:
                            bar.console.print(f"[yellow]warning[/yellow] {source}: {safe(warning)}")

                    def working(source: str, where: str) -> None:
                        bar.update(task, description=terminal_safe(f"{source}: {where}"))

                    report = app.ingest(
                        list(paths),
                        manifest=manifest,
                        corpus=corpus,
                        on_plan=planned,
                        on_result=done,
                        on_progress=working,
                    )
                stopped = {e: n - _SHOWN for e, n in failures.items() if n > _SHOWN}
                for error, more in stopped.items():
                    files = "file" if more == 1 else "files"
                    # With two reasons or more, say which one: the first file it failed.
                    which = f" as {safe(first[error])}" if len(stopped) > 1 else ""
                    console.print(
                        f"[red]failed[/red] {more} more {files} for the same reason{which} "
                        "(--json lists each)"
                    )
                counts = report.counts
                table = Table(title="ingest summary", show_header=True)
                for status in counts:
                    table.add_column(status, justify="right")
                table.add_row(*(str(n) for n in counts.values()))
                console.print(table)
                console.print(f"{report.chunks_written} chunks written in this run")
                # About the run, not one file (a corpus left unsynced): last, where they are
                # read, not above the summary among each file's warnings.
                for warning in report.warnings:
                    console.print(f"[yellow]warning:[/yellow] {safe(warning)}")
            act.detail["counts"] = dict(report.counts)
        if report.failed:
            ctx.exit(report.exit_code)

    @cli.command("remove")
    @click.argument("doc_id")
    @pass_app_json
    def remove(app_ctx: AppContext, doc_id: str, as_json: bool) -> None:
        """Purge a document with its chunks and vectors."""
        with app_ctx.open() as app:
            if not app.remove(doc_id):
                raise NotFoundError(f"no document {doc_id!r} in the index")
        if not printed_json(as_json, {"removed": doc_id}):
            console.print(f"removed {safe(doc_id)}")


def _without_source(error: str, source: str) -> str:
    """``error`` without a leading copy of ``source``, which the line already names: a
    manifest line's errors start with the manifest's path and the line (``docs/m.jsonl:3:
    key 'acl': …`` for the source ``m.jsonl:3``)."""
    head, sep, rest = error.partition(": ")
    if sep and (head == source or head.endswith(("/" + source, "\\" + source))):
        return rest
    return error
