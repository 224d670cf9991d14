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
            data = app.status()
        if as_json:
            emit_json(data)
            return
        directory = data["directory"]
        console.print(
            f"index {safe(data['index'])}: {data['documents']} documents, {data['chunks']} "
            f"chunks, {data['vectors']} vectors, {data['size_bytes'] / 1e6:.1f} MB"
        )
        by_sensitivity = sorted(data["by_sensitivity"].items())
        console.print(
            "by sensitivity: " + safe(", ".join(f"{k} {v}" for k, v in by_sensitivity) or "-")
        )
        console.print(
            f"directory v{safe(directory['version'])}: {directory['users']} users, "
            f"{directory['groups']} groups"
        )
        table = Table(show_header=True)
        for column in ("corpus", "documents", "last ACL sync", "SLA", "serving"):
            table.add_column(column)
        for c in data["corpora"]:
            table.add_row(
                safe(c["corpus"]),
                safe(c["documents"]),
                safe(c["last_acl_sync"] or "never"),
                _duration(float(c["revocation_sla_seconds"])),
                "[red]FAILING CLOSED[/red]" if c["failing_closed"] else "[green]yes[/green]",
            )
        console.print(table)
