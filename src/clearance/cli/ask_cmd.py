"""``clearance ask QUESTION --user U``: a cited answer, or a refusal that leaks nothing."""

from __future__ import annotations

from datetime import datetime

import click

from clearance.cli.context import (
    ASSISTANT_HELP,
    AppContext,
    console,
    not_blank,
    pass_app_json,
    print_error,
    printed_json,
)
from clearance.cli.safe import safe
from clearance.errors import NotFoundError


def register(cli: click.Group) -> None:
    @cli.command("ask")
    @click.argument("question", callback=not_blank)
    @click.option("--user", "user_id", required=True, help="Ask as this user.")
    @click.option("--assistant", help="The assistant (workspace) to ask. " + ASSISTANT_HELP)
    @click.option(
        "--today",
        type=click.DateTime(formats=["%Y-%m-%d"]),
        help="Read relative periods (last year, 去年, 前期) as if asked on this date "
        "(YYYY-MM-DD); default: today (UTC).",
    )
    @pass_app_json
    @click.pass_context
    def ask(
        ctx: click.Context,
        app_ctx: AppContext,
        question: str,
        user_id: str,
        assistant: str | None,
        today: datetime | None,
        as_json: bool,
    ) -> None:
        """Answer QUESTION from what USER may read right now, citing every source.

        JSON: {"status", "answer", "citations": [{"doc_id", "title", "locator", "uri",
        "trust"}], "route", "trace_id", "flags", "assumptions", "missing", "options",
        "resolved_periods": [{"text", "period"}], "corrections": [{"written", "read_as"}]}.
        Status "unknown_assistant" exits 3, and so does a USER the directory does not hold
        (a disabled one is answered "account_disabled").
        """
        from clearance.answer.result import Status
        from clearance.bounds import check_question
        from clearance.config import unknown_assistant_message

        with app_ctx.open() as app:
            # the question is refused first (exit 2), as the engine does before anything else
            check_question(question, app.settings.answer.max_question_chars)
            if not app.principal(user_id).known:
                # Over HTTP the identity comes from sign-in and the refusal is the disabled
                # account's; an operator naming a user is told the name matched nobody.
                raise NotFoundError(f"user {user_id!r} is not in the directory")
            result = app.ask(
                question,
                user_id,
                assistant=assistant,
                today=today.date() if today is not None else None,
            )
            settings = app.settings
        if result.status is Status.UNKNOWN_ASSISTANT:
            # The refusal is answered (and traced) in order, after identity and scope; the
            # operator still needs a failing exit code and to learn which names exist.
            message = unknown_assistant_message(settings, assistant)
            if not printed_json(as_json, result.to_dict()):
                raise NotFoundError(message)
            print_error(message)
            ctx.exit(NotFoundError.exit_code)
        if printed_json(as_json, result.to_dict()):
            return
        style = "green" if result.status.value == "answered" else "yellow"
        console.print(f"[{style}]{result.status.value}[/{style}] [dim]({result.route.value})[/dim]")
        console.print(safe(result.answer, multiline=True))
        if result.options:
            shown = ", ".join(o.replace("_", " ") for o in result.options)
            console.print(f"[dim]options:[/dim] {safe(shown)}")
        for flag in result.flags:
            if flag == "conflict":
                console.print("[yellow]note:[/yellow] readable sources disagree; both are cited")
            elif flag.startswith("possibly_outdated:"):
                doc_id = flag.removeprefix("possibly_outdated:")
                console.print(f"[yellow]note:[/yellow] {safe(doc_id)} is past its review date")
        for i, c in enumerate(result.citations, start=1):
            trust = "" if c.trust == "trusted" else f"  [yellow]{safe(c.trust)}[/yellow]"
            console.print(
                f"  [{i}] {safe(c.title)} · [cyan]{safe(c.locator)}[/cyan]  "
                f"[dim]{safe(c.doc_id)}[/dim]{trust}"
            )
