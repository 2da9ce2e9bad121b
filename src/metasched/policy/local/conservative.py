"""Conservative backfilling."""

from __future__ import annotations

import heapq
from bisect import bisect_right
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.policy.base import LocalScheduler, Plan, QueueColumns, SiteView, SlotReservations


@dataclass(slots=True)
class ConservativeHint:
    """What a pass leaves for the next one (see :attr:`Plan.hint`): the availability profile
    with the running jobs and every reservation in it, the reservations of the queued jobs as a
    heap of ``(start, queue position, job)``, and the number of queued jobs left."""

    profile: Profile
    pending: list[tuple[float, int, Job]]
    reservations: dict[int, float]
    queued: int
    seq: int = 0


class ConservativeBackfill(LocalScheduler):
    """Conservative backfilling: every queued job holds a reservation.

    Source: Feitelson & Weil, "Utilization and predictability in scheduling the IBM SP2 with
    backfilling" (1998); seed 000 section 2 and section 5.

    One pass: the availability profile is built from the running jobs' expected ends (an end in
    the past counts as ``now``); the queued jobs are placed in queue order, each at its earliest
    fit in the profile; those whose earliest start is ``now`` start. When a running job has
    overrun its estimate, the profile counts its processors as free from ``now`` although they
    are still held: a job placed at ``now`` then starts only if it fits the processors really
    free, and otherwise keeps its reservation at ``now`` (it starts as soon as they are released).

    Invariant: a job never delays the reservation of any job ahead of it in the queue.
    Tie-break: queue order (the pluggable :class:`~metasched.policy.base.QueueOrder`).

    Hint (arrival-order queues only): under the conditions of :attr:`Plan.hint` (no job ended
    before its expected end, none overran, only arrivals) the previous reservations are still
    exactly what a rebuild would give. The rebuilt profile from ``now`` on equals the carried
    one (the jobs started then run until their reservation ends; jobs that ended did so at
    their expected end, before ``now``), so each old queued job, in queue order, has the same
    earliest fit, provided that fit is not before ``now``. No reservation lies strictly between
    the previous pass and ``now``: the earliest one is a breakpoint where processors free up,
    i.e. a running job's expected end, which is an end event and so a pass (a pass is skipped
    only when nothing fits, and a job whose reservation has come fits). Hence: the old jobs
    reserved at ``now`` start, and only the new arrivals are placed. Should a reservation lie
    before ``now`` anyway, or a job due now not fit, the pass falls back to a full rebuild.

    Columns (:attr:`SiteView.columns`, for drivers whose sites change in every way:
    cancellations, early ends, arrivals anywhere in an efficacy queue): the full pass runs in the
    compiled kernel of :mod:`~metasched.policy.local._conservative_kernel` on the queue's arrays;
    same plan, its reservations read from those arrays. Used when the queue order is arrival
    order or a static order whose :meth:`~metasched.policy.base.QueueOrder.primary_key` filled
    the columns.
    """

    key: ClassVar[str] = "conservative"

    def plan(self, view: SiteView, now: float) -> Plan:
        columns = view.columns
        if columns is not None and view.hint is None and columns.ordered and columns.order_key == self.order.key:
            return self._columnar(view, columns, now)
        hint = view.hint
        if isinstance(hint, ConservativeHint) and self.order.is_arrival_order and len(view.queue) >= hint.queued:
            plan = self._incremental(view, now, hint)
            if plan is not None:
                return plan
        return self._full_pass(view, now)

    def _full_pass(self, view: SiteView, now: float) -> Plan:
        profile = self.profile(view, now)
        starts = []
        reservations: dict[int, float] = {}
        pending: list[tuple[float, int, Job]] = []
        free = view.free_procs
        queue = view.queue if self.order.is_arrival_order else self.order.order(view, now)
        # Within one pass the profile only loses processors, so the first instant with ``procs``
        # free only moves later: remember it per width and search from there (same result as a
        # search from ``now``, without walking the saturated near future again for every job).
        first_free: dict[int, float] = {}
        # Likewise a job of the same width and estimate as one placed earlier in this pass cannot
        # start before it (any earlier start would have fitted that job too, on a profile that
        # then had at least as many processors free): search from the earlier job's start.
        fit_of_shape: dict[tuple[int, float], float] = {}
        times, frees = profile.times, profile.free
        for seq, job in enumerate(queue):
            procs = job.requested_procs
            duration = job.requested_time
            after = first_free.get(procs, now)
            k = bisect_right(times, after) - 1
            while k < len(times) and frees[k] < procs:
                k += 1
            if k < len(times) and times[k] > after:
                after = times[k]
            first_free[procs] = after
            shape = (procs, duration)
            previous = fit_of_shape.get(shape)
            if previous is not None and previous > after:
                after = previous
            start = profile.place(procs, duration, after)
            fit_of_shape[shape] = start
            if start <= now and job.requested_procs <= free:
                starts.append(job)
                free -= job.requested_procs
            else:
                reservations[job.job_id] = start
                pending.append((start, seq, job))
        heapq.heapify(pending)
        hint = ConservativeHint(profile, pending, reservations, len(queue) - len(starts), len(queue))
        return Plan(starts=starts, reservations=dict(reservations), hint=hint)

    def _incremental(self, view: SiteView, now: float, hint: ConservativeHint) -> Plan | None:
        pending = hint.pending
        free = view.free_procs
        due: list[Job] = []
        while pending and pending[0][0] <= now:
            start, _, job = pending[0]
            if start < now or job.requested_procs > free:
                return None
            heapq.heappop(pending)
            due.append(job)
            free -= job.requested_procs
        profile = hint.profile
        profile.advance(now)
        reservations = hint.reservations
        for job in due:
            del reservations[job.job_id]
        starts = due
        seq = hint.seq
        for job in view.queue[hint.queued :]:
            start = profile.place(job.requested_procs, job.requested_time, now)
            if start <= now and job.requested_procs <= free:
                starts.append(job)
                free -= job.requested_procs
            else:
                reservations[job.job_id] = start
                heapq.heappush(pending, (start, seq, job))
            seq += 1
        hint.seq = seq
        hint.queued = len(view.queue) - len(starts)
        return Plan(starts=starts, reservations=dict(reservations), hint=hint)

    # -- compiled pass on the queue's columns ------------------------------------------------

    def _columnar(self, view: SiteView, columns: QueueColumns, now: float) -> Plan:
        """``_full_pass`` (without its hint) by the compiled kernel on ``columns``: same plan."""
        # Imported on first use: numba takes ~0.6 s to import, which no command line should pay
        # unless it plans on columns.
        from metasched.policy.local._conservative_kernel import TOO_WIDE, conservative_pass

        queue = columns.live_slots()
        running = view.running_by_end if view.running_by_end is not None else view.running
        m = len(running)
        starts = np.empty(columns.n, dtype=np.float64)
        state = np.full(columns.n, 2, dtype=np.int8)
        steps = conservative_pass(
            view.total_procs,
            now,
            view.free_procs,
            np.fromiter((r.expected_end for r in running), np.float64, m),
            np.fromiter((r.procs for r in running), np.int64, m),
            queue,
            columns.procs,
            columns.durations,
            starts,
            state,
        )
        if steps < 0:
            if steps == TOO_WIDE:
                wide = int(columns.procs[queue].max())
                raise ValueError(f"a job of {wide} processors can never fit a machine of {view.total_procs}")
            raise ValueError(f"the running jobs hold more than the {view.total_procs} processors of the site")
        jobs = columns.jobs
        # Started jobs in queue order.
        started = [jobs[k] for k in queue[state[queue] == 1].tolist()]
        return Plan(starts=started, reservations=SlotReservations(columns, starts, state))

    @staticmethod
    def profile(view: SiteView, now: float) -> Profile:
        """The availability profile of ``view`` from its running jobs alone."""
        running = view.running_by_end if view.running_by_end is not None else view.running
        releases = [(r.expected_end, r.procs) for r in running]
        return Profile.from_releases(view.total_procs, now, view.free_procs, releases)
