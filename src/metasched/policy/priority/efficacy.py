"""Efficacy queue order: jobs that run relatively fast here first."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.base import QueueOrder, SiteView

EFFICACY_ATTR = "efficacy"


class Efficacy(QueueOrder):
    """Higher efficacy first, then arrival order (FCFS).

    Source: seed 000, section 6. The efficacy of a job at a site is its best run time among the
    sites it was sent to divided by its run time at this site (1.0 at its fastest site); the
    multi-site driver stores it in ``job.attrs["efficacy"]`` of each copy. A job without the
    attribute counts as efficacy 1.0, so on a single site this order is FCFS.

    Invariant (with conservative backfilling): a job's copy at a site where its efficacy is 1.0 is
    preceded only by efficacy-1.0 jobs that arrived earlier, so its reservation there is bounded
    and the job cannot starve. Tie-break: ``(submit_time, job_id)``.
    """

    key: ClassVar[str] = "efficacy"
    is_static: ClassVar[bool] = True

    def rank(self, job: Job, view: SiteView, now: float) -> tuple[float, float, int]:
        return (-job.attrs.get(EFFICACY_ATTR, 1.0), job.submit_time, job.job_id)

    def primary_key(self, job: Job) -> float:
        return -float(job.attrs.get(EFFICACY_ATTR, 1.0))
