"""``metasched batsim IN OUT``: convert a workload between SWF and Batsim JSON (by the files' suffixes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from metasched.cli.main import app


@app.command()
def batsim(
    source: Annotated[Path, typer.Argument(help="an SWF trace (.swf/.swf.gz) or a Batsim workload (.json)")],
    target: Annotated[Path, typer.Argument(help="the converted file (.json or .swf)")],
    speed_flops: Annotated[
        float | None, typer.Option(help="flops/s per processor, for parallel_homogeneous profiles")
    ] = None,
) -> None:
    """Convert SWF -> Batsim JSON (delay profiles) or Batsim JSON -> SWF."""
    from metasched.workload.batsim import BatsimError, read_batsim, write_batsim
    from metasched.workload.swf import SwfError, read_swf, write_swf

    try:
        if source.suffix == ".json":
            jobs, nb_res = read_batsim(source, speed_flops=speed_flops)
            write_swf(target, jobs, header={"MaxProcs": str(nb_res), "Note": f"converted from Batsim {source.name}"})
        else:
            workload = read_swf(source)
            write_batsim(target, workload.jobs, workload.max_procs, speed_flops=speed_flops)
            jobs = workload.jobs
    except (BatsimError, SwfError, FileNotFoundError, ValueError) as exc:
        typer.echo(f"error: {exc}, at {source}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{len(jobs)} jobs written to {target}")
