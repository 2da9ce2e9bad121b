"""Genetic algorithm (Braun et al.'s GA, seeded with Min-min)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray, IntArray
from metasched.policy.mapping.base import Clock, Mapper, SearchMapper, SearchOutcome, as_generator, outcome


def population_makespans(etc: FloatArray, ready: FloatArray, population: IntArray) -> FloatArray:
    """Makespan of every chromosome (row) of ``population``, vectorised."""
    p, n = population.shape
    m = etc.shape[1]
    times = etc[np.arange(n)[None, :], population]
    offsets = population + (np.arange(p) * m)[:, None]
    loads = np.bincount(offsets.ravel(), weights=times.ravel(), minlength=p * m).reshape(p, m) + ready
    return loads.max(axis=1)


def random_feasible(rng: np.random.Generator, etc: FloatArray, count: int) -> IntArray:
    """``count`` uniformly random assignments, each task on a machine where it can run.

    Memory is ``count x n`` (not ``count x n x m``): task ``i`` takes the ``r``-th of its feasible
    machines, ``r`` uniform.
    """
    finite = np.isfinite(etc)
    feasible_first = np.argsort(~finite, axis=1, kind="stable")
    k = finite.sum(axis=1)
    r = (rng.random((count, etc.shape[0])) * k[None, :]).astype(np.intp)
    return feasible_first[np.arange(etc.shape[0])[None, :], r]


class GeneticAlgorithm(SearchMapper):
    """Braun et al.'s GA: rank roulette selection, single-point crossover, reassignment mutation, elitism.

    Source: Braun et al., JPDC 61 (2001) section 2 ("GA"): chromosome = the machine of every task;
    population 200, one chromosome seeded with Min-min and the rest random; each generation
    selects by rank-based roulette (weights ``P - rank``), applies single-point crossover to each
    pair with probability 0.6 and to each chromosome a one-task random reassignment with
    probability 0.4, and keeps the elite (best so far) in the population. Stops at
    ``max_iterations`` generations, ``stall`` generations without a better elite, or the budget.

    Invariant: the elite never gets worse, so the result is never worse than Min-min's.
    Tie-break: the elite is the lowest-index chromosome among equal makespans.
    """

    key: ClassVar[str] = "ga"

    def __init__(
        self,
        *,
        time_budget_s: float = 1.0,
        clock: Clock | None = None,
        seed: int | np.random.Generator = 0,
        max_iterations: int = 1_000,
        start: Mapper | None = None,
        population: int = 200,
        crossover: float = 0.6,
        mutation: float = 0.4,
        stall: int = 150,
    ) -> None:
        super().__init__(
            time_budget_s=time_budget_s, clock=clock, seed=seed, max_iterations=max_iterations, start=start
        )
        if population < 2 or population % 2:
            raise ValueError("population must be an even number >= 2")
        if not (0.0 <= crossover <= 1.0 and 0.0 <= mutation <= 1.0):
            raise ValueError("crossover and mutation probabilities must be in [0, 1]")
        self.population = population
        self.crossover = crossover
        self.mutation = mutation
        self.stall = stall

    def search(self, etc: FloatArray, ready: FloatArray) -> SearchOutcome:
        t0 = self.now()
        rng = as_generator(self.seed)
        n, m = etc.shape
        size = self.population
        pop = random_feasible(rng, etc, size)
        pop[0] = self.start_assignment(etc, ready)
        fit = population_makespans(etc, ready, pop)
        initial = float(fit[0])
        elite_i = int(fit.argmin())
        elite, elite_fit = pop[elite_i].copy(), float(fit[elite_i])
        weights = np.arange(size, 0, -1, dtype=np.float64)
        weights /= weights.sum()
        feasible = np.isfinite(etc)
        it = since = 0
        while it < self.max_iterations and since < self.stall and not self.deadline_reached(t0):
            it += 1
            ranked = np.argsort(fit, kind="stable")
            parents = pop[ranked[rng.choice(size, size=size, p=weights)]]
            # Single-point crossover on consecutive pairs.
            cross = rng.random(size // 2) < self.crossover
            points = rng.integers(1, max(n, 2), size=size // 2)
            cols = np.arange(n)[None, :]
            tail = (cols >= points[:, None]) & cross[:, None]
            a, b = parents[0::2].copy(), parents[1::2].copy()
            parents[0::2] = np.where(tail, b, a)
            parents[1::2] = np.where(tail, a, b)
            # Mutation: one random task to a random machine where it can run.
            mut = np.flatnonzero(rng.random(size) < self.mutation)
            if mut.size:
                tasks = rng.integers(n, size=mut.size)
                scores = rng.random((mut.size, m))
                scores[~feasible[tasks]] = -1.0
                parents[mut, tasks] = scores.argmax(axis=1)
            pop = parents
            fit = population_makespans(etc, ready, pop)
            # Elitism: the elite replaces the worst chromosome.
            worst = int(fit.argmax())
            pop[worst], fit[worst] = elite, elite_fit
            i = int(fit.argmin())
            if fit[i] < elite_fit:
                elite, elite_fit, since = pop[i].copy(), float(fit[i]), 0
            else:
                since += 1
        return outcome(etc, ready, elite, it, initial)
