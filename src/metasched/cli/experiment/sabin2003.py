"""``metasched experiment sabin2003``: seed 000's figures 1-14 (CSV + PNG + markdown summary)."""

from __future__ import annotations

import csv
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from metasched.cli.experiment import (
    ExecutorOpt,
    OutOpt,
    ReplotOpt,
    ResumeOpt,
    WorkersOpt,
    app,
    executor_for,
    open_journal,
    progress_bar,
    resolve_traces,
)
from metasched.experiments import sabin2003 as exp
from metasched.experiments.traces import trace_words
from metasched.workload.swf import read_swf_head

console = Console()


@app.command("sabin2003")
def sabin2003(
    out: OutOpt,
    figure: Annotated[list[int] | None, typer.Option(help="figure number 1-14 (repeatable); default all")] = None,
    trace: Annotated[
        list[str] | None,
        typer.Option(help="CTC, SDSC, SDSC-BLUE, KTH, HPC2N or an SWF path (repeatable); default CTC and SDSC"),
    ] = None,
    jobs: Annotated[int, typer.Option(help="first N jobs of each trace (each site gets a copy)")] = 5000,
    load: Annotated[list[float] | None, typer.Option(help="load factors (repeatable); default 1.0..2.0 by 0.2")] = None,
    seed: Annotated[int, typer.Option(help="seed of the benchmark and data-size draws")] = 1,
    workers: WorkersOpt = 2,
    platform: Annotated[
        str,
        typer.Option(
            "--platform",
            help="the sites: a preset (metasched platforms) or a TOML file; every site is resized to the trace's "
            "processors (--procs)",
        ),
    ] = exp.PLATFORM,
    procs: Annotated[
        list[str] | None,
        typer.Option(
            "--procs",
            help="processors per site, for all traces (430) or one (CTC=430), repeatable; default: the trace's "
            "MaxProcs (the paper's CTC sites had 430, the cleaned trace declares 338)",
        ),
    ] = None,
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot: ReplotOpt = False,
    study: Annotated[
        list[str] | None,
        typer.Option(
            "--study",
            help="run a sensitivity study instead of the figures (repeatable): "
            + ", ".join(exp.STUDIES)
            + "; results in OUT/study-NAME/",
        ),
    ] = None,
) -> None:
    """Heterogeneous multi-site schemes of Sabin et al. 2003 over load factors, figures 1-14.

    Each finished simulation is appended to OUT/runs.partial.jsonl at once, so an interrupted
    sweep loses nothing: run it again with --resume to do only the simulations left.
    """
    figures = sorted(set(figure or exp.FIGURES))
    bad = [n for n in figures if n not in exp.FIGURES]
    if bad:
        raise typer.BadParameter(f"unknown figure(s) {bad}; the paper has figures 1-14")
    unknown = [s for s in study or [] if s not in exp.STUDIES]
    if unknown:
        raise typer.BadParameter(f"unknown study {unknown[0]!r}; known: {', '.join(exp.STUDIES)}", param_hint="--study")
    if replot and study:
        for name in study:
            where = out / f"study-{name}"
            _study_outputs(exp.STUDIES[name], _read_runs(where / "runs.csv"), where)
        return
    if replot:
        rows = _read_runs(out / "runs.csv")
        traces = list(dict.fromkeys(r["trace"] for r in rows))
        have = {r["scheme"] for r in rows}
        figures = [n for n in figures if set(exp.FIGURES[n].series) <= have]
        loads = sorted({float(r["load_factor"]) for r in rows})
        head = (
            f"Redrawn by --replot from runs.csv ({len(rows)} simulations); see that run's own summary for its timing."
        )
        known = _read_described(out / SETUP)
        _write_outputs(out, rows, figures, traces, [k for k in exp.SCHEMES if k in have], loads, head, workers, known)
        return
    if jobs <= 0:
        raise typer.BadParameter(f"--jobs must be positive, got {jobs}")
    loads = sorted(set(load or exp.LOAD_FACTORS))
    if any(not (f > 0) for f in loads):
        raise typer.BadParameter(f"load factors must be positive, got {loads}")
    try:
        sites = exp.load_sites(platform)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--platform") from None
    data: dict[str, exp.TraceData] = {}
    resolved = resolve_traces(trace or ["CTC", "SDSC"])
    sizes = _site_sizes(procs or [], [name for name, _ in resolved])
    described: dict[str, tuple[str, int]] = {}
    for name, path in resolved:
        base, declared = read_swf_head(path, jobs)
        size = sizes.get(name, declared)
        widest = max((j.requested_procs for j in base), default=0)
        if widest > size:
            raise typer.BadParameter(
                f"trace {name}: a job needs {widest} processors, the sites have {size}", param_hint="--procs"
            )
        data[name] = exp.TraceData(name=name, jobs=base, procs=size, platform=sites)
        described[name] = (trace_words(path), size)
        console.print(f"{name}: {path.name}, first {len(base)} jobs, {size} processors per site")
    out.mkdir(parents=True, exist_ok=True)
    if study:
        for name in study:
            _run_study(exp.STUDIES[name], data, loads, out / f"study-{name}", seed, workers, executor)
        return
    schemes = exp.schemes_for(figures)
    n_tasks = len(data) * len(loads) * len(schemes)
    inputs = {
        "jobs": jobs,
        "seed": seed,
        "platform": exp.platform_inputs(sites),
        "traces": {n: d.procs for n, d in data.items()},
    }
    journal, earlier = open_journal(out, inputs, resume=resume, console=console, what="simulations")
    started = time.perf_counter()
    with (
        progress_bar("sabin2003", console) as progress,
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
    ):
        bar = progress.add_task("runs", total=n_tasks)
        wanted = {(t, float(f), s) for t in data for f in loads for s in schemes}
        progress.advance(bar, sum(1 for r in earlier if (r["trace"], float(r["load_factor"]), r["scheme"]) in wanted))

        def done(row: dict[str, Any]) -> None:
            log.append(row)
            progress.advance(bar)

        rows = exp.run_sweep(
            data, schemes, loads, seed=seed, workers=workers, on_done=done, done_rows=earlier,
            meanwhile=exp.load_plotting, executor=pool, stage_dir=out / "stage",
        )  # fmt: skip
    elapsed = time.perf_counter() - started
    exp.write_csv(out / "runs.csv", rows)
    head = (
        f"{n_tasks} simulations in {elapsed:.1f} s with {workers} worker(s); seed {seed}; {jobs} jobs per trace copy."
    )
    (out / SETUP).write_text(json.dumps({"traces": {t: list(d) for t, d in described.items()}}, indent=2) + "\n")
    _write_outputs(out, rows, figures, list(data), schemes, loads, head, workers, described)
    console.print(f"wrote {out}/runs.csv, fig*.csv, fig*.png, summary.md ({elapsed:.1f} s)")


