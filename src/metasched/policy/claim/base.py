"""The claim-policy contract: which ready metaqueue jobs a placeholder gets when it asks for work.

A placeholder running at a site asks the metaqueue for work, declaring what it has free. The
metaqueue gathers the *ready* jobs (queued, every dependency done) into a snapshot and lets a
:class:`ClaimPolicy` choose. The policy is pure (house rule zero): snapshot and ``now`` in, chosen
job ids out; the store does the locking and the bookkeeping. A later issue plugs the papers'
heterogeneity-aware policies in here; the trace simulator can drive the same objects.

Ready jobs are :class:`metasched.model.Job` records: ``requested_procs`` = cpus,
``requested_time`` = the wall-time estimate in seconds (0 = none given), ``submit_time`` = the
submission instant, and ``attrs`` holds ``mem_mb`` (int) and ``licences`` (``{name: count}``),
and, when the driver knows them, ``estimates`` (``{site: expected run time there, s}``) and ``kind``.

Policies that look beyond the asking placeholder (``needs_world = True``) also get a
:class:`ClaimWorld`: every site's placeholders, running (idle now, or busy until an expected
instant) and queued (expected to start at an instant). The simulator (:mod:`metasched.sim.claimsim`)
and the store build the same world from their own state, so one policy decides the same in both.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from metasched.model.job import Job

#: How many of the oldest ready jobs (by ``job_id``) a ranking policy sees, in both drivers.
RANKING_WINDOW_JOBS = 256


@dataclass(frozen=True, slots=True)
class FreeResources:
    """What one placeholder (or a batch of slots) can take on now.

    ``remaining_s`` is the placeholder's remaining wall time (``None`` = unbounded);
    ``licences`` are the licences the site can still hand out (a licence the site does not list
    is not available there). ``nodes``: the placeholder's nodes free for one job (a placeholder of
    several nodes is one job's allocation, so 0 while it runs one); ``node_cpus``: cpus per node
    (``None``: no per-node bound beyond ``cpus``). See :func:`fits_shape`.
    """

    cpus: int
    mem_mb: int = 0
    remaining_s: float | None = None
    licences: Mapping[str, int] = field(default_factory=dict)
    nodes: int = 1
    node_cpus: int | None = None


@dataclass(frozen=True, slots=True)
class SiteSlots:
    """One site's placeholders as a claim policy sees them (the asking placeholder excluded).

    ``idle``: running placeholders with nothing to run now; ``busy_until``: for each busy running
    placeholder, the instant it is expected to be free (its jobs' start + estimate);
    ``queued_start``: for each placeholder still in the batch queue, the instant it is expected
    to start. A site with none of these has no placeholder: it cannot take work soon.
    """

    name: str
    idle: int = 0
    busy_until: tuple[float, ...] = ()
    queued_start: tuple[float, ...] = ()

    def free_times(self, now: float) -> list[float]:
        """Instants (>= ``now``) at which each placeholder of this site can take a job."""
        return [now] * self.idle + [max(now, t) for t in self.busy_until] + [max(now, t) for t in self.queued_start]


@dataclass(frozen=True, slots=True)
class ClaimWorld:
    """Every site's placeholders at the instant of a claim (``sites`` by name)."""

    sites: Mapping[str, SiteSlots] = field(default_factory=dict)


def estimate_at(job: Job, site: str) -> float:
    """Expected run time of ``job`` at ``site``: ``attrs["estimates"][site]``, else the user's estimate.

    ``0.0`` when nothing is known (policies then treat the sites alike for this job).
    """
    est = job.attrs.get("estimates")
    if est:
        value = est.get(site)
        if value is not None:
            return float(value)
    return float(job.requested_time)


def estimates_at(jobs: Sequence[Job], sites: Sequence[str]) -> list[tuple[float, ...]]:
    """``estimate_at(job, s)`` for each of ``sites``, per job (one tuple per job, in order).

    Jobs sharing one ``attrs["estimates"]`` table and ``requested_time`` (the store hands every
    job of a kind the same table) are computed once: same values as :func:`estimate_at`.
    """
    memo: dict[tuple[int, float], tuple[float, ...]] = {}
    out = []
    for job in jobs:
        table = job.attrs.get("estimates")
        key = (id(table), job.requested_time)
        row = memo.get(key)
        if row is None:
            row = memo[key] = tuple(estimate_at(job, s) for s in sites)
        out.append(row)
    return out


class ClaimPolicy(ABC):
    """Chooses the ready jobs handed to one placeholder.

    Invariant every implementation keeps: the chosen jobs fit together in ``free`` (sum of
    cpus <= ``free.cpus``; each job's shape fits, :func:`fits_shape`; sum of memory <=
    ``free.mem_mb`` when that is > 0; each licence within
    ``free.licences``), no job whose estimate exceeds ``free.remaining_s`` is chosen, at most
    ``limit`` jobs are chosen, and every chosen id is in ``ready``.
    """

    key: ClassVar[str]
    #: True when :meth:`select` reads ``world`` (drivers may skip building it otherwise).
    needs_world: ClassVar[bool] = False
    #: True when the choice among the oldest ready jobs (by ``job_id``) is the choice among all of
    #: them whenever it finds ``limit`` jobs there: drivers may then show the oldest few first.
    #: Otherwise drivers show the :data:`RANKING_WINDOW_JOBS` oldest ready jobs, no more, no fewer.
    prefix_stable: ClassVar[bool] = False

    @abstractmethod
    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        """The ``job_id``s of ``ready`` to hand over, in the order they should start.

        ``world`` (the other placeholders) is given when ``needs_world``; ``None`` means unknown.
        """


def mem_budget(free: FreeResources) -> int | None:
    """The memory a claim may still hand out: ``None`` when unlimited (``free.mem_mb == 0``)."""
    return free.mem_mb if free.mem_mb > 0 else None


def fits_shape(job: Job, nodes: int = 1, node_cpus: int | None = None) -> bool:
    """Whether a parallel job's shape fits a placeholder with ``nodes`` free nodes of ``node_cpus`` cpus each.

    A job's shape is in ``attrs`` (the store puts it there for parallel jobs only): ``nodes`` (K,
    default 1), ``tasks`` (T, default 1) and ``cpus_per_task`` (C, default ``requested_procs``); its
    ``requested_procs`` is T x C. Invariant: a job is never handed to a placeholder with fewer than K
    free nodes, nor one whose nodes are too small for the busiest of its K nodes: the launcher spreads
    the T tasks evenly, so one node holds ceil(T / K) tasks of C cpus. ``node_cpus`` ``None``: no
    per-node bound (a one-node placeholder, whose ``cpus`` bound is the same thing).
    """
    want_nodes = int(job.attrs.get("nodes", 1))
    if want_nodes > nodes:
        return False
    if node_cpus is None:
        return True
    tasks = int(job.attrs.get("tasks", 1))
    per_task = int(job.attrs.get("cpus_per_task", job.requested_procs))
    return -(-tasks // want_nodes) * per_task <= node_cpus


def fits(
    job: Job,
    cpus: int,
    mem_mb: int | None,
    remaining_s: float | None,
    licences: Mapping[str, int],
    *,
    nodes: int = 1,
    node_cpus: int | None = None,
) -> bool:
    """Whether ``job`` fits in the given free resources (helper shared by claim policies).

    ``mem_mb`` is the memory still available, ``None`` for no limit (see :func:`mem_budget`): a
    budget used up to 0 admits only jobs that need no memory. ``nodes``/``node_cpus``: the
    placeholder's shape (:func:`fits_shape`).
    """
    if job.requested_procs > cpus:
        return False
    # (the common case, a sequential job on a one-node placeholder, skips the shape check: it always fits)
    if (node_cpus is not None or nodes < 1 or "nodes" in job.attrs) and not fits_shape(job, nodes, node_cpus):
        return False
    need_mem = int(job.attrs.get("mem_mb", 0) or 0)
    if mem_mb is not None and need_mem > mem_mb:
        return False
    if remaining_s is not None and job.requested_time > 0 and job.requested_time > remaining_s:
        return False
    need_lic: Mapping[str, int] = job.attrs.get("licences") or {}
    return all(licences.get(name, 0) >= count for name, count in need_lic.items())


# ---------------------------------------------------------------- planning helper (not a policy)
# The placeholders of every site as instants at which each can take a job, shared by the planning
# claims (completion-time, min-min). The asking placeholder holds ``min(limit, free.cpus)`` *asker
# slots*, free at ``now``; every other placeholder of the world holds one slot, free at its instant.

#: Heap entries: (free at, 0 for an asker slot / 1 otherwise, sequence number).
_Slot = tuple[float, int, int]


class SlotBoard:
    """Per site, a heap of slots by ``(free at, asker first, sequence)``; the asker's free resources."""

    def __init__(self, world: ClaimWorld | None, site: str, free: FreeResources, now: float, limit: int) -> None:
        self.site = site
        self.now = now
        self.heaps: dict[str, list[_Slot]] = {}
        seq = 0
        for name, slots in sorted((world.sites if world is not None else {}).items()):
            heap = [(t, 1, seq + i) for i, t in enumerate(slots.free_times(now))]
            seq += len(heap)
            heapq.heapify(heap)
            self.heaps[name] = heap
        mine = self.heaps.setdefault(site, [])
        for i in range(max(1, min(limit, free.cpus))):
            heapq.heappush(mine, (now, 0, seq + i))
        self.cpus = free.cpus
        self.nodes, self.node_cpus = free.nodes, free.node_cpus
        self.mem_mb = mem_budget(free)
        self.remaining_s = free.remaining_s
        self.licences = dict(free.licences)
        self.limit = limit
        self.chosen: list[int] = []

    def asker_open(self) -> bool:
        """Whether the asker can still take a job now (a slot, cpus, and the limit left)."""
        heap = self.heaps[self.site]
        return bool(heap) and heap[0][1] == 0 and self.cpus > 0 and len(self.chosen) < self.limit

    def fits_asker(self, job: Job) -> bool:
        nodes, node_cpus = self.nodes, self.node_cpus
        return fits(job, self.cpus, self.mem_mb, self.remaining_s, self.licences, nodes=nodes, node_cpus=node_cpus)

    def earliest(self, site: str) -> tuple[float, bool] | None:
        """``(instant, is the asker)`` of the site's first free slot, or ``None`` (no placeholder)."""
        heap = self.heaps.get(site)
        if not heap:
            return None
        at, tag, _ = heap[0]
        return max(at, self.now), tag == 0

    def assign(self, job: Job, site: str, run_s: float) -> bool:
        """Put ``job`` on ``site``'s first free slot for ``run_s``; True when the asker got it."""
        heap = self.heaps[site]
        at, tag, seq = heapq.heappop(heap)
        start = max(at, self.now)
        heapq.heappush(heap, (start + run_s, 1, seq))
        if tag != 0:
            return False
        self.chosen.append(job.job_id)
        self.cpus -= job.requested_procs
        if self.mem_mb is not None:
            self.mem_mb -= int(job.attrs.get("mem_mb", 0) or 0)
        for name, count in (job.attrs.get("licences") or {}).items():
            self.licences[name] -= count
        return True
