"""``metasched simulate --sites FILE`` / ``--platform NAME``: several meta-policies on one platform, compared.

Called by :mod:`metasched.cli.simulate` when a platform is given; the single-site ``simulate``
is unchanged otherwise. Per policy, OUT/<policy>/ gets ``jobs.csv``, ``summary.json``,
``jobs_batsim.csv`` and ``gantt.png``; OUT/ gets ``compare.csv`` and ``compare.png``.
Policies run in parallel (one process each, up to ``--workers``).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from metasched.model.job import Job
from metasched.model.platform import Platform, PlatformError
from metasched.policy.meta.registry import PolicyError, PolicySpec, parse_policy

DEFAULT_POLICIES = ("least-load", "k-reservations:k=2", "completion-time:k=2")


class GridInputError(ValueError):
    """Bad input to the grid command (one line for the user)."""


def load_platform_arg(sites: Path | None, platform: str | None, procs: int | None) -> Platform:
    """The platform of ``--sites FILE`` or ``--platform NAME`` (one of them), ``--procs`` applied."""
    from metasched.model.platform_file import load_platform, load_preset

    if sites is not None and platform is not None:
        raise GridInputError("give --sites FILE or --platform NAME, not both")
    try:
        plat = load_platform(sites) if sites is not None else load_preset(str(platform))
    except PlatformError as exc:
        raise GridInputError(str(exc)) from None
    return plat.with_procs(procs) if procs is not None else plat


def parse_policies(texts: list[str]) -> list[PolicySpec]:
    """``--policy`` values (each may hold several, separated by ``;`` or whitespace) as checked specs."""
    items = [t for text in texts for t in re.split(r"[;\s]+", text) if t] or list(DEFAULT_POLICIES)
    specs = []
    for item in items:
        try:
            specs.append(parse_policy(item))
        except PolicyError as exc:
            raise GridInputError(f"{exc.message}, at --policy {exc.key}") from None
    labels = [s.label for s in specs]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise GridInputError(f"policy {sorted(dup)[0]!r} given twice, at --policy")
    return specs


def folder(label: str) -> str:
    """A policy label as a directory name: ``completion-time:k=2,choice=completion`` ->
    ``completion-time_k=2_choice=completion``."""
    return re.sub(r"[^A-Za-z0-9=.+-]+", "_", label)


def _run_one(
    jobs: list[Job],
    platform: Platform,
    label: str,
    out: Path,
    gantt: bool,
    progress: Any = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """One policy's run and files (in a worker process: the policy travels as its text)."""
    from metasched.sim.grid_outputs import write_result
    from metasched.sim.gridsim import simulate_platform

    spec = parse_policy(label)
    began = time.perf_counter()
    result = simulate_platform(jobs, platform, spec, progress=progress)
    elapsed = time.perf_counter() - began
    result.meta["simulation_seconds"] = elapsed
    if notes:
        result.meta["workload"] = notes  # where the trace, homes and kinds came from
    write_result(result, out / folder(spec.label), gantt=gantt)
    return result.summary


def run_grid(
    jobs: list[Job],
    platform: Platform,
    policies: list[PolicySpec],
    *,
    out: Path,
    console: Console,
    describe: list[str],
    workers: int | None = None,
    gantt: bool = True,
    plot: bool = True,
) -> list[dict[str, Any]]:
    """Run every policy on ``jobs`` over ``platform``, write the files, print the comparison."""
    from metasched.cli.simulate import progress_bar
    from metasched.sim.grid_outputs import write_compare

    out.mkdir(parents=True, exist_ok=True)
    for line in describe:
        console.print(line)
    n_workers = max(1, min(len(policies), workers or (os.cpu_count() or 1)))
    plain = [re.sub(r"\[/?[a-z ]*\]", "", line) for line in describe]  # without Rich markup
    summaries: dict[str, dict[str, Any]] = {}
    with progress_bar(console) as progress:
        task = progress.add_task(f"{len(policies)} policies, {len(jobs)} jobs", total=len(policies))
        if n_workers == 1:
            for spec in policies:
                sub = progress.add_task(f"  {spec.label}: jobs", total=len(jobs))

                def advance(n: int, sub: Any = sub) -> None:
                    progress.advance(sub, n)

                summaries[spec.label] = _run_one(jobs, platform, spec.label, out, gantt, advance, plain)
                progress.remove_task(sub)
                progress.advance(task)
        else:
            # Not fork: this process has threads (Rich's refresh thread, a notebook's), and a child
            # forked while one of them holds a lock can hang; forked workers also share the parent's
            # pipes, so they outlive a killed parent. Forkserver children get EOF when it dies.
            ctx = multiprocessing.get_context("forkserver")
            with ProcessPoolExecutor(max_workers=n_workers, mp_context=ctx) as pool:
                futures = {
                    pool.submit(_run_one, jobs, platform, spec.label, out, gantt, None, plain): spec
                    for spec in policies
                }
                for fut in as_completed(futures):
                    summaries[futures[fut].label] = fut.result()
                    progress.advance(task)
    ordered = [summaries[s.label] for s in policies]
    write_compare(ordered, out, plot=plot)
    console.print(_table(ordered, title=f"{platform.name}: whole grid, times in s"))
    console.print(
        f"Results in {out}/ (compare.csv, compare.png, <policy>/jobs.csv|summary.json|jobs_batsim.csv|gantt.png)"
    )
    return ordered


