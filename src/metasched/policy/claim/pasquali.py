"""Two-level priorities for claims: deadline, licence and user-class (Pasquali et al.)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, estimate_at
from metasched.policy.claim.fcfs import first_fit

USER_CLASSES = ("regular", "silver", "gold")


class PasqualiClaim(ClaimPolicy):
    """Hands over ready jobs by decreasing priority = user class + deadline urgency + licence pressure, first fit.

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
        gold: float = 2.0,
        silver: float = 1.0,
        regular: float = 0.0,
        low: float = 0.0,
        high: float = 10.0,
        k: float = 2.0,
        licence_weight: float = 1.0,
    ) -> None:
        if not gold >= silver >= regular >= 0:
            raise ValueError(
                f"user class points must satisfy gold >= silver >= regular >= 0, got {gold, silver, regular}"
            )
        if not high >= low or not k > 0 or licence_weight < 0:
            raise ValueError("deadline needs high >= low and k > 0; licence_weight must be >= 0")
        self.points = {"gold": gold, "silver": silver, "regular": regular}
        self.low, self.high, self.k, self.licence_weight = low, high, k, licence_weight

    def deadline_urgency(self, job: Job, site: str, now: float) -> float:
        deadline = job.attrs.get("deadline")
        est = estimate_at(job, site)
        if deadline is None or est <= 0:
            return self.low
        ext, window = now + est, self.k * est
        t = float(deadline) - window
        if ext <= t or ext > float(deadline):
            return self.low
        return self.low + (self.high - self.low) * (ext - t) / window

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        demand: Counter[str] = Counter()
        for j in ready:
            for name in j.attrs.get("licences") or {}:
                demand[name] += 1
        rho = {
            name: n / free.licences[name] if free.licences.get(name, 0) > 0 else float(n) for name, n in demand.items()
        }
        critical = {name for name, r in rho.items() if r > 1 or free.licences.get(name, 0) <= 0}
        d = max(len(set(rho) - critical), 1)

        def priority(j: Job) -> float:
            cls = str(j.attrs.get("user_class", "regular")).lower()
            if cls not in self.points:
                raise ValueError(f"job {j.job_id}: unknown user class {cls!r} (known: {', '.join(USER_CLASSES)})")
            lic = sum(rho[n] * (d if n in critical else 1) for n in j.attrs.get("licences") or {})
            return self.points[cls] + self.deadline_urgency(j, site, now) + self.licence_weight * lic

        keyed = sorted(ready, key=lambda j: (-priority(j), j.submit_time, j.job_id))
        return first_fit(keyed, free, limit)
