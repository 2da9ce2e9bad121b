"""``ConservativeBackfill.replan`` (repair of the previous schedule) against ``plan`` (from scratch).

A random single site evolves through arrivals, starts of what the plan starts, early and on-time
ends, cancellations of queued jobs and time advancing; at every step the repaired plan must equal
the from-scratch plan exactly (same starts in the same order, same reservations).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.policy.base import RunningJob, SiteView
from metasched.policy.local import ConservativeBackfill
from metasched.policy.local.conservative import ConservativeSchedule
from metasched.policy.priority import Efficacy
from metasched.policy.priority.efficacy import EFFICACY_ATTR


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, list[Job], list[tuple[str, int]], bool]:
    capacity = draw(st.integers(1, 8))
    n = draw(st.integers(1, 14))
    jobs = []
    for i in range(n):
        req = float(draw(st.integers(1, 30)))
        job = Job(i + 1, float(i), float(draw(st.integers(0, int(req)))), req, draw(st.integers(1, capacity)))
        job.attrs[EFFICACY_ATTR] = draw(st.sampled_from([1.0, 0.5, 0.25]))
        jobs.append(job)
    actions = draw(
        st.lists(
            st.tuples(st.sampled_from(["arrive", "arrive", "end", "end_early", "cancel", "tick"]), st.integers(0, 99)),
            min_size=1,
            max_size=40,
        )
    )
    return capacity, jobs, actions, draw(st.booleans())


def _same(a: object, b: object) -> None:
    assert [j.job_id for j in a.starts] == [j.job_id for j in b.starts]  # type: ignore[attr-defined]
    assert a.reservations == b.reservations  # type: ignore[attr-defined]


@given(histories())
@settings(max_examples=100, deadline=None)
def test_replan_equals_plan_through_a_random_history(
    history: tuple[int, list[Job], list[tuple[str, int]], bool],
) -> None:
    capacity, jobs, actions, efficacy = history
    sched = ConservativeBackfill(order=Efficacy()) if efficacy else ConservativeBackfill()
    now = 0.0
    queue: list[Job] = []
    running: dict[int, RunningJob] = {}
    pending = list(jobs)
    state: object = None
    for action, pick in actions:
        if action == "arrive" and pending:
            queue.append(pending.pop(0))
        elif action in ("end", "end_early") and running:
            r = sorted(running.values(), key=lambda r: r.job.job_id)[pick % len(running)]
            # An on-time end happens at the expected end; an early one now (if not past it).
            now = max(now, r.expected_end) if action == "end" else now
            del running[r.job.job_id]
        elif action == "cancel" and queue:
            queue.pop(pick % len(queue))
        elif action == "tick":
            # Up to the next expected end, or (odd picks) past it: then old reservations lie
            # in the past and running jobs overrun their estimates.
            nxt = min((r.expected_end for r in running.values()), default=now + 1.0)
            now = now + float(pick % 31) if pick % 2 else max(now, min(nxt, now + float(pick % 7)))
        free = capacity - sum(r.procs for r in running.values())
        view = SiteView(capacity, free, list(running.values()), list(queue))
        reference = sched.plan(view, now)
        plan, state = sched.replan(view, now, state)
        _same(plan, reference)
        for job in plan.starts:
            queue.remove(job)
            running[job.job_id] = RunningJob(job, now, job.requested_procs, now + job.requested_time)


def test_replan_does_not_modify_the_previous_schedule() -> None:
    sched = ConservativeBackfill()
    jobs = [Job(1, 0.0, 5.0, 10.0, 2), Job(2, 0.0, 5.0, 10.0, 2), Job(3, 0.0, 5.0, 4.0, 1)]
    view = SiteView(2, 2, [], jobs)
    plan, state = sched.replan(view, 0.0, None)
    assert isinstance(state, ConservativeSchedule)
    assert [j.job_id for j in plan.starts] == [1] and plan.reservations == {2: 10.0, 3: 20.0}
    snapshot = (list(state.ids), list(state.starts), state.base.steps())
    # Job 1 ends early at 3: job 2 moves to 3, job 3 then backfills nowhere before 13.
    later = SiteView(2, 2, [], jobs[1:])
    plan2, _ = sched.replan(later, 3.0, state)
    _same(plan2, sched.plan(later, 3.0))
    assert [j.job_id for j in plan2.starts] == [2] and plan2.reservations == {3: 13.0}
    assert (list(state.ids), list(state.starts), state.base.steps()) == snapshot


def test_profile_fits_and_bounded_search_by_hand() -> None:
    prof = Profile.from_releases(10, 0, 2, [(10, 5), (20, 3)])  # 2 on [0,10), 7 on [10,20), 10 after
    assert prof.fits(2, 100, 0) and not prof.fits(3, 5, 8) and prof.fits(7, 10, 10)
    assert prof.earliest_fit_before(3, 5, 0, 10) is None
    assert prof.earliest_fit_before(3, 5, 0, 11) == 10
    assert prof.earliest_fit_before(8, 1, 0, 30) == 20
    other = prof.copy()
    other.take(10, 15, 6)
    assert other.steps() == [(0, 2), (10, 1), (20, 4), (25, 10)]
    assert prof.steps() == [(0, 2), (10, 7), (20, 10)]
