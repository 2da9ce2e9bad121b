"""The compiled multi-site event loop (``sim/_multisite_kernel.py``) against the Python driver
(the reference): identical runs, event for event, for every scheme it supports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model import Job, Site
from metasched.policy.base import LocalScheduler
from metasched.policy.local import ConservativeBackfill, EasyBackfill
from metasched.policy.meta import CancelSlowerOnly, CompletionTime, KReservations, LeastLoad, MetaScheduler
from metasched.policy.meta.reservations_base import CopyOffer, StartDecision
from metasched.policy.priority import Efficacy
from metasched.sim import _multisite_kernel as kernel_module
from metasched.sim._multisite_kernel import COMPILE_STAGES, compile_kernels
from metasched.sim.multisite import JobColumns, MultiSiteResult, kernel_scheme, simulate_multisite
from metasched.sim.replay import simulate
from tests.sim.test_multisite import hand_jobs, scenarios, two_sites

SUPPORTED: list[tuple[MetaScheduler, LocalScheduler]] = [
    (LeastLoad(), EasyBackfill()),
    (KReservations(k=3), EasyBackfill()),
    (KReservations(k=4), EasyBackfill(order=Efficacy())),
    (LeastLoad(k=2), ConservativeBackfill()),
    (KReservations(k=2, selection="completion"), ConservativeBackfill()),
    (CompletionTime(k=4), ConservativeBackfill()),
    (CompletionTime(k=1), ConservativeBackfill(order=Efficacy())),
    (CompletionTime(k=2), ConservativeBackfill(order=Efficacy())),
    (CompletionTime(k=2, selection="completion"), ConservativeBackfill(order=Efficacy())),
    (CompletionTime(k=1, selection="completion"), ConservativeBackfill()),
    (CancelSlowerOnly(k=4), ConservativeBackfill()),
    (CancelSlowerOnly(k=4), ConservativeBackfill(order=Efficacy())),
    (CancelSlowerOnly(k=3, selection="completion"), ConservativeBackfill()),
    (CancelSlowerOnly(k=4, variant="no-kill"), ConservativeBackfill()),
    (CancelSlowerOnly(k=3, selection="completion", variant="no-kill"), ConservativeBackfill(order=Efficacy())),
]


def assert_same(fast: MultiSiteResult, reference: MultiSiteResult) -> None:
    """Every output of the two runs is identical (floats bit for bit, the log in order)."""
    assert fast.log == reference.log
    for name in (
        "start_time",
        "end_time",
        "site",
        "procs",
        "run_time",
        "best_run_time",
        "copies",
        "messages",
        "attempts",
        "busy_proc_s",
    ):
        a, b = getattr(fast, name), getattr(reference, name)
        assert a.dtype == b.dtype, name
        assert np.array_equal(a, b), name
    assert (fast.denials, fast.kills, fast.wasted_proc_s, fast.plans) == (
        reference.denials,
        reference.kills,
        reference.wasted_proc_s,
        reference.plans,
    )


def both(
    jobs: Sequence[Job], sites: Sequence[Site], meta: MetaScheduler, local: LocalScheduler
) -> tuple[MultiSiteResult, MultiSiteResult]:
    fast = simulate_multisite(jobs, sites, meta, local, log=True, kernel=True)
    reference = simulate_multisite(jobs, sites, meta, local, log=True, kernel=False)
    return fast, reference


@given(scenarios(), st.sampled_from(range(len(SUPPORTED))))
@settings(max_examples=150, deadline=None)
def test_compiled_loop_gives_the_drivers_results(scenario: tuple[list[Site], list[Job]], config: int) -> None:
    sites, jobs = scenario
    meta, local = SUPPORTED[config]
    assert_same(*both(jobs, sites, meta, local))


def busy_workload(seed: int) -> tuple[list[Site], list[Job]]:
    """Four sites of 16 processors with random speeds per class, 200 jobs: queues of dozens of
    copies, data transfers, equal submit times and equal estimates, some ending early."""
    rng = np.random.default_rng(seed)
    sites = [Site(f"s{i}", 16, speed={c: float(rng.choice([0.5, 1.0, 2.0, 3.0])) for c in range(4)}) for i in range(4)]
    jobs = []
    for i in range(200):
        req = float(rng.choice([60, 600, 1800])) if i % 3 == 0 else float(rng.integers(50, 4000))
        jobs.append(
            Job(
                i + 1,
                float(rng.integers(0, 400) * 50),
                float(rng.integers(1, int(req) + 1)) if i % 4 else req,
                req,
                int(rng.integers(1, 17)),
                home_site=int(rng.integers(0, 4)),
                app_class=int(rng.integers(0, 4)),
                attrs={"transfer_s": float(rng.choice([0.0, 400.0, 1234.5]))},
            )
        )
    return sites, jobs


@pytest.mark.parametrize("config", range(len(SUPPORTED)))
def test_compiled_loop_on_a_busy_workload(config: int) -> None:
    """Queues of dozens of copies (column compactions, plans placed lazily and answered
    stale, projections), data transfers, equal submit times and equal estimates."""
    sites, jobs = busy_workload(11)
    meta, local = SUPPORTED[config]
    fast, reference = both(jobs, sites, meta, local)
    assert_same(fast, reference)
    # the same jobs handed over as columns: the same run, and Job objects with the same fields
    columns = simulate_multisite(JobColumns.from_jobs(jobs), sites, meta, local, log=True, kernel=True)
    assert_same(columns, reference)

    def fields(js: list[Job]) -> list[tuple[object, ...]]:
        return [
            (j.job_id, j.submit_time, j.run_time, j.requested_time, j.requested_procs, j.home_site, j.app_class, xfer)
            for j in js
            for xfer in (j.attrs.get("transfer_s", 0.0),)
        ]

    assert columns.source_jobs is None and fields(columns.jobs) == fields(jobs)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_projections_bounded_by_the_kth_best_completion_give_the_drivers_choices(k: int, seed: int) -> None:
    """Completion-time site choice with K < N: once K sites are projected, another site's
    projection is read from its plan without placing the jobs ahead of the copy when the plan as
    it is already shows that its window cannot end before the K-th best completion (a lower
    bound), or shows the exact fit (every job ahead looked at, the window ending before any job
    put off); else the jobs ahead are placed as far as the fit needs (``_fit_within``'s rounds:
    the jobs not looked at yet, with the fit's end as horizon; the deferred ones moved out to it;
    those up to the last whose bound is below it placed), as they are for every projection and
    copy put in. Every branch is taken in these runs (counted once in a scratch copy: fits
    settled with no round and after one to four rounds, each kind of round, windows that cannot
    end before the K-th best); the choices are the driver's, which projects every site in full."""
    sites, jobs = busy_workload(seed)
    assert_same(*both(jobs, sites, CompletionTime(k=k, selection="completion"), ConservativeBackfill(order=Efficacy())))


