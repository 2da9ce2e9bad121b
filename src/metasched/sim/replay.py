"""Replay of a workload through one site's local scheduler."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from operator import attrgetter

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
    if compiled:
        fast = _accelerated(jobs, procs, scheduler, name)
        if fast is not None:
            if progress is not None:
                progress(len(jobs))
            return fast
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


def _accelerated(jobs: Sequence[Job], procs: int, scheduler: LocalScheduler, name: str) -> Schedule | None:
    """The schedule from ``scheduler``'s compiled whole simulation (the jobs' columns sorted by
    ``(submit_time, job_id)`` with NumPy, checked as :func:`simulate` checks them), or ``None``
    when it has none or the jobs are outside what it was proven on (a non-positive estimate, a
    width under 1, a time that is not finite, a negative run time: the Python driver then runs
    them, and reports a bad job as it always did)."""
    from metasched.sim._single_kernel import accelerator

    runner = accelerator(scheduler)
    if runner is None or not jobs:
        return None
    n = len(jobs)
    submit = np.fromiter(map(attrgetter("submit_time"), jobs), dtype=np.float64, count=n)
    run_time = np.fromiter(map(attrgetter("run_time"), jobs), dtype=np.float64, count=n)
    req_time = np.fromiter(map(attrgetter("requested_time"), jobs), dtype=np.float64, count=n)
    widths = np.fromiter(map(attrgetter("requested_procs"), jobs), dtype=np.int64, count=n)
    ids = np.fromiter(map(attrgetter("job_id"), jobs), dtype=np.int64, count=n)
    finite = np.isfinite(submit).all() and np.isfinite(run_time).all() and np.isfinite(req_time).all()
    if not finite or (req_time <= 0).any() or (widths < 1).any() or (run_time < 0).any():
        return None
    order = np.lexsort((ids, submit))  # (submit_time, job_id), as the Python driver sorts
    too_wide = np.flatnonzero(widths[order] > procs)
    if too_wide.size:
        k = int(order[too_wide[0]])
        raise ValueError(f"job {ids[k]} needs {widths[k]} processors; the machine has {procs}")
    if np.unique(ids).size != n:
        raise ValueError("job_id values must be unique within a workload")
    starts, ends = runner(submit[order], run_time[order], req_time[order], widths[order], procs)
    schedule = Schedule(
        jobs=list(jobs),
        start_time=np.empty(n),
        end_time=np.empty(n),
        site=np.zeros(n, dtype=np.int64),
        procs=widths,
        run_time=run_time,
        total_procs=procs,
        site_names=[name],
    )
    schedule.start_time[order] = starts
    schedule.end_time[order] = ends
    return schedule
