"""``metasched experiment ernemann2002``: seed 001's grid job-sharing / multi-site sweep."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.experiment import (
    ExecutorOpt,
    ResumeOpt,
    WorkersOpt,
    app,
    executor_for,
    open_journal,
    progress_bar,
    resolve_traces,
)
from metasched.experiments import ernemann2002 as exp
from metasched.experiments.claims import FAILS, HOLDS, evaluate
from metasched.experiments.ernemann2002_figures import (
    read_rows,
    summary_markdown,
    write_figures,
    write_rows,
    write_study,
)
from metasched.model.job import Job
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
        list[str] | None,
        typer.Option(
            help="CTC, SDSC, SDSC-BLUE, KTH, HPC2N or an SWF path (repeatable; default CTC): each gives three "
            "extracts and one synthetic workload"
        ),
    ] = None,
    jobs: Annotated[int, typer.Option(help="Jobs per workload (the paper: 10,000).")] = exp.N_JOBS,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic CTC-like workload.")] = exp.SEED,
    configs: Annotated[
        str,
        typer.Option(
            help="Semicolon-separated configurations: Table 1 names (the presets ernemann2002-NAME), platform TOML "
            "files or size lists like 128,128,256."
        ),
    ] = ";".join((*exp.GRID_CONFIGS, exp.REFERENCE)),
    overheads: Annotated[str, typer.Option(help="Multi-site overheads in percent, comma-separated.")] = ",".join(
        f"{100 * p:g}" for p in exp.OVERHEADS
    ),
    workers: WorkersOpt = 2,
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot: Annotated[
        bool, typer.Option("--replot", help="Do not simulate: redo figures and summary from OUT/results.csv.")
    ] = False,
    study: Annotated[
        list[str] | None,
        typer.Option("--study", help="also write a sensitivity study (repeatable): " + ", ".join(exp.STUDIES)),
    ] = None,
) -> None:
    """Local processing vs job sharing vs multi-site co-allocation (Ernemann et al. 2002)."""
    unknown = [s for s in study or [] if s not in exp.STUDIES]
    if unknown:
        raise typer.BadParameter(f"unknown study {unknown[0]!r}; known: {', '.join(exp.STUDIES)}", param_hint="--study")
    command = "metasched experiment ernemann2002 " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    if replot:
        if not (out / "results.csv").exists():
            raise typer.BadParameter(f"{out / 'results.csv'} not found; run the sweep first", param_hint="--replot")
        try:
            rows = read_rows(out / "results.csv")
        except (ValueError, KeyError) as err:
            raise typer.BadParameter(f"{out / 'results.csv'}: not an ernemann2002 result ({err})") from None
        missing = sorted({k for r in rows[:1] for k in exp.ROW_FIELDS if k not in r})
        if not rows or missing:
            what = f"no column {', '.join(missing)}" if missing else "no run"
            raise typer.BadParameter(
                f"{out / 'results.csv'}: not an ernemann2002 result ({what})", param_hint="--replot"
            )
        setup = _read_setup(out / SETUP)
        _write_outputs(out, rows, setup, command, study or [])
        return
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
    resolved = resolve_traces(trace or ["CTC"])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    workloads: dict[str, list[Job]] = {}
    try:
        for label, path in resolved:
            workloads.update(exp.load_workloads(path, jobs, seed, label=label))
    except (FileNotFoundError, ValueError) as err:
        raise typer.BadParameter(str(err), param_hint="--trace") from None
    t_load = time.perf_counter() - t0
    planned: list[int] = []
    inputs: dict[str, Any] = {
        "traces": {label: str(path.resolve()) for label, path in resolved},
        "jobs": jobs,
        "seed": seed,
        "configs": config_keys,
        "overheads": ps,
    }
    if [label for label, _ in resolved] == ["CTC"]:
        inputs["trace"] = inputs.pop("traces")["CTC"]  # the journal of a one-trace sweep, as before
    journal, earlier = open_journal(out, inputs, resume=resume, console=console, what="simulations")
    with (
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
        progress_bar("ernemann2002", console) as progress,
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
    infos = {w: describe(j, procs=512) for w, j in workloads.items()}
    setup = exp.describe_setup(dict(resolved), workloads, infos, seed)
    (out / SETUP).write_text(json.dumps({"setup": setup}, indent=2) + "\n")
    setup = [
        *setup,
        f"{len(rows)} result rows from {sum(planned)} distinct simulations (identical modified workloads run "
        f"once); wall time: loading {t_load:.1f} s, sweep {t_sweep:.1f} s on {workers} worker(s)",
    ]
    _write_outputs(out, rows, setup, command, study or [])


#: The setup lines of a sweep (facts of its inputs), for --replot's summary.
SETUP = "setup.json"


def _read_setup(path: Path) -> list[str]:
    if not path.is_file():
        return []
    try:
        return [str(line) for line in json.loads(path.read_text())["setup"]]
    except (ValueError, KeyError, TypeError):
        raise typer.BadParameter(f"{path}: not an ernemann2002 setup file; delete it to replot without it") from None


def _write_outputs(out: Path, rows: list[dict[str, Any]], setup: list[str], command: str, studies: list[str]) -> None:
    """Figures, summary.md, claims.json, the studies asked for and the console table, from ``rows``."""
    figures = write_figures(rows, out)
    text = summary_markdown(rows, command=command, setup=setup, figures=figures)
    (out / "summary.md").write_text(text)
    workloads = exp.workload_traces(rows)
    verdicts = evaluate(exp.CLAIMS, rows, workloads)
    (out / "claims.json").write_text(
        json.dumps(
            [
                {
                    "id": v.claim.id,
                    "claim": v.claim.statement,
                    "workload": v.trace,
                    "verdict": v.verdict,
                    "value": v.measure.value if v.measure else None,
                    "detail": v.measure.detail if v.measure else "",
                }
                for v in verdicts
            ],
            indent=2,
        )
        + "\n"
    )
    for name in studies:
        paths = write_study(name, rows, out / f"study-{name}", command)
        console.print(f"study {name}: " + ", ".join(str(p) for p in paths))
    table = Table(title="Seed 001 claims (verdict per workload)")
    table.add_column("claim")
    for w in workloads:
        table.add_column(w)
    for claim in exp.CLAIMS:
        cells = [v.verdict for v in verdicts if v.claim.id == claim.id]
        table.add_row(
            f"{claim.id} {claim.statement}",
            *[f"[green]{c}[/]" if c == HOLDS else f"[red]{c}[/]" if c == FAILS else c for c in cells],
        )
    console.print(table)
    console.print(f"wrote results.csv, summary.md, claims.json and {len(figures)} figures in {out}")
