"""The multi-site driver: hand-worked schedules and invariants on random workloads."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model import Job, Site
from metasched.policy.base import LocalScheduler
from metasched.policy.local import ConservativeBackfill, EasyBackfill
from metasched.policy.meta import CancelSlowerOnly, CompletionTime, KReservations, LeastLoad, MetaScheduler
from metasched.policy.priority import Efficacy
from metasched.sim.multisite import MultiSiteResult, simulate_multisite
from metasched.sim.multisite_metrics import summarise_multisite


def two_sites() -> list[Site]:
    """One processor each; site 0 runs class 0 twice as slowly as site 1."""
    return [Site("slow", 1, speed={0: 2.0}), Site("fast", 1, speed={0: 1.0})]


def hand_jobs() -> list[Job]:
    # A: estimate 100, really 30. J: arrives at 10, 50 s on the fast site, 100 on the slow one.
    return [Job(1, 0.0, 30.0, 100.0, 1, app_class=0), Job(2, 10.0, 50.0, 50.0, 1, app_class=0)]


#: The hand-worked cases run on both paths: the Python driver (``check``: every cached plan checked too)
#: and the compiled event loop (:mod:`metasched.sim._multisite_kernel`).
PATHS = [pytest.param({"check": True}, id="driver"), pytest.param({"kernel": True}, id="compiled")]


@pytest.mark.parametrize("path", PATHS)
def test_hand_worked_completion_time_cancel_all(path: dict[str, bool]) -> None:
    """t=0: both sites could start A; slow completes at 200, fast at 100: denied at slow (2
    messages), starts at fast alone. t=10: J starts at slow (110 <= fast's reservation 100 + 50),
    fast's copy cancelled (3 messages). A ends at 30; J at 110."""
    r = simulate_multisite(hand_jobs(), two_sites(), CompletionTime(k=2), ConservativeBackfill(), log=True, **path)
    assert r.start_time.tolist() == [0.0, 10.0]
    assert r.end_time.tolist() == [30.0, 110.0]
    assert r.site.tolist() == [1, 0]
    assert r.messages.tolist() == [2, 3]
    assert (r.denials, r.kills, r.wasted_proc_s) == (1, 0, 0.0)
    assert r.log is not None
    assert [(t, e, j, s) for t, e, j, s in r.log if j == 1] == [
        (0.0, "submit", 1, 0),
        (0.0, "submit", 1, 1),
        (0.0, "deny", 1, 0),
        (0.0, "start", 1, 1),
        (30.0, "end", 1, 1),
    ]


@pytest.mark.parametrize("path", PATHS)
def test_hand_worked_a_copy_cancelled_and_one_queued_at_once_let_a_job_start(path: dict[str, bool]) -> None:
    """Two sites of 8 processors, every job queued at both (completion-based, FCFS). t=0: R0 (8
    processors, 100 s) starts at site 0, R1 (4 processors, 1,000 s) at site 1. t=1: J (8, 500 s) is
    reserved at 100 on site 0 and at 1,000 on site 1. t=2: W (4, 2,000 s) cannot start on site 1
    (J's reservation there needs all 8 at 1,000) nor on site 0. t=100: R0 ends and N (8, 10 s) is
    queued at both; site 0 starts J (completes at 600, before 1,500), so J's copy on site 1 is
    cancelled; site 1, touched by that cancellation and by N at once, now has W start at 100
    (completes at 2,100, before 600 + 2,000 on site 0). (The compiled loop revises site 1's plan from
    both changes and must go on from the cancelled copy's window although N cannot start.)"""
    jobs = [
        Job(1, 0.0, 100.0, 100.0, 8),
        Job(2, 0.0, 1000.0, 1000.0, 4),
        Job(3, 1.0, 500.0, 500.0, 8),
        Job(4, 2.0, 2000.0, 2000.0, 4),
        Job(5, 100.0, 10.0, 10.0, 8),
    ]
    sites = [Site("a", 8), Site("b", 8)]
    r = simulate_multisite(jobs, sites, CompletionTime(k=2), ConservativeBackfill(), log=True, **path)
    assert r.start_time.tolist()[:4] == [0.0, 0.0, 100.0, 100.0]
    assert r.site.tolist()[:4] == [0, 1, 0, 1]
    assert r.log is not None
    assert (100.0, "cancel", 3, 1) in r.log


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("estimate", "denied"), [(59.0, True), (60.0, False)])
def test_hand_worked_completion_time_decided_at_the_margin(
    path: dict[str, bool], estimate: float, denied: bool
) -> None:
    """As above with A's estimate 59 (60): at t=10 J could complete at 110 on the slow site, and on
    the fast one at 59 + 50 = 109 (60 + 50 = 110, a tie). 109 < 110: J is denied at the slow site,
    waits for the fast one (A ends at 30) and runs 30-80 there. On a tie it starts at the slow site.
    (The compiled loop places the fast copy's reservation only if it may end before 110.)"""
    jobs = [Job(1, 0.0, 30.0, estimate, 1, app_class=0), Job(2, 10.0, 50.0, 50.0, 1, app_class=0)]
    r = simulate_multisite(jobs, two_sites(), CompletionTime(k=2), ConservativeBackfill(), **path)
    if denied:
        assert (r.start_time.tolist(), r.end_time.tolist(), r.site.tolist()) == ([0.0, 30.0], [30.0, 80.0], [1, 1])
        assert r.denials == 2
    else:
        assert (r.start_time.tolist(), r.end_time.tolist(), r.site.tolist()) == ([0.0, 10.0], [30.0, 110.0], [1, 0])
        assert r.denials == 1


