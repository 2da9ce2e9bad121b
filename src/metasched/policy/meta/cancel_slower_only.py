"""Completion-based reservations that keep the copies at faster sites after a start."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from metasched.model.job import Job
from metasched.policy.meta.completion_time import CompletionTime
from metasched.policy.meta.reservations_base import DENY, CopyOffer, Selection, StartDecision, best_completion

Variant = Literal["restart", "no-kill"]
#: The readings of seed 000's refinement this class implements (see :class:`CancelSlowerOnly`).
VARIANTS: tuple[str, ...] = ("restart", "no-kill")


class CancelSlowerOnly(CompletionTime):
    """:class:`CompletionTime`, but a start cancels only the copies at slower sites.

    Source: seed 000, end of section 5: "there is still a possibility that future backfilling at
    a faster site might allow a faster completion at the faster site [...] only jobs at slower
    sites were cancelled when a job was started at a site."

    What it changes: when a copy starts, queued copies whose estimate is strictly smaller (faster
    sites) stay queued. The text does not say what a kept copy does once it can start while the
    job runs elsewhere; ``variant`` names the reading:

    * ``restart`` (default): if the kept copy can complete *strictly* earlier than the running
      copy's expected end, the running copy is killed (its processor time is wasted) and the job
      restarts there ("a faster completion at the faster site"); otherwise it is denied and
      removed. This kill-and-restart is the one exception to "no copy starts after another started".
    * ``no-kill``: a job runs at one site only, as in every other scheme of the paper (section 4:
      the cancellation "must be atomic to ensure that the job is only executed at one site"), so
      a kept copy never kills the running one: it is denied when it comes to start. Kept copies
      change the schedule only through the reservations they hold and release (the "holes created
      by the dynamic removal of replicated jobs" section 5 credits for conservative's gain).

    Invariant: at most one copy runs at any instant; under ``restart`` every restart moves the job
    to a site with a strictly smaller estimate and a strictly earlier expected completion, so a
    job restarts at most ``k - 1`` times; under ``no-kill`` a job never restarts. Tie-break: equal
    completions against queued copies start here; against the running copy, the running copy stays.
    """

    key: ClassVar[str] = "cancel-slower-only"

    def __init__(self, *, k: int = 4, selection: Selection = "load", variant: Variant = "restart") -> None:
        super().__init__(k=k, selection=selection)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        self.variant: Variant = variant

    def decide_start(
        self, job: Job, site: int, estimate: float, others: Sequence[CopyOffer], now: float
    ) -> StartDecision:
        mine = now + estimate
        running = [o for o in others if o.is_running]
        queued = [o for o in others if not o.is_running]
        if running and self.variant == "no-kill":
            return DENY
        if any(mine >= o.expected_completion for o in running):
            return DENY
        if mine > best_completion(queued):
            return DENY
        return StartDecision(
            start=True,
            cancel=tuple(o.site for o in queued if o.estimate >= estimate),
            kill=tuple(o.site for o in running),
        )
