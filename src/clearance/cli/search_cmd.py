"""``clearance search QUERY --user U``: hybrid search inside what U may retrieve."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from clearance.cli.context import (
    ASSISTANT_HELP,
    AppContext,
    console,
    not_blank,
    pass_app_json,
    printed_json,
)
from clearance.cli.safe import safe

if TYPE_CHECKING:
    from clearance.app import SearchResult

__all__ = ["register", "search_json"]


def search_json(user_id: str, query: str, result: SearchResult) -> dict[str, Any]:
    """The JSON of ``clearance search --json`` (:meth:`SearchResult.to_dict`)."""
    assert user_id == result.user_id
    return result.to_dict(query)


def register(cli: click.Group) -> None:
    @cli.command("search")
    @click.argument("query", callback=not_blank)
    @click.option("--user", "user_id", required=True, help="Search as this user.")
    @click.option(
        "--assistant",
        help="Restrict to one assistant's corpora and ceiling. " + ASSISTANT_HELP,
    )
    @click.option("-k", "k", type=click.IntRange(1, 1000), help="Number of results.")
    @pass_app_json
    def search(
        app_ctx: AppContext,
        query: str,
        user_id: str,
        assistant: str | None,
        k: int | None,
        as_json: bool,
    ) -> None:
        """Search as a user: results come only from documents that user may read now."""
        from clearance.config import require_assistant

        with app_ctx.open() as app:
            require_assistant(app.settings, assistant)
            result = app.search(user_id, query, assistant=assistant, k=k)
        data = search_json(user_id, query, result)
        rows = data["results"]
        if printed_json(as_json, data):
            return
        if not rows:
            console.print("no results" + (f" ({safe(result.refused)})" if result.refused else ""))
            return
        for row in rows:
            console.print(
                f"[bold]{row['rank']}.[/bold] {safe(row['title'])}  "
                f"[dim]{safe(row['doc_id'])}[/dim]  [cyan]{safe(row['locator'])}[/cyan]"
            )
            snippet = " ".join(str(row["text"]).split())
            console.print("   " + safe(snippet[:200] + ("…" if len(snippet) > 200 else "")))
