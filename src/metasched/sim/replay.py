"""Replay of a workload through one site's local scheduler."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from metasched.model.job import Job
from metasched.policy.base import LocalScheduler, QueueColumns
from metasched.sim.schedule import Schedule
from metasched.sim.site import SiteState

ProgressFn = Callable[[int], None]


def simulate(
    jobs: Sequence[Job],
    procs: int,
    scheduler: LocalScheduler,
    *,
    progress: ProgressFn | None = None,
    name: str = "site0",
    compiled: bool = True,
) -> Schedule:
    """Run ``jobs`` on one machine of ``procs`` processors under ``scheduler``.

    Semantics (see :mod:`metasched.sim.engine`): at each instant, release the jobs ending then,
    add the jobs submitted then (in ``(submit_time, job_id)`` order), then run one scheduling
    pass. A job runs for its ``run_time``; the scheduler only sees ``requested_time``. Whether a
    job may run past its estimate is decided when the workload is normalised
    (:func:`metasched.workload.swf.normalise`), not here.

    ``progress`` is called with the number of jobs started since its previous call.

    Two shortcuts leave the schedule unchanged: a pass is skipped when no queued job fits the
    free processors (no scheduler could start anything: see
    :attr:`SiteState.min_queued_width`), and a scheduler's :attr:`~metasched.policy.base.Plan.hint`
    is handed back to its next pass under the conditions stated there (kept by
    :class:`SiteState`). Both are checked against a from-scratch reference in the tests.
    With ``compiled`` (the default), a scheduler with a compiled whole simulation
    (:func:`metasched.sim._single_kernel.accelerator`: EASY and conservative backfilling over
    an arrival-order queue) runs
    there, and for the others the queue is also kept as columns for schedulers with a compiled
    pass (conservative backfilling); ``False`` runs every pass in Python (same schedule).
    """
    n_jobs = len(jobs)
    nan, inf = float("nan"), float("inf")
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, jobs[i].job_id))
    jobs_sorted = [jobs[i] for i in order]
    for job in jobs_sorted:
        if job.requested_procs > procs:
            raise ValueError(f"job {job.job_id} needs {job.requested_procs} processors; the machine has {procs}")
    schedule = Schedule.empty(list(jobs), procs, [name])
    index_of = {job.job_id: i for i, job in zip(order, jobs_sorted, strict=True)}
    if len(index_of) != len(jobs):
        raise ValueError("job_id values must be unique within a workload")
    if compiled:
        fast = _accelerated(jobs_sorted, procs, scheduler)
        if fast is not None:
            schedule.start_time[order], schedule.end_time[order] = fast
            schedule.site[:] = 0
            if progress is not None:
                progress(n_jobs)
            return schedule
    start_time = [nan] * len(jobs)
    end_time = [nan] * len(jobs)
    site = SiteState(procs, name, QueueColumns(scheduler.order) if compiled else None)
    ends: list[tuple[float, int, int]] = []  # (end, index in jobs, job_id): the index breaks ties
    heappush, heappop = heapq.heappush, heapq.heappop
    n = len(jobs_sorted)
    nxt = 0
    started_since = 0
    while nxt < n or ends:
        t_submit = jobs_sorted[nxt].submit_time if nxt < n else inf
        t_end = ends[0][0] if ends else inf
        now = t_submit if t_submit < t_end else t_end
        while ends and ends[0][0] == now:
            site.finish(heappop(ends)[2], now)
        while nxt < n and jobs_sorted[nxt].submit_time == now:
            site.submit(jobs_sorted[nxt])
            nxt += 1
        # No scheduler can start a job when none fits the free processors: skip the pass.
        if site.free_procs < site.min_queued_width:
            continue
        plan = scheduler.plan(site.view(now), now)
        site.accept(plan, now)
        starts = plan.starts
        for job in starts:
            k = index_of[job.job_id]
            start_time[k] = now
            end = now + job.run_time
            end_time[k] = end
            heappush(ends, (end, k, job.job_id))
        if progress is not None and starts:
            started_since += len(starts)
            if started_since >= 1000:
                progress(started_since)
                started_since = 0
    if progress is not None and started_since:
        progress(started_since)
    schedule.start_time[:] = start_time
    schedule.end_time[:] = end_time
    schedule.site[:] = 0
    return schedule


def _accelerated(jobs_sorted: list[Job], procs: int, scheduler: LocalScheduler) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end times in ``jobs_sorted``'s order from ``scheduler``'s compiled whole
    simulation, or ``None`` when it has none or the jobs are outside what it was proven on (a
    non-positive estimate, a width under 1, a time that is not finite: the Python driver then runs them,
    and reports the bad job as it always did)."""
    from metasched.sim._single_kernel import accelerator

    runner = accelerator(scheduler)
    if runner is None or not jobs_sorted:
        return None
    submit = np.fromiter((j.submit_time for j in jobs_sorted), dtype=np.float64, count=len(jobs_sorted))
    run_time = np.fromiter((j.run_time for j in jobs_sorted), dtype=np.float64, count=len(jobs_sorted))
    req_time = np.fromiter((j.requested_time for j in jobs_sorted), dtype=np.float64, count=len(jobs_sorted))
    widths = np.fromiter((j.requested_procs for j in jobs_sorted), dtype=np.int64, count=len(jobs_sorted))
    finite = np.isfinite(submit).all() and np.isfinite(run_time).all() and np.isfinite(req_time).all()
    if not finite or (req_time <= 0).any() or (widths < 1).any() or (run_time < 0).any():
        return None
    return runner(submit, run_time, req_time, widths, procs)
