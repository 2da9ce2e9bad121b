"""Efficacy claiming: the asker first takes the jobs that run relatively best at its site."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, estimate_at, estimates_at
from metasched.policy.claim.fcfs import first_fit


def efficacy(job: Job, site: str, sites: Sequence[str]) -> float:
    """Best estimate of ``job`` over ``sites`` (and ``site``) divided by its estimate at ``site`` (1.0 = best here)."""
    here = estimate_at(job, site)
    if here <= 0:
        return 1.0
    best = min((e for s in sites if (e := estimate_at(job, s)) > 0), default=here)
    return min(best, here) / here


def efficacy_of(row: Sequence[float], here: int) -> float:
    """:func:`efficacy` from a job's estimates at each site (``row``), ``here`` the asker's index."""
    at_here = row[here]
    if at_here <= 0:
        return 1.0
    best = min((e for e in row if e > 0), default=at_here)
    return min(best, at_here) / at_here


class EfficacyClaim(ClaimPolicy):
    """Hands over ready jobs in decreasing efficacy at the asking site, first fit.

    The order is the simulator's :class:`~metasched.policy.priority.efficacy.Efficacy` queue order
    of the ready jobs carrying their efficacy at the asking site: its rank key
    ``(-efficacy, submit_time, job_id)``, computed once per kind (a test pins the equality).

    Source: the efficacy priority of Sabin et al. (seed 000, section 6): a job's efficacy at a site
    is its best run time over the sites divided by its run time there; a site runs first the
    jobs it is relatively best at. Here "the sites" are those with a placeholder in the world
    (live or queued) plus the asker's, the run times the snapshot's ``estimates``. Never declines:
    a job that runs relatively badly here is still taken when nothing better is ready.

    Invariant: the :class:`ClaimPolicy` one, and no fitting job of higher efficacy is passed over
    for one of lower efficacy. Tie-break: ``(submit_time, job_id)`` (so with equal speeds, FCFS).
    """

    key: ClassVar[str] = "efficacy"
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
        sites = sorted({site, *(world.sites if world is not None else ())})
        here = sites.index(site)
        # Jobs of one kind share their row of estimates (estimates_at): one efficacy per row.
        effs: dict[int, float] = {}
        keyed = []
        for j, row in zip(ready, estimates_at(ready, sites), strict=True):
            eff = effs.get(id(row))
            if eff is None:
                eff = effs[id(row)] = efficacy_of(row, here)
            # Efficacy.rank's key, without a stand-in job per ready job (a test pins the equality).
            keyed.append((-eff, j.submit_time, j.job_id, j))
        keyed.sort(key=_rank)
        return first_fit([k[3] for k in keyed], free, limit)


def _rank(item: tuple[float, float, int, Job]) -> tuple[float, float, int]:
    return item[0], item[1], item[2]
