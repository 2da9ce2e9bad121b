"""MR-K: multiple simultaneous reservations, start-based (Greedy-MR)."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.meta.base import CopySites
from metasched.policy.meta.reservations_base import MetaScheduler, Selection


class KReservations(MetaScheduler):
    """Send each job to ``k`` sites; the first site able to start it runs it, the others cancel.

    Source: seed 000, section 4 (the MR scheme of Subramani et al., HPDC 2002, applied to
    heterogeneous sites) and section 7 (restricting to ``k`` sites, chosen by instantaneous load
    or by the earliest completion each site reports for the job).

    Invariant: a job starts at exactly one site, at the first instant any of its sites' local
    schedulers starts it; every other copy is cancelled in the same atomic step.
    Tie-break: sites by (load or expected completion, index); two sites able to start the job at
    the same instant: the lower index (sites are scheduled in index order).
    """

    key: ClassVar[str] = "k-reservations"

    def __init__(self, *, k: int = 4, selection: Selection = "load") -> None:
        super().__init__(k=k, selection=selection)

    def place(self, question: CopySites) -> list[int]:
        return self.choose(question.views)
