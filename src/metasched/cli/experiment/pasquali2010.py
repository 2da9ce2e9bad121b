"""``metasched experiment pasquali2010``: seed 004's two-level scheduler, section 5."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from metasched.cli.experiment import PARTIAL, ExecutorOpt, ResumeOpt, app, executor_for
from metasched.experiments.pasquali2010 import CASE_LABELS, Pasquali2010Config, config_dict, run
from metasched.experiments.runner import Journal, JournalError
from metasched.workload.pasquali import PasqualiParams


@app.command("pasquali2010")
def pasquali2010(
    out: Path = typer.Option(..., "--out", help="Output directory (CSV, PNG, summary.md)."),
    repetitions: int = typer.Option(20, help="Repetitions (seeds) per Ta and case."),
    jobs: int = typer.Option(5000, help="Jobs per stream."),
    ta: list[float] = typer.Option([0.0, 5.0, 10.0, 15.0], "--ta", help="Mean inter-arrival times (repeatable)."),
    case: list[str] = typer.Option(["ms", "ls", "none"], "--case", help="Cases: ms, ls, none (repeatable)."),
    workers: int = typer.Option(2, help="Worker processes."),
    seed: int = typer.Option(2010, help="Base seed."),
    licence_types: int = typer.Option(8, help="Number of licence types |L|."),
    licences_per_job: int = typer.Option(3, help="Most licence types a licence-using job asks for."),
    focus_ta: float = typer.Option(5.0, help="Ta of Figures 4 and 5."),
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
) -> None:
    """Pasquali et al. 2010: MS heuristics vs LS heuristics vs FCFS+EASY on a 4-cluster grid."""
    try:
        params = PasqualiParams(n_jobs=jobs, n_licence_types=licence_types, max_licences_per_job=licences_per_job)
        cfg = Pasquali2010Config(
            tas=tuple(ta),
            cases=tuple(case),
            repetitions=repetitions,
            seed=seed,
            workers=workers,
            focus_ta=focus_ta,
            params=params,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    console = Console()
    total = len(cfg.tas) * len(cfg.cases) * cfg.repetitions
    inputs = {k: v for k, v in config_dict(cfg).items() if k != "workers"}
    journal = Journal(out / PARTIAL, inputs)
    try:
        earlier = journal.read() if resume else []
    except JournalError as err:
        raise typer.BadParameter(str(err), param_hint="--resume") from None
    if earlier:
        console.print(f"resuming: {len(earlier)} runs already in {journal.path}")
    with (
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
        Progress(
            TextColumn("pasquali2010"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as bar,
    ):
        task = bar.add_task("runs", total=total)
        rows, timings = run(
            cfg, out, progress=lambda k: bar.advance(task, k), executor=pool, done=earlier, on_record=log.append
        )
    table = Table(title=f"Ta = {cfg.focus_ta:g}, whole grid (mean over {cfg.repetitions} runs)")
    for col in ("case", "% missed deadline", "CPU usage %", "licence usage %", "slowdown (no deadline)", "µs/LS pass"):
        table.add_column(col)
    for c in cfg.cases:
        sel = [r for r in rows if r["case"] == c and r["ta"] == cfg.focus_ta and r["cluster"] == "all"]
        tsel = [t for t in timings if t["case"] == c and t["ta"] == cfg.focus_ta]

        def mean(key: str, sel: list[dict[str, Any]] = sel) -> float:
            return sum(r[key] for r in sel) / len(sel)

        table.add_row(
            CASE_LABELS[c],
            f"{mean('missed_deadline_pct'):.1f}",
            f"{mean('cpu_usage_pct'):.1f}",
            f"{mean('licence_usage_pct'):.1f}",
            f"{mean('slowdown_no_deadline'):.2f}",
            f"{sum(t['ls_us_per_pass'] for t in tsel) / len(tsel):.0f}",
        )
    console.print(table)
    console.print(f"Wrote {out}/summary.md, CSV and PNG files.")
