"""Replay of a job stream through a two-level scheduler (seed 004): MS dispatch, LS per cluster.

Semantics (those of :mod:`metasched.sim.engine`): at each instant, release every job ending then
(CPUs and licence copies), then dispatch every job submitted then (in ``(submit_time, job_id)``
order; the MS classifies it, picks a cluster among those able to host it, and the job joins that
cluster's queue), then run ONE scheduling pass of the local scheduler of every cluster that saw
an end or an arrival (in cluster order). A pass is skipped when no machine of the cluster has as
many free CPUs as the narrowest queued job: no job could start, so the result is the same.

A job runs on one machine for ``run_time * benchmark_job / benchmark_machine``; the schedulers see
``requested_time`` scaled the same way. The three cases of section 5 are in :data:`CASES`.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from metasched.model.grid import Cluster
from metasched.model.job import Job
from metasched.model.qos import margin, qos_of
from metasched.policy.local.flexible import FlexibleBackfill
from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.meta.two_level_base import (
    MS_PRIORITY_KEY,
    ClusterBacklog,
    ClusterView,
    MachineScheduler,
    MarginWindow,
    MsContext,
    QueueColumns,
    RunningOnMachine,
    TwoLevelDispatcher,
    job_load,
)
from metasched.policy.priority.arrival import ArrivalOrder
from metasched.policy.priority.ms_priority import MsPriorityOrder
from metasched.policy.priority.weighted import WeightedHeuristics


@dataclass(frozen=True, slots=True)
class Case:
    """One configuration of the two-level scheduler."""

    name: str
    make_dispatcher: Callable[[], TwoLevelDispatcher]
    make_local: Callable[[], MachineScheduler]


#: The three cases of seed 004 section 5.
CASES: dict[str, Case] = {
    "ms": Case("ms", LoadOrdering, lambda: FlexibleBackfill(order=MsPriorityOrder())),
    "ls": Case("ls", LoadOrdering, lambda: FlexibleBackfill(order=WeightedHeuristics())),
    "none": Case("none", lambda: LoadOrdering(heuristics=()), lambda: FlexibleBackfill(order=ArrivalOrder())),
}


@dataclass(slots=True)
class TwoLevelResult:
    """Per job (aligned with ``jobs``, sorted by ``(submit_time, job_id)``): cluster, machine,
    start and end; per cluster: time integrals of CPU and licence usage; scheduler timings."""

    jobs: list[Job]
    clusters: list[Cluster]
    cluster: np.ndarray
    machine: np.ndarray
    priority: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cpu_usage_integral: np.ndarray
    cpu_demand_time: np.ndarray
    lic_usage_integral: np.ndarray
    lic_demand_time: np.ndarray
    ms_seconds: float = 0.0
    ms_decisions: int = 0
    ls_seconds: float = 0.0
    ls_passes: int = 0
    ls_starts: int = 0
    max_active_licences: np.ndarray = field(default_factory=lambda: np.zeros(0))


class _ClusterState:
    __slots__ = (
        "active_cpus",
        "active_lics",
        "backlog",
        "cluster",
        "cpu_counts",
        "free",
        "lic_copies",
        "lic_free",
        "queue",
        "queued_cpus",
        "queued_lics",
        "running",
        "running_on",
    )

    def __init__(self, cluster: Cluster, n_priorities: int) -> None:
        self.cluster = cluster
        self.free = [m.cpus for m in cluster.machines]
        self.lic_free = [lic.copies for lic in cluster.licences]
        self.lic_copies = [lic.copies for lic in cluster.licences]
        self.running: dict[int, RunningOnMachine] = {}
        self.running_on: list[dict[int, RunningOnMachine]] = [{} for _ in cluster.machines]
        self.queue = QueueColumns(len(cluster.licences), 256)
        self.backlog = ClusterBacklog(n_priorities)
        self.cpu_counts: dict[int, int] = {}
        self.queued_cpus = 0
        self.queued_lics = 0
        self.active_cpus = 0
        self.active_lics = 0


def simulate_two_level(
    jobs: Sequence[Job],
    clusters: Sequence[Cluster],
    dispatcher: TwoLevelDispatcher,
    local: MachineScheduler | Sequence[MachineScheduler],
    *,
    seed: int = 0,
    window: int = 100,
) -> TwoLevelResult:
    """Run ``jobs`` through ``dispatcher`` and one local scheduler per cluster (or a shared one).

    ``seed`` seeds the dispatcher's tie-breaking generator; ``window`` is the MS margin window N.
    Raises ``ValueError`` for a job no cluster can host, or duplicate ``job_id``s.
    """
    clusters = list(clusters)
    locals_ = [local] * len(clusters) if isinstance(local, MachineScheduler) else list(local)
    if len(locals_) != len(clusters):
        raise ValueError(f"{len(locals_)} local schedulers for {len(clusters)} clusters")
    order = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    if len({j.job_id for j in order}) != len(order):
        raise ValueError("job_id values must be unique within a workload")
    n = len(order)
    index_of = {j.job_id: i for i, j in enumerate(order)}
    n_lic_types = max((len(c.licences) for c in clusters), default=0)
    rng = np.random.default_rng(seed)
    states = [_ClusterState(c, dispatcher.n_priorities) for c in clusters]
    n_c = len(clusters)
    windows = MarginWindow(window)
    total_cpus = [c.cpus for c in clusters]
    total_lics = [sum(lic.copies for lic in c.licences) for c in clusters]
    benches = [[m.benchmark for m in c.machines] for c in clusters]
    # Per job (by index) and per cluster, in plain lists: numpy element access in this loop cost
    # more than the arithmetic (the arrays of the result are built once, at the end).
    qos = [qos_of(j) for j in order]
    job_machine = [-1] * n
    job_start = [math.nan] * n
    job_end = [math.nan] * n
    job_cluster = [-1] * n
    job_priority = [0] * n
    cpu_int, cpu_dem, lic_int, lic_dem = [0.0] * n_c, [0.0] * n_c, [0.0] * n_c, [0.0] * n_c
    max_active = [[0] * n_lic_types for _ in range(n_c)]
    lic_bits: dict[int, tuple[int, ...]] = {}
    ends: list[tuple[float, int, int]] = []  # (end, index, cluster)
    perf = time.perf_counter
    hosts: dict[tuple[int, int], list[int]] = {}
    widest: list[dict[int, int]] = []
    pooled = [sum(1 << i for i, lic in enumerate(cl.licences) if lic.copies >= 1) for cl in clusters]
    for cl in clusters:
        w: dict[int, int] = {}
        for mach in cl.machines:
            w[mach.licence_mask] = max(w.get(mach.licence_mask, 0), mach.cpus)
        widest.append(w)
    nxt = 0
    inf = float("inf")
    t_prev = order[0].submit_time if n else 0.0
    ms_seconds = ls_seconds = 0.0
    ms_decisions = ls_passes = ls_starts = 0
    while nxt < n or ends:
        t_submit = order[nxt].submit_time if nxt < n else inf
        t_end = ends[0][0] if ends else inf
        now = t_submit if t_submit < t_end else t_end
        dt = now - t_prev
        if dt > 0:
            # The usage integrals (paper: active / min(available, requested), requested = running
            # + queued demand; instants without demand are skipped), summed in cluster order.
            for c, st in enumerate(states):
                active = st.active_cpus
                requested = active + st.queued_cpus
                if requested > 0:
                    cpu_int[c] += dt * active / min(total_cpus[c], requested)
                    cpu_dem[c] += dt
                lic_active = st.active_lics
                lic_requested = lic_active + st.queued_lics
                if lic_requested > 0 and total_lics[c] > 0:
                    lic_int[c] += dt * lic_active / min(total_lics[c], lic_requested)
                    lic_dem[c] += dt
        t_prev = now
        touched: set[int] = set()
        while ends and ends[0][0] == now:
            _, i, c = heapq.heappop(ends)
            st = states[c]
            r = st.running.pop(order[i].job_id)
            del st.running_on[r.machine][r.job.job_id]
            st.free[r.machine] += r.cpus
            st.active_cpus -= r.cpus
            st.active_lics -= r.licence_mask.bit_count()
            mask, lic = r.licence_mask, 0
            while mask:
                if mask & 1:
                    st.lic_free[lic] += 1
                mask >>= 1
                lic += 1
            touched.add(c)
        while nxt < n and order[nxt].submit_time == now:
            job = order[nxt]
            q = qos[nxt]
            t0 = perf()
            ctx = MsContext(mean_margin=windows.mean, n_licence_types=n_lic_types)
            prio = dispatcher.classify(job, ctx)
            shape = (job.requested_procs, q.licence_mask)
            eligible = hosts.get(shape)
            if eligible is None:
                need, jm = shape
                # Cluster.can_host: a copy of each licence in the pool, and a machine (the widest of
                # those of one licence mask) with the CPUs and the licences.
                eligible = hosts[shape] = [
                    c
                    for c in range(n_c)
                    if jm & pooled[c] == jm and any(w >= need and mm & jm == jm for mm, w in widest[c].items())
                ]
            if not eligible:
                raise ValueError(
                    f"job {job.job_id} ({job.requested_procs} CPUs, licences {q.licences}) fits no cluster"
                )
            c = dispatcher.select_cluster(prio, [s.backlog for s in states], eligible, rng)
            ms_seconds += perf() - t0
            ms_decisions += 1
            m_j = margin(job)
            if m_j is not None:
                windows.add(m_j)
            job.attrs[MS_PRIORITY_KEY] = prio
            st = states[c]
            st.queue.append(job)
            st.backlog.add(prio, job_load(job))
            st.cpu_counts[job.requested_procs] = st.cpu_counts.get(job.requested_procs, 0) + 1
            st.queued_cpus += job.requested_procs
            st.queued_lics += q.n_licences
            job_cluster[nxt] = c
            job_priority[nxt] = prio
            touched.add(c)
            nxt += 1
        for c in sorted(touched):
            st = states[c]
            if not len(st.queue) or max(st.free) < min(st.cpu_counts):
                continue
            view = ClusterView(
                cluster=st.cluster,
                free_cpus=st.free,
                licence_free=st.lic_free,
                running=st.running.values(),
                queue=st.queue,
                running_on=st.running_on,
            )
            t0 = perf()
            plan = locals_[c].plan(view, now)
            ls_seconds += perf() - t0
            ls_passes += 1
            bench = benches[c]
            masks = st.cluster.licence_masks
            copies = st.lic_copies
            peak = max_active[c]
            for job, m in plan.starts:
                i = index_of[job.job_id]
                q = qos[i]
                need = job.requested_procs
                jm = q.licence_mask
                if st.free[m] < need:
                    raise RuntimeError(
                        f"cluster {c}: machine {m} has {st.free[m]} CPUs free, job {job.job_id} needs {need}"
                    )
                if masks[m] & jm != jm:
                    raise RuntimeError(f"cluster {c}: machine {m} cannot run the licences of job {job.job_id}")
                st.queue.remove(job.job_id)
                st.free[m] -= need
                st.active_cpus += need
                lics = lic_bits.get(jm)
                if lics is None:
                    lics = lic_bits[jm] = q.licences
                st.active_lics += len(lics)
                for lic in lics:
                    st.lic_free[lic] -= 1
                    if st.lic_free[lic] < 0:
                        raise RuntimeError(f"cluster {c}: licence {lic} over-committed by job {job.job_id}")
                    active = copies[lic] - st.lic_free[lic]
                    if active > peak[lic]:
                        peak[lic] = active
                prio = job.attrs[MS_PRIORITY_KEY]
                st.backlog.remove(prio, job_load(job))
                cnt = st.cpu_counts[need] - 1
                if cnt:
                    st.cpu_counts[need] = cnt
                else:
                    del st.cpu_counts[need]
                st.queued_cpus -= need
                st.queued_lics -= len(lics)
                factor = q.benchmark / bench[m]
                st.running[job.job_id] = st.running_on[m][job.job_id] = RunningOnMachine(
                    job=job,
                    machine=m,
                    cpus=need,
                    licence_mask=jm,
                    start_time=now,
                    expected_end=now + job.requested_time * factor,
                )
                end = now + job.run_time * factor
                job_machine[i] = m
                job_start[i] = now
                job_end[i] = end
                ls_starts += 1
                heapq.heappush(ends, (end, i, c))
        if nxt >= n and not ends and any(len(s.queue) for s in states):
            stuck = sorted(int(j) for s in states for j in s.queue.job_id)[:5]
            raise RuntimeError(f"jobs {stuck} can never start (no running job left to free resources)")
    return TwoLevelResult(
        jobs=order,
        clusters=clusters,
        cluster=np.array(job_cluster, dtype=np.int64),
        machine=np.array(job_machine, dtype=np.int64),
        priority=np.array(job_priority, dtype=np.int64),
        start=np.array(job_start, dtype=float),
        end=np.array(job_end, dtype=float),
        cpu_usage_integral=np.array(cpu_int, dtype=float),
        cpu_demand_time=np.array(cpu_dem, dtype=float),
        lic_usage_integral=np.array(lic_int, dtype=float),
        lic_demand_time=np.array(lic_dem, dtype=float),
        ms_seconds=ms_seconds,
        ms_decisions=ms_decisions,
        ls_seconds=ls_seconds,
        ls_passes=ls_passes,
        ls_starts=ls_starts,
        max_active_licences=np.array(max_active, dtype=np.int64).reshape(n_c, n_lic_types),
    )


def run_case(
    case: str | Case, jobs: Sequence[Job], clusters: Sequence[Cluster], *, seed: int = 0, window: int = 100
) -> TwoLevelResult:
    """Simulate one of :data:`CASES` (fresh policy objects; jobs are copied, not mutated)."""
    cfg = CASES[case] if isinstance(case, str) else case
    copies = [j.copy() for j in jobs]
    return simulate_two_level(copies, clusters, cfg.make_dispatcher(), cfg.make_local(), seed=seed, window=window)
