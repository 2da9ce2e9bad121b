"""Opportunistic load balancing (OLB)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper


class Olb(Mapper):
    """OLB: each task, in index order, goes to the machine that becomes free first.

    Source: seed 002 section 3.2 (the "load balancing algorithm schedules each task on the machine
    that becomes idle first": it considers availability, ignores heterogeneity); Braun et al.,
    JPDC 61 (2001) section 2 ("OLB"). Run on estimated times this is the static schedule; the
    dynamic load balancer of section 3.4 is the same rule run on actual times
    (``metasched.experiments.smartnet1998``).

    Invariant: a task only goes to a machine where it can run (finite ETC), and among those to one
    with the earliest current finish time.
    Tie-break: lowest machine index.
    """

    key: ClassVar[str] = "olb"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        n, _ = etc.shape
        avail = ready.copy()
        blocked = np.where(np.isfinite(etc), 0.0, np.inf)
        assignment = np.empty(n, dtype=np.intp)
        for i in range(n):
            j = int((avail + blocked[i]).argmin())
            assignment[i] = j
            avail[j] += etc[i, j]
        return assignment
