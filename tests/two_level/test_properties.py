"""Hypothesis properties of the two-level simulation and of Flexible Backfilling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metasched.model.grid import Cluster, Machine
from metasched.model.job import Job
from metasched.model.licence import Licence
from metasched.model.qos import qos_of
from metasched.policy.local.flexible import FlexibleBackfill
from metasched.policy.meta.two_level_base import ClusterView, QueueColumns, RunningOnMachine
from metasched.policy.priority.arrival import ArrivalOrder
from metasched.policy.priority.weighted import WeightedHeuristics
from metasched.sim.two_level import CASES, run_case

from .helpers import job

N_LIC = 2


@st.composite
def grids(draw: st.DrawFn) -> list[Cluster]:
    clusters = []
    for c in range(draw(st.integers(1, 3))):
        machines = tuple(
            Machine(
                f"c{c}m{i}",
                draw(st.integers(1, 8)),
                float(draw(st.integers(50, 400))),
                frozenset(lic for lic in range(N_LIC) if draw(st.booleans())),
            )
            for i in range(draw(st.integers(1, 3)))
        )
        copies = tuple(Licence(f"l{lic}", draw(st.integers(0, 2))) for lic in range(N_LIC))
        clusters.append(Cluster(f"C{c}", machines, copies))
    return clusters


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[Cluster], list[Job]]:
    clusters = draw(grids())
    jobs = []
    for i in range(draw(st.integers(1, 25))):
        cpus = draw(st.integers(1, 8))
        lics = [lic for lic in range(N_LIC) if draw(st.integers(0, 3)) == 0]
        mask = sum(1 << lic for lic in lics)
        if not any(c.can_host(cpus, mask) for c in clusters):
            continue
        submit = float(draw(st.integers(0, 60)))
        estimate = float(draw(st.integers(1, 50)))
        deadline = submit + estimate + draw(st.integers(0, 80)) if draw(st.booleans()) else None
        jobs.append(
            job(
                i,
                submit=submit,
                estimate=estimate,
                cpus=cpus,
                licences=lics,
                deadline=deadline,
                benchmark=float(draw(st.integers(50, 400))),
            )
        )
    return clusters, jobs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.sampled_from(sorted(CASES)))
def test_one_machine_capacity_and_licences(data: tuple[list[Cluster], list[Job]], case: str) -> None:
    clusters, jobs = data
    res = run_case(case, jobs, clusters, seed=1)
    assert not np.isnan(res.end).any()
    events: dict[tuple[int, int], list[tuple[float, int, int]]] = {}
    lic_events: dict[tuple[int, int], list[tuple[float, int]]] = {}
    for i, j in enumerate(res.jobs):
        c, m = int(res.cluster[i]), int(res.machine[i])
        machine = clusters[c].machines[m]
        q = qos_of(j)
        assert res.start[i] >= j.submit_time
        assert j.requested_procs <= machine.cpus
        assert machine.licence_mask & q.licence_mask == q.licence_mask
        assert res.end[i] - res.start[i] == pytest.approx(j.run_time * q.benchmark / machine.benchmark, rel=1e-9)
        # Ends sort before starts at the same instant (kind 0 < 1).
        events.setdefault((c, m), []).extend(
            [(res.start[i], 1, j.requested_procs), (res.end[i], 0, -j.requested_procs)]
        )
        for lic in q.licences:
            lic_events.setdefault((c, lic), []).extend([(res.start[i], 1), (res.end[i], 0)])
    for (c, m), evs in events.items():
        used = 0
        for _, _, d in sorted(evs):
            used += d
            assert used <= clusters[c].machines[m].cpus
    for (c, lic), evs in lic_events.items():
        active = 0
        for _, kind in sorted(evs):
            active += 1 if kind else -1
            assert active <= clusters[c].licences[lic].copies
    again = run_case(case, jobs, clusters, seed=1)
    assert np.array_equal(res.start, again.start) and np.array_equal(res.cluster, again.cluster)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(0, 50), st.booleans())
def test_backfilling_never_delays_the_head(data: tuple[list[Cluster], list[Job]], now: int, weighted: bool) -> None:
    """Half the jobs run (placed first-fit), the rest queue; after the plan's starts, the head can
    still start by its reservation."""
    clusters, jobs = data
    cl = clusters[0]
    jobs = [j for j in jobs if cl.can_host(j.requested_procs, qos_of(j).licence_mask)]
    free = [m.cpus for m in cl.machines]
    lic_free = [lic.copies for lic in cl.licences]
    running: list[RunningOnMachine] = []
    queue = []
    for k, j in enumerate(jobs):
        q = qos_of(j)
        spot = next(
            (
                m
                for m, mach in enumerate(cl.machines)
                if free[m] >= j.requested_procs and mach.licence_mask & q.licence_mask == q.licence_mask
            ),
            None,
        )
        if k % 2 == 0 and spot is not None and all(lic_free[lic] >= 1 for lic in q.licences):
            free[spot] -= j.requested_procs
            for lic in q.licences:
                lic_free[lic] -= 1
            end = j.submit_time + j.requested_time * q.benchmark / cl.machines[spot].benchmark
            running.append(RunningOnMachine(j, spot, j.requested_procs, q.licence_mask, j.submit_time, end))
        else:
            queue.append(j)
    order = WeightedHeuristics() if weighted else ArrivalOrder()
    sched = FlexibleBackfill(order=order)
    v = ClusterView(cl, free, lic_free, running, QueueColumns.from_jobs(queue, len(cl.licences)))
    plan = sched.plan(v, float(now))
    for j, m in plan.starts:
        q = qos_of(j)
        assert free[m] >= j.requested_procs
        free[m] -= j.requested_procs
        for lic in q.licences:
            assert lic_free[lic] >= 1
            lic_free[lic] -= 1
        end = now + j.requested_time * q.benchmark / cl.machines[m].benchmark
        running.append(RunningOnMachine(j, m, j.requested_procs, q.licence_mask, float(now), end))
    if plan.reservation is None:
        return
    head_id, _, shadow = plan.reservation
    head = next(j for j in queue if j.job_id == head_id)
    after = FlexibleBackfill(order=ArrivalOrder()).plan(
        ClusterView(cl, free, lic_free, running, QueueColumns.from_jobs([head], len(cl.licences))), float(now)
    )
    assert after.reservation is not None
    assert after.reservation[2] <= shadow
