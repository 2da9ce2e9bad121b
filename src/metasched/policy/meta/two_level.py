"""The Meta-Scheduler of seed 004: priority by MS heuristics, dispatch by Load then Ordering."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.meta.base import Dispatch
from metasched.policy.meta.two_level_base import MsContext, MsHeuristic, TwoLevelDispatcher


class LoadOrdering(TwoLevelDispatcher):
    """Sum of MS heuristics as priority; cluster by *Load*, ties by *Ordering*, then at random.

    Source: seed 004 (Pasquali et al. 2010) section 4, Meta-Scheduler. The priority ``P`` is the
    sum of the heuristics' deltas (``0..sum of levels``). *Load*: each cluster's array position
    ``P`` holds the load (estimate x estimating benchmark) of its queued jobs of priority >= ``P``;
    the first cluster (in ``eligible`` order) with 0 there is idle for this job and gets it;
    otherwise the clusters with the lowest value tie. *Ordering*: among those, the lowest count of
    queued jobs of priority >= ``P``. Remaining ties: uniform choice with the caller's ``rng``.
    With no heuristics every job has priority 0: Load is then the least queued load (the
    section-5 "No Heuristics" MS).

    Invariant: returns a member of ``eligible``; deterministic given ``rng``'s state.
    Tie-break: first idle cluster, then Load, then Ordering, then ``rng``.
    """

    key: ClassVar[str] = "load-ordering"

    def __init__(self, *, heuristics: Sequence[MsHeuristic] | None = None) -> None:
        if heuristics is None:
            from metasched.policy.priority.ms_deadline import MsDeadline
            from metasched.policy.priority.ms_licenses import MsLicences
            from metasched.policy.priority.user_class import UserClassPriority

            heuristics = (MsDeadline(), MsLicences(), UserClassPriority())
        self.heuristics: tuple[MsHeuristic, ...] = tuple(heuristics)

    @property
    def n_priorities(self) -> int:
        return sum(h.levels for h in self.heuristics) + 1

    def classify(self, job: Job, ctx: MsContext) -> int:
        return sum(h.delta(job, ctx) for h in self.heuristics)

    def place(self, question: Dispatch) -> int:
        priority, backlogs, eligible, rng = question.priority, question.backlogs, question.eligible, question.rng
        if not eligible:
            raise ValueError("no eligible cluster for the job")
        if not 0 <= priority < self.n_priorities:
            raise ValueError(f"priority {priority} outside 0..{self.n_priorities - 1}")
        counts = [backlogs[c].count_at_or_above(priority) for c in eligible]
        for c, n in zip(eligible, counts, strict=True):
            if n == 0:
                return c
        loads = [backlogs[c].load_at_or_above(priority) for c in eligible]
        low = min(loads)
        tied = [i for i, v in enumerate(loads) if v == low]
        if len(tied) > 1:
            fewest = min(counts[i] for i in tied)
            tied = [i for i in tied if counts[i] == fewest]
        if len(tied) == 1:
            return eligible[tied[0]]
        return eligible[tied[int(rng.integers(len(tied)))]]
