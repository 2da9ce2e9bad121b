"""Contracts of the two-level scheduler of seed 004 (Pasquali et al. 2010): MS and LS families.

A *Meta-Scheduler* (MS) classifies each job once, at submission, with :class:`MsHeuristic`
partial priorities, then dispatches it to a cluster with a :class:`TwoLevelDispatcher` from the
clusters' queued backlogs (:class:`ClusterBacklog`). A *Local Scheduler* (LS) of one cluster
(:class:`MachineScheduler`) starts queued jobs on the cluster's machines, each job on ONE machine;
its queue order is a :class:`ClusterOrder`, e.g. a weighted sum of :class:`LsHeuristic` deltas
recomputed at every scheduling event.

All of these are pure: a snapshot and ``now`` in, decisions out. The only state the MS needs
across jobs (the window of the last N margins for ``E[margin]``, the per-cluster backlogs) is
held by the driver in the plain objects below and handed in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from metasched.model.grid import Cluster
from metasched.model.job import Job
from metasched.model.qos import qos_of
from metasched.policy.meta.base import Dispatch, Family, MetaPolicy

#: ``job.attrs`` key under which a driver records the MS priority given at dispatch.
MS_PRIORITY_KEY = "ms_priority"


def ms_priority(job: Job) -> int:
    """The MS priority recorded on ``job`` at dispatch (0 when none was recorded)."""
    value: int = job.attrs.get(MS_PRIORITY_KEY, 0)
    return value


# --------------------------------------------------------------------------- MS side


@dataclass(frozen=True, slots=True)
class MsContext:
    """What MS heuristics may know besides the job: ``E[margin]`` over the window (``None`` when
    no job with a deadline was seen yet) and ``|L|``, the number of licence types of the grid."""

    mean_margin: float | None
    n_licence_types: int


class MarginWindow:
    """The last ``size`` margins of jobs with a deadline, for ``E[margin]`` (seed 004 section 4).

    Owned by the driver; ``mean`` is read *before* the current job is added ("the N jobs
    analysed before j"), so the first job with a deadline sees ``None``.
    """

    __slots__ = ("_values", "size")

    def __init__(self, size: int = 100) -> None:
        if size < 1:
            raise ValueError(f"margin window size must be >= 1, got {size}")
        self.size = size
        self._values: deque[float] = deque(maxlen=size)

    def add(self, margin: float) -> None:
        self._values.append(margin)

    @property
    def mean(self) -> float | None:
        # Re-summed (not a running sum) so the value is exact and free of drift.
        return sum(self._values) / len(self._values) if self._values else None


class MsHeuristic(ABC):
    """One MS heuristic: a partial priority ``delta`` in ``0..levels`` from the job alone."""

    key: ClassVar[str]

    @property
    @abstractmethod
    def levels(self) -> int:
        """The largest value :meth:`delta` can return."""

    @abstractmethod
    def delta(self, job: Job, ctx: MsContext) -> int:
        """Partial priority of ``job`` (an integer in ``0..levels``)."""


class ClusterBacklog:
    """The jobs queued (dispatched, not started) at one cluster, by MS priority.

    ``load_at_or_above(p)`` is the paper's Load array position ``p``: the load (estimate x
    benchmark of the estimating machine) of queued jobs with priority >= ``p``;
    ``count_at_or_above(p)`` is the Ordering array. Exactly 0 when no such job is queued (counts
    decide, so float residue of add/remove never makes an idle cluster look busy).
    """

    __slots__ = ("count", "load")

    def __init__(self, n_priorities: int) -> None:
        if n_priorities < 1:
            raise ValueError(f"n_priorities must be >= 1, got {n_priorities}")
        self.load = [0.0] * n_priorities
        self.count = [0] * n_priorities

    def add(self, priority: int, load: float) -> None:
        self.load[priority] += load
        self.count[priority] += 1

    def remove(self, priority: int, load: float) -> None:
        if self.count[priority] <= 0:
            raise ValueError(f"no queued job of priority {priority} to remove")
        self.count[priority] -= 1
        self.load[priority] = 0.0 if self.count[priority] == 0 else self.load[priority] - load

    def load_at_or_above(self, priority: int) -> float:
        return float(sum(self.load[priority:]))

    def count_at_or_above(self, priority: int) -> int:
        return sum(self.count[priority:])


def job_load(job: Job) -> float:
    """The paper's load of a job: estimated time x benchmark of the machine it was estimated on."""
    return job.requested_time * qos_of(job).benchmark


