"""SmartNet's generational algorithm for dependent tasks."""

from __future__ import annotations

import heapq
from typing import ClassVar

import numpy as np

from metasched.model.dag import DagJob, DagSchedule, Platform
from metasched.model.etc import FloatArray
from metasched.policy.mapping.base import DagScheduler, Mapper
from metasched.policy.mapping.min_min import MinMin


class Generational(DagScheduler):
    """Generational scheduling: map only the eligible tasks, remap at every task completion.

    Source: Freund et al., "Generational scheduling for heterogeneous computing systems" (PDPTA
    1996), as described in seed 002 section 2.3. Each generation filters out the tasks whose
    parents have not all finished, maps the remaining *eligible, not yet started* tasks with an
    auxiliary independent-task mapper (default Min-min) onto the machines' ready times, and starts
    the first queued task on every idle machine. The rescheduling event is the completion of a
    running task; then every eligible task that has not started is mapped again.

    Durations include reading the inputs from and writing the outputs to the file server
    (:meth:`DagJob.duration`). Machines are single-programmed.

    Invariant: a task starts only after all its parents have finished, on a machine where it can
    run, never overlapping another task there. Tie-break: a machine's queue is the auxiliary
    mapper's tasks in increasing estimated duration (then index); completions at the same instant
    are processed in task-index order.
    """

    key: ClassVar[str] = "generational"

    def __init__(self, *, mapper: Mapper | None = None) -> None:
        self.mapper = mapper if mapper is not None else MinMin()

    def schedule(
        self, job: DagJob, platform: Platform, ready: FloatArray | None = None, actual: FloatArray | None = None
    ) -> DagSchedule:
        n, m = job.etc.shape
        if platform.n_machines != m:
            raise ValueError(f"platform has {platform.n_machines} machines, the job's ETC {m}")
        est = np.array([[job.duration(i, j, platform) for j in range(m)] for i in range(n)])
        real = est
        if actual is not None:
            with np.errstate(invalid="ignore"):
                real = np.where(np.isfinite(est), est - job.etc + np.asarray(actual, dtype=np.float64), np.inf)
        free_at = np.zeros(m) if ready is None else np.asarray(ready, dtype=np.float64).copy()
        parents_left = np.zeros(n, dtype=np.int64)
        kids = job.children()
        for _, c, _ in job.edges:
            parents_left[c] += 1
        machine = np.full(n, -1, dtype=np.intp)
        start = np.full(n, np.nan)
        finish = np.full(n, np.nan)
        eligible = set(np.flatnonzero(parents_left == 0).tolist())
        busy = np.zeros(m, dtype=bool)
        # (instant, task): a task's completion, or (negative id) a machine becoming ready.
        events: list[tuple[float, int]] = [(float(free_at[j]), -1 - j) for j in range(m) if free_at[j] > 0]
        heapq.heapify(events)
        now = 0.0
        done = 0
        while done < n:
            waiting = sorted(eligible)
            if waiting:
                avail = np.maximum(free_at, now)
                sub = est[waiting]
                plan = self.mapper.map(sub, avail)
                for j in range(m):
                    if busy[j] or avail[j] > now:
                        continue
                    mine = [(sub[k, j], waiting[k]) for k in np.flatnonzero(plan == j)]
                    if not mine:
                        continue
                    _, t = min(mine)
                    machine[t], start[t] = j, now
                    finish[t] = now + real[t, j]
                    busy[j] = True
                    eligible.discard(t)
                    heapq.heappush(events, (float(finish[t]), t))
            if not events:
                raise RuntimeError("no task can start: the auxiliary mapper left every idle machine empty")
            now, t = heapq.heappop(events)
            finished = [t]
            while events and events[0][0] == now:
                finished.append(heapq.heappop(events)[1])
            for t in sorted(finished):
                if t < 0:
                    continue
                j = int(machine[t])
                busy[j] = False
                free_at[j] = now
                done += 1
                for c, _ in kids[t]:
                    parents_left[c] -= 1
                    if parents_left[c] == 0:
                        eligible.add(c)
        return DagSchedule(machine, start, finish)
