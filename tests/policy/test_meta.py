"""Meta-schedulers and the efficacy order: decisions on hand-built snapshots, no simulator."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import metasched.policy.meta as meta_pkg
from metasched.model import Job
from metasched.policy.base import RunningJob, SiteView
from metasched.policy.local import ConservativeBackfill
from metasched.policy.meta import (
    REGISTRY,
    CancelSlowerOnly,
    CompletionTime,
    CopyOffer,
    KReservations,
    LeastLoad,
    MetaScheduler,
    MetaSiteView,
)
from metasched.policy.priority import REGISTRY as ORDERS
from metasched.policy.priority import Efficacy, Fcfs


def job(job_id: int = 1, submit: float = 0.0, req: float = 10.0, procs: int = 1, efficacy: float | None = None) -> Job:
    j = Job(job_id, submit, req, req, procs)
    if efficacy is not None:
        j.attrs["efficacy"] = efficacy
    return j


def views(loads: list[float], completions: list[float] | None = None) -> list[MetaSiteView]:
    return [
        MetaSiteView(i, f"s{i}", 8, load, 10.0, None if completions is None else completions[i])
        for i, load in enumerate(loads)
    ]


def test_registry_lists_every_meta_module() -> None:
    classes = set()
    for info in pkgutil.iter_modules(meta_pkg.__path__):
        module = importlib.import_module(f"metasched.policy.meta.{info.name}")
        classes |= {
            obj
            for obj in vars(module).values()
            if isinstance(obj, type)
            and issubclass(obj, MetaScheduler)
            and not inspect.isabstract(obj)
            and obj.__module__ == module.__name__
        }
    assert classes == set(REGISTRY.values())
    assert set(REGISTRY) == {"least-load", "k-reservations", "completion-time", "cancel-slower-only"}


def test_efficacy_is_registered() -> None:
    assert ORDERS["efficacy"] is Efficacy


def test_least_load_picks_lowest_load_then_lowest_index() -> None:
    assert LeastLoad().select_sites(job(), views([5.0, 2.0, 3.0]), 0.0) == [1]
    assert LeastLoad().select_sites(job(), views([2.0, 5.0, 2.0]), 0.0) == [0]


def test_k_reservations_takes_k_least_loaded() -> None:
    assert KReservations(k=2).select_sites(job(), views([5.0, 2.0, 3.0, 9.0]), 0.0) == [1, 2]
    assert KReservations(k=9).select_sites(job(), views([5.0, 2.0]), 0.0) == [1, 0]


def test_completion_selection_uses_expected_completion() -> None:
    meta = KReservations(k=2, selection="completion")
    assert meta.needs_completion_times(4) and meta.selection_messages(4) == 8
    assert meta.select_sites(job(), views([0.0, 1.0, 2.0, 3.0], [50.0, 20.0, 20.0, 10.0]), 0.0) == [3, 1]
    # k = N chooses every site: no query, no messages.
    every = KReservations(k=4, selection="completion")
    assert not every.needs_completion_times(4) and every.selection_messages(4) == 0
    with pytest.raises(ValueError, match="expected_completion"):
        meta.select_sites(job(), views([0.0, 1.0, 2.0, 3.0]), 0.0)


def test_bad_tunables_are_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        KReservations(k=0)
    with pytest.raises(ValueError, match="selection"):
        CompletionTime(selection="fastest")  # type: ignore[arg-type]


def test_start_based_cancels_every_other_copy() -> None:
    offers = [CopyOffer(1, 5.0, 100.0), CopyOffer(3, 5.0, math.inf)]
    decision = KReservations(k=3).decide_start(job(), 0, 50.0, offers, 0.0)
    assert decision.start and decision.cancel == (1, 3) and decision.kill == ()


def test_completion_time_denies_when_another_copy_completes_earlier() -> None:
    meta = CompletionTime()
    # here: 10 + 50 = 60; site 1 reserved at 20 with estimate 30 -> 50 < 60.
    assert not meta.decide_start(job(), 0, 50.0, [CopyOffer(1, 30.0, 20.0)], 10.0).start
    # equal completion: start here (tie-break), cancelling the rest.
    decision = meta.decide_start(job(), 0, 40.0, [CopyOffer(1, 30.0, 20.0), CopyOffer(2, 1.0, math.inf)], 10.0)
    assert decision.start and decision.cancel == (1, 2)


def test_cancel_slower_only_keeps_faster_copies() -> None:
    meta = CancelSlowerOnly()
    offers = [CopyOffer(1, 30.0, 500.0), CopyOffer(2, 90.0, 400.0), CopyOffer(3, 50.0, 300.0)]
    decision = meta.decide_start(job(), 0, 50.0, offers, 0.0)
    assert decision.start and decision.cancel == (2, 3) and decision.kill == ()


def test_cancel_slower_only_kills_only_for_strictly_earlier_completion() -> None:
    meta = CancelSlowerOnly()
    running = CopyOffer(0, 100.0, 10.0, is_running=True)  # expected end 110
    decision = meta.decide_start(job(), 1, 50.0, [running], 30.0)  # 80 < 110
    assert decision.start and decision.kill == (0,)
    assert not meta.decide_start(job(), 1, 80.0, [running], 30.0).start  # 110 == 110: keep running
    assert not CompletionTime().decide_start(job(), 1, 1.0, [running], 30.0).start


def test_cancel_slower_only_no_kill_never_restarts_a_running_job() -> None:
    """Hand-worked: the job runs at site 0 (started at 10, estimate 100: expected end 110). Site
    1's kept copy could end at 30 + 50 = 80 < 110: ``restart`` kills site 0 and starts here;
    ``no-kill`` denies it (the job runs at one site only). With no running copy both readings
    start and cancel exactly the copies at slower sites (estimate >= 50: sites 2 and 3)."""
    running = CopyOffer(0, 100.0, 10.0, is_running=True)
    restart, no_kill = CancelSlowerOnly(), CancelSlowerOnly(variant="no-kill")
    assert restart.decide_start(job(), 1, 50.0, [running], 30.0).kill == (0,)
    assert not no_kill.decide_start(job(), 1, 50.0, [running], 30.0).start
    offers = [CopyOffer(1, 30.0, 500.0), CopyOffer(2, 90.0, 400.0), CopyOffer(3, 50.0, 300.0)]
    for meta in (restart, no_kill):
        decision = meta.decide_start(job(), 0, 50.0, offers, 0.0)
        assert decision.start and decision.cancel == (2, 3) and decision.kill == ()
    with pytest.raises(ValueError, match="variant"):
        CancelSlowerOnly(variant="replicate")  # type: ignore[arg-type]


def test_efficacy_ranks_higher_efficacy_first_then_fcfs() -> None:
    a, b, c = job(1, 0.0, efficacy=0.5), job(2, 5.0, efficacy=1.0), job(3, 1.0)
    view = SiteView(8, 8, [], [a, b, c])
    assert [j.job_id for j in Efficacy().order(view, 0.0)] == [3, 2, 1]
    assert [j.job_id for j in Fcfs().order(view, 0.0)] == [1, 2, 3]


@st.composite
def queues(draw: st.DrawFn) -> tuple[SiteView, Job, list[Job]]:
    """A site, a queued job ``j`` of efficacy 1.0, and extra jobs that must not delay it:
    later arrivals (any efficacy) and jobs of lower efficacy (any arrival)."""
    procs = draw(st.integers(1, 6))
    running = [
        RunningJob(job(100 + i, 0.0), 0.0, p, float(draw(st.integers(1, 30))))
        for i, p in enumerate(draw(st.lists(st.integers(1, procs), max_size=3)))
    ]
    used = sum(r.procs for r in running)
    if used > procs:
        running, used = [], 0

    def jobs(start_id: int, submit: st.SearchStrategy[int], eff: st.SearchStrategy[float]) -> list[Job]:
        n = draw(st.integers(0, 5))
        return [
            job(
                start_id + i,
                float(draw(submit)),
                float(draw(st.integers(1, 20))),
                draw(st.integers(1, procs)),
                draw(eff),
            )
            for i in range(n)
        ]

    ahead = jobs(200, st.integers(0, 49), st.just(1.0))
    target = job(1, 50.0, float(draw(st.integers(1, 20))), draw(st.integers(1, procs)), 1.0)
    extra = jobs(300, st.integers(51, 100), st.sampled_from([0.2, 0.5, 1.0])) + jobs(
        400, st.integers(0, 100), st.sampled_from([0.2, 0.5, 0.99])
    )
    return SiteView(procs, procs - used, running, [*ahead, target]), target, extra


@given(queues())
@settings(max_examples=150, deadline=None)
def test_efficacy_conservative_reservation_of_an_efficacy_one_job_is_not_delayed_by_others(
    case: tuple[SiteView, Job, list[Job]],
) -> None:
    """Seed 000 section 6: under conservative backfilling with efficacy priority, a job at a
    site where its efficacy is 1.0 is only preceded by earlier efficacy-1.0 jobs, so what arrives
    later or runs worse there never delays it: its delay is bounded, it cannot starve."""
    view, target, extra = case
    sched = ConservativeBackfill(order=Efficacy())

    def start_of(plan_view: SiteView) -> float:
        plan = sched.plan(plan_view, 0.0)
        return 0.0 if any(j.job_id == target.job_id for j in plan.starts) else plan.reservations[target.job_id]

    alone = start_of(view)
    crowded = SiteView(view.total_procs, view.free_procs, view.running, [*view.queue, *extra])
    assert start_of(crowded) == alone


def test_cancel_slower_only_variant_is_named_like_every_parameter() -> None:
    from metasched.policy.meta.registry import PolicyError, parse_policy

    meta = parse_policy("cancel-slower-only:k=3,variant=no-kill").build()
    assert isinstance(meta, CancelSlowerOnly) and meta.variant == "no-kill" and meta.k == 3
    assert parse_policy("cancel-slower-only").build().variant == "restart"
    with pytest.raises(PolicyError, match="variant"):
        parse_policy("cancel-slower-only:variant=replicate")
