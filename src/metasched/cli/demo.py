"""``metasched demo``: two local sites of different speeds, one mixed workload, run live under several claim
policies through the real server, and compared with what the placeholder-world simulator predicts.

Sites are local processes: ``fast`` and ``slow``, each with ``--placeholders`` placeholders
(``metasched placeholder`` processes talking to the server, started and connected before the
workload is submitted). The speed of a site per job
kind is a slowdown factor applied by the job itself (its command sleeps ``base x factor[kind, site]``
seconds, the site read from ``$METASCHED_SITE`` that every run sees): kind ``a`` runs 3x slower at
``slow``, kind ``b`` only 1.2x. Before the runs, each (kind, site) is run once and timed: those
measured times are the run-time estimates the server's policies use (learned from past runs, as
``metasched estimates`` shows) and the run times the simulator uses. The simulator is also given
the same placeholders, all running when the workload arrives; every decision is its own.
"""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from metasched.cli.main import app
from metasched.model.job import Job
from metasched.policy.base import lookup
from metasched.policy.claim import REGISTRY
from metasched.sim.claimsim import PlaceholderSite, simulate_claims

console = Console()
SITES = ("fast", "slow")
FACTOR = {("a", "fast"): 1.0, ("a", "slow"): 3.0, ("b", "fast"): 1.0, ("b", "slow"): 1.2}


def command(kind: str, base_s: float) -> str:
    """The job: sleep ``base x factor`` at the site it runs on (the per-site slowdown)."""
    cases = " ".join(f"{s}) sleep {base_s * FACTOR[(kind, s)]:.3f};;" for s in SITES)
    return f'case "$METASCHED_SITE" in {cases} *) sleep {base_s:.3f};; esac'


def calibrate(base_s: float) -> dict[tuple[str, str], float]:
    """Run each kind once at each site (sequentially) and time it."""
    out = {}
    for kind in ("a", "b"):
        for site in SITES:
            t = time.perf_counter()
            subprocess.run(
                ["bash", "-c", command(kind, base_s)], env={"METASCHED_SITE": site, "PATH": "/usr/bin:/bin"}, check=True
            )
            out[(kind, site)] = time.perf_counter() - t
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_live(
    key: str, workdir: Path, n_jobs: int, base_s: float, placeholders: int, calib: dict[tuple[str, str], float]
) -> dict[str, Any]:
    """One live run under policy ``key``; returns its metrics and the placeholder start instants."""
    import uvicorn

    from metasched.runtime.metaqueue.estimates import Estimates
    from metasched.runtime.metaqueue.history import read_history
    from metasched.runtime.metaqueue.protocol import ensure_token
    from metasched.runtime.metaqueue.records import JobSpec
    from metasched.runtime.metaqueue.service import create_app
    from metasched.runtime.metaqueue.store import Store

    workdir.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{workdir / 'mq.db'}"
    est = Estimates([(k, s, v) for (k, s), v in calib.items()])
    policy = lookup(REGISTRY, key, "claim policy")()
    server_store = Store.open(url, policy=policy, estimates=est, lease_s=60)
    token_file = workdir / "token"
    token = ensure_token(token_file)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(server_store, token), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    store = Store.open(url, lease_s=60)
    # The placeholders are started (and have said hello) before the workload arrives, as on a
    # testbed whose placeholders already run: process start-up is not part of what is compared.
    env = {**os.environ, "METASCHED_HOME": str(workdir)}
    procs = []
    for s in SITES:
        for i in range(placeholders):
            cmd = [sys.executable, "-m", "metasched", "placeholder", "--site", s, "--id", f"{s}-{i}"]
            cmd += ["--server", f"http://127.0.0.1:{port}", "--token-file", str(token_file), "--linger"]
            cmd += ["--max-wait", "0.2", "--log-dir", str(workdir / "logs")]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        deadline = time.time() + 120
        while len(store.placeholders(active_only=True)) < len(procs):
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("demo placeholders did not start")
            time.sleep(0.1)
        specs = [JobSpec(command("ab"[i % 2], base_s), name=f"{'ab'[i % 2]}-{i}") for i in range(n_jobs)]
        t0 = time.time()
        store.submit(specs, now=t0)
        deadline = t0 + 600
        while store.counts().get("done", 0) + store.counts().get("failed", 0) < n_jobs and time.time() < deadline:
            time.sleep(0.1)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        server.should_exit = True
        thread.join(10)
    rows = store.jobs()
    hist = read_history(store)
    store.close()
    server_store.close()
    ends = [r["end_at"] for r in rows]
    if any(r["state"] != "done" for r in rows):
        raise RuntimeError(
            f"{key}: not every demo job finished: {[(r['name'], r['state']) for r in rows if r['state'] != 'done']}"
        )
    return {
        "makespan": max(ends) - t0,
        "turnaround": sum(r["end_at"] - r["submit_at"] for r in rows) / len(rows),
        "starts": {site: [0.0] * placeholders for site in SITES},
        "origin": hist.origin,
        "t0": t0,
        "per_site": {s: sum(1 for r in rows if r["site"] == s) for s in SITES},
    }


