"""Minimum execution time (MET), SmartNet's "user directed assignment"."""

from __future__ import annotations

from typing import ClassVar

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper


class Met(Mapper):
    """MET: every task goes to the machine that runs it fastest, whatever that machine's load.

    Source: seed 002 section 3.2 (the "user directed assignment algorithm schedules each task on
    the machine that executes it fastest": it considers heterogeneity, ignores availability);
    Braun et al., JPDC 61 (2001) section 2 ("MET", also "UDA").

    Invariant: ``etc[i, a[i]] == min_j etc[i, j]`` for every task.
    Tie-break: lowest machine index.
    """

    key: ClassVar[str] = "met"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        return etc.argmin(axis=1)
