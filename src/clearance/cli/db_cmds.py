"""``clearance db status|upgrade``: the index's schema version, and migrations.

The embedded SQLite index upgrades itself when opened. A PostgreSQL database is upgraded
only by ``clearance db upgrade``, run as the owning role (``[store] writer_dsn``); until
then every other command refuses to use it.
"""

from __future__ import annotations

from typing import Any

import click

from clearance.cli.context import AppContext, console, pass_app_json, printed_json
from clearance.cli.safe import safe

__all__ = ["register"]


def _print_status(data: dict[str, Any]) -> None:
    console.print(
        f"{safe(data['backend'])} {safe(data['location'])}: schema version "
        f"{safe(data['version'])} (this release: {data['latest']})"
    )
    if data["pending"]:
        console.print(
            "pending: " + safe(", ".join(data["pending"])) + " — run clearance db upgrade"
        )


def register(cli: click.Group) -> None:
    @cli.group("db")
    def db() -> None:
        """The index's schema: its version, and migrations."""

    @db.command("status")
    @pass_app_json
    def status(app_ctx: AppContext, as_json: bool) -> None:
        """The backend, where it is, its schema version and the migrations not yet applied.

        JSON: {"backend", "location", "version", "latest", "pending": [name, …]}."""
        from clearance.store.backends import database_status

        data = database_status(app_ctx.settings())
        if not printed_json(as_json, data):
            _print_status(data)

    @db.command("upgrade")
    @pass_app_json
    def upgrade(app_ctx: AppContext, as_json: bool) -> None:
        """Apply the missing schema migrations, each in its own transaction, and grant the
        reading role ([store] dsn) what search needs. Safe to run again.

        JSON: the fields of 'db status', plus "applied": [name, …]."""
        from clearance.store.backends import upgrade_database

        data = upgrade_database(app_ctx.settings())
        if printed_json(as_json, data):
            return
        for name in data["applied"]:
            console.print(f"applied {safe(name)}")
        _print_status(data)
