"""Tabu search over the critical machine's moves and swaps."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, finish_times
from metasched.policy.mapping.base import Clock, Mapper, SearchMapper, SearchOutcome, as_generator, outcome
from metasched.policy.mapping.local_search import apply_move, apply_swap, critical_neighbourhood


class TabuSearch(SearchMapper):
    """Tabu search: always take the best non-tabu move or swap out of the critical machine.

    Source: Glover's tabu search as used by Braun et al., JPDC 61 (2001) section 2 (their "Tabu"
    explores moves of tasks between machines and keeps a list of recently visited regions); our
    neighbourhood is the critical machine's moves and swaps (``local_search.critical_neighbourhood``)
    and our tabu list holds recently moved *tasks* for ``tenure`` iterations, a standard simpler form.
    The best neighbour is taken even when worse (that is how tabu search leaves local optima);
    a tabu task may move if the result beats the best makespan seen (aspiration).

    Invariant: the returned makespan is the best seen, never above the start's.
    Tie-break: moves before swaps on equal scores, then lowest task and machine/partner index.
    ``seed`` only breaks the rare case where every neighbour is tabu (a random task is freed).
    """

    key: ClassVar[str] = "tabu"

    def __init__(
        self,
        *,
        time_budget_s: float = 1.0,
        clock: Clock | None = None,
        seed: int | np.random.Generator = 0,
        max_iterations: int = 2_000,
        start: Mapper | None = None,
        tenure: int = 20,
    ) -> None:
        super().__init__(
            time_budget_s=time_budget_s, clock=clock, seed=seed, max_iterations=max_iterations, start=start
        )
        if tenure < 0:
            raise ValueError("tenure must be non-negative")
        self.tenure = tenure

    def search(self, etc: FloatArray, ready: FloatArray) -> SearchOutcome:
        t0 = self.now()
        rng = as_generator(self.seed)
        n, m = etc.shape
        a = self.start_assignment(etc, ready).copy()
        loads = finish_times(etc, ready, a)
        initial = best = float(loads.max())
        best_a = a.copy()
        tabu_until = np.zeros(n, dtype=np.int64)
        it = 0
        while it < self.max_iterations and not self.deadline_reached(t0):
            it += 1
            hood = critical_neighbourhood(etc, a, loads)
            if hood.tasks.size == 0:
                break
            others = np.maximum(np.delete(loads, hood.c).max(initial=0.0), 0.0)
            # The makespan after a step is the larger of the pair's new max and the other machines'.
            tabu_t = tabu_until[hood.tasks] > it
            move = hood.move.copy()
            swap = hood.swap.copy()
            aspire_move = np.maximum(move, others) < best
            aspire_swap = np.maximum(swap, others) < best
            move[tabu_t[:, None] & ~aspire_move] = np.inf
            swap[(tabu_t[:, None] | (tabu_until > it)[None, :]) & ~aspire_swap] = np.inf
            mi, si = int(move.argmin()), int(swap.argmin())
            mv, sv = move.flat[mi], swap.flat[si]
            if not np.isfinite(min(mv, sv)):
                tabu_until[rng.integers(n)] = 0
                continue
            if mv <= sv:
                p, k = divmod(mi, m)
                t = int(hood.tasks[p])
                apply_move(etc, a, loads, t, k)
                tabu_until[t] = it + self.tenure
            else:
                p, u = divmod(si, n)
                t = int(hood.tasks[p])
                apply_swap(etc, a, loads, t, u)
                tabu_until[t] = tabu_until[u] = it + self.tenure
            val = float(loads.max())
            if val < best:
                best, best_a = val, a.copy()
        return outcome(etc, ready, best_a, it, initial)
