"""``clearance directory sync``, ``clearance acl sync`` and ``clearance explain``."""

from __future__ import annotations

from pathlib import Path

import click

from clearance.cli.context import (
    ASSISTANT_HELP,
    EXISTING_FILE,
    AppContext,
    console,
    pass_app_json,
    printed_json,
    warn,
)
from clearance.cli.safe import safe


def register(cli: click.Group) -> None:
    @cli.group("directory")
    def directory() -> None:
        """Users and (nested) groups, synced from the identity provider."""

    @directory.command("sync")
    @click.argument("file", type=EXISTING_FILE)
    @click.option("--delta", is_flag=True, help="Apply changes only (default: full snapshot).")
    @click.option(
        "--allow-empty",
        is_flag=True,
        help="Apply a snapshot with no users (it disables every account); refused without.",
    )
    @pass_app_json
    def directory_sync(
        app_ctx: AppContext, file: Path, delta: bool, allow_empty: bool, as_json: bool
    ) -> None:
        """Load a directory file: Clearance JSON or SCIM 2.0 (ListResponse / BulkRequest)."""
        from clearance.app import directory_sync_summary

        with app_ctx.acting("directory.sync", file.name) as (app, act):
            result = app.sync_directory(file, delta=delta, allow_empty=allow_empty)
            act.detail.update(mode="delta" if delta else "snapshot", version=result.version)
        data = directory_sync_summary(result, delta=delta)
        if printed_json(as_json, data):
            return
        console.print(
            f"directory v{safe(data['version'])} ({data['mode']}): {data['users']} users "
            f"({data['active_users']} active), {data['groups']} groups"
        )
        for warning in data["warnings"]:
            warn(warning)

    @cli.group("acl")
    def acl() -> None:
        """Document permissions, synced without touching content."""

    @acl.command("sync")
    @click.argument("file", type=EXISTING_FILE)
    @click.option("--corpus", required=True, help="The corpus this file describes.")
    @click.option("--delta", is_flag=True, help="Only the named documents change.")
    @click.option(
        "--read-at",
        metavar="TIME",
        help="When the export began reading the source (ISO 8601 with a time zone); the "
        "revocation SLA counts from it. Default: the file's modification time.",
    )
    @pass_app_json
    def acl_sync(
        app_ctx: AppContext,
        file: Path,
        corpus: str,
        delta: bool,
        read_at: str | None,
        as_json: bool,
    ) -> None:
        """Apply a JSONL file of {"doc_id", "acl"} lines (snapshot or delta) to one corpus."""
        with app_ctx.acting("acl.sync", corpus) as (app, act):
            report = app.sync_acls(file, corpus, delta=delta, read_at=read_at)
            act.detail.update(file=file.name, changed=report.changed)
        if printed_json(as_json, report.to_dict()):
            return
        console.print(
            f"{safe(corpus)} ({report.mode}): {report.changed} changed, {report.unchanged} unchanged, "
            f"{len(report.revoked)} revoked, {len(report.unknown)} unknown; "
            f"synced {safe(report.synced_at)}"
        )
        for doc_id in report.revoked:
            console.print(f"  revoked (not in snapshot): {safe(doc_id)}")
        for doc_id in report.unknown:
            console.print(f"  [yellow]unknown document[/yellow]: {safe(doc_id)}")
        for warning in report.warnings:
            warn(warning)

    @cli.command("explain")
    @click.option("--user", "user_id", required=True)
    @click.option("--doc", "doc_id", required=True)
    @click.option("--assistant", help="Evaluate as seen through this assistant. " + ASSISTANT_HELP)
    @pass_app_json
    def explain(
        app_ctx: AppContext, user_id: str, doc_id: str, assistant: str | None, as_json: bool
    ) -> None:
        """Why may (or may not) USER see DOC? Prints the decision and every reason."""
        from clearance.config import require_assistant

        with app_ctx.open() as app:
            require_assistant(app.settings, assistant)
            data = app.explain(user_id, doc_id, assistant=assistant)
        if printed_json(as_json, data):
            return
        p, d = data["principal"], data["document"]
        state = "unknown" if not p["known"] else ("active" if p["active"] else "DISABLED")
        shown = safe(data["user"])
        if data.get("matched") not in (None, "id"):
            shown += f" (matched alias {safe(data['matched'])})"
        console.print(
            f"user {shown} ({state}); principals: {safe(', '.join(p['principals']) or '-')}"
        )
        console.print(
            f"document {safe(doc_id)}: corpus {safe(d['corpus'])}, {safe(d['sensitivity'])}, "
            f"acl {safe(', '.join(d['acl']) or '(none: nobody)')}"
        )
        if d["source"]:
            console.print(f"  from source {safe(d['source'])} (it alone changes this document)")
        for principal, path in data["matched_via"].items():
            console.print(f"  matched {safe(principal)} via {safe(' → '.join(path))}")
        for action, decision in data["decisions"].items():
            verdict = "[green]ALLOW[/green]" if decision["allow"] else "[red]DENY[/red]"
            console.print(f"{safe(action)}: {verdict}")
            for reason, detail in zip(decision["reasons"], decision["details"], strict=False):
                console.print(f"  - {safe(reason)}: {safe(detail)}")
        for warning in data["warnings"]:
            warn(warning)