@pytest.mark.parametrize("path", PATHS)
def test_hand_worked_cancel_slower_only_kill_and_restart(path: dict[str, bool]) -> None:
    """As above, but J's copy at the fast site stays; when A ends at 30 it can complete at 80 <
    110: the slow copy is killed (20 processor-seconds wasted) and J restarts at the fast site."""
    r = simulate_multisite(hand_jobs(), two_sites(), CancelSlowerOnly(k=2), ConservativeBackfill(), log=True, **path)
    assert r.start_time.tolist() == [0.0, 30.0]
    assert r.end_time.tolist() == [30.0, 80.0]
    assert r.site.tolist() == [1, 1]
    assert r.messages.tolist() == [2, 6]
    assert (r.denials, r.kills, r.wasted_proc_s) == (1, 1, 20.0)
    assert r.busy_proc_s.tolist() == [20.0, 80.0]
    assert r.log is not None
    assert [e for _, e, j, _ in r.log if j == 2] == ["submit", "submit", "start", "kill", "start", "end"]


@pytest.mark.parametrize("path", PATHS)
def test_greedy_sends_each_job_to_the_least_loaded_site(path: dict[str, bool]) -> None:
    sites = [Site("a", 2), Site("b", 2)]
    jobs = [Job(1, 0.0, 100.0, 100.0, 2), Job(2, 0.0, 10.0, 10.0, 2), Job(3, 1.0, 10.0, 10.0, 1)]
    r = simulate_multisite(jobs, sites, LeastLoad(), EasyBackfill(), **path)
    # job 1 -> a (tie, lower index); job 2 -> b (a has load 100); job 3 at t=1: a 99, b 9 -> b.
    assert r.site.tolist() == [0, 1, 1]
    assert r.start_time.tolist() == [0.0, 0.0, 10.0]
    assert r.messages.tolist() == [0, 0, 0]


def test_bad_input_is_refused_clearly() -> None:
    sites = [Site("a", 2)]
    with pytest.raises(ValueError, match="largest site has 2"):
        simulate_multisite([Job(1, 0.0, 1.0, 1.0, 3)], sites, LeastLoad(), EasyBackfill())
    with pytest.raises(ValueError, match="exceeds requested_time"):
        simulate_multisite([Job(1, 0.0, 5.0, 1.0, 1)], sites, LeastLoad(), EasyBackfill())
    with pytest.raises(ValueError, match="appears twice"):
        simulate_multisite([Job(1, 0.0, 1.0, 1.0, 1)] * 2, sites, LeastLoad(), EasyBackfill())


# ------------------------------------------------------------------------------------- properties


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Site], list[Job]]:
    n_sites = draw(st.integers(2, 4))
    procs = draw(st.integers(1, 6))
    factors = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])
    sites = [Site(f"s{i}", procs, speed={c: draw(factors) for c in range(3)}) for i in range(n_sites)]
    jobs = []
    for i in range(draw(st.integers(1, 20))):
        req = float(draw(st.integers(1, 40)))
        jobs.append(
            Job(
                i + 1,
                float(draw(st.integers(0, 60))),
                float(draw(st.integers(0, int(req)))),
                req,
                draw(st.integers(1, procs)),
                home_site=draw(st.integers(0, n_sites - 1)),
                app_class=draw(st.integers(0, 2)),
                attrs={"transfer_s": float(draw(st.sampled_from([0, 0, 5, 20])))},
            )
        )
    return sites, jobs