def _run_study(
    study: exp.Study,
    data: dict[str, exp.TraceData],
    loads: list[float],
    out: Path,
    seed: int,
    workers: int,
    executor: str,
) -> None:
    """One sensitivity study: its schemes on its trace variants, through the runner; runs.csv,
    study.csv (means per variant), study.png and summary.md in ``out``."""
    variants = exp.study_variants(study.name, data)
    out.mkdir(parents=True, exist_ok=True)
    n_tasks = len(variants) * len(loads) * len(study.schemes)
    console.print(escape(f"study {study.name}: {', '.join(variants)}; {n_tasks} simulations"))
    started = time.perf_counter()
    with (
        progress_bar(study.name, console) as progress,
        executor_for(executor, workers=workers, out=out) as pool,
    ):
        bar = progress.add_task("runs", total=n_tasks)
        rows = exp.run_sweep(
            variants, list(study.schemes), loads, seed=seed, workers=workers,
            on_done=lambda _row: progress.advance(bar), executor=pool, stage_dir=out / "stage",
        )  # fmt: skip
    exp.write_csv(out / "runs.csv", rows)
    _study_outputs(study, rows, out)
    console.print(f"wrote {out}/runs.csv, study.csv, study.png, summary.md ({time.perf_counter() - started:.1f} s)")


def _study_outputs(study: exp.Study, rows: list[dict[str, Any]], out: Path) -> None:
    """study.csv (means per variant), study.png and summary.md from a study's rows."""
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    exp.write_csv(out / "study.csv", exp.study_rows(rows, study))
    exp.plot_study(out / "study.png", rows, study, traces)
    command = "metasched experiment sabin2003 " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    (out / "summary.md").write_text(exp.study_markdown(rows, study, traces, command))


