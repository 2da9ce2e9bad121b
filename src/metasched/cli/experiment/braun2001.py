"""``metasched experiment braun2001``: every mapper on the 12 Braun et al. instances, on the one sweep runner."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer
from rich.console import Console
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
    shared_dir,
)
from metasched.cli.experiment.smartnet1998 import read_rows

SETUP = "setup.json"


def parse_iterations(specs: list[str]) -> dict[str, int]:
    """``--iterations KEY=N`` values by mapper key."""
    from metasched.experiments.braun2001 import known_keys

    out: dict[str, int] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or key not in known_keys():
            raise typer.BadParameter(
                f"expected KEY=N with KEY one of {', '.join(known_keys())}, got {spec!r}", param_hint="--iterations"
            )
        try:
            n = int(value)
        except ValueError:
            raise typer.BadParameter(f"{spec!r}: N must be an integer", param_hint="--iterations") from None
        if n < 0:
            raise typer.BadParameter(f"{spec!r}: N must be >= 0", param_hint="--iterations")
        out[key] = n
    return out


@app.command("braun2001")
def braun2001_cmd(
    out: OutOpt,
    mappers: str = typer.Option("", help="Comma-separated mapper keys (default: all, plus ils+lp and ils+mip)."),
    instances: str = typer.Option("", help="Comma-separated instance names (default: the 12)."),
    iterations: list[str] = typer.Option(
        [],
        "--iterations",
        help="Search budget per instance, KEY=N iterations (repeatable; defaults: ga 1000, sa 100000, tabu 2000, "
        "ils 1000, mip 1 (nodes, also of ils+mip), ils+lp 1000, ils+mip 1000). Deterministic: the rows do "
        "not depend on the machine.",
    ),
    budget: float | None = typer.Option(
        None, hidden=True, help="Removed: budgets are iterations now (--iterations KEY=N)."
    ),
    seed: int = typer.Option(0, help="Seed of the search mappers."),
    workers: WorkersOpt = 2,
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot: ReplotOpt = False,
    shared: Path | None = typer.Option(None, help="The shared data folder (default: $METASCHED_SHARED or ../shared)."),
) -> None:
    """Braun et al. (2001): every mapper on the 12 512 x 16 instances (makespan, time, ratio to the LP bound).

    Each finished mapping is appended to OUT/runs.partial.jsonl at once: run again with --resume
    to do only what is missing.
    """
    from metasched.experiments import braun2001 as exp
    from metasched.workload.etc import BRAUN_NAMES

    console = Console()
    command = "metasched experiment braun2001 " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    if budget is not None:
        raise typer.BadParameter(
            "the budget is no longer seconds of wall clock (results must not depend on the machine): "
            "give iterations per mapper, e.g. --iterations ils+mip=1000",
            param_hint="--budget",
        )
    if replot:
        _replot(out, command)
        return
    keys = [k for k in mappers.split(",") if k] or exp.known_keys()
    unknown = [k for k in keys if k not in exp.known_keys()]
    if unknown:
        raise typer.BadParameter(f"unknown mapper(s) {unknown}; known: {', '.join(exp.known_keys())}")
    names = [k for k in instances.split(",") if k] or list(BRAUN_NAMES)
    budget_map = {**exp.ITERATIONS, **parse_iterations(iterations)}
    etc_dir = shared_dir(shared) / "data" / "etc"
    try:
        exp.resolve_instances(etc_dir, names)
    except FileNotFoundError as err:
        raise typer.BadParameter(f"{err} (set --shared or METASCHED_SHARED)") from None
    out.mkdir(parents=True, exist_ok=True)
    record = {"instances": names, "mappers": keys, "iterations": budget_map, "seed": seed}
    journal, earlier = open_journal(
        out, {**record, "etc_dir": str(etc_dir.resolve())}, resume=resume, console=console, what="mappings"
    )
    with (
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
        progress_bar("braun2001", console) as bar,
    ):
        task = bar.add_task("mappings", total=len(names) * len(keys))
        res = exp.run(
            etc_dir,
            instances=names,
            mappers=keys,
            iterations=budget_map,
            seed=seed,
            workers=workers,
            executor=pool,
            stage_dir=out / "stage",
            done=earlier,
            on_done=log.append,
            progress=lambda k: bar.advance(task, k),
        )
    (out / SETUP).write_text(json.dumps(record, indent=2) + "\n")
    exp.write_outputs(out, res, keys, command=command, iterations=budget_map, seed=seed)
    t = Table(title=f"makespan / LP bound over {len(names)} instances")
    for col in ("mapper", "mean", "worst", "within 1% of LP"):
        t.add_column(col)
    for k in keys:
        mine = [r for r in res.rows if r["mapper"] == k]
        t.add_row(
            k,
            f"{sum(r['over_lp'] for r in mine) / len(mine):.4f}",
            f"{max(r['over_lp'] for r in mine):.4f}",
            f"{sum(r['over_lp'] <= 1.01 for r in mine)} of {len(mine)}",
        )
    console.print(t)
    console.print(f"wrote {out}/summary.md")


def _replot(out: Path, command: str) -> None:
    from metasched.experiments import braun2001 as exp

    path = out / SETUP
    if not path.is_file():
        raise typer.BadParameter(f"--replot: {path} not found; run the sweep first")
    try:
        record = json.loads(path.read_text())
        keys, budget, seed = list(record["mappers"]), dict(record["iterations"]), int(record["seed"])
    except (ValueError, KeyError, TypeError) as err:
        raise typer.BadParameter(f"{path}: not a braun2001 setup file ({err})") from None
    text = frozenset({"instance", "mapper"})
    rows = read_rows(out / "braun_makespans.csv", text)
    if not rows:
        raise typer.BadParameter(f"--replot: {out / 'braun_makespans.csv'} holds no mapping; run the sweep first")
    seconds = read_rows(out / "braun_seconds.csv", text)
    exp.write_outputs(out, exp.BraunResult(rows, seconds), keys, command=command, iterations=budget, seed=seed)
    Console().print(f"redrew {out}/summary.md and the figure from the CSVs")