@st.composite
def one_site_workloads(draw: st.DrawFn) -> tuple[int, list[Job]]:
    """One machine; jobs with equal submit times and equal estimates, some ending early, some
    exactly at their estimate, widths up to the machine."""
    procs = draw(st.integers(1, 8))
    jobs = []
    for i in range(draw(st.integers(1, 40))):
        req = float(draw(st.sampled_from([5, 10, 30])) if i % 2 else draw(st.integers(1, 60)))
        run = req if draw(st.booleans()) else float(draw(st.integers(0, int(req))))
        jobs.append(Job(i + 1, float(draw(st.integers(0, 80))), run, req, draw(st.integers(1, procs))))
    return procs, jobs


@given(one_site_workloads(), st.sampled_from(["easy", "conservative"]))
@settings(max_examples=150, deadline=None)
def test_compiled_loop_with_one_site_is_the_single_site_simulator(workload: tuple[int, list[Job]], name: str) -> None:
    """sabin2003's single-site schemes run through this loop with one site (one copy per job, no
    choice): the schedule :func:`~metasched.sim.replay.simulate` gives, start and end of every
    job bit for bit."""
    procs, jobs = workload
    local = EasyBackfill() if name == "easy" else ConservativeBackfill()
    single = simulate(jobs, procs, local)
    one = simulate_multisite(jobs, [Site("one", procs)], LeastLoad(k=1), local, kernel=True)
    assert np.array_equal(one.start_time, single.start_time)
    assert np.array_equal(one.end_time, single.end_time)
    assert np.array_equal(one.procs, single.procs) and np.array_equal(one.run_time, single.run_time)


