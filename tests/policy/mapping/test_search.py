"""Search heuristics: budgets, injected clocks, seeds, iteration caps."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.model.etc import makespan
from metasched.policy.mapping import REGISTRY, SEARCH_KEYS, MinMin
from metasched.policy.mapping.base import SearchMapper
from metasched.policy.mapping.local_search import critical_descent
from metasched.workload.etc import braun_like


class FakeClock:
    """Advances by ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.t = 0.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.t += self.step
        return self.t


@pytest.fixture(scope="module")
def instance() -> tuple[np.ndarray, np.ndarray]:
    inst = braun_like(np.random.default_rng(11), "u_i_hihi", n_tasks=48, n_machines=4)
    return inst.etc, inst.ready


@pytest.mark.parametrize("key", SEARCH_KEYS)
def test_iteration_cap_and_seed_fix_the_result(key: str, instance: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = instance
    cls = REGISTRY[key]
    a = cls(max_iterations=25, seed=3).search(etc, ready)  # type: ignore[call-arg,attr-defined]
    b = cls(max_iterations=25, seed=3, clock=FakeClock(1e-9), time_budget_s=1e9).search(etc, ready)  # type: ignore[call-arg,attr-defined]
    assert a.iterations <= 25
    assert np.array_equal(a.assignment, b.assignment)
    assert a.makespan == makespan(etc, ready, a.assignment)
    assert a.makespan <= a.initial_makespan


@pytest.mark.parametrize("key", SEARCH_KEYS)
def test_the_injected_clock_stops_the_search(key: str, instance: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = instance
    clock = FakeClock(1.0)
    out = REGISTRY[key](time_budget_s=5.0, clock=clock, max_iterations=10**9).search(etc, ready)  # type: ignore[call-arg,attr-defined]
    assert out.iterations <= 5 * 1024  # SA checks the clock once per batch of 1024 steps
    assert clock.reads >= 2


def test_searches_improve_on_min_min(instance: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = instance
    start = makespan(etc, ready, MinMin()(etc, ready))
    for key in ("tabu", "ils", "ga"):
        out = REGISTRY[key](max_iterations=200, seed=1).search(etc, ready)  # type: ignore[call-arg,attr-defined]
        assert out.makespan < start, key


def test_critical_descent_never_raises_the_makespan(instance: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = instance
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = rng.integers(etc.shape[1], size=etc.shape[0])
        loads = ready + np.bincount(a, weights=etc[np.arange(len(a)), a], minlength=etc.shape[1])
        before = loads.max()
        critical_descent(etc, a, loads)
        assert loads.max() <= before
        assert np.allclose(loads, ready + np.bincount(a, weights=etc[np.arange(len(a)), a], minlength=etc.shape[1]))


def test_bad_tunables_are_refused() -> None:
    with pytest.raises(ValueError):
        REGISTRY["ga"](population=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        REGISTRY["sa"](cooling=0.0)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        SearchMapper.__init__(REGISTRY["ils"](), max_iterations=-1)  # type: ignore[arg-type]


def test_descent_terminates_quickly_on_matrices_full_of_ties() -> None:
    # SmartNet production problems repeat 8 job kinds on copies of 10 machines: exact ties everywhere.
    # Before the relative-gain rule, rounding let one descent run for millions of ulp-sized "improvements".
    rng = np.random.default_rng(0)
    table = rng.choice([0.2, 0.25, 0.4, 1.03, 4.53, 6.0, 20.3, 130.0], size=(8, 10))
    for _ in range(5):
        etc = table[np.ix_(rng.integers(8, size=100), rng.integers(10, size=20))]
        a = rng.integers(20, size=100)
        loads = np.bincount(a, weights=etc[np.arange(100), a], minlength=20)
        assert critical_descent(etc, a, loads, max_steps=100_000) < 5_000
