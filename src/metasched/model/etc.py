"""Expected-time-to-compute (ETC) model: independent tasks on heterogeneous machines.

An ETC matrix has one row per task and one column per machine; ``etc[i, j]`` is the expected
run time (seconds) of task ``i`` on machine ``j`` when it has the machine to itself, and
``inf`` where task ``i`` cannot run on machine ``j`` (SmartNet's "NA", seed 002 Table 2).
``ready[j]`` is the instant machine ``j`` becomes free of earlier work (0 for an idle machine).

An *assignment* is an integer array of length ``n_tasks`` giving each task's machine. Machines
run their tasks one at a time (single programming, seed 002 section 3.1), so the finish time of
machine ``j`` is ``ready[j]`` plus the sum of its tasks' ETC entries, and the *makespan*
(SmartNet's "schedule length") is the largest finish time.

Source: Freund et al., "Scheduling resources in multi-user, heterogeneous, computing
environments with SmartNet" (1998), seed 002 sections 2-3; Braun et al., JPDC 61 (2001).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


def check_etc(etc: object, ready: object | None = None) -> tuple[FloatArray, FloatArray]:
    """Validated ``(etc, ready)`` as float64 arrays; ``ready`` defaults to zeros.

    Raises ``ValueError`` naming what is wrong: not 2-D, empty, NaN, negative entries, a task that
    can run nowhere (a row of ``inf``), or ready times of the wrong shape / not finite / negative.
    """
    times = np.asarray(etc, dtype=np.float64)
    if times.ndim != 2:
        raise ValueError(f"ETC matrix must be 2-D (tasks x machines), got shape {times.shape}")
    n, m = times.shape
    if n == 0 or m == 0:
        raise ValueError(f"ETC matrix must have at least one task and one machine, got shape {times.shape}")
    if np.isnan(times).any():
        raise ValueError("ETC matrix contains NaN; use inf for 'cannot run there'")
    if (times < 0).any():
        i, j = np.argwhere(times < 0)[0]
        raise ValueError(f"ETC matrix has a negative entry at task {i}, machine {j}: {times[i, j]}")
    nowhere = ~np.isfinite(times).any(axis=1)
    if nowhere.any():
        raise ValueError(f"task {int(np.flatnonzero(nowhere)[0])} cannot run on any machine (its row is all inf)")
    if ready is None:
        avail = np.zeros(m)
    else:
        avail = np.asarray(ready, dtype=np.float64)
        if avail.shape != (m,):
            raise ValueError(f"ready times must have one entry per machine ({m}), got shape {avail.shape}")
        if not np.isfinite(avail).all() or (avail < 0).any():
            raise ValueError("ready times must be finite and non-negative")
    return times, avail


def check_assignment(etc: FloatArray, assignment: object) -> IntArray:
    """``assignment`` as an int array after checking every task has a machine where it can run."""
    a = np.asarray(assignment)
    n, m = etc.shape
    if a.shape != (n,):
        raise ValueError(f"assignment must have one machine per task ({n}), got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"assignment must hold machine indices (integers), got dtype {a.dtype}")
    if n and (a.min() < 0 or a.max() >= m):
        raise ValueError(f"assignment holds a machine index outside 0..{m - 1}")
    a = a.astype(np.intp, copy=False)
    bad = ~np.isfinite(etc[np.arange(n), a])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"task {i} is assigned to machine {int(a[i])}, where it cannot run (inf)")
    return a


def finish_times(etc: FloatArray, ready: FloatArray, assignment: IntArray) -> FloatArray:
    """Finish time of every machine: its ready time plus the ETC of the tasks assigned to it."""
    n, m = etc.shape
    return ready + np.bincount(assignment, weights=etc[np.arange(n), assignment], minlength=m)


def makespan(etc: FloatArray, ready: FloatArray, assignment: IntArray) -> float:
    """The schedule length: the latest machine finish time."""
    return float(finish_times(etc, ready, assignment).max())


def lower_bound(etc: FloatArray, ready: FloatArray) -> float:
    """A bound no assignment beats.

    The larger of (a) the latest "best possible" finish of a single task,
    ``max_i min_j (ready_j + etc_ij)``, and (b) the perfectly balanced finish,
    ``(sum_j ready_j + sum_i min_j etc_ij) / m`` (every task at its fastest speed, work spread evenly).
    (b) is valid because ``sum_j finish_j = sum_j ready_j + sum_i etc_{i,a(i)} >= sum ready + sum_i min_j etc_ij``
    and the makespan is at least the mean finish time.
    """
    single = float((etc + ready).min(axis=1).max())
    balanced = float((ready.sum() + etc.min(axis=1).sum()) / etc.shape[1])
    return max(single, balanced)


@dataclass(frozen=True)
class EtcInstance:
    """An ETC matrix, machine ready times and a name, validated at construction.

    ``task_kinds`` and ``machine_kinds`` optionally record what each row / column was drawn from
    (e.g. the NAS job and machine of a SmartNet production problem); they do not affect mapping.
    """

    etc: FloatArray
    ready: FloatArray = field(default_factory=lambda: np.zeros(0))
    name: str = ""
    task_kinds: tuple[str, ...] = ()
    machine_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        times, avail = check_etc(self.etc, self.ready if np.size(self.ready) else None)
        object.__setattr__(self, "etc", times)
        object.__setattr__(self, "ready", avail)
        if self.task_kinds and len(self.task_kinds) != times.shape[0]:
            raise ValueError("task_kinds must name every task")
        if self.machine_kinds and len(self.machine_kinds) != times.shape[1]:
            raise ValueError("machine_kinds must name every machine")

    @property
    def n_tasks(self) -> int:
        return int(self.etc.shape[0])

    @property
    def n_machines(self) -> int:
        return int(self.etc.shape[1])

    def finish_times(self, assignment: object) -> FloatArray:
        return finish_times(self.etc, self.ready, check_assignment(self.etc, assignment))

    def makespan(self, assignment: object) -> float:
        return float(self.finish_times(assignment).max())

    def lower_bound(self) -> float:
        return lower_bound(self.etc, self.ready)
