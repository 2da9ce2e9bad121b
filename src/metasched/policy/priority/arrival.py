"""Arrival order of one cluster's queue (the FCFS of the two-level scheduler)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import ClusterOrder, ClusterView


class ArrivalOrder(ClusterOrder):
    """Earlier ``submit_time`` first, then smaller ``job_id``: FCFS (seed 004's "No Heuristics").

    Invariant: never reorders the queue (rows of :class:`QueueColumns` are in arrival order).
    """

    key: ClassVar[str] = "arrival"

    def priority(self, view: ClusterView, now: float) -> np.ndarray:
        # Equal priorities: the order is the rows' arrival order.
        return np.zeros(len(view.queue))
