"""Sufferage."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper


class Sufferage(Mapper):
    """Sufferage: the task that would suffer most from not getting its best machine gets it.

    Source: Maheswaran et al., JPDC 59 (1999); Braun et al., JPDC 61 (2001) section 2.
    A task's *sufferage* is its second-best minus its best completion time (``inf`` when it can
    run on one machine only). The algorithm works in passes; in each pass every unmapped task, in
    index order, claims its best machine (completion times from the machine availabilities at the
    start of the pass) and takes it from the current claimant only if its sufferage is strictly
    larger; at the end of the pass the winners are mapped and availabilities updated. The pass is
    vectorised: a machine's winner is the first task (lowest index) of maximal sufferage among
    those whose best machine it is, exactly what the sequential scan yields.

    Invariant: each pass maps at least one task, each to its best machine at the start of the pass.
    Tie-break: lowest machine index for a task's best machine; lowest task index among equal
    sufferages.
    """

    key: ClassVar[str] = "sufferage"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        n, m = etc.shape
        avail = ready.copy()
        assignment = np.full(n, -1, dtype=np.intp)
        left = np.arange(n)
        while left.size:
            comp = etc[left] + avail
            best = comp.argmin(axis=1)
            rows = np.arange(left.size)
            best_val = comp[rows, best]
            if m > 1:
                comp[rows, best] = np.inf
                second = comp.min(axis=1)
                with np.errstate(invalid="ignore"):
                    suff = second - best_val
            else:
                suff = np.zeros(left.size)
            # Winner per machine: lexsort by (machine, -sufferage, position); first of each machine.
            order = np.lexsort((rows, -suff, best))
            first = np.ones(order.size, dtype=bool)
            first[1:] = best[order[1:]] != best[order[:-1]]
            win = order[first]
            machines = best[win]
            assignment[left[win]] = machines
            avail[machines] = best_val[win]
            keep = np.ones(left.size, dtype=bool)
            keep[win] = False
            left = left[keep]
        return assignment
