"""Simulated annealing."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, finish_times
from metasched.policy.mapping.base import Clock, Mapper, SearchMapper, SearchOutcome, as_generator, outcome


class SimulatedAnnealing(SearchMapper):
    """Simulated annealing over single-task moves, Braun et al.'s acceptance rule and cooling.

    Source: Braun et al., JPDC 61 (2001) section 2 ("SA"). A step moves one random task to a
    random machine where it can run. A better makespan is always accepted; a worse one is accepted
    when a uniform draw ``z`` exceeds ``y = 1 / (1 + exp((old - new) / temperature))``. The
    temperature starts at the initial makespan and is multiplied by ``cooling`` after every step
    (Braun et al.: 0.9). Start: Min-min (Braun et al. start from a random mapping; the issue asks
    the search heuristics to start from the greedy ones).

    Invariant: the returned makespan is the best seen, never above the start's.
    Tie-break: an equal makespan counts as "not worse" and is accepted.
    """

    key: ClassVar[str] = "sa"

    def __init__(
        self,
        *,
        time_budget_s: float = 1.0,
        clock: Clock | None = None,
        seed: int | np.random.Generator = 0,
        max_iterations: int = 100_000,
        start: Mapper | None = None,
        cooling: float = 0.9,
    ) -> None:
        super().__init__(
            time_budget_s=time_budget_s, clock=clock, seed=seed, max_iterations=max_iterations, start=start
        )
        if not 0.0 < cooling <= 1.0:
            raise ValueError("cooling must be in (0, 1]")
        self.cooling = cooling

    def search(self, etc: FloatArray, ready: FloatArray) -> SearchOutcome:
        t0 = self.now()
        rng = as_generator(self.seed)
        n, _m = etc.shape
        a = self.start_assignment(etc, ready).copy()
        loads = finish_times(etc, ready, a)
        cur = initial = float(loads.max())
        best, best_a = cur, a.copy()
        feasible = [np.flatnonzero(np.isfinite(row)) for row in etc]
        temperature = cur
        it = 0
        batch = 1024
        while it < self.max_iterations and not self.deadline_reached(t0):
            tasks = rng.integers(n, size=batch)
            picks = rng.random(batch)
            zs = rng.random(batch)
            for b in range(min(batch, self.max_iterations - it)):
                it += 1
                t = int(tasks[b])
                opts = feasible[t]
                k = int(opts[int(picks[b] * opts.size)])
                c = int(a[t])
                if k == c:
                    temperature *= self.cooling
                    continue
                loads[c] -= etc[t, c]
                loads[k] += etc[t, k]
                new = float(loads.max())
                accept = new <= cur
                if not accept and temperature > 0.0:
                    x = (cur - new) / temperature
                    y = 0.0 if x < -700.0 else 1.0 / (1.0 + math.exp(x))
                    accept = zs[b] > y
                if accept:
                    a[t] = k
                    cur = new
                    if cur < best:
                        best, best_a = cur, a.copy()
                else:
                    loads[c] += etc[t, c]
                    loads[k] -= etc[t, k]
                temperature *= self.cooling
            if self.deadline_reached(t0):
                break
        return outcome(etc, ready, best_a, it, initial)
