"""First come, first served queue order."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.base import QueueOrder, SiteView


class Fcfs(QueueOrder):
    """Arrival order: earlier ``submit_time`` first, then smaller ``job_id``.

    Source: the default of every batch system. Invariant: never reorders the queue.
    """

    key: ClassVar[str] = "fcfs"
    is_arrival_order: ClassVar[bool] = True
    is_static: ClassVar[bool] = True

    def rank(self, job: Job, view: SiteView, now: float) -> tuple[float, int]:
        return (job.submit_time, job.job_id)
