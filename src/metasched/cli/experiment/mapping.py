"""``metasched experiment smartnet1998`` and ``metasched experiment braun2001`` (issue 6)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from metasched.cli.experiment import app


def shared_dir(override: Path | None) -> Path:
    """``--shared``, else ``$METASCHED_SHARED``, else ``<repo root>/../shared``."""
    if override is not None:
        return override
    env = os.environ.get("METASCHED_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4] / ".." / "shared"


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=False
    )


@app.command("smartnet1998")
def smartnet1998_cmd(
    out: Path = typer.Option(..., "--out", help="Output directory (CSV, PNG, summary.md)."),
    problems: int = typer.Option(1000, help="Random problems per model (paper: 1000)."),
    noise_problems: int = typer.Option(100, help="Problems per noise level (paper: 100)."),
    seed: int = typer.Option(0, help="Seed of every random draw."),
    workers: int = typer.Option(2, help="Worker processes."),
    shared: Path | None = typer.Option(None, help="The shared data folder (default: $METASCHED_SHARED or ../shared)."),
) -> None:
    """SmartNet (seed 002): OLB and MET against SmartNet on the production and academic models, and noise."""
    from metasched.experiments.mapping import PAPER_RATIOS, SMARTNET_MAPPER, smartnet1998, smartnet1998_jobs
    from metasched.workload.etc import NasTable

    csv_path = shared_dir(shared) / "data" / "nas" / "smartnet_etc.csv"
    if not csv_path.is_file():
        raise typer.BadParameter(f"NAS table not found: {csv_path} (set --shared or METASCHED_SHARED)")
    table = NasTable.read(csv_path)
    sigmas = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    r, n = smartnet1998_jobs(table, problems=problems, noise_problems=noise_problems, sigmas=sigmas, seed=seed)
    total = len(r) + (len(n) if noise_problems else 0)
    with _progress() as bar:
        task = bar.add_task("smartnet1998", total=total)
        res = smartnet1998(
            table,
            out,
            problems=problems,
            noise_problems=noise_problems,
            sigmas=sigmas,
            seed=seed,
            workers=workers,
            progress=lambda k: bar.advance(task, k),
        )
    t = Table(title="Schedule-length ratios (mean)")
    for col in ("model", "ratio", "paper", "ours"):
        t.add_column(col)
    for model in SMARTNET_MAPPER:
        for name, label in (
            ("olb", "LB / SmartNet"),
            ("met", "UDA / SmartNet"),
            ("met-random-ties", "UDA (random ties) / SmartNet"),
        ):
            paper = PAPER_RATIOS[(model, "met" if name == "met-random-ties" else name)]
            t.add_row(model, label, f"{paper:.1f}", f"{res.summary[f'{model}.{name}.mean']:.2f}")
    Console().print(t)
    Console().print(f"wrote {out}/summary.md")


@app.command("braun2001")
def braun2001_cmd(
    out: Path = typer.Option(..., "--out", help="Output directory (CSV, PNG, summary.md)."),
    budget: float = typer.Option(5.0, help="Seconds per search mapper per instance."),
    seed: int = typer.Option(0, help="Seed of the search mappers."),
    workers: int = typer.Option(2, help="Worker processes."),
    mappers: str = typer.Option("", help="Comma-separated mapper keys (default: all, plus ils+lp)."),
    instances: str = typer.Option("", help="Comma-separated instance names (default: the 12)."),
    shared: Path | None = typer.Option(None, help="The shared data folder (default: $METASCHED_SHARED or ../shared)."),
) -> None:
    """Braun et al. (2001): every mapper on the 12 512 x 16 instances (makespan, time, ratio to the LP bound)."""
    from metasched.experiments.mapping import braun2001
    from metasched.policy.mapping import REGISTRY
    from metasched.workload.etc import BRAUN_NAMES

    etc_dir = shared_dir(shared) / "data" / "etc"
    if not etc_dir.is_dir():
        raise typer.BadParameter(f"Braun instances not found: {etc_dir} (set --shared or METASCHED_SHARED)")
    keys = [k for k in mappers.split(",") if k] or [*REGISTRY, "ils+lp"]
    names = [k for k in instances.split(",") if k] or list(BRAUN_NAMES)
    with _progress() as bar:
        task = bar.add_task("braun2001", total=len(names) * len(keys))
        rows = braun2001(
            etc_dir,
            out,
            budget_s=budget,
            seed=seed,
            workers=workers,
            instances=names,
            mappers=keys,
            progress=lambda k: bar.advance(task, k),
        )
    t = Table(title=f"makespan / LP bound over {len(names)} instances")
    for col in ("mapper", "mean", "worst", "mean seconds"):
        t.add_column(col)
    for k in keys:
        mine = [r for r in rows if r["mapper"] == k]
        t.add_row(
            k,
            f"{sum(r['over_lp'] for r in mine) / len(mine):.4f}",
            f"{max(r['over_lp'] for r in mine):.4f}",
            f"{sum(r['seconds'] for r in mine) / len(mine):.3f}",
        )
    Console().print(t)
    Console().print(f"wrote {out}/summary.md")
