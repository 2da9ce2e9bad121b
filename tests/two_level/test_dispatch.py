"""Load and Ordering (seed 004 MS), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.meta.two_level_base import ClusterBacklog, MarginWindow
from metasched.policy.priority.user_class import UserClassPriority


def backlogs(*entries: list[tuple[int, float]]) -> list[ClusterBacklog]:
    out = []
    for items in entries:
        b = ClusterBacklog(3)
        for prio, load in items:
            b.add(prio, load)
        out.append(b)
    return out


def test_backlog_arrays_are_cumulative() -> None:
    (b,) = backlogs([(0, 5.0), (1, 3.0), (2, 2.0), (2, 1.0)])
    assert [b.load_at_or_above(p) for p in range(3)] == [11.0, 6.0, 3.0]
    assert [b.count_at_or_above(p) for p in range(3)] == [4, 3, 2]
    b.remove(2, 2.0)
    b.remove(2, 1.0)
    assert b.load_at_or_above(2) == 0.0 and b.count_at_or_above(2) == 0
    with pytest.raises(ValueError, match="no queued job"):
        b.remove(2, 1.0)


def dispatcher() -> LoadOrdering:
    return LoadOrdering(heuristics=[UserClassPriority()])  # priorities 0..2


def test_first_idle_cluster_for_the_priority_wins() -> None:
    # Cluster 0 has a priority-2 job queued, clusters 1 and 2 only lower ones: "idle" at P = 2.
    bl = backlogs([(2, 1.0)], [(0, 100.0)], [(1, 50.0)])
    assert dispatcher().select_cluster(2, bl, [0, 1, 2], np.random.default_rng(0)) == 1
    # At P = 0 nobody is idle: least load, cluster 0.
    assert dispatcher().select_cluster(0, bl, [0, 1, 2], np.random.default_rng(0)) == 0
    # Eligibility filters clusters out.
    assert dispatcher().select_cluster(2, bl, [0, 2], np.random.default_rng(0)) == 2


def test_ordering_breaks_load_ties_then_rng() -> None:
    bl = backlogs([(1, 4.0), (1, 6.0)], [(1, 10.0)], [(2, 10.0)])
    # Load at P=1: 10, 10, 10; counts: 2, 1, 1 -> clusters 1, 2 tie -> rng.
    picks = {dispatcher().select_cluster(1, bl, [0, 1, 2], np.random.default_rng(s)) for s in range(30)}
    assert picks == {1, 2}
    a = [dispatcher().select_cluster(1, bl, [0, 1, 2], np.random.default_rng(7)) for _ in range(3)]
    assert len(set(a)) == 1


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="no eligible"):
        dispatcher().select_cluster(0, backlogs([]), [], np.random.default_rng(0))
    with pytest.raises(ValueError, match="outside"):
        dispatcher().select_cluster(3, backlogs([]), [0], np.random.default_rng(0))


def test_margin_window() -> None:
    w = MarginWindow(2)
    assert w.mean is None
    for m in (10.0, 20.0, 40.0):
        w.add(m)
    assert w.mean == 30.0
