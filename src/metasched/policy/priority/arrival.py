"""Arrival order of one cluster's queue (the FCFS of the two-level scheduler)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import ClusterOrder, ClusterView


class ArrivalOrder(ClusterOrder):
    """Earlier ``submit_time`` first, then smaller ``job_id``: FCFS (seed 004's "No Heuristics").

    Invariant: never reorders jobs of distinct arrival; sorted, so the result does not depend on
    the order of ``view.queue``. Tie-break: ``job_id``.
    """

    key: ClassVar[str] = "arrival"

    def order(self, view: ClusterView, now: float) -> np.ndarray:
        cols = view.queue
        return np.lexsort((cols.job_id, cols.submit))
