"""``clearance eval``: measure retrieval quality on a BEIR-format dataset."""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clearance.cli.context import AppContext, console, emit_json, json_option, pass_app
from clearance.cli.safe import safe, terminal_safe
from clearance.evaluation.beir import load_beir
from clearance.evaluation.retrieval import MEASURES, RetrievalReport, evaluate_retrieval
from clearance.ingest.pipeline import FileResult

__all__ = ["register"]


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.fields[stage]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", markup=False),
        console=console,
        transient=True,
    )


def _retrieval(app_ctx: AppContext, dataset_path: Path, split: str, quiet: bool) -> RetrievalReport:
    dataset = load_beir(dataset_path, split)
    settings = app_ctx.settings()
    if quiet:
        return evaluate_retrieval(dataset, settings)
    with _progress() as progress:
        task = progress.add_task("", total=None, stage="indexing")

        def planned(n: int) -> None:
            progress.update(task, total=n, completed=0)

        def indexed(result: FileResult) -> None:
            progress.update(task, advance=1, description=terminal_safe(result.doc_id or ""))

        def queries(n: int) -> None:
            progress.update(task, total=n, completed=0, stage="searching", description="")

        def searched(query_id: str) -> None:
            progress.update(task, advance=1, description=terminal_safe(query_id))

        return evaluate_retrieval(
            dataset,
            settings,
            on_plan=planned,
            on_result=indexed,
            on_queries=queries,
            on_query=searched,
        )


def _print_retrieval(report: RetrievalReport) -> None:
    table = Table(
        title=f"{safe(report.dataset)}: {report.queries} queries, "
        f"{report.indexed}/{report.documents} documents ({report.chunks} chunks), "
        f"{safe(report.embedding)}"
    )
    table.add_column("retriever")
    for measure in MEASURES:
        table.add_column(str(measure), justify="right")
    for retriever, values in report.scores.items():
        table.add_row(retriever, *(f"{values[str(m)]:.3f}" for m in MEASURES))
    console.print(table)
    for query_id, why in report.skipped_queries.items():
        console.print(f"[yellow]skipped[/yellow] {safe(query_id)}: {safe(why)}")


def register(cli: click.Group) -> None:
    @cli.command("eval")
    @click.option(
        "--retrieval",
        "dataset",
        type=click.Path(path_type=Path),
        required=True,
        help="A BEIR-format dataset (folder or zip: corpus.jsonl, queries.jsonl, "
        "qrels/SPLIT.tsv). Its corpus is indexed in a temporary folder, never in the "
        "configured index.",
    )
    @click.option(
        "--split", default="test", show_default=True, help="The qrels file of the dataset."
    )
    @json_option
    @pass_app
    def eval_(app_ctx: AppContext, dataset: Path, split: str, as_json: bool) -> None:
        """Measure retrieval quality: nDCG@10 and Recall@100 of the lexical, vector, hybrid
        and reranked searches, with the configured embedding model and search settings.

        JSON: {"dataset", "documents", "indexed", "chunks", "queries", "embedding",
        "measures", "retrievers": {NAME: {MEASURE: value}}, "skipped_queries"}. A dataset
        it cannot read exits 2.
        """
        report = _retrieval(app_ctx, dataset, split, quiet=as_json)
        if as_json:
            emit_json(report.to_dict())
            return
        _print_retrieval(report)
