"""The shortcuts of the simulator change no decision.

* A plan computed with the hint that :class:`SiteState` hands back (and its queue columns)
  equals the plan of a fresh scheduler on the same view without either (``plan(view, now)``
  stays a pure function of the view).
* :class:`SiteState` drops the hint whenever the conditions of ``Plan.hint`` break.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings

from metasched.model.job import Job
from metasched.policy.base import LocalScheduler, Plan, SiteView
from metasched.policy.local import REGISTRY
from metasched.sim.replay import simulate
from metasched.sim.site import SiteState
from tests.sim.test_properties import workloads
from tests.sim.traces import read_trace, trace_paths
from tests.sim.workloads import job


class HintChecker(LocalScheduler):
    """Plans with the hint, and checks the decision against a fresh scheduler without it."""

    key = "hint-checker"

    def __init__(self, key: str) -> None:
        super().__init__()
        self.inner = REGISTRY[key]()
        self.key_ = key
        self.hinted = 0

    def plan(self, view: SiteView, now: float) -> Plan:
        # Fresh: no hint and no columns (the pure-Python pass of every scheduler).
        fresh = REGISTRY[self.key_]().plan(dataclasses.replace(view, hint=None, columns=None), now)
        plan = self.inner.plan(view, now)
        if view.hint is not None:
            self.hinted += 1
        assert [j.job_id for j in plan.starts] == [j.job_id for j in fresh.starts], now
        assert dict(plan.reservations) == dict(fresh.reservations), now
        return plan


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(overrun=True))
def test_hinted_plans_equal_fresh_plans_easy(workload: tuple[list[Job], int]) -> None:
    jobs, procs = workload
    simulate(jobs, procs, HintChecker("easy"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(overrun=True))
def test_hinted_plans_equal_fresh_plans_conservative(workload: tuple[list[Job], int]) -> None:
    jobs, procs = workload
    # compiled=False: the Python pass and its hint (a pass on columns leaves none; the trace test checks it).
    simulate(jobs, procs, HintChecker("conservative"), compiled=False)


@pytest.mark.traces
@pytest.mark.skipif(not trace_paths(), reason="shared traces absent (../shared/data/traces or METASCHED_SHARED)")
@pytest.mark.parametrize(("key", "compiled"), [("easy", True), ("conservative", False), ("conservative", True)])
def test_hinted_plans_equal_fresh_plans_on_a_trace(key: str, compiled: bool) -> None:
    path = next(p for p in trace_paths() if p.name.startswith("SDSC-SP2"))
    jobs, procs = read_trace(path, limit=2000)
    checker = HintChecker(key)
    simulate(jobs, procs, checker, compiled=compiled)
    if key == "conservative" and compiled:
        assert checker.hinted == 0  # a pass on columns leaves no hint (its plans are still checked)
    else:
        assert checker.hinted > 100  # the shortcut is really exercised


def test_min_queued_width() -> None:
    site = SiteState(4)
    assert site.min_queued_width == 5
    site.submit(job(1, 0, 5, 5, 3))
    site.submit(job(2, 0, 5, 5, 2))
    site.submit(job(3, 0, 5, 5, 2))
    assert site.min_queued_width == 2
    site.start(site.queue[2], 0)
    assert site.min_queued_width == 2
    site.cancel(3)
    assert site.min_queued_width == 3
    site.submit(job(4, 0, 5, 5, 1))
    assert site.min_queued_width == 1
    site.cancel(4)
    site.cancel(1)
    assert site.min_queued_width == 5


def _site_with_hint() -> tuple[SiteState, LocalScheduler]:
    # P=4: job 1 (2 procs, estimate 10) runs; job 2 (4 procs) is blocked: EASY leaves a hint.
    site = SiteState(4)
    scheduler = REGISTRY["easy"]()
    site.submit(job(1, 0, 5, 10, 2))
    site.accept(scheduler.plan(site.view(0), 0), 0)
    site.submit(job(2, 1, 5, 5, 4))
    site.accept(scheduler.plan(site.view(1), 1), 1)
    assert site.view(2).hint is not None
    return site, scheduler


def test_hint_survives_an_exact_end_and_arrivals_only() -> None:
    site, _ = _site_with_hint()
    site.submit(job(3, 2, 5, 5, 1))
    assert site.view(2).hint is not None
    site.finish(1, 10)  # exactly its expected end
    assert site.view(10).hint is not None


@pytest.mark.parametrize("breaker", ["early_end", "end_without_time", "cancel", "direct_start", "overrun"])
def test_hint_dropped_when_its_conditions_break(breaker: str) -> None:
    site, _ = _site_with_hint()
    now = 5.0
    if breaker == "early_end":
        site.finish(1, 5)
    elif breaker == "end_without_time":
        site.finish(1)
    elif breaker == "cancel":
        site.cancel(2)
    elif breaker == "direct_start":
        site.submit(job(3, 2, 5, 5, 1))
        site.start(site.queue[3], 2)
    else:
        now = 11.0  # job 1 (expected end 10) still runs: it overran
    assert site.view(now).hint is None
    assert site.view(None).hint is None
