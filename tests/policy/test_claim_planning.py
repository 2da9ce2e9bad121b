"""Claim policies that look at the other placeholders: hand-worked snapshots, exact decisions, properties."""

from __future__ import annotations

import pkgutil

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import metasched.policy.claim as claim_pkg
from metasched.model.job import Job
from metasched.policy.base import SiteView
from metasched.policy.claim import (
    REGISTRY,
    ClaimWorld,
    CompletionTimeClaim,
    EfficacyClaim,
    FcfsClaim,
    FreeResources,
    MinMinClaim,
    SiteSlots,
)
from metasched.policy.claim.efficacy import efficacy
from metasched.policy.claim.fcfs import first_fit
from metasched.policy.claim.min_min import first_on_slots
from metasched.policy.mapping.min_min import MinMin
from metasched.policy.priority.efficacy import EFFICACY_ATTR, Efficacy

ONE = FreeResources(1)


def job(jid: int, est: dict[str, float], submit: float = 0.0, procs: int = 1) -> Job:
    return Job(jid, submit, 0.0, 0.0, procs, attrs={"estimates": est})


def world(**sites: SiteSlots) -> ClaimWorld:
    return ClaimWorld(sites)


def test_registry_lists_every_module() -> None:
    modules = {m.name for m in pkgutil.iter_modules(claim_pkg.__path__)} - {"base"}
    assert {cls.__module__.rsplit(".", 1)[1] for cls in REGISTRY.values()} == modules
    assert set(REGISTRY) == {"fcfs", "efficacy", "completion-time", "min-min", "pasquali"}


def test_efficacy_prefers_jobs_relatively_best_here() -> None:
    # at slow site B: job 1 is 3x slower than at A, job 2 only 1.1x: B takes 2 first, A takes 1 first
    ready = [job(1, {"A": 10, "B": 30}), job(2, {"A": 20, "B": 22})]
    w = world(A=SiteSlots("A", idle=1), B=SiteSlots("B", idle=1))
    assert efficacy(ready[0], "B", ["A", "B"]) == 10 / 30
    assert EfficacyClaim().select(ready, "B", ONE, 0.0, 1, w) == [2]
    assert EfficacyClaim().select(ready, "A", ONE, 0.0, 1, w) == [1]
    # equal speeds: FCFS
    same = [job(1, {"A": 5, "B": 5}, submit=1), job(2, {"A": 5, "B": 5}, submit=0)]
    assert EfficacyClaim().select(same, "B", ONE, 0.0, 2, w) == [2]


def test_completion_time_declines_when_another_placeholder_finishes_sooner() -> None:
    j = job(1, {"A": 10, "B": 100})
    # A's placeholder is busy until t=30: A completes at 40 < B's 100 -> B declines
    assert CompletionTimeClaim().select([j], "B", ONE, 0.0, 1, world(A=SiteSlots("A", busy_until=(30.0,)))) == []
    # busy until 95: A completes at 105 > 100 -> B takes it
    assert CompletionTimeClaim().select([j], "B", ONE, 0.0, 1, world(A=SiteSlots("A", busy_until=(95.0,)))) == [1]
    # a queued placeholder at A expected to start at 50 completes at 60 -> decline
    assert CompletionTimeClaim().select([j], "B", ONE, 0.0, 1, world(A=SiteSlots("A", queued_start=(50.0,)))) == []
    # no placeholder at A at all: B takes it
    assert CompletionTimeClaim().select([j], "B", ONE, 0.0, 1, world(A=SiteSlots("A"))) == [1]
    # a tie goes to the asker
    tie = job(2, {"A": 10, "B": 40})
    assert CompletionTimeClaim().select([tie], "B", ONE, 0.0, 1, world(A=SiteSlots("A", busy_until=(30.0,)))) == [2]


def test_completion_time_counts_the_jobs_ahead() -> None:
    # Three jobs, each 10 at A and 25 at B; A has one idle placeholder. Plan in arrival order:
    # 1 -> A [0,10], 2 -> A [10,20], 3: A would end at 30, B at 25 -> B takes job 3.
    ready = [job(i, {"A": 10, "B": 25}) for i in (1, 2, 3)]
    w = world(A=SiteSlots("A", idle=1), B=SiteSlots("B"))
    assert CompletionTimeClaim().select(ready, "B", ONE, 0.0, 1, w) == [3]
    assert CompletionTimeClaim().select(ready, "A", ONE, 0.0, 1, world(A=SiteSlots("A", idle=1))) == [1]


def test_min_min_maps_shortest_first() -> None:
    # A idle; asker at B. Jobs at (A, B): 1 (50, 60), 2 (5, 8), 3 (7, 9).
    # Min-min: 2 -> A (5); then 3: A 12, B 9 -> B (the asker) gets 3.
    ready = [job(1, {"A": 50, "B": 60}), job(2, {"A": 5, "B": 8}), job(3, {"A": 7, "B": 9})]
    w = world(A=SiteSlots("A", idle=1), B=SiteSlots("B"))
    assert MinMinClaim().select(ready, "B", ONE, 0.0, 1, w) == [3]
    # completion-time in arrival order gives B job 2 instead: 1 -> A (50), 2: A 55 vs B 8 -> B
    assert CompletionTimeClaim().select(ready, "B", ONE, 0.0, 1, w) == [2]
    # batch claim of a 3-cpu placeholder alone: shortest first, all three
    assert MinMinClaim().select(ready, "B", FreeResources(3), 0.0, 3, world(B=SiteSlots("B"))) == [2, 3, 1]


