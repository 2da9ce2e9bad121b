"""``metasched experiment pasquali2010``: seed 004's two-level scheduler, section 5."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.experiment import (
    ExecutorOpt,
    ReplotOpt,
    ResumeOpt,
    app,
    executor_for,
    open_journal,
    progress_bar,
)
from metasched.experiments.pasquali2010 import (
    CASE_LABELS,
    STUDIES,
    TIME_UNITS,
    Pasquali2010Config,
    ReplotError,
    config_dict,
    replot,
    run,
)
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
    time_unit: str = typer.Option(
        "seconds",
        "--time-unit",
        help="Unit of Ta (the paper's 'simulator time unit'): seconds or minutes; estimates and margins stay seconds.",
    ),
    study: list[str] = typer.Option(
        [], "--study", help="Sensitivity study to run too (repeatable): time-unit (both readings of the time unit)."
    ),
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot_: ReplotOpt = False,
) -> None:
    """Pasquali et al. 2010: MS heuristics vs LS heuristics vs FCFS+EASY on a 4-cluster grid.

    Each finished run is appended to OUT/runs.partial.jsonl at once: run again with --resume to do
    only the runs left. --replot redraws the figures and summary.md from OUT without simulating.
    """
    console = Console()
    if replot_:
        try:
            cfg, rows, timings = replot(out)
        except ReplotError as err:
            raise typer.BadParameter(str(err), param_hint="--replot") from None
        _print_table(console, cfg, rows, timings)
        console.print(f"Redrew {out}/summary.md, CSV and PNG files from its CSVs (no simulation).")
        return
    if time_unit not in TIME_UNITS:
        raise typer.BadParameter(f"{time_unit!r}: expected one of {', '.join(TIME_UNITS)}", param_hint="--time-unit")
    bad = [s for s in study if s not in STUDIES]
    if bad:
        raise typer.BadParameter(
            f"unknown study {bad[0]!r}; known: " + ", ".join(f"{k} ({v})" for k, v in STUDIES.items()),
            param_hint="--study",
        )
    units = (time_unit, *(u for u in TIME_UNITS if u != time_unit)) if "time-unit" in study else (time_unit,)
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
            time_units=units,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    total = len(cfg.time_units) * len(cfg.tas) * len(cfg.cases) * cfg.repetitions
    inputs = {k: v for k, v in config_dict(cfg).items() if k != "workers"}
    journal, earlier = open_journal(out, inputs, resume=resume, console=console, what="runs")
    with (
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
        progress_bar("pasquali2010", console) as bar,
    ):
        task = bar.add_task("runs", total=total)
        rows, timings = run(
            cfg, out, progress=lambda k: bar.advance(task, k), executor=pool, done=earlier, on_record=log.append
        )
    _print_table(console, cfg, rows, timings)
    console.print(f"Wrote {out}/summary.md, CSV and PNG files.")


def _print_table(
    console: Console, cfg: Pasquali2010Config, rows: list[dict[str, Any]], timings: list[dict[str, Any]]
) -> None:
    table = Table(title=f"Ta = {cfg.focus_ta:g}, whole grid (mean over {cfg.repetitions} runs)")
    for col in (
        "Ta in",
        "case",
        "% missed deadline",
        "CPU usage %",
        "licence usage %",
        "slowdown (no deadline)",
        "µs/LS pass",
    ):
        table.add_column(col)
    for u in cfg.time_units:
        for c in cfg.cases:
            sel = [
                r
                for r in rows
                if r["time_unit"] == u and r["case"] == c and r["ta"] == cfg.focus_ta and r["cluster"] == "all"
            ]
            tsel = [t for t in timings if t["time_unit"] == u and t["case"] == c and t["ta"] == cfg.focus_ta]

            def mean(key: str, sel: list[dict[str, Any]] = sel) -> float:
                return sum(r[key] for r in sel) / len(sel)

            table.add_row(
                u,
                CASE_LABELS[c],
                f"{mean('missed_deadline_pct'):.1f}",
                f"{mean('cpu_usage_pct'):.1f}",
                f"{mean('licence_usage_pct'):.1f}",
                f"{mean('slowdown_no_deadline'):.2f}",
                f"{sum(t['ls_us_per_pass'] for t in tsel) / len(tsel):.0f}",
            )
    console.print(table)
