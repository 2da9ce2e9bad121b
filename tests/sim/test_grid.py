"""Grid scenarios of seed 001: hand-worked schedules and invariants as properties."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.local.easy import EasyBackfill
from metasched.policy.meta import BestFit, MachineSelector, MultiSite
from metasched.sim.grid import GridResult, simulate_grid, simulate_local
from metasched.sim.replay import simulate


def job(job_id: int, submit: float, procs: int, run: float, est: float | None = None, home: int = -1) -> Job:
    return Job(job_id, submit, run, run if est is None else est, procs, home_site=home)


def starts(result: GridResult) -> dict[int, tuple[float, float, tuple[tuple[int, int], ...]]]:
    sched = result.schedule
    return {
        j.job_id: (float(sched.start_time[k]), float(sched.end_time[k]), result.parts[k])
        for k, j in enumerate(sched.jobs)
    }


def test_job_sharing_hand_worked_easy_reservation() -> None:
    # Two machines of 4. J3 (4 procs) is the blocked head, reserved on m1 at 50 (J2 ends there).
    # J4 (est 60) would cross the shadow and m1 has no extra processors: it waits.
    # J5 (est 50) ends by the shadow: backfilled on m1 at 0.
    jobs = [
        job(1, 0, 4, 100),
        job(2, 0, 2, 50),
        job(3, 0, 4, 100),
        job(4, 0, 2, 60),
        job(5, 0, 2, 50),
    ]
    result = simulate_grid(jobs, [4, 4], BestFit(), record_reservations=True)
    assert starts(result) == {
        1: (0, 100, ((0, 4),)),
        2: (0, 50, ((1, 2),)),
        3: (50, 150, ((1, 4),)),
        4: (100, 160, ((0, 2),)),
        5: (0, 50, ((1, 2),)),
    }
    assert (0.0, 3, 50.0, ((1, 4),)) in result.reservations


def test_multisite_hand_worked_split_and_overhead() -> None:
    # Machines 4 and 2, p = 0.5. B (3 procs) fits no machine after A: split 2 on m1 (freest) + 1 on m0,
    # runs 20 * 1.5 = 30. C (6 procs) needs both machines whole: reserved at 30. D ends by the
    # shadow and is backfilled at 10; E (est 40) would cross it with no extra: waits for C.
    jobs = [
        job(1, 0, 3, 10),
        job(2, 0, 3, 20),
        job(3, 0, 6, 10),
        job(4, 1, 1, 5),
        job(5, 2, 2, 40),
    ]
    result = simulate_grid(jobs, [4, 2], MultiSite(), overhead=0.5, record_reservations=True)
    assert starts(result) == {
        1: (0, 10, ((0, 3),)),
        2: (0, 30, ((1, 2), (0, 1))),
        3: (30, 45, ((0, 4), (1, 2))),
        4: (10, 15, ((0, 1),)),
        5: (45, 85, ((1, 2),)),
    }
    assert result.n_split == 2
    assert (10.0, 3, 30.0, ((0, 4), (1, 2))) in result.reservations


def test_split_job_crossing_the_shadow_uses_only_extra() -> None:
    # Machines 2 and 3. J1 (1 proc) -> m0, J2 (2 procs) -> m1: 1 + 1 free until 10. H (5 procs)
    # is reserved at 10 on both machines whole (no extra). S (2 procs, est 6) fits no machine whole;
    # split with p = 1 it would run 12 and cross the shadow: it waits. With p = 0 it ends by the
    # shadow and is backfilled at 0 over both machines.
    jobs = [job(1, 0, 1, 10), job(2, 0, 2, 10), job(3, 0, 5, 5), job(4, 0, 2, 6)]
    got = starts(simulate_grid(jobs, [2, 3], MultiSite(), overhead=1.0))
    assert got[1] == (0, 10, ((0, 1),))
    assert got[2] == (0, 10, ((1, 2),))
    assert got[3] == (10, 20, ((1, 3), (0, 2)))  # split: runs 5 x (1 + 1)
    assert got[4] == (20, 26, ((0, 2),))
    got = starts(simulate_grid(jobs, [2, 3], MultiSite(), overhead=0.0))
    assert got[4] == (0, 6, ((0, 1), (1, 1)))
    assert got[3] == (10, 15, ((1, 3), (0, 2)))


def test_job_no_machine_can_start_now_waits_for_the_earliest_machine() -> None:
    # Machines 4 and 8, both busy. J3 (4 procs) can start nowhere now: it stays in the central queue
    # and is promised m1, which frees first (at 50), not m0 (at 100) where it would fit best now.
    jobs = [job(1, 0, 4, 100), job(2, 0, 8, 50), job(3, 0, 4, 10), job(4, 0, 4, 200)]
    result = simulate_grid(jobs, [4, 8], BestFit(), record_reservations=True)
    assert result.reservations[0] == (0.0, 3, 50.0, ((1, 4),))
    got = starts(result)
    assert got[3] == (50, 60, ((1, 4),))
    assert got[4] == (50, 250, ((1, 4),))


def test_reservation_tie_goes_to_best_fit() -> None:
    # Both machines free up at 50; at that instant m1 (4) leaves 0 processors, m0 (8) would leave 4.
    jobs = [job(1, 0, 8, 50), job(2, 0, 4, 50), job(3, 0, 4, 10)]
    result = simulate_grid(jobs, [8, 4], BestFit(), record_reservations=True)
    assert result.reservations[0] == (0.0, 3, 50.0, ((1, 4),))
    assert starts(result)[3] == (50, 60, ((1, 4),))


def test_local_runs_each_site_alone() -> None:
    jobs = [job(1, 0, 4, 10, home=0), job(2, 0, 4, 10, home=0), job(3, 0, 2, 5, home=1)]
    result = simulate_local(jobs, [4, 4])
    assert starts(result) == {1: (0, 10, ((0, 4),)), 2: (10, 20, ((0, 4),)), 3: (0, 5, ((1, 2),))}


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="job 7 needs 5 processors"):
        simulate_grid([job(7, 0, 5, 1)], [4, 4], BestFit())
    with pytest.raises(ValueError, match="job 7 needs 9 processors"):
        simulate_grid([job(7, 0, 9, 1)], [4, 4], MultiSite())
    with pytest.raises(ValueError, match="home_site 3"):
        simulate_local([job(1, 0, 1, 1, home=3)], [4, 4])
    with pytest.raises(ValueError, match="home machine"):
        simulate_local([job(1, 0, 8, 1, home=0)], [4, 4])
    with pytest.raises(ValueError, match="unique"):
        simulate_grid([job(1, 0, 1, 1), job(1, 1, 1, 1)], [4], BestFit())
    with pytest.raises(ValueError, match="overhead"):
        simulate_grid([job(1, 0, 1, 1)], [4], MultiSite(), overhead=-0.1)


# -- invariants on random small workloads -------------------------------------------------------


@st.composite
def grid_cases(draw: st.DrawFn) -> tuple[list[int], list[Job], MachineSelector, float]:
    sizes = draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    selector: MachineSelector = draw(st.sampled_from([BestFit(), MultiSite()]))
    widest = sum(sizes) if selector.may_split else max(sizes)
    overhead = draw(st.sampled_from([0.0, 0.25, 0.4]))
    n = draw(st.integers(1, 25))
    jobs = []
    t = 0
    for i in range(n):
        t += draw(st.integers(0, 6))
        run = draw(st.integers(0, 20))
        est = run + draw(st.integers(0, 10)) or 1
        jobs.append(Job(i, t, run, est, draw(st.integers(1, widest)), home_site=i % len(sizes)))
    return sizes, jobs, selector, overhead


def check_capacity(result: GridResult) -> None:
    busy: dict[int, int] = defaultdict(int)
    for _, m, delta, _ in result.log:
        busy[m] += delta
        assert 0 <= busy[m] <= result.sizes[m]
    assert all(v == 0 for v in busy.values())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_cases())
def test_grid_invariants(case: tuple[list[int], list[Job], MachineSelector, float]) -> None:
    sizes, jobs, selector, overhead = case
    result = simulate_grid(jobs, sizes, selector, overhead=overhead, record_log=True, record_reservations=True)
    check_capacity(result)
    sched = result.schedule
    by_id = {j.job_id: k for k, j in enumerate(sched.jobs)}
    part_starts: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
    part_ends: dict[int, list[tuple[float, int, int]]] = defaultdict(list)
    for t, m, delta, job_id in result.log:
        (part_starts if delta > 0 else part_ends)[job_id].append((t, m, abs(delta)))
    for k, j in enumerate(sched.jobs):
        begun, ended = part_starts[j.job_id], part_ends[j.job_id]
        # Every part starts at the job's start and ends at its end, on the machines it was given.
        assert {t for t, _, _ in begun} == {sched.start_time[k]}
        assert {t for t, _, _ in ended} == {sched.end_time[k]}
        assert sorted((m, p) for _, m, p in begun) == sorted(result.parts[k]) == sorted((m, p) for _, m, p in ended)
        assert sum(p for _, _, p in begun) == j.requested_procs
        factor = 1 + overhead if len(result.parts[k]) > 1 else 1
        assert sched.end_time[k] - sched.start_time[k] == pytest.approx(j.run_time * factor)
        assert sched.start_time[k] >= j.submit_time
        if not selector.may_split:
            assert len(result.parts[k]) == 1
    # EASY: the head never starts after a reservation it was given (estimates bound run times).
    for _, job_id, shadow, _ in result.reservations:
        assert sched.start_time[by_id[job_id]] <= shadow
    again = simulate_grid(jobs, sizes, selector, overhead=overhead)
    assert again.parts == result.parts
    assert list(again.schedule.start_time) == list(sched.start_time)


@settings(max_examples=60, deadline=None)
@given(grid_cases())
def test_local_capacity(case: tuple[list[int], list[Job], MachineSelector, float]) -> None:
    sizes, jobs, _, _ = case
    jobs = [j.copy(requested_procs=min(j.requested_procs, sizes[j.home_site])) for j in jobs]
    result = simulate_local(jobs, sizes, record_log=True)
    check_capacity(result)
    assert all(len(p) == 1 and p[0][0] == j.home_site for p, j in zip(result.parts, jobs, strict=True))


@settings(max_examples=100, deadline=None)
@given(grid_cases())
def test_one_machine_grid_is_the_core_easy(case: tuple[list[int], list[Job], MachineSelector, float]) -> None:
    # On a single machine the central queue's EASY must make exactly the core EASY's decisions.
    sizes, jobs, selector, overhead = case
    size = max(sizes)
    jobs = [j.copy(requested_procs=min(j.requested_procs, size)) for j in jobs]
    grid = simulate_grid(jobs, [size], selector, overhead=overhead).schedule
    core = simulate(jobs, size, EasyBackfill())
    assert list(grid.start_time) == list(core.start_time)
    assert list(grid.end_time) == list(core.end_time)


@pytest.mark.traces
def test_one_machine_grid_matches_core_easy_on_ctc() -> None:
    from metasched.experiments.ernemann2002 import default_trace
    from metasched.workload.swf import read_swf

    if not default_trace().exists():
        pytest.skip(f"shared CTC trace not found at {default_trace()} (set METASCHED_SHARED)")
    jobs = read_swf(default_trace()).jobs[20_000:23_000]
    grid = simulate_grid(jobs, [512], BestFit()).schedule
    core = simulate(jobs, 512, EasyBackfill())
    assert list(grid.start_time) == list(core.start_time)
