"""``metasched trace ...``: look at workload files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.errors import bad_input
from metasched.workload.generate import CTC_PROCS, ctc_like, synthetic
from metasched.workload.info import describe
from metasched.workload.swf import SwfError, read_swf, write_swf

app = typer.Typer(help="Inspect SWF workload traces.", no_args_is_help=True)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 or value == int(value) else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@app.command()
def info(
    file: Annotated[Path, typer.Argument(help="An .swf or .swf.gz file.", exists=True, dir_okay=False)],
    procs: Annotated[int | None, typer.Option(help="Machine size (default: the header's MaxProcs).")] = None,
    allow_overrun: Annotated[bool, typer.Option(help="Keep run times beyond the estimate.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Jobs, dropped records, span, offered load, widths, run times and estimate accuracy of FILE."""
    try:
        workload = read_swf(file, allow_overrun=allow_overrun, max_procs=procs)
    except SwfError as err:
        raise bad_input(err) from err
    d = describe(workload)
    if as_json:
        typer.echo(json.dumps(d, indent=2, default=str))
        return
    if not d["jobs"]:
        dropped = ", ".join(f"{count} {reason}" for reason, count in sorted(d["dropped"].items()))
        typer.echo(f"{file}: no jobs ({d['records']} job lines{'; dropped: ' + dropped if dropped else ''})")
        return
    console = Console()
    table = Table(title=f"{file.name}", show_header=False, title_justify="left")
    table.add_column("", style="bold")
    table.add_column("", justify="right")
    table.add_row("records", _fmt(d["records"]))
    table.add_row("jobs kept", _fmt(d["jobs"]))
    for reason, count in sorted(d["dropped"].items()):
        table.add_row(f"dropped: {reason}", _fmt(count))
    table.add_row("processors", _fmt(d["procs"]))
    table.add_row("span (days)", f"{d['span_days']:.1f}")
    table.add_row("offered load", "-" if d["offered_load"] is None else f"{d['offered_load']:.3f}")
    table.add_row("serial / power of two", f"{d['serial_fraction']:.1%} / {d['power_of_two_fraction']:.1%}")
    table.add_row("widest job", _fmt(d["widest"]))
    rt = d["run_time"]
    table.add_row("run time p50 / p90 / max (s)", f"{_fmt(rt['p50'])} / {_fmt(rt['p90'])} / {_fmt(rt['max'])}")
    acc = d["estimate_accuracy"]
    table.add_row("run / estimate mean, median", f"{_fmt(acc['mean'])}, {_fmt(acc['median'])}")
    table.add_row("exact estimates", f"{acc['exact_fraction']:.1%}")
    console.print(table)
    widths = Table(title="widths", title_justify="left")
    widths.add_column("processors")
    widths.add_column("jobs", justify="right")
    widths.add_column("share", justify="right")
    for label, count in d["width_histogram"].items():
        widths.add_row(label, _fmt(count), f"{count / d['jobs']:.1%}")
    console.print(widths)
    for note in workload.notes:
        console.print(f"[yellow]note:[/yellow] {note}")


@app.command()
def generate(
    out: Annotated[Path, typer.Argument(help="Output .swf or .swf.gz file.", dir_okay=False)],
    kind: Annotated[str, typer.Option(help="synthetic | ctc")] = "synthetic",
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 10_000,
    procs: Annotated[int, typer.Option(help="Machine size (synthetic; ctc uses 338).")] = 256,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    load: Annotated[float, typer.Option(help="Target offered load (synthetic).")] = 0.8,
    source: Annotated[
        Path | None, typer.Option(help="ctc: resample this trace instead of the built-in CTC tables.", exists=True)
    ] = None,
) -> None:
    """Write a seeded generated workload as SWF (same arguments, same file)."""
    if kind == "synthetic":
        generated = synthetic(jobs, procs, seed=seed, load=load)
        size = procs
        note = f"metasched synthetic workload: {jobs} jobs, {procs} processors, load {load}, seed {seed}"
    elif kind == "ctc":
        try:
            src = read_swf(source) if source is not None else None
        except SwfError as err:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from err
        generated = ctc_like(jobs, seed=seed, source_jobs=src.jobs if src else None)
        size = src.max_procs if src else CTC_PROCS
        origin = f"resampled from {source.name}" if source is not None else "built-in CTC tables"
        note = f"metasched CTC-like workload: {jobs} jobs, {origin}, seed {seed}"
    else:
        typer.secho(f"error: unknown kind {kind!r} (synthetic | ctc)", fg=typer.colors.RED, err=True)
        raise typer.Exit(2)
    write_swf(out, generated, header={"Version": "2.2", "Note": note, "MaxProcs": str(size), "MaxJobs": str(jobs)})
    typer.echo(f"wrote {len(generated)} jobs to {out}")
