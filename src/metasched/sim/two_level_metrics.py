"""Metrics of seed 004 section 5 for a :class:`~metasched.sim.two_level.TwoLevelResult`.

Per cluster: share of the workload (load = estimate x estimating benchmark, the MS's own measure)
against the *optimal* share (machines of the cluster / all machines, the paper's definition) and
the power share (CPUs x benchmark); percentage of the cluster's jobs with a deadline that end
after it; CPU and licence usage, the time average over the instants with demand of
``active / min(available, requested)`` (requested = running + queued demand); average slowdown
``(wait + execution) / execution`` of the cluster's jobs without deadline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasched.model.qos import qos_of
from metasched.sim.two_level import TwoLevelResult


def cluster_metrics(res: TwoLevelResult) -> list[dict[str, Any]]:
    """One row per cluster, then one row ``cluster = "all"`` for the whole grid."""
    if np.isnan(res.end).any():
        raise ValueError("result has jobs that never ran")
    jobs = res.jobs
    qos = [qos_of(j) for j in jobs]
    load = np.array([j.requested_time * q.benchmark for j, q in zip(jobs, qos, strict=True)])
    deadline = np.array([np.nan if q.deadline is None else q.deadline for q in qos])
    submit = np.array([j.submit_time for j in jobs])
    has_dl = ~np.isnan(deadline)
    with np.errstate(invalid="ignore"):
        missed = has_dl & (res.end > deadline)
    execution = res.end - res.start
    slowdown = (res.start - submit + execution) / execution
    machines = np.array([len(c.machines) for c in res.clusters], dtype=float)
    power = np.array([c.power for c in res.clusters])
    total_load = load.sum()
    rows: list[dict[str, Any]] = []
    for c, cl in enumerate(res.clusters):
        mine = res.cluster == c
        dl = mine & has_dl
        nodl = mine & ~has_dl
        rows.append(
            {
                "cluster": cl.name,
                "machines": len(cl.machines),
                "jobs": int(mine.sum()),
                "workload_share": float(load[mine].sum() / total_load) if total_load else 0.0,
                "optimal_share": float(machines[c] / machines.sum()),
                "power_share": float(power[c] / power.sum()),
                "jobs_with_deadline": int(dl.sum()),
                "missed_deadline": int(missed[mine].sum()),
                "missed_deadline_pct": float(100.0 * missed[mine].sum() / dl.sum()) if dl.any() else 0.0,
                "cpu_usage_pct": _pct(res.cpu_usage_integral[c], res.cpu_demand_time[c]),
                "licence_usage_pct": _pct(res.lic_usage_integral[c], res.lic_demand_time[c]),
                "slowdown_no_deadline": float(slowdown[nodl].mean()) if nodl.any() else float("nan"),
            }
        )
    n_dl = int(has_dl.sum())
    rows.append(
        {
            "cluster": "all",
            "machines": int(machines.sum()),
            "jobs": len(jobs),
            "workload_share": 1.0,
            "optimal_share": 1.0,
            "power_share": 1.0,
            "jobs_with_deadline": n_dl,
            "missed_deadline": int(missed.sum()),
            "missed_deadline_pct": float(100.0 * missed.sum() / n_dl) if n_dl else 0.0,
            "cpu_usage_pct": _pct(res.cpu_usage_integral.sum(), res.cpu_demand_time.sum()),
            "licence_usage_pct": _pct(res.lic_usage_integral.sum(), res.lic_demand_time.sum()),
            "slowdown_no_deadline": float(slowdown[~has_dl].mean()) if (~has_dl).any() else float("nan"),
        }
    )
    return rows


def _pct(integral: float, duration: float) -> float:
    return float(100.0 * integral / duration) if duration > 0 else float("nan")


def stream_metrics(res: TwoLevelResult) -> dict[str, float]:
    """The load the stream offers and how long the grid took.

    ``offered_load``: the CPU-seconds the jobs ask for (``requested_procs x requested_time``) over
    the grid's CPUs x the time from the first submission to the last (``inf`` when they are all
    submitted at once, ``nan`` without jobs); ``makespan_s``: first submission to last end.
    """
    jobs = res.jobs
    if not jobs:
        return {"offered_load": float("nan"), "makespan_s": 0.0}
    demand = float(sum(j.requested_procs * j.requested_time for j in jobs))
    first, last = min(j.submit_time for j in jobs), max(j.submit_time for j in jobs)
    cpus = sum(c.cpus for c in res.clusters)
    span = last - first
    return {
        "offered_load": demand / (cpus * span) if span > 0 else float("inf"),
        "makespan_s": float(np.nanmax(res.end) - first),
    }


def timing_metrics(res: TwoLevelResult) -> dict[str, float]:
    """Scheduler cost: MS decisions (dispatches) and LS passes per second of policy time."""
    return {
        "ms_seconds": res.ms_seconds,
        "ms_decisions": res.ms_decisions,
        "ms_decisions_per_s": res.ms_decisions / res.ms_seconds if res.ms_seconds > 0 else float("nan"),
        "ls_seconds": res.ls_seconds,
        "ls_passes": res.ls_passes,
        "ls_starts": res.ls_starts,
        "ls_passes_per_s": res.ls_passes / res.ls_seconds if res.ls_seconds > 0 else float("nan"),
        "ls_us_per_pass": 1e6 * res.ls_seconds / res.ls_passes if res.ls_passes else float("nan"),
    }
