"""Seed 001's experiment: local processing vs job sharing vs multi-site co-allocation.

Source: Ernemann, Hamscher, Schwiegelshohn, Yahyapour, Streit, "On Advantages of Grid Computing for
Parallel Job Scheduling" (2002), sections 3-4. The sweep runs every machine configuration of
Table 1 x scenario x workload x workload modification, with the multi-site overhead
``p = 0, 5, ..., 40 %``, EASY backfilling on every machine, and reports AWRT (section 4.3).

Workloads (section 4.2): three extracts of 10,000 consecutive jobs of the CTC SP2 trace (at the
start, the middle and the end of the trace, each shifted to start at 0) and one synthetic CTC-like
workload of 10,000 jobs (:func:`metasched.workload.generate.ctc_like`, resampled from the whole
trace, seeded). Jobs go to the sites round robin. Modifications: 1 = wide jobs split into parts
of their home machine's size, 2 = split into parts of the largest machine's size, 3 = unchanged.
Scenarios run on the modifications the paper runs them on: local 1; job sharing 1, 2; multi-site
1, 2, 3. ``m512`` is the single-machine reference (no grid, nothing to split): one EASY run per
workload, reported under every modification.

Runs whose modified workload is identical (e.g. modifications 1 and 2 on equal machines, 2 and 3
when no job is wider than the largest machine) are computed once and reported under each.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, pairwise
from pathlib import Path
from typing import Any

from metasched.experiments import runner, shared_dir
from metasched.experiments.claims import Claim, Interval, Measure, Rows
from metasched.experiments.traces import trace_words
from metasched.model.job import Job
from metasched.model.machines import parse_machines
from metasched.model.platform import Platform
from metasched.model.platform_file import load_platform, load_preset, preset_names
from metasched.policy.meta import BestFit, MultiSite
from metasched.sim.grid import GridResult, simulate_grid, simulate_local
from metasched.sim.metrics import summarise
from metasched.workload.generate import ctc_like
from metasched.workload.swf import read_swf
from metasched.workload.transforms import rebase, split_round_robin, split_wide

TRACE_NAME = "CTC-SP2-1996-3.1-cln.swf.gz"
N_JOBS = 10_000
SEED = 2002
OVERHEADS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(9))
GRID_CONFIGS: tuple[str, ...] = ("m64", "m128", "m256", "m384")
REFERENCE = "m512"
LOCAL, SHARING, MULTISITE, SINGLE = "local", "job-sharing", "multisite", "single"
#: Which modifications each scenario runs on (section 4.2).
SCENARIO_MODS: dict[str, tuple[int, ...]] = {LOCAL: (1,), SHARING: (1, 2), MULTISITE: (1, 2, 3)}
MODS: tuple[int, ...] = (1, 2, 3)

ROW_FIELDS: tuple[str, ...] = (
    "workload",
    "config",
    "scenario",
    "modification",
    "overhead",
    "awrt",
    "jobs",
    "split_jobs",
    "mean_wait",
    "mean_response",
    "mean_bounded_slowdown",
    "utilization",
    "makespan",
    "sim_s",
    "cpu_s",
)


def default_trace() -> Path:
    return shared_dir() / "data" / "traces" / TRACE_NAME


# -- workloads ------------------------------------------------------------------------------------


def extracts(jobs: Sequence[Job], n_jobs: int, count: int = 3) -> list[list[Job]]:
    """``count`` extracts of ``n_jobs`` consecutive jobs, evenly spread from the start to the end of
    ``jobs`` (in submit order), each rebased to start at 0. Disjoint when the trace is long enough."""
    if n_jobs <= 0:
        raise ValueError(f"extract size must be positive, got {n_jobs}")
    if len(jobs) < n_jobs:
        raise ValueError(f"the trace has {len(jobs)} jobs, fewer than one extract of {n_jobs}")
    ordered = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    span = len(ordered) - n_jobs
    starts = [0] if count == 1 else [round(k * span / (count - 1)) for k in range(count)]
    return [rebase(ordered[s : s + n_jobs]) for s in starts]


def names_of(label: str) -> list[str]:
    """The four workload names of the trace labelled ``label``: the paper's ``ctc1``, ``ctc2``,
    ``ctc3``, ``ctcsyn`` for ``CTC``; ``<label>1`` .. ``<label>syn`` (lower case) for another short
    name; ``<label>:1`` .. ``<label>:syn`` for a file's label."""
    prefix = label.lower() if label.replace("-", "").isalnum() else f"{label}:"
    return [f"{prefix}1", f"{prefix}2", f"{prefix}3", f"{prefix}syn"]


