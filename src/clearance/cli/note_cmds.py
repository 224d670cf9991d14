"""``clearance note add``: derived knowledge (meeting summaries, chat excerpts) with its origin.

A note is an inline-text document that goes through the ingestion pipeline like any other.
Its ``--origin`` and ``--origin-chain`` are stored; its trust is derived from them whenever
it is read (the minimum over the chain), so a summary of a chat export stays untrusted.
"""

from __future__ import annotations

import click

from clearance.cli.context import AppContext, console, pass_app_json, printed_json
from clearance.cli.safe import safe

__all__ = ["register"]


def _split(values: tuple[str, ...]) -> list[str]:
    """Repeatable options that also accept comma-separated lists."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def register(cli: click.Group) -> None:
    @cli.group("note")
    def note() -> None:
        """Derived knowledge (summaries, excerpts) stored with where it came from."""

    @note.command("add")
    @click.argument("text")
    @click.option(
        "--origin",
        required=True,
        help="Where the text came from: system, human, consolidation, external_platform, "
        "external_web, email, unknown (or an origin of [trust.origins]).",
    )
    @click.option(
        "--origin-chain",
        "origin_chain",
        multiple=True,
        help="Origins the text was derived through, comma-separated or repeated "
        "(e.g. external_platform,human). Trust is the minimum over origin and chain.",
    )
    @click.option("--corpus", required=True, help="The corpus the note belongs to.")
    @click.option(
        "--acl",
        "acl",
        multiple=True,
        required=True,
        help="Principal allowed to read it: user:<id>, group:<id> or everyone "
        "(repeatable or comma-separated).",
    )
    @click.option("--title", help="Human title (default: the doc_id).")
    @click.option("--doc-id", "doc_id", help="Stable id 'source:native_id' (default: note:<uuid>).")
    @pass_app_json
    def add(
        app_ctx: AppContext,
        text: str,
        origin: str,
        origin_chain: tuple[str, ...],
        corpus: str,
        acl: tuple[str, ...],
        title: str | None,
        doc_id: str | None,
        as_json: bool,
    ) -> None:
        """Store TEXT as a note (an inline-text document) and print its doc_id.

        JSON: {"doc_id", "status", "chunks", "corpus", "origin", "origin_chain", "trust",
        "warnings"} — "trust" is what the note resolves to now, under [trust.origins];
        it is never stored.
        """
        from clearance.trust import resolve_trust

        chain = _split(origin_chain)
        with app_ctx.open() as app:
            result = app.add_note_result(
                text,
                origin=origin,
                origin_chain=chain,
                corpus=corpus,
                acl=_split(acl),
                title=title,
                doc_id=doc_id,
            )
            trust = resolve_trust(origin, chain, app.settings.trust.origins).label
        data = {
            "doc_id": result.doc_id,
            "status": result.status,
            "chunks": result.chunks,
            "corpus": corpus.strip(),
            "origin": origin.strip(),
            "origin_chain": chain,
            "trust": trust,
            "warnings": list(result.warnings),
        }
        if printed_json(as_json, data):
            return
        style = "green" if trust == "trusted" else "yellow"
        console.print(
            f"{safe(result.status)} [bold]{safe(result.doc_id)}[/bold] "
            f"({result.chunks} chunk(s)) trust [{style}]{safe(trust)}[/{style}]"
        )
        for warning in result.warnings:
            console.print(f"  [yellow]warning:[/yellow] {safe(warning)}")
