"""Metrics of a multi-site run (seed 000): turnaround, utilization, effective utilization, messages.

Effective utilization is seed 000's formula (section 4)::

    EffectiveUtilization = sum_i Efficacy_i * Runtime_i * Procs_i / (Makespan * TotalProcs)
    Makespan = MaxCompletionTime - MinStartTime
    Efficacy_i = OptimalRuntime_i * OptimalProcs_i / (ActualRuntime_i * ActualProcs_i)

so each job contributes its processors times its *best* run time over all sites (processors are
the same everywhere here). Utilization uses the same makespan and counts every processor-second
sites spent on jobs, killed copies and data transfers included (the cycles were held). Turnaround
is ``end - submit`` of the copy that completed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasched.sim.multisite import MultiSiteResult


def summarise_multisite(result: MultiSiteResult) -> dict[str, Any]:
    """Summary metrics of a complete multi-site run (flat dict of numbers, ready for a CSV row)."""
    n = len(result.table)
    if n == 0:
        return {"jobs": 0}
    submit = result.table.submit_time
    start, end = result.start_time, result.end_time
    if not np.all(np.isfinite(end)):
        raise ValueError("the run has jobs that never completed")
    procs = result.procs.astype(float)
    turnaround = end - submit
    wait = start - submit
    makespan = float(end.max() - start.min())
    total = result.total_procs
    capacity = makespan * total
    busy = result.busy_proc_s
    run = result.run_time
    efficacy = np.divide(result.best_run_time, run, out=np.ones_like(run), where=run > 0)
    summary: dict[str, Any] = {
        "jobs": n,
        "total_procs": total,
        "makespan": makespan,
        "mean_turnaround": float(turnaround.mean()),
        "max_turnaround": float(turnaround.max()),
        "mean_wait": float(wait.mean()),
        "utilization": float(busy.sum() / capacity) if capacity > 0 else 0.0,
        "effective_utilization": float((procs * result.best_run_time).sum() / capacity) if capacity > 0 else 0.0,
        "mean_efficacy": float(np.mean(efficacy)),
        "messages_per_job": float(result.messages.mean()),
        "attempts_per_job": float(result.attempts.mean()),
        "copies_per_job": float(result.copies.mean()),
        "denials": result.denials,
        "kills": result.kills,
        "wasted_proc_s": result.wasted_proc_s,
        "plans": result.plans,
    }
    for s, site in enumerate(result.sites):
        ran = result.site == s
        summary[f"site{s}_jobs_share"] = float(ran.mean())
        summary[f"site{s}_utilization"] = float(busy[s] / (makespan * site.procs)) if makespan > 0 else 0.0
    return summary
