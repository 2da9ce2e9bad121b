"""Hand-worked schedules: every expected start time is derived in the comments."""

from __future__ import annotations

import pytest

from metasched.model.job import Job
from metasched.policy.base import LocalScheduler, Plan, SiteView
from metasched.policy.local import EasyBackfill
from metasched.sim.engine import EventKind, EventQueue
from metasched.sim.replay import simulate
from tests.sim.reference import reference_schedule
from tests.sim.workloads import job, starts


def test_event_queue_orders_by_time_then_kind_then_sequence() -> None:
    q = EventQueue()
    q.push(5, EventKind.SUBMIT, "a")
    q.push(5, EventKind.END, "b")
    q.push(3, EventKind.SUBMIT, "c")
    q.push(5, EventKind.END, "d")
    q.push(5, EventKind.CANCEL, "f")
    q.push(5, EventKind.SUBMIT, "e")
    assert q.peek_time() == 3
    assert q.pop_instant() == (3, [(EventKind.SUBMIT, "c")])
    # At t=5: ends (in push order), then the cancel, then the submits (in push order).
    assert q.pop_instant() == (
        5,
        [
            (EventKind.END, "b"),
            (EventKind.END, "d"),
            (EventKind.CANCEL, "f"),
            (EventKind.SUBMIT, "a"),
            (EventKind.SUBMIT, "e"),
        ],
    )
    assert len(q) == 0 and q.peek_time() == float("inf")


class SpyScheduler(LocalScheduler):
    """FCFS that records what every pass saw."""

    key = "spy"

    def __init__(self) -> None:
        super().__init__()
        self.passes: list[tuple[float, int, list[int], list[int]]] = []

    def plan(self, view: SiteView, now: float) -> Plan:
        self.passes.append(
            (now, view.free_procs, [j.job_id for j in view.queue], sorted(r.job.job_id for r in view.running))
        )
        free = view.free_procs
        chosen = []
        for j in view.queue:
            if j.requested_procs > free:
                break
            chosen.append(j)
            free -= j.requested_procs
        return Plan(starts=chosen)


