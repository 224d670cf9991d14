"""``clearance source list|sync|status`` and ``clearance sync --all|--watch``."""

from __future__ import annotations

import json
import sys
import threading
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from clearance.sources.sync import SyncReport


def _print_report(report: SyncReport) -> None:
    counts = ", ".join(f"{n} {what}" for what, n in sorted(report.counts.items()) if n)
    verdict = "[green]ok[/green]" if report.ok else "[red]FAILED[/red]"
    console.print(f"{safe(report.source)} {report.kind}: {verdict} {safe(counts or 'no changes')}")
    if report.error:
        console.print(f"  [red]error:[/red] {safe(report.error)}")
    for error in report.item_errors:
        console.print(f"  [red]failed[/red] {safe(error)}")
    for warning in report.warnings:
        warn(warning)


def _print_status(rows: list[dict[str, Any]]) -> None:
    if not rows:
        console.print("no sources configured ([sources.NAME] in clearance.toml)")
    for row in rows:
        style = {"ok": "green", "failing": "red", "behind": "red"}.get(row["state"], "yellow")
        lag = "-" if row["lag_seconds"] is None else f"{row['lag_seconds']:g}s"
        console.print(
            f"{safe(row['source'])} ({safe(row['kind'] or '?')} → corpus {safe(row['corpus'])}): "
            f"[{style}]{row['state']}[/{style}]; {row['documents']} documents; permission lag "
            f"{lag} of SLA {row['revocation_sla_seconds']:g}s"
        )
        console.print(
            f"  last content sync {safe(row['last_content_sync'] or 'never')}, "
            f"last permission sync {safe(row['last_permission_sync'] or 'never')}"
        )
        if row["last_error"]:
            console.print(f"  [red]last error:[/red] {safe(row['last_error'])}")
        if row["visible_to_nobody"]:
            console.print(f"  {row['visible_to_nobody']} documents visible to nobody:")
            for example in row["visible_to_nobody_examples"]:
                console.print(f"    {safe(example['doc_id'])}: {safe(example['reason'])}")
        for warning in row["warnings"]:
            console.print(f"  [yellow]warning:[/yellow] {safe(warning)}")


def register(cli: click.Group) -> None:
    @cli.group("source")
    def source() -> None:
        """Connectors that keep a corpus in step with a source system (docs/sources.md)."""

    @source.command("list")
    @pass_app_json
    def source_list(app_ctx: AppContext, as_json: bool) -> None:
        """The configured sources: kind, corpus and sync intervals (never credentials)."""
        settings = app_ctx.settings()
        rows = [
            {
                "source": s.name,
                "kind": s.kind,
                "corpus": s.corpus,
                "content_interval_seconds": s.content_interval_s,
                "permission_interval_seconds": s.permission_interval_s,
                "max_concurrency": s.max_concurrency,
            }
            for s in sorted(settings.sources.values(), key=lambda s: s.name)
        ]
        if printed_json(as_json, rows):
            return
        if not rows:
            console.print("no sources configured ([sources.NAME] in clearance.toml)")
        for row in rows:
            console.print(
                f"{safe(row['source'])}: {safe(row['kind'])} → corpus {safe(row['corpus'])}, "
                f"content every {row['content_interval_seconds']:g}s, permissions every "
                f"{row['permission_interval_seconds']:g}s"
            )

    @source.command("sync")
    @click.argument("name")
    @click.option("--content", "only_content", is_flag=True, help="Only the content sync.")
    @click.option(
        "--permissions", "only_permissions", is_flag=True, help="Only the permission sync."
    )
    @pass_app_json
    @click.pass_context
    def source_sync(
        ctx: click.Context,
        app_ctx: AppContext,
        name: str,
        only_content: bool,
        only_permissions: bool,
        as_json: bool,
    ) -> None:
        """Sync source NAME now: content (changed items only), then permissions.

        Exits 1 if a sync failed: the source is then reported failing, and nothing it had
        not finished was changed."""
        from clearance.sources.service import configured_source, sync_source

        if only_content and only_permissions:
            raise click.UsageError("give --content or --permissions, not both")
        with app_ctx.open() as app:
            configured_source(app, name)
            reports = sync_source(
                app,
                name,
                content=not only_permissions,
                permissions=not only_content,
                on_progress=None if as_json else print_progress,
            )
        _finish(ctx, reports, as_json)

    @source.command("status")
    @click.argument("name", required=False)
    @pass_app_json
    def status(app_ctx: AppContext, name: str | None, as_json: bool) -> None:
        """Per source: last content and permission syncs, lag against the corpus's SLA, the
        last error, documents visible to nobody (and why) and principals the directory lacks."""
        from clearance.sources.service import configured_source, source_status

        with app_ctx.open() as app:
            if name is not None:
                configured_source(app, name)
            rows = [r for r in source_status(app) if name is None or r["source"] == name]
        if not printed_json(as_json, rows):
            _print_status(rows)

    @cli.command("sync")
    @click.option("--all", "sync_all", is_flag=True, help="Sync every configured source once.")
    @click.option(
        "--watch",
        is_flag=True,
        help="Keep syncing every source on its intervals until interrupted.",
    )
    @pass_app_json
    @click.pass_context
    def sync(
        ctx: click.Context, app_ctx: AppContext, sync_all: bool, watch: bool, as_json: bool
    ) -> None:
        """Sync every configured source: once (--all, for cron), or continuously (--watch).

        --watch syncs permissions every permission_interval and content every
        content_interval, prints each sync (JSON lines with --json) and keeps going when a
        source fails: it is reported failing, and its corpus serves nobody once its
        revocation SLA has passed without a complete permission sync."""
        from clearance.sources.scheduler import Scheduler

        if sync_all == watch:
            raise click.UsageError("give exactly one of --all or --watch")
        with app_ctx.open() as app:
            if not app.settings.sources:
                raise click.UsageError("no sources configured ([sources.NAME] in clearance.toml)")
            if sync_all:
                once = Scheduler(app, on_progress=None if as_json else print_progress)
                _finish(ctx, once.tick(), as_json)
                return

            def show(report: SyncReport) -> None:
                if as_json:
                    sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False) + "\n")
                    sys.stdout.flush()
                else:
                    _print_report(report)

            scheduler = Scheduler(
                app, on_report=show, on_progress=None if as_json else print_progress
            )
            stop = threading.Event()
            if not as_json:
                console.print(
                    f"watching {len(scheduler.names)} sources; Ctrl-C stops after the sync in progress"
                )
            try:
                scheduler.run(stop)
            except KeyboardInterrupt:
                stop.set()


def _finish(ctx: click.Context, reports: list[SyncReport], as_json: bool) -> None:
    if not printed_json(
        as_json, {"ok": all(r.ok for r in reports), "syncs": [r.to_dict() for r in reports]}
    ):
        for report in reports:
            _print_report(report)
    if not all(r.ok for r in reports):
        ctx.exit(1)