CONFIGS: list[tuple[MetaScheduler, LocalScheduler]] = [
    (LeastLoad(), EasyBackfill()),
    (KReservations(k=3), EasyBackfill()),
    (CompletionTime(k=4), ConservativeBackfill()),
    (CompletionTime(k=2, selection="completion"), ConservativeBackfill(order=Efficacy())),
    (CancelSlowerOnly(k=4), ConservativeBackfill(order=Efficacy())),
    (CancelSlowerOnly(k=3, selection="completion"), ConservativeBackfill()),
]


def replay_log(r: MultiSiteResult, meta: MetaScheduler) -> dict[int, int]:
    """Check the run's event log and recount each job's messages from it, independently of the
    driver's counters: exactly one completed run per job, never two copies running, capacity
    respected, starts only by the documented kill-and-restart, and the protocol's messages."""
    assert r.log is not None
    queued: dict[int, set[int]] = defaultdict(set)
    running: dict[int, int] = {}
    used = [0] * len(r.sites)
    width = {j.job_id: j.requested_procs for j in r.jobs}
    est: dict[tuple[int, int], float] = {}
    ends: dict[int, int] = defaultdict(int)
    starts: dict[int, int] = defaultdict(int)
    messages: dict[int, int] = defaultdict(int)
    selection = meta.selection_messages(len(r.sites))
    kill_pending: set[int] = set()
    by_id = {j.job_id: j for j in r.jobs}
    for _, event, job_id, s in r.log:
        live = len(queued[job_id]) + (job_id in running)
        if event == "submit":
            if not queued[job_id]:
                messages[job_id] += selection
            queued[job_id].add(s)
            job = by_id[job_id]
            est[job_id, s] = job.requested_time * r.sites[s].time_factor(job.app_class)
        elif event == "deny":
            messages[job_id] += 2 * (live - 1)
            queued[job_id].remove(s)
        elif event == "kill":
            assert isinstance(meta, CancelSlowerOnly), "only cancel-slower-only kills"
            assert running.pop(job_id) == s
            used[s] -= width[job_id]
            kill_pending.add(job_id)
            messages[job_id] += 3 * (live - 1)  # the restart's attempt, counted once here
        elif event == "start":
            if job_id in kill_pending:
                kill_pending.remove(job_id)
            else:
                assert job_id not in running and starts[job_id] == 0, f"job {job_id} started twice"
                messages[job_id] += 3 * (live - 1)
            starts[job_id] += 1
            queued[job_id].remove(s)
            running[job_id] = s
            used[s] += width[job_id]
            assert used[s] <= r.sites[s].procs
        elif event == "cancel":
            queued[job_id].remove(s)
            if ends[job_id]:
                messages[job_id] += 1  # cancelled after the job ended
            else:
                assert job_id in running, "a copy is only cancelled for a start or an end"
        elif event == "end":
            assert running.pop(job_id) == s
            used[s] -= width[job_id]
            ends[job_id] += 1
    assert not kill_pending
    assert all(ends[j.job_id] == 1 for j in r.jobs), "every job completes exactly once"
    assert not running and not any(queued.values())
    return dict(messages)


@given(scenarios(), st.sampled_from(range(len(CONFIGS))))
@settings(max_examples=60, deadline=None)
def test_invariants_on_random_workloads(scenario: tuple[list[Site], list[Job]], config: int) -> None:
    sites, jobs = scenario
    meta, local = CONFIGS[config]
    # check=True: every cached plan equals a fresh one and every plan is feasible with only live copies.
    r = simulate_multisite(jobs, sites, meta, local, log=True, check=True)
    messages = replay_log(r, meta)
    assert [messages[j.job_id] for j in jobs] == r.messages.tolist()
    if not isinstance(meta, CancelSlowerOnly):
        assert r.kills == 0 and r.wasted_proc_s == 0.0
    # A job's fastest copy is never denied under completion-based decisions.
    if meta.is_completion_based:
        assert r.log is not None
        copies: dict[int, dict[int, float]] = defaultdict(dict)
        for _, event, job_id, s in r.log:
            job = next(j for j in jobs if j.job_id == job_id)
            if event == "submit":
                transfer = job.attrs["transfer_s"] if s != job.home_site else 0.0
                copies[job_id][s] = job.requested_time * sites[s].time_factor(job.app_class) + transfer
            if event == "deny" and not any(e == "start" for _, e, j2, _ in r.log if j2 == job_id):
                assert copies[job_id][s] > min(copies[job_id].values())
    # Every job starts no earlier than it arrived and runs its scaled time there.
    submit = np.array([j.submit_time for j in jobs])
    assert np.all(r.start_time >= submit)
    assert np.allclose(r.end_time - r.start_time, r.run_time)