def test_ends_then_submits_then_one_pass() -> None:
    # P=4. Jobs 1 and 2 (2 procs each) start at 0 and both end at 10. Jobs 4 and 3 arrive at 10
    # (pushed in that order; queued by (submit, job_id), so 3 first). At t=10 exactly one pass
    # runs, and it already sees both ends released (4 free) and both arrivals queued.
    jobs = [job(1, 0, 10, 10, 2), job(2, 0, 10, 10, 2), job(4, 10, 5, 5, 3), job(3, 10, 5, 5, 1)]
    spy = SpyScheduler()
    schedule = simulate(jobs, 4, spy)
    assert spy.passes[0] == (0, 4, [1, 2], [])
    at_10 = [p for p in spy.passes if p[0] == 10]
    assert at_10 == [(10, 4, [3, 4], [])]
    got = {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
    assert got == {1: 0, 2: 0, 3: 10, 4: 10}


def test_zero_length_job_ends_at_its_start_instant_before_a_further_pass() -> None:
    # P=2. Job 1 (2 procs, run 0) starts at 0 and ends at 0; job 2 (2 procs) queued at 0 behind
    # it starts in a second pass at t=0, after that end is released.
    jobs = [job(1, 0, 0, 5, 2), job(2, 0, 3, 3, 2)]
    assert starts(jobs, 2, "fcfs") == {1: 0, 2: 0}


FCFS_JOBS = [
    job(1, 0, 10, 10, 2),  # starts 0
    job(2, 0, 5, 5, 2),  # starts 0 (same-instant arrival, queued after 1 by job_id); ends 5
    job(3, 0, 3, 3, 1),  # 0 free at 0 -> waits; starts 5 when 2 ends (2 free); ends 8
    job(4, 1, 1, 1, 1),  # behind 3; at 5 the 1 free left fits -> starts 5; ends 6
    job(5, 5, 2, 2, 3),  # arrives at 5 as job 2 ends: after 3 and 4 start 0 are free -> waits;
    # at 6: 1 free, at 8: 2 free, at 10 (job 1 ends): 4 free -> starts 10
]


def test_fcfs_hand_worked() -> None:
    assert starts(FCFS_JOBS, 4, "fcfs") == {1: 0, 2: 0, 3: 5, 4: 5, 5: 10}


# P=10. Shadow and extra processors:
SHADOW_JOBS = [
    job(1, 0, 10, 10, 5),  # starts 0, ends 10
    job(2, 0, 20, 20, 2),  # starts 0, ends 20; 3 free
    job(3, 1, 10, 10, 7),  # head, blocked (3 free): at 10 job 1 frees 5 -> 8 >= 7: shadow 10, extra 1
    job(4, 2, 8, 8, 1),  # 2 + 8 = 10 <= shadow: ends exactly at the shadow time -> starts 2 (2 free)
    job(5, 3, 50, 50, 1),  # 3 + 50 > 10 but 1 <= extra 1 -> starts 3 on the extra processor (1 free)
    job(6, 4, 50, 50, 1),  # at 4: shadow 10 (1 + 5 + 1 = 7), extra 0; ends after it and 1 > extra -> waits
    job(7, 4, 6, 6, 1),  # same instant, behind 6 in the queue: 4 + 6 = 10 <= shadow -> starts 4 (0 free)
    # at 10: jobs 1, 4, 7 end -> 7 free: job 3 starts at 10 (its shadow); job 6 does not fit (0 free)
    # at 20: jobs 2 and 3 end -> job 6 starts at 20
]


def test_easy_shadow_time_and_extra_processors() -> None:
    assert starts(SHADOW_JOBS, 10, "easy") == {1: 0, 2: 0, 3: 10, 4: 2, 5: 3, 6: 20, 7: 4}


def test_conservative_on_the_shadow_workload() -> None:
    # Every backfill above delays no reservation: job 3 holds [10, 20); job 5 (1 proc, [3, 53))
    # fits beside it (at [10, 20) 1 + 5 + 1 free - 7 = 1... exactly its processor); job 6 finds
    # nothing free on [10, 20) and is reserved at 20; job 7 fits [4, 10). Same starts as EASY.
    assert starts(SHADOW_JOBS, 10, "conservative") == {1: 0, 2: 0, 3: 10, 4: 2, 5: 3, 6: 20, 7: 4}


def test_fcfs_on_the_shadow_workload() -> None:
    # No backfilling: 3 waits for 10; 4..7 wait behind it. At 10: 10 - 2 (job 2) = 8 free -> 3
    # starts (1 free), 4 starts (0 free). At 18 job 4 ends (1 free) -> 5 starts; at 20 job 2 and
    # job 3 end (9 free) -> 6 and 7 start.
    assert starts(SHADOW_JOBS, 10, "fcfs") == {1: 0, 2: 0, 3: 10, 4: 10, 5: 18, 6: 20, 7: 20}


# P=4. EASY's extra-processors rule delays the second queued job; conservative does not allow it.
EXTRA_JOBS = [
    job(1, 0, 10, 10, 3),  # starts 0, ends 10; 1 free
    job(2, 1, 10, 10, 2),  # head: shadow 10 (1 + 3 >= 2), extra 2. Conservative: reserved [10, 20)
    job(3, 1, 10, 10, 2),  # EASY: 2 > 1 free -> waits. Conservative: [10, 20) has 2 left -> reserved 10
    job(4, 2, 100, 100, 1),  # EASY: fits, ends after the shadow, 1 <= extra 2 -> starts 2.
    # Conservative: [2, 102) would overlap [10, 20) where 0 are left -> reserved at 20.
]


def test_easy_extra_processors_delay_the_second_job() -> None:
    # EASY at 10: job 1 ends (3 free): job 2 starts (1 free); job 3 (2) is the new head, blocked;
    # its shadow is 20 when job 2 ends -> starts 20.
    assert starts(EXTRA_JOBS, 4, "easy") == {1: 0, 2: 10, 3: 20, 4: 2}


def test_conservative_keeps_every_reservation() -> None:
    # At 10 job 1 ends (4 free): jobs 2 and 3 start; job 4 starts at 20 when they end.
    assert starts(EXTRA_JOBS, 4, "conservative") == {1: 0, 2: 10, 3: 10, 4: 20}


def test_fcfs_never_overtakes() -> None:
    # At 10: 4 free -> jobs 2 and 3 start (0 free); job 4 waits until they end at 20.
    assert starts(EXTRA_JOBS, 4, "fcfs") == {1: 0, 2: 10, 3: 10, 4: 20}


# P=4. Jobs ending before their estimate.
EARLY_JOBS = [
    job(1, 0, 5, 100, 2),  # starts 0, expected end 100, really ends 5
    job(2, 0, 50, 50, 2),  # starts 0, ends 50
    job(3, 1, 10, 10, 3),  # head: shadow 100 (at 50 only 2 free), extra 1
    job(5, 5, 40, 40, 2),  # arrives as job 1 ends (released first: 2 free). Head's shadow is now 50
    # (job 2's end: 2 + 2 >= 3): 5 + 40 = 45 <= 50 -> starts 5
    # at 45: job 5 ends (2 free < 3); at 50: job 2 ends (4 free) -> job 3 starts 50
]


def test_easy_early_end_moves_the_shadow() -> None:
    assert starts(EARLY_JOBS, 4, "easy") == {1: 0, 2: 0, 3: 50, 5: 5}


def test_conservative_recompresses_on_an_early_end() -> None:
    # P=4. Job 1 holds the whole machine until its estimate 20 but ends at 5.
    jobs = [
        job(1, 0, 5, 20, 4),  # starts 0, really ends 5
        job(2, 1, 10, 10, 2),  # reserved [20, 30)
        job(3, 1, 10, 10, 4),  # reserved [30, 40)
        job(4, 2, 10, 10, 2),  # reserved [20, 30) beside job 2
        # at 5, rebuilt from scratch: job 2 fits [5, 15) -> starts; job 3 needs 4: [5, 15) has 2,
        # so [15, 25); job 4 fits [5, 15) beside job 2 -> starts 5. At 15 jobs 2, 4 end: job 3.
    ]
    assert starts(jobs, 4, "conservative") == {1: 0, 2: 5, 3: 15, 4: 5}
    # EASY at 5: 2 starts (2 free), 3 is the head (shadow 15, extra 2), 4 fits extra -> 5 as well.
    assert starts(jobs, 4, "easy") == {1: 0, 2: 5, 3: 15, 4: 5}


# P=4. Overrunning jobs (run > estimate): the planner treats an expected end in the past as now.
OVERRUN_JOBS = [
    job(1, 0, 30, 10, 2),  # starts 0, expected end 10, really ends 30
    job(2, 0, 100, 100, 2),  # starts 0, ends 100
    job(3, 1, 10, 10, 4),  # head (needs 4): shadow/reservation 100
    job(4, 20, 5, 5, 2),  # at 20 job 1 is past its expected end: the planner counts its 2
    # processors as free from now (20). Conservative places job 4 at 20, but 0 are really free:
    # it keeps that reservation and starts at 30 when job 1 really ends. EASY: 0 free -> waits;
    # at 30: 2 free, 30 + 5 <= shadow 100 -> starts 30.
]


@pytest.mark.parametrize("scheduler", ["easy", "conservative"])
def test_overrunning_job_counts_as_ending_now(scheduler: str) -> None:
    assert starts(OVERRUN_JOBS, 4, scheduler) == {1: 0, 2: 0, 3: 100, 4: 30}


def test_overrun_shadow_at_now() -> None:
    # Plan at 20 of the overrun workload with job 4 only: job 1's end (10) is past -> counted at
    # 20, so the head's shadow is now itself.
    running = [
        _running(job(1, 0, 30, 10, 2), 0),
        _running(job(2, 0, 100, 100, 2), 0),
    ]
    view = SiteView(total_procs=4, free_procs=0, running=running, queue=[job(4, 20, 5, 5, 2)])
    plan = EasyBackfill().plan(view, 20)
    assert (plan.starts, plan.reservations) == ([], {4: 20})


def _running(j: Job, start: float):  # type: ignore[no-untyped-def]
    from metasched.policy.base import RunningJob

    return RunningJob(job=j, start_time=start, procs=j.requested_procs, expected_end=start + j.requested_time)


@pytest.mark.parametrize(
    "jobs,procs",
    [(FCFS_JOBS, 4), (SHADOW_JOBS, 10), (EXTRA_JOBS, 4), (EARLY_JOBS, 4), (OVERRUN_JOBS, 4)],
)
@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative"])
def test_reference_agrees_on_the_hand_worked_workloads(jobs: list[Job], procs: int, scheduler: str) -> None:
    assert reference_schedule(jobs, procs, scheduler) == starts(jobs, procs, scheduler)
