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
    fit in the profile; those whose earliest start is ``now`` start. When a running job has
    overrun its estimate, the profile counts its processors as free from ``now`` although they
    are still held: a job placed at ``now`` then starts only if it fits the processors really
    free, and otherwise keeps its reservation at ``now`` (it starts as soon as they are released).

    Invariant: a job never delays the reservation of any job ahead of it in the queue.
    Tie-break: queue order (the pluggable :class:`~metasched.policy.base.QueueOrder`).
    """

    key: ClassVar[str] = "conservative"

    def plan(self, view: SiteView, now: float) -> Plan:
        profile = self.profile(view, now)
        starts = []
        reservations: dict[int, float] = {}
        free = view.free_procs
        for job in self.order.order(view, now):
            start = profile.earliest_fit(job.requested_procs, job.requested_time, now)
            profile.reserve(start, job.requested_time, job.requested_procs)
            if start <= now and job.requested_procs <= free:
                starts.append(job)
                free -= job.requested_procs
            else:
                reservations[job.job_id] = start
        return Plan(starts=starts, reservations=reservations)

    @staticmethod
    def profile(view: SiteView, now: float) -> Profile:
        """The availability profile of ``view`` from its running jobs alone."""
        releases = [(r.expected_end, r.procs) for r in view.running]
        return Profile.from_releases(view.total_procs, now, view.free_procs, releases)
