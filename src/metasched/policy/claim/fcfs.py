"""First come, first served claiming (first fit in arrival order)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, fits, mem_budget


class FcfsClaim(ClaimPolicy):
    """Hands out ready jobs in arrival order, skipping those that do not fit.

    Source: the command-line server of Pinchak, Lu and Goldenberg (Trellis, seed 003, section 3.4):
    the next ready command line goes to whichever placeholder asks. A job too big for this
    placeholder is skipped (another placeholder may fit it), so one wide job cannot stall the
    queue. Invariant: the :class:`ClaimPolicy` one (fit, time, limit) and, among fitting jobs, an
    earlier job is never passed over for a later one. Tie-break: ``(submit_time, job_id)``.
    """

    key: ClassVar[str] = "fcfs"
    prefix_stable: ClassVar[bool] = True

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        return first_fit(sorted(ready, key=lambda j: (j.submit_time, j.job_id)), free, limit)


def first_fit(ordered: Sequence[Job], free: FreeResources, limit: int) -> list[int]:
    """Ids of the jobs of ``ordered`` taken in that order while they fit ``free`` (at most ``limit``)."""
    cpus, mem = free.cpus, mem_budget(free)
    lic = dict(free.licences)
    chosen: list[int] = []
    for job in ordered:
        if len(chosen) >= limit or cpus <= 0:
            break
        if not fits(job, cpus, mem, free.remaining_s, lic, nodes=free.nodes, node_cpus=free.node_cpus):
            continue
        chosen.append(job.job_id)
        cpus -= job.requested_procs
        if mem is not None:
            mem -= int(job.attrs.get("mem_mb", 0) or 0)
        for name, count in (job.attrs.get("licences") or {}).items():
            lic[name] -= count
    return chosen
