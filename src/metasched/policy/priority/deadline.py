"""The Local Scheduler's Deadline heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import LsHeuristic, LsQueue


class LsDeadline(LsHeuristic):
    """A linear ramp from ``min`` to ``max`` over the last ``k * nxt`` seconds before the deadline.

    Source: seed 004 section 4, "Deadline" of the Local Scheduler. With ``nxt`` the estimate on
    the cluster's most powerful machine, ``ext = now + nxt`` and ``t = deadline - k * nxt``:
    ``delta = min`` if ``ext <= t``; ``a (ext - t) + min`` if ``t < ext <= deadline``, ``a`` the
    slope of the line through ``(t, min)`` and ``(deadline, max)``, i.e. ``(max - min) / (k nxt)``;
    ``min`` if ``ext > deadline`` (already late: no use hurrying it). Jobs without a deadline get
    ``min`` (their deadline is infinitely far). ``min``/``max`` are the heuristic's weight.

    Invariant: ``min <= delta <= max``. Tie-break: none needed.
    """

    key: ClassVar[str] = "ls-deadline"

    def __init__(self, *, low: float = 0.0, high: float = 10.0, k: float = 2.0) -> None:
        if not high >= low:
            raise ValueError(f"deadline max ({high}) must be >= min ({low})")
        if not k > 0:
            raise ValueError(f"deadline constant k must be positive, got {k}")
        self.low = low
        self.high = high
        self.k = k

    def deltas(self, queue: LsQueue) -> np.ndarray:
        # frac = (ext - t) / (k nxt): the position on the ramp; nan (no deadline) fails both tests.
        window = self.k * queue.nxt
        frac = (queue.now + queue.nxt - queue.deadline + window) / window
        with np.errstate(invalid="ignore"):
            on_ramp = (frac > 0.0) & (frac <= 1.0)
        return np.where(on_ramp, self.low + (self.high - self.low) * frac, self.low)
