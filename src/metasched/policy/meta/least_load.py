"""Greedy meta-scheduling: each job to the least-loaded site."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.meta.base import CopySites
from metasched.policy.meta.reservations_base import MetaScheduler


class LeastLoad(MetaScheduler):
    """Greedy: send each job, in arrival order, to the site of lowest instantaneous load.

    Source: seed 000, section 4 ("simple greedy scheduling scheme"). The instantaneous load of a
    site is the remaining processor-runtime product of its queued and running jobs divided by its
    processors (:attr:`MetaSiteView.load_s`); it is known to the meta-scheduler without querying.

    Invariant: exactly ``k`` (default 1) copies, on the ``k`` least-loaded sites; with one copy the
    start decision is trivial (no messages). Tie-break: the lower site index.
    """

    key: ClassVar[str] = "least-load"

    def __init__(self, *, k: int = 1) -> None:
        super().__init__(k=k, selection="load")

    def place(self, question: CopySites) -> list[int]:
        return self.choose(question.views)