def test_without_world_planning_claims_are_fcfs_first_fit() -> None:
    ready = [job(i, {"A": float(10 * i)}, submit=float(-i)) for i in (1, 2, 3)]
    for policy in (CompletionTimeClaim(), EfficacyClaim()):
        assert policy.select(ready, "A", FreeResources(2), 0.0, 2) == FcfsClaim().select(
            ready, "A", FreeResources(2), 0.0, 2
        )


_jobs = st.lists(
    st.tuples(st.integers(1, 3), st.floats(1, 100), st.floats(1, 100), st.floats(0, 50)), min_size=1, max_size=12
)
_slots = st.builds(
    SiteSlots,
    st.just("A"),
    st.integers(0, 2),
    st.lists(st.floats(0, 200), max_size=3).map(tuple),
    st.lists(st.floats(0, 200), max_size=2).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(_jobs, _slots, st.integers(1, 4), st.integers(1, 4))
def test_every_policy_keeps_the_claim_invariant(
    specs: list[tuple[int, float, float, float]], slots_a: SiteSlots, cpus: int, limit: int
) -> None:
    ready = [job(i, {"A": a, "B": b}, submit=t, procs=p) for i, (p, a, b, t) in enumerate(specs)]
    w = world(A=slots_a, B=SiteSlots("B", idle=1))
    for cls in REGISTRY.values():
        chosen = cls().select(ready, "B", FreeResources(cpus), 0.0, limit, w)
        by = {j.job_id: j for j in ready}
        assert len(chosen) == len(set(chosen)) <= limit
        assert sum(by[c].requested_procs for c in chosen) <= cpus
        assert cls().select(ready, "B", FreeResources(cpus), 0.0, limit, w) == chosen  # deterministic
    # one ready job that fits: completion-time takes it at B exactly when no A placeholder completes it sooner
    solo = ready[:1]
    (p, a, b, _t) = specs[0]
    if p <= cpus:
        got = CompletionTimeClaim().select(solo, "B", FreeResources(cpus), 0.0, limit, w)
        free_a = slots_a.free_times(0.0)
        sooner = bool(free_a) and min(free_a) + a < b
        assert got == ([] if sooner else [0])


def test_pasquali_priorities() -> None:
    from metasched.policy.claim import PasqualiClaim

    p = PasqualiClaim()
    plain = job(1, {"A": 10})
    gold = job(2, {"A": 10}, submit=5)
    gold.attrs["user_class"] = "gold"
    # deadline 25, est 10, k 2: t = 5; at now 0 ext = 10 in (5, 25]: urgency 10 * (10 - 5) / 20 = 2.5
    urgent = job(3, {"A": 10}, submit=9)
    urgent.attrs["deadline"] = 25.0
    assert p.deadline_urgency(urgent, "A", 0.0) == 2.5
    assert p.deadline_urgency(urgent, "A", 16.0) == 0.0  # already late
    assert p.deadline_urgency(urgent, "A", -20.0) == 0.0  # not urgent yet
    assert p.select([plain, gold, urgent], "A", FreeResources(3), 0.0, 3) == [3, 2, 1]
    assert p.select([plain, gold], "A", FreeResources(3), 0.0, 3) == [2, 1]
    # licences: m has 1 copy free and 2 ready jobs ask for it: critical (rho 2) -> first
    lic = [job(i, {"A": 1}) for i in (1, 2, 3)]
    lic[1].attrs["licences"] = {"m": 1}
    lic[2].attrs["licences"] = {"m": 1}
    assert p.select(lic, "A", FreeResources(3, licences={"m": 1}), 0.0, 3) == [2, 1]
    bad = job(9, {"A": 1})
    bad.attrs["user_class"] = "platinum"
    import pytest

    with pytest.raises(ValueError, match="unknown user class"):
        p.select([bad], "A", ONE, 0.0)


def test_min_min_alone_with_a_job_too_wide() -> None:
    ready = [job(1, {"A": 1}, procs=4), job(2, {"A": 5})]
    assert MinMinClaim().select(ready, "A", FreeResources(2), 0.0, 2) == [2]
    assert MinMinClaim().select(ready[:1], "A", FreeResources(2), 0.0, 2) == []


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.integers(1, 5).flatmap(
            lambda m: st.tuples(
                st.lists(st.lists(st.integers(1, 6), min_size=m, max_size=m), min_size=n, max_size=n),
                st.lists(st.integers(0, 8), min_size=m, max_size=m),
                st.integers(1, m),
            )
        )
    )
)
def test_min_min_first_on_slots_is_the_full_mappings_first(case: tuple[list[list[int]], list[int], int]) -> None:
    # Small integers: many ties, and exact sums, so "first mapped" = "shortest mapped, lowest index".
    rows, ready, n_first = case
    etc, avail = np.array(rows, dtype=float), np.array(ready, dtype=float)
    full = MinMin(column_threshold=1000).map(etc, avail)
    expected = []
    for m in range(n_first):
        mapped = np.flatnonzero(full == m)
        if mapped.size:
            expected.append(int(mapped[np.argmin(etc[mapped, m])]))
    assert first_on_slots(etc, avail, n_first) == expected


