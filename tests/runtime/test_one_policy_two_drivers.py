"""One policy core, two drivers: the simulator and the server's claim path decide the same, claim by claim.

The placeholder-world simulator runs a workload under a claim policy and records every claim
(instant, site, placeholder, jobs chosen). The same workload is then played against a real store
(SQLite) in lockstep: the same submissions at the same instants, the same placeholders, each
recorded claim asked of ``Store.claim`` at its instant, each job completed when the simulator ended
it. The store builds its own snapshot (ready jobs from its tables, the world from its placeholders
and running jobs, estimates per (kind, site)) and must choose exactly what the simulator's policy
chose, for every policy of the registry.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from metasched.model.job import Job
from metasched.policy.claim import REGISTRY, FreeResources
from metasched.runtime.metaqueue.estimates import Estimates
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.sim.claimsim import PlaceholderSite, simulate_claims

SPEED = {("a", "A"): 10.0, ("a", "B"): 30.0, ("b", "A"): 20.0, ("b", "B"): 22.0, ("c", "A"): 3.0, ("c", "B"): 4.0}


class FixedEstimates(Estimates):
    """Exactly the table (the learned geometric mean would round ``exp(log(x))``)."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        super().__init__([(k, s, v) for (k, s), v in table.items()])
        self.fixed = table

    def estimate(self, kind: str, site: str) -> float | None:
        return self.fixed.get((kind, site))


def workload(seed: int, n: int) -> list[Job]:
    rng = random.Random(seed)
    # non-decreasing submissions, so a dependency (an earlier id) is always submitted first
    submits = sorted(float(rng.choice([0, 0, 0, 5, 12, 40])) for _ in range(n))
    jobs = []
    for i in range(1, n + 1):
        kind = rng.choice("abc")
        run = {s: SPEED[(kind, s)] for s in "AB"}
        after = [rng.randrange(1, i)] if i > 3 and rng.random() < 0.3 else []
        submit = submits[i - 1]
        jobs.append(Job(i, submit, 0.0, 0.0, 1, attrs={"run_s": run, "estimates": run, "after": after, "kind": kind}))
    return jobs


@pytest.mark.parametrize("key", sorted(REGISTRY))
@pytest.mark.parametrize("seed", [1, 2])
def test_simulator_and_store_choose_the_same(key: str, seed: int, tmp_path: Path) -> None:
    jobs = workload(seed, 40)
    sites = [PlaceholderSite("A", 2), PlaceholderSite("B", 2)]
    sched, claims = simulate_claims(jobs, sites, REGISTRY[key](), record=True)
    assert claims and any(c.chosen for c in claims)

    store = Store.open(
        f"sqlite:///{tmp_path / 'q.db'}", policy=REGISTRY[key](), lease_s=1e9, estimates=FixedEstimates(SPEED)
    )
    names = {j.job_id: f"{j.attrs['kind']}-{j.job_id}" for j in jobs}
    for s in sites:
        store.upsert_site(s.name, "local", {}, {}, now=0.0)
        for i in range(s.placeholders):
            store.add_placeholder(f"{s.name}-{i}", s.name, None, now=0.0)
            store.placeholder_started(f"{s.name}-{i}", s.name, "h", now=0.0)
    # the timeline: at each instant ends, then submissions, then the claims in the recorded order
    timeline: list[tuple[float, int, int, object]] = []
    for n, j in enumerate(jobs):
        timeline.append((j.submit_time, 1, n, j))
    for n, c in enumerate(claims):
        timeline.append((c.at, 2, n, c))
    ids: dict[int, int] = {}
    ph_of: dict[int, str] = {}
    index = {j.job_id: k for k, j in enumerate(jobs)}
    for k, j in enumerate(jobs):
        timeline.append((float(sched.end_time[k]), 0, k, j))
    timeline.sort(key=lambda e: (e[0], e[1], e[2]))
    back = {}
    for at, kind, _n, obj in timeline:
        if kind == 0:
            assert isinstance(obj, Job)
            k = index[obj.job_id]
            ok = store.complete(
                ids[obj.job_id], ph_of[obj.job_id], 1, 0, start_at=float(sched.start_time[k]), end_at=at, now=at
            )
            assert ok
        elif kind == 1:
            assert isinstance(obj, Job)
            # one submission per job: the store numbers a workflow's jobs in a dependency order,
            # and the policies break ties by job id, so ids must follow the simulator's
            spec = JobSpec("true", name=names[obj.job_id], after=[names[a] for a in obj.attrs["after"]])
            (ids[obj.job_id],) = store.submit([spec], now=at)
            assert ids[obj.job_id] == obj.job_id
        else:
            res = store.claim(obj.site, obj.placeholder, FreeResources(1), now=at)  # type: ignore[attr-defined]
            back = {v: k for k, v in ids.items()}
            got = tuple(back[j.job_id] for j in res.jobs)
            assert got == obj.chosen, (
                f"{key}: claim at t={at} by {obj.placeholder}: store {got}, simulator {obj.chosen}"
            )  # type: ignore[attr-defined]
            for j in got:
                ph_of[j] = obj.placeholder  # type: ignore[attr-defined]
    assert store.counts().get("done") == len(jobs)
    store.close()
