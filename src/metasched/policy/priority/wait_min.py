"""The Local Scheduler's Wait Minimization heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import LsHeuristic, LsQueue


class WaitMinimization(LsHeuristic):
    """Shorter jobs first: ``W_WM * minext / estimated`` over the cluster's queue.

    Source: seed 004 section 4, "Wait Minimization". ``estimated`` is the job's estimate on the
    cluster's most powerful machine (``nxt``, so estimates made on different machines compare;
    the paper writes ``estimated_j``); ``minext`` its minimum over the queue.

    Invariant: in ``(0, W_WM]``, ``W_WM`` for the shortest queued job. Tie-break: none needed.
    """

    key: ClassVar[str] = "wait-min"

    def __init__(self, *, weight: float = 2.0) -> None:
        if weight < 0:
            raise ValueError(f"wait minimization weight must be >= 0, got {weight}")
        self.weight = weight

    def deltas(self, queue: LsQueue) -> np.ndarray:
        if len(queue.nxt) == 0:
            return np.zeros(0, dtype=float)
        return self.weight * (queue.nxt.min() / queue.nxt)
