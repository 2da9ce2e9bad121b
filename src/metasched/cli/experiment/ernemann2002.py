"""``metasched experiment ernemann2002``: seed 001's grid job-sharing / multi-site sweep."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from metasched.cli.experiment import PARTIAL, ExecutorOpt, ResumeOpt, WorkersOpt, app, executor_for
from metasched.experiments import ernemann2002 as exp
from metasched.experiments.ernemann2002_figures import read_rows, summary_markdown, write_figures, write_rows
from metasched.experiments.runner import Journal, JournalError
from metasched.workload.info import describe

console = Console()


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"{what}: expected comma-separated numbers, got {text!r}") from None


@app.command("ernemann2002")
def ernemann2002(
    out: Annotated[Path, typer.Option("--out", help="Output directory (CSV, PNG, summary.md).")],
    trace: Annotated[
        Path | None, typer.Option(help="CTC SP2 trace (default: <shared>/data/traces/" + exp.TRACE_NAME + ").")
    ] = None,
    jobs: Annotated[int, typer.Option(help="Jobs per workload (the paper: 10,000).")] = exp.N_JOBS,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic CTC-like workload.")] = exp.SEED,
    configs: Annotated[
        str,
        typer.Option(help="Semicolon-separated configurations: Table 1 names or size lists like 128,128,256."),
    ] = ";".join((*exp.GRID_CONFIGS, exp.REFERENCE)),
    overheads: Annotated[str, typer.Option(help="Multi-site overheads in percent, comma-separated.")] = ",".join(
        f"{100 * p:g}" for p in exp.OVERHEADS
    ),
    workers: WorkersOpt = 2,
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot: Annotated[
        bool, typer.Option("--replot", help="Do not simulate: redo figures and summary from DIR/results.csv.")
    ] = False,
) -> None:
    """Local processing vs job sharing vs multi-site co-allocation (Ernemann et al. 2002)."""
    config_keys = [c.strip() for c in configs.split(";") if c.strip()]
    try:
        for c in config_keys:
            exp.config_of(c)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--configs") from None
    ps = [p / 100 for p in _floats(overheads, "--overheads")]
    if any(p < 0 for p in ps):
        raise typer.BadParameter("overheads must not be negative", param_hint="--overheads")
    if jobs <= 0:
        raise typer.BadParameter("must be positive", param_hint="--jobs")
    trace_path = trace if trace is not None else exp.default_trace()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        workloads = exp.load_workloads(trace_path, jobs, seed)
    except (FileNotFoundError, ValueError) as err:
        console.print(f"[red]{err}[/]")
        raise typer.Exit(2) from None
    t_load = time.perf_counter() - t0
    planned: list[int] = []
    if replot:
        if not (out / "results.csv").exists():
            console.print(f"[red]--replot: {out / 'results.csv'} not found; run the sweep first[/]")
            raise typer.Exit(2)
        rows = read_rows(out / "results.csv")
    else:
        inputs = {
            "trace": str(trace_path.resolve()),
            "jobs": jobs,
            "seed": seed,
            "configs": config_keys,
            "overheads": ps,
        }
        journal = Journal(out / PARTIAL, inputs)
        try:
            earlier = journal.read() if resume else []
        except JournalError as err:
            console.print(f"[red]error: {err}[/]")
            raise typer.Exit(2) from None
        if earlier:
            console.print(f"resuming: {len(earlier)} simulations already in {journal.path}")
        with (
            journal.open(resume=resume) as log,
            executor_for(executor, workers=workers, out=out) as pool,
            Progress(
                TextColumn("[bold]ernemann2002[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            ) as progress,
        ):
            task = progress.add_task("runs", total=None)

            def on_plan(n: int) -> None:
                planned.append(n)
                progress.update(task, total=n)

            rows = exp.run_sweep(
                workloads,
                config_keys,
                ps,
                workers=workers,
                on_plan=on_plan,
                on_done=lambda _run: progress.advance(task),
                on_row=log.append,
                done_rows=earlier,
                executor=pool,
                stage_dir=out / "stage",
            )
    t_sweep = time.perf_counter() - t0 - t_load
    write_rows(rows, out / "results.csv")
    figures = write_figures(rows, out)
    claims = exp.evaluate_claims(rows)
    infos = {w: describe(j, procs=512) for w, j in workloads.items()}
    setup = exp.describe_setup(trace_path, workloads, infos, seed)
    if not replot:
        setup.append(
            f"{len(rows)} result rows from {sum(planned)} distinct simulations (identical modified workloads run "
            f"once); wall time: loading {t_load:.1f} s, sweep {t_sweep:.1f} s on {workers} worker(s)"
        )
    text = summary_markdown(rows, claims, setup=setup, differences=exp.differences(rows, infos), figures=figures)
    (out / "summary.md").write_text(text)
    (out / "claims.json").write_text(
        json.dumps([{"claim": c.text, "holds": c.holds, "detail": c.detail} for c in claims], indent=2) + "\n"
    )
    table = Table(title="Seed 001 claims")
    table.add_column("claim")
    table.add_column("holds")
    table.add_column("measured", overflow="fold")
    for claim in claims:
        table.add_row(claim.text, "[green]yes[/]" if claim.holds else "[red]no[/]", claim.headline)
    console.print(table)
    console.print(f"wrote results.csv, summary.md (full numbers), claims.json and {len(figures)} figures in {out}")
