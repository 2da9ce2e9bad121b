"""Hypothesis properties of every mapper on small random ETC matrices (with inf entries)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.etc import check_assignment, finish_times, lower_bound, makespan
from metasched.policy.mapping import REGISTRY, SEARCH_KEYS, Duplex, MaxMin, Met, MinMin
from metasched.policy.mapping.base import Mapper
from metasched.policy.mapping.lp_rounding import lp_relaxation


@st.composite
def instances(draw: st.DrawFn, max_tasks: int = 10, max_machines: int = 4) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, max_tasks))
    m = draw(st.integers(1, max_machines))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    etc = rng.integers(1, 20, size=(n, m)).astype(float) if draw(st.booleans()) else rng.uniform(0.5, 100, (n, m))
    blocked = rng.random((n, m)) < draw(st.sampled_from([0.0, 0.3]))
    blocked[np.arange(n), rng.integers(m, size=n)] = False  # every task can run somewhere
    etc[blocked] = np.inf
    ready = rng.integers(0, 10, size=m).astype(float) if draw(st.booleans()) else np.zeros(m)
    return etc, ready


def build(key: str) -> Mapper:
    cls = REGISTRY[key]
    if key in SEARCH_KEYS:
        return cls(max_iterations=30, seed=7)  # type: ignore[call-arg]
    return cls()


def brute_makespan(etc: np.ndarray, ready: np.ndarray, a: np.ndarray) -> float:
    finish = list(ready)
    for t, j in enumerate(a):
        finish[j] += etc[t, j]
    return max(finish)


@settings(max_examples=40, deadline=None)
@given(instances())
def test_every_mapper_assigns_every_task_where_it_can_run(inst: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = inst
    lb = lower_bound(etc, ready)
    for key in REGISTRY:
        a = build(key)(etc, ready)
        check_assignment(etc, a)  # raises if a task sits on an inf entry
        ms = makespan(etc, ready, a)
        assert np.isclose(ms, brute_makespan(etc, ready, a)), key
        assert ms >= lb * (1 - 1e-12), key


@settings(max_examples=40, deadline=None)
@given(instances())
def test_greedy_invariants(inst: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = inst
    met = Met()(etc, ready)
    assert np.array_equal(etc[np.arange(len(met)), met], etc.min(axis=1))
    mm, xm = MinMin()(etc, ready), MaxMin()(etc, ready)
    assert np.array_equal(MinMin(column_threshold=0)(etc, ready), mm)
    d = makespan(etc, ready, Duplex()(etc, ready))
    assert d == min(makespan(etc, ready, mm), makespan(etc, ready, xm))


def _first_task_of_min_min(etc: np.ndarray, ready: np.ndarray) -> tuple[int, int]:
    comp = etc + ready
    flat = int(comp.argmin())
    return divmod(flat, etc.shape[1])


@settings(max_examples=40, deadline=None)
@given(instances())
def test_min_min_first_choice_is_the_global_minimum(inst: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = inst
    t, j = _first_task_of_min_min(etc, ready)
    assert MinMin()(etc, ready)[t] == j


@settings(max_examples=25, deadline=None)
@given(instances(max_tasks=6, max_machines=3))
def test_nothing_beats_the_optimum_and_the_lp_bound_is_below_it(inst: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = inst
    n, m = etc.shape
    best = min(brute_makespan(etc, ready, np.array(a)) for a in itertools.product(range(m), repeat=n))
    lp, _ = lp_relaxation(etc, ready)
    assert lp <= best * (1 + 1e-9)
    assert lower_bound(etc, ready) <= best * (1 + 1e-12)
    for key in REGISTRY:
        assert makespan(etc, ready, build(key)(etc, ready)) >= best * (1 - 1e-12), key


@settings(max_examples=20, deadline=None)
@given(instances())
def test_same_seed_same_answer_and_search_never_worse_than_its_start(inst: tuple[np.ndarray, np.ndarray]) -> None:
    etc, ready = inst
    start = makespan(etc, ready, MinMin()(etc, ready))
    for key in REGISTRY:
        a1, a2 = build(key)(etc, ready), build(key)(etc, ready)
        assert np.array_equal(a1, a2), key
        if key in SEARCH_KEYS:
            assert makespan(etc, ready, a1) <= start * (1 + 1e-12), key
    assert np.allclose(finish_times(etc, ready, a1).max(), makespan(etc, ready, a1))
