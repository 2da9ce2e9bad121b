"""Min-min batch claiming for many small tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, estimate_at, fits, mem_budget
from metasched.policy.mapping.min_min import MinMin


class MinMinClaim(ClaimPolicy):
    """Hands the asker the jobs a min-min mapping of all ready jobs onto all placeholders puts on it now.

    The mapping is the simulator's own :class:`~metasched.policy.mapping.min_min.MinMin` over an
    ETC matrix of the ready jobs x every placeholder slot (ready time: its free instant).

    Source: Min-min of Braun et al. / Maheswaran et al. (seed 002, section 3): repeatedly map the
    (job, machine) pair with the smallest completion time, the machine being here any site's
    placeholder slot (:class:`~metasched.policy.claim.base.SlotBoard`), the completion its free
    instant plus ``estimates[site]``. Many small tasks thus go, shortest first, where they finish
    soonest; a batch claim (``limit`` > 1) takes every task min-min maps on the asker's slots now.

    Invariant: every job handed over is the minimum-completion pair of the step that mapped it
    (never a job that some other placeholder would complete earlier before it). Tie-break:
    Min-min's (lowest task index in ``(submit_time, job_id)`` order, then lowest machine: the
    asker's slots come first). Jobs that do not fit the asker are never mapped onto its slots.
    """

    key: ClassVar[str] = "min-min"
    needs_world: ClassVar[bool] = True

    def __init__(self) -> None:
        self.mapper = MinMin()

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        if not ready:
            return []
        # Machines: the asker's slots first (Min-min breaks ties by the lowest machine index, so a
        # tie goes to the asker), then every other placeholder by site name.
        n_asker = max(1, min(limit, free.cpus))
        machines: list[str] = [site] * n_asker
        avail: list[float] = [now] * n_asker
        for name, slots in sorted((world.sites if world is not None else {}).items()):
            for t in slots.free_times(now):
                machines.append(name)
                avail.append(t)
        jobs = sorted(ready, key=lambda j: (j.submit_time, j.job_id))
        if len(machines) == n_asker:  # nobody else: only the jobs that fit the asker can be mapped
            jobs = [j for j in jobs if fits(j, free.cpus, mem_budget(free), free.remaining_s, free.licences)]
            if not jobs:
                return []
        est = {s: np.array([estimate_at(j, s) for j in jobs], dtype=float) for s in set(machines)}
        etc = np.column_stack([est[s] for s in machines])
        # A job that does not fit the asker alone never goes on its slots.
        too_big = np.array([not fits(j, free.cpus, mem_budget(free), free.remaining_s, free.licences) for j in jobs])
        etc[too_big, :n_asker] = np.inf
        assignment = self.mapper.map(etc, np.array(avail, dtype=float))
        # The first job Min-min maps on a machine is its shortest there (lowest index on ties): that
        # one starts now on an asker slot; the later ones wait for it.
        firsts = []
        for m in range(n_asker):
            rows = np.flatnonzero(assignment == m)
            if rows.size:
                firsts.append(int(rows[np.argmin(etc[rows, m])]))
        chosen: list[int] = []
        cpus, mem, lic = free.cpus, mem_budget(free), dict(free.licences)
        for r in sorted(firsts, key=lambda r: (etc[r, 0], r)):
            j = jobs[r]
            if len(chosen) < limit and fits(j, cpus, mem, free.remaining_s, lic):
                chosen.append(j.job_id)
                cpus -= j.requested_procs
                if mem is not None:
                    mem -= int(j.attrs.get("mem_mb", 0) or 0)
                for name, count in (j.attrs.get("licences") or {}).items():
                    lic[name] -= count
        return chosen
