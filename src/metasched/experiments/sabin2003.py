"""Sabin et al. 2003 (seed 000): heterogeneous multi-site scheduling, figures 1-14.

Setup (seed 000, section 3), as read here:

* four sites modelled on Table 1's machines (SGI Origin 2000, IBM SP WN/66, Cray T3E 900, IBM SP
  P2SC 160 MHz), each with as many processors as the trace's machine; each job gets one of Table
  1's four benchmark rows at random, and its run time and estimate at a site are the trace's times
  scaled by that row's time there over its time on the P2SC (the reference of the trace);
* "jobs submitted [...] from geographically distributed users (by time-shifting two of the
  traces by three hours, to model two centers each in the Pacific and Eastern U.S. time zones)"
  and "processors at each remote site [...] the same as the original traces submitted to that
  node": every site receives its own copy of the first ``n`` jobs of the trace (``home_site`` =
  that site), copies 2 and 3 shifted by three hours; benchmarks are drawn per job of each copy;
* load factor ``f``: run times and estimates multiplied by ``f`` (1.0 to 2.0 by 0.2);
* data transfer (figures 13-14): each job gets a size uniform in [500 MB, 3 GB] (decimal units),
  sent at 10 Mbit/s to a remote site before it runs (400 s to 2400 s), added to its run time and
  estimate there;
* the single-site comparison (figure 5): the four copies on one reference machine with run times
  divided by four (the paper: "the runtime of all jobs was scaled down by a factor of 4").

The random draws depend on the seed only (not on the load factor or scheme): every scheme sees the
same jobs. Figures whose content the text does not name (3, 6, 7, 9, 10, 13, 14) follow the text
around them; see :data:`FIGURES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from metasched.experiments import runner
from metasched.experiments.claims import (
    FAILS,
    HOLDS,
    NOT_RUN,
    Claim,
    Interval,
    Measure,
    Rows,
    claims_tables,
    counts,
    evaluate,
    mean_rel,
    relative,
    robustness_table,
    series,
)
from metasched.model.job import Job
from metasched.model.platform import Platform
from metasched.model.platform_file import load_platform, load_preset, preset_names
from metasched.model.site import Site
from metasched.policy.base import lookup
from metasched.policy.local import REGISTRY as LOCAL_REGISTRY
from metasched.policy.meta import REGISTRY as META_REGISTRY
from metasched.policy.meta.least_load import LeastLoad
from metasched.policy.meta.reservations_base import Selection
from metasched.policy.priority import REGISTRY as ORDER_REGISTRY
from metasched.sim.metrics import write_rows_csv
from metasched.sim.multisite import TRANSFER_ATTR, JobColumns, simulate_multisite
from metasched.sim.multisite_metrics import summarise_multisite
from metasched.sim.replay import simulate
from metasched.workload import transforms

LOAD_FACTORS: tuple[float, ...] = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
SHIFT_S = 3 * 3600.0
SHIFTED_COPIES: tuple[int, ...] = (2, 3)
TRANSFER_BPS = 10e6
SIZE_RANGE_BYTES = (500e6, 3e9)
SINGLE_SITE_SCALE = 4.0


# ------------------------------------------------------------------------------------------ platform

#: The preset describing the four sites (``model/presets/sabin2003.toml``: Table 1's run-time
#: factors per NAS benchmark against the IBM SP P2SC, the traces' reference machine).
PLATFORM = "sabin2003"


def load_sites(spec: str = PLATFORM) -> Platform:
    """The platform ``spec`` names: a preset (``metasched platforms``) or a TOML file. Its job
    kinds are the benchmarks each job draws from (kind ``c`` = application class ``c``)."""
    if spec in preset_names():
        return load_preset(spec)
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--platform {spec!r}: neither a preset ({', '.join(preset_names())}) nor a file")
    return load_platform(path)


# ------------------------------------------------------------------------------------------ workload


def site_copies(
    base: Sequence[Job], *, n_sites: int, shift_s: float = SHIFT_S, shifted: Iterable[int] = SHIFTED_COPIES
) -> list[Job]:
    """One copy of ``base`` per site (home site = its index, ``shifted`` copies moved by
    ``shift_s``), merged and renumbered: the part of :func:`build_workload` that depends on
    neither the load factor nor the seed (computed once per trace by :meth:`TraceData.copies`)."""
    shifted = set(shifted)
    start = transforms.rebase(base)
    return transforms.merge(*(transforms.time_shift(start, shift_s) if k in shifted else start for k in range(n_sites)))


def site_columns(
    base: Sequence[Job], *, n_sites: int, shift_s: float = SHIFT_S, shifted: Iterable[int] = SHIFTED_COPIES
) -> JobColumns:
    """:func:`site_copies` as columns, in its order, built without a ``Job`` per copy: the same
    float operations (``(submit + -first) + shift_s``), the same merge order (submit time, then the
    copy, then the job's place in its copy) and ids 1..N in it, a home site kept where set and the
    copy's index elsewhere. Equal to ``JobColumns.from_jobs(site_copies(...))`` (tested)."""
    shifted = set(shifted)
    one = JobColumns.from_jobs(base)
    order = np.argsort(one.submit_time, kind="stable")
    m = len(order)
    submit = one.submit_time[order]
    start = submit + -submit[0] if m else submit
    if m and shifted and start[0] + shift_s < 0:
        raise ValueError(f"time_shift by {shift_s} makes the first submit ({start[0]}) negative")
    copy = np.repeat(np.arange(n_sites, dtype=np.int64), m)
    place = np.tile(np.arange(m, dtype=np.int64), n_sites)
    times = np.concatenate([start + shift_s if k in shifted else start for k in range(n_sites)])
    merged = np.lexsort((place, copy, times))
    rows = order[place[merged]]
    home = one.home_site[rows]
    return JobColumns(
        job_id=np.arange(1, len(merged) + 1, dtype=np.int64),
        submit_time=times[merged],
        run_time=one.run_time[rows],
        requested_time=one.requested_time[rows],
        requested_procs=one.requested_procs[rows],
        home_site=np.where(home >= 0, home, copy[merged]),
        app_class=one.app_class[rows],
        transfer_s=one.transfer_s[rows],
    )


#: How the trace's jobs reach the sites (the ``arrivals`` study): ``copies`` (the default reading:
#: every site gets its own copy of the first ``n`` jobs) or ``split`` (one stream of the first ``n``
#: jobs, dealt to the sites round robin, the jobs of sites 2 and 3 shifted by three hours).
ARRIVALS: tuple[str, ...] = ("copies", "split")


def split_stream(
    base: Sequence[Job], *, n_sites: int, shift_s: float = SHIFT_S, shifted: Iterable[int] = SHIFTED_COPIES
) -> list[Job]:
    """The other reading of seed 000's arrival stream: "a 5000 job subset [...] modified [...] to
    model jobs submitted to a metascheduler from geographically distributed users (by
    time-shifting two of the traces by three hours)": the ``n`` jobs, in submit order, get home
    site ``k mod n_sites``; the jobs of the ``shifted`` sites move by ``shift_s``; merged by submit
    time (then by place in the trace) and renumbered 1..n. Invariant: the same jobs, each once."""
    shifted = set(shifted)
    ordered = transforms.rebase(base)
    homed = [
        j.copy(home_site=k % n_sites, submit_time=j.submit_time + (shift_s if k % n_sites in shifted else 0.0))
        for k, j in enumerate(ordered)
    ]
    merged = sorted(range(len(homed)), key=lambda k: (homed[k].submit_time, k))
    return [homed[k].copy(job_id=i + 1) for i, k in enumerate(merged)]


def draw_workload(
    merged: Sequence[Job], *, n_benchmarks: int, load: float, seed: int, transfer: bool = False
) -> list[Job]:
    """``merged`` (from :func:`site_copies`; not changed) with times multiplied by ``load``, each
    job a random benchmark (``app_class``) and, with ``transfer``, a data-transfer time in
    ``attrs["transfer_s"]``."""
    out = transforms.load_factor(merged, load)  # new Job objects: ``merged`` is left as it is
    classes, transfer_s = _draws(len(out), n_benchmarks, seed)
    for job, cls, seconds in zip(out, classes.tolist(), transfer_s.tolist(), strict=True):
        job.app_class = cls
        if transfer:
            job.attrs[TRANSFER_ATTR] = seconds
    return out


def _draws(n: int, n_benchmarks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``n`` jobs' benchmark (``app_class``) and data-transfer time (s), drawn from
    ``seed`` alone: the one source of :func:`draw_workload`'s and :func:`draw_columns`' draws."""
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, n_benchmarks, size=n)
    sizes = rng.uniform(*SIZE_RANGE_BYTES, size=n)
    return classes, sizes * 8.0 / TRANSFER_BPS


def draw_columns(base: JobColumns, *, n_benchmarks: int, load: float, seed: int, transfer: bool = False) -> JobColumns:
    """:func:`draw_workload` on columns: ``base`` is the merged copies in submit order
    (:attr:`TraceData.columns`); the same draws and the same float operations, so the same jobs
    (tested) without building ``Job`` objects."""
    if not (load > 0 and math.isfinite(load)):
        raise ValueError(f"load_factor: f must be a positive finite number, got {load}")
    classes, transfer_s = _draws(len(base), n_benchmarks, seed)
    return JobColumns(
        job_id=base.job_id,
        submit_time=base.submit_time,
        run_time=base.run_time * load,
        requested_time=base.requested_time * load,
        requested_procs=base.requested_procs,
        home_site=base.home_site,
        app_class=classes,
        transfer_s=transfer_s if transfer else np.zeros(len(base)),
    )


def build_workload(
    base: Sequence[Job],
    *,
    n_sites: int,
    n_benchmarks: int,
    load: float,
    seed: int,
    transfer: bool = False,
    shift_s: float = SHIFT_S,
    shifted: Iterable[int] = SHIFTED_COPIES,
) -> list[Job]:
    """One copy of ``base`` per site (home site = its index, ``shifted`` copies moved by
    ``shift_s``), merged and renumbered, times multiplied by ``load``, each job a random benchmark
    (``app_class``) and, with ``transfer``, a data-transfer time in ``attrs["transfer_s"]``."""
    merged = site_copies(base, n_sites=n_sites, shift_s=shift_s, shifted=shifted)
    return draw_workload(merged, n_benchmarks=n_benchmarks, load=load, seed=seed, transfer=transfer)


# ------------------------------------------------------------------------------------------- schemes


@dataclass(frozen=True)
class Scheme:
    """One configuration: meta-scheduler + local scheduler + queue order (+ data transfer)."""

    label: str
    meta: str = "least-load"
    k: int = 1
    selection: Selection = "load"
    local: str = "easy"
    order: str = "fcfs"
    transfer: bool = False
    single_site: bool = False
    variant: str = ""


SCHEMES: dict[str, Scheme] = {
    "greedy": Scheme("Greedy (K=1, EASY)"),
    "mr-easy": Scheme("Greedy-MR (K=4, EASY, start-based)", meta="k-reservations", k=4),
    "cons-fcfs": Scheme("Completion-based conservative (K=4, FCFS)", meta="completion-time", k=4, local="conservative"),
    "cons-slower": Scheme(
        "Completion-based conservative, cancel slower only (K=4, FCFS)",
        meta="cancel-slower-only",
        k=4,
        local="conservative",
    ),
    "single-easy": Scheme("Single site, EASY", local="easy", single_site=True),
    "single-cons": Scheme("Single site, conservative", local="conservative", single_site=True),
    **{
        f"eff-load-k{k}": Scheme(
            f"Efficacy, K={k}, load-based sites",
            meta="completion-time",
            k=k,
            local="conservative",
            order="efficacy",
        )
        for k in (1, 2, 3, 4)
    },
    **{
        f"eff-ct-k{k}": Scheme(
            f"Efficacy, K={k}, completion-time sites",
            meta="completion-time",
            k=k,
            selection="completion",
            local="conservative",
            order="efficacy",
        )
        for k in (1, 2, 3)
    },
    **{
        f"xfer-k{k}": Scheme(
            f"Efficacy, K={k}, load-based, with data transfer",
            meta="completion-time",
            k=k,
            local="conservative",
            order="efficacy",
            transfer=True,
        )
        for k in (1, 2, 3, 4)
    },
    # the other reading of cancel-slower-only (study ``cancel-slower``; in no figure of the paper)
    "cons-slower-nokill": Scheme(
        "Completion-based conservative, cancel slower only, no kill (K=4, FCFS)",
        meta="cancel-slower-only",
        k=4,
        local="conservative",
        variant="no-kill",
    ),
}


@dataclass(frozen=True)
class Figure:
    """A figure: one metric against the load factor, one line per scheme, one panel per trace."""

    number: int
    metric: str
    ylabel: str
    title: str
    series: tuple[str, ...]


_K = ("eff-load-k1", "eff-load-k2", "eff-load-k3", "eff-load-k4")
FIGURES: dict[int, Figure] = {
    f.number: f
    for f in (
        Figure(1, "mean_turnaround", "average turnaround time (s)", "Greedy vs Greedy-MR", ("greedy", "mr-easy")),
        Figure(2, "utilization", "utilization", "Greedy vs Greedy-MR", ("greedy", "mr-easy")),
        Figure(3, "effective_utilization", "effective utilization", "Greedy vs Greedy-MR", ("greedy", "mr-easy")),
        Figure(
            4,
            "mean_turnaround",
            "average turnaround time (s)",
            "Aggressive start-based vs conservative completion-based (K=4)",
            ("mr-easy", "cons-fcfs", "cons-slower"),
        ),
        Figure(
            5,
            "mean_turnaround",
            "average turnaround time (s)",
            "Aggressive vs conservative backfilling: single site",
            ("single-easy", "single-cons"),
        ),
        Figure(6, "utilization", "utilization", "Aggressive vs conservative (K=4)", ("mr-easy", "cons-fcfs")),
        Figure(
            7,
            "effective_utilization",
            "effective utilization",
            "Aggressive vs conservative (K=4)",
            ("mr-easy", "cons-fcfs"),
        ),
        Figure(8, "mean_turnaround", "average turnaround time (s)", "FCFS vs efficacy queue", ("cons-fcfs", _K[3])),
        Figure(9, "utilization", "utilization", "FCFS vs efficacy queue", ("cons-fcfs", _K[3])),
        Figure(10, "effective_utilization", "effective utilization", "FCFS vs efficacy queue", ("cons-fcfs", _K[3])),
        Figure(11, "mean_turnaround", "average turnaround time (s)", "Number of sites K (efficacy)", _K),
        Figure(
            12,
            "mean_turnaround",
            "average turnaround time (s)",
            "Site selection: instantaneous load vs completion time",
            (*_K, "eff-ct-k1", "eff-ct-k2", "eff-ct-k3"),
        ),
        Figure(
            13,
            "mean_turnaround",
            "average turnaround time (s)",
            "Efficacy queue, data transfer at 10 Mbit/s",
            ("xfer-k1", "xfer-k2", "xfer-k3", "xfer-k4"),
        ),
        Figure(
            14,
            "messages_per_job",
            "control messages per job",
            "Efficacy queue, data transfer at 10 Mbit/s",
            ("xfer-k1", "xfer-k2", "xfer-k3", "xfer-k4"),
        ),
    )
}


def schemes_for(figures: Iterable[int]) -> list[str]:
    """The scheme keys the given figures need, in :data:`SCHEMES` order."""
    wanted = {key for n in figures for key in FIGURES[n].series}
    return [key for key in SCHEMES if key in wanted]


# -------------------------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Task:
    """One simulation of the sweep."""

    trace: str
    load: float
    scheme: str


@dataclass(frozen=True)
class TraceData:
    """A trace's first ``n`` jobs and the processors per site, on ``platform`` (its sites resized
    to ``procs`` each, as the paper sizes every site like the trace's machine)."""

    name: str
    jobs: list[Job]
    procs: int
    platform: Platform
    arrivals: str = "copies"

    @cached_property
    def sites(self) -> list[Site]:
        """The simulator's sites: the platform's, ``procs`` processors each."""
        return self.platform.with_procs(self.procs).to_sites()

    @property
    def n_benchmarks(self) -> int:
        return len(self.platform.kinds)

    @cached_property
    def copies(self) -> list[Job]:
        """:func:`site_copies` of the jobs, one per site of Table 1; computed on first use and
        kept (every task of a sweep starts from it: ~0.3 s saved per task). Not to be changed."""
        if self.arrivals == "split":
            return split_stream(self.jobs, n_sites=len(self.platform.sites))
        return site_copies(self.jobs, n_sites=len(self.platform.sites))

    @cached_property
    def columns(self) -> JobColumns:
        """:attr:`copies` as columns, in their order (submit order, as ``transforms.load_factor``
        keeps it), built without them (:func:`site_columns`): what :func:`draw_columns` starts
        from. (Building the copies and their columns took ~0.3 s of a sweep's start per trace.)"""
        if self.arrivals == "split":
            return JobColumns.from_jobs(self.copies)
        return site_columns(self.jobs, n_sites=len(self.platform.sites))


def run_task(
    task: Task, data: TraceData, seed: int, *, compiled: bool = True, kernel: bool | None = None
) -> dict[str, Any]:
    """Run one task; a flat row of metrics (CSV-ready). ``compiled=False`` plans every site in
    pure Python (the reference path of :func:`simulate_multisite`; same rows); ``kernel=False``
    runs the Python driver instead of the compiled event loop (same rows)."""
    scheme = SCHEMES[task.scheme]
    fast = compiled and kernel is not False
    nb = data.n_benchmarks
    # the compiled loop runs on columns (no Job objects: same rows, tested); the other paths on Jobs
    jobs: list[Job] | JobColumns = (
        draw_columns(data.columns, n_benchmarks=nb, load=task.load, seed=seed, transfer=scheme.transfer)
        if fast
        else draw_workload(data.copies, n_benchmarks=nb, load=task.load, seed=seed, transfer=scheme.transfer)
    )
    order = lookup(ORDER_REGISTRY, scheme.order, "queue order")()
    local = lookup(LOCAL_REGISTRY, scheme.local, "local scheduler")(order=order)
    row: dict[str, Any] = {"trace": task.trace, "load_factor": task.load, "scheme": task.scheme}
    if scheme.single_site:
        if isinstance(jobs, JobColumns):
            # the compiled multi-site loop with this one site (a job can only go there, at the
            # reference speed): the same schedule as :func:`simulate` (tested), several times faster
            single = replace(
                jobs,
                run_time=jobs.run_time / SINGLE_SITE_SCALE,
                requested_time=jobs.requested_time / SINGLE_SITE_SCALE,
            )
            one = simulate_multisite(single, [Site("single", data.procs)], LeastLoad(k=1), local)
            submit, start, end, procs, ran = (
                single.submit_time, one.start_time, one.end_time, one.procs, one.run_time,
            )  # fmt: skip
        else:
            sched = simulate(
                [
                    j.copy(run_time=j.run_time / SINGLE_SITE_SCALE, requested_time=j.requested_time / SINGLE_SITE_SCALE)
                    for j in jobs
                ],
                data.procs,
                local,
                compiled=compiled,
            )
            submit, start, end, procs, ran = (
                sched.submit_time, sched.start_time, sched.end_time, sched.procs, sched.run_time,
            )  # fmt: skip
        turnaround = end - submit
        span = float(end.max() - start.min())
        busy = float((procs * ran).sum())
        row.update(
            jobs=len(jobs),
            mean_turnaround=float(turnaround.mean()),
            max_turnaround=float(turnaround.max()),
            mean_wait=float((start - submit).mean()),
            utilization=busy / (span * data.procs),
            effective_utilization=busy / (span * data.procs),
            messages_per_job=0.0,
        )
        return row
    meta_cls = lookup(META_REGISTRY, scheme.meta, "meta-scheduler")
    extra = {"variant": scheme.variant} if scheme.variant else {}
    meta = (
        meta_cls(k=scheme.k)
        if scheme.meta == "least-load"
        else meta_cls(k=scheme.k, selection=scheme.selection, **extra)
    )
    result = simulate_multisite(jobs, data.sites, meta, local, compiled=compiled, kernel=kernel)
    row.update(summarise_multisite(result))
    return row


def _cost(task: Task) -> float:
    """Rough relative cost, to start the long runs first."""
    s = SCHEMES[task.scheme]
    return (3.0 if s.local == "conservative" else 1.0) * s.k * task.load


def warm_up(data: dict[str, TraceData], schemes: Sequence[str], seed: int) -> None:
    """Compile the compiled event loop's kernels (numba: ~37 CPU s when its cache is cold, on both
    cores: :func:`~metasched.sim._multisite_kernel.compile_kernels`) or load them, then run each
    scheme once on a few jobs: once before a sweep's workers fork (they inherit them), or before
    timing runs (``bench/bench_sabin.py``)."""
    from metasched.sim._multisite_kernel import compile_kernels

    first = next(iter(data.values()))
    few = TraceData(first.name, first.jobs[:20], first.procs, first.platform, first.arrivals)
    compile_kernels()
    for scheme in schemes:
        run_task(Task(first.name, 1.0, scheme), few, seed)


def _work(context: tuple[dict[str, TraceData], int], task: Task) -> dict[str, Any]:
    data, seed = context
    return run_task(task, data[task.trace], seed)


def _warm(context: tuple[dict[str, TraceData], int], tasks: Sequence[Task]) -> None:
    """The runner's warm-up: kernels compiled or loaded, each scheme run once on a few jobs, the
    columns every task starts from computed (before the local pool forks: inherited)."""
    data, seed = context
    warm_up(data, sorted({t.scheme for t in tasks}), seed)
    for d in data.values():
        d.columns  # noqa: B018


def task_of(row: dict[str, Any]) -> Task:
    """The task a row of the sweep answers."""
    return Task(row["trace"], float(row["load_factor"]), row["scheme"])


def run_sweep(
    data: dict[str, TraceData],
    schemes: Sequence[str],
    loads: Sequence[float],
    *,
    seed: int,
    workers: int = 2,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    done_rows: Sequence[dict[str, Any]] = (),
    meanwhile: Callable[[], None] | None = None,
    executor: Executor | None = None,
    stage_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Every (trace, load, scheme) through :func:`metasched.experiments.runner.run_sweep` (the
    local pool of ``workers`` processes, or ``executor``); rows sorted by trace, load, scheme.
    ``done_rows``: rows of an earlier, interrupted sweep with the same inputs; their tasks are
    not run again (``on_done`` is called for the new rows only). ``meanwhile``: called once in
    this process while the workers run (with one worker, first)."""
    trace_rank = {t: i for i, t in enumerate(data)}
    scheme_rank = {s: i for i, s in enumerate(SCHEMES)}
    tasks = sorted(
        {Task(t, float(load), s) for t in data for load in loads for s in schemes},
        key=lambda k: (trace_rank[k.trace], k.load, scheme_rank[k.scheme]),
    )
    wanted = set(tasks)
    done = {task_of(r): r for r in done_rows if task_of(r) in wanted}
    return runner.run_sweep(
        (data, seed),
        tasks,
        _work,
        executor=executor,
        workers=workers,
        warm_up=_warm,
        stage_dir=stage_dir,
        done=dict(done),
        on_done=(lambda _task, row: on_done(row)) if on_done else None,
        meanwhile=meanwhile,
        order=lambda k: -_cost(k),
    )


# ----------------------------------------------------------------------------------- figures, claims


def figure_rows(rows: Sequence[dict[str, Any]], fig: Figure) -> list[dict[str, Any]]:
    """Long-format rows ``trace, load_factor, scheme, label, <metric>`` of one figure."""
    return [
        {
            "trace": r["trace"],
            "load_factor": r["load_factor"],
            "scheme": r["scheme"],
            "label": SCHEMES[r["scheme"]].label,
            fig.metric: r[fig.metric],
        }
        for r in rows
        if r["scheme"] in fig.series
    ]


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    write_rows_csv(path, rows)


#: One colour and one marker per scheme, the same in every figure (no two lines of a figure share
#: either: tested).
_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#000000", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#393b79",
)  # fmt: skip
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1", "2", "x")


def line_style(key: str) -> dict[str, Any]:
    """The colour, marker and dash of scheme ``key``'s line."""
    i = list(SCHEMES).index(key)
    return {
        "color": _COLOURS[i % len(_COLOURS)],
        "marker": _MARKERS[i % len(_MARKERS)],
        "linestyle": "--" if key.startswith("eff-ct") else "-",
    }


def plot_figure(path: Path, rows: Rows, fig: Figure, traces: Sequence[str], *, title: str = "") -> None:
    """One panel per trace: ``fig.metric`` against the load factor, one line per scheme; one
    legend below the panels (never over the data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels, axes = plt.subplots(1, len(traces), figsize=(6.0 * len(traces), 4.8), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, trace in zip(axes[0], traces, strict=True):
        for key in fig.series:
            pts = sorted((r["load_factor"], r[fig.metric]) for r in rows if r["trace"] == trace and r["scheme"] == key)
            if pts:
                (line,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], label=SCHEMES[key].label, **line_style(key))
                handles.setdefault(key, line)
        ax.set_title(f"{trace}")
        ax.set_xlabel("load factor")
        ax.set_ylabel(fig.ylabel)
        ax.grid(alpha=0.3)
    panels.legend(
        [handles[k] for k in fig.series if k in handles],
        [SCHEMES[k].label for k in fig.series if k in handles],
        loc="lower center",
        ncol=min(4, max(1, len(handles))),
        fontsize=8,
        frameon=False,
    )
    panels.suptitle(title or f"Figure {fig.number}: {fig.title}")
    # fixed margins (room for 7-digit ticks and two legend rows below the panels): ``tight_layout``
    # measured every text first, a third of a figure's drawing time
    panels.subplots_adjust(left=0.075, right=0.99, bottom=0.27, top=0.88, wspace=0.2)
    panels.savefig(path, dpi=110)
    plt.close(panels)


def load_plotting() -> None:
    """Import matplotlib (Agg) in this process: done while a sweep's workers run, so that the
    processes forked to draw the figures inherit it instead of each importing it (0.5-0.8 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot


def plot_figures(
    out: Path, rows: Sequence[dict[str, Any]], figures: Sequence[int], traces: Sequence[str], *, workers: int = 1
) -> None:
    """``figNN.png`` for each figure number (:func:`plot_figure`), drawn by ``workers`` forked
    processes (matplotlib draws ~0.5 s a figure; 14 figures on 2 cores: 7.8 -> 3.9 s)."""
    calls = [(out / f"fig{n:02d}.png", rows, FIGURES[n], traces) for n in figures]
    import multiprocessing as mp

    if workers > 1 and len(calls) > 1 and "fork" in mp.get_all_start_methods():
        with mp.get_context("fork").Pool(min(workers, len(calls))) as pool:
            pool.starmap(plot_figure, calls, chunksize=1)
    else:
        for call in calls:
            plot_figure(*call)


def _means(rows: Rows, trace: str, schemes: Sequence[str], metric: str) -> list[float] | None:
    """The mean over the load factors of ``metric`` for each scheme; None if one was not run."""
    out = []
    for key in schemes:
        s = series(rows, trace, key, metric)
        if s is None:
            return None
        out.append(float(np.mean(s)))
    return out


def _k_gain(rows: Rows, trace: str) -> Measure | None:
    """The turnaround gain from K=1 to K=2 less the larger of the later gains (s; > 0: the first
    step gains most)."""
    m = _means(rows, trace, [f"eff-load-k{k}" for k in (1, 2, 3, 4)], "mean_turnaround")
    if m is None:
        return None
    gains = [m[i] - m[i + 1] for i in range(3)]
    detail = "mean turnaround K=1..4: " + ", ".join(f"{v:,.0f} s" for v in m)
    return Measure(min(gains[0] - gains[1], gains[0] - gains[2]) if gains[0] > 0 else -abs(gains[0]), detail)


def _ct_better(rows: Rows, trace: str) -> Measure | None:
    """The worst (largest) relative change of completion-time over load-based selection, K=1..3."""
    parts, worst = [], -math.inf
    for k in (1, 2, 3):
        x = series(rows, trace, f"eff-ct-k{k}", "mean_turnaround")
        y = series(rows, trace, f"eff-load-k{k}", "mean_turnaround")
        if x is None or y is None:
            return None
        d = mean_rel(x, y)
        worst = max(worst, d)
        parts.append(f"K={k}: {d:+.1f}%")
    return Measure(worst, "completion-time vs load selection: " + ", ".join(parts))


def _transfer_rise(rows: Rows, trace: str) -> Measure | None:
    """The smallest relative rise of turnaround with data transfer over K=1..4."""
    mw = _means(rows, trace, [f"xfer-k{k}" for k in (1, 2, 3, 4)], "mean_turnaround")
    mo = _means(rows, trace, [f"eff-load-k{k}" for k in (1, 2, 3, 4)], "mean_turnaround")
    if mw is None or mo is None:
        return None
    rises = [100.0 * (a - b) / b for a, b in zip(mw, mo, strict=True)]
    return Measure(
        min(rises),
        "with/without transfer K=1..4: " + ", ".join(f"{a:,.0f}/{b:,.0f} s" for a, b in zip(mw, mo, strict=True)),
    )


def _transfer_order(rows: Rows, trace: str) -> Measure | None:
    """Pairs of K (of 6) ordered alike by turnaround with and without data transfer."""
    mw = _means(rows, trace, [f"xfer-k{k}" for k in (1, 2, 3, 4)], "mean_turnaround")
    mo = _means(rows, trace, [f"eff-load-k{k}" for k in (1, 2, 3, 4)], "mean_turnaround")
    if mw is None or mo is None:
        return None
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    same = sum((mw[i] < mw[j]) == (mo[i] < mo[j]) for i, j in pairs)
    return Measure(
        float(same),
        "K by turnaround with transfer " + _ranks(mw) + ", without " + _ranks(mo),
    )


def _ranks(values: Sequence[float]) -> str:
    """K=1..4 ordered by ``values``, lowest first: ``4 < 3 < 2 < 1``."""
    return " < ".join(str(int(i) + 1) for i in np.argsort(values, kind="stable"))


def _messages_grow(rows: Rows, trace: str) -> Measure | None:
    """The smallest step of control messages per job from K to K+1 (> 0: they grow)."""
    m = _means(rows, trace, [f"xfer-k{k}" for k in (1, 2, 3, 4)], "messages_per_job")
    if m is None:
        return None
    return Measure(
        min(m[i + 1] - m[i] for i in range(3)), "messages per job K=1..4: " + ", ".join(f"{v:.2f}" for v in m)
    )


def _worst_case(rows: Rows, trace: str) -> Measure | None:
    """The largest relative rise of the worst-case turnaround, efficacy (K=4) over FCFS."""
    x = series(rows, trace, "eff-load-k4", "max_turnaround")
    y = series(rows, trace, "cons-fcfs", "max_turnaround")
    if x is None or y is None:
        return None
    rises = [100.0 * (a - b) / b for a, b in zip(x, y, strict=True)]
    return Measure(max(rises), f"{mean_rel(x, y):+.1f}% on average over the load factors")


_T = "mean_turnaround"
#: Seed 000's claims (ids S1..S16; the figure each comes from). Tolerances read the paper's words;
#: "grows" / "gains most" need a step of at least 0.01 message or 1 s (the intervals are closed).
CLAIMS: tuple[Claim, ...] = (
    Claim("S1", "Greedy-MR (K=4) lowers turnaround only slightly vs greedy (within 15%)", "a slight gain",
          relative("mr-easy", "greedy", _T, "MR vs greedy turnaround"), Interval(-15, 0), "1"),
    Claim("S2", "Greedy-MR raises utilization only slightly (0 to +5%)", "a slight rise",
          relative("mr-easy", "greedy", "utilization", "MR vs greedy utilization"), Interval(0, 5), "2"),
    Claim("S3", "Completion-based conservative (K=4) is much better than start-based aggressive (>=20% lower)",
          "much lower turnaround", relative("cons-fcfs", "mr-easy", _T, "conservative vs aggressive turnaround"),
          Interval(hi=-20), "4"),
    Claim("S4", "Cancelling only slower copies improves turnaround, but not significantly (0 to -10%)",
          "a small gain", relative("cons-slower", "cons-fcfs", _T, "cancel-slower-only vs cancel-all"),
          Interval(-10, 0), "4"),
    Claim("S5", "On a single site, aggressive (EASY) beats conservative backfilling", "EASY lower",
          relative("single-easy", "single-cons", _T, "EASY vs conservative turnaround"), Interval(hi=0), "5"),
    Claim("S6", "Multi-site: aggressive has the higher raw utilization", "aggressive higher",
          relative("mr-easy", "cons-fcfs", "utilization", "aggressive vs conservative utilization"),
          Interval(lo=0), "6"),
    Claim("S7", "Multi-site: conservative has the higher effective utilization", "conservative higher",
          relative("cons-fcfs", "mr-easy", "effective_utilization", "conservative vs aggressive effective util."),
          Interval(lo=0), "7"),
    Claim("S8", "Efficacy priority lowers turnaround vs FCFS (K=4, conservative)", "efficacy lower",
          relative("eff-load-k4", "cons-fcfs", _T, "efficacy vs FCFS turnaround"), Interval(hi=0), "8"),
    Claim("S9", "FCFS priority has the better raw utilization", "FCFS higher",
          relative("cons-fcfs", "eff-load-k4", "utilization", "FCFS vs efficacy utilization"), Interval(lo=0), "9"),
    Claim("S10", "Efficacy priority has the higher effective utilization", "efficacy higher",
          relative("eff-load-k4", "cons-fcfs", "effective_utilization", "efficacy vs FCFS effective util."),
          Interval(lo=0), "10"),
    Claim("S11", "Efficacy priority increases the worst-case turnaround by less than 5%", "< +5%",
          _worst_case, Interval(hi=5), "8"),
    Claim("S12", "The greatest improvement is from K=1 to K=2", "K=1 to 2 gains most",
          _k_gain, Interval(1, math.inf, "s"), "11"),
    Claim("S13", "Completion-time site selection beats load-based selection for K<4", "lower for K=1..3",
          _ct_better, Interval(hi=0), "12"),
    Claim("S14", "Data transfer raises turnaround for every K", "higher for every K",
          _transfer_rise, Interval(lo=0), "13"),
    Claim("S15", "With data transfer the ordering over K stays", "same ordering",
          _transfer_order, Interval(6, 6, "of 6 pairs"), "13"),
    Claim("S16", "Control messages per job grow with K", "grow with K",
          _messages_grow, Interval(0.01, math.inf, "messages"), "14"),
)  # fmt: skip


def summary_markdown(
    rows: Rows,
    traces: Sequence[str],
    command: str,
    notes: Sequence[str],
    described: Mapping[str, tuple[str, int]] | None = None,
) -> str:
    """The summary: the traces as run, then the claims' verdicts per trace and across the traces,
    all generated from ``rows`` (:mod:`metasched.experiments.claims`); ``notes`` state the setup.
    ``described``: per trace, its SWF header's words and the processors per site it was run with."""
    verdicts = evaluate(CLAIMS, rows, traces)
    n = counts(verdicts)
    lines = [
        "# Sabin et al. 2003 (seed 000): which claims hold",
        "",
        f"Command: `{command}`",
        "",
        f"{n[HOLDS]} verdicts hold, {n[FAILS]} do not, {n[NOT_RUN]} were not run "
        f"({len(CLAIMS)} claims x {len(traces)} trace(s)).",
        "",
        "## Traces",
        "",
        "| trace | SWF header | processors per site | jobs simulated per run |",
        "| --- | --- | --- | --- |",
    ]
    for t in traces:
        mine = [r for r in rows if r["trace"] == t]
        jobs = sorted({int(r["jobs"]) for r in mine if "jobs" in r})
        header, procs = (described or {}).get(t, ("-", 0))
        lines.append(f"| {t} | {header} | {procs or '-'} | {', '.join(map(str, jobs)) or '-'} |")
    lines += [
        "",
        "## Claims per trace",
        "",
        "Ours: the measure named in the cell, from this run's rows. 'holds if ours is': this reproduction's",
        "reading of the paper's words, fixed before the runs.",
        "",
        *claims_tables(verdicts, traces),
        "## Robustness across the traces",
        "",
        *robustness_table(verdicts, traces),
        "",
        "## Setup",
        "",
    ]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ sensitivity studies


@dataclass(frozen=True)
class Study:
    """A sensitivity study (``--study NAME``): the schemes of the disputed claims, run on variants
    of each trace (a variant is a :class:`TraceData` under its own label); the claims' verdicts
    per variant say whether the disagreement moves with the reading."""

    name: str
    question: str
    schemes: tuple[str, ...]
    claims: tuple[str, ...]


_S4_NO_KILL = Claim(
    "S4 (no-kill)",
    "Cancelling only slower copies, kept copies never killing the running one, improves turnaround slightly "
    "(0 to -10%)",
    "a small gain",
    relative("cons-slower-nokill", "cons-fcfs", _T, "cancel-slower-only (no-kill) vs cancel-all"),
    Interval(-10, 0),
    "4",
)

STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study(
            "s3-procs",
            "S3 with every site as large as the paper's CTC machine (430) and as the trace's own machine",
            ("mr-easy", "cons-fcfs"),
            ("S3",),
        ),
        Study(
            "cancel-slower",
            "S4 under both readings of cancel-slower-only (restart: a faster kept copy kills and restarts the job; "
            "no-kill: it never does)",
            ("cons-fcfs", "cons-slower", "cons-slower-nokill"),
            ("S4", "S4 (no-kill)"),
        ),
        Study(
            "arrivals",
            "S1 and S11 with the arrival stream as one 5000-job stream dealt to the four sites (split) and as a "
            "copy of the trace per site (copies)",
            ("greedy", "mr-easy", "cons-fcfs", "eff-load-k4"),
            ("S1", "S11"),
        ),
    )
}


def study_variants(study: str, data: Mapping[str, TraceData]) -> dict[str, TraceData]:
    """The trace variants a study runs, by label: ``s3-procs``: each trace at its own size and at
    430 processors per site (``LABEL@430``); ``arrivals``: each trace as copies and as one split
    stream (``LABEL [split]``); ``cancel-slower``: the traces as given."""
    out: dict[str, TraceData] = {}
    for label, d in data.items():
        out[label] = d
        if study == "s3-procs" and d.procs != PAPER_CTC_PROCS:
            out[f"{label}@{PAPER_CTC_PROCS}"] = replace(d, procs=PAPER_CTC_PROCS)
        if study == "arrivals":
            out[f"{label} [split]"] = replace(d, arrivals="split")
    return out


#: The CTC machine of the paper ("the 430 node Cornell Theory Center (CTC) trace").
PAPER_CTC_PROCS = 430


def study_claims(study: Study) -> list[Claim]:
    """The claims a study reports, in its order."""
    known = {c.id: c for c in (*CLAIMS, _S4_NO_KILL)}
    return [known[i] for i in study.claims]


def study_rows(rows: Rows, study: Study) -> list[dict[str, Any]]:
    """Per variant and scheme: the mean over the load factors of turnaround, worst-case
    turnaround and utilization (the study's table and CSV)."""
    out: list[dict[str, Any]] = []
    for trace in dict.fromkeys(r["trace"] for r in rows):
        for key in study.schemes:
            mine = [r for r in rows if r["trace"] == trace and r["scheme"] == key]
            if not mine:
                continue
            out.append(
                {
                    "variant": trace,
                    "scheme": key,
                    "loads": len(mine),
                    "mean_turnaround": float(np.mean([r["mean_turnaround"] for r in mine])),
                    "max_turnaround": float(np.mean([r["max_turnaround"] for r in mine])),
                    "utilization": float(np.mean([r["utilization"] for r in mine])),
                }
            )
    return out


def study_markdown(rows: Rows, study: Study, traces: Sequence[str], command: str) -> str:
    """A study's summary: the question, the claims' verdicts per variant (generated), the means."""
    verdicts = evaluate(study_claims(study), rows, traces)
    lines = [
        f"# Sabin et al. 2003: study `{study.name}`",
        "",
        f"Command: `{command}`",
        "",
        f"Question: {study.question}.",
        "",
        "## Verdicts per variant",
        "",
        *robustness_table(verdicts, traces),
        "",
        *claims_tables(verdicts, traces),
        "## Means over the load factors",
        "",
        "| variant | scheme | mean turnaround (s) | worst-case turnaround (s) | utilization |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in study_rows(rows, study):
        lines.append(
            f"| {r['variant']} | {SCHEMES[r['scheme']].label} | {r['mean_turnaround']:,.0f} "
            f"| {r['max_turnaround']:,.0f} | {r['utilization']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot_study(path: Path, rows: Rows, study: Study, traces: Sequence[str]) -> None:
    """Mean turnaround against the load factor, one panel per variant, one line per scheme."""
    fig = Figure(0, "mean_turnaround", "average turnaround time (s)", f"study {study.name}", study.schemes)
    plot_figure(path, rows, fig, traces, title=f"Study {study.name}")


def platform_inputs(platform: Platform) -> dict[str, Any]:
    """What a sweep's rows depend on in ``platform`` (for the resume journal): the sites' names
    and speed factors by kind, in order."""
    return {
        "name": platform.name,
        "sites": [[s.name, s.speed, {k: s.speeds[k] for k in sorted(s.speeds)}] for s in platform.sites],
        "kinds": list(platform.kinds),
    }