def load_workloads(trace: Path, n_jobs: int = N_JOBS, seed: int = SEED, label: str = "CTC") -> dict[str, list[Job]]:
    """Three extracts of the trace and one seeded synthetic workload resampled from it, named by
    :func:`names_of` (``ctc1``, ``ctc2``, ``ctc3``, ``ctcsyn`` for the CTC trace)."""
    if not trace.exists():
        raise FileNotFoundError(f"trace not found: {trace} (set METASCHED_SHARED or pass --trace)")
    source = read_swf(trace).jobs
    names = names_of(label)
    workloads = {names[k]: ex for k, ex in enumerate(extracts(source, n_jobs))}
    workloads[names[3]] = ctc_like(n_jobs, seed=seed, source_jobs=source)
    return workloads


def modify(jobs: Sequence[Job], sizes: Sequence[int], modification: int) -> list[Job]:
    """Round-robin site assignment, then seed 001's workload modification (1, 2 or 3).

    1: every job wider than its home machine is split into parts of that machine's size;
    2: every job wider than the largest machine is split into parts of that size; 3: unchanged.
    Parts keep their home site and follow their parent in submit order; ids are renumbered 1..N in
    that order (the original id stays in ``attrs["parent_id"]`` for parts), so the same jobs get the
    same ids whatever the modification. Invariant: processors x run time is unchanged, per original
    job and in total (:func:`metasched.workload.transforms.split_wide`).
    """
    if modification not in MODS:
        raise ValueError(f"workload modification must be one of {MODS}, got {modification}")
    placed = split_round_robin(jobs, len(sizes))
    if modification == 3:
        parts: list[Job] = placed
    elif modification == 2:
        parts = split_wide(placed, max(sizes))
    else:
        rank = {j.job_id: k for k, j in enumerate(placed)}
        per_site = [split_wide([j for j in placed if j.home_site == m], size) for m, size in enumerate(sizes)]
        parts = sorted(chain.from_iterable(per_site), key=lambda j: rank[j.attrs.get("parent_id", j.job_id)])
    return [j.copy(job_id=k + 1) for k, j in enumerate(parts)]


