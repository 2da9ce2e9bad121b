"""``metasched experiment smartnet1998``: seed 002's mapping study on the one sweep runner."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

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

#: The sweep as run (setups, sizes, seed), for ``--replot``.
SETUP = "setup.json"


def read_rows(path: Path, text_columns: frozenset[str]) -> list[dict[str, Any]]:
    """A CSV written by the experiment, numbers back as numbers (``int`` if written as one); none if absent."""
    from metasched.sim.metrics import read_rows_csv

    if not path.is_file():
        return []
    try:
        return read_rows_csv(path, text_columns)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


@app.command("smartnet1998")
def smartnet1998_cmd(
    out: OutOpt,
    problems: int = typer.Option(1000, min=1, help="Random problems per model and setup (paper: 1000)."),
    noise_problems: int = typer.Option(100, min=0, help="Problems per noise level (paper: 100; 0: no noise study)."),
    sigma: list[float] = typer.Option(
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "--sigma", help="Noise levels (fraction of the estimate; repeatable)."
    ),
    tasks: int = typer.Option(100, min=1, help="Tasks per problem (paper: 100)."),
    machines: int = typer.Option(20, min=1, help="Machines per problem (paper: 20)."),
    speed: str = typer.Option(
        "divide",
        help="Academic model, how a machine's drawn 'relative speed' s enters: divide (t / s) or multiply (t x s).",
    ),
    tie: str = typer.Option(
        "lowest",
        help="Tie rule: lowest (lowest machine index), random (machines shuffled per problem) or per-task "
        "(user-directed picks at random among equally fast machines, task by task).",
    ),
    study: str | None = typer.Option(
        None, "--study", help="Run a sensitivity study instead: speed, ties or sizes (ratio problems only)."
    ),
    seed: int = typer.Option(0, help="Seed of every random draw."),
    workers: WorkersOpt = 2,
    executor: ExecutorOpt = "local",
    resume: ResumeOpt = False,
    replot: ReplotOpt = False,
    shared: Path | None = typer.Option(None, help="The shared data folder (default: $METASCHED_SHARED or ../shared)."),
) -> None:
    """SmartNet (seed 002): OLB and MET against SmartNet on the production and academic models, and noise.

    Each finished chunk of problems is appended to OUT/runs.partial.jsonl at once: run again with
    --resume to do only what is missing.
    """
    from metasched.experiments import smartnet1998 as exp
    from metasched.workload.etc import NasTable

    console = Console()
    command = "metasched experiment smartnet1998 " + " ".join(shlex.quote(a) for a in sys.argv[3:])
    if replot:
        _replot(out, command)
        return
    try:
        if study is not None:
            if study not in exp.STUDIES:
                raise ValueError(f"unknown study {study!r}; known: {', '.join(exp.STUDIES)}")
            setups = list(exp.STUDIES[study])
            noise_problems = 0
        else:
            setups = [exp.Setup(tasks=tasks, machines=machines, speed=speed, tie=tie)]
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if any(s < 0 for s in sigma):
        raise typer.BadParameter(f"noise levels must be >= 0, got {sigma}", param_hint="--sigma")
    csv_path = shared_dir(shared) / "data" / "nas" / "smartnet_etc.csv"
    if not csv_path.is_file():
        raise typer.BadParameter(f"NAS table not found: {csv_path} (set --shared or METASCHED_SHARED)")
    try:
        table = NasTable.read(csv_path)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    out.mkdir(parents=True, exist_ok=True)
    setup_record = {
        "problems": problems,
        "noise_problems": noise_problems,
        "sigmas": list(sigma),
        "seed": seed,
        "study": study,
        "setups": [asdict(s) for s in setups],
    }
    journal, earlier = open_journal(
        out, {**setup_record, "nas": str(csv_path.resolve())}, resume=resume, console=console, what="chunks"
    )
    total = len(exp.sweep_tasks(setups, problems=problems, noise_problems=noise_problems))
    with (
        journal.open(resume=resume) as log,
        executor_for(executor, workers=workers, out=out) as pool,
        progress_bar("smartnet1998", console) as bar,
    ):
        task = bar.add_task("chunks", total=total)
        res = exp.run(
            table,
            setups,
            problems=problems,
            noise_problems=noise_problems,
            sigmas=sigma,
            seed=seed,
            workers=workers,
            executor=pool,
            stage_dir=out / "stage",
            done=earlier,
            on_done=log.append,
            progress=lambda k: bar.advance(task, k),
        )
    (out / SETUP).write_text(json.dumps(setup_record, indent=2) + "\n")
    exp.write_outputs(
        out, res, setups, command=command, problems=problems, noise_problems=noise_problems, seed=seed, study=study
    )
    _print_verdicts(console, res, setups)
    console.print(f"wrote {out}/summary.md")


def _print_verdicts(console: Console, res: Any, setups: list[Any]) -> None:
    from metasched.experiments import smartnet1998 as exp
    from metasched.experiments.claims import evaluate

    rows = [*res.ratios, *res.noise]
    t = Table(title="SmartNet claims")
    for col in ("id", "setup", "paper", "ours", "verdict"):
        t.add_column(col)
    for v in evaluate(exp.CLAIMS, rows, [s.label for s in setups]):
        if v.measure is not None:
            t.add_row(v.claim.id, v.trace, v.claim.paper, f"{v.measure.value:.4g}", v.verdict)
    console.print(t)


def _replot(out: Path, command: str) -> None:
    from metasched.experiments import smartnet1998 as exp

    path = out / SETUP
    if not path.is_file():
        raise typer.BadParameter(f"--replot: {path} not found; run the sweep first")
    try:
        record = json.loads(path.read_text())
        setups = [exp.Setup(**s) for s in record["setups"]]
        problems, noise_problems, seed = int(record["problems"]), int(record["noise_problems"]), int(record["seed"])
        study = record.get("study")
    except (ValueError, KeyError, TypeError) as err:
        raise typer.BadParameter(f"{path}: not a smartnet1998 setup file ({err})") from None
    text = frozenset({"setup", "model", "mapper"})
    ratios = read_rows(out / "smartnet_ratios.csv", text)
    if not ratios:
        raise typer.BadParameter(f"--replot: {out / 'smartnet_ratios.csv'} holds no problem; run the sweep first")
    noise = read_rows(out / "smartnet_noise.csv", text)
    exp.write_outputs(
        out,
        exp.SmartnetResult(ratios, noise),
        setups,
        command=command,
        problems=problems,
        noise_problems=noise_problems,
        seed=seed,
        study=study,
    )
    Console().print(f"redrew {out}/summary.md and the figures from the CSVs")
