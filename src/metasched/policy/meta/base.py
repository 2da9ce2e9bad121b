"""The one meta-policy contract: which site(s) get a job. Every meta-scheduler of the package is a :class:`MetaPolicy`.

A meta-policy is pure, like every policy (:mod:`metasched.policy.base`): a question in, a decision out.
It has one abstract decision method, :meth:`MetaPolicy.place`, and a class attribute
:attr:`MetaPolicy.family` saying which driver asks it, hence the question it is handed:

=================  ====================================  ==========================  ============================
``family``         question (``place``'s argument)       decision (``place`` returns)  driver
=================  ====================================  ==========================  ============================
``reservations``   :class:`CopySites`: the job, every    the sites that get a copy   :mod:`metasched.sim.multisite`
                   site's load and the job's estimate    (1 to ``k`` distinct        (seed 000)
                   there (:class:`MetaSiteView`), now     indices)
``selector``       :class:`StartNow`: the job's width,   an :data:`Allocation`, or   :mod:`metasched.sim.grid`
                   each machine's free processors and    ``None``: it cannot start   (seed 001)
                   size                                  now
``two-level``      :class:`Dispatch`: the job's MS       the cluster (one of         :mod:`metasched.sim.two_level`
                   priority, every cluster's backlog,    ``eligible``)               (seed 004)
                   the eligible clusters, a generator
=================  ====================================  ==========================  ============================

The questions differ because the drivers genuinely know different things when they ask (seed 000's
sites queue copies with their own schedulers; seed 001's machines are filled from one central queue
*now*; seed 004's clusters are chosen from their backlogs by priority). Each family has a thin
adapter, a subclass of :class:`MetaPolicy` giving the family's optional hooks their defaults and the
drivers their call (:class:`~metasched.policy.meta.reservations_base.MetaScheduler`:
``select_sites`` and the start arbitration ``decide_start``; :class:`MachineSelector`: ``select``;
:class:`~metasched.policy.meta.two_level_base.TwoLevelDispatcher`: ``select_cluster`` and the
classification ``classify``). A new meta-policy subclasses the adapter of the driver that should run
it and implements ``place``; it is then registered once, in
:data:`metasched.policy.meta.registry.POLICIES` (``tests/policy/test_meta_registry.py`` fails for a
concrete meta-policy of ``policy/meta`` that is not), and ``metasched simulate --sites --policy
NAME`` runs it (through the Python driver; the compiled loops accelerate only the classes they name
and are pinned to them by differential tests).

Invariants every implementation keeps, whatever the family: the decision is a pure function of the
question (randomness only from a generator in the question), ties broken deterministically and
documented by the class, and the decision is one the driver can apply (valid distinct indices; an
allocation within the free processors).

Vocabulary of the selector family: an :data:`Allocation` is a tuple of ``(machine index,
processors)`` parts with distinct machines, each part positive, summing to the job's width. One part
means the job runs on one machine; several parts mean a co-allocated (multi-site) job whose parts
start and end together.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from metasched.model.job import Job

if TYPE_CHECKING:
    import numpy as np

    from metasched.policy.meta.reservations_base import MetaSiteView
    from metasched.policy.meta.two_level_base import ClusterBacklog

#: Which driver runs a meta-policy (and so which question it answers).
Family = Literal["reservations", "selector", "two-level"]
FAMILIES: tuple[str, ...] = ("reservations", "selector", "two-level")

#: ``((machine index, processors), ...)``: distinct machines, positive parts.
Allocation = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class CopySites:
    """``reservations``: ``job`` was submitted at ``now``; which sites get a copy of it?"""

    job: Job
    views: Sequence[MetaSiteView]
    now: float


@dataclass(frozen=True, slots=True)
class StartNow:
    """``selector``: may a job of ``procs`` processors start now, given ``free[m]`` processors usable
    now on machine ``m`` of ``sizes[m]``, and on which machine(s)?"""

    procs: int
    free: Sequence[int]
    sizes: Sequence[int]


@dataclass(frozen=True, slots=True)
class Dispatch:
    """``two-level``: which of the ``eligible`` clusters (non-empty) gets a job of MS ``priority``,
    given every cluster's queued backlog; ties may be drawn from ``rng`` only."""

    priority: int
    backlogs: Sequence[ClusterBacklog]
    eligible: Sequence[int]
    rng: np.random.Generator


Q = TypeVar("Q")
D = TypeVar("D")


class MetaPolicy(ABC, Generic[Q, D]):
    """A meta-scheduler: answers its driver's question "where does this job go?" (see the module docs).

    ``key`` names the class (the older registries' key); ``family`` the driver that asks it.
    """

    key: ClassVar[str]
    family: ClassVar[Family]

    @abstractmethod
    def place(self, question: Q) -> D:
        """The decision for ``question`` (its type and the decision's are fixed by :attr:`family`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MachineSelector(MetaPolicy[StartNow, "Allocation | None"]):
    """The ``selector`` family's adapter: on which machine(s) a job starts now, or ``None``.

    The first step of seed 001's grid scheduler ("In the first step the machine is selected and in
    the second step the allocation in time for this machine takes place", section 3.2). It sees only
    integers: the job's width and the processors each machine may give it *now*; never time, queues
    or other jobs. The driver (:mod:`metasched.sim.grid`) decides what "may give" means (free
    processors, minus what a backfilling reservation protects) and what happens to a job no machine
    can take now.

    Contract: a returned allocation's parts sum to ``procs``, use distinct machines, and take no
    more than ``free[m]`` on machine ``m`` (so no machine ever exceeds its size); ``None`` exactly
    when no allowed allocation exists. ``may_split`` is ``False`` for selectors that only ever place
    a job on one machine.
    """

    family: ClassVar[Family] = "selector"
    may_split: ClassVar[bool] = False

    def select(self, procs: int, free: Sequence[int], sizes: Sequence[int]) -> Allocation | None:
        """:meth:`place` for a job of ``procs`` processors (the driver's call)."""
        return self.place(StartNow(procs, free, sizes))

    def can_ever_run(self, procs: int, sizes: Sequence[int]) -> bool:
        """Whether a job of ``procs`` processors fits the grid at all (every machine idle)."""
        return self.select(procs, sizes, sizes) is not None


def is_meta_policy(obj: Any) -> bool:
    """Whether ``obj`` is a concrete meta-policy class (a registered policy must be)."""
    import inspect

    return isinstance(obj, type) and issubclass(obj, MetaPolicy) and not inspect.isabstract(obj)
