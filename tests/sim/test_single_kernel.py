"""The compiled single-site simulations (``sim/_single_kernel``) against the Python driver running
the policy objects (``simulate(..., compiled=False)``) and the slow reference (``tests/sim/reference.py``):
the same start and end for every job, on generated workloads (hypothesis: overruns, zero-length jobs,
simultaneous events), on hand-worked cases and on every shared trace present (whole traces)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.local import ConservativeBackfill, EasyBackfill
from metasched.policy.priority import Efficacy
from metasched.sim._single_kernel import accelerator
from metasched.sim.replay import simulate
from metasched.workload import generate
from tests.sim.reference import reference_schedule
from tests.sim.test_properties import workloads
from tests.sim.traces import read_trace, trace_paths
from tests.sim.workloads import job

PATHS = trace_paths()
CONSERVATIVE_JOBS = 20_000


POLICIES = {"easy": EasyBackfill, "conservative": ConservativeBackfill}


def assert_same(jobs: list[Job], procs: int, key: str = "easy") -> None:
    fast = simulate(jobs, procs, POLICIES[key]())
    slow = simulate(jobs, procs, POLICIES[key](), compiled=False)
    assert np.array_equal(fast.start_time, slow.start_time)
    assert np.array_equal(fast.end_time, slow.end_time)
    assert fast.site.tolist() == slow.site.tolist()


def test_only_the_exact_policy_and_order_are_accelerated() -> None:
    """A subclass or another queue order is not what the kernel ports: the Python driver runs it."""

    class MyEasy(EasyBackfill):
        pass

    assert accelerator(EasyBackfill()) is not None
    assert accelerator(MyEasy()) is None
    assert accelerator(EasyBackfill(order=Efficacy())) is None
    assert accelerator(ConservativeBackfill()) is not None
    assert accelerator(ConservativeBackfill(order=Efficacy())) is None


def test_hand_worked_easy_backfills_behind_the_head() -> None:
    """4 processors: a (3 procs, 10 s) runs; b (4 procs) waits for a's end at 10 (shadow 10, extra
    0); c (1 proc, estimate 5) ends by the shadow and starts at 1; d (1 proc, estimate 20) would
    delay b and waits for b (starts at 10 + 10 = 20)."""
    jobs = [job(1, 0, 10, 10, 3), job(2, 1, 10, 10, 4), job(3, 1, 5, 5, 1), job(4, 1, 20, 20, 1)]
    schedule = simulate(jobs, 4, EasyBackfill())
    assert schedule.start_time.tolist() == [0.0, 10.0, 1.0, 20.0]
    assert schedule.end_time.tolist() == [10.0, 20.0, 6.0, 40.0]


def test_hand_worked_overrun_counts_as_now() -> None:
    """a (2 of 2 procs) overruns its estimate of 5 and ends at 10; b (2 procs) waits; c (1 proc,
    estimate 1) submitted at 7 cannot start: nothing is free until 10, then b and c start in order
    (b first: it is the head), c after b."""
    jobs = [job(1, 0, 10, 5, 2), job(2, 1, 3, 3, 2), job(3, 7, 1, 1, 1)]
    schedule = simulate(jobs, 2, EasyBackfill())
    assert schedule.start_time.tolist() == [0.0, 10.0, 13.0]


@settings(max_examples=300, deadline=None)
@given(workloads(overrun=True), st.sampled_from(sorted(POLICIES)))
def test_compiled_equals_the_python_driver_and_the_reference(workload: tuple[list[Job], int], key: str) -> None:
    jobs, procs = workload
    assert_same(jobs, procs, key)
    fast = simulate(jobs, procs, POLICIES[key]())
    ref = reference_schedule(jobs, procs, key)
    assert {j.job_id: float(s) for j, s in zip(fast.jobs, fast.start_time, strict=True)} == ref


@settings(max_examples=100, deadline=None)
@given(workloads(), st.integers(0, 3), st.sampled_from(sorted(POLICIES)))
def test_compiled_equals_the_python_driver_with_early_ends(workload: tuple[list[Job], int], cut: int, key: str) -> None:
    jobs, procs = workload
    early = [
        Job(job_id=j.job_id, submit_time=j.submit_time, run_time=max(0.0, j.run_time - cut),
            requested_time=j.requested_time, requested_procs=j.requested_procs)
        for j in jobs
    ]  # fmt: skip
    assert_same(early, procs, key)


def test_bad_jobs_are_reported_by_the_python_driver_as_before() -> None:
    with pytest.raises(ValueError, match="requested_time must be positive"):
        simulate([job(1, 0, 1, 1, 1), job(2, 1, 1, 0, 1)], 2, EasyBackfill())


@pytest.mark.parametrize("key", sorted(POLICIES))
@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_equals_the_python_driver_on_generated_workloads(seed: int, key: str) -> None:
    """Long queues (offered load 1.2 on 256 processors, as the generated "Lublin-like" benchmark)."""
    jobs = generate.synthetic(3000, 256, seed=seed, load=1.2)
    assert_same(jobs, 256, key)


def test_hand_worked_conservative_keeps_every_reservation() -> None:
    """4 processors: a (3 procs, 10 s) runs; b (4 procs) is reserved at 10; c (1 proc, estimate 20)
    would overlap b's reservation, so it is reserved at b's end (20); d (1 proc, estimate 5) fits
    before 10 and starts at 1."""
    jobs = [job(1, 0, 10, 10, 3), job(2, 1, 10, 10, 4), job(3, 1, 20, 20, 1), job(4, 1, 5, 5, 1)]
    schedule = simulate(jobs, 4, ConservativeBackfill())
    assert schedule.start_time.tolist() == [0.0, 10.0, 20.0, 1.0]


@pytest.mark.traces
@pytest.mark.skipif(not PATHS, reason="shared traces absent (../shared/data/traces or METASCHED_SHARED)")
@pytest.mark.parametrize("path", PATHS, ids=[p.name.split("-")[0] + "-" + p.name.split("-")[1] for p in PATHS])
@pytest.mark.parametrize("key", sorted(POLICIES))
def test_compiled_equals_the_python_driver_on_whole_traces(path: Path, key: str) -> None:
    """EASY on each whole trace; conservative on its first 20,000 jobs (the Python driver, the
    oracle here, takes 30-100 s of CPU per whole trace under conservative)."""
    jobs, procs = read_trace(path, None if key == "easy" else CONSERVATIVE_JOBS)
    assert_same(jobs, procs, key)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_job_wider_than_the_machine_or_a_repeated_id_is_the_same_error_both_ways(compiled: bool) -> None:
    """The first job too wide, in ``(submit_time, job_id)`` order, is named (job 3 is submitted first)."""
    wide = [job(1, 5, 1, 1, 9), job(3, 0, 1, 1, 8), job(2, 1, 1, 1, 1)]
    with pytest.raises(ValueError, match="job 3 needs 8 processors; the machine has 4"):
        simulate(wide, 4, EasyBackfill(), compiled=compiled)
    with pytest.raises(ValueError, match="job_id values must be unique"):
        simulate([job(1, 0, 1, 1, 1), job(1, 1, 1, 1, 1)], 4, ConservativeBackfill(), compiled=compiled)