@given(scenarios(), st.sampled_from(range(len(CONFIGS))))
@settings(max_examples=60, deadline=None)
def test_compiled_planning_gives_the_reference_results(scenario: tuple[list[Site], list[Job]], config: int) -> None:
    """Sites planned on their queue columns (the default: conservative backfilling in its
    compiled kernel) and in pure Python (``compiled=False``, the reference) give the same run,
    event for event, for every scheme."""
    sites, jobs = scenario
    meta, local = CONFIGS[config]
    fast = simulate_multisite(jobs, sites, meta, local, log=True)
    reference = simulate_multisite(jobs, sites, meta, local, log=True, compiled=False)
    assert fast.log == reference.log
    assert np.array_equal(fast.start_time, reference.start_time)
    assert np.array_equal(fast.site, reference.site)
    assert np.array_equal(fast.messages, reference.messages)
    assert fast.plans == reference.plans


@pytest.mark.parametrize("config", [3, 4])
def test_compiled_planning_on_a_busy_efficacy_workload(config: int) -> None:
    """A larger seeded workload (queues of dozens of copies, efficacy order, projections for
    completion-time site choice, column compactions): the compiled and the reference runs
    agree, and ``check=True`` compares every plan on columns with the pure-Python one."""
    rng = np.random.default_rng(7)
    sites = [Site(f"s{i}", 16, speed={c: float(rng.choice([0.5, 1.0, 2.0, 3.0])) for c in range(4)}) for i in range(4)]
    jobs = []
    for i in range(160):
        req = float(rng.integers(50, 4000))
        jobs.append(
            Job(
                i + 1,
                float(rng.integers(0, 20000)),
                float(rng.integers(1, int(req) + 1)),
                req,
                int(rng.integers(1, 17)),
                home_site=int(rng.integers(0, 4)),
                app_class=int(rng.integers(0, 4)),
            )
        )
    meta, local = CONFIGS[config]
    fast = simulate_multisite(jobs, sites, meta, local, log=True, check=True)
    reference = simulate_multisite(jobs, sites, meta, local, log=True, compiled=False)
    assert fast.log == reference.log


@given(scenarios())
@settings(max_examples=25, deadline=None)
def test_same_input_same_results(scenario: tuple[list[Site], list[Job]]) -> None:
    sites, jobs = scenario
    runs = [
        simulate_multisite(jobs, sites, CancelSlowerOnly(k=3), ConservativeBackfill(order=Efficacy()), log=True)
        for _ in range(2)
    ]
    assert runs[0].log == runs[1].log
    assert np.array_equal(runs[0].start_time, runs[1].start_time)
    assert np.array_equal(runs[0].messages, runs[1].messages)


def test_effective_utilization_by_hand() -> None:
    """Two sites of 1 processor; class 0 runs 2x slower at site 0. One job of 10 s (reference)
    sent to site 0 only: it runs 20 s; makespan 20; utilization 20 / (20 * 2) = 0.5; effective
    utilization 10 / 40 = 0.25 (efficacy 0.5)."""
    sites = [Site("slow", 1, speed={0: 2.0}), Site("fast", 1, speed={0: 1.0})]

    class SlowOnly(LeastLoad):
        key = "slow-only-test"

        def select_sites(self, job: Job, views: object, now: float) -> list[int]:  # type: ignore[override]
            return [0]

    r = simulate_multisite([Job(1, 0.0, 10.0, 10.0, 1, app_class=0)], sites, SlowOnly(), EasyBackfill())
    m = summarise_multisite(r)
    assert m["makespan"] == 20.0
    assert m["utilization"] == pytest.approx(0.5)
    assert m["effective_utilization"] == pytest.approx(0.25)
    assert m["mean_efficacy"] == pytest.approx(0.5)
    assert m["site0_jobs_share"] == 1.0