def _part_widths(width: int, part_size: int) -> tuple[int, ...]:
    """Widths of the parts :func:`split_wide` makes of a job of ``width`` (one part if it fits)."""
    if width <= part_size:
        return (width,)
    n_parts = -(-width // part_size)
    return (part_size,) * (n_parts - 1) + (width - part_size * (n_parts - 1),)


def signature(jobs: Sequence[Job], sizes: Sequence[int], modification: int, *, with_home: bool = True) -> str:
    """Digest of what :func:`modify` makes of ``jobs``, without building it: equal digests mean the
    same jobs (times and widths, and home sites if ``with_home``) in the same order."""
    digest = hashlib.blake2b(digest_size=16)
    n, largest = len(sizes), max(sizes)
    ordered = sorted(jobs, key=lambda j: j.submit_time)  # split_round_robin's order
    for k, j in enumerate(ordered):
        home = k % n
        size = sizes[home] if modification == 1 else largest if modification == 2 else j.requested_procs
        widths = _part_widths(j.requested_procs, size)
        tag = home if with_home else -1
        digest.update(f"{j.submit_time},{j.run_time},{j.requested_time},{widths},{tag};".encode())
    return digest.hexdigest()


# -- tasks ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation: a workload under a configuration, scenario, modification and overhead."""

    workload: str
    config: str
    scenario: str
    modification: int
    overhead: float = 0.0


def plan_runs(workloads: Iterable[str], configs: Iterable[str], overheads: Sequence[float] = OVERHEADS) -> list[Run]:
    """Every run of the sweep (before de-duplication).

    Besides the scenarios, ``single`` runs put a configuration's modified workload on ONE machine of
    all its processors (the like-for-like reference of multi-site at p = 0: same jobs, no
    partitioning); under ``m512`` they are seed 001's reference configuration.
    """
    runs: list[Run] = []
    for w in workloads:
        for c in configs:
            if c == REFERENCE:
                runs.extend(Run(w, c, SINGLE, mod) for mod in MODS)
                continue
            runs.extend(Run(w, c, SINGLE, mod) for mod in MODS)
            runs.extend(Run(w, c, LOCAL, mod) for mod in SCENARIO_MODS[LOCAL])
            runs.extend(Run(w, c, SHARING, mod) for mod in SCENARIO_MODS[SHARING])
            runs.extend(Run(w, c, MULTISITE, mod, p) for mod in SCENARIO_MODS[MULTISITE] for p in overheads)
    return runs


@lru_cache(maxsize=64)
def config_of(key: str) -> Platform:
    """The machines of configuration ``key``: a Table 1 name (``m128``: the preset
    ``ernemann2002-m128`` under ``model/presets/``, read by the platform loader), a platform TOML
    file, or a user list of sizes (``"128,128,256"``, ``"2x256"``). One site per machine."""
    preset = f"ernemann2002-{key}"
    if preset in preset_names():
        return load_preset(preset)
    if key.endswith(".toml"):
        if not Path(key).is_file():
            raise ValueError(f"configuration {key!r}: no such platform file")
        return load_platform(key)
    return Platform.from_machine_config(parse_machines(key))


def sizes_of(key: str) -> list[int]:
    """The processors of each machine of configuration ``key`` (:func:`config_of`), in site order."""
    return [s.procs for s in config_of(key).sites]


def simulate_run(jobs: Sequence[Job], sizes: Sequence[int], scenario: str, overhead: float) -> GridResult:
    """Run one scenario; ``jobs`` already modified."""
    if scenario == LOCAL:
        return simulate_local(jobs, sizes)
    if scenario == SINGLE:
        return simulate_local([j.copy(home_site=0) for j in jobs], [sum(sizes)])
    if scenario == SHARING:
        return simulate_grid(jobs, sizes, BestFit())
    if scenario == MULTISITE:
        return simulate_grid(jobs, sizes, MultiSite(), overhead=overhead)
    raise ValueError(f"unknown scenario {scenario!r}")


def row_of(run: Run, result: GridResult, sim_s: float, cpu_s: float) -> dict[str, Any]:
    """One CSV row; ``sim_s`` / ``cpu_s``: wall and CPU seconds of the simulation."""
    summary = summarise(result.schedule)
    return {
        "workload": run.workload,
        "config": run.config,
        "scenario": run.scenario,
        "modification": run.modification,
        "overhead": run.overhead,
        "awrt": summary["awrt"],
        "jobs": summary["jobs"],
        "split_jobs": result.n_split,
        "mean_wait": summary["mean_wait"],
        "mean_response": summary["mean_response"],
        "mean_bounded_slowdown": summary["mean_bounded_slowdown"],
        "utilization": summary["utilization"],
        "makespan": summary["makespan"],
        "sim_s": sim_s,
        "cpu_s": cpu_s,
    }


# Per worker process: the base workloads (set by the pool initializer) and a cache of modified ones.
_BASE: dict[str, list[Job]] = {}
_MODIFIED: dict[tuple[str, str, int], list[Job]] = {}
_SOURCE: list[dict[str, list[Job]]] = []  # the workloads _BASE was filled from


def _init_worker(workloads: dict[str, list[Job]]) -> None:
    _BASE.clear()
    _BASE.update(workloads)
    _MODIFIED.clear()


def _work(workloads: dict[str, list[Job]], run: Run) -> dict[str, Any]:
    """The runner's work function: one representative run (the caches follow ``workloads``)."""
    if not _SOURCE or _SOURCE[0] is not workloads:
        _init_worker(workloads)
        _SOURCE[:] = [workloads]
    return _execute(run)


def run_of(row: dict[str, Any]) -> Run:
    """The run a result row answers."""
    return Run(row["workload"], row["config"], row["scenario"], int(row["modification"]), float(row["overhead"]))


def _modified(workload: str, config: str, modification: int) -> list[Job]:
    key = (workload, config, modification)
    if key not in _MODIFIED:
        if len(_MODIFIED) > 8:
            _MODIFIED.clear()
        sizes = sizes_of(config)
        _MODIFIED[key] = modify(_BASE[workload], sizes, modification)
    return _MODIFIED[key]


def _execute(run: Run) -> dict[str, Any]:
    sizes = sizes_of(run.config)
    jobs = _modified(run.workload, run.config, run.modification)
    t0, c0 = time.perf_counter(), time.process_time()
    result = simulate_run(jobs, sizes, run.scenario, run.overhead)
    return row_of(run, result, time.perf_counter() - t0, time.process_time() - c0)


def _dedupe(runs: Sequence[Run], workloads: dict[str, list[Job]]) -> dict[Run, list[Run]]:
    """Representative run -> every run that has the same modified workload, scenario and overhead."""
    fingerprints: dict[tuple[str, str, int, bool], str] = {}

    def fingerprint(run: Run, with_home: bool) -> str:
        fkey = (run.workload, run.config, run.modification, with_home)
        if fkey not in fingerprints:
            sizes = sizes_of(run.config)
            fingerprints[fkey] = signature(workloads[run.workload], sizes, run.modification, with_home=with_home)
        return fingerprints[fkey]

    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        if run.scenario == SINGLE:
            # One machine: the sites and the home sites do not matter, only the jobs and the size.
            key: tuple[Any, ...] = (SINGLE, sum(sizes_of(run.config)), fingerprint(run, False))
        else:
            key = (run.config, run.scenario, run.overhead, fingerprint(run, True))
        groups.setdefault(key, []).append(run)
    return {members[0]: members for members in groups.values()}


def run_sweep(
    workloads: dict[str, list[Job]],
    configs: Sequence[str] = (*GRID_CONFIGS, REFERENCE),
    overheads: Sequence[float] = OVERHEADS,
    *,
    workers: int = 2,
    on_plan: Callable[[int], None] | None = None,
    on_done: Callable[[Run], None] | None = None,
    executor: Executor | None = None,
    stage_dir: Path | None = None,
    done_rows: Sequence[dict[str, Any]] = (),
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every run of the sweep through :func:`metasched.experiments.runner.run_sweep` (``workers``
    local processes, 1: in this process; or ``executor``).

    ``on_plan`` gets the number of distinct simulations; ``on_done`` is called after each one
    (also for those in ``done_rows``, rows of an earlier sweep with the same inputs, not run
    again); ``on_row`` gets each new simulation's row. Rows come back in :func:`plan_runs` order.
    """
    for c in configs:
        config_of(c)
    bad = [p for p in overheads if p < 0 or not math.isfinite(p)]
    if bad:
        raise ValueError(f"overheads must be finite and non-negative, got {bad}")
    runs = plan_runs(workloads, configs, overheads)
    groups = _dedupe(runs, workloads)
    if on_plan is not None:
        on_plan(len(groups))
    # Runs sharing a modified workload are adjacent: each worker's cache of modified workloads hits.
    todo = sorted(groups, key=lambda r: (r.workload, r.config, r.modification, r.scenario, r.overhead))
    rows: dict[Run, dict[str, Any]] = {}

    def collect(rep: Run, row: dict[str, Any]) -> None:
        for member in groups[rep]:
            rows[member] = {
                **row,
                "workload": member.workload,
                "config": member.config,
                "scenario": member.scenario,
                "modification": member.modification,
                "overhead": member.overhead,
            }

    def finished(rep: Run, row: dict[str, Any]) -> None:
        if on_row is not None:
            on_row(row)
        if on_done is not None:
            on_done(rep)

    done = {r: row for r, row in ((run_of(row), row) for row in done_rows) if r in groups}
    if on_done is not None:
        for rep in done:
            on_done(rep)
    new = runner.run_sweep(
        workloads,
        todo,
        _work,
        executor=executor,
        workers=workers,
        stage_dir=stage_dir,
        done=done,
        on_done=finished,
    )
    for rep, row in zip(todo, new, strict=True):
        collect(rep, row)
    return [rows[run] for run in runs]


# -- the paper's claims ---------------------------------------------------------------------------


def _index(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str, int, float], float]:
    return {
        (r["workload"], r["config"], r["scenario"], int(r["modification"]), round(float(r["overhead"]), 4)): float(
            r["awrt"]
        )
        for r in rows
    }


def break_even(ms: Sequence[tuple[float, float]], sharing: float) -> float:
    """Overhead at which multi-site stops beating job sharing: the first crossing of AWRT(p) with the
    job-sharing AWRT, linearly interpolated between sweep points; ``inf`` when it never crosses in
    the sweep, 0 when multi-site is not better even at the first point."""
    points = sorted(ms)
    if not points:
        return math.nan
    if points[0][1] >= sharing:
        return 0.0
    for (p0, a0), (p1, a1) in pairwise(points):
        if a1 >= sharing:
            return p0 + (p1 - p0) * (sharing - a0) / (a1 - a0)
    return math.inf


def break_evens(rows: Sequence[Mapping[str, Any]], modification: int = 2) -> dict[tuple[str, str], float]:
    """``(workload, config) -> break-even overhead`` of multi-site against job sharing (same mod)."""
    idx = _index(rows)
    out: dict[tuple[str, str], float] = {}
    for w, c, s, mod, _ in idx:
        if s != SHARING or mod != modification:
            continue
        ms = [(p, a) for (w2, c2, s2, m2, p), a in idx.items() if (w2, c2, s2, m2) == (w, c, MULTISITE, modification)]
        if ms:
            out[(w, c)] = break_even(ms, idx[(w, c, SHARING, modification, 0.0)])
    return out


def _pct(x: float) -> str:
    return "never" if x == math.inf else ("n/a" if math.isnan(x) else f"{100 * x:.1f}%")


#: "Close" in claims E2 and E5: a relative AWRT gap of at most 10%.
CLOSE_PCT = 10.0


def _sharing_cut(rows: Rows, w: str) -> Measure | None:
    """E1: job sharing (modification 1) against local processing on m128, relative AWRT (%)."""
    idx = _index(rows)
    local, js = idx.get((w, "m128", LOCAL, 1, 0.0)), idx.get((w, "m128", SHARING, 1, 0.0))
    if not local or js is None:
        return None
    return Measure(100.0 * (js / local - 1), f"AWRT sharing {js:,.0f} s vs local {local:,.0f} s")


def _close_to_m512(rows: Rows, w: str) -> Measure | None:
    """E2: multi-site at p = 0 (m128, modification 2) against the same jobs on one 512 machine (%)."""
    idx = _index(rows)
    ms0, single = idx.get((w, "m128", MULTISITE, 2, 0.0)), idx.get((w, "m128", SINGLE, 2, 0.0))
    if not single or ms0 is None:
        return None
    ref = idx.get((w, REFERENCE, SINGLE, 2, 0.0))
    unsplit = f"; vs m512 on the unsplit jobs {100 * (ms0 / ref - 1):+.1f}%" if ref else ""
    return Measure(100.0 * (ms0 / single - 1), f"AWRT {ms0:,.0f} s vs {single:,.0f} s{unsplit}")


def _beats_sharing_at_25(rows: Rows, w: str) -> Measure | None:
    """E3: multi-site at p = 25% against job sharing (m128, modification 2), relative AWRT (%)."""
    idx = _index(rows)
    ms, js = idx.get((w, "m128", MULTISITE, 2, 0.25)), idx.get((w, "m128", SHARING, 2, 0.0))
    if not js or ms is None:
        return None
    even = break_evens([r for r in rows if r["workload"] == w and r["config"] == "m128"], 2).get((w, "m128"))
    return Measure(100.0 * (ms / js - 1), f"break-even overhead {_pct(even if even is not None else math.nan)}")


def _tolerance_margin(other: str) -> Callable[[Rows, str], Measure | None]:
    """E4: the larger break-even overhead of m128 and m256 less that of ``other`` (percentage
    points; 'never' within the sweep counted as 100%)."""

    def measure(rows: Rows, w: str) -> Measure | None:
        even = break_evens([r for r in rows if r["workload"] == w], 2)
        if any((w, c) not in even for c in ("m128", "m256", other)):
            return None
        points = {c: 100.0 * min(even[(w, c)], 1.0) for c in ("m128", "m256", other)}
        return Measure(
            max(points["m128"], points["m256"]) - points[other],
            "break-even " + ", ".join(f"{c} {_pct(even[(w, c)])}" for c in ("m128", "m256", other)),
        )

    return measure


def _wide_kept(rows: Rows, w: str) -> Measure | None:
    """E5: multi-site at p = 0 on m128, wide jobs kept whole (mod 3) against split (mod 2) (%)."""
    idx = _index(rows)
    kept, split = idx.get((w, "m128", MULTISITE, 3, 0.0)), idx.get((w, "m128", MULTISITE, 2, 0.0))
    if not split or kept is None:
        return None
    return Measure(100.0 * (kept / split - 1), f"AWRT kept {kept:,.0f} s vs split {split:,.0f} s")


#: Seed 001's claims (figure each comes from), one verdict per workload. Tolerances read the
#: paper's words ("over 50%", "close", "about 25%", "more overhead"), fixed before any run.
CLAIMS: tuple[Claim, ...] = (
    Claim("E1", "Job sharing cuts AWRT by over 50% against local processing (m128)", "over 50% lower",
          _sharing_cut, Interval(hi=-50), "4"),
    Claim("E2", f"Multi-site with p = 0 comes close to one 512-processor machine (within {CLOSE_PCT:g}%, m128, "
          "modification 2, same jobs)", "close to m512", _close_to_m512, Interval(-CLOSE_PCT, CLOSE_PCT), "4"),
    Claim("E3", "Multi-site still beats job sharing at 25% overhead (m128, modification 2)", "break-even about 25%",
          _beats_sharing_at_25, Interval(hi=0), "6"),
    Claim("E4a", "Equal-sized machines (m128 or m256) tolerate more overhead than m384", "more than m384",
          _tolerance_margin("m384"), Interval(lo=0.1, unit="points"), "5"),
    Claim("E4b", "Equal-sized machines (m128 or m256) tolerate more overhead than m64", "more than m64",
          _tolerance_margin("m64"), Interval(lo=0.1, unit="points"), "5"),
    Claim("E5", f"Keeping wide jobs whole raises multi-site AWRT by at most {CLOSE_PCT:g}% at p = 0 (m128)",
          "no significant rise", _wide_kept, Interval(hi=CLOSE_PCT), "7"),
)  # fmt: skip


#: Sensitivity studies (``--study NAME``), computed from the sweep's rows.
STUDIES: dict[str, str] = {
    "e3": "E3 on every workload: the break-even overhead of multi-site against job sharing per machine set "
    "(modification 2); the paper: about 25% on m128",
}


def break_even_rows(rows: Rows) -> list[dict[str, Any]]:
    """Study ``e3``: per workload and machine set, the break-even overhead (``inf``: multi-site
    still better at the largest overhead run) and AWRT(p = 25%) / AWRT(job sharing)."""
    idx = _index(rows)
    even = break_evens(rows, 2)
    out = []
    for w in workload_traces(rows):
        for c in GRID_CONFIGS:
            if (w, c) not in even:
                continue
            js, ms = idx.get((w, c, SHARING, 2, 0.0)), idx.get((w, c, MULTISITE, 2, 0.25))
            out.append(
                {
                    "workload": w,
                    "config": c,
                    "break_even": even[(w, c)],
                    "awrt_sharing": js,
                    "awrt_multisite_25": ms,
                    "ratio_25": ms / js if ms is not None and js else math.nan,
                }
            )
    return out


def workload_traces(rows: Rows) -> list[str]:
    """The workloads of ``rows`` in first-seen order (the claims' columns)."""
    return list(dict.fromkeys(str(r["workload"]) for r in rows))


def describe_setup(
    traces: Mapping[str, Path],
    workloads: Mapping[str, list[Job]],
    infos: Mapping[str, Mapping[str, Any]],
    seed: int = SEED,
) -> list[str]:
    """Bullet lines describing the traces and workloads (``infos``: :func:`metasched.workload.info.describe`
    of each workload on 512 processors): facts of the setup, no result."""
    lines = [
        f"Trace {label}: {trace_words(path)}; extracts {', '.join(names_of(label)[:3])} are consecutive jobs at the "
        f"start, middle and end of the trace; {names_of(label)[3]} is `ctc_like` resampled from the whole trace "
        f"(seed {seed})."
        for label, path in traces.items()
    ]
    lines += [
        "Round-robin site assignment; EASY backfilling on every machine; central grid queue (FCFS) with "
        "BestFit (job sharing) or MultiSite (single machine by BestFit, else split over the freest machines); "
        "split jobs run (1 + p) x longer, estimates alike. The machine sets are the presets "
        "ernemann2002-m64 .. m512 (`metasched platforms`).",
        "Chosen here where the paper is silent: the single machine of a non-split multi-site job is chosen by "
        "BestFit; one EASY reservation for the whole grid queue; estimates are the trace's requested times.",
    ]
    for w, info in infos.items():
        load = info.get("offered_load")
        load_text = f"{load:.2f}" if isinstance(load, float) else "n/a"
        lines.append(
            f"{w}: {info['jobs']} jobs over {info['span_days']:.1f} days, offered load on 512 processors "
            f"{load_text}, widest {info['widest']}, jobs > 128 wide: "
            f"{sum(1 for j in workloads[w] if j.requested_procs > 128)}"
        )
    return lines
