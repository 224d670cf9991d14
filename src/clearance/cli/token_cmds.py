"""``clearance token create|list|revoke``: API tokens for the HTTP API (docs/server.md).

A token is printed once, when created; the index keeps only a hash of its secret.
"""

from __future__ import annotations

import click
from rich.table import Table

from clearance.cli.context import (
    AppContext,
    cli_actor,
    console,
    err_console,
    pass_app_json,
    printed_json,
)
from clearance.cli.safe import safe

__all__ = ["register"]


def register(cli: click.Group) -> None:
    from clearance.api.tokens import SCOPES

    @cli.group("token")
    def token() -> None:
        """API tokens for 'clearance serve': create, list, revoke (administrators only)."""

    @token.command("create")
    @click.option("--user", "user_id", required=True, help="The user the token signs in as.")
    @click.option("--expires", help="Lifetime, such as '30d' or '12h'. Default: no expiry.")
    @click.option("--admin", is_flag=True, help="May call the administrator routes.")
    @click.option(
        "--scope",
        "scopes",
        multiple=True,
        type=click.Choice(SCOPES),
        help="What the token may do (repeatable): search, ask, admin (with --admin), or "
        "scim alone — a provisioning token for /scim/v2 that signs nobody in. "
        "Default: search and ask, and admin with --admin.",
    )
    @pass_app_json
    def create(
        app_ctx: AppContext,
        user_id: str,
        expires: str | None,
        admin: bool,
        scopes: tuple[str, ...],
        as_json: bool,
    ) -> None:
        """Create a token for USER and print it once (only its hash is kept).

        For a scim token, USER names the provisioning client (it appears as the actor of
        its changes) and need not be a directory user.

        JSON: {"token", "id", "user", "admin", "created", "expires", "revoked", "scopes"}.
        """
        from clearance.api.tokens import TokenStore
        from clearance.config import parse_duration

        lifetime = None if expires is None else parse_duration(expires, "--expires")
        if lifetime == 0:
            raise click.BadParameter("must be longer than 0", param_hint="--expires")
        chosen = frozenset(scopes) if scopes else None
        with app_ctx.open() as app:
            known = user_id in app.directory.users or chosen == frozenset({"scim"})
            try:
                secret, record = TokenStore(app.store, clock=app.clock).create(
                    user_id, admin=admin, expires_in_s=lifetime, scopes=chosen
                )
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="--scope") from None
            app.actions().record(
                cli_actor(),
                "token.create",
                record.id,
                detail={"user": user_id, "scopes": sorted(record.scopes), "admin": admin},
            )
        if not known:
            err_console.print(
                f"[yellow]warning:[/yellow] user {safe(user_id)!s} is not in the directory: "
                "requests with this token are refused until it is synced"
            )
        if printed_json(as_json, {"token": secret, **record.to_dict()}):
            return
        console.print(
            f"token {safe(record.id)} for {safe(user_id)}" + (" (admin)" if admin else "")
        )
        console.print("store it now; it is not shown again:")
        console.print(secret, markup=False, highlight=False)

    @token.command("list")
    @pass_app_json
    def list_(app_ctx: AppContext, as_json: bool) -> None:
        """Every token: id, user, admin, created, expires, revoked (never the secret).

        JSON: {"tokens": [{"id", "user", "admin", "created", "expires", "revoked", "scopes"},
        …]}.
        """
        from clearance.api.tokens import TokenStore

        with app_ctx.open() as app:
            records = TokenStore(app.store, clock=app.clock).list()
        if printed_json(as_json, {"tokens": [r.to_dict() for r in records]}):
            return
        if not records:
            console.print("no API tokens")
            return
        table = Table("id", "user", "admin", "scopes", "created", "expires", "revoked")
        for r in records:
            row = r.to_dict()
            table.add_row(
                safe(row["id"]),
                safe(row["user"]),
                "yes" if r.admin else "",
                safe(" ".join(row["scopes"])),
                safe(row["created"]),
                safe(row["expires"] or "never"),
                safe(row["revoked"] or ""),
            )
        console.print(table)

    @token.command("revoke")
    @click.argument("token_id")
    @pass_app_json
    def revoke(app_ctx: AppContext, token_id: str, as_json: bool) -> None:
        """Revoke token TOKEN_ID: refused from the next request on. Unknown ids exit 3."""
        from clearance.api.tokens import TokenStore

        with app_ctx.acting("token.revoke", token_id) as (app, _):
            record = TokenStore(app.store, clock=app.clock).revoke(token_id)
        if not printed_json(as_json, record.to_dict()):
            console.print(f"revoked token {safe(record.id)} of {safe(record.user_id)}")
