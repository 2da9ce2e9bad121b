"""EASY (aggressive) backfilling."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.base import LocalScheduler, Plan, RunningJob, SiteView


@dataclass(slots=True)
class EasyHint:
    """What a pass leaves for the next one (see :attr:`Plan.hint`): the blocked head's shadow
    time and extra processors, the free processors, the number of running jobs and of queued
    jobs left after the pass (all of them examined)."""

    head_id: int
    shadow: float
    extra: int
    free: int
    running: int
    queued: int


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

    Hint (arrival-order queues only): when no job ended since the previous pass (same number of
    running jobs; the driver guarantees nothing else started) the head, its shadow time, the
    extra and the free processors are unchanged, and every job examined then still cannot start
    now: one that did not fit the free processors still does not; one that ended after the shadow
    ends later still (``now`` is later) and the extra processors did not grow. Only the newly
    submitted jobs, at the end of the queue, are scanned, which is exactly what the full scan
    would start.
    """

    key: ClassVar[str] = "easy"

    def plan(self, view: SiteView, now: float) -> Plan:
        hint = view.hint
        if (
            isinstance(hint, EasyHint)
            and self.order.is_arrival_order
            and len(view.running) == hint.running
            and view.free_procs == hint.free
            and len(view.queue) >= hint.queued > 0
            and view.queue[0].job_id == hint.head_id
        ):
            return self._scan_new(view, now, hint)
        return self._full_pass(view, now)

    def _full_pass(self, view: SiteView, now: float) -> Plan:
        free = view.free_procs
        queue = view.queue if self.order.is_arrival_order else self.order.order(view, now)
        starts: list[Job] = []
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
        shadow, extra = self._shadow(view, now, head, free, starts)
        free, extra = _backfill(queue[i + 1 :], now, shadow, free, extra, starts)
        hint = EasyHint(head.job_id, shadow, extra, free, len(view.running) + len(starts), n - len(starts))
        return Plan(starts=starts, reservations={head.job_id: shadow}, hint=hint)

    def _scan_new(self, view: SiteView, now: float, hint: EasyHint) -> Plan:
        starts: list[Job] = []
        free, extra = _backfill(view.queue[hint.queued :], now, hint.shadow, hint.free, hint.extra, starts)
        hint.extra, hint.free = extra, free
        hint.running += len(starts)
        hint.queued = len(view.queue) - len(starts)
        return Plan(starts=starts, reservations={hint.head_id: hint.shadow}, hint=hint)

    @staticmethod
    def _shadow(view: SiteView, now: float, head: Job, free: int, starts: list[Job]) -> tuple[float, int]:
        """``(shadow time, extra processors)`` of ``head`` given the running jobs and ``starts``."""
        by_end: Sequence[RunningJob] | None = view.running_by_end
        if by_end is None:
            by_end = sorted(view.running, key=lambda r: (r.expected_end, r.job.job_id))
        new = sorted([(now + job.requested_time, job.requested_procs) for job in starts]) if starts else []
        need = head.requested_procs
        avail = free
        shadow = now
        i = j = 0
        nr, ns = len(by_end), len(new)
        inf = float("inf")
        while avail < need:
            t_run = by_end[i].expected_end if i < nr else inf
            t_new = new[j][0] if j < ns else inf
            if t_run <= t_new:
                if i >= nr:
                    raise ValueError(f"site {view.name!r}: job {head.job_id} can never get {need} processors")
                shadow = t_run if t_run > now else now
                avail += by_end[i].procs
                i += 1
            else:
                shadow = t_new
                avail += new[j][1]
                j += 1
        while i < nr and (by_end[i].expected_end if by_end[i].expected_end > now else now) == shadow:
            avail += by_end[i].procs
            i += 1
        while j < ns and new[j][0] == shadow:
            avail += new[j][1]
            j += 1
        return shadow, avail - need


def _backfill(
    candidates: Sequence[Job], now: float, shadow: float, free: int, extra: int, starts: list[Job]
) -> tuple[int, int]:
    """EASY's backfilling rule over ``candidates`` in order, appending the jobs it starts to ``starts``.

    A job starts if it fits the free processors and either ends by the shadow time or needs no more than
    the extra processors (which then shrink by its width). Returns the free and extra processors left.
    """
    for job in candidates:
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
    return free, extra