def predict(
    key: str, n_jobs: int, calib: dict[tuple[str, str], float], starts: dict[str, list[float]]
) -> dict[str, float]:
    jobs = []
    for i in range(n_jobs):
        kind = "ab"[i % 2]
        run = {s: calib[(kind, s)] for s in SITES}
        jobs.append(Job(i + 1, 0.0, run["fast"], 0.0, 1, attrs={"run_s": run, "estimates": dict(run), "kind": kind}))
    sites = [PlaceholderSite(s, len(starts.get(s, [])), start_at=tuple(starts.get(s, []))) for s in SITES]
    sched, _ = simulate_claims(jobs, [s for s in sites if s.placeholders], lookup(REGISTRY, key, "claim policy")())
    return {"makespan": float(sched.end_time.max()), "turnaround": float((sched.end_time - sched.submit_time).mean())}


def figure(results: dict[str, dict[str, Any]], path: Path, title: str) -> None:
    """Makespan and mean turnaround per policy, live (solid) next to simulated (hatched)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    keys = list(results)
    x = np.arange(len(keys))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, metric, label in zip(
        axes, ("makespan", "turnaround"), ("makespan (s)", "mean turnaround (s)"), strict=True
    ):
        live = [results[k][metric] for k in keys]
        sd = [results[k].get(metric + "_sd", 0.0) for k in keys]
        sim = [results[k]["predicted"][metric] for k in keys]
        ax.bar(x - 0.2, live, 0.4, yerr=sd, capsize=4, label="live (mean ± sd over runs)", color="#1e88e5")
        ax.bar(x + 0.2, sim, 0.4, label="simulator prediction", color="#90caf9", hatch="//")
        ax.set_xticks(x, keys)
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _pct(x: float, ref: float) -> str:
    return f"{100 * (x - ref) / ref:+.1f}%"


def summarise(runs: list[dict[str, Any]], predicted: dict[str, float]) -> dict[str, Any]:
    """Mean and spread of the live runs of one policy, against the (deterministic) prediction.

    ``*_sd``: sample standard deviation over the runs (0 for one run); ``*_err``: (predicted - mean
    live) / mean live; ``*_err_worst``: the largest |error| of a single run against the prediction.
    """
    import statistics

    out: dict[str, Any] = {"runs": len(runs), "predicted": predicted}
    for metric in ("makespan", "turnaround"):
        values = [r[metric] for r in runs]
        mean = statistics.fmean(values)
        out[metric] = mean
        out[f"{metric}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
        out[f"{metric}_all"] = values
        out[f"{metric}_err"] = (predicted[metric] - mean) / mean
        out[f"{metric}_err_worst"] = max((abs(predicted[metric] - v) / v for v in values), default=0.0)
    out["per_site"] = runs[-1]["per_site"]
    out["splits"] = [f"{r['per_site']['fast']}/{r['per_site']['slow']}" for r in runs]
    return out


@app.command()
def demo(
    policy: Annotated[
        list[str] | None, typer.Option("--policy", help="Policies to run (default: fcfs, efficacy, completion-time).")
    ] = None,
    jobs: Annotated[int, typer.Option(help="Jobs in the mixed workload (kinds a and b alternate).")] = 24,
    base: Annotated[float, typer.Option(help="Seconds a job takes at the fast site.")] = 2.0,
    placeholders: Annotated[int, typer.Option(help="Placeholders per site.")] = 2,
    runs: Annotated[int, typer.Option(help="Live runs per policy (mean and spread reported).", min=1)] = 1,
    out: Annotated[
        Path | None, typer.Option(help="Directory for demo.csv / demo_runs.csv / demo.md / demo.png (default: temp).")
    ] = None,
) -> None:
    """Heterogeneous testbed on this machine: FCFS vs the efficacy / completion-time policies, live and simulated."""
    from rich.progress import Progress

    keys = policy or ["fcfs", "efficacy", "completion-time"]
    for k in keys:
        try:
            lookup(REGISTRY, k, "claim policy")
        except KeyError as exc:
            raise typer.BadParameter(str(exc.args[0])) from None
    outdir = out or Path(tempfile.mkdtemp(prefix="metasched-demo-"))
    outdir.mkdir(parents=True, exist_ok=True)
    console.print(f"calibrating: each kind once at each site (base {base} s) ...")
    calib = calibrate(base)
    console.print("measured: " + ", ".join(f"{k}@{s} {v:.2f} s" for (k, s), v in sorted(calib.items())))
    live_runs: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    with Progress(console=console) as progress:
        task = progress.add_task(f"{runs} x {len(keys)} live runs of {jobs} jobs", total=runs * len(keys))
        # Policies take turns run after run, so a change in the machine's load falls on all of them.
        for i in range(runs):
            for k in keys:
                progress.update(task, description=f"run {i + 1}/{runs}: {k}")
                workdir = outdir / k if runs == 1 else outdir / k / f"run-{i + 1}"
                live_runs[k].append(run_live(k, workdir, jobs, base, placeholders, calib))
                progress.advance(task)
    results: dict[str, dict[str, Any]] = {}
    for k in keys:
        results[k] = summarise(live_runs[k], predict(k, jobs, calib, live_runs[k][0]["starts"]))
    spread = runs > 1
    title = f"metasched demo: {jobs} jobs, sites fast/slow x {placeholders} placeholders, {runs} run(s) per policy"
    table = Table(title=title)
    cols = ["policy", "makespan live", "predicted", "err", "turnaround live", "predicted", "err", "jobs fast/slow"]
    for col in cols:
        table.add_column(col, justify="right")

    def live_text(r: dict[str, Any], metric: str) -> str:
        return f"{r[metric]:.2f} ± {r[metric + '_sd']:.2f} s" if spread else f"{r[metric]:.2f} s"

    rows = []
    for k, r in results.items():
        p = r["predicted"]
        split = " ".join(r["splits"])
        table.add_row(
            k,
            live_text(r, "makespan"),
            f"{p['makespan']:.2f} s",
            f"{100 * r['makespan_err']:+.1f}%",
            live_text(r, "turnaround"),
            f"{p['turnaround']:.2f} s",
            f"{100 * r['turnaround_err']:+.1f}%",
            split,
        )
        rows.append(
            [
                k,
                r["makespan"],
                p["makespan"],
                r["makespan_err"],
                r["turnaround"],
                p["turnaround"],
                r["turnaround_err"],
                split,
                runs,
                r["makespan_sd"],
                r["turnaround_sd"],
                r["makespan_err_worst"],
                r["turnaround_err_worst"],
            ]
        )
    console.print(table)
    lines = []
    if "fcfs" in results:
        f = results["fcfs"]
        for k, r in results.items():
            if k == "fcfs":
                continue
            p, q = r["predicted"], f["predicted"]
            line = (
                f"{k} vs fcfs: makespan {_pct(r['makespan'], f['makespan'])} live "
                f"({_pct(p['makespan'], q['makespan'])} predicted), mean turnaround "
                f"{_pct(r['turnaround'], f['turnaround'])} live ({_pct(p['turnaround'], q['turnaround'])} predicted)"
            )
            lines.append(line)
            console.print(line)
    with (outdir / "demo.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "policy",
                "makespan_live",
                "makespan_predicted",
                "makespan_err",
                "turnaround_live",
                "turnaround_predicted",
                "turnaround_err",
                "jobs_fast_slow",
                "runs",
                "makespan_live_sd",
                "turnaround_live_sd",
                "makespan_err_worst_run",
                "turnaround_err_worst_run",
            ]
        )
        w.writerows(rows)
    with (outdir / "demo_runs.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["policy", "run", "makespan_live", "turnaround_live", "jobs_fast", "jobs_slow"])
        for k, lives in live_runs.items():
            for i, r in enumerate(lives):
                w.writerow([k, i + 1, r["makespan"], r["turnaround"], r["per_site"]["fast"], r["per_site"]["slow"]])
    md = [
        f"# {title}",
        "",
        "Measured run times: " + ", ".join(f"{k}@{s} {v:.2f} s" for (k, s), v in sorted(calib.items())),
        "",
        "| policy | makespan live (mean ± sd) | predicted | error | turnaround live (mean ± sd) | predicted | error |"
        " worst single-run error (makespan / turnaround) | jobs fast/slow per run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for k, r in results.items():
        p = r["predicted"]
        md.append(
            f"| {k} | {r['makespan']:.2f} ± {r['makespan_sd']:.2f} s | {p['makespan']:.2f} s |"
            f" {100 * r['makespan_err']:+.1f}% | {r['turnaround']:.2f} ± {r['turnaround_sd']:.2f} s |"
            f" {p['turnaround']:.2f} s | {100 * r['turnaround_err']:+.1f}% |"
            f" {100 * r['makespan_err_worst']:.1f}% / {100 * r['turnaround_err_worst']:.1f}% |"
            f" {' '.join(r['splits'])} |"
        )
    md += ["", *(f"- {line}" for line in lines), ""]
    (outdir / "demo.md").write_text("\n".join(md))
    figure(results, outdir / "demo.png", f"{jobs} jobs (kinds a, b) on fast/slow x {placeholders} placeholders")
    console.print(f"written to {outdir}/ (demo.csv, demo_runs.csv, demo.md, demo.png)")
