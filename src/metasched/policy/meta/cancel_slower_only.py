"""Completion-based reservations that keep the copies at faster sites after a start."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.model.job import Job
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.reservations_base import DENY, CopyOffer, StartDecision, best_completion


class CancelSlowerOnly(CompletionTime):
    """:class:`CompletionTime`, but a start cancels only the copies at slower sites.

    Source: seed 000, end of section 5: "there is still a possibility that future backfilling at
    a faster site might allow a faster completion at the faster site [...] only jobs at slower
    sites were cancelled when a job was started at a site."

    What it changes: when a copy starts, queued copies whose estimate is strictly smaller (faster
    sites) stay queued. If one of them can later start and complete *strictly* earlier than the
    running copy's expected end, the running copy is killed (its processor time is wasted) and the
    job restarts there; otherwise that copy is denied and removed. This kill-and-restart is the
    one exception to "no copy starts after another started".

    Invariant: at most one copy runs at any instant; every restart moves the job to a site with a
    strictly smaller estimate and a strictly earlier expected completion, so a job restarts at
    most ``k - 1`` times. Tie-break: equal completions against queued copies start here; against
    the running copy, the running copy stays.
    """

    key: ClassVar[str] = "cancel-slower-only"

    def decide_start(
        self, job: Job, site: int, estimate: float, others: Sequence[CopyOffer], now: float
    ) -> StartDecision:
        mine = now + estimate
        running = [o for o in others if o.is_running]
        queued = [o for o in others if not o.is_running]
        if any(mine >= o.expected_completion for o in running):
            return DENY
        if mine > best_completion(queued):
            return DENY
        return StartDecision(
            start=True,
            cancel=tuple(o.site for o in queued if o.estimate >= estimate),
            kill=tuple(o.site for o in running),
        )
