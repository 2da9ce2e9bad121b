"""Two-level priorities for claims: deadline, licence and user-class (Pasquali et al.)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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
        n = len(ready)
        submit = [0.0] * n
        nxt = [0.0] * n
        deadline = [math.nan] * n
        wanted: list[tuple[int, Mapping[str, int]]] = []
        # Jobs of a kind share one estimates table (the store's, the simulator's): one estimate per table.
        memo: dict[tuple[int, float], float] = {}
        for r, j in enumerate(ready):
            attrs = j.attrs
            submit[r] = j.submit_time
            key = (id(attrs.get("estimates")), j.requested_time)
            est = memo.get(key)
            if est is None:
                est = memo[key] = estimate_at(j, site)
            nxt[r] = est
            d = attrs.get("deadline")
            if d is not None:
                deadline[r] = float(d)
            lic = attrs.get("licences")
            if lic:
                wanted.append((r, lic))
        names = sorted({name for _, lic in wanted for name in lic})
        col = {name: i for i, name in enumerate(names)}
        uses = np.zeros((n, len(names)))
        for r, lic in wanted:
            for name in lic:
                uses[r, col[name]] = 1.0
        queued = uses.sum(axis=0).astype(np.int64)
        return LsQueue(
            now=now,
            submit=np.array(submit, dtype=float),
            nxt=np.array(nxt, dtype=float),
            deadline=np.array(deadline, dtype=float),
            uses=uses,
            licence_total=np.array([max(0, free.licences.get(name, 0)) for name in names], dtype=np.int64),
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
        with np.errstate(divide="ignore", invalid="ignore"):  # no estimate here (0): never on the ramp
            ls = self.deadline.deltas(q) + self.licences.deltas(q)
        ctx = MsContext(mean_margin=None, n_licence_types=q.uses.shape[1])
        points: dict[str, float] = {}
        user = [0.0] * len(ready)
        for r, j in enumerate(ready):
            cls = j.attrs.get("user_class", "regular")
            pts = points.get(cls)
            if pts is None:
                name = str(cls).lower()
                if name not in USER_CLASSES:
                    raise ValueError(f"job {j.job_id}: unknown user class {name!r} (known: {', '.join(USER_CLASSES)})")
                # UserClassPriority reads the class from a job's JobQos, as in the simulator; its value
                # depends on the class only, so it is asked once per class.
                qos = JobQos(None, 0, UserClass[name.upper()], 1.0)
                pts = points[cls] = float(self.user.delta(j.copy(attrs={QOS_KEY: qos}), ctx))
            user[r] = pts
        prio = np.array(user, dtype=float) + ls
        ids = np.array([j.job_id for j in ready], dtype=np.int64)
        # Rank key (-priority, submit_time, job_id): lexsort's last key is the primary one.
        order = np.lexsort((ids, q.submit, -prio))
        return first_fit([ready[i] for i in order], free, limit)
