"""The placeholder-world simulator: hand-worked timelines and invariants on random workloads."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.job import Job
from metasched.policy.claim import REGISTRY, CompletionTimeClaim, FcfsClaim
from metasched.sim.claimsim import PlaceholderSite, simulate_claims


def job(jid: int, run: dict[str, float], submit: float = 0.0, after: tuple[int, ...] = ()) -> Job:
    return Job(jid, submit, 1.0, 0.0, 1, attrs={"run_s": run, "estimates": run, "after": list(after)})


def test_hand_worked_fcfs_and_completion_time() -> None:
    # A is 3x faster. Jobs 1, 2 (10 at A, 30 at B); one placeholder each.
    jobs = [job(1, {"A": 10, "B": 30}), job(2, {"A": 10, "B": 30})]
    sites = [PlaceholderSite("A", 1), PlaceholderSite("B", 1)]
    fcfs, claims = simulate_claims(jobs, sites, FcfsClaim(), record=True)
    # t=0: A asks first (site name order), gets 1; B gets 2 and runs it 30 s.
    assert fcfs.start_time.tolist() == [0, 0] and fcfs.end_time.tolist() == [10, 30]
    assert [(c.at, c.site, c.chosen) for c in claims] == [(0, "A", (1,)), (0, "B", (2,))]
    ct, claims = simulate_claims(jobs, sites, CompletionTimeClaim(), record=True)
    # B declines 2 (A completes it at 20 < 30); A runs it at 10.
    assert ct.start_time.tolist() == [0, 10] and ct.end_time.tolist() == [10, 20]
    assert ct.site.tolist() == [0, 0]
    assert (0, "B", ()) in [(c.at, c.site, c.chosen) for c in claims]


def test_dependencies_and_late_placeholders() -> None:
    jobs = [job(1, {"A": 5}), job(2, {"A": 5}, after=(1,)), job(3, {"A": 1}, submit=2)]
    sched, _ = simulate_claims(jobs, [PlaceholderSite("A", 2, start_at=(3.0, 100.0))], FcfsClaim())
    # t=3 the first placeholder starts: ready 1 and 3, FCFS -> 1 [3, 8]; t=8 job 2 becomes ready and,
    # submitted at 0, goes before 3: 2 [8, 13], then 3 [13, 14]; the second placeholder (t=100) is idle.
    assert sched.start_time.tolist() == [3, 8, 13] and sched.end_time.tolist() == [8, 13, 14]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="unknown dependencies"):
        simulate_claims([job(1, {"A": 1}, after=(9,))], [PlaceholderSite("A", 1)], FcfsClaim())
    with pytest.raises(ValueError, match="duplicate site"):
        simulate_claims([job(1, {"A": 1})], [PlaceholderSite("A", 1), PlaceholderSite("A", 1)], FcfsClaim())


_workload = st.lists(
    st.tuples(st.floats(0.5, 20), st.floats(0.5, 20), st.floats(0, 30), st.integers(-1, 5)), min_size=1, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(_workload, st.integers(1, 3), st.integers(1, 3))
def test_invariants(specs: list[tuple[float, float, float, int]], na: int, nb: int) -> None:
    jobs = []
    for i, (a, b, t, dep) in enumerate(specs):
        after = (dep + 1,) if 0 <= dep < i else ()
        jobs.append(job(i + 1, {"A": a, "B": b}, submit=t, after=after))
    sites = [PlaceholderSite("A", na), PlaceholderSite("B", nb, start_at=(1.5,))]
    for cls in REGISTRY.values():
        sched, _ = simulate_claims(jobs, sites, cls())
        again, _ = simulate_claims(jobs, sites, cls())
        assert sched.start_time.tolist() == again.start_time.tolist()
        assert all(math.isfinite(x) for x in sched.start_time)
        for i, j in enumerate(jobs):
            assert sched.start_time[i] >= j.submit_time
            for a in j.attrs["after"]:
                assert sched.start_time[i] >= sched.end_time[a - 1]
        # never more running jobs at a site than its placeholders
        for s, cap in ((0, na), (1, nb)):
            spans = [(sched.start_time[i], sched.end_time[i]) for i in range(len(jobs)) if sched.site[i] == s]
            for t, _e in spans:
                assert sum(1 for (x, y) in spans if x <= t < y) <= cap


def test_ranking_policies_see_the_oldest_window_as_in_the_store() -> None:
    from metasched.policy.claim import RANKING_WINDOW_JOBS, EfficacyClaim

    seen: list[int] = []

    class Spy(EfficacyClaim):
        def select(self, ready, site, free, now, limit=1, world=None):  # type: ignore[no-untyped-def]
            seen.append(len(ready))
            assert max(j.job_id for j in ready) <= min(j.job_id for j in ready) + RANKING_WINDOW_JOBS
            return super().select(ready, site, free, now, limit, world)

    jobs = [job(i, {"A": 1.0}) for i in range(1, RANKING_WINDOW_JOBS + 40)]
    simulate_claims(jobs, [PlaceholderSite("A", 1)], Spy())
    assert seen[0] == RANKING_WINDOW_JOBS and max(seen) == RANKING_WINDOW_JOBS
