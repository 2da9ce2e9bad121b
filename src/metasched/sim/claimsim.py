"""The placeholder world, simulated: placeholders at several sites pull ready jobs through a claim policy.

The second driver of :mod:`metasched.policy.claim` (the first is the live store's ``claim``): the
same policy objects get the same snapshot, ready jobs plus a
:class:`~metasched.policy.claim.ClaimWorld` of every other placeholder, and decide. Used to
predict what a policy does to a metaqueue workload (``metasched replay``, ``metasched demo``).

Model: site ``s`` runs ``placeholders`` placeholders of ``cpus`` processors each, the i-th
starting at ``start_at[i]`` (its batch-queue wait; default 0) and living until the end. Jobs
(``Job``) carry ``attrs["after"]`` (job ids that must be done first), ``attrs["run_s"]``
(``{site: real run time there}``, else ``run_time``) and ``attrs["estimates"]`` (``{site:
expected run time}``, what policies see). A job runs on one placeholder, alone (a placeholder
takes one job at a time, as ``metasched placeholder`` with ``limit = 1``).

Licences: a job's ``attrs["licences"]`` (``{name: count}``) are held from its start to its end. A
site offers its own ``licences``; ``licences=`` of :func:`simulate_claims` are the global limits,
copies active at once across all sites. The asker's free copies are
:func:`~metasched.model.licence.free_copies` of both, as in the store's claim (same rule, same
counts: jobs running at the asker's site and anywhere).

Semantics, as :mod:`metasched.sim.engine`: events ordered by ``(time, kind, seq)``; at each
instant job ends are applied (dependents become ready), then submissions, then placeholder starts,
then ONE claim pass: each idle placeholder asks once, in order of ``(idle since, site, index)``,
and gets what the policy chooses (or nothing: it waits for the next event). The world an asker
sees: per site, idle placeholders, busy ones with ``start + estimate`` of their job, and
placeholders not started yet with their start instant; the asker itself is left out.

Invariants (tested): a job starts only after its submission and after every dependency ended;
the copies of a licence held at a site never exceed the site's cap, nor those held anywhere the global cap;
a placeholder never runs two jobs at once; every job runs exactly once when every job fits some
placeholder; same input, same output.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from metasched.model.job import Job
from metasched.model.licence import free_copies
from metasched.policy.claim import RANKING_WINDOW_JOBS, ClaimPolicy, ClaimWorld, FreeResources, SiteSlots, estimate_at
from metasched.sim.schedule import Schedule

_END, _SUBMIT, _START = 0, 1, 2


@dataclass(frozen=True, slots=True)
class PlaceholderSite:
    """A site of the placeholder world: ``placeholders`` of ``cpus`` each, started at ``start_at``."""

    name: str
    placeholders: int
    cpus: int = 1
    start_at: tuple[float, ...] = ()
    licences: dict[str, int] = field(default_factory=dict)

    def start_of(self, i: int) -> float:
        return self.start_at[i] if i < len(self.start_at) else 0.0


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of the simulation: who asked, when, and what it got (empty: nothing)."""

    at: float
    site: str
    placeholder: str
    chosen: tuple[int, ...]


@dataclass
class _Ph:
    pid: str
    site: str
    cpus: int
    start_at: float
    started: bool = False
    idle_since: float = 0.0
    job: Job | None = None
    busy_until: float = 0.0


def run_time_at(job: Job, site: str) -> float:
    """Real run time of ``job`` at ``site``: ``attrs["run_s"][site]``, else ``run_time``."""
    table = job.attrs.get("run_s")
    if table and table.get(site) is not None:
        return float(table[site])
    return float(job.run_time)


