"""Iterated local search over the makespan-critical machine (move / swap steepest descent)."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np

from metasched.model.etc import FloatArray, IntArray, finish_times
from metasched.policy.mapping.base import Clock, Mapper, SearchMapper, SearchOutcome, as_generator, outcome


class CriticalNeighbourhood(NamedTuple):
    """Every move and swap out of the critical machine ``c``, scored by the pair's new maximum.

    ``move[p, k]``: task ``tasks[p]`` to machine ``k`` (``inf`` for ``k == c``);
    ``swap[p, u]``: task ``tasks[p]`` exchanged with task ``u`` (``inf`` for ``u`` on ``c``);
    ``eject[p, u]``: task ``tasks[p]`` to ``u``'s machine ``k`` and ``u`` ejected to its best machine
    ``dest[u]`` (neither ``c`` nor ``k``), scored by the max of the three machines' new finish times.
    """

    c: int
    tasks: IntArray
    move: FloatArray
    swap: FloatArray
    eject: FloatArray
    dest: IntArray


def critical_neighbourhood(
    etc: FloatArray, assignment: IntArray, loads: FloatArray, machine: int | None = None
) -> CriticalNeighbourhood:
    """Score the moves, swaps and ejections out of ``machine`` (default: the latest finish, lowest index)."""
    n = etc.shape[0]
    c = int(loads.argmax()) if machine is None else machine
    tasks = np.flatnonzero(assignment == c)
    et = etc[tasks]
    left = loads[c] - et[:, c]
    move = np.maximum(left[:, None], loads[None, :] + et)
    move[:, c] = np.inf
    own = loads[assignment] - etc[np.arange(n), assignment]
    swap = np.maximum(left[:, None] + etc[:, c][None, :], own[None, :] + et[:, assignment])
    swap[:, tasks] = np.inf
    # Ejection chains: u leaves k = a[u] for its best machine other than c and k.
    after = loads[None, :] + etc
    after[:, c] = np.inf
    after[np.arange(n), assignment] = np.inf
    dest = after.argmin(axis=1)
    dest_val = after[np.arange(n), dest]
    eject = np.maximum(np.maximum(left[:, None], own[None, :] + et[:, assignment]), dest_val[None, :])
    eject[:, tasks] = np.inf
    return CriticalNeighbourhood(c, tasks, move, swap, eject, dest)


def apply_move(etc: FloatArray, assignment: IntArray, loads: FloatArray, t: int, k: int) -> None:
    """Move task ``t`` to machine ``k`` (in place)."""
    c = int(assignment[t])
    loads[c] -= etc[t, c]
    loads[k] += etc[t, k]
    assignment[t] = k


def apply_swap(etc: FloatArray, assignment: IntArray, loads: FloatArray, t: int, u: int) -> None:
    """Exchange the machines of tasks ``t`` and ``u`` (in place)."""
    c, k = int(assignment[t]), int(assignment[u])
    loads[c] += etc[u, c] - etc[t, c]
    loads[k] += etc[t, k] - etc[u, k]
    assignment[t], assignment[u] = k, c


def critical_descent(
    etc: FloatArray,
    assignment: IntArray,
    loads: FloatArray,
    *,
    max_steps: int = 1_000_000,
    chains: bool = True,
    depth: int = 1,
) -> int:
    """Steepest descent on the critical machine, in place; returns the number of steps taken.

    A step looks at the machine ``c`` with the latest finish time and every *move* (a task of
    ``c`` to another machine ``k``), every *swap* (a task of ``c`` with a task of another
    machine ``k``) and, with ``chains``, every *ejection* (a task of ``c`` to ``k`` while a task of
    ``k`` leaves for a third machine), and applies the one minimising the largest new finish time of
    the machines involved if that is below the old finish of ``c``. With ``depth > 1``, when the
    critical machine cannot be improved the next most loaded machines (up to ``depth`` in all) are
    tried the same way: a lexicographic descent on the sorted finish times, which makes room below
    the makespan.

    Invariant: the makespan never increases, and it strictly decreases whenever ``c`` was the only
    machine at the makespan; every applied step lowers ``c``'s finish by more than a relative 1e-9
    (so rounding cannot make it cycle) and the descent terminates.
    Tie-break: moves, then swaps, then ejections on equal scores; then the lowest task index, then
    the lowest machine / partner index.
    """
    m = etc.shape[1]
    n = etc.shape[0]
    steps = 0
    while steps < max_steps:
        improved = False
        for c in np.argsort(-loads, kind="stable")[:depth]:
            hood = critical_neighbourhood(etc, assignment, loads, int(c))
            if hood.tasks.size == 0:
                continue
            # A step must win by more than rounding: the scores and the incremental load updates
            # round differently, and ulp-sized "improvements" can cycle (seen on SmartNet problems,
            # whose many equal ETC entries make exact ties common).
            lc = loads[hood.c] * (1.0 - 1e-9)
            mi = int(hood.move.argmin())
            mv = hood.move.flat[mi]
            si = int(hood.swap.argmin())
            sv = hood.swap.flat[si]
            ei = int(hood.eject.argmin()) if chains else 0
            ev = hood.eject.flat[ei] if chains else np.inf
            improved = True
            if mv <= sv and mv <= ev and mv < lc:
                p, k = divmod(mi, m)
                apply_move(etc, assignment, loads, int(hood.tasks[p]), k)
            elif sv <= ev and sv < lc:
                p, u = divmod(si, n)
                apply_swap(etc, assignment, loads, int(hood.tasks[p]), u)
            elif ev < lc:
                p, u = divmod(ei, n)
                k = int(assignment[u])
                apply_move(etc, assignment, loads, u, int(hood.dest[u]))
                apply_move(etc, assignment, loads, int(hood.tasks[p]), k)
            else:
                improved = False
            if improved:
                break
        if not improved:
            break
        steps += 1
    return steps


class IteratedLocalSearch(SearchMapper):
    """Iterated local search: critical-machine move/swap descent, random kicks, keep the best.

    Source: ours (the move and swap neighbourhoods are those of Braun et al.'s tabu search and
    Xhafa et al.'s local searches for the Braun instances). Start: Min-min (or ``start``). Each
    iteration kicks ``kick`` random tasks each to one of its ``kick_choices`` fastest machines
    (a random machine is often hundreds of times slower on the Braun instances: wasted kicks), descends with
    :func:`critical_descent`, and accepts the result if its makespan is at most
    ``(1 + accept_worse)`` times the current one (so it can drift along plateaus), restarting
    from the best every ``restart_every`` iterations without improvement with the kick doubled
    (up to a tenth of the tasks; back to ``kick`` after an improvement).

    Invariant: the returned makespan is the best seen, never above the start's.
    Tie-break: see :func:`critical_descent`; equal makespans keep the earlier best.
    """

    key: ClassVar[str] = "ils"

    def __init__(
        self,
        *,
        time_budget_s: float = 1.0,
        clock: Clock | None = None,
        seed: int | np.random.Generator = 0,
        max_iterations: int = 1_000,
        start: Mapper | None = None,
        kick: int = 4,
        accept_worse: float = 0.002,
        restart_every: int = 200,
        kick_choices: int = 3,
    ) -> None:
        super().__init__(
            time_budget_s=time_budget_s, clock=clock, seed=seed, max_iterations=max_iterations, start=start
        )
        if kick < 1:
            raise ValueError("kick must be at least 1")
        self.kick = kick
        self.accept_worse = accept_worse
        self.restart_every = restart_every
        if kick_choices < 1:
            raise ValueError("kick_choices must be at least 1")
        self.kick_choices = kick_choices

    def search(self, etc: FloatArray, ready: FloatArray) -> SearchOutcome:
        t0 = self.now()
        rng = as_generator(self.seed)
        n, m = etc.shape
        fastest = np.argsort(etc, axis=1, kind="stable")[:, : min(self.kick_choices, m)]
        n_fast = np.minimum(np.isfinite(etc).sum(axis=1), fastest.shape[1])
        a = self.start_assignment(etc, ready).copy()
        loads = finish_times(etc, ready, a)
        initial = float(loads.max())
        critical_descent(etc, a, loads)
        best_a, best = a.copy(), float(loads.max())
        cur = best
        since = 0
        it = 0
        kick = self.kick
        while it < self.max_iterations and not self.deadline_reached(t0):
            it += 1
            trial, tl = a.copy(), loads.copy()
            for t in rng.choice(n, size=min(kick, n), replace=False):
                k = int(fastest[t, rng.integers(n_fast[t])])
                old = trial[t]
                tl[old] -= etc[t, old]
                tl[k] += etc[t, k]
                trial[t] = k
            critical_descent(etc, trial, tl)
            val = float(tl.max())
            if val <= cur * (1.0 + self.accept_worse):
                a, loads, cur = trial, tl, val
            if val < best:
                best_a, best, since, kick = trial.copy(), val, 0, self.kick
            else:
                since += 1
                if since >= self.restart_every:
                    # Stuck: restart from the best with stronger kicks (up to a tenth of the tasks).
                    a, cur, since = best_a.copy(), best, 0
                    loads = finish_times(etc, ready, a)
                    kick = min(2 * kick, max(self.kick, n // 10))
        return outcome(etc, ready, best_a, it, initial)
