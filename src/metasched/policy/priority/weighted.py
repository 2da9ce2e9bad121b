"""Queue order by a weighted sum of LS heuristics recomputed at every scheduling event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import ClusterOrder, ClusterView, LsHeuristic, LsQueue
from metasched.policy.priority.aging import Aging
from metasched.policy.priority.deadline import LsDeadline
from metasched.policy.priority.licenses import LsLicences
from metasched.policy.priority.wait_min import WaitMinimization


class WeightedHeuristics(ClusterOrder):
    """Priority = sum of the heuristics' (weighted) deltas, recomputed whenever asked.

    Source: seed 004 section 4, Local-Scheduler (Aging + Deadline + Licenses + Wait Minimization,
    after Capannini et al. SC07); section 5 case "LS Heuristics". Each heuristic carries its own
    weight; the default set is the paper's four with their default weights.

    Invariant: a pure function of the view and ``now``. Tie-break: higher priority first, then
    ``(submit_time, job_id)``.
    """

    key: ClassVar[str] = "ls-heuristics"

    def __init__(self, *, heuristics: Sequence[LsHeuristic] | None = None) -> None:
        self.heuristics: tuple[LsHeuristic, ...] = (
            tuple(heuristics) if heuristics is not None else (Aging(), LsDeadline(), LsLicences(), WaitMinimization())
        )

    def priorities(self, queue: LsQueue) -> np.ndarray:
        total = np.zeros(len(queue.submit), dtype=float)
        for h in self.heuristics:
            total += h.deltas(queue)
        return total

    def priority(self, view: ClusterView, now: float) -> np.ndarray:
        if len(view.queue) == 0:
            return np.zeros(0)
        return self.priorities(LsQueue.from_view(view, now))
