"""Multi-site co-allocation."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.meta.base import Allocation, MachineSelector, StartNow
from metasched.policy.meta.best_fit import BestFit


class MultiSite(MachineSelector):
    """One machine if any can take the whole job now, else the job split over several machines.

    Source: seed 001 section 3.3: the scheduler "first tries to find a site that has enough free
    resources for starting the job. If such a machine is not available, the scheduler tries to
    allocate the jobs on resources from different sites. To this end the sites are sorted in the
    descending order of free resources and allocating the free resources in this order for a
    multi-site job. In this case the number of combined sites is minimized."

    Rule: if some machine has ``free[m] >= procs``, the job goes there whole, chosen by
    :class:`BestFit` (the paper does not say which such machine; BestFit keeps the job-sharing
    choice). Otherwise machines are taken in descending order of ``free`` (ties: lower index
    first), each giving all its free processors, the last one only the remainder; machines with
    nothing free are never used. ``max_parts`` (default unlimited) bounds the number of machines.

    Invariant: the parts sum to ``procs``, each part ``<= free[m]``; taking the largest free
    counts first uses the fewest machines any split could use. ``None`` exactly when the free
    processors of the ``max_parts`` freest machines sum to less than ``procs``.
    Tie-break: BestFit's for one machine; lower machine index among equal free counts.
    """

    key: ClassVar[str] = "multisite"
    may_split: ClassVar[bool] = True

    def __init__(self, *, max_parts: int | None = None) -> None:
        if max_parts is not None and max_parts < 1:
            raise ValueError(f"max_parts must be at least 1, got {max_parts}")
        self.max_parts = max_parts
        self._whole = BestFit()

    def place(self, question: StartNow) -> Allocation | None:
        whole = self._whole.place(question)
        if whole is not None:
            return whole
        procs, free = question.procs, question.free
        if procs > sum(free):
            return None
        order = sorted(range(len(free)), key=lambda m: (-free[m], m))
        parts: list[tuple[int, int]] = []
        need = procs
        for m in order:
            if self.max_parts is not None and len(parts) >= self.max_parts:
                return None
            take = free[m] if free[m] < need else need
            parts.append((m, take))
            need -= take
            if need == 0:
                return tuple(parts)
        raise AssertionError("unreachable: the free processors sum to at least procs")

    def __repr__(self) -> str:
        return f"MultiSite(max_parts={self.max_parts!r})"
