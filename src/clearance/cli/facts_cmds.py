"""``clearance facts list``: the numbers extracted from tables, and ``clearance facts
suggest``: ``[facts]`` vocabulary entries proposed from them (operator commands).

Operators see every fact, unfiltered, like ``docs list``; answers only ever see facts
through the permission filter (:meth:`~clearance.store.sqlite.SQLiteStore.query_facts`).

``suggest`` writes TOML the operator can paste into ``clearance.toml``: every metric, entity
and channel the tables name that the vocabulary does not, each with the spellings the
tables use (row and column labels without their units, an entity without its legal form),
the unit each metric is stated in when it is always the same, and the periods seen, so the
fiscal calendar can be checked. Nothing is written to the configuration by the command.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from clearance.cli.context import AppContext, console, pass_app_json, printed_json
from clearance.cli.safe import safe
from clearance.errors import NotFoundError

if TYPE_CHECKING:
    from clearance.config import FactSettings
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


def _labels(fact: Fact) -> list[str]:
    """The row and column labels a fact's locator names, without units."""
    from clearance.ingest.facts import measure_name
    from clearance.ingest.locator import parse_locator

    try:
        parts = parse_locator(fact.locator)
    except ValueError:
        return []
    out = []
    for key, value in parts:
        if key in ("row", "series"):
            for label in value.split(" / "):
                name = measure_name(label)
                if name is not None:
                    out.append(name)
    return out


def suggest(facts: Iterable[Fact], settings: FactSettings) -> dict[str, Any]:
    """Vocabulary entries for what ``facts`` name and ``settings`` does not know."""
    from clearance.ingest.facts import entity_aliases

    known = {
        "metrics": {k.casefold() for k in settings.metrics},
        "entities": {k.casefold() for k in settings.entities},
        "channels": {k.casefold() for k in settings.channels}
        | {settings.default_channel.casefold()},
    }
    metrics: dict[str, list[str]] = {}
    entities: dict[str, list[str]] = {}
    channels: dict[str, list[str]] = {}
    units: dict[str, set[str]] = {}
    periods: set[str] = set()
    for fact in facts:
        periods.add(fact.period)
        if fact.metric.casefold() not in known["metrics"]:
            spellings = metrics.setdefault(fact.metric, [])
            units.setdefault(fact.metric, set()).add(fact.unit)
            for label in _labels(fact):
                folded, metric = label.casefold(), fact.metric.casefold()
                if metric in folded and folded != metric and label not in spellings:
                    spellings.append(label)
        if fact.entity and fact.entity.casefold() not in known["entities"]:
            # an unnamed entity (a table naming no one) has no name to configure
            spelled = entities.setdefault(fact.entity, [])
            for alias in entity_aliases(fact.entity):
                if alias not in spelled:
                    spelled.append(alias)
        if fact.channel.casefold() not in known["channels"]:
            channels.setdefault(fact.channel, [])
    metric_units = {m: next(iter(u)) for m, u in units.items() if len(u) == 1 and "" not in u}
    return {
        "metrics": {m: sorted(v) for m, v in sorted(metrics.items())},
        "entities": {e: sorted(v) for e, v in sorted(entities.items())},
        "channels": {c: v for c, v in sorted(channels.items())},
        "metric_units": dict(sorted(metric_units.items())),
        "periods": sorted(periods),
    }


def _toml_key(name: str) -> str:
    bare = name.isascii() and name.replace("_", "").replace("-", "").isalnum()
    return name if bare else json.dumps(name, ensure_ascii=False)


def _toml_table(name: str, entries: Mapping[str, Any]) -> list[str]:
    from clearance.ingest.facts import normalize

    if not entries:
        return []
    lines = ["", f"[facts.{name}]"]
    for key, value in entries.items():
        if isinstance(value, list):
            items = ", ".join(json.dumps(normalize(v), ensure_ascii=False) for v in value)
            lines.append(f"{_toml_key(key)} = [{items}]")
        else:
            lines.append(f"{_toml_key(key)} = {json.dumps(value, ensure_ascii=False)}")
    return lines


def suggestion_toml(suggested: Mapping[str, Any]) -> str:
    """The suggestion as TOML to paste under an existing or new ``[facts]`` table."""
    lines = [
        "# Proposed by `clearance facts suggest` from the facts in the index. Add aliases",
        "# (other spellings people ask with) and set the fiscal calendar if your fiscal",
        '# year does not start in January (fiscal_year_start = "04-01").',
    ]
    if suggested["periods"]:
        lines.append("# Periods seen: " + ", ".join(suggested["periods"]))
    for table in ("metrics", "entities", "channels", "metric_units"):
        lines += _toml_table(table, suggested[table])
    return "\n".join(lines) + "\n"


def register(cli: click.Group) -> None:
    @cli.group("facts")
    def facts() -> None:
        """The facts (numbers from tables) in the index, and vocabulary proposed from them."""

    @facts.command("list")
    @click.option("--doc", "doc_id", help="Only the facts of this document.")
    @click.option("--metric", help="Only this metric (its canonical name).")
    @pass_app_json
    def list_facts(
        app_ctx: AppContext, doc_id: str | None, metric: str | None, as_json: bool
    ) -> None:
        """One line per fact, with the document and locator it came from."""
        from clearance.ingest.facts import format_number

        with app_ctx.open() as app:
            if doc_id is not None and app.store.get_document(doc_id) is None:
                raise NotFoundError(f"no document {doc_id!r} in the index")
            found = app.store.list_facts(doc_id)
        if metric is not None:
            found = [f for f in found if f.metric == metric]
        if printed_json(as_json, [fact_dict(f) for f in found]):
            return
        table = Table(show_header=True)
        for column in ("doc_id", "entity", "period", "metric", "channel", "value", "locator"):
            table.add_column(column, justify="right" if column == "value" else "left")
        for f in found:
            value = format_number(f.value) + (f" {f.unit}" if f.unit else "")
            cells = (f.doc_id, f.entity, f.period, f.metric, f.channel, value, f.locator)
            table.add_row(*map(safe, cells))
        console.print(table)
        docs = len({f.doc_id for f in found})
        console.print(f"{len(found)} facts from {docs} documents")

    @facts.command("suggest")
    @pass_app_json
    def suggest_vocabulary(app_ctx: AppContext, as_json: bool) -> None:
        """Propose [facts] vocabulary entries (TOML to paste) from the facts in the index."""
        with app_ctx.open() as app:
            found = app.store.list_facts()
            settings = app.settings.facts
        suggested = suggest(found, settings)
        if not printed_json(as_json, {**suggested, "toml": suggestion_toml(suggested)}):
            click.echo(suggestion_toml(suggested), nl=False)
