"""Local schedulers on hand-built snapshots: exact decisions, no simulator, no clock."""

from __future__ import annotations

import pkgutil

import pytest

import metasched.policy.local as local
from metasched.model.job import Job
from metasched.policy.base import RunningJob, SiteView
from metasched.policy.local import MACHINE_REGISTRY, REGISTRY, ConservativeBackfill, EasyBackfill, FcfsScheduler


def job(job_id: int, submit: float, estimate: float, procs: int) -> Job:
    return Job(job_id=job_id, submit_time=submit, run_time=estimate, requested_time=estimate, requested_procs=procs)


def running(job_id: int, start: float, estimate: float, procs: int) -> RunningJob:
    return RunningJob(
        job=job(job_id, start, estimate, procs), start_time=start, procs=procs, expected_end=start + estimate
    )


# P=10 at now=4: jobs 1 (5 procs, ends 10), 2 (2 procs, ends 20), 5 (1 proc, ends 53) run: 2 free.
RUNNING = [running(2, 0, 20, 2), running(1, 0, 10, 5), running(5, 3, 50, 1)]
QUEUE = [
    job(3, 1, 10, 7),  # head: at 10, 2 + 5 = 7 free -> shadow 10, extra 0
    job(6, 4, 50, 1),  # fits, ends after 10, 1 > extra -> waits
    job(7, 4, 6, 1),  # 4 + 6 = 10 <= 10 -> starts (1 free)
    job(8, 4, 6, 2),  # ends by the shadow but 2 > 1 free -> waits
    job(9, 4, 5, 1),  # 4 + 5 <= 10 -> starts (0 free)
]
VIEW = SiteView(total_procs=10, free_procs=2, running=RUNNING, queue=QUEUE)


def ids(jobs: list[Job]) -> list[int]:
    return [j.job_id for j in jobs]


def test_fcfs_stops_at_the_first_job_that_does_not_fit() -> None:
    plan = FcfsScheduler().plan(VIEW, 4)
    assert ids(plan.starts) == [] and plan.reservations == {}
    view = SiteView(total_procs=10, free_procs=8, running=[], queue=[job(1, 0, 5, 3), job(2, 0, 5, 6), job(3, 0, 5, 1)])
    assert ids(FcfsScheduler().plan(view, 0).starts) == [1]


def test_easy_plan_hand_worked() -> None:
    plan = EasyBackfill().plan(VIEW, 4)
    assert ids(plan.starts) == [7, 9]
    assert plan.reservations == {3: 10}


def test_easy_counts_every_job_ending_at_the_shadow_time_in_the_extra() -> None:
    # 4 procs, 0 free; jobs end at 10 (2 procs) and 10 (2 procs): head (2) shadow 10, extra 2.
    view = SiteView(
        total_procs=4,
        free_procs=1,
        running=[running(1, 0, 10, 2), running(2, 0, 10, 1)],
        queue=[job(3, 1, 5, 2), job(4, 1, 100, 1)],
    )
    plan = EasyBackfill().plan(view, 1)
    assert plan.reservations == {3: 10}
    assert ids(plan.starts) == [4]  # 1 + 100 > 10 but 1 <= extra (1 + 2 + 1 - 2 = 2)


def test_easy_without_sorted_running_gives_the_same_plan() -> None:
    by_end = sorted(RUNNING, key=lambda r: (r.expected_end, r.job.job_id))
    view = SiteView(total_procs=10, free_procs=2, running=RUNNING, queue=QUEUE, running_by_end=by_end)
    a, b = EasyBackfill().plan(view, 4), EasyBackfill().plan(VIEW, 4)
    assert (ids(a.starts), a.reservations) == (ids(b.starts), b.reservations)


def test_conservative_plan_hand_worked() -> None:
    # Profile at 4: 2 free on [4,10), 7 on [10,20), 9 on [20,53), 10 after.
    # 3 (7 procs, 10 s): [10,20) -> reserved 10; left: 2 on [4,10), 0 on [10,20).
    # 6 (1, 50 s): needs [s, s+50) -> 20. 7 (1, 6 s): [4,10) -> starts (1 left on [4,10)).
    # 8 (2, 6 s): [4,10) has 1 -> [20,26) beside 6 (9 - 1 = 8 free) -> 20.
    # 9 (1, 5 s): [4, 9) has 1 -> starts.
    plan = ConservativeBackfill().plan(VIEW, 4)
    assert ids(plan.starts) == [7, 9]
    assert plan.reservations == {3: 10, 6: 20, 8: 20}


def test_registry_lists_every_local_scheduler_module() -> None:
    # Private modules (a compiled kernel, say) hold no policy.
    modules = {m.name for m in pkgutil.iter_modules(local.__path__) if not m.name.startswith("_")}
    every = {**REGISTRY, **MACHINE_REGISTRY}
    registered = {cls.__module__.rsplit(".", 1)[1] for cls in every.values()}
    assert modules == registered
    for key, cls in every.items():
        assert cls.key == key
        assert cls.__doc__ and "Source" in cls.__doc__ and "Invariant" in cls.__doc__ and "Tie-break" in cls.__doc__


@pytest.mark.parametrize("cls", [EasyBackfill, ConservativeBackfill, FcfsScheduler])
def test_plans_stay_within_the_free_processors(cls: type) -> None:
    plan = cls().plan(VIEW, 4)
    assert sum(j.requested_procs for j in plan.starts) <= VIEW.free_procs
