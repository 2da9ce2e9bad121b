"""Duplex."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.etc import FloatArray, IntArray, makespan
from metasched.policy.mapping.base import Mapper
from metasched.policy.mapping.max_min import MaxMin
from metasched.policy.mapping.min_min import MinMin


class Duplex(Mapper):
    """Duplex: run Min-min and Max-min, keep the schedule with the shorter makespan.

    Source: Braun et al., JPDC 61 (2001) section 2.

    Invariant: makespan = min(makespan(Min-min), makespan(Max-min)).
    Tie-break: Min-min's schedule on equal makespans.
    """

    key: ClassVar[str] = "duplex"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        a = MinMin().map(etc, ready)
        b = MaxMin().map(etc, ready)
        return b if makespan(etc, ready, b) < makespan(etc, ready, a) else a
