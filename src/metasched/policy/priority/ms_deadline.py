"""The Meta-Scheduler's Deadline heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.job import Job
from metasched.model.qos import margin
from metasched.policy.meta.two_level_base import MsContext, MsHeuristic


class MsDeadline(MsHeuristic):
    """Deadline priority from the margin alone, refined by ``r = margin / estimate``.

    Source: seed 004 (Pasquali et al. 2010) section 4, "Deadline" of the Meta-Scheduler. With
    ``E = E[margin]`` (window mean, handed in ``ctx``), ``minunity = 2E / sum_{k=1..max} 2^k``,
    ``S_0 = 0``, ``S_k = S_{k-1} + minunity * 2^k``: a margin in ``[S_k, S_{k+1})`` gets
    ``delta = max - k`` (``k = 0..max-1``; so ``[0, S_1)`` gets ``max``); a margin ``>= 2E`` (past
    the last interval) gets 0. Then, with ``r = margin / estimate``: if ``r >= 1``,
    ``delta = max(0, delta - floor(r))``; if ``r < 1``, ``w`` is the index with
    ``r in sub_w = [1/2^(w+1), 1/2^w]`` and ``delta = min(max, delta + w)``.

    Choices where the paper is silent: on a shared end point ``r = 1/2^w`` the larger ``w`` wins
    (``w = floor(-log2 r)``); ``r < 1/2^max`` (below the last sub-interval) takes ``w = max - 1``;
    a negative margin (already too late) counts as 0; no ``E[margin]`` yet (first job with a
    deadline) or ``E = 0`` uses the job's own margin as ``E``; a job without deadline gets 0.

    Invariant: ``0 <= delta <= max``; a smaller margin never gets a lower first-stage delta.
    Tie-break: none needed (a function of the job).
    """

    key: ClassVar[str] = "ms-deadline"

    def __init__(self, *, max_priority: int = 4) -> None:
        if max_priority < 1:
            raise ValueError(f"max_priority must be >= 1, got {max_priority}")
        self.max_priority = max_priority

    @property
    def levels(self) -> int:
        return self.max_priority

    def interval_bounds(self, mean_margin: float) -> list[float]:
        """``[S_0, S_1, ..., S_max]`` for ``E[margin] = mean_margin`` (``S_max = 2E``)."""
        top = self.max_priority
        minunity = 2.0 * mean_margin / sum(2**k for k in range(1, top + 1))
        bounds = [0.0]
        for k in range(1, top + 1):
            bounds.append(bounds[-1] + minunity * 2**k)
        bounds[-1] = 2.0 * mean_margin  # exact end point, free of rounding
        return bounds

    def first_stage(self, margin_s: float, mean_margin: float) -> int:
        """``max - k`` for the interval ``[S_k, S_{k+1})`` holding ``margin_s``; 0 beyond ``2E``."""
        bounds = self.interval_bounds(mean_margin)
        m = max(margin_s, 0.0)
        for k in range(self.max_priority):
            if m < bounds[k + 1]:
                return self.max_priority - k
        return 0

    def refine(self, delta: int, margin_s: float, estimate: float) -> int:
        """Apply the ``r_j = margin / estimate`` correction to a first-stage ``delta``."""
        top = self.max_priority
        r = max(margin_s, 0.0) / estimate
        if r >= 1.0:
            return max(0, delta - int(r))
        w = 0
        # Largest w with r <= 1/2^w, capped at max-1 (exact in binary: halving is exact).
        bound = 0.5
        while w < top - 1 and r <= bound:
            w += 1
            bound *= 0.5
        return min(top, delta + w)

    def delta(self, job: Job, ctx: MsContext) -> int:
        m = margin(job)
        if m is None:
            return 0
        mean = ctx.mean_margin if ctx.mean_margin is not None and ctx.mean_margin > 0 else max(m, 0.0)
        if mean <= 0:
            return self.max_priority
        return self.refine(self.first_stage(m, mean), m, job.requested_time)
