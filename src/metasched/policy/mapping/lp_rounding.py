"""LP relaxation and rounding for makespan on unrelated machines (R||Cmax)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Mapper
from metasched.policy.mapping.min_min import MinMin


def lp_relaxation(etc: FloatArray, ready: FloatArray) -> tuple[float, FloatArray]:
    """Optimal value and solution ``x`` (tasks x machines) of the LP relaxation.

    minimise T subject to ``sum_j x_ij = 1`` (every task fully placed), ``ready_j + sum_i etc_ij
    x_ij <= T`` (every machine), ``x >= 0``, ``x_ij = 0`` where ``etc_ij`` is inf. T is a lower bound
    on every assignment's makespan (an assignment is a 0/1 ``x``). Solved with SciPy's HiGHS.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n, m = etc.shape
    finite = np.isfinite(etc)
    ti, mj = np.nonzero(finite)
    nv = ti.size
    cost = np.zeros(nv + 1)
    cost[-1] = 1.0
    cols = np.arange(nv)
    a_eq = coo_matrix((np.ones(nv), (ti, cols)), shape=(n, nv + 1))
    a_ub = coo_matrix(
        (np.r_[etc[ti, mj], -np.ones(m)], (np.r_[mj, np.arange(m)], np.r_[cols, np.full(m, nv)])),
        shape=(m, nv + 1),
    )
    res = linprog(cost, A_ub=a_ub, b_ub=-ready, A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"LP relaxation failed: {res.message}")
    x = np.zeros((n, m))
    x[ti, mj] = res.x[:nv]
    return float(res.x[-1]), x


class LpRounding(Mapper):
    """Solve the LP relaxation, keep its integral part, map the split tasks with Min-min.

    Source: Lenstra, Shmoys & Tardos, Math. Programming 46 (1990): a basic optimal solution of the
    relaxation splits at most ``m`` tasks, so rounding them costs little when tasks are small
    relative to the makespan (the Braun instances: 512 tasks, 16 machines, at most 16 split).
    Used as the start point of the best search heuristic.

    Invariant: tasks the LP places wholly on one machine stay there; each split task goes, by
    Min-min over the finish times of the integral part, to a machine where it can run.
    Tie-break: Min-min's (lowest task, then machine index); a task is "whole" if ``x_ij > 1 - 1e-9``.
    """

    key: ClassVar[str] = "lp-rounding"

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        _, x = lp_relaxation(etc, ready)
        whole = x.max(axis=1) > 1.0 - 1e-9
        assignment = x.argmax(axis=1)
        _n, m = etc.shape
        loads = ready + np.bincount(
            assignment[whole], weights=etc[np.flatnonzero(whole), assignment[whole]], minlength=m
        )
        split = np.flatnonzero(~whole)
        if split.size:
            assignment[split] = MinMin().map(etc[split], loads)
        return assignment.astype(np.intp)
