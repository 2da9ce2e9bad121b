"""Hypothesis properties of the simulator and its three local schedulers on small random workloads."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.base import LocalScheduler, Plan, SiteView
from metasched.policy.local import REGISTRY
from metasched.sim.replay import simulate
from tests.sim.reference import reference_schedule

SCHEDULERS = sorted(REGISTRY)


@st.composite
def workloads(draw: st.DrawFn, *, exact: bool = False, overrun: bool = False) -> tuple[list[Job], int]:
    """``(jobs, procs)``: up to 14 jobs on up to 8 processors, with many same-instant events
    (small integer times). ``exact``: run == estimate. ``overrun``: runs may exceed estimates."""
    procs = draw(st.integers(1, 8))
    n = draw(st.integers(1, 14))
    jobs = []
    for i in range(n):
        submit = draw(st.integers(0, 30))
        estimate = draw(st.integers(1, 20))
        if exact:
            run = estimate
        elif overrun:
            run = draw(st.integers(0, 30))
        else:
            run = draw(st.integers(0, estimate))
        width = draw(st.integers(1, procs))
        jobs.append(Job(job_id=i, submit_time=submit, run_time=run, requested_time=estimate, requested_procs=width))
    return jobs, procs


class Recording(LocalScheduler):
    """Wraps a scheduler and keeps every reservation it promised: ``{job_id: [instants]}``."""

    key = "recording"

    def __init__(self, inner: LocalScheduler) -> None:
        super().__init__()
        self.inner = inner
        self.promises: dict[int, list[float]] = {}

    def plan(self, view: SiteView, now: float) -> Plan:
        plan = self.inner.plan(view, now)
        for job_id, at in plan.reservations.items():
            self.promises.setdefault(job_id, []).append(at)
        return plan


def run(jobs: list[Job], procs: int, key: str) -> tuple[dict[int, float], dict[int, float]]:
    schedule = simulate(jobs, procs, REGISTRY[key]())
    start = {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
    end = {j.job_id: float(e) for j, e in zip(schedule.jobs, schedule.end_time, strict=True)}
    return start, end


COMMON = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(workloads(overrun=True), st.sampled_from(SCHEDULERS))
def test_capacity_never_exceeded_and_no_start_before_submit(workload: tuple[list[Job], int], key: str) -> None:
    jobs, procs = workload
    start, end = run(jobs, procs, key)
    for j in jobs:
        assert start[j.job_id] >= j.submit_time
        assert end[j.job_id] == start[j.job_id] + j.run_time
    # Sweep: at one instant, ends release before starts take. A zero-length job holds its
    # processors over no interval of time, so it cannot overlap anything.
    held = [j for j in jobs if j.run_time > 0]
    events = sorted(
        [(end[j.job_id], 0, -j.requested_procs) for j in held] + [(start[j.job_id], 1, j.requested_procs) for j in held]
    )
    in_use = 0
    for _, _, delta in events:
        in_use += delta
        assert 0 <= in_use <= procs


@COMMON
@given(workloads(overrun=True), st.sampled_from(SCHEDULERS))
def test_identical_output_for_identical_input(workload: tuple[list[Job], int], key: str) -> None:
    jobs, procs = workload
    a = simulate(jobs, procs, REGISTRY[key]())
    b = simulate([j.copy() for j in jobs], procs, REGISTRY[key]())
    assert a.start_time.tobytes() == b.start_time.tobytes()
    assert a.end_time.tobytes() == b.end_time.tobytes()


@COMMON
@given(workloads())
def test_fcfs_never_reorders(workload: tuple[list[Job], int]) -> None:
    jobs, procs = workload
    start, _ = run(jobs, procs, "fcfs")
    ordered = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    starts = [start[j.job_id] for j in ordered]
    assert starts == sorted(starts)


@COMMON
@given(workloads(exact=True), st.sampled_from(["easy", "conservative"]))
def test_backfilling_meets_every_reservation_with_exact_estimates(workload: tuple[list[Job], int], key: str) -> None:
    """With run == estimate reservations are exact: EASY never delays the head past the shadow
    time it was promised at any pass; conservative never delays any job past any reservation
    it was ever given (so no later job delayed an earlier one)."""
    jobs, procs = workload
    recorder = Recording(REGISTRY[key]())
    schedule = simulate(jobs, procs, recorder)
    start = {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
    for job_id, promised in recorder.promises.items():
        assert start[job_id] <= min(promised), (job_id, start[job_id], promised)
    if key == "conservative":
        # With exact estimates a conservative reservation never moves: every promise is kept exactly.
        for job_id, promised in recorder.promises.items():
            assert set(promised) == {start[job_id]}


@COMMON
@given(workloads(overrun=True), st.sampled_from(SCHEDULERS))
def test_fast_simulator_matches_the_reference(workload: tuple[list[Job], int], key: str) -> None:
    jobs, procs = workload
    start, _ = run(jobs, procs, key)
    assert start == reference_schedule(jobs, procs, key)


@COMMON
@given(workloads(), st.sampled_from(SCHEDULERS))
def test_fast_simulator_matches_the_reference_with_early_ends(workload: tuple[list[Job], int], key: str) -> None:
    jobs, procs = workload
    start, _ = run(jobs, procs, key)
    assert start == reference_schedule(jobs, procs, key)
