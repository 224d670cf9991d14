"""``clearance trace list|show|purge``, ``clearance audit`` and ``clearance stats``.

Operator commands over the trace log (docs/design.md §8). Records hold ids, pseudonymous users,
counts, reason codes and timings — never question, chunk, fact or answer text (unless an
operator enabled question text for some corpora). Traces are for administrators only.
"""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, folded_table, pass_app_json, printed_json
from clearance.cli.safe import safe
from clearance.errors import NotFoundError

__all__ = ["register"]

_SINCE_HELP = "Only records from then on: a duration back from now ('7d', '12h') or ISO 8601."


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _rate(value: float) -> str:
    return f"{value * 100:.1f}%"


def register(cli: click.Group) -> None:
    @cli.group("trace")
    def trace() -> None:
        """The request log: one privacy-preserving record per question (administrators only)."""

    @trace.command("list")
    @click.option("--since", help=_SINCE_HELP)
    @click.option(
        "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most N."
    )
    @pass_app_json
    def list_(app_ctx: AppContext, since: str | None, limit: int, as_json: bool) -> None:
        """Recent trace records, newest first.

        JSON: {"count", "traces": [record, …]} with the fields of 'trace show'.
        """
        from clearance.trace.log import parse_since

        with app_ctx.open() as app:
            start = None if since is None else parse_since(since, app.clock())
            records = app.trace_log().entries(since=start, limit=limit)
        if printed_json(as_json, {"count": len(records), "traces": records}):
            return
        if not records:
            console.print("no trace records")
            return
        table = folded_table(
            "trace id", "time", "user", "assistant", "route", "status", "reason", "ms"
        )
        for r in records:
            table.add_row(
                safe(r["trace_id"]),
                safe(r["created_at"][:19]),
                safe(r["user"][:12]),
                safe(r.get("assistant") or "-"),
                safe(r.get("route", "")),
                safe(r.get("status", "")),
                safe(r.get("reason") or ""),
                _fmt_ms(r.get("latency_ms", {}).get("total")),
            )
        console.print(table)

    @trace.command("show")
    @click.argument("trace_id")
    @pass_app_json
    def show(app_ctx: AppContext, trace_id: str, as_json: bool) -> None:
        """One trace record.

        JSON: {"trace_id", "created_at", "user" (pseudonymous), "assistant", "route",
        "status", "reason", "retrieved", "cited", "filter_counts", "realtime_dropped",
        "fabrication_guard_triggered", "guard_fired", "latency_ms", "provider_errors",
        "denied_retrieved", "cited_past_review"[, "question_text"]}.
        """
        with app_ctx.open() as app:
            record = app.trace_log().get(trace_id)
        if record is None:
            raise NotFoundError(f"no trace {trace_id!r}")
        if not printed_json(as_json, record):
            for key in sorted(record):
                console.print(f"[bold]{key}[/bold]: {safe(record[key])}")

    @trace.command("purge")
    @click.option(
        "--older-than",
        "older_than",
        required=True,
        help="Delete records older than this duration, e.g. '30d'.",
    )
    @pass_app_json
    def purge(app_ctx: AppContext, older_than: str, as_json: bool) -> None:
        """Delete old trace records now ([trace] retention also does it automatically).

        JSON: {"purged", "older_than_seconds", "cutoff"}.
        """
        from clearance.config import parse_duration
        from clearance.trace.record import timestamp

        seconds = parse_duration(older_than, "--older-than")
        with app_ctx.open() as app:
            purged, cutoff = app.trace_log().purge(seconds, app.clock())
        data = {"purged": purged, "older_than_seconds": seconds, "cutoff": timestamp(cutoff)}
        if not printed_json(as_json, data):
            console.print(f"purged {purged} trace record(s) older than {timestamp(cutoff)}")

    @cli.command("audit")
    @click.option("--doc", "doc_id", help="Who saw this document (the request log).")
    @click.option("--actor", help="Only administrator actions of this actor (cli:<user>, a user).")
    @click.option("--action", help="Only these actions: a name or a prefix ('scim', 'token').")
    @click.option("--since", help=_SINCE_HELP)
    @click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
    @pass_app_json
    def audit(
        app_ctx: AppContext,
        doc_id: str | None,
        actor: str | None,
        action: str | None,
        since: str | None,
        limit: int,
        as_json: bool,
    ) -> None:
        """With --doc: who saw this? Every request that retrieved or cited DOC: trace id,
        pseudonymous user and time (also after the document was removed). Otherwise: the
        administrator actions — directory and ACL syncs, ingestion, token changes, SCIM
        writes — newest first, by --actor, --action and --since.

        JSON (--doc): {"doc_id", "count", "events": [{"trace_id", "created_at", "user",
        "assistant", "status", "retrieved", "cited"}]}. JSON (actions): {"count",
        "actions": [{"at", "actor", "action", "target", "outcome", "detail"}]}.
        """
        from clearance.trace.log import parse_since

        if doc_id is None:
            with app_ctx.open() as app:
                start = None if since is None else parse_since(since, app.clock())
                entries = app.actions().entries(
                    actor=actor, action=action, since=start, limit=limit
                )
            if printed_json(as_json, {"count": len(entries), "actions": entries}):
                return
            if not entries:
                console.print("no administrator action recorded")
                return
            table = folded_table("time", "actor", "action", "target", "outcome")
            for e in entries:
                rest = (e[key] for key in ("actor", "action", "target", "outcome"))
                table.add_row(safe(e["at"][:19]), *map(safe, rest))
            console.print(table)
            return
        if actor or action or since:
            raise click.UsageError("--actor, --action and --since list actions, not --doc")
        with app_ctx.open() as app:
            events = app.trace_log().audit(doc_id)
        if printed_json(as_json, {"doc_id": doc_id, "count": len(events), "events": events}):
            return
        if not events:
            console.print(f"no request retrieved or cited {safe(doc_id)}")
            return
        table = folded_table("time", "user", "trace id", "assistant", "status", "how")
        for e in events:
            how = "cited" if e["cited"] else "retrieved"
            table.add_row(
                safe(e["created_at"][:19]),
                safe(e["user"]),
                safe(e["trace_id"]),
                safe(e["assistant"] or "-"),
                safe(e["status"] or ""),
                how,
            )
        console.print(table)

    @cli.command("stats")
    @click.option("--since", help=_SINCE_HELP)
    @pass_app_json
    def stats(app_ctx: AppContext, since: str | None, as_json: bool) -> None:
        """Outcomes per assistant, denied-source and stale-source rates, citations, latency.

        JSON: {"since", "requests", "assistants": {name: {"requests", "answered", "refused",
        "not_found", "degraded", "citations"}}, "by_status", "denied_source_requests",
        "denied_source_rate", "stale_source_requests", "stale_source_ratio", "citations":
        {"total", "per_answered", "by_doc"}, "latency_ms": {"p50", "p95"}, "guard_fired",
        "fabrication_guard_triggered", "provider_error_requests"}. The denied-source rate
        must be 0.
        """
        from clearance.trace.log import parse_since

        with app_ctx.open() as app:
            start = None if since is None else parse_since(since, app.clock())
            data: dict[str, Any] = app.trace_log().stats(since=start)
        if printed_json(as_json, data):
            return
        console.print(f"{data['requests']} request(s)" + (f" since {safe(since)}" if since else ""))
        table = Table("assistant", "requests", "answered", "refused", "not found", "degraded")
        for name, counts in data["assistants"].items():
            table.add_row(
                safe(name),
                *(
                    str(counts[k])
                    for k in ("requests", "answered", "refused", "not_found", "degraded")
                ),
            )
        console.print(table)
        denied = data["denied_source_rate"]
        style = "red" if denied else "green"
        console.print(f"denied-source rate: [{style}]{_rate(denied)}[/{style}] (must be 0)")
        console.print(f"stale-source ratio: {_rate(data['stale_source_ratio'])}")
        console.print(
            f"citations: {data['citations']['total']} "
            f"({data['citations']['per_answered']:.2f} per answer)"
        )
        latency = data["latency_ms"]
        console.print(f"latency: p50 {_fmt_ms(latency['p50'])}, p95 {_fmt_ms(latency['p95'])}")
