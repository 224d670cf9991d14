"""``clearance facts list``: the numbers extracted from tables (operator command).

Operators see every fact, unfiltered, like ``docs list``; answers only ever see facts
through the permission filter (:meth:`~clearance.store.sqlite.SQLiteStore.query_facts`).
"""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, emit_json, json_option, pass_app
from clearance.cli.safe import safe
from clearance.errors import NotFoundError
from clearance.ingest.facts import format_number
from clearance.model import Fact


def fact_dict(fact: Fact) -> dict[str, Any]:
    return {
        "doc_id": fact.doc_id,
        "entity": fact.entity,
        "period": fact.period,
        "metric": fact.metric,
        "channel": fact.channel,
        "value": fact.value,
        "unit": fact.unit,
        "raw": fact.raw,
        "locator": fact.locator,
    }


def register(cli: click.Group) -> None:
    @cli.group("facts")
    def facts() -> None:
        """List the facts (numbers from tables) in the index."""

    @facts.command("list")
    @click.option("--doc", "doc_id", help="Only the facts of this document.")
    @click.option("--metric", help="Only this metric (its canonical name).")
    @json_option
    @pass_app
    def list_facts(
        app_ctx: AppContext, doc_id: str | None, metric: str | None, as_json: bool
    ) -> None:
        """One line per fact, with the document and locator it came from."""
        with app_ctx.open() as app:
            if doc_id is not None and app.store.get_document(doc_id) is None:
                raise NotFoundError(f"no document {doc_id!r} in the index")
            found = app.store.list_facts(doc_id)
        if metric is not None:
            found = [f for f in found if f.metric == metric]
        if as_json:
            emit_json([fact_dict(f) for f in found])
            return
        table = Table(show_header=True)
        for column in ("doc_id", "entity", "period", "metric", "channel", "value", "locator"):
            table.add_column(column, justify="right" if column == "value" else "left")
        for f in found:
            value = format_number(f.value) + (f" {f.unit}" if f.unit else "")
            table.add_row(
                safe(f.doc_id),
                safe(f.entity),
                safe(f.period),
                safe(f.metric),
                safe(f.channel),
                safe(value),
                safe(f.locator),
            )
        console.print(table)
        docs = len({f.doc_id for f in found})
        console.print(f"{len(found)} facts from {docs} documents")