def simulate_claims(
    jobs: Sequence[Job],
    sites: Sequence[PlaceholderSite],
    policy: ClaimPolicy,
    *,
    record: bool = False,
    licences: Mapping[str, int] | None = None,
) -> tuple[Schedule, list[Claim]]:
    """Run ``jobs`` on the placeholders of ``sites`` under ``policy``; the schedule and (if ``record``) the claims.

    ``licences``: the global limits (``{name: copies}`` active at once across all sites).
    """
    global_caps = dict(licences or {})
    if not sites:
        raise ValueError("no sites to simulate")
    names = [s.name for s in sites]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate site names: {names}")
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate job ids")
    index = {j.job_id: i for i, j in enumerate(jobs)}
    site_index = {n: i for i, n in enumerate(names)}
    for j in jobs:
        unknown = [a for a in j.attrs.get("after", ()) if a not in index]
        if unknown:
            raise ValueError(f"job {j.job_id}: unknown dependencies {unknown}")
    if not any(j.requested_procs <= max(s.cpus for s in sites) for j in jobs) and jobs:
        raise ValueError("no job fits any placeholder")
    for j in jobs:
        for name, count in (j.attrs.get("licences") or {}).items():
            offered = [free_copies(s.licences, global_caps, {}, {}).get(name, 0) for s in sites]
            if max(offered) < count:
                raise ValueError(f"job {j.job_id}: needs {count} x licence {name!r}, no site can ever offer that")
    pending = {j.job_id: len(set(j.attrs.get("after", ()))) for j in jobs}
    children: dict[int, list[int]] = {}
    for j in jobs:
        for a in set(j.attrs.get("after", ())):
            children.setdefault(a, []).append(j.job_id)
    events: list[tuple[float, int, int, object]] = []
    seq = 0

    def push(t: float, kind: int, payload: object) -> None:
        nonlocal seq
        heapq.heappush(events, (t, kind, seq, payload))
        seq += 1

    for j in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)):
        push(j.submit_time, _SUBMIT, j.job_id)
    phs: list[_Ph] = []
    for s in sites:
        for i in range(s.placeholders):
            ph = _Ph(f"{s.name}-{i}", s.name, s.cpus, s.start_of(i))
            phs.append(ph)
            push(s.start_of(i), _START, ph)
    submitted: set[int] = set()
    ready: dict[int, Job] = {}
    sched = Schedule.empty(list(jobs), sum(s.placeholders * s.cpus for s in sites), names)
    claims: list[Claim] = []
    want_world = policy.needs_world
    site_of = {s.name: s for s in sites}
    use_here: dict[str, dict[str, int]] = {n: {} for n in names}
    use_all: dict[str, int] = {}

    def hold(job: Job, site: str, sign: int) -> None:
        for name, count in (job.attrs.get("licences") or {}).items():
            use_here[site][name] = use_here[site].get(name, 0) + sign * count
            use_all[name] = use_all.get(name, 0) + sign * count

    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, payload = heapq.heappop(events)
            if kind == _END:
                ph = payload  # type: ignore[assignment]
                assert isinstance(ph, _Ph) and ph.job is not None
                done = ph.job.job_id
                hold(ph.job, ph.site, -1)
                ph.job, ph.idle_since = None, now
                for c in children.get(done, ()):
                    pending[c] -= 1
                    if pending[c] == 0 and c in submitted:
                        ready[c] = jobs[index[c]]
            elif kind == _SUBMIT:
                jid = payload
                assert isinstance(jid, int)
                submitted.add(jid)
                if pending[jid] == 0:
                    ready[jid] = jobs[index[jid]]
            else:
                ph = payload  # type: ignore[assignment]
                assert isinstance(ph, _Ph)
                ph.started, ph.idle_since = True, now
        askers = sorted((p for p in phs if p.started and p.job is None), key=lambda p: (p.idle_since, p.site, p.pid))
        for ph in askers:
            if not ready:
                break
            world = _world(phs, ph, names, now) if want_world else None
            shown = list(ready.values())
            if not policy.prefix_stable and len(shown) > RANKING_WINDOW_JOBS:
                # as the store: a ranking policy sees the oldest ready jobs (by id) only
                shown = sorted(shown, key=lambda j: j.job_id)[:RANKING_WINDOW_JOBS]
            lic = free_copies(site_of[ph.site].licences, global_caps, use_here[ph.site], use_all)
            chosen = policy.select(shown, ph.site, FreeResources(ph.cpus, licences=lic), now, 1, world)
            if record:
                claims.append(Claim(now, ph.site, ph.pid, tuple(chosen)))
            if not chosen:
                continue
            job = ready.pop(chosen[0])
            run = run_time_at(job, ph.site)
            i = index[job.job_id]
            sched.start_time[i], sched.end_time[i] = now, now + run
            sched.site[i], sched.run_time[i] = site_index[ph.site], run
            ph.job, ph.busy_until = job, now + estimate_at(job, ph.site)
            hold(job, ph.site, +1)
            push(now + run, _END, ph)
    return sched, claims


def _world(phs: Sequence[_Ph], asker: _Ph, names: Sequence[str], now: float) -> ClaimWorld:
    idle = dict.fromkeys(names, 0)
    busy: dict[str, list[float]] = {n: [] for n in names}
    queued: dict[str, list[float]] = {n: [] for n in names}
    for p in phs:
        if p is asker:
            continue
        if not p.started:
            queued[p.site].append(p.start_at)
        elif p.job is None:
            idle[p.site] += 1
        else:
            busy[p.site].append(p.busy_until)
    return ClaimWorld({n: SiteSlots(n, idle[n], tuple(sorted(busy[n])), tuple(sorted(queued[n]))) for n in names})


def makespan_and_turnaround(schedule: Schedule) -> tuple[float, float]:
    """``(last end - first submit, mean end - submit)`` of a complete schedule."""
    submit = schedule.submit_time
    return float(np.max(schedule.end_time) - np.min(submit)), float(np.mean(schedule.end_time - submit))
