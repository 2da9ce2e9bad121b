"""Flexible Backfilling on machines, exact decisions on hand-built clusters."""

from __future__ import annotations

import pytest

from metasched.policy.local.flexible import FlexibleBackfill
from metasched.policy.priority.arrival import ArrivalOrder
from metasched.policy.priority.ms_priority import MsPriorityOrder

from .helpers import cluster, job, view

EASY = FlexibleBackfill(order=ArrivalOrder())


def starts(plan):  # type: ignore[no-untyped-def]
    return [(j.job_id, m) for j, m in plan.starts]


def test_most_powerful_fitting_machine() -> None:
    cl = cluster([(4, 100.0), (8, 300.0), (8, 200.0)])
    plan = EASY.plan(view(cl, [job(1, cpus=4), job(2, cpus=8), job(3, cpus=4), job(4, cpus=4)]), 0.0)
    # 1 -> m1 (300); 2 -> m2 (m1 has 4 left); 3 -> m1; 4 -> m0.
    assert starts(plan) == [(1, 1), (2, 2), (3, 1), (4, 0)]
    assert plan.reservation is None


def test_head_reservation_and_backfill() -> None:
    # m0: 8 CPUs bench 200; m1: 8 CPUs bench 100. Running: a 4-CPU job on m0 ending at 100
    # (estimate 200 on bench 100 -> 100 s on bench 200), an 8-CPU job on m1 ending at 300.
    cl = cluster([(8, 200.0), (8, 100.0)])
    running = [(job(90, cpus=4, estimate=200.0), 0, 0.0), (job(91, cpus=8, estimate=300.0), 1, 0.0)]
    queue = [
        job(1, submit=1.0, cpus=8, estimate=100.0),  # head: m0 has 4 free, 8 at t = 100 -> shadow 100 on m0
        job(2, submit=2.0, cpus=4, estimate=400.0),  # 200 s on m0, ends 200 > 100, extra = 0: must wait
        job(3, submit=3.0, cpus=4, estimate=100.0),  # 50 s on m0, ends 50 <= 100: backfills on m0
    ]
    plan = EASY.plan(view(cl, queue, running), 0.0)
    assert starts(plan) == [(3, 0)]
    assert plan.reservation == (1, 0, 100.0)


def test_extra_cpus_allow_long_backfill() -> None:
    cl = cluster([(8, 100.0)])
    running = [(job(90, cpus=6, estimate=100.0), 0, 0.0)]
    queue = [job(1, submit=1.0, cpus=6), job(2, submit=2.0, cpus=2, estimate=1000.0)]
    # Head needs 6; at t = 100, 8 free -> extra 2: job 2 (2 CPUs, long) may run now.
    plan = EASY.plan(view(cl, queue, running), 0.0)
    assert starts(plan) == [(2, 0)]
    assert plan.reservation == (1, 0, 100.0)


def test_licences_block_and_reserve() -> None:
    cl = cluster([(8, 100.0), (8, 100.0)], copies=(1,))
    running = [(job(90, cpus=1, estimate=50.0, licences=[0]), 0, 0.0)]
    queue = [
        job(1, submit=1.0, cpus=1, licences=[0]),  # no copy free until 50: head, reserved on m0 at 50
        job(2, submit=2.0, cpus=1, licences=[0], estimate=10.0),  # same licence, no copy now
        job(3, submit=3.0, cpus=1),
    ]
    plan = EASY.plan(view(cl, queue, running), 0.0)
    assert starts(plan) == [(3, 0)]
    assert plan.reservation == (1, 0, 50.0)


def test_machine_must_run_the_licence() -> None:
    cl = cluster([(8, 500.0), (8, 100.0)], copies=(2,), all_licences=False)
    cl2 = type(cl)(
        name="C",
        machines=(cl.machines[0], type(cl.machines[1])("m1", 8, 100.0, frozenset({0}))),
        licences=cl.licences,
    )
    plan = EASY.plan(view(cl2, [job(1, licences=[0]), job(2)]), 0.0)
    assert starts(plan) == [(1, 1), (2, 0)]


def test_priority_order() -> None:
    cl = cluster([(4, 100.0)])
    queue = [job(1, submit=1.0, cpus=4, priority=0), job(2, submit=2.0, cpus=4, priority=5)]
    plan = FlexibleBackfill(order=MsPriorityOrder()).plan(view(cl, queue), 0.0)
    assert starts(plan) == [(2, 0)]
    assert plan.reservation is not None and plan.reservation[0] == 1


def test_job_that_fits_nowhere_is_an_error() -> None:
    cl = cluster([(4, 100.0)])
    with pytest.raises(ValueError, match="fits no machine"):
        EASY.plan(view(cl, [job(1, cpus=8)]), 0.0)