def _table(summaries: list[dict[str, Any]], title: str) -> Table:
    table = Table(title=title)
    cols = [
        ("awrt", "AWRT"),
        ("mean_wait", "wait"),
        ("p95_wait", "p95 wait"),
        ("mean_bounded_slowdown", "bsld"),
        ("utilization", "util"),
        ("effective_utilization", "eff. util"),
        ("messages", "messages"),
    ]
    table.add_column("policy")
    for _, head in cols:
        table.add_column(head, justify="right")
    for s in summaries:
        g = s["grid"]
        cells = []
        for key, _ in cols:
            v = g.get(key, "")
            if isinstance(v, float):
                cells.append(f"{v:.3f}" if abs(v) < 10 else f"{v:,.0f}")
            else:
                cells.append(str(v))
        table.add_row(s["policy"], *cells)
    return table


@dataclass(frozen=True)
class GridRequest:
    """The options of ``simulate --sites/--platform`` (see ``metasched simulate --help``)."""

    trace: Path | None
    sites: Path | None
    platform_name: str | None
    policies: list[str]
    home: str
    kinds: str | None
    procs: int | None
    jobs: int | None
    seed: int
    load: float
    allow_overrun: bool
    workers: int | None
    gantt: bool
    out: Path
    #: draw ``compare.png`` (``--no-plot``: leave it out)
    plot: bool = True


def simulate_sites(request: GridRequest, *, console: Console, transform: Callable[[list[Job]], list[Job]]) -> None:
    """The whole ``simulate --sites`` command; raises :class:`GridInputError` for bad input."""
    from metasched.cli.simulate import _load
    from metasched.sim.gridsim import KIND_SOURCES, assign_homes, assign_kinds

    trace, jobs, seed, home, kinds = request.trace, request.jobs, request.seed, request.home, request.kinds
    platform = load_platform_arg(request.sites, request.platform_name, request.procs)
    specs = parse_policies(request.policies)
    if trace is not None and not trace.exists():
        raise GridInputError(f"no such file: {trace}, at --trace")
    if kinds is not None and kinds not in KIND_SOURCES:
        raise GridInputError(f"unknown job-kind source {kinds!r} (known: {', '.join(KIND_SOURCES)}), at --kinds")
    widest = max(s.procs for s in platform.sites)
    if trace is not None and trace.suffix == ".json":
        from metasched.workload import transforms
        from metasched.workload.batsim import BatsimError, read_batsim

        try:
            workload, _ = read_batsim(trace)
        except BatsimError as exc:
            raise GridInputError(f"{exc}, at --trace") from None
        workload = workload if jobs is None else transforms.first_n(workload, jobs)
        description = f"{trace.name} (Batsim workload, {len(workload)} jobs)"
    else:
        workload, _, description, _ = _load(trace, widest, jobs, seed, request.allow_overrun, request.load)
    if trace is None:
        # a generated workload offers ``load`` to the whole grid, not to one site's machine
        workload = [j.copy(submit_time=j.submit_time * widest / platform.total_procs) for j in workload]
    workload = transform(workload)
    if not workload:
        raise GridInputError("no job left after the selection")
    too_wide = [j for j in workload if j.requested_procs > widest]
    size = f"{len(platform.sites)} sites, {platform.total_procs} processors"
    notes = [f"Simulating {description} on {platform.name} ({size})"]
    if too_wide:
        workload = [j for j in workload if j.requested_procs <= widest]
        notes.append(f"[yellow]dropped {len(too_wide)} job(s) wider than the widest site ({widest} processors)[/]")
    if home == "partition" and trace is None:
        home = "round-robin"
        notes.append("generated workload: no partition field, home sites round robin")
    try:
        workload, how_home = assign_homes(workload, platform, home, inplace=True)  # jobs read here
    except ValueError as exc:
        raise GridInputError(f"{exc}, at --home") from None
    source = kinds or ("random" if platform.kinds else "none")
    workload, how_kinds = assign_kinds(workload, platform, source, seed, inplace=True)
    notes += [how_home, how_kinds, f"policies: {', '.join(s.label for s in specs)}"]
    try:
        run_grid(
            workload, platform, specs, out=request.out, console=console, describe=notes, workers=request.workers,
            gantt=request.gantt,
            plot=request.plot,
        )  # fmt: skip
    except (PolicyError, PlatformError) as exc:
        raise GridInputError(str(exc)) from None
