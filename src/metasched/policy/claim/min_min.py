"""Min-min batch claiming for many small tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, SlotBoard, estimate_at


class MinMinClaim(ClaimPolicy):
    """Hands the asker the jobs a min-min mapping of all ready jobs onto all placeholders puts on it now.

    Source: Min-min of Braun et al. / Maheswaran et al. (seed 002, section 3): repeatedly map the
    (job, machine) pair with the smallest completion time, the machine being here any site's
    placeholder slot (:class:`~metasched.policy.claim.base.SlotBoard`), the completion its free
    instant plus ``estimates[site]``. Many small tasks thus go, shortest first, where they finish
    soonest; a batch claim (``limit`` > 1) takes every task min-min maps on the asker's slots now.
    Since all slots of a site differ only by their free instant, the best pair at a site is its
    first free slot with the job shortest there, so each step looks at one candidate per site.

    Invariant: every job handed over is the minimum-completion pair of the step that mapped it
    (never a job that some other placeholder would complete earlier before it). Tie-break:
    smaller completion, then the asking site, then site name; at a site, shorter estimate, then
    ``(submit_time, job_id)``. Jobs that do not fit the asker are never mapped onto its slots.
    """

    key: ClassVar[str] = "min-min"
    needs_world: ClassVar[bool] = True

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        board = SlotBoard(world, site, free, now, limit)
        sites = sorted(board.heaps, key=lambda s: (s != site, s))
        by_site = {
            s: sorted(ready, key=lambda j, s=s: (estimate_at(j, s), j.submit_time, j.job_id))  # type: ignore[misc]
            for s in sites
        }
        cursor = dict.fromkeys(sites, 0)
        mapped: set[int] = set()
        while board.asker_open() and len(mapped) < len(ready):
            best: tuple[float, bool, str] | None = None
            pick: tuple[str, Job] | None = None
            for s in sites:
                slot = board.earliest(s)
                if slot is None:
                    continue
                jobs = by_site[s]
                i = cursor[s]
                while i < len(jobs) and jobs[i].job_id in mapped:
                    i += 1
                cursor[s] = i
                if slot[1]:  # the asker's slot: the shortest job that fits it
                    while i < len(jobs) and (jobs[i].job_id in mapped or not board.fits_asker(jobs[i])):
                        i += 1
                if i >= len(jobs):
                    continue
                key = (slot[0] + estimate_at(jobs[i], s), s != site, s)
                if best is None or key < best:
                    best, pick = key, (s, jobs[i])
            if pick is None:
                break
            s, job = pick
            mapped.add(job.job_id)
            board.assign(job, s, estimate_at(job, s))
        return board.chosen
