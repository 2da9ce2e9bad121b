"""Experiment of seed 004 section 5 (Pasquali et al. 2010): Figures 3-5, the scheduler's cost, the claims.

For every reading of the time unit of ``Ta`` (``seconds``, ``minutes``: the paper says "simulator
time unit"), mean inter-arrival ``Ta`` in {0, 5, 10, 15}, case in {MS heuristics, LS heuristics,
No heuristics} and repetition ``s`` in 0..19: one grid per repetition (the same for every reading,
``Ta`` and case: "each test was conducted by randomly generating a list of machines"), one job
stream per (``Ta``, repetition) (the same for the three cases and, its gaps scaled, for both
readings: comparisons are paired), one simulation.

Writes CSV (raw and per figure, floats at full precision), PNG (Figures 3, 4, 5, timing, and the
time-unit study's figure when both readings run), ``run.json`` (the configuration, for
``--replot``) and ``summary.md``: the paper's claims (:data:`CLAIMS`, as data) with their
verdicts per reading, generated from the run's rows. No sentence of the summary about results is
written by hand.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
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
    robustness_table,
)
from metasched.sim.metrics import read_rows_csv, write_rows_csv
from metasched.sim.two_level import run_case
from metasched.sim.two_level_metrics import cluster_metrics, stream_metrics, timing_metrics
from metasched.workload.pasquali import PasqualiParams, generate_grid, generate_jobs

CASE_LABELS = {"ms": "MS heuristics", "ls": "LS heuristics", "none": "No heuristics"}
#: The readings of the paper's "simulator time unit" for ``Ta``: seconds per unit.
TIME_UNITS = {"seconds": 1.0, "minutes": 60.0}
#: The sensitivity studies ``--study`` runs (name -> what it adds to the sweep).
STUDIES = {"time-unit": "both readings of the time unit of Ta (seconds and minutes), paired"}
#: The paper's inter-arrival of Figures 4 and 5, and of the claims made at one Ta.
PAPER_TA = 5.0


@dataclass(frozen=True, slots=True)
class Pasquali2010Config:
    """The sweep; ``params`` holds the generator's knobs (its ``mean_interarrival_s`` is replaced
    by each ``Ta``, its ``ta_unit_s`` by each reading of ``time_units``). ``focus_ta`` is the
    ``Ta`` of Figures 4 and 5 (the paper's 5)."""

    tas: tuple[float, ...] = (0.0, 5.0, 10.0, 15.0)
    cases: tuple[str, ...] = ("ms", "ls", "none")
    repetitions: int = 20
    seed: int = 2010
    window: int = 100
    workers: int = 2
    focus_ta: float = 5.0
    params: PasqualiParams = field(default_factory=PasqualiParams)
    time_units: tuple[str, ...] = ("seconds",)

    def __post_init__(self) -> None:
        unknown = [c for c in self.cases if c not in CASE_LABELS]
        if unknown:
            raise ValueError(f"unknown case(s) {unknown}; known: {sorted(CASE_LABELS)}")
        units = [u for u in self.time_units if u not in TIME_UNITS]
        if units or not self.time_units or len(set(self.time_units)) != len(self.time_units):
            raise ValueError(f"time units {list(self.time_units)}: give distinct ones of {sorted(TIME_UNITS)}")
        if not self.cases or not self.tas or len(set(self.tas)) != len(self.tas) or min(self.tas) < 0:
            raise ValueError(f"give at least one case and distinct Ta >= 0 (got Ta {list(self.tas)})")
        if self.repetitions < 1 or self.workers < 1:
            raise ValueError("repetitions and workers must be >= 1")
        if self.focus_ta not in self.tas:
            raise ValueError(f"focus_ta {self.focus_ta} is not one of tas {self.tas}")


Task = tuple[str, float, str, int, int, int, PasqualiParams]


def tasks_of(cfg: Pasquali2010Config) -> list[Task]:
    """One task per (reading, Ta, case, repetition), in the order the runs are reported."""
    return [
        (unit, ta, case, rep, cfg.seed, cfg.window, cfg.params)
        for unit in cfg.time_units
        for rep in range(cfg.repetitions)
        for ta in cfg.tas
        for case in cfg.cases
    ]


def _run_task(task: Task) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    unit, ta, case, rep, seed, window, params = task
    p = replace(params, mean_interarrival_s=ta, ta_unit_s=TIME_UNITS[unit])
    grid = generate_grid(p, np.random.default_rng([seed, rep, 0]))
    jobs = generate_jobs(p, grid, np.random.default_rng([seed, rep, 1, round(ta * 1000)]))
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_case(case, jobs, grid, seed=seed + rep, window=window)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    key = {"time_unit": unit, "ta": ta, "case": case, "rep": rep}
    rows = [key | row for row in cluster_metrics(res)]
    timing = key | stream_metrics(res) | timing_metrics(res) | {"sim_seconds": wall, "sim_cpu_seconds": cpu}
    return rows, timing


def _work(_context: None, task: Task) -> dict[str, Any]:
    """The runner's work function: one (reading, Ta, case, repetition) as one record."""
    rows, timing = _run_task(task)
    return {"time_unit": task[0], "ta": task[1], "case": task[2], "rep": task[3], "rows": rows, "timing": timing}


def _cost(task: Task) -> tuple[int, float]:
    # LS heuristics' runs are the longest: submitted first, they do not finish last on one worker.
    return (0 if task[2] == "ls" else 1, -task[1])


def record_key(record: Mapping[str, Any]) -> tuple[str, float, str, int]:
    return (str(record.get("time_unit", "seconds")), float(record["ta"]), str(record["case"]), int(record["rep"]))


def run(
    cfg: Pasquali2010Config,
    out: Path,
    *,
    progress: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    done: Sequence[dict[str, Any]] = (),
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run the sweep through :func:`metasched.experiments.runner.run_sweep` (``cfg.workers`` local
    processes, or ``executor``), write every output under ``out``; returns the per-cluster rows
    and the per-run rows. ``progress(k)`` is called as ``k`` more runs finish. ``done``: records
    of an earlier sweep with the same configuration (``on_record`` gets each new one), not run again."""
    out.mkdir(parents=True, exist_ok=True)
    tasks = tasks_of(cfg)
    by_key = {(t[0], t[1], t[2], t[3]): t for t in tasks}
    earlier = {by_key[k]: r for r in done if (k := record_key(r)) in by_key}

    def finished(_task: Task, record: dict[str, Any]) -> None:
        if on_record is not None:
            on_record(record)

    t0 = time.perf_counter()
    records = runner.run_sweep(
        None,
        tasks,
        _work,
        executor=executor,
        workers=cfg.workers,
        stage_dir=out / "stage",
        done=earlier,
        on_done=finished,
        progress=progress,
        order=_cost,
        meanwhile=_load_plotting,
    )
    elapsed = time.perf_counter() - t0
    rows = [row for r in records for row in r["rows"]]
    timings = [r["timing"] for r in records]
    rows, timings = sort_rows(cfg, rows, timings)
    write_rows_csv(out / "clusters.csv", rows)
    write_rows_csv(out / "timing.csv", timings)
    (out / RUN_FILE).write_text(json.dumps({"config": config_dict(cfg), "elapsed_s": elapsed}, indent=2) + "\n")
    write_outputs(cfg, rows, timings, out, elapsed)
    return rows, timings


def sort_rows(
    cfg: Pasquali2010Config, rows: list[dict[str, Any]], timings: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows in report order: reading, Ta, case, repetition (then cluster)."""

    def key(r: dict[str, Any]) -> tuple[int, float, int, int]:
        return (cfg.time_units.index(r["time_unit"]), r["ta"], list(CASE_LABELS).index(r["case"]), r["rep"])

    return sorted(rows, key=lambda r: (*key(r), r["cluster"])), sorted(timings, key=key)


def write_outputs(
    cfg: Pasquali2010Config, rows: list[dict[str, Any]], timings: list[dict[str, Any]], out: Path, elapsed_s: float
) -> list[str]:
    """Figures (PNG + CSV) and summary.md from the sweep's rows; the figures' names."""
    figures: list[str] = []
    for unit in cfg.time_units:
        figures += write_figures(cfg, rows, timings, out, unit)
    if len(cfg.time_units) > 1:
        figures.append(write_study_figure(cfg, rows, timings, out))
    (out / "summary.md").write_text(summary_markdown(cfg, rows, timings, figures, elapsed_s))
    return figures


# ----------------------------------------------------------------------------- replot

#: The configuration and wall time of a sweep, next to its CSVs (read by ``--replot``).
RUN_FILE = "run.json"
_TEXT_COLUMNS = frozenset({"time_unit", "case", "cluster"})


class ReplotError(ValueError):
    """An output directory ``--replot`` cannot redraw from (the message names the file)."""


def read_csv_rows(path: Path) -> list[dict[str, Any]]:
    """A CSV this module wrote, numbers as numbers (``int`` when written as one): the same values
    as the rows it was written from."""
    if not path.is_file():
        raise ReplotError(f"{path} not found; run the sweep first")
    try:
        rows = read_rows_csv(path, _TEXT_COLUMNS)
    except ValueError as exc:
        raise ReplotError(str(exc)) from None
    for number, row in enumerate(rows, 2):
        if not {"time_unit", "ta", "case", "rep"} <= row.keys() or row["case"] not in CASE_LABELS:
            raise ReplotError(f"{path}:{number}: not a pasquali2010 row (time_unit, ta, known case, rep)")
        row["ta"] = float(row["ta"])
    if not rows:
        raise ReplotError(f"{path} holds no run")
    return rows


def config_from_dict(raw: dict[str, Any]) -> Pasquali2010Config:
    p = dict(raw["params"])
    for k, v in p.items():
        if isinstance(v, list):
            p[k] = tuple(v)
    c = dict(raw)
    c["params"] = PasqualiParams(**p)
    for k in ("tas", "cases", "time_units"):
        c[k] = tuple(c[k])
    return Pasquali2010Config(**c)


def replot(out: Path) -> tuple[Pasquali2010Config, list[dict[str, Any]], list[dict[str, Any]]]:
    """Redo the figures and summary.md of the sweep in ``out`` from its CSVs and run.json (no
    simulation); the same files as the sweep wrote, byte for byte, given the same code."""
    path = out / RUN_FILE
    if not path.is_file():
        raise ReplotError(f"{path} not found; run the sweep first (or with this version)")
    try:
        raw = json.loads(path.read_text())
        cfg = config_from_dict(raw["config"])
        elapsed = float(raw["elapsed_s"])
    except (ValueError, KeyError, TypeError) as err:
        raise ReplotError(f"{path}: not a pasquali2010 run file ({err})") from None
    rows = read_csv_rows(out / "clusters.csv")
    timings = read_csv_rows(out / "timing.csv")
    want = {t[:4] for t in tasks_of(cfg)}
    have = {record_key(t) for t in timings}
    if have != want:
        raise ReplotError(f"{out / 'timing.csv'}: holds {len(have)} runs, {path} describes {len(want)}")
    rows, timings = sort_rows(cfg, rows, timings)
    write_outputs(cfg, rows, timings, out, elapsed)
    return cfg, rows, timings


# ----------------------------------------------------------------------------- aggregates


def aggregate(
    rows: Sequence[dict[str, Any]], metric: str, unit: str | None = None
) -> dict[tuple[float, str, str], tuple[float, float]]:
    """``(ta, case, cluster) -> (mean, std)`` of ``metric`` over repetitions (nan ignored), of
    the reading ``unit`` (all rows when None)."""
    groups: dict[tuple[float, str, str], list[float]] = {}
    for r in rows:
        if unit is None or r["time_unit"] == unit:
            groups.setdefault((r["ta"], r["case"], r["cluster"]), []).append(float(r[metric]))
    out = {}
    for k, v in groups.items():
        arr = np.array(v)
        arr = arr[np.isfinite(arr)]
        out[k] = (float(arr.mean()), float(arr.std())) if arr.size else (math.nan, math.nan)
    return out


def _clusters(rows: Rows) -> list[str]:
    """Cluster names, largest first (the generator's order: Cluster1 has the most machines)."""
    sizes = {r["cluster"]: r["machines"] for r in rows if r["cluster"] != "all"}
    return sorted(sizes, key=lambda c: (-sizes[c], c))


def _mine(rows: Rows, unit: str, ta: float, case: str | None = None, cluster: str | None = None) -> list[Any]:
    return [
        r
        for r in rows
        if r["time_unit"] == unit
        and r["ta"] == ta
        and (case is None or r["case"] == case)
        and (cluster is None or r["cluster"] == cluster)
    ]


def _mean(rows: Rows, unit: str, ta: float, case: str, cluster: str, metric: str) -> float | None:
    """Mean over repetitions of ``metric`` (finite values), None when not run."""
    vals = [float(r[metric]) for r in _mine(rows, unit, ta, case, cluster) if metric in r]
    vals = [v for v in vals if math.isfinite(v)]
    return sum(vals) / len(vals) if vals else None


def l1_to_optimal(rows: Rows, unit: str, ta: float, case: str) -> float | None:
    """Sum over clusters of |mean workload share - optimal share|, in points (None: not run)."""
    total = 0.0
    clusters = _clusters([r for r in rows if r["time_unit"] == unit])
    if not clusters:
        return None
    for c in clusters:
        s = _mean(rows, unit, ta, case, c, "workload_share")
        o = _mean(rows, unit, ta, case, c, "optimal_share")
        if s is None or o is None:
            return None
        total += abs(s - o)
    return 100.0 * total


# ----------------------------------------------------------------------------- claims

_MS = "ms"


def _equal_share(rows: Rows, unit: str) -> Measure | None:
    clusters = _clusters([r for r in rows if r["time_unit"] == unit])
    shares = [_mean(rows, unit, 0.0, _MS, c, "workload_share") for c in clusters]
    if not clusters or any(s is None for s in shares):
        return None
    gaps = [100.0 * abs(s - 1 / len(clusters)) for s in shares if s is not None]
    return Measure(
        max(gaps),
        f"largest gap to {100 / len(clusters):.2f}%; shares "
        + ", ".join(f"{c}: {100 * s:.2f}%" for c, s in zip(clusters, shares, strict=True) if s is not None),
    )


def _closest_at_paper_ta(rows: Rows, unit: str) -> Measure | None:
    tas = sorted({r["ta"] for r in rows if r["time_unit"] == unit and r["case"] == _MS})
    dist = {t: l1_to_optimal(rows, unit, t, _MS) for t in tas}
    here = dist.get(PAPER_TA)
    others = [d for t, d in dist.items() if t != PAPER_TA and d is not None]
    if here is None or not others:
        return None
    return Measure(
        here - min(others),
        "distance to the optimal shares (sum over clusters, points): "
        + ", ".join(f"Ta={t:g}: {d:.2f}" for t, d in dist.items() if d is not None),
    )


def _powerful_gains(rows: Rows, unit: str) -> Measure | None:
    mine = [r for r in rows if r["time_unit"] == unit and r["cluster"] != "all"]
    if not mine:
        return None
    power = {r["cluster"]: r["power_share"] for r in mine}
    top = max(power, key=lambda c: (power[c], c))
    tas = [t for t in sorted({r["ta"] for r in mine}) if t >= PAPER_TA]
    shares = {t: _mean(rows, unit, t, _MS, top, "workload_share") for t in tas}
    if PAPER_TA not in shares or max(tas) == PAPER_TA or None in shares.values():
        return None
    last = max(tas)
    return Measure(
        100.0 * (shares[last] - shares[PAPER_TA]),  # type: ignore[operator]
        f"{top}'s share: " + ", ".join(f"Ta={t:g}: {100 * s:.2f}%" for t, s in shares.items() if s is not None),
    )


def _slowdown_above_one(rows: Rows, unit: str) -> Measure | None:
    mine = [r for r in _mine(rows, unit, PAPER_TA) if r["cluster"] != "all"]
    if not mine:
        return None
    vals = {
        (case, c): v
        for case in dict.fromkeys(r["case"] for r in mine)
        for c in _clusters(mine)
        if (v := _mean(rows, unit, PAPER_TA, case, c, "slowdown_no_deadline")) is not None
    }
    if not vals:
        return None
    (case, c), low = min(vals.items(), key=lambda kv: kv[1])
    return Measure(low, f"lowest: {c}, {CASE_LABELS[case]} ({len(vals)} cluster x case means)")


def _per_cluster(rows: Rows, unit: str, metric: str) -> tuple[list[tuple[str, float]], list[str]] | None:
    """``(cluster, mean of metric)``, largest cluster first (MS heuristics, the paper's Ta), and the
    clusters where it is not defined (no job, no demand); None when not run."""
    clusters = _clusters([r for r in rows if r["time_unit"] == unit])
    if not _mine(rows, unit, PAPER_TA, _MS) or not clusters:
        return None
    out, undefined = [], []
    for c in clusters:
        v = _mean(rows, unit, PAPER_TA, _MS, c, metric)
        if v is None:
            undefined.append(c)
        else:
            out.append((c, v))
    return out, undefined


def _undefined(clusters: Sequence[str]) -> str:
    return f"; undefined in {', '.join(clusters)} (no job or no demand there)" if clusters else ""


def _steps(metric: str, what: str, fmt: str, sign: float) -> Callable[[Rows, str], Measure | None]:
    """``sign`` x the smallest step of ``metric`` (MS heuristics, paper's Ta) from each cluster to
    the next smaller one: >= 0 iff it grows (sign 1) or shrinks (sign -1) at every step."""

    def measure(rows: Rows, unit: str) -> Measure | None:
        got = _per_cluster(rows, unit, metric)
        if got is None or len(got[0]) < 2:
            return None
        vals, undefined = got
        step = min(sign * (b[1] - a[1]) for a, b in itertools.pairwise(vals))
        return Measure(step, f"{what}: " + ", ".join(f"{c}: {format(v, fmt)}" for c, v in vals) + _undefined(undefined))

    return measure


def _missed_vs(case: str, other: str) -> Callable[[Rows, str], Measure | None]:
    def measure(rows: Rows, unit: str) -> Measure | None:
        a = {r["rep"]: r["missed_deadline_pct"] for r in _mine(rows, unit, PAPER_TA, case, "all")}
        b = {r["rep"]: r["missed_deadline_pct"] for r in _mine(rows, unit, PAPER_TA, other, "all")}
        reps = sorted(a.keys() & b.keys())
        if not reps:
            return None
        ma, mb = (sum(x[r] for r in reps) / len(reps) for x in (a, b))
        fewer = sum(a[r] < b[r] for r in reps)
        return Measure(
            ma - mb,
            f"{ma:.2f}% vs {mb:.2f}% of jobs with a deadline; fewer in {fewer} of {len(reps)} paired runs",
        )

    return measure


def _cost_vs(case: str, other: str) -> Callable[[Rows, str], Measure | None]:
    def measure(rows: Rows, unit: str) -> Measure | None:
        a = [r["ls_us_per_pass"] for r in _mine(rows, unit, PAPER_TA, case, "all") if "ls_us_per_pass" in r]
        b = [r["ls_us_per_pass"] for r in _mine(rows, unit, PAPER_TA, other, "all") if "ls_us_per_pass" in r]
        if not a or not b:
            return None
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        return Measure(100.0 * (ma - mb) / mb, f"{ma:.0f} µs vs {mb:.0f} µs per LS pass")

    return measure


def _missed_in(which: int) -> Callable[[Rows, str], Measure | None]:
    """Jobs missing their deadline in the largest (``which = 0``) or smallest (-1) cluster."""

    def measure(rows: Rows, unit: str) -> Measure | None:
        clusters = _clusters([r for r in rows if r["time_unit"] == unit])
        if not clusters:
            return None
        c = clusters[which]
        v = _mean(rows, unit, PAPER_TA, _MS, c, "missed_deadline")
        n = _mean(rows, unit, PAPER_TA, _MS, c, "jobs_with_deadline")
        if v is None or n is None:
            return None
        return Measure(v, f"{c}, mean over the repetitions, of {n:.0f} jobs with a deadline")

    return measure


def _usage_spread(metric: str) -> Callable[[Rows, str], Measure | None]:
    def measure(rows: Rows, unit: str) -> Measure | None:
        mine = _mine(rows, unit, PAPER_TA)
        cases = list(dict.fromkeys(r["case"] for r in mine))
        if len(cases) < 2:
            return None
        parts, undefined, worst = [], [], -math.inf
        for c in _clusters(mine):
            vals = [v for case in cases if (v := _mean(rows, unit, PAPER_TA, case, c, metric)) is not None]
            if len(vals) != len(cases):
                undefined.append(c)
                continue
            worst = max(worst, max(vals) - min(vals))
            parts.append(f"{c}: " + "/".join(f"{v:.1f}" for v in vals))
        if not parts:
            return None
        return Measure(
            worst,
            "; ".join(parts) + " (" + "/".join(CASE_LABELS[c] for c in cases) + ")" + _undefined(undefined),
        )

    return measure


_PTS = "points"
#: Seed 004's claims on section 5 (ids P1..P15; the figure each comes from). Claims at one Ta are at
#: the paper's Ta = 5. Tolerances read the paper's words, fixed before any run: "the same" within
#: 2 points; "comparable" within 3 points; "hundreds" 100-999 jobs, "only few" at most 10.
CLAIMS: tuple[Claim, ...] = (
    Claim("P1", "Ta = 0: every cluster gets the same share of the workload (MS heuristics)",
          "the same amount", _equal_share, Interval(0, 2, _PTS), "3"),
    Claim("P2", "Ta = 5 gives the workload distribution closest to the optimal (MS heuristics)",
          "Ta = 5 closest", _closest_at_paper_ta, Interval(hi=0, unit=_PTS), "3"),
    Claim("P3", "From Ta = 5 to the largest Ta the most powerful cluster gets more of the workload",
          "a larger share", _powerful_gains, Interval(lo=0, unit=_PTS), "3"),
    Claim("P4", "Ta = 5: the average slowdown of jobs without deadline is above 1 in every cluster and case",
          "> 1 everywhere", _slowdown_above_one, Interval(lo=1.01, unit="slowdown"), "4 left"),
    Claim("P5", "Ta = 5: that slowdown grows as the cluster's power decreases (MS heuristics)",
          "grows", _steps("slowdown_no_deadline", "slowdown", ".2f", 1.0), Interval(lo=0, unit="slowdown"),
          "4 left"),
    Claim("P6", "Ta = 5: MS heuristics miss fewer deadlines than No heuristics", "fewer",
          _missed_vs("ms", "none"), Interval(hi=0, unit=_PTS), "4 right"),
    Claim("P7", "Ta = 5: LS heuristics miss fewer deadlines than No heuristics", "fewer",
          _missed_vs("ls", "none"), Interval(hi=0, unit=_PTS), "4 right"),
    Claim("P8", "Ta = 5: MS heuristics are comparable to LS heuristics on missed deadlines", "comparable",
          _missed_vs("ms", "ls"), Interval(-3, 3, _PTS), "4 right"),
    Claim("P9", "MS heuristics cost less than LS heuristics (LS time per scheduling pass, Ta = 5)",
          "a smaller cost", _cost_vs("ms", "ls"), Interval(hi=0), "-"),
    Claim("P10", "Ta = 5: hundreds of jobs miss their deadline in the largest cluster (MS heuristics)",
          "hundreds", _missed_in(0), Interval(100, 999, "jobs"), "4 right"),
    Claim("P11", "Ta = 5: only a few jobs miss their deadline in the smallest cluster (MS heuristics)",
          "only few", _missed_in(-1), Interval(0, 10, "jobs"), "4 right"),
    Claim("P12", "Ta = 5: the three cases have similar processor usage (largest spread in a cluster)",
          "similar", _usage_spread("cpu_usage_pct"), Interval(0, 5, _PTS), "5 left"),
    Claim("P13", "Ta = 5: the three cases have similar licence usage (largest spread in a cluster)",
          "similar", _usage_spread("licence_usage_pct"), Interval(0, 5, _PTS), "5 right"),
    Claim("P14", "Ta = 5: the fewer machines a cluster has, the lower its processor usage (MS heuristics)",
          "lower", _steps("cpu_usage_pct", "processor usage %", ".1f", -1.0), Interval(lo=0, unit=_PTS),
          "5 left"),
    Claim("P15", "Ta = 5: the fewer machines a cluster has, the lower its licence usage (MS heuristics)",
          "lower", _steps("licence_usage_pct", "licence usage %", ".1f", -1.0), Interval(lo=0, unit=_PTS),
          "5 right"),
)  # fmt: skip


def claim_rows(rows: Rows, timings: Rows) -> list[dict[str, Any]]:
    """The rows the claims read: the per-cluster rows, each run's grid-wide row ("all") joined
    with that run's scheduler cost."""
    cost = {record_key(t): t for t in timings}
    out = []
    for r in rows:
        row = dict(r)
        if r["cluster"] == "all" and (t := cost.get(record_key(row))) is not None:
            row["ls_us_per_pass"] = t["ls_us_per_pass"]
        out.append(row)
    return out


# ----------------------------------------------------------------------------- figures

#: One colour and one marker per line (tab10 without its grey; the colour-blind-safe order).
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")
_HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "++", "--")


def _load_plotting() -> None:
    """Import matplotlib (Agg) while the runs go (the figures come after)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot


def _suffix(cfg: Pasquali2010Config, unit: str) -> str:
    return "" if unit == cfg.time_units[0] else f"-{unit}"


def _legend_below(fig: Any, handles: Sequence[Any], labels: Sequence[str], ncol: int) -> None:
    """One legend under the panels (never over the data); the panels keep the space above it."""
    fig.legend(handles, labels, loc="lower center", ncol=max(1, ncol), fontsize=8, frameon=False)
    rows = -(-len(labels) // max(1, ncol))
    fig.subplots_adjust(bottom=0.14 + 0.05 * rows, top=0.86, wspace=0.25)


def write_figures(
    cfg: Pasquali2010Config, rows: list[dict[str, Any]], timings: list[dict[str, Any]], out: Path, unit: str
) -> list[str]:
    """Figures 3-5 (+ timing) of one reading as PNG, each with the CSV of the plotted values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    clusters = _clusters([r for r in rows if r["time_unit"] == unit])
    x = np.arange(len(clusters))
    written = []
    sfx = _suffix(cfg, unit)
    reading = f"Ta in {unit}"

    # Figure 3: workload share per cluster, per Ta, against the optimal share.
    share = aggregate(rows, "workload_share", unit)
    optimal = aggregate(rows, "optimal_share", unit)
    power = aggregate(rows, "power_share", unit)
    fig3_rows = []
    fig, axes = plt.subplots(1, len(cfg.cases), figsize=(5 * len(cfg.cases), 4.6), sharey=True, squeeze=False)
    width = 0.8 / (len(cfg.tas) + 1)
    handles: list[Any] = []
    for ax, case in zip(axes[0], cfg.cases, strict=True):
        bars = []
        for i, ta in enumerate(cfg.tas):
            vals = [100 * share[(ta, case, c)][0] for c in clusters]
            errs = [100 * share[(ta, case, c)][1] for c in clusters]
            bars.append(
                ax.bar(
                    x + i * width, vals, width, yerr=errs, color=_COLOURS[i % len(_COLOURS)],
                    hatch=_HATCHES[i % len(_HATCHES)], edgecolor="white", linewidth=0,
                )
            )  # fmt: skip
            for c, v, e in zip(clusters, vals, errs, strict=True):
                fig3_rows.append(
                    {
                        "time_unit": unit,
                        "case": case,
                        "ta": ta,
                        "cluster": c,
                        "share_pct": v,
                        "std_pct": e,
                        "optimal_pct": 100 * optimal[(ta, case, c)][0],
                        "power_share_pct": 100 * power[(ta, case, c)][0],
                    }
                )
        opt = [100 * optimal[(cfg.tas[0], case, c)][0] for c in clusters]
        bars.append(ax.bar(x + len(cfg.tas) * width, opt, width, color="black"))
        handles = bars
        ax.set_xticks(x + width * len(cfg.tas) / 2, clusters)
        ax.set_title(CASE_LABELS[case])
        ax.set_ylabel("workload share (%)")
    _legend_below(fig, handles, [f"Ta={t:g}" for t in cfg.tas] + ["Optimal (machines)"], len(cfg.tas) + 1)
    fig.suptitle(f"Figure 3: average cluster load ({reading})")
    fig.savefig(out / f"fig3_workload_share{sfx}.png", dpi=100)
    plt.close(fig)
    write_rows_csv(out / f"fig3_workload_share{sfx}.csv", fig3_rows)
    written.append(f"fig3_workload_share{sfx}")

    ta = cfg.focus_ta
    for name, panels, title in (
        (
            "fig4_slowdown_deadlines",
            (("slowdown_no_deadline", "avg slowdown, no-deadline jobs"), ("missed_deadline_pct", "% missed deadline")),
            f"Figure 4 (Ta={ta:g}, {reading})",
        ),
        (
            "fig5_usage",
            (("cpu_usage_pct", "processor usage (%)"), ("licence_usage_pct", "licence usage (%)")),
            f"Figure 5 (Ta={ta:g}, {reading})",
        ),
    ):
        fig, axes2 = plt.subplots(1, 2, figsize=(10, 4.6), squeeze=False)
        csv_rows = []
        w = 0.8 / len(cfg.cases)
        for ax, (metric, label) in zip(axes2[0], panels, strict=True):
            agg = aggregate(rows, metric, unit)
            handles = []
            for i, case in enumerate(cfg.cases):
                vals = [agg[(ta, case, c)][0] for c in clusters]
                errs = [agg[(ta, case, c)][1] for c in clusters]
                handles.append(
                    ax.bar(
                        x + i * w, vals, w, yerr=errs, color=_COLOURS[i % len(_COLOURS)],
                        hatch=_HATCHES[i % len(_HATCHES)], edgecolor="white", linewidth=0,
                    )
                )  # fmt: skip
                for c, v, e in zip(clusters, vals, errs, strict=True):
                    csv_rows.append(
                        {"time_unit": unit, "metric": metric, "ta": ta, "case": case, "cluster": c, "mean": v, "std": e}
                    )
            ax.set_xticks(x + w * (len(cfg.cases) - 1) / 2, clusters)
            ax.set_ylabel(label)
        _legend_below(fig, handles, [CASE_LABELS[c] for c in cfg.cases], len(cfg.cases))
        fig.suptitle(title)
        fig.savefig(out / f"{name}{sfx}.png", dpi=100)
        plt.close(fig)
        write_rows_csv(out / f"{name}{sfx}.csv", csv_rows)
        written.append(f"{name}{sfx}")

    # Scheduler cost: microseconds per LS pass and per MS dispatch, per case and Ta.
    fig, ax = plt.subplots(figsize=(6, 4.6))
    w = 0.8 / len(cfg.cases)
    tx = np.arange(len(cfg.tas))
    cost_rows = []
    handles = []
    for i, case in enumerate(cfg.cases):
        vals = []
        for t in cfg.tas:
            sel = [r for r in timings if r["time_unit"] == unit and r["case"] == case and r["ta"] == t]
            us = float(np.mean([r["ls_us_per_pass"] for r in sel]))
            ms_us = float(np.mean([1e6 * r["ms_seconds"] / max(r["ms_decisions"], 1) for r in sel]))
            vals.append(us)
            cost_rows.append(
                {"time_unit": unit, "case": case, "ta": t, "ls_us_per_pass": us, "ms_us_per_dispatch": ms_us}
            )
        handles.append(
            ax.bar(
                tx + i * w, vals, w, color=_COLOURS[i % len(_COLOURS)], hatch=_HATCHES[i % len(_HATCHES)],
                edgecolor="white", linewidth=0,
            )
        )  # fmt: skip
    ax.set_xticks(tx + w * (len(cfg.cases) - 1) / 2, [f"Ta={t:g}" for t in cfg.tas])
    ax.set_ylabel("LS time per scheduling pass (µs)")
    _legend_below(fig, handles, [CASE_LABELS[c] for c in cfg.cases], len(cfg.cases))
    fig.suptitle(f"Scheduler cost ({reading})")
    fig.savefig(out / f"timing{sfx}.png", dpi=100)
    plt.close(fig)
    write_rows_csv(out / f"timing_summary{sfx}.csv", cost_rows)
    written.append(f"timing{sfx}")
    return written


#: The time-unit study's panels: (metric of the grid-wide rows, or of the per-run rows, y label).
STUDY_PANELS = (
    ("missed_deadline_pct", "% jobs missing their deadline"),
    ("slowdown_no_deadline", "avg slowdown, no-deadline jobs"),
    ("cpu_usage_pct", "processor usage (%)"),
    ("l1_to_optimal", "distance to optimal shares (points)"),
)


def study_rows(cfg: Pasquali2010Config, rows: Rows, timings: Rows) -> list[dict[str, Any]]:
    """One row per (reading, Ta, case): the offered load and makespan of the stream and the
    grid-wide means the study plots (means over the repetitions)."""
    out = []
    for unit in cfg.time_units:
        for ta in cfg.tas:
            for case in cfg.cases:
                runs = [t for t in timings if t["time_unit"] == unit and t["ta"] == ta and t["case"] == case]
                row: dict[str, Any] = {"time_unit": unit, "ta": ta, "case": case, "repetitions": len(runs)}
                row["offered_load"] = float(np.mean([t["offered_load"] for t in runs]))
                row["makespan_s"] = float(np.mean([t["makespan_s"] for t in runs]))
                for metric, _ in STUDY_PANELS[:3]:
                    row[metric] = _mean(rows, unit, ta, case, "all", metric)
                row["l1_to_optimal"] = l1_to_optimal(rows, unit, ta, case)
                out.append(row)
    return out


def write_study_figure(cfg: Pasquali2010Config, rows: Rows, timings: Rows, out: Path) -> str:
    """``study_time_unit.png`` + ``.csv``: the study's metrics against Ta, one line per (reading,
    case), each its own colour and marker; the reading also by dash (solid: the first)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = study_rows(cfg, rows, timings)
    write_rows_csv(out / "study_time_unit.csv", data)
    fig, axes = plt.subplots(1, len(STUDY_PANELS), figsize=(4.2 * len(STUDY_PANELS), 4.6), squeeze=False)
    lines: list[Any] = []
    labels: list[str] = []
    for ax, (metric, ylabel) in zip(axes[0], STUDY_PANELS, strict=True):
        k = 0
        for u, unit in enumerate(cfg.time_units):
            for case in cfg.cases:
                pts = [(r["ta"], r[metric]) for r in data if r["time_unit"] == unit and r["case"] == case]
                (line,) = ax.plot(
                    [p[0] for p in pts], [math.nan if p[1] is None else p[1] for p in pts],
                    color=_COLOURS[k % len(_COLOURS)], marker=_MARKERS[k % len(_MARKERS)],
                    linestyle=("-", "--", ":", "-.")[u % 4],
                )  # fmt: skip
                if ax is axes[0][0]:
                    lines.append(line)
                    labels.append(f"{CASE_LABELS[case]}, Ta in {unit}")
                k += 1
        ax.set_xlabel("Ta (in the reading's unit)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(list(cfg.tas))
        ax.grid(alpha=0.3)
    _legend_below(fig, lines, labels, len(cfg.cases))
    fig.suptitle("Time unit of Ta: seconds vs minutes (means over the repetitions, whole grid)")
    fig.savefig(out / "study_time_unit.png", dpi=100)
    plt.close(fig)
    return "study_time_unit"


# ----------------------------------------------------------------------------- summary


def _num(v: float | None, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "∞" if math.isinf(v) else format(v, fmt)


def summary_markdown(
    cfg: Pasquali2010Config, rows: Rows, timings: Rows, figures: Sequence[str], elapsed_s: float
) -> str:
    """The summary: what was run, the claims' verdicts per reading of the time unit and across
    them, the load each reading offers, and (both readings run) the study's table; every number
    from ``rows`` / ``timings``, every verdict from :data:`CLAIMS`."""
    units = list(cfg.time_units)
    verdicts = evaluate(CLAIMS, claim_rows(rows, timings), units)
    n = counts(verdicts)
    sims = np.array([t["sim_seconds"] for t in timings])
    cpus = np.array([t["sim_cpu_seconds"] for t in timings])
    p = cfg.params
    lines = [
        "# Pasquali et al. 2010 (seed 004): two-level scheduler, section 5",
        "",
        f"{len(timings)} simulations ({len(units)} reading(s) of the time unit x {len(cfg.tas)} Ta x "
        f"{len(cfg.cases)} cases x {cfg.repetitions} repetitions) of {p.n_jobs} jobs on {len(p.cluster_sizes)} "
        f"clusters of {', '.join(map(str, p.cluster_sizes))} machines; {elapsed_s:.1f} s wall on {cfg.workers} "
        f"process(es); CPU time of one simulation {cpus.mean():.2f} s on average (max {cpus.max():.2f} s), wall "
        f"{sims.mean():.2f} s (max {sims.max():.2f} s).",
        "",
        f"{n[HOLDS]} verdicts hold, {n[FAILS]} do not, {n[NOT_RUN]} were not run "
        f"({len(CLAIMS)} claims x {len(units)} reading(s) of the time unit of Ta).",
        "",
        "## Claims per reading of the time unit",
        "",
        "Ours: the measure named in the cell, from this run's rows (means over the repetitions; claims at one",
        f"Ta are at the paper's Ta = {PAPER_TA:g}). 'holds if ours is': this reproduction's reading of the paper's",
        "words, fixed before the runs. Units: points = percentage points; jobs = jobs per simulation.",
        "",
        *(f"### Ta in {line[4:]}" if line.startswith("### ") else line for line in claims_tables(verdicts, units)),
    ]
    if len(units) > 1:
        lines += ["## Robustness across the readings", "", *robustness_table(verdicts, units), ""]
    lines += [
        "## Offered load",
        "",
        "Offered load: the CPU-seconds the jobs ask for (CPUs x estimate) over the grid's CPUs x the time from the",
        "first submission to the last; ∞ when every job is submitted at once. Makespan: first submission to last",
        "end. Means over the repetitions; whole grid.",
        "",
        "| Ta in | Ta | offered load | case | makespan (s) | % missing deadline | slowdown, no deadline "
        "| processor usage % | distance to optimal (points) |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in study_rows(cfg, rows, timings):
        lines.append(
            f"| {r['time_unit']} | {r['ta']:g} | {_num(r['offered_load'], '.3g')} | {CASE_LABELS[r['case']]} "
            f"| {_num(r['makespan_s'], ',.0f')} | {_num(r['missed_deadline_pct'], '.2f')} "
            f"| {_num(r['slowdown_no_deadline'], '.2f')} | {_num(r['cpu_usage_pct'], '.1f')} "
            f"| {_num(r['l1_to_optimal'], '.2f')} |"
        )
    lines += [
        "",
        "## Setup (choices where the paper is silent: all parameters)",
        "",
        "- Time unit of Ta: "
        + "; ".join(f"{u} (1 unit = {TIME_UNITS[u]:g} s)" for u in units)
        + ". Estimates and margins are seconds in every reading; each reading's stream is the same draws, "
        "its gaps scaled.",
        f"- Licence types |L| = {p.n_licence_types}; a licence-using job ({100 * p.p_licence:.0f}% of jobs) asks for "
        f"1..{p.max_licences_per_job} distinct types (uniform).",
        "- Licence pools are per cluster: copies = round(licences_ratio x machines able to run the licence), one ratio "
        f"per licence in [{p.licence_ratio[0]:.0%}, {p.licence_ratio[1]:.0%}]; machines run a licence with "
        f"probability {p.machine_licence_prob:g}.",
        f"- User classes Gold/Silver/Regular with probabilities {p.user_class_probs}; MS User deltas 2/1/0.",
        "- MS: Deadline with max = 4 and a window of "
        f"N = {cfg.window} margins; Licences with max = 3 (ceil(n max / |L|)); priorities 0..9.",
        "- LS weights: Aging 1e-3 per second queued; Deadline min 0, max 10, k = 2; Licences W_L = 1; "
        "Wait Minimization W_WM = 2 (on the estimate scaled to the cluster's best machine).",
        "- Estimates are exact (run time = estimate, scaled by benchmark ratio on the machine that runs the job); "
        "job CPUs are capped at the widest machine.",
        "- Usage = time average, over the instants with demand, of active / min(available, running + queued demand); "
        "workload share weights jobs by estimate x estimating benchmark (the MS's load).",
        "- 'Optimal' share = machines of the cluster / all machines (the paper's); power share (CPUs x benchmark) "
        "is in fig3_workload_share.csv.",
        f"- One grid per repetition (seeded {cfg.seed}, rep), shared by every reading, Ta and case; one job stream "
        "per (Ta, rep), shared by the three cases.",
        "- The paper's simulator and its weights are not given: the LS weights above are ours, not tuned. Timing "
        "is Python policy time (perf_counter around each MS dispatch and each LS pass), not the paper's.",
        "- Figure numbering follows the paper's captions (Figure 3 = cluster load, Figure 4 = slowdown and "
        "deadlines, Figure 5 = usage); its text calls the workload figure 'Figure 4'.",
        "",
        "## Files",
        "",
        "clusters.csv (one row per run and cluster), timing.csv (one row per run: stream, cost), run.json "
        "(the configuration, for --replot), "
        + ", ".join(f"{f}.png + {f.replace('timing', 'timing_summary')}.csv" for f in figures),
        "",
    ]
    return "\n".join(lines)


def config_dict(cfg: Pasquali2010Config) -> dict[str, Any]:
    return asdict(cfg)