@pytest.mark.parametrize("config", [0, 2, 4, 8, 11, 12])
def test_compiled_loop_on_sites_of_different_sizes(config: int) -> None:
    """Sites of 4, 8, 8 and 24 processors: wide jobs are eligible at some sites only (fewer
    copies, projections and loads over the eligible sites alone)."""
    rng = np.random.default_rng(5)
    sizes = (4, 8, 8, 24)
    sites = [
        Site(f"s{i}", p, speed={c: float(rng.choice([0.5, 1.0, 2.0])) for c in range(3)}) for i, p in enumerate(sizes)
    ]
    jobs = []
    for i in range(150):
        req = float(rng.integers(10, 3000))
        jobs.append(
            Job(
                i + 1,
                float(rng.integers(0, 12000)),
                float(rng.integers(0, int(req) + 1)),
                req,
                int(rng.choice([1, 2, 4, 6, 8, 12, 24])),
                home_site=int(rng.integers(-1, 4)),
                app_class=int(rng.integers(0, 3)),
                attrs={"transfer_s": 300.0},
            )
        )
    meta, local = SUPPORTED[config]
    assert_same(*both(jobs, sites, meta, local))


def paired_overload(seed: int, n: int, gap: float) -> tuple[list[Site], list[Job]]:
    """Four sites of 32 processors, four classes of five speeds; ``n`` jobs in pairs at one instant
    every ``gap`` seconds (seed 000's shifted copies), mostly narrow, some as wide as a site:
    overload, so that copies land ahead of placed and of started jobs."""
    rng = np.random.default_rng(seed)
    sites = [
        Site(f"s{i}", 32, speed={c: float(rng.choice([0.5, 0.8, 1.0, 1.3, 2.0])) for c in range(4)}) for i in range(4)
    ]
    jobs = []
    for i in range(n):
        req = float(rng.choice([600, 3600, 7200, 14400]))
        jobs.append(
            Job(
                i + 1,
                float((i // 2) * gap),
                float(rng.integers(1, int(req) + 1)),
                req,
                int(rng.choice([1, 1, 1, 2, 4, 32])),
                home_site=int(rng.integers(0, 4)),
                app_class=int(rng.integers(0, 4)),
            )
        )
    return sites, jobs


@pytest.mark.parametrize("k", [1, 2, 3])
def test_compiled_loop_keeps_each_sites_current_pass_exact(k: int) -> None:
    """Completion-time site choice under overload: the compiled loop keeps, per site, a pass of
    its queue as it is (copies put into it, passes cut back behind a copy ahead of placed jobs,
    retimed, started jobs taken out) and answers projections from it (:func:`paired_overload`).
    (With k=2 it catches a copy put in with the queue length read before the cut took started jobs
    out.)"""
    sites, jobs = paired_overload(seed=1, n=500, gap=120.0)
    assert_same(*both(jobs, sites, CompletionTime(k=k, selection="completion"), ConservativeBackfill(order=Efficacy())))


@pytest.mark.parametrize(
    "meta", [CompletionTime(k=2), CompletionTime(k=4), CancelSlowerOnly(k=4)], ids=["ct-k2", "ct-k4", "slower-k4"]
)
def test_compiled_loop_goes_on_from_a_plan_cut_back_to_copies_queued(meta: MetaScheduler) -> None:
    """Load-based site choice, efficacy order, overload (:func:`paired_overload`; some copies are
    narrow enough to start at once): a site touched only by copies queued since its plan is
    revised from that plan (``_revise``); a copy that may start now, or one put in ahead of jobs the
    plan placed, has the plan cut back to it, its started jobs behind the cut taken out of its
    queue, and the pass going on from there. (It catches started jobs left in the queue behind the
    cut, placed again as if queued.)"""
    sites, jobs = paired_overload(seed=0, n=300, gap=150.0)
    assert_same(*both(jobs, sites, meta, ConservativeBackfill(order=Efficacy())))


def test_a_comparison_tied_at_one_site_still_asks_the_sites_after_it() -> None:
    """The compiled loop stops placing other sites' plans for a start decision once a copy elsewhere
    completes strictly before the one that could start (the decision is settled: no start). A copy
    completing exactly then settles nothing (the completion rules refuse only a strictly earlier
    one), so the sites after it must still be asked. In this case (found by hypothesis against a
    loop that settled on ties) a tie at one site is followed by a strictly earlier completion at a
    later one: settling on the tie starts a copy the driver refuses."""
    slow = {0: 0.5, 1: 0.5, 2: 0.5}
    sites = [Site("s0", 1, speed={0: 0.5, 1: 0.5, 2: 3.0})] + [Site(f"s{i}", 1, speed=slow) for i in (1, 2, 3)]
    jobs = [
        Job(1, 42.0, 0.0, 2.0, 1, home_site=0, app_class=2, attrs={"transfer_s": 0.0}),
        Job(2, 42.0, 0.0, 1.0, 1, home_site=0, app_class=2, attrs={"transfer_s": 0.0}),
        Job(3, 19.0, 7.0, 9.0, 1, home_site=0, app_class=2, attrs={"transfer_s": 20.0}),
    ]
    for meta in (CompletionTime(k=4), CancelSlowerOnly(k=4)):
        assert_same(*both(jobs, sites, meta, ConservativeBackfill()))


# The hand-worked cases run on both paths in tests/sim/test_multisite.py (``PATHS``).


def test_unsupported_schemes_fall_back_to_the_driver() -> None:
    class Picky(CompletionTime):
        def decide_start(
            self, job: Job, site: int, estimate: float, others: Sequence[CopyOffer], now: float
        ) -> StartDecision:
            return super().decide_start(job, site, estimate, others, now)

    assert kernel_scheme(Picky(k=2), [ConservativeBackfill()]) is None
    assert kernel_scheme(KReservations(k=2, selection="completion"), [EasyBackfill()]) is None
    assert kernel_scheme(CompletionTime(k=2), [ConservativeBackfill(), EasyBackfill()]) is None
    assert kernel_scheme(CompletionTime(k=2), [ConservativeBackfill()] * 2) is not None
    with pytest.raises(ValueError, match="does not support"):
        simulate_multisite(hand_jobs(), two_sites(), Picky(k=2), ConservativeBackfill(), kernel=True)
    auto = simulate_multisite(hand_jobs(), two_sites(), Picky(k=2), ConservativeBackfill(), log=True)
    assert_same(
        auto, simulate_multisite(hand_jobs(), two_sites(), CompletionTime(k=2), ConservativeBackfill(), log=True)
    )
    # columns given to a scheme the loop does not port: the driver runs on the Job objects built from them
    table = JobColumns.from_jobs(hand_jobs())
    from_columns = simulate_multisite(table, two_sites(), Picky(k=2), ConservativeBackfill(), log=True)
    assert_same(from_columns, auto)
    assert from_columns.table.job_id.tolist() == [j.job_id for j in hand_jobs()]


def test_bad_input_is_refused_by_the_compiled_loop_too() -> None:
    sites = [Site("a", 2)]
    with pytest.raises(ValueError, match="largest site has 2"):
        simulate_multisite([Job(1, 0.0, 1.0, 1.0, 3)], sites, LeastLoad(), EasyBackfill(), kernel=True)
    with pytest.raises(ValueError, match="exceeds requested_time"):
        simulate_multisite([Job(1, 0.0, 5.0, 1.0, 1)], sites, LeastLoad(), EasyBackfill(), kernel=True)
    with pytest.raises(ValueError, match="appears twice"):
        simulate_multisite([Job(1, 0.0, 1.0, 1.0, 1)] * 2, sites, LeastLoad(), EasyBackfill(), kernel=True)


def test_bad_columns_are_refused_as_bad_jobs_are() -> None:
    """The checks on columns refuse what the checks on jobs refuse, naming the same first bad job."""
    sites = [Site("a", 2)]
    cases = [
        [Job(1, 0.0, 1.0, 1.0, 3)],
        [Job(1, 0.0, 5.0, 1.0, 1)],
        [Job(1, 0.0, 1.0, 0.0, 1)],
        [Job(1, 0.0, -1.0, 1.0, 1)],
        [Job(1, 0.0, 1.0, 1.0, 1)] * 2,
        [Job(1, 0.0, 1.0, 1.0, 1), Job(2, 0.0, 1.0, 1.0, 3), Job(1, 0.0, 1.0, 1.0, 1)],
        [Job(1, 0.0, 1.0, 1.0, 1), Job(1, 0.0, 1.0, 1.0, 1), Job(2, 0.0, 1.0, 1.0, 3)],
    ]
    for jobs in cases:
        with pytest.raises(ValueError) as from_jobs:
            simulate_multisite(jobs, sites, LeastLoad(), EasyBackfill(), kernel=True)
        with pytest.raises(ValueError) as from_columns:
            simulate_multisite(JobColumns.from_jobs(jobs), sites, LeastLoad(), EasyBackfill(), kernel=True)
        assert str(from_columns.value) == str(from_jobs.value)
    good = [Job(1, 0.0, 1.0, 1.0, 1), Job(2, 0.0, 1.0, 2.0, 2)]
    simulate_multisite(JobColumns.from_jobs(good), sites, LeastLoad(), EasyBackfill(), kernel=True)


def test_job_columns_refuse_ragged_or_lossy_columns() -> None:
    table = JobColumns.from_jobs([Job(1, 0.0, 1.0, 1.0, 1), Job(2, 5.0, 1.0, 2.0, 2)])
    assert len(table) == 2 and table.requested_procs.dtype == np.int64
    with pytest.raises(ValueError, match="requested_procs has 1 rows"):
        replace(table, requested_procs=np.array([1]))
    with pytest.raises(ValueError, match="cannot be held as int64"):
        replace(table, requested_procs=np.array([1.5, 2.0]))
    widened = replace(table, submit_time=np.array([0, 5]))  # integers widen to float64 exactly
    assert widened.submit_time.dtype == np.float64 and widened.submit_time.tolist() == [0.0, 5.0]


# the compiled loop, compiled the way any run compiles it (from a cold cache: numba types each kernel
# as the loop calls it); prints the kernels whose signature ``kernel_signature`` gets wrong
_TYPED_BY_THE_LOOP = """
import json
import metasched.sim._multisite_kernel as k
from metasched.policy.local import ConservativeBackfill
from metasched.policy.meta import CompletionTime
from metasched.policy.priority import Efficacy
from metasched.sim.multisite import simulate_multisite
from tests.sim.test_multisite import hand_jobs, two_sites

meta = CompletionTime(k=1, selection="completion")
simulate_multisite(hand_jobs(), two_sites(), meta, ConservativeBackfill(order=Efficacy()), kernel=True)
names = [n for stage in k.COMPILE_STAGES for share in stage for n in share] + ["run_loop"]
print(json.dumps([n for n in names if list(getattr(k, n).signatures) != [k.kernel_signature(n)]]))
"""


def test_the_parallel_compile_gives_each_kernel_the_signature_the_loop_calls_it_with(tmp_path: Path) -> None:
    """``compile_kernels`` compiles each kernel for the argument types named by ``kernel_signature``;
    they must be the ones the event loop calls it with, or its work would be lost (a second copy)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _TYPED_BY_THE_LOOP], env=env, capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_compile_kernels_then_the_loop_runs_on_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the kernels are compiled (or loaded) on two processes, this process holds the loop and
    its own shares, one signature each (the helper's kernels reach it through the loop, or through
    numba's cache when the loop is typed here), and the loop's results are the driver's. (The
    cache is taken as cold, whatever it holds: see the next test for a warm one.)"""
    monkeypatch.setattr(kernel_module, "in_cache", lambda name: False)
    compile_kernels()
    mine = [n for _, share in COMPILE_STAGES for n in share] + ["run_loop"]
    assert {n: list(getattr(kernel_module, n).signatures) for n in mine} == {
        n: [kernel_module.kernel_signature(n)] for n in mine
    }
    meta, local = CompletionTime(k=1, selection="completion"), ConservativeBackfill(order=Efficacy())
    assert_same(
        simulate_multisite(hand_jobs(), two_sites(), meta, local, kernel=True),
        simulate_multisite(hand_jobs(), two_sites(), meta, local, kernel=False),
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float64])
def test_copy_head_copies_the_head_of_one_row_into_another_and_nothing_else(dtype: type) -> None:
    arr = np.arange(4 * 7, dtype=np.int64).reshape(4, 7).astype(dtype)
    before = arr.copy()
    kernel_module._copy_head(arr, 3, 1, 5)
    expected = before.copy()
    expected[1, :5] = before[3, :5]
    assert np.array_equal(arr, expected)
    kernel_module._copy_head(arr, 0, 2, 0)  # nothing to copy
    assert np.array_equal(arr, expected)


@pytest.mark.parametrize("tables", [True, False])
def test_a_copied_rows_shape_tables_keep_only_the_source_entries_under_a_newer_generation(tables: bool) -> None:
    """``_copy_row``: row ``b`` (whose own history reached a higher generation than ``a``'s) gets
    ``a``'s current entries under a generation above both (none at all without ``tables``: the
    tables are left empty), and no other entry of its table, in the part in use or beyond it, has
    that generation (so growing the table exposes nothing stale)."""
    from metasched.policy.local._conservative_kernel import GEN

    k = kernel_module
    rows, n, cap, table = 2, 4, 3, 16
    si = np.zeros((rows, k.N_SI), dtype=np.int64)
    si[0, k.TABLE] = table
    pints = np.zeros((rows, k.N_PINTS), dtype=np.int64)
    pints[0, GEN], pints[1, GEN] = 5, 9
    shape_p = np.full((rows, 4 * table), -1, dtype=np.int64)
    shape_p[0, 3] = (5 << 32) | 2  # a's current entry (width 2)
    shape_p[0, 7] = (4 << 32) | 1  # a's stale entry
    shape_p[1, :] = (9 << 32) | 1  # b's own entries, of its generation 9, everywhere
    shape_d = np.zeros((rows, 4 * table))
    shape_d[0, 3] = 10.0
    times = np.zeros((rows, 8))
    times[0, :3] = [0.0, 5.0, 7.0]
    frees = np.zeros((rows, 8), dtype=np.int64)
    frees[0, :3] = [1, 2, 3]
    pints[0, 0] = 3
    z_i = np.zeros((rows, n + 1), dtype=np.int64)
    k._copy_row(
        0, 1, cap, si, np.zeros(k.N_G, dtype=np.int64), z_i, z_i.copy(), np.full((rows, n), -1, dtype=np.int64),
        np.zeros((rows, n), dtype=np.int8), np.zeros((rows, n)), np.zeros((rows, n), dtype=np.int64),
        times, frees, pints, np.zeros((rows, 1 + k.MEMO_SIZE)),
        np.zeros(rows), np.zeros((rows, 2 * (cap + 1))), shape_p, shape_d, np.zeros((rows, 8 * table)), z_i.copy(),
        np.zeros((rows, n + 1)), np.bool_(tables),
    )  # fmt: skip
    gen = int(pints[1, GEN])
    assert gen > 9 and pints[0, GEN] == 5 and si[1, k.TABLE] == table
    assert list(times[1, :3]) == [0.0, 5.0, 7.0] and list(frees[1, :3]) == [1, 2, 3] and pints[1, 0] == 3
    current = [h for h in range(4 * table) if shape_p[1, h] >> 32 == gen]
    if tables:
        assert shape_p[1, 3] == (gen << 32) | 2 and shape_d[1, 3] == 10.0
        assert current == [3]
        assert (shape_p[1, : 2 * table] == -1).sum() == 2 * table - 1  # a's stale entry left empty too
    else:
        assert current == []  # every entry of an older generation: empty


# which kernels this process holds after ``compile_kernels``, and whether the loop came from the cache
_LOADED = """
import json
import metasched.sim._multisite_kernel as k

names = [n for stage in k.COMPILE_STAGES for share in stage for n in share] + ["run_loop"]
print(json.dumps({"cached": k.in_cache("run_loop")}))
k.compile_kernels()
held = [n for n in names if list(getattr(k, n).signatures)]
print(json.dumps({"held": held, "misses": sum(k.run_loop.stats.cache_misses.values())}))
"""


def test_compile_kernels_loads_only_the_loop_from_a_warm_cache(tmp_path: Path) -> None:
    """With the loop in numba's cache, ``compile_kernels`` loads the loop alone (its entry holds the
    code of every kernel it calls), with no compile; a cache without it is seen as cold."""
    compile_kernels()  # (the loop is in this session's cache now, compiled or loaded)
    assert kernel_module.in_cache("run_loop")
    root = Path(__file__).resolve().parents[2]

    def probe(env: dict[str, str]) -> list[dict[str, object]]:
        done = subprocess.run(
            [sys.executable, "-c", _LOADED], env=env, capture_output=True, text=True, check=True, cwd=root
        )
        return [json.loads(line) for line in done.stdout.strip().splitlines()[-2:]]

    cached, loaded = probe(dict(os.environ))
    assert cached == {"cached": True} and loaded == {"held": ["run_loop"], "misses": 0}
    # an empty cache: cold (only the index is read; nothing is compiled by ``in_cache``)
    cold = subprocess.run(
        [sys.executable, "-c", "import metasched.sim._multisite_kernel as k; print(k.in_cache('run_loop'))"],
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}, capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    assert cold.stdout.strip().splitlines()[-1] == "False"


def test_a_copy_is_left_unplaced_only_when_its_first_fit_in_the_plan_as_it_is_ends_by_the_reach() -> None:
    """``_cannot_end_by`` on a hand-made plan row (4 processors, 1 free before t=10, all 4 after):
    a copy of 2 processors for 5 s fits at 10 at the earliest, so its window cannot end before a
    reach of 15 but may before anything later; put off with a bound of 12, it is read from the
    bound (ends at 17); looked at but not in the deferred list, or with no fit, placing decides."""
    k = kernel_module
    times = np.array([[0.0, 10.0, 0.0, 0.0]])
    frees = np.array([[1, 4, 0, 0]], dtype=np.int64)
    pints = np.zeros((1, k.N_PINTS), dtype=np.int64)
    pints[0, 0], pints[0, 1] = 2, 2  # two steps; queue positions 0 and 1 looked at
    pdef = np.array([[1, 0, 0, 0]], dtype=np.int64)
    pbound = np.array([[12.0, 0.0, 0.0, 0.0]])
    pnow = np.zeros(1)
    procs = np.array([1, 2, 2, 5], dtype=np.int64)
    est = np.array([[1.0, 5.0, 5.0, 5.0]])
    ppos = np.array([[0, 1, 3, 4]], dtype=np.int64)

    def cannot(o: int, reach: float, deferred: int = 0) -> bool:
        pints[0, 3], pints[0, 4] = 0, deferred
        return bool(k._cannot_end_by(0, 0, o, reach, procs, est, ppos, times, frees, pints, pnow, pdef, pbound))

    # job 2: not looked at yet (position 3 >= the cursor): its fit from the row's instant, [10, 15)
    assert cannot(2, 15.0)
    assert cannot(2, 14.0)
    assert not cannot(2, float(np.nextafter(15.0, np.inf)))
    # job 1: put off with bound 12 (from 0 its fit would end at 15): read from 12, [12, 17)
    assert cannot(1, 17.0, deferred=1)
    assert not cannot(1, 17.5, deferred=1)
    # job 1 looked at but the deferred list does not hold it, job 0 likewise: not known here
    assert not cannot(1, 0.0, deferred=0)
    assert not cannot(0, 0.0, deferred=1)
    # job 3 is wider than the site: no fit in the row, placing reports it
    assert not cannot(3, 0.0)
