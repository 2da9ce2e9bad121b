"""The policy contracts. Every policy is pure: a snapshot of the world and ``now`` in, decisions out.

A policy never reads a clock, a random generator it did not get from its caller, a database, a
file or a subprocess. The trace simulator (:mod:`metasched.sim`) and the live metaqueue
(:mod:`metasched.runtime`) drive the *same* policy objects; what is measured in simulation is what
runs on the clusters.

Families, each with one abstract decision method:

* :class:`QueueOrder` (``policy/priority``): ranks the queued jobs of one site (``rank``).
* :class:`LocalScheduler` (``policy/local``): which queued jobs start now at one site (``plan``).
* :class:`~metasched.policy.meta.base.MetaPolicy` (``policy/meta``): which site(s) get a job
  (``place``); one contract for every meta-scheduler, its ``family`` naming the driver that asks
  it (seed 000's copies, seed 001's machine selection, seed 004's two-level dispatch), one
  registry (:data:`metasched.policy.meta.registry.POLICIES`).
* mappers (``policy/mapping``) and live claim policies (``policy/claim``) define their bases in
  their packages.

Conventions for every concrete policy: one public class per file named as the literature names
it; a short ``key`` used by the CLI, config files and result files; keyword-only tunables with
defaults, no side effects in ``__init__``; a docstring giving the source, the invariant kept and
the tie-break rule; registered in its family's ``REGISTRY``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

from metasched.model.job import Job


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job running at a site: what the scheduler may know about it.

    ``expected_end`` is ``start_time`` + the job's estimate at that site; it may lie in the past
    when jobs may overrun their estimate, and schedulers then treat it as ending "now".
    """

    job: Job
    start_time: float
    procs: int
    expected_end: float


@dataclass(frozen=True, slots=True)
class SiteView:
    """Snapshot of one site handed to a :class:`LocalScheduler`.

    ``queue`` is in arrival order (the scheduler applies its own :class:`QueueOrder`); each queued
    job's ``requested_time`` is its estimate *at this site* and ``requested_procs`` its width.
    ``running`` may be in any order. ``free_procs`` = ``total_procs`` - processors held by
    ``running`` (a multi-site driver may hold some processors for other reasons, hence explicit).
    """

    total_procs: int
    free_procs: int
    running: Sequence[RunningJob]
    queue: Sequence[Job]
    name: str = ""
    #: Optional: the jobs of ``running`` sorted by ``(expected_end, job_id)``; drivers that keep
    #: them so save the schedulers a sort. ``None``: not given.
    running_by_end: Sequence[RunningJob] | None = None
    #: Optional: the :attr:`Plan.hint` of this scheduler's previous pass at this site, handed back
    #: under the conditions of :attr:`Plan.hint`; ``None`` otherwise. Never changes a decision.
    hint: Any = None
    #: Optional: ``queue`` again as arrays (:class:`QueueColumns`), kept up to date by a driver
    #: for schedulers with a compiled inner loop. Never changes a decision.
    columns: QueueColumns | None = None


@dataclass(slots=True)
class Plan:
    """A local scheduler's decision for one scheduling pass.

    ``starts``: jobs to start now, in the order the scheduler chose them.
    ``reservations``: for queued jobs that do not start now, the instant at which the scheduler
    has reserved processors for them (EASY: the blocked head only; conservative: every job).
    """

    starts: list[Job] = field(default_factory=list)
    reservations: Mapping[int, float] = field(default_factory=dict)
    #: Optional state a scheduler carries to its next pass at the same site, to decide faster.
    #: A driver may hand it back as :attr:`SiteView.hint` to the next pass only if, in between,
    #: (1) exactly this plan's ``starts`` were started, at this pass's ``now``, (2) nothing else
    #: was started or cancelled and no processors were taken or given back, (3) every job that
    #: ended ended exactly at its ``expected_end``, and no running job is past its expected end,
    #: (4) jobs were only submitted, appended to the queue in arrival order. The scheduler may
    #: consume (mutate) it. Contract: ``plan`` returns exactly the same decision with or without
    #: the hint, so a policy stays a pure function of the view (the hint only saves work).
    hint: Any = None


class QueueOrder(ABC):
    """Orders the queue of one site: the pluggable priority of every backfilling scheduler.

    ``rank`` returns a sortable key, smaller first. Ties must be broken deterministically; every
    order in this package ends its key with ``(submit_time, job_id)`` (FCFS).
    """

    key: ClassVar[str]
    #: True when ``rank`` is exactly arrival order, so drivers may skip sorting.
    is_arrival_order: ClassVar[bool] = False
    #: True when ``rank`` depends on the job alone (not on the view or ``now``) and a queued
    #: job's attributes do not change: the relative order of two queued jobs never changes.
    is_static: ClassVar[bool] = False

    @abstractmethod
    def rank(self, job: Job, view: SiteView, now: float) -> Any:
        """Sort key of ``job`` in ``view``'s queue at ``now``; smaller runs first."""

    def primary_key(self, job: Job) -> float | None:
        """For a static order whose ``rank`` is ``(primary, submit_time, job_id)``: ``primary``,
        a float, so that a stable sort of an arrival-ordered queue by it gives this order.
        ``None`` (the default): the rank has no such form."""
        return None

    def order(self, view: SiteView, now: float) -> list[Job]:
        """The queue of ``view`` in priority order."""
        if self.is_arrival_order:
            return list(view.queue)
        return sorted(view.queue, key=lambda job: self.rank(job, view, now))


