"""Conservative backfilling."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.profile import Profile
from metasched.policy.base import LocalScheduler, Plan, SiteView


class ConservativeBackfill(LocalScheduler):
    """Conservative backfilling: every queued job holds a reservation.

    Source: Feitelson & Weil, "Utilization and predictability in scheduling the IBM SP2 with
    backfilling" (1998); seed 000 section 2 and section 5.

    One pass: the availability profile is built from the running jobs' expected ends (an end in
    the past counts as ``now``); the queued jobs are placed in queue order, each at its earliest
    fit in the profile; those whose earliest start is ``now`` start.

    Invariant: a job never delays the reservation of any job ahead of it in the queue.
    Tie-break: queue order (the pluggable :class:`~metasched.policy.base.QueueOrder`).
    """

    key: ClassVar[str] = "conservative"

    def plan(self, view: SiteView, now: float) -> Plan:
        profile = self.profile(view, now)
        starts = []
        reservations: dict[int, float] = {}
        for job in self.order.order(view, now):
            start = profile.earliest_fit(job.requested_procs, job.requested_time, now)
            profile.reserve(start, job.requested_time, job.requested_procs)
            if start <= now:
                starts.append(job)
            else:
                reservations[job.job_id] = start
        return Plan(starts=starts, reservations=reservations)

    @staticmethod
    def profile(view: SiteView, now: float) -> Profile:
        """The availability profile of ``view`` from its running jobs alone."""
        releases = [(r.expected_end, r.procs) for r in view.running]
        return Profile.from_releases(view.total_procs, now, view.free_procs, releases)
