"""Mutable state of one simulated site: its queue, its running jobs, its free processors."""

from __future__ import annotations

from metasched.model.job import Job
from metasched.policy.base import RunningJob, SiteView


class SiteState:
    """One machine of ``procs`` processors as the simulator holds it.

    The queue keeps arrival order (a dict keyed by ``job_id``: O(1) removal when a copy is
    cancelled). Invariant: ``0 <= free_procs <= procs`` and ``free_procs`` = ``procs`` minus the
    processors of the running jobs minus ``held_procs`` (processors a multi-site driver holds
    for parts of co-allocated jobs).
    """

    __slots__ = ("free_procs", "name", "procs", "queue", "running")

    def __init__(self, procs: int, name: str = "") -> None:
        if procs <= 0:
            raise ValueError(f"site {name!r}: procs must be positive, got {procs}")
        self.procs = procs
        self.name = name
        self.free_procs = procs
        self.queue: dict[int, Job] = {}
        self.running: dict[int, RunningJob] = {}

    def submit(self, job: Job) -> None:
        if job.requested_time <= 0:
            raise ValueError(f"job {job.job_id}: requested_time must be positive, got {job.requested_time}")
        if job.job_id in self.queue or job.job_id in self.running:
            raise ValueError(f"job {job.job_id} is already at site {self.name!r}")
        self.queue[job.job_id] = job

    def cancel(self, job_id: int) -> Job:
        """Remove a queued job (e.g. a copy started elsewhere)."""
        return self.queue.pop(job_id)

    def start(self, job: Job, now: float, procs: int | None = None) -> RunningJob:
        """Start a queued job now. ``procs`` overrides the width (a part of a split job)."""
        width = job.requested_procs if procs is None else procs
        if width > self.free_procs:
            raise RuntimeError(
                f"site {self.name!r}: starting job {job.job_id} ({width} procs) with only {self.free_procs} free"
            )
        self.queue.pop(job.job_id, None)
        running = RunningJob(job=job, start_time=now, procs=width, expected_end=now + job.requested_time)
        self.running[job.job_id] = running
        self.free_procs -= width
        return running

    def finish(self, job_id: int) -> RunningJob:
        """Release a running job's processors."""
        running = self.running.pop(job_id)
        self.free_procs += running.procs
        return running

    def view(self) -> SiteView:
        return SiteView(
            total_procs=self.procs,
            free_procs=self.free_procs,
            running=list(self.running.values()),
            queue=list(self.queue.values()),
            name=self.name,
        )

    @property
    def is_idle(self) -> bool:
        return not self.queue and not self.running
