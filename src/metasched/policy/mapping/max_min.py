"""Max-min."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper, greedy_batch


class MaxMin(Mapper):
    """Max-min: repeatedly map the task whose earliest completion is *latest*, where it finishes first.

    Source: Ibarra & Kim, JACM 24(2) 1977 (algorithm D); seed 002 section 2.3 ("maxmin", the
    SmartNet scheduler of the production study); Braun et al., JPDC 61 (2001) section 2.

    Invariant: each task goes to a machine minimising its completion time given the tasks mapped
    before it, and the chosen task has the largest such minimum among the unmapped ones.
    Tie-break: lowest task index, then lowest machine index.
    """

    key: ClassVar[str] = "max-min"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        return greedy_batch(etc, ready, pick_max=True)