def _write_outputs(
    out: Path,
    rows: list[dict[str, Any]],
    figures: list[int],
    traces: list[str],
    schemes: list[str],
    loads: list[float],
    head: str,
    workers: int,
    described: dict[str, tuple[str, int]],
) -> None:
    """Figures (CSV + PNG, drawn by ``workers`` processes), summary.md and the table on the
    console, from the sweep's rows."""
    for n in figures:
        exp.write_csv(out / f"fig{n:02d}.csv", exp.figure_rows(rows, exp.FIGURES[n]))
    exp.plot_figures(out, rows, figures, traces, workers=workers)
    command = "metasched experiment sabin2003 " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    notes = [
        head,
        "Processors per site: the trace's MaxProcs unless --procs says otherwise (see Traces; the paper gives 430"
        " for CTC and 128 for SDSC). The sites are the platform's (--platform, default the preset sabin2003), every"
        " one resized to that many processors.",
        "Each site gets its own copy of the trace (home site), copies 2 and 3 shifted by 3 h; the benchmark of every"
        " job is drawn independently (Table 1's four rows IS.8, MG.8, MG.256, LU.256).",
        "Messages: 2(m-1) per start attempt with m live copies, m-1 more on an accepted start, 2N per job for"
        " completion-time site selection when K<N (none when K=N: all sites are chosen anyway).",
        "Utilization counts killed copies and data transfers as busy time; effective utilization uses best run times.",
        "The text names the content of figures 1, 2, 4, 5, 8-12 only; figures 3, 6, 7, 9, 10, 13 and 14 follow the"
        " text around them (3: effective utilization of greedy vs MR; 13-14: efficacy, load-based sites, K=1..4).",
        "Cancel-slower-only keeps the copies at faster sites; one of them that can complete strictly earlier kills"
        " the running copy and restarts the job (kills and wasted processor-seconds are in runs.csv).",
        "Completion-based decisions read other sites' reservations from their latest conservative plan;"
        " a job's copy at its fastest chosen site is never denied, so efficacy priority cannot starve it.",
    ]
    (out / "summary.md").write_text(exp.summary_markdown(rows, traces, command, notes, described))
    summary = Table(title=f"sabin2003: mean turnaround (s) at load factor {loads[0]} and {loads[-1]}")
    summary.add_column("scheme")
    for t in traces:
        summary.add_column(t, justify="right")
    for key in schemes:
        cells = []
        for t in traces:
            vals = [r["mean_turnaround"] for r in rows if r["trace"] == t and r["scheme"] == key]
            cells.append(f"{vals[0]:,.0f} .. {vals[-1]:,.0f}" if vals else "-")
        summary.add_row(exp.SCHEMES[key].label, *cells)
    console.print(summary)


def _read_runs(path: Path) -> list[dict[str, Any]]:
    """The rows of a sweep's runs.csv, numbers as numbers (empty cells left out)."""
    if not path.is_file():
        raise typer.BadParameter(f"--replot: {path} not found; run the sweep first")
    with path.open(newline="") as fh:
        rows = []
        for number, record in enumerate(csv.DictReader(fh), 2):
            row: dict[str, Any] = {}
            for key, text in record.items():
                if key in ("trace", "scheme"):
                    row[key] = text
                elif text:
                    try:
                        row[key] = float(text)
                    except ValueError:
                        raise typer.BadParameter(f"{path}:{number}: {key} is not a number: {text!r}") from None
            if "trace" not in row or row.get("scheme") not in exp.SCHEMES or "load_factor" not in row:
                raise typer.BadParameter(f"{path}:{number}: not a sabin2003 run (trace, load_factor, known scheme)")
            rows.append(row)
    if not rows:
        raise typer.BadParameter(f"--replot: {path} holds no simulation")
    return rows


#: The traces as run (SWF header words, processors per site), for --replot's summary.
SETUP = "setup.json"


def _read_described(path: Path) -> dict[str, tuple[str, int]]:
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text())["traces"]
        return {str(t): (str(v[0]), int(v[1])) for t, v in raw.items()}
    except (ValueError, KeyError, TypeError, IndexError):
        raise typer.BadParameter(f"{path}: not a sabin2003 setup file; delete it to replot without it") from None


def _site_sizes(specs: list[str], traces: list[str]) -> dict[str, int]:
    """``--procs`` values (``430`` for every trace, ``CTC=430`` for one) by trace label."""
    sizes: dict[str, int] = {}
    for spec in specs:
        name, _, value = spec.rpartition("=")
        try:
            n = int(value)
        except ValueError:
            raise typer.BadParameter(f"expected N or TRACE=N, got {spec!r}", param_hint="--procs") from None
        if n <= 0:
            raise typer.BadParameter(f"processors must be positive, got {spec!r}", param_hint="--procs")
        if name and name not in traces:
            raise typer.BadParameter(f"{spec!r}: no trace labelled {name!r} (traces: {traces})", param_hint="--procs")
        for t in [name] if name else traces:
            sizes[t] = n
    return sizes
