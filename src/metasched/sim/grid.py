"""A grid of machines: local processing, job sharing and multi-site co-allocation (seed 001).

Three scenarios (Ernemann et al. 2002, section 3), EASY backfilling everywhere:

* **local** (:func:`simulate_local`): each site runs only its own jobs (``Job.home_site``) on its
  own machine under :class:`~metasched.policy.local.easy.EasyBackfill` (the core's single-site
  replay, one run per site).
* **job sharing** (:func:`simulate_grid` with :class:`~metasched.policy.meta.best_fit.BestFit`):
  every job goes to one central grid queue; the grid scheduler picks a machine by BestFit.
* **multi-site** (:func:`simulate_grid` with :class:`~metasched.policy.meta.multisite.MultiSite`):
  as job sharing, but a job may be split over several machines; its parts start together and end
  together, and a split job runs ``(1 + overhead) x`` its run time (its estimate grows alike).

The central queue (:class:`GridScheduler`, FCFS order) is scheduled by EASY backfilling lifted to
the grid. One pass at ``now``:

1. Start jobs from the head of the queue while the selector finds an allocation for them on the
   free processors.
2. The first job it cannot place (the *head*) gets a reservation: the earliest instant ``shadow``
   at which the selector finds an allocation on the *projected* free processors (every running
   job released at its expected end, an end in the past counting as ``now``; all jobs ending at
   one instant released together), and the allocation found then. This is the rule for a job no
   machine can start now: it stays in the central queue, and if it is the first such job it is
   promised the machine(s) where it could start earliest (ties: the selector's rule on the
   projected free counts, i.e. BestFit's fewest left-over processors, then the lowest index).
   Machine ``m`` of that allocation has ``extra[m]`` = projected free at ``shadow`` minus the
   head's part there.
3. Every later queued job, in order, starts now if the selector finds an allocation on the
   processors it may use: all free processors of a machine outside the reservation, or of any
   machine when the job (with its split overhead if split) is expected to end by ``shadow``;
   otherwise at most ``extra[m]`` on a reserved machine ``m`` (and ``extra[m]`` shrinks by what
   it takes).

Invariants (proved in ``tests/sim/test_grid.py``): a machine never holds more processors than it
has; the parts of a split job start and end at the same instants; the head job starts no later
than any reservation it was given while estimates bound the run times (EASY's promise). The event
semantics are the core's (:mod:`metasched.sim.engine`): at each instant release the jobs ending
then, add the jobs submitted then, then one scheduling pass.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
from sortedcontainers import SortedList

from metasched.model.job import Job
from metasched.policy.local.easy import EasyBackfill
from metasched.policy.meta.base import Allocation, MachineSelector
from metasched.sim.replay import simulate
from metasched.sim.schedule import Schedule

#: ``(time, machine, delta procs, job_id)``: +procs when a part starts, -procs when it ends.
LogEntry = tuple[float, int, int, int]
#: ``(pass instant, head job_id, reserved start, reserved allocation)``.
Reservation = tuple[float, int, float, Allocation]


@dataclass
class GridResult:
    """Outcome of a grid run.

    ``schedule`` is aligned with the input jobs: ``site`` is the machine holding the job's largest
    part, ``procs`` its width, ``run_time`` the time it really ran (with the split overhead).
    ``parts[i]`` is job ``i``'s allocation. ``log`` (if recorded) lists every change of a
    machine's busy processors in the order the simulator made it; ``reservations`` (if recorded)
    lists ``(pass instant, head job_id, reserved start, reserved allocation)`` for every pass that
    blocked a head.
    """

    schedule: Schedule
    parts: list[Allocation]
    sizes: tuple[int, ...]
    log: list[LogEntry] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)

    @property
    def n_split(self) -> int:
        """Number of jobs that ran on more than one machine."""
        return sum(1 for p in self.parts if len(p) > 1)


def _validate_jobs(jobs: Sequence[Job]) -> None:
    ids = set()
    for job in jobs:
        if job.job_id in ids:
            raise ValueError(f"job_id values must be unique within a workload; {job.job_id} repeats")
        ids.add(job.job_id)
        if job.requested_time <= 0:
            raise ValueError(f"job {job.job_id}: requested_time must be positive, got {job.requested_time}")
        if job.run_time < 0:
            raise ValueError(f"job {job.job_id}: run_time must not be negative, got {job.run_time}")
        if job.requested_procs <= 0:
            raise ValueError(f"job {job.job_id}: requested_procs must be positive, got {job.requested_procs}")


class GridScheduler:
    """The central grid queue and the machines' state; drives one grid run (see module docs).

    Mutable simulator state, not a policy: the policy is the :class:`MachineSelector` it is given.
    """

    def __init__(
        self,
        sizes: Sequence[int],
        selector: MachineSelector,
        *,
        overhead: float = 0.0,
        record_log: bool = False,
        record_reservations: bool = False,
    ) -> None:
        if not sizes or any(s <= 0 for s in sizes):
            raise ValueError(f"machine sizes must be a non-empty list of positive integers, got {list(sizes)}")
        if overhead < 0:
            raise ValueError(f"overhead must not be negative, got {overhead}")
        self.sizes = tuple(int(s) for s in sizes)
        self.selector = selector
        self.split_factor = 1.0 + overhead
        self.free = list(self.sizes)
        self.total_free = sum(self.sizes)
        self.queue: dict[int, Job] = {}
        # (expected end, job_id, machine, procs) of every running part, sorted: the release stream.
        self.running: SortedList = SortedList()
        self.active: dict[int, tuple[Allocation, float]] = {}
        self.ends: list[tuple[float, int, int]] = []
        self._seq = 0
        self.record_log = record_log
        self.record_reservations = record_reservations
        self.log: list[LogEntry] = []
        self.reservations: list[Reservation] = []
        #: job_id -> (start, end, allocation, effective run time) of every started job.
        self.started: dict[int, tuple[float, float, Allocation, float]] = {}

    # -- state changes -------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        if not self.selector.can_ever_run(job.requested_procs, self.sizes):
            raise ValueError(
                f"job {job.job_id} needs {job.requested_procs} processors; selector {self.selector.key!r} "
                f"can never place it on machines {list(self.sizes)}"
            )
        self.queue[job.job_id] = job

    def _start(self, job: Job, alloc: Allocation, now: float) -> None:
        factor = self.split_factor if len(alloc) > 1 else 1.0
        expected_end = now + job.requested_time * factor
        if expected_end < now:  # pragma: no cover - requested_time > 0 is validated
            expected_end = now
        run = job.run_time * factor
        free = self.free
        for m, procs in alloc:
            if procs <= 0 or procs > free[m]:
                raise RuntimeError(f"machine {m}: part of {procs} processors for job {job.job_id} with {free[m]} free")
            free[m] -= procs
            self.running.add((expected_end, job.job_id, m, procs))
            if self.record_log:
                self.log.append((now, m, procs, job.job_id))
        self.total_free -= job.requested_procs
        self.active[job.job_id] = (alloc, expected_end)
        self.started[job.job_id] = (now, now + run, alloc, run)
        heapq.heappush(self.ends, (now + run, self._seq, job.job_id))
        self._seq += 1

    def finish(self, job_id: int, now: float) -> None:
        alloc, expected_end = self.active.pop(job_id)
        for m, procs in alloc:
            self.free[m] += procs
            self.running.remove((expected_end, job_id, m, procs))
            if self.record_log:
                self.log.append((now, m, -procs, job_id))
        self.total_free += sum(p for _, p in alloc)

    # -- the scheduling pass -------------------------------------------------------------------

    def _reservation(self, head: Job, now: float) -> tuple[float, Allocation]:
        """Earliest instant the selector places ``head`` on the projected free processors."""
        procs = head.requested_procs
        proj = list(self.free)
        total = self.total_free
        select = self.selector.select
        sizes = self.sizes
        may_split = self.selector.may_split
        # A whole-job allocation needs one machine with ``procs`` free, a split one ``procs`` free
        # in all (the selector contract): the selector is only asked when that may hold.
        whole = False
        current: float | None = None
        for expected_end, _, m, p in self.running:
            t = expected_end if expected_end > now else now
            if current is not None and t != current and (whole or (may_split and total >= procs)):
                alloc = select(procs, proj, sizes)
                if alloc is not None:
                    return current, alloc
            current = t
            proj[m] += p
            total += p
            if proj[m] >= procs:
                whole = True
        alloc = select(procs, proj, sizes)
        if alloc is None or current is None:
            raise AssertionError(f"job {head.job_id} cannot be placed even on the idle grid")
        return current, alloc

    def _projected_free(self, at: float, now: float) -> list[int]:
        """Free processors of every machine at ``at``, counting releases at expected ends <= ``at``."""
        proj = list(self.free)
        for expected_end, _, m, p in self.running:
            if (expected_end if expected_end > now else now) > at:
                break
            proj[m] += p
        return proj

    def schedule_pass(self, now: float) -> None:
        queue = self.queue
        if not queue:
            return
        select = self.selector.select
        sizes = self.sizes
        free = self.free
        started: list[int] = []
        head: Job | None = None
        position = 0
        for job in queue.values():
            procs = job.requested_procs
            alloc = select(procs, free, sizes) if procs <= self.total_free else None
            if alloc is None:
                head = job
                break
            self._start(job, alloc, now)
            started.append(job.job_id)
            position += 1
        if head is not None and self.total_free > 0 and len(queue) > position + 1:
            self._backfill(head, position, now, started)
        elif head is not None and self.record_reservations:
            shadow, reserved = self._reservation(head, now)
            self.reservations.append((now, head.job_id, shadow, reserved))
        for job_id in started:
            del queue[job_id]

    def _backfill(self, head: Job, position: int, now: float, started: list[int]) -> None:
        shadow, reserved = self._reservation(head, now)
        if self.record_reservations:
            self.reservations.append((now, head.job_id, shadow, reserved))
        proj = self._projected_free(shadow, now)
        extra = {m: proj[m] - procs for m, procs in reserved}
        select = self.selector.select
        sizes = self.sizes
        free = self.free
        factor = self.split_factor
        may_split = self.selector.may_split
        n = len(free)

        def limited() -> list[int]:
            return [min(free[m], extra[m]) if m in extra else free[m] for m in range(n)]

        usable_long = limited()
        max_free = max(free)
        max_long = max(usable_long)
        total_long = sum(usable_long)
        for job in islice(self.queue.values(), position + 1, None):
            if self.total_free == 0:
                break
            procs = job.requested_procs
            if procs > self.total_free or (not may_split and procs > max_free):
                continue
            ends_by_shadow = now + job.requested_time <= shadow
            if not ends_by_shadow and (procs > total_long or (not may_split and procs > max_long)):
                continue
            alloc = select(procs, free if ends_by_shadow else usable_long, sizes)
            if alloc is None:
                continue
            split = len(alloc) > 1
            if split and ends_by_shadow and now + job.requested_time * factor > shadow:
                # Split, the job runs longer and now crosses the shadow: it may only use the extra.
                alloc = select(procs, usable_long, sizes)
                if alloc is None:
                    continue
                split = len(alloc) > 1
            crosses = now + job.requested_time * (factor if split else 1.0) > shadow
            self._start(job, alloc, now)
            started.append(job.job_id)
            if crosses:
                for m, p in alloc:
                    if m in extra:
                        extra[m] -= p
            usable_long = limited()
            max_free = max(free)
            max_long = max(usable_long)
            total_long = sum(usable_long)


def simulate_grid(
    jobs: Sequence[Job],
    sizes: Sequence[int],
    selector: MachineSelector,
    *,
    overhead: float = 0.0,
    record_log: bool = False,
    record_reservations: bool = False,
    progress: Callable[[int], None] | None = None,
) -> GridResult:
    """Run ``jobs`` through one central grid queue over machines of ``sizes`` (job sharing with
    :class:`BestFit`, multi-site with :class:`MultiSite`); see the module docs for the rules.

    ``overhead`` is ``p`` of seed 001: a job split over several machines runs ``(1 + p) x`` its
    run time (and its estimate grows alike). ``home_site`` is ignored: every site shares its jobs.
    ``progress`` is called with the number of jobs started since its previous call.
    """
    _validate_jobs(jobs)
    grid = GridScheduler(
        sizes, selector, overhead=overhead, record_log=record_log, record_reservations=record_reservations
    )
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, jobs[i].job_id))
    jobs_sorted = [jobs[i] for i in order]
    for job in jobs_sorted:
        if not selector.can_ever_run(job.requested_procs, grid.sizes):
            raise ValueError(
                f"job {job.job_id} needs {job.requested_procs} processors; selector {selector.key!r} "
                f"can never place it on machines {list(grid.sizes)}"
            )
    n = len(jobs_sorted)
    nxt = 0
    inf = float("inf")
    ends = grid.ends
    reported = 0
    while nxt < n or ends:
        t_submit = jobs_sorted[nxt].submit_time if nxt < n else inf
        t_end = ends[0][0] if ends else inf
        now = t_submit if t_submit < t_end else t_end
        while ends and ends[0][0] == now:
            _, _, job_id = heapq.heappop(ends)
            grid.finish(job_id, now)
        while nxt < n and jobs_sorted[nxt].submit_time == now:
            grid.queue[jobs_sorted[nxt].job_id] = jobs_sorted[nxt]
            nxt += 1
        grid.schedule_pass(now)
        if progress is not None and len(grid.started) - reported >= 1000:
            progress(len(grid.started) - reported)
            reported = len(grid.started)
    if progress is not None and len(grid.started) > reported:
        progress(len(grid.started) - reported)
    return _grid_result(list(jobs), grid)


def _grid_result(jobs: list[Job], grid: GridScheduler) -> GridResult:
    names = [f"m{i}" for i in range(len(grid.sizes))]
    schedule = Schedule.empty(jobs, sum(grid.sizes), names)
    parts: list[Allocation] = []
    for k, job in enumerate(jobs):
        start, end, alloc, run = grid.started[job.job_id]
        schedule.start_time[k] = start
        schedule.end_time[k] = end
        schedule.run_time[k] = run
        schedule.site[k] = max(alloc, key=lambda part: (part[1], -part[0]))[0]
        parts.append(alloc)
    schedule.meta["scenario"] = "multisite" if grid.selector.may_split else "job-sharing"
    return GridResult(schedule, parts, grid.sizes, grid.log, grid.reservations)


def simulate_local(jobs: Sequence[Job], sizes: Sequence[int], *, record_log: bool = False) -> GridResult:
    """Local job processing: each site runs its own jobs (``home_site``) under EASY backfilling.

    Every job's ``home_site`` must name a machine and its width must fit that machine (wide jobs
    are split beforehand, seed 001's modification 1).
    """
    _validate_jobs(jobs)
    sizes = tuple(int(s) for s in sizes)
    by_site: list[list[int]] = [[] for _ in sizes]
    for k, job in enumerate(jobs):
        if not 0 <= job.home_site < len(sizes):
            raise ValueError(f"job {job.job_id}: home_site {job.home_site} is not a machine index 0..{len(sizes) - 1}")
        if job.requested_procs > sizes[job.home_site]:
            raise ValueError(
                f"job {job.job_id} needs {job.requested_procs} processors; its home machine "
                f"{job.home_site} has {sizes[job.home_site]} (split wide jobs first)"
            )
        by_site[job.home_site].append(k)
    jobs_list = list(jobs)
    schedule = Schedule.empty(jobs_list, sum(sizes), [f"m{i}" for i in range(len(sizes))])
    parts: list[Allocation] = [((job.home_site, job.requested_procs),) for job in jobs_list]
    ranked_log: list[tuple[tuple[float, int, int], LogEntry]] = []
    for m, indices in enumerate(by_site):
        if not indices:
            continue
        site_jobs = [jobs_list[k] for k in indices]
        sub = simulate(site_jobs, sizes[m], EasyBackfill(), name=f"m{m}")
        idx = np.array(indices, dtype=np.int64)
        schedule.start_time[idx] = sub.start_time
        schedule.end_time[idx] = sub.end_time
        schedule.site[idx] = m
        if record_log:
            for j, job in enumerate(site_jobs):
                start, end = float(sub.start_time[j]), float(sub.end_time[j])
                ranked_log.append(((start, 1, len(ranked_log)), (start, m, job.requested_procs, job.job_id)))
                # Within an instant the core releases, then starts; a zero-length job holds its
                # processors for no time, so its end is logged right after its start.
                rank = (end, 1, len(ranked_log)) if end == start else (end, 0, 0)
                ranked_log.append((rank, (end, m, -job.requested_procs, job.job_id)))
    ranked_log.sort(key=lambda e: e[0])
    log = [entry for _, entry in ranked_log]
    schedule.meta["scenario"] = "local"
    return GridResult(schedule, parts, sizes, log, [])
