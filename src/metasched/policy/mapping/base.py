"""The mapper contract: independent tasks onto heterogeneous machines, from an ETC matrix.

A :class:`Mapper` gets the expected-time-to-compute matrix (tasks x machines, ``inf`` where a
task cannot run) and the machines' ready times, and returns an *assignment*: one machine index per
task. Machines run their tasks one after the other, so the assignment fixes every machine's finish
time (``metasched.model.etc.finish_times``) and the makespan.

Mappers are pure. Search heuristics (:class:`SearchMapper`) get their time budget *and* the clock
that measures it from the caller (``clock: Callable[[], float]``, e.g. ``time.perf_counter`` in a
benchmark, a fake in a test), a seed or ``numpy.random.Generator``, and an iteration cap. Given a
seed and a number of iterations their result is deterministic; the clock only decides when to stop.

Every mapper's invariant: each task goes to a machine where its ETC entry is finite.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from metasched.model.dag import DagJob, DagSchedule, Platform
from metasched.model.etc import FloatArray, IntArray, check_etc, finish_times

Clock = Callable[[], float]


class Mapper(ABC):
    """Maps a batch of independent tasks onto machines; ``map`` is the one decision method."""

    key: ClassVar[str]

    @abstractmethod
    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        """One machine index per task (row of ``etc``), given machine ready times ``ready``."""

    def __call__(self, etc: object, ready: object | None = None) -> IntArray:
        """Validate the inputs, then :meth:`map` (``ready`` defaults to all-idle machines)."""
        times, avail = check_etc(etc, ready)
        return self.map(times, avail)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What a search heuristic found and how hard it looked."""

    assignment: IntArray
    makespan: float
    iterations: int
    initial_makespan: float


def outcome(etc: FloatArray, ready: FloatArray, assignment: IntArray, iterations: int, initial: float) -> SearchOutcome:
    """A :class:`SearchOutcome` whose makespan is recomputed from scratch (no drift of incremental sums)."""
    return SearchOutcome(assignment, float(finish_times(etc, ready, assignment).max()), iterations, initial)


