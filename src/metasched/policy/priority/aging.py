"""The Local Scheduler's Aging heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import LsHeuristic, LsQueue


class Aging(LsHeuristic):
    """``delta = W_A * (wallclock - submit)``: the longer queued, the higher (against starvation).

    Source: seed 004 section 4, "Aging" of the Local Scheduler (after Capannini et al. SC07).
    Invariant: non-decreasing in queued time, 0 at submission. Tie-break: none needed.
    """

    key: ClassVar[str] = "aging"

    def __init__(self, *, weight: float = 1e-3) -> None:
        if weight < 0:
            raise ValueError(f"aging weight must be >= 0, got {weight}")
        self.weight = weight

    def deltas(self, queue: LsQueue) -> np.ndarray:
        return self.weight * (queue.now - queue.submit)
