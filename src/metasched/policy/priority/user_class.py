"""The Meta-Scheduler's User heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.job import Job
from metasched.model.qos import UserClass, qos_of
from metasched.policy.meta.two_level_base import MsContext, MsHeuristic


class UserClassPriority(MsHeuristic):
    """Gold > Silver > Regular: a fixed partial priority per user class.

    Source: seed 004 section 4, "User" ("three classes of users: Gold, Silver, and Regular, to
    which are assigned decreasing priority values"). The values are configuration; defaults
    Gold 2, Silver 1, Regular 0.

    Invariant: ``delta`` is the configured value of the job's class. Tie-break: none needed.
    """

    key: ClassVar[str] = "user-class"

    def __init__(self, *, gold: int = 2, silver: int = 1, regular: int = 0) -> None:
        if not gold >= silver >= regular >= 0:
            raise ValueError(
                f"user class priorities must satisfy gold >= silver >= regular >= 0, got {gold, silver, regular}"
            )
        self.values = {UserClass.GOLD: gold, UserClass.SILVER: silver, UserClass.REGULAR: regular}

    @property
    def levels(self) -> int:
        return self.values[UserClass.GOLD]

    def delta(self, job: Job, ctx: MsContext) -> int:
        return self.values[qos_of(job).user_class]
