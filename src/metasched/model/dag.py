"""Jobs made of dependent tasks (DAGs) that exchange files through a file server.

Source: seed 002 section 2.2: "a directed acyclic graph (DAG) specifies data dependencies among
the tasks of a job, and all the tasks of a single job communicate this data through files on a
file server"; communication happens at the start or finish of a task; SmartNet accounts for the
latency and bandwidth between the machines and the file server; tasks "use a constant percentage
of the processing and memory resources of the machine to which they are assigned".

Our cost model: task ``i`` on machine ``j`` first reads each input file (edge ``p -> i`` of
``size`` bytes) from the file server, ``latency + size / bandwidth_j`` each, unless the producer
ran on the same machine and the scheduler keeps data local (``local`` reads cost nothing); then
computes for ``etc[i, j]``; then writes each output file, ``latency + size / bandwidth_j`` each.
A task may start once all its parents have finished (their writes included).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metasched.model.etc import FloatArray, IntArray, check_etc


@dataclass(frozen=True)
class Platform:
    """Machines and the file server: latency (s), per-machine bandwidth to the server (bytes/s),
    and, for multiprogrammed machines, memory (bytes) and network capacity (bytes/s)."""

    bandwidth: FloatArray
    latency: float = 0.0
    memory: FloatArray = field(default_factory=lambda: np.zeros(0))
    network: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        bw = np.asarray(self.bandwidth, dtype=np.float64)
        if bw.ndim != 1 or bw.size == 0 or (bw <= 0).any():
            raise ValueError("bandwidth must be a non-empty vector of positive numbers (bytes/s per machine)")
        if self.latency < 0:
            raise ValueError("latency must be non-negative")
        object.__setattr__(self, "bandwidth", bw)
        for name in ("memory", "network"):
            v = np.asarray(getattr(self, name), dtype=np.float64)
            if v.size == 0:
                v = np.full(bw.size, np.inf)
            if v.shape != bw.shape or (v < 0).any():
                raise ValueError(f"{name} must have one non-negative entry per machine")
            object.__setattr__(self, name, v)

    @property
    def n_machines(self) -> int:
        return int(self.bandwidth.size)

    def transfer_s(self, size: float, machine: int) -> float:
        """Seconds to move ``size`` bytes between ``machine`` and the file server."""
        return self.latency + size / float(self.bandwidth[machine])


@dataclass(frozen=True)
class DagJob:
    """Tasks (rows of ``etc``), edges ``(parent, child, bytes)``, and each task's share of a machine.

    ``cpu[i]`` in (0, 1]: the fraction of a CPU task ``i`` uses (1 = a whole machine);
    ``memory[i]`` bytes and ``network[i]`` bytes/s it holds while it runs.
    """

    etc: FloatArray
    edges: tuple[tuple[int, int, float], ...] = ()
    cpu: FloatArray = field(default_factory=lambda: np.zeros(0))
    memory: FloatArray = field(default_factory=lambda: np.zeros(0))
    network: FloatArray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        etc, _ = check_etc(self.etc)
        object.__setattr__(self, "etc", etc)
        n = etc.shape[0]
        defaults = {"cpu": 1.0, "memory": 0.0, "network": 0.0}
        for name, default in defaults.items():
            v = np.asarray(getattr(self, name), dtype=np.float64)
            if v.size == 0:
                v = np.full(n, default)
            if v.shape != (n,) or (v < 0).any():
                raise ValueError(f"{name} must have one non-negative entry per task")
            object.__setattr__(self, name, v)
        if ((self.cpu <= 0) | (self.cpu > 1)).any():
            raise ValueError("cpu fractions must be in (0, 1]")
        edges = tuple((int(p), int(c), float(s)) for p, c, s in self.edges)
        for p, c, s in edges:
            if not (0 <= p < n and 0 <= c < n) or p == c or s < 0:
                raise ValueError(f"bad edge ({p}, {c}, {s}): tasks must exist, differ, and size be >= 0")
        object.__setattr__(self, "edges", edges)
        self.topological_order()  # raises on a cycle

    @property
    def n_tasks(self) -> int:
        return int(self.etc.shape[0])

    def parents(self) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in range(self.n_tasks)]
        for p, c, s in self.edges:
            out[c].append((p, s))
        return out

    def children(self) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in range(self.n_tasks)]
        for p, c, s in self.edges:
            out[p].append((c, s))
        return out

    def topological_order(self) -> list[int]:
        """Kahn's order, lowest index first among the ready tasks; ``ValueError`` on a cycle."""
        import heapq

        indeg = [0] * self.n_tasks
        for _, c, _ in self.edges:
            indeg[c] += 1
        kids = self.children()
        heap = [i for i in range(self.n_tasks) if indeg[i] == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for c, _ in kids[i]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(heap, c)
        if len(order) != self.n_tasks:
            raise ValueError("the task graph has a cycle")
        return order

    def duration(self, task: int, machine: int, platform: Platform, local_parents: set[int] | None = None) -> float:
        """Reads + compute + writes of ``task`` on ``machine`` (reads from ``local_parents`` are free)."""
        t = float(self.etc[task, machine])
        for p, s in self.parents()[task]:
            if local_parents is None or p not in local_parents:
                t += platform.transfer_s(s, machine)
        for _, s in self.children()[task]:
            t += platform.transfer_s(s, machine)
        return t


@dataclass(frozen=True)
class DagSchedule:
    """Where and when every task runs."""

    machine: IntArray
    start: FloatArray
    finish: FloatArray

    @property
    def makespan(self) -> float:
        return float(self.finish.max()) if self.finish.size else 0.0

    def check(self, job: DagJob, *, single_program: bool = True) -> None:
        """Raise ``ValueError`` if a task starts before a parent finishes, runs where it cannot,
        or (``single_program``) overlaps another task on its machine."""
        n = job.n_tasks
        if not (self.machine.shape == self.start.shape == self.finish.shape == (n,)):
            raise ValueError("schedule arrays must have one entry per task")
        if not np.isfinite(job.etc[np.arange(n), self.machine]).all():
            raise ValueError("a task is placed on a machine where it cannot run")
        if (self.finish < self.start).any():
            raise ValueError("a task finishes before it starts")
        tol = 1e-9 * max(1.0, self.makespan)
        for p, c, _ in job.edges:
            if self.start[c] < self.finish[p] - tol:
                raise ValueError(
                    f"task {c} starts at {self.start[c]} before its parent {p} finishes at {self.finish[p]}"
                )
        if single_program:
            for j in np.unique(self.machine):
                idx = np.flatnonzero(self.machine == j)
                order = idx[np.argsort(self.start[idx], kind="stable")]
                if (self.start[order[1:]] < self.finish[order[:-1]] - tol).any():
                    raise ValueError(f"two tasks overlap on machine {int(j)}")


def check_capacity(schedule: DagSchedule, job: DagJob, platform: Platform) -> None:
    """Raise ``ValueError`` if, at some instant, a machine's running tasks exceed its CPU (1.0),
    memory or network capacity (multiprogrammed machines)."""
    eps = 1e-9
    for j in np.unique(schedule.machine):
        idx = np.flatnonzero(schedule.machine == j)
        for x in schedule.start[idx]:
            run = idx[(schedule.start[idx] <= x) & (x < schedule.finish[idx])]
            if job.cpu[run].sum() > 1 + eps:
                raise ValueError(f"machine {int(j)} runs more than one CPU's worth at {x}")
            if job.memory[run].sum() > platform.memory[j] * (1 + eps):
                raise ValueError(f"machine {int(j)} is out of memory at {x}")
            if job.network[run].sum() > platform.network[j] * (1 + eps):
                raise ValueError(f"machine {int(j)} exceeds its network capacity at {x}")


def random_dag(
    rng: np.random.Generator,
    etc: FloatArray,
    *,
    edge_probability: float = 0.1,
    mean_file_bytes: float = 1e6,
) -> DagJob:
    """A random layered DAG over the rows of ``etc``: edge ``i -> k`` (``i < k``) with the given probability."""
    n = etc.shape[0]
    mask = np.triu(rng.random((n, n)) < edge_probability, k=1)
    ps, cs = np.nonzero(mask)
    sizes = rng.exponential(mean_file_bytes, size=ps.size)
    return DagJob(etc, tuple(zip(ps.tolist(), cs.tolist(), sizes.tolist(), strict=True)))
