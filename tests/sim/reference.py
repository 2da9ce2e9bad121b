"""Slow, obviously-correct reference simulator of FCFS, EASY and conservative backfilling.

Everything is recomputed from scratch at every instant, straight from the definitions of issue 2,
with no data structure beyond lists: no heaps, no profile object, no carried state, no skipped
passes. It shares no code with :mod:`metasched.sim` or :mod:`metasched.policy` (only ``Job``), so
the fast simulator is checked against an independent reading of the rules:

* at each instant t: release every job that ends at t, add every job submitted at t (in
  ``(submit_time, job_id)`` order), then run one scheduling pass (again at t if a zero-length job
  started, since its end is an event at t);
* a running job's expected end is ``start + requested_time``; one already in the past (an
  overrunning job) counts as ``now``;
* FCFS: start queued jobs in order while the next one fits the free processors;
* EASY: start head jobs while they fit; shadow = first instant (``now`` or an expected end) at
  which the processors free reach the head's need; extra = free at the shadow - need; then every
  later job that fits the free processors starts if ``now + estimate <= shadow`` or it needs no
  more than ``extra`` (which then shrinks);
* conservative: place the queued jobs in order, each at the earliest instant from which it fits
  for its whole estimate beside the running jobs and the jobs placed before it; jobs placed at
  ``now`` that fit the processors really free start.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metasched.model.job import Job

Interval = tuple[float, float, int]  # (start, end, procs): procs held on [start, end)


def earliest_fit(intervals: list[Interval], total: int, now: float, duration: float, procs: int) -> float:
    """Earliest ``s >= now`` with ``procs`` free all along ``[s, s + duration)``.

    The usage is a step function whose breakpoints are ``now`` and every interval start and
    end; it is rebuilt from scratch (differences at the breakpoints, then a running sum). A fit
    can always be moved back to the breakpoint that begins its step, so the earliest fit is the
    first breakpoint from which no step inside the window is too full.
    """
    starts = np.array([s for s, _, _ in intervals], dtype=float)
    ends = np.array([e for _, e, _ in intervals], dtype=float)
    widths = np.array([p for _, _, p in intervals], dtype=float)
    times = np.unique(np.concatenate(([now], starts, ends)))
    n = len(times)
    delta = np.bincount(np.searchsorted(times, starts), weights=widths, minlength=n + 1)
    delta -= np.bincount(np.searchsorted(times, ends), weights=widths, minlength=n + 1)
    usage = np.cumsum(delta)[:n]
    too_full = usage + procs > total
    full_before = np.concatenate(([0], np.cumsum(too_full)))
    window_end = np.searchsorted(times, times + duration, side="left")
    fits = (full_before[window_end] - full_before[:n]) == 0
    if not fits.any():
        raise AssertionError("a job no wider than the machine always fits after every interval ended")
    return float(times[int(np.argmax(fits))])


def plan_fcfs(now: float, total: int, running: list[tuple[int, float]], queue: list[Job]) -> list[Job]:
    free = total - sum(p for p, _ in running)
    starts = []
    for job in queue:
        if job.requested_procs > free:
            break
        starts.append(job)
        free -= job.requested_procs
    return starts


def plan_easy(now: float, total: int, running: list[tuple[int, float]], queue: list[Job]) -> list[Job]:
    free = total - sum(p for p, _ in running)
    starts: list[Job] = []
    i = 0
    while i < len(queue) and queue[i].requested_procs <= free:
        starts.append(queue[i])
        free -= queue[i].requested_procs
        i += 1
    if i == len(queue):
        return starts
    head = queue[i]
    holders = [(p, max(e, now)) for p, e in running] + [(j.requested_procs, now + j.requested_time) for j in starts]

    def free_at(t: float) -> int:
        return total - sum(p for p, e in holders if e > t)

    shadow = min(c for c in {now} | {e for _, e in holders} if free_at(c) >= head.requested_procs)
    extra = free_at(shadow) - head.requested_procs
    for job in queue[i + 1 :]:
        if job.requested_procs > free:
            continue
        if now + job.requested_time <= shadow:
            starts.append(job)
            free -= job.requested_procs
        elif job.requested_procs <= extra:
            starts.append(job)
            free -= job.requested_procs
            extra -= job.requested_procs
    return starts


def plan_conservative(now: float, total: int, running: list[tuple[int, float]], queue: list[Job]) -> list[Job]:
    free = total - sum(p for p, _ in running)
    intervals: list[Interval] = [(now, e, p) for p, e in running if e > now]
    starts = []
    for job in queue:
        start = earliest_fit(intervals, total, now, job.requested_time, job.requested_procs)
        intervals.append((start, start + job.requested_time, job.requested_procs))
        if start == now and job.requested_procs <= free:
            starts.append(job)
            free -= job.requested_procs
    return starts


PLANNERS = {"fcfs": plan_fcfs, "easy": plan_easy, "conservative": plan_conservative}


def reference_schedule(jobs: Sequence[Job], total: int, scheduler: str) -> dict[int, float]:
    """``{job_id: start time}`` of every job of ``jobs`` on ``total`` processors."""
    plan = PLANNERS[scheduler]
    pending = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    queue: list[Job] = []
    running: list[tuple[Job, float]] = []  # (job, start)
    starts: dict[int, float] = {}
    k = 0
    while k < len(pending) or running:
        candidates = [s + j.run_time for j, s in running]
        if k < len(pending):
            candidates.append(pending[k].submit_time)
        now = min(candidates)
        running = [(j, s) for j, s in running if s + j.run_time != now]
        while k < len(pending) and pending[k].submit_time == now:
            queue.append(pending[k])
            k += 1
        if not queue:
            continue
        chosen = plan(now, total, [(j.requested_procs, s + j.requested_time) for j, s in running], queue)
        for job in chosen:
            starts[job.job_id] = now
            running.append((job, now))
        chosen_ids = {j.job_id for j in chosen}
        queue = [j for j in queue if j.job_id not in chosen_ids]
    return starts
