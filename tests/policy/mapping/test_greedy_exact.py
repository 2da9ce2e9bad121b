"""Hand-worked tiny ETC cases: the exact assignment of each greedy heuristic (worked out in the comments)."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.model.etc import makespan
from metasched.policy.mapping import Duplex, MaxMin, Mct, Met, MinMin, Olb, Sufferage
from metasched.policy.mapping.base import greedy_batch, min_min_by_columns

INF = np.inf
# 4 tasks x 3 machines.
E4 = np.array([[2.0, 4, 6], [3, 1, 5], [4, 4, 1], [6, 3, 2]])


def test_met_takes_each_tasks_fastest_machine() -> None:
    # Row minima: t0 -> m0 (2), t1 -> m1 (1), t2 -> m2 (1), t3 -> m2 (2).
    assert Met()(E4).tolist() == [0, 1, 2, 2]


def test_olb_takes_the_machine_free_first_ignoring_speed() -> None:
    # t0 -> m0 (free at 0, lowest index) => [2,0,0]; t1 -> m1 => [2,1,0]; t2 -> m2 => [2,1,1];
    # t3: m1 and m2 both free at 1, lowest index m1 => m1 finishes at 4.
    a = Olb()(E4)
    assert a.tolist() == [0, 1, 2, 1]
    assert makespan(E4, np.zeros(3), a) == 4.0


def test_olb_skips_machines_where_the_task_cannot_run() -> None:
    e = np.array([[INF, 5.0], [1.0, 1.0]])
    # t0 can only run on m1; t1 then finds m0 free first.
    assert Olb()(e).tolist() == [1, 0]


def test_mct_takes_the_earliest_completion_in_task_order() -> None:
    # t0: [2,4,6] -> m0; t1: [5,1,5] -> m1; t2: [6,5,1] -> m2; t3: [8,4,3] -> m2.
    assert Mct()(E4).tolist() == [0, 1, 2, 2]


def test_min_min_rounds() -> None:
    # Round 1 minima: t0 2, t1 1, t2 1, t3 2 -> tie t1/t2 at 1, lowest index t1 -> m1.
    # Round 2: t0 2 (m0), t2 1 (m2), t3 2 (m2) -> t2 -> m2. Round 3: t0 2 (m0), t3 3 (m2) -> t0.
    # Round 4: t3 [8,4,3] -> m2.
    assert MinMin()(E4).tolist() == [0, 1, 2, 2]


# Min-min and Max-min part ways here (times are exact in binary).
E_MAX = np.array([[1.0, 1.25], [1.0, 1.25], [1.0, 1.25], [3.0, 10.0]])


def test_min_min_can_lose_to_max_min() -> None:
    # Min-min: t0 -> m0 (1); t1 -> m1 (1.25); t2: [2, 2.5] -> m0 (2); t3: [5, 11.25] -> m0 (5).
    a = MinMin()(E_MAX)
    assert a.tolist() == [0, 1, 0, 0]
    assert makespan(E_MAX, np.zeros(2), a) == 5.0


def test_max_min_maps_the_long_task_first() -> None:
    # Round 1: minima 1, 1, 1, 3 -> t3 -> m0 (3). Then t0, t1, t2 (ties, lowest index first) each find m1
    # earlier (1.25, 2.5, 3.75 < 4).
    a = MaxMin()(E_MAX)
    assert a.tolist() == [1, 1, 1, 0]
    assert makespan(E_MAX, np.zeros(2), a) == 3.75


def test_duplex_keeps_the_better_of_min_min_and_max_min() -> None:
    assert Duplex()(E_MAX).tolist() == [1, 1, 1, 0]
    # Min-min wins (3 vs 4): Max-min maps t2 first on m0, then t0 -> m1, t1 -> m0 (tie 4/4 -> m0).
    e = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, 3.0]])
    assert MaxMin()(e).tolist() == [1, 0, 0]
    assert MinMin()(e).tolist() == [0, 0, 1]
    assert Duplex()(e).tolist() == [0, 0, 1]


def test_sufferage_gives_the_machine_to_the_task_that_suffers_most() -> None:
    e = np.array([[2.0, 3.0], [1.0, 5.0], [1.0, 2.0]])
    # Pass 1: everyone's best is m0; sufferages 1, 4, 1 -> t1 wins m0 (finish 1).
    # Pass 2: t0 [3,3] and t2 [2,2] both pick m0 (tie), sufferage 0 each -> first, t0 (finish 3).
    # Pass 3: t2 [4,2] -> m1.
    assert Sufferage()(e).tolist() == [0, 0, 1]
    # Min-min differs: t1 and t2 tie at 1 -> t1 (m0), then t2 -> m0 (2), then t0 -> m1.
    assert MinMin()(e).tolist() == [1, 0, 0]


def test_sufferage_one_pass_maps_one_task_per_machine() -> None:
    # Pass 1: t0 m0 (suff 2), t1 m1 (2), t2 m2 (3), t3 m2 (1) -> t2 beats t3 on m2; pass 2: t3 [8,4,3] -> m2.
    assert Sufferage()(E4).tolist() == [0, 1, 2, 2]


def test_ready_times_shift_the_choice() -> None:
    # Machine 0 is busy until 10: Min-min sends both tasks to machine 1.
    e = np.array([[1.0, 2.0], [1.0, 3.0]])
    assert MinMin()(e, np.array([10.0, 0.0])).tolist() == [1, 1]
    assert Mct()(e, np.array([10.0, 0.0])).tolist() == [1, 1]


@pytest.mark.parametrize("pick_max", [False, True])
def test_both_min_min_paths_agree(pick_max: bool) -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        e = rng.integers(1, 6, size=(30, 4)).astype(float)  # many ties on purpose
        ready = rng.integers(0, 3, size=4).astype(float)
        if not pick_max:
            assert np.array_equal(min_min_by_columns(e, ready), greedy_batch(e, ready, pick_max=False))
    assert np.array_equal(MinMin(column_threshold=0)(E4), MinMin()(E4))


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="cannot run on any machine"):
        MinMin()(np.array([[INF, INF], [1.0, 2.0]]))
    with pytest.raises(ValueError, match="2-D"):
        MinMin()(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="ready times"):
        MinMin()(E4, np.zeros(2))
    with pytest.raises(ValueError, match="negative"):
        Met()(np.array([[-1.0]]))
