"""Two-level priorities for claims: deadline, licence and user-class (Pasquali et al.)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from metasched.model.job import Job
from metasched.model.qos import QOS_KEY, JobQos, UserClass
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, estimate_at
from metasched.policy.claim.fcfs import first_fit
from metasched.policy.meta.two_level_base import LsQueue, MsContext
from metasched.policy.priority.deadline import LsDeadline
from metasched.policy.priority.licenses import LsLicences
from metasched.policy.priority.user_class import UserClassPriority

USER_CLASSES = ("regular", "silver", "gold")


class PasqualiClaim(ClaimPolicy):
    """Hands over ready jobs by decreasing priority = user class + deadline urgency + licence pressure, first fit.

    The heuristics are the two-level scheduler's own classes (:class:`~metasched.policy.priority.
    user_class.UserClassPriority`, :class:`~metasched.policy.priority.deadline.LsDeadline`,
    :class:`~metasched.policy.priority.licenses.LsLicences`), fed the ready jobs at the asking site.

    Source: Pasquali, Baraglia, Capannini, Ricci, Laforenza, "A two-level scheduler to dynamically
    schedule a stream of batch jobs in large-scale grids" (seed 004), section 4: the Meta-Scheduler's
    User heuristic (Gold > Silver > Regular: ``gold``/``silver``/``regular`` points) and the Local
    Scheduler's Deadline and Licences heuristics, evaluated at the asking site:

    * deadline (``attrs["deadline"]``, an instant): with ``est`` the estimate here, ``ext = now +
      est`` and ``t = deadline - k est``: ``low`` if ``ext <= t`` (not urgent) or ``ext > deadline``
      (already late), else the ramp ``low + (high - low) (ext - t) / (k est)``;
    * licences: ``rho_l`` = ready jobs requesting ``l`` / copies free here; critical when ``rho_l
      > 1``; a job gets ``licence_weight (sum of its non-critical rho + d x sum of its critical
      rho)``, ``d`` = distinct non-critical licences requested (>= 1), so one critical licence
      outweighs all non-critical ones;
    * user class: ``attrs["user_class"]`` (default regular).

    Invariant: the :class:`ClaimPolicy` one; a fitting job of higher priority is never passed over
    for one of lower priority. Tie-break: ``(submit_time, job_id)`` (no attributes: FCFS).
    """

    key: ClassVar[str] = "pasquali"

    def __init__(
        self,
        *,
        gold: int = 2,
        silver: int = 1,
        regular: int = 0,
        low: float = 0.0,
        high: float = 10.0,
        k: float = 2.0,
        licence_weight: float = 1.0,
    ) -> None:
        # The simulator's own heuristic objects (seed 004): the claim only builds their inputs.
        self.user = UserClassPriority(gold=gold, silver=silver, regular=regular)
        self.deadline = LsDeadline(low=low, high=high, k=k)
        self.licences = LsLicences(weight=licence_weight)

    def queue(self, ready: Sequence[Job], site: str, free: FreeResources, now: float) -> LsQueue:
        """The ready jobs as the Local Scheduler's heuristics see a cluster queue, at the asking site.

        ``nxt`` is the estimate here; licence copies are those the site can still hand out, and
        the requests those of the ready jobs (running holders already left the free count).
        """
        names = sorted({n for j in ready for n in j.attrs.get("licences") or {}})
        col = {n: i for i, n in enumerate(names)}
        uses = np.zeros((len(ready), len(names)))
        for r, j in enumerate(ready):
            for n in j.attrs.get("licences") or {}:
                uses[r, col[n]] = 1.0
        queued = uses.sum(axis=0).astype(np.int64)
        deadline = [j.attrs.get("deadline") for j in ready]
        return LsQueue(
            now=now,
            submit=np.array([j.submit_time for j in ready], dtype=float),
            nxt=np.array([estimate_at(j, site) for j in ready], dtype=float),
            deadline=np.array([np.nan if d is None else float(d) for d in deadline], dtype=float),
            uses=uses,
            licence_total=np.array([max(0, free.licences.get(n, 0)) for n in names], dtype=np.int64),
            licence_requests=queued,
            licence_queued=queued,
        )

    def deadline_urgency(self, job: Job, site: str, now: float) -> float:
        """The Deadline heuristic's value for one job at ``site``."""
        return float(self.deadline.deltas(self.queue([job], site, FreeResources(job.requested_procs), now))[0])

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
        q = self.queue(ready, site, free, now)
        ls = self.deadline.deltas(q) + self.licences.deltas(q)
        ctx = MsContext(mean_margin=None, n_licence_types=q.uses.shape[1])
        points: dict[str, float] = {}
        prio = {}
        for r, j in enumerate(ready):
            cls = str(j.attrs.get("user_class", "regular")).lower()
            if cls not in points:
                if cls not in USER_CLASSES:
                    raise ValueError(f"job {j.job_id}: unknown user class {cls!r} (known: {', '.join(USER_CLASSES)})")
                # UserClassPriority reads the class from a job's JobQos, as in the simulator; its value
                # depends on the class only, so it is asked once per class.
                qos = JobQos(None, 0, UserClass[cls.upper()], 1.0)
                points[cls] = self.user.delta(j.copy(attrs={QOS_KEY: qos}), ctx)
            prio[j.job_id] = points[cls] + float(ls[r])
        keyed = sorted(ready, key=lambda j: (-prio[j.job_id], j.submit_time, j.job_id))
        return first_fit(keyed, free, limit)
