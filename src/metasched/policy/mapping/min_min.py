"""Min-min."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper, greedy_batch, min_min_by_columns


class MinMin(Mapper):
    """Min-min: repeatedly map the task that can finish earliest, on the machine where it does.

    Source: Ibarra & Kim, JACM 24(2) 1977 (algorithm E); seed 002 section 2.3 ("minmin", the
    SmartNet scheduler of the academic study); Braun et al., JPDC 61 (2001) section 2.

    Invariant: each task goes to a machine minimising its completion time given the tasks mapped
    before it, and the chosen task has the smallest such time among the unmapped ones.
    Tie-break: lowest task index, then lowest machine index.

    ``column_threshold``: up to this many machines the column-heads variant is used
    (:func:`~metasched.policy.mapping.base.min_min_by_columns`), above it the vectorised rounds
    (:func:`~metasched.policy.mapping.base.greedy_batch`); both give the same assignment.
    """

    key: ClassVar[str] = "min-min"

    def __init__(self, *, column_threshold: int = 48) -> None:
        self.column_threshold = column_threshold

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        if etc.shape[1] <= self.column_threshold:
            return min_min_by_columns(etc, ready)
        return greedy_batch(etc, ready, pick_max=False)
