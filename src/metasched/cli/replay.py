"""``metasched replay``: what if the metaqueue's real history had run under other claim policies or sites.

The glue between the two drivers: the history is read through :mod:`metasched.runtime` (the
store), simulated through :mod:`metasched.sim` (the placeholder world, the same claim policy
objects), and measured with the experiments' metrics (:mod:`metasched.sim.metrics`).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.progress import Progress

from metasched.cli.main import app
from metasched.model.job import Job
from metasched.policy.base import lookup
from metasched.policy.claim import REGISTRY
from metasched.report.plots import wait_cdf
from metasched.report.tables import summary_table
from metasched.sim.claimsim import PlaceholderSite, simulate_claims
from metasched.sim.metrics import per_job, summarise, write_jobs_csv, write_summary_json
from metasched.sim.schedule import Schedule

console = Console()
COLUMNS = [
    ("makespan", "makespan (s)"),
    ("mean_response", "mean turnaround (s)"),
    ("mean_wait", "mean wait (s)"),
    ("p90_wait", "p90 wait (s)"),
    ("mean_bounded_slowdown", "mean bsld"),
    ("utilization", "utilization"),
]


def parse_site_overrides(values: list[str]) -> dict[str, int]:
    """``NAME=N`` (N placeholders at site NAME, all started at time 0; N = 0 removes the site)."""
    out: dict[str, int] = {}
    for v in values:
        name, sep, count = v.partition("=")
        if not sep or not name or not count.isdigit():
            raise typer.BadParameter(f"--site expects NAME=COUNT (e.g. fast=4), got {v!r}")
        out[name] = int(count)
    return out


def observed_schedule(jobs: list[Job], starts: dict[int, tuple[float, float, str]], sites: list[str]) -> Schedule:
    """The schedule that really happened (relative instants)."""
    sched = Schedule.empty(jobs, 1, sites)
    for i, j in enumerate(jobs):
        s, e, site = starts[j.job_id]
        sched.start_time[i], sched.end_time[i] = s, e
        sched.site[i] = sites.index(site)
        sched.run_time[i] = e - s
    return sched


def bars(summaries: dict[str, dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(summaries)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, (key, label) in zip(
        axes, [("makespan", "makespan (s)"), ("mean_response", "mean turnaround (s)")], strict=True
    ):
        vals = [summaries[k][key] for k in labels]
        ax.bar(labels, vals, color=["#888" if k == "observed" else "#1e88e5" for k in labels])
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=30)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@app.command()
def replay(
    from_db: Annotated[str, typer.Option("--from-db", help="The metaqueue database URL whose history to replay.")],
    out: Annotated[Path, typer.Option(help="Output directory (CSV, PNG, summary.md).")],
    policy: Annotated[
        list[str] | None, typer.Option("--policy", help="Claim policy to simulate (repeat; default: all).")
    ] = None,
    site: Annotated[
        list[str] | None, typer.Option("--site", help="NAME=N: simulate N placeholders at NAME instead (repeat).")
    ] = None,
) -> None:
    """Simulate the metaqueue's real history under other claim policies and site sets; name the best."""
    from metasched.runtime.metaqueue.history import read_history
    from metasched.runtime.metaqueue.store import Store, StoreError

    keys = policy or sorted(REGISTRY)
    try:
        policies = {k: lookup(REGISTRY, k, "claim policy")() for k in keys}
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0])) from None
    overrides = parse_site_overrides(site or [])
    try:
        store = Store.open(from_db)
        hist = read_history(store, sites=list(overrides))
        rows = {r["id"]: r for r in store.jobs(states=["done"])}
        store.close()
    except (StoreError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    starts_of = dict(hist.placeholder_starts)
    for name, n in overrides.items():
        starts_of[name] = [0.0] * n
    sites = [
        PlaceholderSite(n, len(st), start_at=tuple(st), licences=hist.site_licences.get(n, {}))
        for n, st in sorted(starts_of.items())
        if st
    ]
    if not sites:
        console.print("[red]error:[/] no site with placeholders to simulate (give --site NAME=N)")
        raise typer.Exit(2)
    names = [s.name for s in sites]
    jobs = hist.jobs
    out.mkdir(parents=True, exist_ok=True)
    summaries: dict[str, dict[str, Any]] = {}
    waits: dict[str, np.ndarray] = {}
    real_sites = sorted({r["site"] for r in rows.values()})
    if not overrides:
        seen = {
            j.job_id: (
                rows[j.job_id]["start_at"] - hist.origin,
                rows[j.job_id]["end_at"] - hist.origin,
                rows[j.job_id]["site"],
            )
            for j in jobs
        }
        obs = observed_schedule(jobs, seen, real_sites)
        summaries["observed"] = summarise(obs)
        waits["observed"] = per_job(obs)["wait"]
        write_jobs_csv(obs, out / "jobs_observed.csv")
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("simulating", total=len(policies))
        for key, pol in policies.items():
            try:
                sched, _ = simulate_claims(jobs, sites, pol, licences=hist.licences)
            except ValueError as exc:  # e.g. a licence no simulated site offers any more
                console.print(f"[red]error:[/] cannot simulate the history: {exc}")
                raise typer.Exit(2) from None
            summaries[key] = summarise(sched)
            waits[key] = per_job(sched)["wait"]
            write_jobs_csv(sched, out / f"jobs_{key}.csv")
            progress.advance(task)
    write_summary_json(summaries, out / "summary.json")
    with (out / "summary.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["policy", *(k for k, _ in COLUMNS)])
        for label, s in summaries.items():
            w.writerow([label, *(s.get(k) for k, _ in COLUMNS)])
    wait_cdf(waits, out / "wait_cdf.png", title="replayed metaqueue history: job waits")
    bars(summaries, out / "policies.png", f"{len(jobs)} jobs over {', '.join(names)}")
    simulated = {k: v for k, v in summaries.items() if k != "observed"}
    best = min(simulated, key=lambda k: (simulated[k]["mean_response"], simulated[k]["makespan"], k))
    best_span = min(simulated, key=lambda k: (simulated[k]["makespan"], simulated[k]["mean_response"], k))
    lines = [
        "# What-if replay of the metaqueue history",
        "",
        f"Database: `{from_db}`; {len(jobs)} finished jobs replayed"
        + (f" (left out: {', '.join(f'{n} {r}' for r, n in sorted(hist.skipped.items()))})" if hist.skipped else "")
        + ".",
        "Sites simulated: " + ", ".join(f"{s.name} ({s.placeholders} placeholders)" for s in sites) + ".",
        "Run times: measured where a job ran, learned per (kind, site) elsewhere"
        + (
            f"; {hist.assumed_same_speed} (job, site) pairs had no estimate: the measured time was reused"
            if hist.assumed_same_speed
            else ""
        )
        + ".",
        "",
        "| policy | " + " | ".join(h for _, h in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for label, s in summaries.items():
        lines.append(f"| {label} | " + " | ".join(f"{s.get(k, float('nan')):.4g}" for k, _ in COLUMNS) + " |")
    verdict = f"Best mean turnaround: **{best}**; shortest makespan: **{best_span}**."
    lines += ["", verdict, "", "![policies](policies.png) ![waits](wait_cdf.png)", ""]
    (out / "summary.md").write_text("\n".join(lines))
    (out / "config.json").write_text(
        json.dumps({"db": from_db, "policies": keys, "sites": {s.name: list(s.start_at) for s in sites}}, indent=2)
    )
    console.print(summary_table(summaries, COLUMNS, title=f"replay of {len(jobs)} jobs"))
    console.print(verdict.replace("**", ""))
    console.print(f"written to {out}/ (summary.md, summary.csv, jobs_*.csv, policies.png, wait_cdf.png)")
