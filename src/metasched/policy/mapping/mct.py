"""Minimum completion time (MCT)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper


class Mct(Mapper):
    """MCT: each task, in index order, goes to the machine where it would *finish* first.

    Source: Armstrong et al. 1998; Braun et al., JPDC 61 (2001) section 2 ("MCT", used in
    SmartNet as "fast greedy").

    Invariant: task ``i`` minimises ``avail_j + etc_ij`` given tasks ``0..i-1`` already mapped.
    Tie-break: lowest machine index.
    """

    key: ClassVar[str] = "mct"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        n, _ = etc.shape
        avail = ready.copy()
        assignment = np.empty(n, dtype=np.intp)
        for i in range(n):
            row = avail + etc[i]
            j = int(row.argmin())
            assignment[i] = j
            avail[j] = row[j]
        return assignment
