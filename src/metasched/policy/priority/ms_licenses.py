"""The Meta-Scheduler's Licences heuristic of seed 004."""

from __future__ import annotations

import math
from typing import ClassVar

from metasched.model.job import Job
from metasched.model.qos import qos_of
from metasched.policy.meta.two_level_base import MsContext, MsHeuristic


class MsLicences(MsHeuristic):
    """More licences requested, higher priority: ``[0, |L|]`` cut into ``max`` equal parts.

    Source: seed 004 section 4, "Licenses" of the Meta-Scheduler. A job asking for ``n`` licences
    gets the index of the sub-interval holding ``n``: with width ``|L| / max``, ``delta =
    ceil(n / width)`` clipped to ``max`` (so 0 licences -> 0, and every licence-using job gets at
    least 1). The paper says the first sub-interval is "the lowest priority value" without saying
    whether it is 0 or 1, nor which side of a shared end point wins; we take the right-closed
    reading ``(i-1)w < n <= i w -> i``, which keeps 0 for jobs without licences.

    Invariant: ``0 <= delta <= max``, non-decreasing in ``n``. Tie-break: none needed.
    """

    key: ClassVar[str] = "ms-licences"

    def __init__(self, *, max_priority: int = 3) -> None:
        if max_priority < 1:
            raise ValueError(f"max_priority must be >= 1, got {max_priority}")
        self.max_priority = max_priority

    @property
    def levels(self) -> int:
        return self.max_priority

    def delta(self, job: Job, ctx: MsContext) -> int:
        n = qos_of(job).n_licences
        if n == 0 or ctx.n_licence_types == 0:
            return 0
        # ceil(n * max / |L|) in integers: no float rounding at the end points.
        return min(self.max_priority, math.ceil(n * self.max_priority / ctx.n_licence_types))
