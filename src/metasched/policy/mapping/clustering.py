"""SmartNet's clustering algorithm for tasks that use part of a multiprogrammed machine."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.dag import DagJob, DagSchedule, Platform
from metasched.model.etc import FloatArray
from metasched.policy.mapping.base import DagScheduler


class Clustering(DagScheduler):
    """List scheduling onto multiprogrammed machines: co-locate tasks within CPU, memory and network.

    Source: seed 002 section 2.3 ("A Clustering Algorithm"), after El-Rewini, Lewis & Ali, *Task
    Scheduling in Parallel and Distributed Systems* (1994). Tasks that use a fraction ``cpu[i]`` of
    a CPU may share a machine (UNIX multiprogramming) as long as, at every instant, the running
    tasks' CPU fractions sum to at most 1 and their memory and network use stay within the
    machine's; under SmartNet's model a task's time is unaffected by its co-runners. A child on
    its parent's machine reads the parent's file locally (no file-server transfer): that is the
    clustering gain.

    Tasks are taken by decreasing *upward rank* (mean duration plus the longest path to an exit
    task, HEFT-style); each goes to the machine and earliest instant, at or after its parents'
    finish, where it fits for its whole duration, minimising its finish time.

    Invariant: CPU, memory and network capacities hold at every instant on every machine; every
    task starts after its parents finish. Tie-break: higher rank first, then lower index; equal
    finish times go to the lower machine index.
    """

    key: ClassVar[str] = "clustering"

    def schedule(
        self, job: DagJob, platform: Platform, ready: FloatArray | None = None, actual: FloatArray | None = None
    ) -> DagSchedule:
        n, m = job.etc.shape
        if platform.n_machines != m:
            raise ValueError(f"platform has {platform.n_machines} machines, the job's ETC {m}")
        free_at = np.zeros(m) if ready is None else np.asarray(ready, dtype=np.float64)
        parents = job.parents()
        kids = job.children()
        mean_dur = np.array(
            [np.mean([d for j in range(m) if np.isfinite(d := job.duration(i, j, platform))]) for i in range(n)]
        )
        rank = np.zeros(n)
        for i in reversed(job.topological_order()):
            rank[i] = mean_dur[i] + max((rank[c] for c, _ in kids[i]), default=0.0)
        order = sorted(range(n), key=lambda i: (-rank[i], i))
        # Rank decreases along edges when durations are positive; zero-duration tasks need this pass.
        order = _respect_precedence(order, parents)
        machine = np.full(n, -1, dtype=np.intp)
        start = np.zeros(n)
        finish = np.zeros(n)
        # Per machine: list of (start, end, cpu, memory, network).
        booked: list[list[tuple[float, float, float, float, float]]] = [[] for _ in range(m)]
        for t in order:
            best: tuple[float, int, float, float] | None = None
            for j in range(m):
                if (
                    not np.isfinite(job.etc[t, j])
                    or job.memory[t] > platform.memory[j]
                    or job.network[t] > platform.network[j]
                ):
                    continue
                local = {p for p, _ in parents[t] if machine[p] == j}
                dur = job.duration(t, j, platform, local_parents=local)
                if actual is not None:
                    dur += float(actual[t, j]) - float(job.etc[t, j])
                earliest = max([float(free_at[j])] + [float(finish[p]) for p, _ in parents[t]])
                s = _earliest_fit(booked[j], earliest, dur, job.cpu[t], job.memory[t], job.network[t], platform, j)
                if best is None or s + dur < best[2]:
                    best = (s, j, s + dur, dur)
            if best is None:
                raise ValueError(f"task {t} fits on no machine (memory or network needs exceed every machine's)")
            s, j, f, _ = best
            machine[t], start[t], finish[t] = j, s, f
            booked[j].append((s, f, float(job.cpu[t]), float(job.memory[t]), float(job.network[t])))
        return DagSchedule(machine, start, finish)


def _respect_precedence(order: list[int], parents: list[list[tuple[int, float]]]) -> list[int]:
    placed: set[int] = set()
    out: list[int] = []
    pending = list(order)
    while pending:
        for k, t in enumerate(pending):
            if all(p in placed for p, _ in parents[t]):
                out.append(t)
                placed.add(t)
                del pending[k]
                break
        else:  # pragma: no cover - impossible for a DAG
            raise ValueError("cycle")
    return out


def _earliest_fit(
    booked: list[tuple[float, float, float, float, float]],
    earliest: float,
    dur: float,
    cpu: float,
    mem: float,
    net: float,
    platform: Platform,
    j: int,
) -> float:
    """Earliest ``s >= earliest`` such that the task fits on the machine throughout ``[s, s + dur)``."""
    candidates = sorted({earliest, *(e for _, e, *_ in booked if e > earliest)})
    eps = 1e-12
    for s in candidates:
        end = s + dur
        # Usage only changes at booking starts; check at s and at every start inside [s, end).
        points = [s, *(b for b, e, *_ in booked if s < b < end)]
        ok = True
        for x in points:
            use_cpu = cpu + sum(c for b, e, c, _, _ in booked if b <= x < e)
            use_mem = mem + sum(mm for b, e, _, mm, _ in booked if b <= x < e)
            use_net = net + sum(nn for b, e, _, _, nn in booked if b <= x < e)
            if use_cpu > 1.0 + eps or use_mem > platform.memory[j] + eps or use_net > platform.network[j] + eps:
                ok = False
                break
        if ok:
            return s
    raise AssertionError("unreachable: after the last booking ends the machine is empty")
