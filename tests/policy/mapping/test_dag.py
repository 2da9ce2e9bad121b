"""DAG jobs: generational and clustering schedulers, hand-worked cases and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.dag import DagJob, Platform, check_capacity, random_dag
from metasched.policy.mapping import DAG_REGISTRY, Clustering, Generational, MaxMin

E3 = np.array([[2.0, 4.0], [3.0, 1.0], [1.0, 5.0]])


def test_generational_by_hand_without_files() -> None:
    # t = 0: eligible {0, 1}; Min-min: t1 -> m1 (1), t0 -> m0 (2). t = 1: t1 done, t2 still waits for t0.
    # t = 2: t0 done, t2 eligible, avail [2, 2] -> m0 (3).
    job = DagJob(E3, ((0, 2, 0.0),))
    s = Generational().schedule(job, Platform(np.array([1.0, 1.0])))
    assert s.machine.tolist() == [0, 1, 0]
    assert s.start.tolist() == [0.0, 0.0, 2.0]
    assert s.finish.tolist() == [2.0, 1.0, 3.0]
    s.check(job)


def test_generational_by_hand_with_file_transfers() -> None:
    # latency 1, bandwidth [10, 5], file 10 bytes: t0 writes 1 + 10/bw (m0: 2, m1: 3) -> [4, 7];
    # t2 reads the same -> [3, 8]. t = 0: t1 -> m1 (1), t0 -> m0 (4). t = 4: t2 -> m0, ends at 7.
    job = DagJob(E3, ((0, 2, 10.0),))
    s = Generational().schedule(job, Platform(np.array([10.0, 5.0]), latency=1.0))
    assert s.machine.tolist() == [0, 1, 0]
    assert s.finish.tolist() == [4.0, 1.0, 7.0]


def test_generational_remaps_at_each_completion_with_any_mapper() -> None:
    job = DagJob(E3, ((0, 2, 0.0),))
    s = Generational(mapper=MaxMin()).schedule(job, Platform(np.ones(2)), ready=np.array([0.0, 5.0]))
    s.check(job)
    assert (s.start[s.machine == 1] >= 5.0).all()


def test_clustering_packs_fractional_tasks_on_one_machine() -> None:
    e = np.array([[4.0], [4.0]])
    half = DagJob(e, cpu=np.array([0.5, 0.5]))
    assert Clustering().schedule(half, Platform(np.ones(1))).finish.tolist() == [4.0, 4.0]
    more = DagJob(e, cpu=np.array([0.6, 0.6]))
    assert Clustering().schedule(more, Platform(np.ones(1))).makespan == 8.0
    mem = DagJob(e, cpu=np.array([0.5, 0.5]), memory=np.array([6.0, 6.0]))
    s = Clustering().schedule(mem, Platform(np.ones(1), memory=np.array([10.0])))
    assert s.makespan == 8.0
    with pytest.raises(ValueError, match="fits on no machine"):
        Clustering().schedule(mem, Platform(np.ones(1), memory=np.array([5.0])))


def test_clustering_keeps_a_child_with_its_parent_to_read_locally() -> None:
    # Parent: 1 + write 100/10 = 11 on either machine (m0 by index). Child: 1 locally, 11 on m1.
    job = DagJob(np.ones((2, 2)), ((0, 1, 100.0),))
    s = Clustering().schedule(job, Platform(np.array([10.0, 10.0])))
    assert s.machine.tolist() == [0, 0]
    assert s.finish.tolist() == [11.0, 12.0]


def test_bad_dags_are_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        DagJob(np.ones((2, 1)), ((0, 1, 0.0), (1, 0, 0.0)))
    with pytest.raises(ValueError, match="bad edge"):
        DagJob(np.ones((2, 1)), ((0, 5, 0.0),))
    with pytest.raises(ValueError, match="cpu"):
        DagJob(np.ones((1, 1)), cpu=np.array([1.5]))
    with pytest.raises(ValueError, match="platform has"):
        Generational().schedule(DagJob(np.ones((1, 2))), Platform(np.ones(3)))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 4))
def test_dag_schedules_respect_precedence_and_capacity(seed: int, n: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    etc = rng.uniform(1, 10, (n, m))
    etc[rng.random((n, m)) < 0.2] = np.inf
    etc[np.arange(n), rng.integers(m, size=n)] = rng.uniform(1, 10, n)
    base = random_dag(rng, etc, edge_probability=0.3, mean_file_bytes=5.0)
    job = DagJob(base.etc, base.edges, cpu=rng.choice([0.25, 0.5, 1.0], size=n), memory=rng.uniform(0, 4, n))
    platform = Platform(rng.uniform(1, 5, m), latency=0.5, memory=np.full(m, 6.0))
    actual = etc * rng.uniform(0.5, 1.5, (n, m))
    for s in (
        Generational().schedule(job, platform),
        Generational().schedule(job, platform, actual=actual),
    ):
        s.check(job)
    for s in (Clustering().schedule(job, platform), Clustering().schedule(job, platform, actual=actual)):
        s.check(job, single_program=False)
        check_capacity(s, job, platform)
    assert set(DAG_REGISTRY) == {"generational", "clustering"}
