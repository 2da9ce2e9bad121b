"""The ETC model: validation, finish times, makespan, lower bound."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.model.etc import EtcInstance, check_assignment, lower_bound

INF = np.inf


def test_finish_times_and_makespan_by_hand() -> None:
    inst = EtcInstance(np.array([[2.0, 4.0], [3.0, 1.0], [5.0, INF]]), np.array([1.0, 0.0]))
    # tasks 0 and 2 on m0 (1 + 2 + 5 = 8), task 1 on m1 (1).
    assert inst.finish_times([0, 1, 0]).tolist() == [8.0, 1.0]
    assert inst.makespan([0, 1, 0]) == 8.0
    # single-task bound: task 2 can only run on m0: 1 + 5 = 6; balanced: (1 + 0 + 2 + 1 + 5) / 2 = 4.5.
    assert inst.lower_bound() == 6.0
    assert lower_bound(inst.etc, inst.ready) == 6.0


def test_assignment_errors_are_named() -> None:
    etc = np.array([[1.0, INF]])
    with pytest.raises(ValueError, match="cannot run"):
        check_assignment(etc, np.array([1]))
    with pytest.raises(ValueError, match="one machine per task"):
        check_assignment(etc, np.array([0, 0]))
    with pytest.raises(ValueError, match="outside"):
        check_assignment(etc, np.array([2]))
    with pytest.raises(ValueError, match="integers"):
        check_assignment(etc, np.array([0.0]))


def test_instance_validation() -> None:
    with pytest.raises(ValueError, match="NaN"):
        EtcInstance(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="task_kinds"):
        EtcInstance(np.ones((2, 2)), task_kinds=("a",))
    assert EtcInstance(np.ones((2, 3))).ready.tolist() == [0.0, 0.0, 0.0]
