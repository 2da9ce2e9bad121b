"""Conservative backfilling."""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar

import numpy as np

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.policy.base import LocalScheduler, Plan, QueueColumns, SiteView


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


#: The compiled pass keeps a table indexed by job width (16 bytes per processor of the machine); on a
#: larger machine (a trace header's ``MaxProcs: 1000000000``) the pure pass, which keeps the same
#: table as a dict of the widths queued, plans instead (same plan): memory never grows with a value
#: in the input (issue 33).
COLUMNAR_MAX_PROCS = 1 << 20


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
    the columns. A pass on columns leaves no hint: every pass is a full one, stopped early.
    """

    key: ClassVar[str] = "conservative"

    def plan(self, view: SiteView, now: float) -> Plan:
        hint = view.hint
        if isinstance(hint, ConservativeHint) and self.order.is_arrival_order and len(view.queue) >= hint.queued:
            plan = self._incremental(view, now, hint)
            if plan is not None:
                return plan
        columns = view.columns
        if (
            columns is not None
            and columns.ordered
            and columns.order_key == self.order.key
            and view.total_procs <= COLUMNAR_MAX_PROCS
        ):
            return self._columnar(view, columns, now)
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
        """``_full_pass`` (without its hint) by the compiled kernel on ``columns``: same plan.
        The pass stops once no job left can start now; the reservations behind are placed when
        first asked for (see :class:`_ColumnPass`)."""
        queue = columns.live_slots()
        if columns.max_procs > view.total_procs and len(queue):
            wide = int(columns.procs[queue].max())
            if wide > view.total_procs:
                raise ValueError(f"a job of {wide} processors can never fit a machine of {view.total_procs}")
        run = _ColumnPass(view, columns, queue, now)
        jobs = columns.jobs
        started = [jobs[k] for k in queue[run.state[queue] == 1].tolist()]
        # No hint: carrying this pass to the next one (the whole queue placed, then made into a
        # ConservativeHint for the Python incremental pass) cost more than the next pass on columns
        # with its early stop, 1.0-1.5x more in the single-site replays of seed 000's sweep (BENCHMARKS.md).
        return Plan(starts=started, reservations=_ColumnReservations(run, columns))

    @staticmethod
    def profile(view: SiteView, now: float) -> Profile:
        """The availability profile of ``view`` from its running jobs alone."""
        running = view.running_by_end if view.running_by_end is not None else view.running
        releases = [(r.expected_end, r.procs) for r in running]
        return Profile.from_releases(view.total_procs, now, view.free_procs, releases)


class _ColumnPass:
    """A conservative pass on queue columns in the compiled kernel
    (:mod:`~metasched.policy.local._conservative_kernel`), placed as far as anyone asked:
    at first until no job left can start now, later up to a queue position on demand. Keeps
    the kernel's state (profile, caches) between the two. ``state[slot]``: 0 reserved at
    ``starts[slot]``, 1 starts now, 2 not in this pass, 3 not placed yet."""

    __slots__ = (
        "bound",
        "deferred",
        "durations",
        "first_free",
        "free",
        "ints",
        "memo",
        "now",
        "positions",
        "procs",
        "queue",
        "shape_d",
        "shape_p",
        "shape_start",
        "starts",
        "state",
        "t_zero",
        "times",
        "total_procs",
    )

    def __init__(self, view: SiteView, columns: QueueColumns, queue: np.ndarray, now: float) -> None:
        # Imported on first use: numba takes ~0.6 s to import, which no command line should pay
        # unless it plans on columns.
        from metasched.policy.local._conservative_kernel import MEMO_SIZE, base_profile, shortest_behind

        running = view.running_by_end if view.running_by_end is not None else view.running
        m = len(running)
        n = len(queue)
        self.now = now
        self.total_procs = view.total_procs
        self.queue = queue
        # The columns' arrays: later appends write past every slot of this pass, removals
        # touch only ``alive`` and compactions make new arrays, so these stay this pass's.
        self.procs = columns.procs
        self.durations = columns.durations
        self.times = np.empty(m + 2 * n + 2, dtype=np.float64)
        self.free = np.empty(m + 2 * n + 2, dtype=np.int64)
        self.t_zero = np.empty(1, dtype=np.float64)
        self.memo = np.zeros(MEMO_SIZE, dtype=np.float64)
        steps = base_profile(
            now,
            view.free_procs,
            np.fromiter(map(_EXPECTED_END, running), np.float64, m),
            np.fromiter(map(_PROCS, running), np.int64, m),
            self.times,
            self.free,
            self.t_zero,
        )
        self.ints = np.array([steps, 0, view.free_procs, 0, 0, 1], dtype=np.int64)  # (generation 1)
        self.first_free = np.full(2 * (view.total_procs + 1), -np.inf)  # (with room for the step hints)
        table = 1 << max(4, (2 * n + 1).bit_length())
        self.shape_p = np.full(2 * table, -1, dtype=np.int64)
        self.shape_d = np.empty(2 * table, dtype=np.float64)
        self.shape_start = np.empty(4 * table, dtype=np.float64)
        self.deferred = np.empty(n, dtype=np.int64)
        self.bound = np.empty(n, dtype=np.float64)
        self.starts = np.empty(columns.n, dtype=np.float64)
        self.state = np.full(columns.n, 2, dtype=np.int8)
        self.state[queue] = 3
        self.positions: np.ndarray | None = None
        shortest = np.empty(n + 1, dtype=np.float64)
        longest = np.empty(n + 1, dtype=np.float64)
        shortest_behind(queue, self.procs, self.durations, view.free_procs, shortest, longest)
        self._place(n, shortest, longest)

    def _place(self, until: int, shortest: np.ndarray, longest: np.ndarray) -> None:
        from metasched.policy.local._conservative_kernel import NO_END, place

        code = place(
            self.total_procs,
            self.now,
            self.times,
            self.free,
            self.ints,
            self.t_zero,
            self.first_free,
            self.shape_p,
            self.shape_d,
            self.shape_start,
            self.memo,
            self.queue,
            self.procs,
            self.durations,
            self.starts,
            self.state,
            until,
            shortest,
            longest,
            self.deferred,
            self.bound,
            np.inf,
        )
        if code == NO_END:
            raise ValueError(f"the running jobs hold more than the {self.total_procs} processors of the site")

    def place_slot(self, slot: int) -> None:
        """Place the queue up to and including ``slot`` (a slot of this pass)."""
        if self.positions is None:
            self.positions = np.empty(len(self.state), dtype=np.int64)
            self.positions[self.queue] = np.arange(len(self.queue))
        self._place(int(self.positions[slot]) + 1, _NEVER, _NEVER)

    def place_all(self) -> None:
        if self.ints[1] < len(self.queue) or self.ints[3] < self.ints[4]:
            self._place(len(self.queue), _NEVER, _NEVER)


_EXPECTED_END = attrgetter("expected_end")
_PROCS = attrgetter("procs")
#: No early stop (see :func:`~metasched.policy.local._conservative_kernel.place`).
_NEVER = np.empty(0, dtype=np.float64)


class _ColumnReservations(Mapping[int, float]):
    """The reservations of a :class:`_ColumnPass`, read from its arrays (placing the queue
    further when a job not placed yet is asked for), with no dictionary built. Keeps the
    columns' list and dict of the time of the pass, so that however the columns change later
    every value it gives is the pass's; a job that has left the queue since may be missing."""

    __slots__ = ("_jobs", "_n", "_run", "_slot_of")

    def __init__(self, run: _ColumnPass, columns: QueueColumns) -> None:
        self._run = run
        self._jobs = columns.jobs
        self._slot_of = columns.slot_of
        self._n = columns.n

    def __getitem__(self, job_id: int) -> float:
        k = self._slot_of[job_id]
        if k >= self._n:
            raise KeyError(job_id)
        run = self._run
        if run.state[k] == 3:
            run.place_slot(k)
        if run.state[k] != 0:
            raise KeyError(job_id)
        return float(run.starts[k])

    def __iter__(self) -> Iterator[int]:
        run = self._run
        run.place_all()
        jobs, slot_of = self._jobs, self._slot_of
        reserved = run.queue[run.state[run.queue] == 0].tolist()
        return iter([jobs[k].job_id for k in reserved if slot_of.get(jobs[k].job_id) == k])

    def __len__(self) -> int:
        return sum(1 for _ in self)