def as_generator(seed: int | np.random.Generator) -> np.random.Generator:
    """A Generator: a fresh one from an int seed (so each call repeats), or the caller's own."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


class SearchMapper(Mapper):
    """Base of the search heuristics: a start mapper, then improve until a cap is reached.

    Stops at ``max_iterations`` or when ``clock() - start >= time_budget_s`` (only if a clock is
    given), whichever comes first. With an int ``seed`` every call draws from a fresh generator,
    so repeated calls with the same inputs and iteration cap give identical assignments.
    """

    def __init__(
        self,
        *,
        time_budget_s: float = 1.0,
        clock: Clock | None = None,
        seed: int | np.random.Generator = 0,
        max_iterations: int = 10_000,
        start: Mapper | None = None,
    ) -> None:
        if time_budget_s < 0 or max_iterations < 0:
            raise ValueError("time_budget_s and max_iterations must be non-negative")
        self.time_budget_s = time_budget_s
        self.clock = clock
        self.seed = seed
        self.max_iterations = max_iterations
        self.start = start

    def start_assignment(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        """The start point: ``start`` if given, else Min-min (what Braun et al. seed with)."""
        if self.start is not None:
            return self.start.map(etc, ready)
        from metasched.policy.mapping.min_min import MinMin

        return MinMin().map(etc, ready)

    def deadline_reached(self, t0: float) -> bool:
        return self.clock is not None and self.clock() - t0 >= self.time_budget_s

    def now(self) -> float:
        return self.clock() if self.clock is not None else 0.0

    @abstractmethod
    def search(self, etc: FloatArray, ready: FloatArray) -> SearchOutcome:
        """Run the search; :meth:`map` returns its assignment."""

    def map(self, etc: FloatArray, ready: FloatArray) -> IntArray:
        return self.search(etc, ready).assignment

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(time_budget_s={self.time_budget_s}, max_iterations={self.max_iterations}, "
            f"seed={self.seed!r})"
        )


def greedy_batch(etc: FloatArray, ready: FloatArray, *, pick_max: bool) -> IntArray:
    """Min-min (``pick_max=False``) or Max-min (``pick_max=True``), Ibarra & Kim's algorithms E and D.

    Each round, every unassigned task's minimum completion time ``min_j (avail_j + etc_ij)`` is
    known; the task with the smallest (Min-min) or largest (Max-min) such time goes to its
    minimising machine. Only tasks whose best machine is the one just loaded can change their
    minimum (other machines' availability is unchanged and the loaded one got later), so only
    they are recomputed: O(n m) per round in the worst case, O(n^2 + n m) typically.
    Ties: the lowest task index, then the lowest machine index (``argmin``/``argmax`` take the first).
    """
    n, _m = etc.shape
    avail = ready.copy()
    comp = etc + avail
    best_mach = comp.argmin(axis=1)
    best_val = comp[np.arange(n), best_mach]
    assignment = np.empty(n, dtype=np.intp)
    done = -np.inf if pick_max else np.inf
    pick = best_val.argmax if pick_max else best_val.argmin
    for _ in range(n):
        i = int(pick())
        j = best_mach[i]
        assignment[i] = j
        avail[j] = best_val[i]
        best_val[i] = done
        best_mach[i] = -1
        rows = np.flatnonzero(best_mach == j)
        if rows.size:
            c = etc[rows] + avail
            k = c.argmin(axis=1)
            best_mach[rows] = k
            best_val[rows] = c[np.arange(rows.size), k]
    return assignment


def min_min_rounds(etc: FloatArray, ready: FloatArray) -> Iterator[tuple[int, int]]:
    """Min-min's rounds, in order, as ``(task, machine)``: "repeatedly take the globally smallest
    ``avail_j + etc_ij``", for few machines.

    Min-min's choice is the global minimum of the completion matrix (its row minimum is then the
    task's own best machine). Each machine's column is sorted once by ETC (stable: lowest task
    first among equals), so its best unassigned task is the head of its column; a round compares
    the ``m`` heads and advances the heads past assigned tasks. Ties: lowest task, then lowest
    machine. Each round depends only on the rounds before it, so a caller may stop early and still
    has exactly the full mapping's first rounds. O(m n log n) for the sort plus O(n m) for the
    rounds, in plain Python loops over ``m``: for ``m`` up to a few dozen this beats the per-round
    NumPy call overhead of :func:`greedy_batch` by 4-5x.
    """
    n, m = etc.shape
    order = np.argsort(etc, axis=0, kind="stable")
    sorted_vals = np.take_along_axis(etc, order, axis=0)
    inf = float("inf")
    ords = [[*order[:, j].tolist(), n] for j in range(m)]
    vals = [[*sorted_vals[:, j].tolist(), inf] for j in range(m)]
    avail = ready.tolist()
    assigned = [False] * (n + 1)
    ptr = [0] * m
    machines = range(m)
    for _ in range(n):
        best, bi, bj = inf, n, 0
        for j in machines:
            p = ptr[j]
            v = avail[j] + vals[j][p]
            if v < best or (v == best and ords[j][p] < bi):
                best, bi, bj = v, ords[j][p], j
        yield bi, bj
        avail[bj] = best
        assigned[bi] = True
        for j in machines:
            o = ords[j]
            p = ptr[j]
            while assigned[o[p]]:
                p += 1
            ptr[j] = p


def min_min_by_columns(etc: FloatArray, ready: FloatArray) -> IntArray:
    """Min-min through :func:`min_min_rounds`; same ties and result as :func:`greedy_batch`."""
    assignment = np.zeros(etc.shape[0], dtype=np.intp)
    for task, machine in min_min_rounds(etc, ready):
        assignment[task] = machine
    return assignment


class DagScheduler(ABC):
    """Schedules one job's dependent tasks (a :class:`~metasched.model.dag.DagJob`) on a platform.

    ``schedule`` returns where and when every task runs, computed by a deterministic execution
    simulation on the estimated times (seed 002 section 2.3: SmartNet's algorithms "perform a
    deterministic simulation of each task assuming the task execution times are equal to their
    estimated average values"). ``actual`` (same shape as ``job.etc``), when given, is the time
    the tasks really take: rescheduling decisions then react to actual completions while mapping
    still uses the estimates.
    """

    key: ClassVar[str]

    @abstractmethod
    def schedule(
        self, job: DagJob, platform: Platform, ready: FloatArray | None = None, actual: FloatArray | None = None
    ) -> DagSchedule:
        """Machine, start and finish of every task."""