class TwoLevelDispatcher(MetaPolicy[Dispatch, int]):
    """The ``two-level`` adapter (the MS of seed 004): classify a job at submission
    (:meth:`classify`, default: every job priority 0), then pick its cluster (:meth:`place`, which
    the driver calls as :meth:`select_cluster`).

    Invariant: :meth:`place` returns one of ``eligible``; randomness only from the question's ``rng``.
    """

    family: ClassVar[Family] = "two-level"

    @property
    def n_priorities(self) -> int:
        """Number of distinct priorities :meth:`classify` may return (``0..n_priorities-1``)."""
        return 1

    def classify(self, job: Job, ctx: MsContext) -> int:
        """The job's MS priority (higher = more urgent); 0 unless a dispatcher says otherwise."""
        return 0

    def select_cluster(
        self, priority: int, backlogs: Sequence[ClusterBacklog], eligible: Sequence[int], rng: np.random.Generator
    ) -> int:
        """Index of the cluster (among ``eligible``, non-empty) that gets a job of ``priority``: :meth:`place`."""
        return self.place(Dispatch(priority, backlogs, eligible, rng))


@dataclass(frozen=True, slots=True)
class RunningOnMachine:
    """A job running on machine ``machine`` of a cluster, holding ``cpus`` and the licences of
    ``licence_mask`` until ``expected_end`` (start + estimate on that machine)."""

    job: Job
    machine: int
    cpus: int
    licence_mask: int
    start_time: float
    expected_end: float


