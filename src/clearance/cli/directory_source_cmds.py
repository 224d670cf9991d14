"""``clearance directory-source sync NAME|status``: identity providers as the directory."""

from __future__ import annotations

import click

from clearance.cli.context import (
    AppContext,
    console,
    pass_app_json,
    print_progress,
    printed_json,
    warn,
)
from clearance.cli.safe import safe


def _progress(what: str, count: int) -> None:
    print_progress(f"{what}: {count}")


def register(cli: click.Group) -> None:
    @cli.group("directory-source")
    def directory_source() -> None:
        """Identity providers whose users and groups are the directory
        (docs/directory-sources.md)."""

    @directory_source.command("sync")
    @click.argument("name")
    @pass_app_json
    @click.pass_context
    def sync(ctx: click.Context, app_ctx: AppContext, name: str, as_json: bool) -> None:
        """Read directory source NAME now and apply it as one directory version.

        Exits 1 if the read failed: nothing was applied, and the previous directory stays
        until its sla passes."""
        from clearance.sources.directory.service import (
            configured_directory_source,
            sync_directory_source,
        )

        with app_ctx.open() as app:
            configured_directory_source(app, name)
            report = sync_directory_source(app, name, progress=None if as_json else _progress)
        if not printed_json(as_json, report.to_dict()):
            verdict = "[green]ok[/green]" if report.ok else "[red]FAILED[/red]"
            console.print(
                f"{safe(report.source)} {safe(report.kind)}: {verdict} {report.users} users, "
                f"{report.groups} groups, {report.api_calls} API calls in {report.seconds:.1f}s"
            )
            if report.error:
                console.print(f"  [red]error:[/red] {safe(report.error)}")
            for warning in report.warnings:
                warn(warning)
        if not report.ok:
            ctx.exit(1)

    @directory_source.command("status")
    @pass_app_json
    def status(app_ctx: AppContext, as_json: bool) -> None:
        """Per directory source: last success, API calls, lag against its sla, last error,
        and whether it is failing closed (and why)."""
        from clearance.sources.directory.service import directory_source_status

        with app_ctx.open() as app:
            rows = directory_source_status(app)
        if printed_json(as_json, rows):
            return
        if not rows:
            console.print("no directory source configured ([directories.NAME] in clearance.toml)")
        for row in rows:
            state = "[red]failing closed[/red]" if row["failing_closed"] else "[green]ok[/green]"
            console.print(
                f"{safe(row['source'])} ({safe(row['kind'])}): {state}; last success "
                f"{safe(row['last_success'] or 'never')}, sla {row['sla_seconds']:g}s, "
                f"{row['users'] or 0} users, {row['groups'] or 0} groups, "
                f"{row['api_calls'] or 0} API calls"
            )
            if row["reason"]:
                console.print(f"  {safe(row['reason'])}")
            if row["last_error"]:
                console.print(f"  [red]last error:[/red] {safe(row['last_error'])}")
