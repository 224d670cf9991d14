"""``clearance status``: index counts and, per corpus, ACL freshness against its SLA."""

from __future__ import annotations

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, emit_json, json_option, pass_app
from clearance.cli.safe import safe


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def register(cli: click.Group) -> None:
    @cli.command("status")
    @json_option
    @pass_app
    def status(app_ctx: AppContext, as_json: bool) -> None:
        """Counts per corpus and sensitivity, index size, and which corpora fail closed."""
        with app_ctx.open() as app:
            stats = app.store.stats()
            corpora = app.corpus_status()
            directory = app.directory
            path = str(app.store.path)
        data = {
            "index": path,
            "documents": stats.documents,
            "chunks": stats.chunks,
            "vectors": stats.vectors,
            "size_bytes": stats.size_bytes,
            "by_sensitivity": dict(stats.by_sensitivity),
            "directory": {
                "version": directory.version,
                "users": len(directory.users),
                "groups": len(directory.groups),
            },
            "corpora": corpora,
        }
        if as_json:
            emit_json(data)
            return
        console.print(
            f"index {safe(path)}: {stats.documents} documents, {stats.chunks} chunks, "
            f"{stats.vectors} vectors, {stats.size_bytes / 1e6:.1f} MB"
        )
        console.print(
            "by sensitivity: "
            + safe(", ".join(f"{k} {v}" for k, v in sorted(stats.by_sensitivity.items())) or "-")
        )
        console.print(
            f"directory v{safe(directory.version)}: {len(directory.users)} users, "
            f"{len(directory.groups)} groups"
        )
        table = Table(show_header=True)
        for column in ("corpus", "documents", "last ACL sync", "SLA", "serving"):
            table.add_column(column)
        for c in corpora:
            table.add_row(
                safe(c["corpus"]),
                safe(c["documents"]),
                safe(c["last_acl_sync"] or "never"),
                _duration(float(c["revocation_sla_seconds"])),
                "[red]FAILING CLOSED[/red]" if c["failing_closed"] else "[green]yes[/green]",
            )
        console.print(table)