@settings(max_examples=150, deadline=None)
@given(_jobs, st.booleans(), st.integers(1, 4))
def test_shared_estimate_tables_decide_as_per_job_tables(
    specs: list[tuple[int, float, float, float]], share: bool, limit: int
) -> None:
    # The store hands every job of a kind one table; the memo on it must not change any decision,
    # and efficacy must rank exactly as the Efficacy order of per-job efficacies.
    kinds = [{"A": 5.0, "B": 9.0}, {"A": 7.0, "B": 2.0}]
    ready = [
        job(i, kinds[i % 2] if share else dict(kinds[i % 2]), submit=t, procs=p)
        for i, (p, _a, _b, t) in enumerate(specs)
    ]
    copies = [job(j.job_id, dict(j.attrs["estimates"]), j.submit_time, j.requested_procs) for j in ready]
    w = world(A=SiteSlots("A", idle=1), B=SiteSlots("B", idle=1))
    for cls in REGISTRY.values():
        assert cls().select(ready, "B", FreeResources(4), 0.0, limit, w) == cls().select(
            copies, "B", FreeResources(4), 0.0, limit, w
        )
    # the simulator's Efficacy queue order, on copies carrying their efficacy at B
    tagged = [
        Job(j.job_id, j.submit_time, 0.0, 0.0, 1, attrs={EFFICACY_ATTR: efficacy(j, "B", ["A", "B"])}) for j in copies
    ]
    view = SiteView(total_procs=4, free_procs=4, running=(), queue=tagged, name="B")
    by = {j.job_id: j for j in copies}
    expected = first_fit([by[j.job_id] for j in Efficacy().order(view, 0.0)], FreeResources(4), limit)
    assert EfficacyClaim().select(ready, "B", FreeResources(4), 0.0, limit, w) == expected


_pasquali_jobs = st.lists(
    st.tuples(
        st.floats(0, 20),  # submit
        st.sampled_from([0.0, 2.0, 10.0]),  # estimate here (0: none)
        st.one_of(st.none(), st.floats(0, 60)),  # deadline
        st.sampled_from(["regular", "silver", "gold", "GOLD"]),
        st.sampled_from([{}, {"m": 1}, {"n": 1}, {"m": 1, "n": 1}]),
    ),
    min_size=1,
    max_size=15,
)


@settings(max_examples=150, deadline=None)
@given(_pasquali_jobs, st.dictionaries(st.sampled_from("mn"), st.integers(0, 3)), st.floats(0, 30))
def test_pasquali_ranks_by_its_heuristics_per_job(specs: list, copies: dict[str, int], now: float) -> None:
    """The vectorised ranking equals sorting by (-(class points + deadline + licence terms), submit, id)."""
    from metasched.policy.claim import PasqualiClaim
    from metasched.policy.meta.two_level_base import LsQueue

    p = PasqualiClaim()
    ready = []
    for i, (submit, est, deadline, cls, lic) in enumerate(specs):
        j = job(i, {"A": est} if est else {}, submit=submit)
        j.attrs.update(user_class=cls, licences=dict(lic))
        if deadline is not None:
            j.attrs["deadline"] = deadline
        ready.append(j)
    free = FreeResources(len(ready), licences=copies)
    # reference: the queue's columns one job at a time, the heuristics on the whole queue
    names = sorted({n for j in ready for n in j.attrs["licences"]})
    uses = np.array([[1.0 if n in j.attrs["licences"] else 0.0 for n in names] for j in ready]).reshape(
        len(ready), len(names)
    )
    queued = uses.sum(axis=0).astype(np.int64)
    q = LsQueue(
        now=now,
        submit=np.array([j.submit_time for j in ready]),
        nxt=np.array([j.attrs["estimates"].get("A", 0.0) for j in ready]),
        deadline=np.array([j.attrs.get("deadline", np.nan) for j in ready], dtype=float),
        uses=uses,
        licence_total=np.array([max(0, copies.get(n, 0)) for n in names], dtype=np.int64),
        licence_requests=queued,
        licence_queued=queued,
    )
    with np.errstate(divide="ignore", invalid="ignore"):  # jobs with no estimate: never urgent
        ls = p.deadline.deltas(q) + p.licences.deltas(q)
    points = {"regular": 0.0, "silver": 1.0, "gold": 2.0}
    prio = {j.job_id: points[j.attrs["user_class"].lower()] + float(ls[r]) for r, j in enumerate(ready)}
    ranked = sorted(ready, key=lambda j: (-prio[j.job_id], j.submit_time, j.job_id))
    assert p.select(ready, "A", free, now, len(ready)) == first_fit(ranked, free, len(ready))
