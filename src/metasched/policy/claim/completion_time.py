"""Completion-time claiming: decline a job when another site's placeholder is expected to finish it sooner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, SlotBoard, estimate_at


class CompletionTimeClaim(ClaimPolicy):
    """Hands a job to the asking placeholder only if no other placeholder is expected to complete it earlier.

    Source: the completion-based multiple reservations of Sabin et al. (seed 000, section 5: "if
    some other site has a better completion time, the job is not run [here]"), read in the
    placeholder world: a placeholder live or queued at K sites *is* a job reserved at K sites. The
    expected completions come from a list plan (minimum completion time, as MCT in seed 002): the
    ready jobs, in arrival order, are put one by one on the slot (any site's placeholder, the
    asker's included, see :class:`~metasched.policy.claim.base.SlotBoard`) that completes them
    first, by ``estimates[site]``; the asker gets the jobs planned on its own slots at ``now``.
    Jobs that do not fit the asker are left out of the plan (a placeholder that fits them decides).

    Invariant: a job handed over is expected (by the estimates in the snapshot) to complete here
    no later than on any other placeholder, given the jobs that arrived before it; with a single
    site (or no world) this is :class:`~metasched.policy.claim.fcfs.FcfsClaim`. Tie-break: equal
    completions go to the asking site (then site name), so a tie never leaves the asker idle.
    """

    key: ClassVar[str] = "completion-time"
    needs_world: ClassVar[bool] = True
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
        board = SlotBoard(world, site, free, now, limit)
        sites = sorted(board.heaps, key=lambda s: (s != site, s))
        for job in sorted(ready, key=lambda j: (j.submit_time, j.job_id)):
            if not board.asker_open():
                break
            if not board.fits_asker(job):
                continue
            best: tuple[float, int, str] | None = None
            best_site = site
            for s in sites:
                slot = board.earliest(s)
                if slot is None:
                    continue
                key = (slot[0] + estimate_at(job, s), s != site, s)
                if best is None or key < best:
                    best, best_site = key, s
            board.assign(job, best_site, estimate_at(job, best_site))
        return board.chosen
