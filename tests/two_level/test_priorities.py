"""Hand-worked values of seed 004's MS and LS heuristics."""

from __future__ import annotations

import numpy as np
import pytest

from metasched.model.qos import UserClass
from metasched.policy.meta.two_level_base import LsQueue, MsContext
from metasched.policy.priority.aging import Aging
from metasched.policy.priority.deadline import LsDeadline
from metasched.policy.priority.licenses import LsLicences
from metasched.policy.priority.ms_deadline import MsDeadline
from metasched.policy.priority.ms_licenses import MsLicences
from metasched.policy.priority.user_class import UserClassPriority
from metasched.policy.priority.wait_min import WaitMinimization
from metasched.policy.priority.weighted import WeightedHeuristics

from .helpers import cluster, job, view


def dl_job(margin: float, estimate: float, submit: float = 0.0):  # type: ignore[no-untyped-def]
    return job(1, submit=submit, estimate=estimate, deadline=submit + estimate + margin)


class TestMsDeadline:
    # max = 4, E = 1500: minunity = 3000 / (2+4+8+16) = 100, S = 0, 200, 600, 1400, 3000.
    def test_bounds(self) -> None:
        assert MsDeadline(max_priority=4).interval_bounds(1500.0) == pytest.approx([0, 200, 600, 1400, 3000])

    @pytest.mark.parametrize(
        ("margin", "expected"),
        [(0.0, 4), (199.0, 4), (200.0, 3), (599.0, 3), (600.0, 2), (1400.0, 1), (2999.0, 1), (3000.0, 0), (9e9, 0)],
    )
    def test_first_stage(self, margin: float, expected: int) -> None:
        assert MsDeadline(max_priority=4).first_stage(margin, 1500.0) == expected

    @pytest.mark.parametrize(
        ("delta", "margin", "estimate", "expected"),
        [
            (2, 1000.0, 500.0, 0),  # r = 2: 2 - 2
            (1, 1400.0, 1000.0, 0),  # r = 1.4: 1 - 1
            (3, 3500.0, 1000.0, 0),  # r = 3.5: 3 - 3
            (1, 5000.0, 1000.0, 0),  # r = 5: clipped at 0
            (2, 1000.0, 3000.0, 3),  # r = 1/3 in [1/4, 1/2]: w = 1
            (2, 700.0, 1000.0, 2),  # r = 0.7 in [1/2, 1]: w = 0
            (2, 500.0, 1000.0, 3),  # r = 1/2, shared end point: larger w = 1
            (4, 100.0, 1000.0, 4),  # r = 0.1: w = 3 (capped at max - 1), clipped at max
            (0, 100.0, 1000.0, 3),  # r = 0.1: w = 3
        ],
    )
    def test_refine(self, delta: int, margin: float, estimate: float, expected: int) -> None:
        assert MsDeadline(max_priority=4).refine(delta, margin, estimate) == expected

    def test_delta_uses_window_mean(self) -> None:
        h = MsDeadline(max_priority=4)
        # margin 1000 in [600, 1400) -> 2; r = 1000/3000 -> w = 1 -> 3.
        assert h.delta(dl_job(1000.0, 3000.0, submit=50.0), MsContext(1500.0, 8)) == 3
        # Without deadline: 0.
        assert h.delta(job(2), MsContext(1500.0, 8)) == 0
        # First job with a deadline: E = its own margin, so margin in [1400, 3000)*E/1500 -> 1; r=1/3 -> +1.
        assert h.delta(dl_job(1000.0, 3000.0), MsContext(None, 8)) == 2


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (1, 1), (2, 1), (3, 2), (5, 2), (6, 3), (8, 3)])
def test_ms_licences(n: int, expected: int) -> None:
    # |L| = 8, max = 3: ceil(n * 3 / 8).
    assert MsLicences(max_priority=3).delta(job(1, licences=range(n)), MsContext(None, 8)) == expected


def test_user_class() -> None:
    h = UserClassPriority()
    ctx = MsContext(None, 0)
    assert [h.delta(job(1, user=u), ctx) for u in UserClass] == [2, 1, 0]
    assert h.levels == 2
    with pytest.raises(ValueError, match="gold >= silver"):
        UserClassPriority(gold=0, silver=1)


def _queue(jobs, copies=(), running=(), best=100.0, now=0.0):  # type: ignore[no-untyped-def]
    cl = cluster([(8, best)], copies)
    return LsQueue.from_view(view(cl, jobs, running), now), cl


def test_aging() -> None:
    q, _ = _queue([job(1, submit=1000.0), job(2, submit=5000.0)], now=5000.0)
    assert Aging(weight=1e-3).deltas(q).tolist() == pytest.approx([4.0, 0.0])


def test_ls_deadline_ramp() -> None:
    # estimate 1000 on benchmark 100, best machine 200: nxt = 500; k = 2: t = deadline - 1000.
    h = LsDeadline(low=1.0, high=11.0, k=2.0)
    jobs = [job(i, estimate=1000.0, deadline=10_000.0) for i in range(1)] + [job(9, estimate=1000.0)]
    for now, expected in [(8000.0, 1.0), (8400.0, 1.0), (8750.0, 3.5), (9500.0, 11.0), (9501.0, 1.0)]:
        q, _ = _queue(jobs, best=200.0, now=now)
        # ext = now + 500; t = 9000; slope 10 / 1000.
        assert h.deltas(q).tolist() == pytest.approx([expected, 1.0]), now


def test_ls_licences_critical_weighted_by_d() -> None:
    # copies: l0 = 2, l1 = 4, l2 = 1. Requests (queued + running): l0 = 3 (rho 1.5, critical),
    # l1 = 2 (0.5), l2 = 1 (1.0, not critical). Non-critical licences requested: {l1, l2} -> d = 2.
    running = [(job(100, licences=[0]), 0, 0.0)]
    jobs = [job(1, licences=[0]), job(2, licences=[0, 1]), job(3, licences=[1]), job(4), job(5, licences=[2])]
    q, _ = _queue(jobs, copies=(2, 4, 1), running=running)
    assert q.licence_requests.tolist() == [3, 2, 1]
    assert LsLicences(weight=1.0).deltas(q).tolist() == pytest.approx([3.0, 3.5, 0.5, 0.0, 1.0])
    assert LsLicences(weight=2.0).deltas(q).tolist() == pytest.approx([6.0, 7.0, 1.0, 0.0, 2.0])


def test_wait_min() -> None:
    q, _ = _queue([job(1, estimate=1000.0), job(2, estimate=2000.0), job(3, estimate=4000.0)])
    assert WaitMinimization(weight=2.0).deltas(q).tolist() == pytest.approx([2.0, 1.0, 0.5])


def test_weighted_order_and_tie_break() -> None:
    order = WeightedHeuristics(heuristics=[WaitMinimization(weight=1.0)])
    jobs = [job(5, submit=2.0, estimate=100.0), job(3, submit=1.0, estimate=200.0), job(4, submit=1.0, estimate=100.0)]
    v = view(cluster([(8, 100.0)]), jobs)
    idx = order.order(v, 10.0)
    # Shortest first; among the two 100 s jobs, earlier submit (job 4) first.
    assert [v.queue.jobs[i].job_id for i in idx] == [4, 5, 3]
    assert np.array_equal(np.sort(idx), np.arange(3))
