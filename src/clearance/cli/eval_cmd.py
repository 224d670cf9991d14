"""``clearance eval``: a suite of questions through the answer engine, judged per rollout
stage (``clearance eval SUITE``), or retrieval quality on a BEIR-format dataset
(``clearance eval --retrieval DATASET``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from clearance.cli.context import (
    AppContext,
    console,
    pass_app_json,
    print_error,
    printed_json,
    progress,
)
from clearance.cli.safe import make_console, safe, terminal_safe
from clearance.errors import EvaluationError

if TYPE_CHECKING:
    from rich.progress import Progress

    from clearance.evaluation.retrieval import RetrievalReport
    from clearance.evaluation.rollout import SuiteReport
    from clearance.evaluation.runner import CaseRun
    from clearance.ingest.pipeline import FileResult

# The evaluation modules (matplotlib, ir-measures, the engine's scorers) are imported by the
# command when it runs, not when the CLI starts: every other command would pay for them.

__all__ = ["register"]


def _progress() -> Progress:
    return progress("{task.fields[stage]}")


def _retrieval(app_ctx: AppContext, dataset_path: Path, split: str, quiet: bool) -> RetrievalReport:
    from clearance.evaluation.beir import load_beir
    from clearance.evaluation.retrieval import evaluate_retrieval

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
    from clearance.evaluation.retrieval import MEASURES

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


#: The ratios a suite table shows after the rates (``RATE_LABELS``), with their labels.
_RATIOS = {"denied_source_rate": "denied rate", "stale_source_ratio": "stale ratio"}


def _cell(measure: dict[str, Any]) -> str:
    rate = measure.get("rate")
    return "–" if rate is None else f"{rate:.2f}"


def _suite(
    app_ctx: AppContext, suite_path: Path, assistant: str | None, quiet: bool
) -> SuiteReport:
    from clearance.config import require_assistant
    from clearance.evaluation.rollout import SuiteReport
    from clearance.evaluation.runner import run_suite
    from clearance.evaluation.suite import load_suite

    suite = load_suite(suite_path)
    with app_ctx.open() as app:
        if assistant is not None:
            require_assistant(app.settings, assistant)
        for manifest in suite.refresh:
            # A real re-read of the suite's sources: access read now, content unchanged
            # unless it changed. A corpus past its SLA serves again only through this.
            result = app.ingest([], manifest=manifest)
            if result.failed:
                first = result.failed[0]
                raise EvaluationError(f"refresh {manifest.name}: {first.source}: {first.error}")
            if not quiet:
                make_console(stderr=True).print(
                    f"refreshed {len(result.results)} documents' access from {safe(manifest.name)}"
                )
        if quiet:
            runs = run_suite(app, suite, assistant=assistant)
        else:
            with _progress() as progress:
                task = progress.add_task("", total=None, stage="asking")

                def planned(n: int) -> None:
                    progress.update(task, total=n)

                def asked(run: CaseRun) -> None:
                    progress.update(task, advance=1, description=terminal_safe(run.case.id))

                runs = run_suite(app, suite, assistant=assistant, on_cases=planned, on_case=asked)
    return SuiteReport.of(suite, runs, assistant)


def _print_suite(data: dict[str, Any], regressions: list[str] | None) -> None:
    """Measures down, stages across (then all cases together): fits a terminal however
    many measures there are."""
    from clearance.evaluation.suite import RATE_LABELS

    columns = [(s["name"], s["measures"], s) for s in data["stages"]]
    columns.append(("all", data["overall"], None))
    table = Table(title=f"{safe(data['suite'])}: {data['overall']['cases']} cases")
    table.add_column("measure", no_wrap=True)
    for name, _, _ in columns:
        table.add_column(safe(name), justify="right")
    table.add_row("cases", *(str(m["cases"]) for _, m, _ in columns))
    for key, label in {**RATE_LABELS, **_RATIOS}.items():
        table.add_row(label, *(_cell(m[key]) for _, m, _ in columns))
    table.add_row("leaks", *(str(m["leaks"]) for _, m, _ in columns))
    table.add_row("fabricated", *(str(m["fabricated_numbers"]) for _, m, _ in columns))
    table.add_row(
        "p95 ms",
        *(
            "–" if m["latency_p95_ms"] is None else f"{m['latency_p95_ms']:.0f}"
            for _, m, _ in columns
        ),
    )
    table.add_row(
        "gate",
        *(
            "" if s is None else "[green]pass[/green]" if s["pass"] else "[red]FAIL[/red]"
            for _, _, s in columns
        ),
    )
    console.print(table)
    latency = Table(title="latency per route")
    for header in ("route", "cases", "p50 ms", "p95 ms"):
        latency.add_column(header, justify="left" if header == "route" else "right")
    for route, figures in data["latency_by_route"].items():
        latency.add_row(
            route, str(figures["count"]), f"{figures['p50_ms']:.1f}", f"{figures['p95_ms']:.1f}"
        )
    console.print(latency)
    for stage in data["stages"]:
        for check in stage["checks"]:
            if not check["pass"]:
                console.print(
                    f"[red]gate[/red] {safe(stage['name'])}: {check['measure']} "
                    f"{check['value']} is not {check['op']} {check['threshold']}"
                )
    for result in data["results"]:
        if result["problems"]:
            console.print(
                f"[yellow]case[/yellow] {safe(result['id'])}: {safe('; '.join(result['problems']))}"
            )
    for regression in regressions or ():
        console.print(f"[red]regression[/red] {safe(regression)}")


def _verdict(data: dict[str, Any], regressions: list[str] | None) -> str | None:
    """Why the run fails as a CI gate, in one line; ``None`` when it passes."""
    failing = [s["name"] for s in data["stages"] if not s["pass"]]
    parts = []
    if failing:
        parts.append(f"{len(failing)} stage(s) fail their gate ({', '.join(failing)})")
    if regressions:
        parts.append(f"{len(regressions)} regression(s) against the baseline")
    return "; ".join(parts) or None


def register(cli: click.Group) -> None:
    @cli.command("eval")
    @click.argument("suite", required=False, type=click.Path(dir_okay=False, path_type=Path))
    @click.option(
        "--assistant",
        help="Only the cases asked through this assistant (SUITE). An unknown name exits 3.",
    )
    @click.option(
        "--report",
        "report_dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Write report.html (self-contained, one section per stage) and report.json here.",
    )
    @click.option(
        "--baseline",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The JSON of an earlier run (SUITE): any regression exits 1.",
    )
    @click.option(
        "--retrieval",
        "dataset",
        type=click.Path(path_type=Path),
        help="Instead of a suite: a BEIR-format dataset (folder or zip: corpus.jsonl, "
        "queries.jsonl, qrels/SPLIT.tsv), indexed in a temporary folder, never in the "
        "configured index.",
    )
    @click.option(
        "--split", default="test", show_default=True, help="The qrels file of the dataset."
    )
    @pass_app_json
    @click.pass_context
    def eval_(
        ctx: click.Context,
        app_ctx: AppContext,
        suite: Path | None,
        assistant: str | None,
        report_dir: Path | None,
        baseline: Path | None,
        dataset: Path | None,
        split: str,
        as_json: bool,
    ) -> None:
        """Evaluate the answer engine on SUITE, or retrieval on a dataset (--retrieval).

        SUITE (YAML or TOML) lists personas, questions, expectations and rollout stages
        with thresholds. Every case is asked as 'clearance ask' asks it, and judged
        independently: answer usefulness, numeric accuracy, citation validity, refusal and
        clarification correctness, denied-source retrieval rate, leaks, stale-source
        ratio, fabricated numbers and latency, per stage (with its gate), assistant, corpus
        and route. Exits 1 when a stage fails its gate or, with --baseline, on any
        regression; 2 on a bad suite, dataset or baseline.

        JSON (SUITE): {"format", "suite", "pass", "overall", "stages": [{"name", "corpora",
        "measures", "checks", "pass", "open"}], "by_assistant", "by_corpus",
        "latency_by_route", "results", "regressions"}.

        JSON (--retrieval): {"dataset", "documents", "indexed", "chunks", "queries",
        "embedding", "measures", "retrievers": {NAME: {MEASURE: value}},
        "skipped_queries"}: nDCG@10 and Recall@100 of the lexical, vector, hybrid and
        reranked searches with the configured model and search settings.
        """
        if (suite is None) == (dataset is None):
            raise click.UsageError("give a SUITE or --retrieval DATASET (one of them)")
        if dataset is not None:
            if assistant or report_dir or baseline:
                raise click.UsageError(
                    "--assistant, --report and --baseline apply to a SUITE, not --retrieval"
                )
            retrieval = _retrieval(app_ctx, dataset, split, quiet=as_json)
            if not printed_json(as_json, retrieval.to_dict()):
                _print_retrieval(retrieval)
            return
        assert suite is not None
        from clearance.evaluation.html import render_html
        from clearance.evaluation.rollout import compare, load_baseline

        previous = load_baseline(baseline) if baseline is not None else None
        report = _suite(app_ctx, suite, assistant, quiet=as_json)
        data = report.to_dict()
        regressions = compare(data, previous) if previous is not None else None
        data["regressions"] = regressions
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            (report_dir / "report.json").write_text(
                json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
            )
            (report_dir / "report.html").write_text(
                render_html(data, regressions), encoding="utf-8"
            )
        if not printed_json(as_json, data):
            _print_suite(data, regressions)
            if report_dir is not None:
                console.print(f"report: {safe(report_dir / 'report.html')}")
        verdict = _verdict(data, regressions)
        if verdict is not None:
            print_error(verdict)
            ctx.exit(1)
