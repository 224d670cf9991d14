"""``clearance ask QUESTION --user U``: a cited answer, or a refusal that leaks nothing."""

from __future__ import annotations

import click
from rich.markup import escape

from clearance.cli.context import AppContext, console, emit_json, json_option, pass_app


def register(cli: click.Group) -> None:
    @cli.command("ask")
    @click.argument("question")
    @click.option("--user", "user_id", required=True, help="Ask as this user.")
    @click.option("--assistant", help="The assistant (workspace) to ask.")
    @json_option
    @pass_app
    def ask(
        app_ctx: AppContext, question: str, user_id: str, assistant: str | None, as_json: bool
    ) -> None:
        """Answer QUESTION from what USER may read right now, citing every source.

        JSON: {"status", "answer", "citations": [{"doc_id", "title", "locator", "uri",
        "trust"}], "route", "trace_id", "flags"}.
        """
        with app_ctx.open() as app:
            result = app.ask(question, user_id, assistant=assistant)
        if as_json:
            emit_json(result.to_dict())
            return
        style = "green" if result.status.value == "answered" else "yellow"
        console.print(f"[{style}]{result.status.value}[/{style}] [dim]({result.route.value})[/dim]")
        console.print(escape(result.answer))
        for flag in result.flags:
            if flag == "conflict":
                console.print("[yellow]note:[/yellow] readable sources disagree; both are cited")
            elif flag.startswith("possibly_outdated:"):
                doc_id = flag.removeprefix("possibly_outdated:")
                console.print(f"[yellow]note:[/yellow] {escape(doc_id)} is past its review date")
        for i, c in enumerate(result.citations, start=1):
            trust = "" if c.trust == "trusted" else f"  [yellow]{c.trust}[/yellow]"
            console.print(
                f"  [{i}] {escape(c.title)} · [cyan]{escape(c.locator)}[/cyan]  "
                f"[dim]{escape(c.doc_id)}[/dim]{trust}"
            )
