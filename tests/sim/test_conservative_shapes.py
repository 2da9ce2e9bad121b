"""Conservative backfilling on queues of few job shapes (width, estimate): a full pass starts the
search of a job at the start of the previous job of the same shape (and width); every
reservation must still be the from-scratch earliest fit of the reference."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.base import RunningJob, SiteView
from metasched.policy.local import ConservativeBackfill
from metasched.sim.replay import simulate
from tests.sim.reference import Interval, earliest_fit, reference_schedule

SHAPES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def views(draw: st.DrawFn) -> tuple[SiteView, float]:
    """A site of up to 8 processors, a few running jobs and a long queue drawn from 3 shapes."""
    procs = draw(st.integers(2, 8))
    now = 10.0
    running: list[RunningJob] = []
    free = procs
    for i in range(draw(st.integers(0, 4))):
        width = draw(st.integers(1, procs))
        if width > free:
            break
        end = now + draw(st.integers(1, 15))
        job = Job(job_id=1000 + i, submit_time=0, run_time=end, requested_time=end, requested_procs=width)
        running.append(RunningJob(job=job, start_time=0.0, procs=width, expected_end=end))
        free -= width
    shapes = draw(st.lists(st.tuples(st.integers(1, procs), st.integers(1, 12)), min_size=1, max_size=3))
    picks = draw(st.lists(st.integers(0, len(shapes) - 1), min_size=1, max_size=25))
    queue = [
        Job(job_id=i, submit_time=i, run_time=shapes[k][1], requested_time=shapes[k][1], requested_procs=shapes[k][0])
        for i, k in enumerate(picks)
    ]
    return SiteView(total_procs=procs, free_procs=free, running=running, queue=queue), now


@SHAPES
@given(views())
def test_every_reservation_is_the_reference_earliest_fit(case: tuple[SiteView, float]) -> None:
    view, now = case
    plan = ConservativeBackfill().plan(view, now)
    intervals: list[Interval] = [(now, r.expected_end, r.procs) for r in view.running]
    started = {job.job_id for job in plan.starts}
    for job in view.queue:
        start = earliest_fit(intervals, view.total_procs, now, job.requested_time, job.requested_procs)
        intervals.append((start, start + job.requested_time, job.requested_procs))
        if job.job_id in started:
            assert start == now
        else:
            assert plan.reservations[job.job_id] == start


@SHAPES
@given(
    st.integers(2, 6),
    st.lists(st.tuples(st.integers(0, 20), st.sampled_from([(1, 4), (2, 4), (2, 9)]), st.integers(0, 9)), max_size=30),
)
def test_replay_on_few_shapes_matches_the_reference(procs: int, rows: list[tuple[int, tuple[int, int], int]]) -> None:
    jobs = [
        Job(job_id=i, submit_time=s, run_time=min(run, est), requested_time=est, requested_procs=min(w, procs))
        for i, (s, (w, est), run) in enumerate(rows)
    ]
    schedule = simulate(jobs, procs, ConservativeBackfill())
    start = {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}
    assert start == reference_schedule(jobs, procs, "conservative")
