"""Queue order by the priority the Meta-Scheduler gave at dispatch."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import ClusterOrder, ClusterView


class MsPriorityOrder(ClusterOrder):
    """Higher MS priority first, never recomputed (seed 004 section 5, case "MS Heuristics").

    Invariant: among equal MS priorities, FCFS. Tie-break: ``(submit_time, job_id)``.
    """

    key: ClassVar[str] = "ms-priority"

    def priority(self, view: ClusterView, now: float) -> np.ndarray:
        return view.queue.priority.astype(float)
