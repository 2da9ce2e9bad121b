"""EASY (aggressive) backfilling."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.base import LocalScheduler, Plan, SiteView


class EasyBackfill(LocalScheduler):
    """EASY backfilling: only the first blocked job holds a reservation.

    Source: Lifka, "The ANL/IBM SP scheduling system" (1995); Mu'alem & Feitelson (2001); seed 000
    section 2 ("aggressive backfilling"), seed 001 section 3.1.

    One pass: start jobs from the head of the queue while they fit. For the first job that does
    not fit (the *head*), compute its *shadow time* (the earliest instant enough processors are
    free, from the running jobs' expected ends, an end in the past counting as ``now``) and the
    *extra* processors (free at the shadow time beyond the head's need, counting every job that
    ends exactly at the shadow time). Then scan the rest of the queue in order: a job starts now
    if it fits the free processors and either ends by the shadow time (``now + estimate <=
    shadow``) or needs no more than the extra processors (which then shrink by its width).

    Invariant: never delays the head's reservation (the shadow time).
    Tie-break: queue order (the pluggable :class:`~metasched.policy.base.QueueOrder`).
    """

    key: ClassVar[str] = "easy"

    def plan(self, view: SiteView, now: float) -> Plan:
        free = view.free_procs
        queue = self.order.order(view, now)
        starts = []
        n = len(queue)
        i = 0
        while i < n and queue[i].requested_procs <= free:
            job = queue[i]
            starts.append(job)
            free -= job.requested_procs
            i += 1
        if i >= n:
            return Plan(starts=starts)
        head = queue[i]
        if head.requested_procs > view.total_procs:
            raise ValueError(
                f"job {head.job_id} needs {head.requested_procs} processors; site {view.name!r} has {view.total_procs}"
            )
        releases = [(r.expected_end if r.expected_end > now else now, r.procs) for r in view.running]
        releases.extend((now + job.requested_time, job.requested_procs) for job in starts)
        releases.sort()
        need = head.requested_procs
        avail = free
        shadow = now
        k = 0
        nrel = len(releases)
        while avail < need:
            shadow, procs = releases[k]
            avail += procs
            k += 1
        while k < nrel and releases[k][0] == shadow:
            avail += releases[k][1]
            k += 1
        extra = avail - need
        for job in queue[i + 1 :]:
            if free == 0:
                break
            procs = job.requested_procs
            if procs > free:
                continue
            if now + job.requested_time <= shadow:
                starts.append(job)
                free -= procs
            elif procs <= extra:
                starts.append(job)
                free -= procs
                extra -= procs
        return Plan(starts=starts, reservations={head.job_id: shadow})
