"""First come, first served: no backfilling."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.base import LocalScheduler, Plan, SiteView


class FcfsScheduler(LocalScheduler):
    """Start jobs in queue order while the next one fits; stop at the first that does not.

    Source: the baseline of every backfilling paper (e.g. seed 001, section 2.4).
    Invariant: jobs start in queue order (with the default order, never out of arrival order).
    Tie-break: the queue order's own.
    """

    key: ClassVar[str] = "fcfs"

    def plan(self, view: SiteView, now: float) -> Plan:
        free = view.free_procs
        starts = []
        for job in self.order.order(view, now):
            if job.requested_procs > free:
                break
            starts.append(job)
            free -= job.requested_procs
        return Plan(starts=starts)