class LocalScheduler(ABC):
    """Decides which queued jobs start now at one site (space sharing, no preemption).

    Invariant every implementation keeps: the processors of the jobs it starts never exceed
    ``view.free_procs``.
    """

    key: ClassVar[str]

    def __init__(self, *, order: QueueOrder | None = None) -> None:
        # Imported here so that base.py stays the root of the policy package.
        from metasched.policy.priority.fcfs import Fcfs

        self.order: QueueOrder = order if order is not None else Fcfs()

    @abstractmethod
    def plan(self, view: SiteView, now: float) -> Plan:
        """Jobs of ``view.queue`` to start at ``now`` (and reservations for the others)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(order={self.order.key!r})"


P = TypeVar("P")


def build_registry(*classes: type[P]) -> dict[str, type[P]]:
    """``{cls.key: cls}``, refusing duplicate keys."""
    registry: dict[str, type[P]] = {}
    for cls in classes:
        key: str = cls.key  # type: ignore[attr-defined]
        if key in registry:
            raise ValueError(f"duplicate policy key {key!r}: {registry[key].__name__} and {cls.__name__}")
        registry[key] = cls
    return registry


def lookup(registry: dict[str, type[P]], key: str, family: str) -> type[P]:
    """The class registered under ``key``, or a ``KeyError`` listing the known keys."""
    try:
        return registry[key]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise KeyError(f"unknown {family} {key!r}; known: {known}") from None


# ------------------------------------------------------------------------------- queue columns


class QueueColumns:
    """A site's queue as arrays, kept by a driver for schedulers with a compiled inner loop.

    Slot ``k < n`` holds ``jobs[k]`` with its width ``procs[k]``, estimate ``durations[k]`` and the
    ``primary`` part of its rank under the queue order whose key is ``order_key``
    (:meth:`QueueOrder.primary_key`; 0 when that order has none); ``alive[k]`` says whether it is
    still queued. Slots are in arrival order, which must be ``(submit_time, job_id)`` order: a
    stable sort of the live slots by ``primary`` is then the queue order. ``slot_of`` maps the
    job id of every live slot to its slot.

    Removal only clears ``alive`` (a slot is never reused in place); once the dead slots
    outnumber the live ones the columns are compacted into *new* arrays, list and dict, so that
    whatever a plan kept of them stays valid.
    """

    __slots__ = (
        "alive",
        "durations",
        "jobs",
        "max_procs",
        "n",
        "order",
        "order_key",
        "ordered",
        "primary",
        "procs",
        "slot_of",
    )

    def __init__(self, order: QueueOrder, capacity: int = 64) -> None:
        self.order = order
        self.order_key = order.key
        #: Whether :meth:`live_slots` gives ``order``'s order (arrival order, or a static order
        #: with a primary key).
        self.ordered = order.is_arrival_order or (
            order.is_static and type(order).primary_key is not QueueOrder.primary_key
        )
        self.jobs: list[Job] = []
        self.slot_of: dict[int, int] = {}
        self.procs = np.zeros(capacity, dtype=np.int64)
        self.durations = np.zeros(capacity, dtype=np.float64)
        self.primary = np.zeros(capacity, dtype=np.float64)
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.n = 0
        #: At least the widest job ever queued here (not lowered by removals).
        self.max_procs = 0

    def __len__(self) -> int:
        return len(self.slot_of)

    def append(self, job: Job) -> None:
        """Queue ``job`` (it must arrive after every job queued so far)."""
        if job.job_id in self.slot_of:
            raise ValueError(f"job {job.job_id} is already queued")
        k = self.n
        if k == len(self.procs):
            self._resize(max(64, 2 * k))
        self.procs[k] = job.requested_procs
        if job.requested_procs > self.max_procs:
            self.max_procs = job.requested_procs
        self.durations[k] = job.requested_time
        key = self.order.primary_key(job)
        self.primary[k] = 0.0 if key is None else key
        self.alive[k] = True
        self.jobs.append(job)
        self.slot_of[job.job_id] = k
        self.n = k + 1

    def remove(self, job_id: int) -> None:
        """Take ``job_id`` out of the queue."""
        k = self.slot_of.pop(job_id)
        self.alive[k] = False
        # Slots are never reused in place (a plan may still answer for the old one).
        if self.n > 64 and 2 * len(self.slot_of) < self.n:
            self._compact()

    def live_slots(self) -> np.ndarray:
        """The live slots in arrival order, stably sorted by ``primary`` unless the order is
        arrival order: the queue order when :attr:`ordered`."""
        slots = np.flatnonzero(self.alive[: self.n])
        if self.order.is_arrival_order:
            return slots
        return slots[np.argsort(self.primary[slots], kind="stable")]

    def _resize(self, capacity: int) -> None:
        for name in ("procs", "durations", "primary", "alive"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        capacity = max(64, 2 * len(keep))
        for name in ("procs", "durations", "primary", "alive"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: len(keep)] = old[keep]
            setattr(self, name, new)
        self.jobs = [self.jobs[k] for k in keep.tolist()]
        self.slot_of = {job.job_id: k for k, job in enumerate(self.jobs)}
        self.n = len(keep)