class QueueColumns:
    """The jobs queued at one cluster as numpy columns, in arrival order, for vectorised policies.

    Rows are in ``(submit_time, job_id)`` order (appending out of order is an error), so a stable
    sort on a priority breaks ties FCFS. Columns: ``job_id``, ``submit`` (submit_time),
    ``estimate`` (requested_time, on the estimating machine), ``benchmark`` (of the estimating
    machine), ``work`` (estimate x benchmark), ``deadline`` (``nan`` = none), ``licence_mask``
    (int64 bit masks), ``uses`` (rows x licence types, 1.0 where the job requests the licence),
    ``need`` (CPUs), ``priority`` (MS priority at dispatch); ``licence_counts[l]``: queued jobs
    requesting licence ``l``. ``jobs[i]`` is the :class:`Job` of row ``i``. Policies read it;
    only drivers call :meth:`append` / :meth:`remove`.
    """

    __slots__ = (
        "_benchmark",
        "_deadline",
        "_estimate",
        "_id",
        "_mask",
        "_need",
        "_prio",
        "_submit",
        "_uses",
        "_work",
        "jobs",
        "licence_counts",
        "n_licence_types",
    )

    _ARRAYS = ("_id", "_submit", "_estimate", "_benchmark", "_work", "_deadline", "_mask", "_need", "_prio", "_uses")

    def __init__(self, n_licence_types: int = 0, capacity: int = 64) -> None:
        capacity = max(capacity, 1)
        self.n_licence_types = n_licence_types
        self.jobs: list[Job] = []
        self._id = np.zeros(capacity, dtype=np.int64)
        self._submit = np.zeros(capacity)
        self._estimate = np.zeros(capacity)
        self._benchmark = np.zeros(capacity)
        self._work = np.zeros(capacity)
        self._deadline = np.zeros(capacity)
        self._mask = np.zeros(capacity, dtype=np.int64)
        self._need = np.zeros(capacity, dtype=np.int64)
        self._prio = np.zeros(capacity, dtype=np.int64)
        self._uses = np.zeros((capacity, n_licence_types))
        self.licence_counts = np.zeros(n_licence_types, dtype=np.int64)

    @classmethod
    def from_jobs(cls, jobs: Sequence[Job], n_licence_types: int = 0) -> QueueColumns:
        """Columns of ``jobs`` (sorted into arrival order)."""
        width = max((qos_of(j).licence_mask.bit_length() for j in jobs), default=0)
        cols = cls(max(n_licence_types, width), len(jobs))
        for job in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)):
            cols.append(job)
        return cols

    def __len__(self) -> int:
        return len(self.jobs)

    def _grow(self) -> None:
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.zeros((2 * len(old), *old.shape[1:]), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def append(self, job: Job) -> None:
        q = qos_of(job)
        if q.licence_mask.bit_length() > self.n_licence_types:
            raise ValueError(f"job {job.job_id} requests licence types beyond the {self.n_licence_types} known")
        i = len(self.jobs)
        if i and (job.submit_time, job.job_id) <= (self._submit[i - 1], self._id[i - 1]):
            raise ValueError(f"job {job.job_id} appended out of (submit_time, job_id) order")
        if i == len(self._id):
            self._grow()
        self.jobs.append(job)
        self._id[i] = job.job_id
        self._submit[i] = job.submit_time
        self._estimate[i] = job.requested_time
        self._benchmark[i] = q.benchmark
        self._work[i] = job.requested_time * q.benchmark
        self._deadline[i] = np.nan if q.deadline is None else q.deadline
        self._mask[i] = q.licence_mask
        self._need[i] = job.requested_procs
        self._prio[i] = ms_priority(job)
        if q.licence_mask:
            for lic in q.licences:
                self._uses[i, lic] = 1.0
                self.licence_counts[lic] += 1

    def remove(self, job_id: int) -> Job:
        n = len(self.jobs)
        hits = np.flatnonzero(self._id[:n] == job_id)
        if not hits.size:
            raise KeyError(f"job {job_id} is not queued")
        i = int(hits[0])
        job = self.jobs.pop(i)
        if self._mask[i]:
            self.licence_counts -= self._uses[i].astype(np.int64)
        if i < n - 1:
            for arr in (
                self._id,
                self._submit,
                self._estimate,
                self._benchmark,
                self._work,
                self._deadline,
                self._mask,
                self._need,
                self._prio,
                self._uses,
            ):
                arr[i : n - 1] = arr[i + 1 : n]
        self._uses[n - 1] = 0.0
        return job

    @property
    def job_id(self) -> np.ndarray:
        return self._id[: len(self.jobs)]

    @property
    def submit(self) -> np.ndarray:
        return self._submit[: len(self.jobs)]

    @property
    def estimate(self) -> np.ndarray:
        return self._estimate[: len(self.jobs)]

    @property
    def benchmark(self) -> np.ndarray:
        return self._benchmark[: len(self.jobs)]

    @property
    def work(self) -> np.ndarray:
        return self._work[: len(self.jobs)]

    @property
    def deadline(self) -> np.ndarray:
        return self._deadline[: len(self.jobs)]

    @property
    def licence_mask(self) -> np.ndarray:
        return self._mask[: len(self.jobs)]

    @property
    def uses(self) -> np.ndarray:
        return self._uses[: len(self.jobs)]

    @property
    def need(self) -> np.ndarray:
        return self._need[: len(self.jobs)]

    @property
    def priority(self) -> np.ndarray:
        return self._prio[: len(self.jobs)]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """Snapshot of one cluster handed to a :class:`MachineScheduler`.

    ``free_cpus[m]``: free CPUs of machine ``m``; ``licence_free[l]``: copies of licence ``l`` not
    active; ``queue``: the queued jobs as columns (arrival order); ``running`` in any order;
    ``running_on[m]``: the running jobs of machine ``m`` by job_id (``None``: derived from
    ``running``).
    """

    cluster: Cluster
    free_cpus: Sequence[int]
    licence_free: Sequence[int]
    running: Collection[RunningOnMachine]
    queue: QueueColumns
    running_on: Sequence[Mapping[int, RunningOnMachine]] | None = None

    def by_machine(self) -> Sequence[Mapping[int, RunningOnMachine]]:
        """``running_on``, or the same grouping computed from ``running``."""
        if self.running_on is not None:
            return self.running_on
        groups: list[dict[int, RunningOnMachine]] = [{} for _ in self.cluster.machines]
        for r in self.running:
            groups[r.machine][r.job.job_id] = r
        return groups


@dataclass(slots=True)
class MachinePlan:
    """Jobs to start now, each with the machine index it starts on, in decision order; and the
    EASY reservation of the first blocked job as ``(job_id, machine, start_at)`` (or ``None``)."""

    starts: list[tuple[Job, int]] = field(default_factory=list)
    reservation: tuple[int, int, float] | None = None


class ClusterOrder(ABC):
    """Orders one cluster's queue by a priority: higher first, ties in arrival order (row order of
    :class:`QueueColumns`, i.e. ``(submit_time, job_id)``)."""

    key: ClassVar[str]

    @abstractmethod
    def priority(self, view: ClusterView, now: float) -> np.ndarray:
        """One float per row of ``view.queue``; higher is scheduled first."""

    def order(self, view: ClusterView, now: float) -> np.ndarray:
        """Row indices of ``view.queue`` in scheduling order (a permutation)."""
        return np.argsort(-self.priority(view, now), kind="stable")


class MachineScheduler(ABC):
    """Starts queued jobs of one cluster on its machines (one machine per job, no preemption).

    Invariants every implementation keeps: a job starts on a machine with at least its CPUs free
    and able to run all its licences; the copies of each licence it starts never exceed
    ``view.licence_free``.
    """

    key: ClassVar[str]

    def __init__(self, *, order: ClusterOrder) -> None:
        self.order = order

    @abstractmethod
    def plan(self, view: ClusterView, now: float) -> MachinePlan:
        """Jobs of ``view.queue`` to start at ``now``, each with its machine."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(order={self.order.key!r})"


@dataclass(frozen=True, slots=True)
class LsQueue:
    """Columns of one cluster's queue (rows as in :class:`QueueColumns`) for LS heuristics.

    ``nxt``: estimate on the cluster's most powerful machine (seed 004's ``nxt_j``, optimistic);
    ``deadline``: ``nan`` for jobs without one; ``uses``: rows x licence types (1.0 = requested);
    ``licence_total[l]``: copies of licence ``l`` in the cluster's pool; ``licence_requests[l]``:
    how many jobs of the cluster request ``l``: queued ones plus running ones (each running
    holder of ``l`` holds one active copy, so that is ``total - free``); ``licence_queued[l]``: the
    queued ones only.
    """

    now: float
    submit: np.ndarray
    nxt: np.ndarray
    deadline: np.ndarray
    uses: np.ndarray
    licence_total: np.ndarray
    licence_requests: np.ndarray
    licence_queued: np.ndarray

    @classmethod
    def from_view(cls, view: ClusterView, now: float) -> LsQueue:
        cols = view.queue
        total = np.array(view.cluster.licence_copies, dtype=np.int64)
        queued = np.zeros(len(total), dtype=np.int64)
        k = min(len(total), len(cols.licence_counts))
        queued[:k] = cols.licence_counts[:k]
        active = total - np.asarray(view.licence_free, dtype=np.int64)
        uses = cols.uses
        if uses.shape[1] != len(total):
            fixed = np.zeros((len(cols), len(total)))
            fixed[:, :k] = uses[:, :k]
            uses = fixed
        return cls(
            now=now,
            submit=cols.submit,
            nxt=cols.work / view.cluster.best_benchmark,
            deadline=cols.deadline,
            uses=uses,
            licence_total=total,
            licence_requests=queued + active,
            licence_queued=queued,
        )


class LsHeuristic(ABC):
    """One LS heuristic: a weighted partial priority for every queued job, recomputed per event."""

    key: ClassVar[str]

    @abstractmethod
    def deltas(self, queue: LsQueue) -> np.ndarray:
        """Partial priorities, one per row of ``queue`` (float array)."""
