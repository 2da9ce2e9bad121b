"""Mutable state of one simulated site: its queue, its running jobs, its free processors."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from heapq import heappop, heappush
from typing import Any, overload

from metasched.model.job import Job
from metasched.policy.base import Plan, QueueColumns, RunningJob, SiteView


class SiteState:
    """One machine of ``procs`` processors as the simulator holds it.

    The queue keeps arrival order (a dict keyed by ``job_id``: O(1) removal when a copy is
    cancelled). The running jobs are also kept sorted by ``(expected_end, job_id)`` (handed to
    the schedulers as :attr:`SiteView.running_by_end`), and the widths of the queued jobs are
    counted (with a heap of the widths present) so that :attr:`min_queued_width` is cheap.

    Invariant: ``0 <= free_procs <= procs`` and ``free_procs`` = ``procs`` minus the processors
    of the running jobs.

    Hints (:attr:`Plan.hint`): a plan applied with :meth:`accept` leaves its hint here; it is
    handed back by :meth:`view` until something breaks the conditions of :attr:`Plan.hint`
    (a direct :meth:`start`, a :meth:`cancel`, a :meth:`finish` away from the job's expected
    end, or a running job past its expected end), after which views carry ``hint=None``.

    ``columns``: when given, the queue is kept as :class:`~metasched.policy.base.QueueColumns`
    too and handed to the schedulers in :attr:`SiteView.columns`.
    """

    __slots__ = (
        "_by_end",
        "_end_keys",
        "_hint",
        "_width_count",
        "_widths",
        "columns",
        "free_procs",
        "name",
        "procs",
        "queue",
        "running",
    )

    def __init__(self, procs: int, name: str = "", columns: QueueColumns | None = None) -> None:
        if procs <= 0:
            raise ValueError(f"site {name!r}: procs must be positive, got {procs}")
        self.procs = procs
        self.name = name
        self.free_procs = procs
        self.queue: dict[int, Job] = {}
        self.running: dict[int, RunningJob] = {}
        self._end_keys: list[tuple[float, int]] = []
        self._by_end: list[RunningJob] = []
        # _width_count[w] = queued jobs of width w (jobs wider than the machine share the last
        # bucket: they can never start here, so their exact width does not matter for the min).
        # A dict, not a list indexed by width: memory grows with the queue, never with the machine
        # size (``; MaxProcs: 1000000000`` in a trace header must not allocate per processor).
        self._width_count: dict[int, int] = {}
        # Widths with queued jobs, a heap (each width at least once while it has jobs).
        self._widths: list[int] = []
        self._hint: Any = None
        self.columns = columns

    def _queue_add(self, job: Job) -> None:
        self.queue[job.job_id] = job
        if self.columns is not None:
            self.columns.append(job)
        w = job.requested_procs
        if not 0 <= w <= self.procs:
            w = self.procs + 1
        counts = self._width_count
        c = counts.get(w, 0)
        if c == 0:
            heappush(self._widths, w)
        counts[w] = c + 1

    def _queue_remove(self, job_id: int) -> Job:
        job = self.queue.pop(job_id)
        if self.columns is not None:
            self.columns.remove(job_id)
        w = job.requested_procs
        if not 0 <= w <= self.procs:
            w = self.procs + 1
        self._width_count[w] -= 1
        return job

    @property
    def min_queued_width(self) -> int:
        """Width of the narrowest queued job (``procs + 1`` when the queue is empty, or when
        every queued job is wider than the machine).

        While ``free_procs < min_queued_width`` no scheduler can start anything here (every
        :class:`~metasched.policy.base.LocalScheduler` starts jobs within ``free_procs``), so a
        driver may skip that pass.
        """
        widths, counts = self._widths, self._width_count
        # Lazy deletion: a width stays in the heap until it is at the top with no job left.
        while widths and not counts.get(widths[0]):
            counts.pop(heappop(widths), None)
        return widths[0] if widths else self.procs + 1

    def submit(self, job: Job) -> None:
        if job.requested_time <= 0:
            raise ValueError(f"job {job.job_id}: requested_time must be positive, got {job.requested_time}")
        if job.job_id in self.queue or job.job_id in self.running:
            raise ValueError(f"job {job.job_id} is already at site {self.name!r}")
        self._queue_add(job)

    def cancel(self, job_id: int) -> Job:
        """Remove a queued job (e.g. a copy started elsewhere)."""
        self._hint = None
        return self._queue_remove(job_id)

    def start(self, job: Job, now: float, procs: int | None = None) -> RunningJob:
        """Start a queued job now. ``procs`` overrides the width (a part of a split job)."""
        self._hint = None
        return self._start(job, now, procs)

    def _start(self, job: Job, now: float, procs: int | None = None) -> RunningJob:
        width = job.requested_procs if procs is None else procs
        if width > self.free_procs:
            raise RuntimeError(
                f"site {self.name!r}: starting job {job.job_id} ({width} procs) with only {self.free_procs} free"
            )
        job_id = job.job_id
        queued = self.queue.pop(job_id, None)
        if queued is not None:
            if self.columns is not None:
                self.columns.remove(job_id)
            w = queued.requested_procs
            if not 0 <= w <= self.procs:
                w = self.procs + 1
            self._width_count[w] -= 1
        expected_end = now + job.requested_time
        running = RunningJob(job=job, start_time=now, procs=width, expected_end=expected_end)
        self.running[job_id] = running
        key = (expected_end, job_id)
        end_keys = self._end_keys
        # Jobs started at one pass mostly end last: append without a search when they do.
        if not end_keys or end_keys[-1] < key:
            end_keys.append(key)
            self._by_end.append(running)
        else:
            i = bisect_left(end_keys, key)
            end_keys.insert(i, key)
            self._by_end.insert(i, running)
        self.free_procs -= width
        return running

    def accept(self, plan: Plan, now: float) -> list[RunningJob]:
        """Start every job of ``plan`` now and keep its hint for the next :meth:`view`."""
        start = self._start
        started = [start(job, now) for job in plan.starts]
        self._hint = plan.hint
        return started

    def finish(self, job_id: int, now: float | None = None) -> RunningJob:
        """Release a running job's processors. ``now`` (the instant it ends) lets a hint
        survive an end exactly at the job's expected end; without it the hint is dropped."""
        running = self.running.pop(job_id)
        if now is None or now != running.expected_end:
            self._hint = None
        key = (running.expected_end, job_id)
        i = bisect_left(self._end_keys, key)
        del self._end_keys[i]
        del self._by_end[i]
        self.free_procs += running.procs
        return running

    def view(self, now: float | None = None) -> SiteView:
        """Snapshot for a scheduling pass at ``now``. Without ``now`` no hint is handed out
        (the overrun condition of :attr:`Plan.hint` cannot be checked)."""
        hint = self._hint
        if hint is not None and (now is None or (self._by_end and self._by_end[0].expected_end < now)):
            hint = self._hint = None
        running = list(self._by_end)
        return SiteView(
            total_procs=self.procs,
            free_procs=self.free_procs,
            running=running,
            queue=QueueView(self.queue),
            name=self.name,
            running_by_end=running,
            hint=hint,
            columns=self.columns,
        )

    def running_list(self) -> list[RunningJob]:
        """The running jobs, sorted by ``(expected_end, job_id)``."""
        return list(self._by_end)

    @property
    def is_idle(self) -> bool:
        return not self.queue and not self.running


class QueueView(Sequence[Job]):
    """A site's queue (plus a projected copy) as the sequence a :class:`SiteView` holds, made
    into a list only if a scheduler looks into it (one planning on queue columns never does).
    Valid until the queue changes."""

    __slots__ = ("_extra", "_list", "_queue")

    def __init__(self, queue: dict[int, Job], extra: Job | None = None) -> None:
        self._queue = queue
        self._extra = extra
        self._list: list[Job] | None = None

    def _items(self) -> list[Job]:
        if self._list is None:
            self._list = list(self._queue.values())
            if self._extra is not None:
                self._list.append(self._extra)
        return self._list

    def __len__(self) -> int:
        return len(self._queue) + (self._extra is not None)

    def __iter__(self) -> Iterator[Job]:
        return iter(self._items())

    @overload
    def __getitem__(self, index: int) -> Job: ...
    @overload
    def __getitem__(self, index: slice) -> list[Job]: ...
    def __getitem__(self, index: int | slice) -> Job | list[Job]:
        return self._items()[index]
