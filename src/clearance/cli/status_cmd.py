"""``clearance status``: index counts, per corpus ACL freshness against its SLA, and per
source its last syncs, lag and last error."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, pass_app_json, printed_json
from clearance.cli.safe import safe


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def register(cli: click.Group) -> None:
    @cli.command("status")
    @pass_app_json
    def status(app_ctx: AppContext, as_json: bool) -> None:
        """Counts per corpus and sensitivity, index size, which corpora fail closed, and
        each configured source's last syncs, lag against its corpus's SLA and last error.

        JSON: {"index", "documents", "chunks", "vectors", "size_bytes", "by_sensitivity",
        "directory": {"version", "users", "groups"}, "corpora": [{"corpus", "configured",
        "documents", "last_acl_sync", "revocation_sla_seconds", "failing_closed",
        "realtime_check"}], "sources": [{"source", "kind", "corpus", "state", "failing",
        "last_content_sync", "last_permission_sync", "lag_seconds", "revocation_sla_seconds",
        "last_error"}], "embedding": {"provider", "device", "gpu_runtime", "running_on"}}.
        A source's state is ok, behind (permission lag past the SLA),
        failing (its last sync failed) or never_synced; no credential is ever shown.
        `clearance source status` adds documents visible to nobody and unknown principals."""
        with app_ctx.open() as app:
            data = app.status()
        if printed_json(as_json, data):
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
        embedding = data["embedding"]
        console.print(
            f"embedding {safe(embedding['provider'])} on device {safe(embedding['device'])}"
            f" ({safe(embedding['gpu_runtime'] or 'onnxruntime for the CPU')} installed)"
        )
        if directory.get("failing_closed"):
            # Past its directory source's SLA the directory serves nobody: say so first.
            console.print(
                f"  [red]FAILING CLOSED[/red]: {safe(directory['failing_closed'])}; "
                "every user gets nothing until the next successful sync"
            )
        table = Table("corpus", "documents", "last ACL sync", "SLA", "serving")
        for c in data["corpora"]:
            table.add_row(
                safe(c["corpus"]),
                safe(c["documents"]),
                safe(c["last_acl_sync"] or "never"),
                _duration(float(c["revocation_sla_seconds"])),
                "[red]FAILING CLOSED[/red]" if c["failing_closed"] else "[green]yes[/green]",
            )
        console.print(table)
        for source in data["sources"]:
            _print_source(source)


def _print_source(s: dict[str, Any]) -> None:
    """A configured source in three lines at most; ``clearance source status`` has the
    details (documents visible to nobody, unknown principals)."""
    style = {"ok": "green", "failing": "red", "behind": "red"}.get(s["state"], "yellow")
    lag = "-" if s["lag_seconds"] is None else f"{s['lag_seconds']:g}s"
    console.print(
        f"source {safe(s['source'])} ({safe(s['kind'])} → corpus {safe(s['corpus'])}): "
        f"[{style}]{safe(s['state'])}[/{style}]; permission lag {lag} of SLA "
        f"{_duration(float(s['revocation_sla_seconds']))}"
    )
    console.print(
        f"  last content sync {safe(s['last_content_sync'] or 'never')}, "
        f"last permission sync {safe(s['last_permission_sync'] or 'never')}"
    )
    if s["last_error"]:
        console.print(f"  [red]last error:[/red] {safe(s['last_error'])}")
