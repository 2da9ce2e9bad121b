"""Play a simulated run of the placeholder world into a real store, claim by claim (shared by tests).

At each instant: the jobs the simulator ended are completed, then the jobs submitted then are
submitted (one by one, so the store's ids follow the simulator's), then each recorded claim is
asked of ``Store.claim``; the store must choose what the simulator chose.
"""

from __future__ import annotations

from collections.abc import Mapping

from metasched.model.job import Job
from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.estimates import Estimates
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.sim.claimsim import Claim, PlaceholderSite
from metasched.sim.schedule import Schedule


class FixedEstimates(Estimates):
    """Exactly the table (the learned geometric mean would round ``exp(log(x))``)."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        super().__init__([(k, s, v) for (k, s), v in table.items()])
        self.fixed = table

    def estimate(self, kind: str, site: str) -> float | None:
        return self.fixed.get((kind, site))


def play(
    store: Store,
    jobs: list[Job],
    sites: list[PlaceholderSite],
    sched: Schedule,
    claims: list[Claim],
    licences: Mapping[str, int] | None = None,
) -> None:
    """Replay ``claims`` of a simulation into ``store`` (placeholders all started at 0); asserts each decision.

    ``licences``: the global licence limits the simulation had; each site's own are its ``licences``.
    """
    key = type(store.policy).__name__
    names = {j.job_id: f"{j.attrs['kind']}-{j.job_id}" for j in jobs}
    for name, copies in (licences or {}).items():
        store.set_licence(name, copies, now=0.0)
    for s in sites:
        store.upsert_site(s.name, "local", {}, s.licences, now=0.0)
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
            spec = JobSpec(
                "true",
                name=names[obj.job_id],
                after=[names[a] for a in obj.attrs["after"]],
                licences=dict(obj.attrs.get("licences") or {}),
            )
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
