"""Licence limits in the placeholder-world simulator: a hand-worked timeline and the caps as a property."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.claim import REGISTRY, FcfsClaim
from metasched.sim.claimsim import PlaceholderSite, simulate_claims
from metasched.sim.schedule import Schedule


def peak_held(jobs: list[Job], sched: Schedule, name: str, site: int | None = None) -> int:
    """Most copies of licence ``name`` held at once (at site index ``site``, or anywhere).

    A job holds its licences over ``[start, end)``: at one instant ends come before starts.
    """
    points = []
    for k, j in enumerate(jobs):
        count = (j.attrs.get("licences") or {}).get(name, 0)
        if count and (site is None or int(sched.site[k]) == site):
            points += [(float(sched.start_time[k]), 1, count), (float(sched.end_time[k]), 0, -count)]
    level = peak = 0
    for _, _, delta in sorted(points):
        level += delta
        peak = max(peak, level)
    return peak


def lic_job(jid: int, run: float, licences: dict[str, int], submit: float = 0.0) -> Job:
    times = {"A": run, "B": run}
    return Job(jid, submit, 1.0, 0.0, 1, attrs={"run_s": times, "estimates": times, "licences": licences})


def test_hand_worked_global_limit_across_sites() -> None:
    # lm: 1 copy across both sites. Jobs 1, 2 need it (10 s each), 3 does not (5 s). One placeholder
    # per site. t=0: A (name order) takes 1; B cannot take 2 (the only copy is held at A) and takes 3.
    # t=5: B idle again, 2 still blocked. t=10: 1 ends, the copy is back; A (idle since 10, B since 5:
    # B asks first) -> B takes 2 at 10, ends at 20.
    jobs = [lic_job(1, 10, {"lm": 1}), lic_job(2, 10, {"lm": 1}), lic_job(3, 5, {})]
    sites = [PlaceholderSite("A", 1), PlaceholderSite("B", 1)]
    sched, claims = simulate_claims(jobs, sites, FcfsClaim(), record=True, licences={"lm": 1})
    assert sched.start_time.tolist() == [0, 10, 0]
    assert sched.site.tolist() == [0, 1, 1]
    assert [(c.at, c.site, c.chosen) for c in claims][:3] == [(0, "A", (1,)), (0, "B", (3,)), (5, "B", ())]
    # with two copies both licence jobs start at once
    free, _ = simulate_claims(jobs, sites, FcfsClaim(), licences={"lm": 2})
    assert free.start_time.tolist()[:2] == [0, 0]


def test_site_limit_and_unavailable_licence() -> None:
    # lx is offered only by site A (1 copy): both lx jobs run at A, one after the other.
    jobs = [lic_job(1, 4, {"lx": 1}), lic_job(2, 4, {"lx": 1})]
    sites = [PlaceholderSite("A", 2, licences={"lx": 1}), PlaceholderSite("B", 2)]
    sched, _ = simulate_claims(jobs, sites, FcfsClaim())
    assert sched.site.tolist() == [0, 0] and sched.start_time.tolist() == [0, 4]
    with pytest.raises(ValueError, match="licence 'ly'"):
        simulate_claims([lic_job(1, 1, {"ly": 1})], sites, FcfsClaim(), licences={"lz": 3})


_jobs = st.lists(
    st.tuples(st.floats(0.5, 10), st.floats(0, 20), st.sampled_from([{}, {"g": 1}, {"s": 1}, {"g": 1, "s": 1}])),
    min_size=1,
    max_size=20,
)


@settings(max_examples=40, deadline=None)
@given(_jobs, st.integers(1, 3), st.integers(1, 3), st.sampled_from(sorted(REGISTRY)))
def test_caps_are_never_exceeded(specs: list, g_copies: int, s_copies: int, key: str) -> None:
    """Global ``g`` (g_copies anywhere) and site-only ``s`` (s_copies at A, none at B): never exceeded, all run."""
    jobs = [lic_job(i + 1, run, dict(lic), submit) for i, (run, submit, lic) in enumerate(specs)]
    sites = [PlaceholderSite("A", 2, licences={"s": s_copies}), PlaceholderSite("B", 2)]
    sched, _ = simulate_claims(jobs, sites, REGISTRY[key](), licences={"g": g_copies})
    assert (sched.start_time >= 0).all()  # every job ran
    assert peak_held(jobs, sched, "g") <= g_copies
    assert peak_held(jobs, sched, "s", site=0) <= s_copies
    assert peak_held(jobs, sched, "s", site=1) == 0
