"""Completion-based multiple reservations (the conservative scheme of section 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.meta.base import CopySites
from metasched.policy.meta.reservations_base import (
    DENY,
    CopyOffer,
    MetaScheduler,
    Selection,
    StartDecision,
    best_completion,
)


class CompletionTime(MetaScheduler):
    """``k`` copies; a copy starts only if no other copy is expected to complete earlier.

    Source: seed 000, section 5: "When a job is about to start at a site, the scheduler has to
    check the expected completion time of the same job at all sites where the job is scheduled,
    and determine if some other site has a better completion time. If [so], the job is not run and
    is removed from the queue at this site." Expected completions come from the other sites'
    reservations, so the local schedulers should be conservative backfilling (with EASY, non-head
    copies have no reservation and count as never completing). Sites are chosen as in
    :class:`~metasched.policy.meta.k_reservations.KReservations`.

    Invariant: a copy starting at ``now`` completes (by estimate) no later than any other copy's
    current reservation would; the copy it beats are cancelled atomically, so the job runs once.
    A denied copy always leaves a copy with an earlier expected completion, so a job is never
    left without a copy. Tie-break: equal completions start here (the site asking first).
    """

    key: ClassVar[str] = "completion-time"
    is_completion_based: ClassVar[bool] = True

    def __init__(self, *, k: int = 4, selection: Selection = "load") -> None:
        super().__init__(k=k, selection=selection)

    def place(self, question: CopySites) -> list[int]:
        return self.choose(question.views)

    def decide_start(
        self, job: Job, site: int, estimate: float, others: Sequence[CopyOffer], now: float
    ) -> StartDecision:
        if any(o.is_running for o in others):
            return DENY
        if now + estimate <= best_completion(others):
            return StartDecision(start=True, cancel=tuple(o.site for o in others))
        return DENY
