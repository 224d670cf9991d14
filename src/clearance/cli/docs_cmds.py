"""``clearance docs list|show``: what is in the index (operator commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from clearance.cli.context import AppContext, console, folded_table, pass_app_json, printed_json
from clearance.cli.safe import safe
from clearance.errors import NotFoundError

if TYPE_CHECKING:
    from clearance.model import Document


def document_dict(doc: Document) -> dict[str, Any]:
    def iso(value: Any) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "doc_id": doc.doc_id,
        "title": doc.title,
        "corpus": doc.corpus,
        "source_system": doc.source_system,
        "uri": doc.uri,
        "owner": doc.owner,
        "acl": sorted(doc.acl),
        "sensitivity": doc.sensitivity.name,
        "created_at": iso(doc.created_at),
        "updated_at": iso(doc.updated_at),
        "review_at": iso(doc.review_at),
        "expires_at": iso(doc.expires_at),
        "ai_allowed": doc.ai_allowed,
        "personal_data": doc.personal_data,
        "origin": doc.origin,
        "origin_chain": list(doc.origin_chain),
        "content_hash": doc.content_hash,
        "version": doc.version,
        "format": doc.format,
    }


def register(cli: click.Group) -> None:
    @cli.group("docs")
    def docs() -> None:
        """List and inspect indexed documents."""

    @docs.command("list")
    @click.option("--corpus", help="Only this corpus.")
    @pass_app_json
    def list_docs(app_ctx: AppContext, corpus: str | None, as_json: bool) -> None:
        """One row per document. Ids are never shortened: a long one wraps within its column."""
        with app_ctx.open() as app:
            documents = app.store.list_documents(corpus)
        if printed_json(as_json, [document_dict(d) for d in documents]):
            return
        table = folded_table("doc_id", "corpus", "sensitivity", "format", "title")
        for d in documents:
            table.add_row(
                safe(d.doc_id), safe(d.corpus), d.sensitivity.name, safe(d.format), safe(d.title)
            )
        console.print(table)
        console.print(f"{len(documents)} documents")

    @docs.command("show")
    @click.argument("doc_id")
    @click.option("--chunks", "show_chunks", is_flag=True, help="Also print every chunk.")
    @pass_app_json
    def show(app_ctx: AppContext, doc_id: str, show_chunks: bool, as_json: bool) -> None:
        """Full metadata of one document (and its chunks with locators)."""
        with app_ctx.open() as app:
            doc = app.store.get_document(doc_id)
            if doc is None:
                raise NotFoundError(f"no document {doc_id!r} in the index")
            chunks = app.store.get_chunks(doc_id)
        data = document_dict(doc)
        data["chunks"] = [
            {"chunk_id": c.chunk_id, "locator": c.locator, "sensitivity": c.sensitivity.name}
            | ({"text": c.text} if show_chunks else {})
            for c in chunks
        ]
        if printed_json(as_json, data):
            return
        for key, value in data.items():
            if key != "chunks":
                console.print(f"[bold]{key}[/bold]: {safe(value)}")
        console.print(f"[bold]chunks[/bold]: {len(chunks)}")
        for c in chunks:
            console.print(f"  {safe(c.chunk_id)}  [cyan]{safe(c.locator)}[/cyan]")
            if show_chunks:
                console.print("    " + safe(c.text, multiline=True).replace("\n", "\n    "))
