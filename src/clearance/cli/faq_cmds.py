"""``clearance faq add|list|import|remove``: the vetted Q&A entries of the FAQ short-circuit.

Every entry carries its own ACL and sensitivity (see :mod:`clearance.answer.faq`). Bad
input is a :class:`MetadataError` (exit 2) with a one-line message naming what is wrong;
removing an unknown id is a :class:`NotFoundError` (exit 3).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from clearance.cli.context import (
    EXISTING_FILE,
    AppContext,
    console,
    pass_app_json,
    printed_json,
    warn,
)
from clearance.cli.safe import safe
from clearance.errors import MetadataError, NotFoundError

if TYPE_CHECKING:
    from clearance.answer.result import Citation
    from clearance.store.base import Store

__all__ = ["register"]


def _citation(store: Store, spec: str) -> Citation:
    """``DOC_ID[#LOCATOR]`` → a citation whose title and link come from the indexed
    document, so a vetted answer can only cite something that is really in the index."""
    from clearance.answer.result import Citation

    doc_id, _, locator = spec.partition("#")
    doc_id = doc_id.strip()
    if not doc_id:
        raise MetadataError(f"--cite {spec!r}: expected DOC_ID or DOC_ID#LOCATOR")
    document = store.get_document(doc_id)
    if document is None:
        raise MetadataError(
            f"--cite {spec!r}: no document {doc_id!r} in the index "
            "(ingest it first, or give title and uri in a 'faq import' file)"
        )
    return Citation(doc_id=doc_id, title=document.title, locator=locator.strip(), uri=document.uri)


def _principals(values: tuple[str, ...]) -> frozenset[str]:
    from clearance.model import parse_principal

    try:
        return frozenset(parse_principal(v.strip()) for v in values)
    except ValueError as exc:
        raise MetadataError(f"--acl: {exc}") from None


def _window(value: str | None, option: str) -> datetime | None:
    from clearance.answer.faq import parse_datetime

    return None if value is None else parse_datetime(value, option)


def register(cli: click.Group) -> None:
    from clearance.model import Sensitivity

    @cli.group("faq")
    def faq() -> None:
        """Vetted questions and answers, served before retrieval to the people their ACL admits."""

    @faq.command("add")
    @click.option("--id", "entry_id", required=True, help="Stable identifier (no whitespace).")
    @click.option("--question", required=True, help="The vetted question.")
    @click.option("--answer", required=True, help="The answer, served exactly as written.")
    @click.option("--alias", "aliases", multiple=True, help="Another phrasing (repeatable).")
    @click.option(
        "--acl",
        "acl",
        multiple=True,
        help="Principal allowed to receive it: user:<id>, group:<id> or everyone (repeatable). "
        "Without any, nobody is served.",
    )
    @click.option(
        "--sensitivity",
        default=Sensitivity.INTERNAL.name,
        show_default=True,
        help="PUBLIC / INTERNAL / CONFIDENTIAL / RESTRICTED (RESTRICTED is never served).",
    )
    @click.option(
        "--cite",
        "cites",
        multiple=True,
        help="DOC_ID[#LOCATOR] of an indexed document (repeatable).",
    )
    @click.option("--valid-from", help="ISO 8601; not served before (naive times are UTC).")
    @click.option("--valid-until", help="ISO 8601; not served from then on (naive times are UTC).")
    @click.option("--replace", is_flag=True, help="Replace an existing entry with this id.")
    @pass_app_json
    def add(
        app_ctx: AppContext,
        entry_id: str,
        question: str,
        answer: str,
        aliases: tuple[str, ...],
        acl: tuple[str, ...],
        sensitivity: str,
        cites: tuple[str, ...],
        valid_from: str | None,
        valid_until: str | None,
        replace: bool,
        as_json: bool,
    ) -> None:
        """Add one entry."""
        from clearance.answer.faq import FaqEntry, FaqRepository
        from clearance.model import Sensitivity

        try:
            level = Sensitivity.parse(sensitivity)
        except ValueError as exc:
            raise MetadataError(f"--sensitivity: {exc}") from None
        principals = _principals(acl)
        start = _window(valid_from, "--valid-from")
        end = _window(valid_until, "--valid-until")
        with app_ctx.open() as app:
            entry = FaqEntry(
                id=entry_id.strip(),
                question=question,
                aliases=aliases,
                answer=answer,
                citations=tuple(_citation(app.store, c) for c in cites),
                acl=principals,
                sensitivity=level,
                valid_from=start,
                valid_until=end,
            )
            replaced = FaqRepository(app.store).add(entry, replace=replace)
        if printed_json(as_json, entry.to_dict() | {"replaced": replaced}):
            return
        console.print(f"{'replaced' if replaced else 'added'} faq entry {safe(entry.id)}")
        if not entry.acl:
            warn("no --acl given: nobody will be served")
        if entry.sensitivity is Sensitivity.RESTRICTED:
            warn("RESTRICTED entries are never served")

    @faq.command("list")
    @pass_app_json
    def list_entries(app_ctx: AppContext, as_json: bool) -> None:
        """One line per entry."""
        from clearance.answer.faq import FaqRepository

        with app_ctx.open() as app:
            entries = FaqRepository(app.store).list()
        if printed_json(as_json, [e.to_dict() for e in entries]):
            return
        table = Table("id", "sensitivity", "acl", "valid", "question")
        for e in entries:
            start = e.valid_from.isoformat() if e.valid_from else "…"
            end = e.valid_until.isoformat() if e.valid_until else "…"
            window = (
                "always" if e.valid_from is None and e.valid_until is None else f"{start} → {end}"
            )
            table.add_row(
                safe(e.id),
                e.sensitivity.name,
                safe(", ".join(sorted(e.acl)) or "(nobody)"),
                safe(window),
                safe(e.question),
            )
        console.print(table)
        console.print(f"{len(entries)} faq entries")

    @faq.command("import")
    @click.argument("file", type=EXISTING_FILE)
    @pass_app_json
    def import_entries(app_ctx: AppContext, file: Path, as_json: bool) -> None:
        """Add or replace entries from a JSONL file; a bad line changes nothing."""
        from clearance.answer.faq import FaqRepository

        with app_ctx.open() as app:
            report = FaqRepository(app.store).import_jsonl(file)
        if not printed_json(as_json, report.to_dict()):
            console.print(
                f"imported {safe(file)}: {len(report.added)} added, {len(report.replaced)} replaced"
            )

    @faq.command("remove")
    @click.argument("entry_id", metavar="ID")
    @pass_app_json
    def remove(app_ctx: AppContext, entry_id: str, as_json: bool) -> None:
        """Delete one entry."""
        from clearance.answer.faq import FaqRepository

        with app_ctx.open() as app:
            removed = FaqRepository(app.store).remove(entry_id)
        if not removed:
            raise NotFoundError(f"no faq entry {entry_id!r}")
        if not printed_json(as_json, {"removed": entry_id}):
            console.print(f"removed faq entry {safe(entry_id)}")
