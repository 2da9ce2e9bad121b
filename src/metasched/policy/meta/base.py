"""Machine selection: on which machine(s) of a grid a job starts now.

A :class:`MachineSelector` is the first step of seed 001's grid scheduler ("In the first step the
machine is selected and in the second step the allocation in time for this machine takes place",
section 3.2). It sees only integers: the job's width and the processors each machine may give it
*now*; it never sees time, queues or other jobs. The driver (:mod:`metasched.sim.grid`) decides
what "may give" means (free processors, minus what a backfilling reservation protects) and what
happens to a job no machine can take now.

Vocabulary: an :data:`Allocation` is a tuple of ``(machine index, processors)`` parts with
distinct machines, each part positive, summing to the job's width. One part means the job runs on
one machine; several parts mean a co-allocated (multi-site) job whose parts start and end together.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

#: ``((machine index, processors), ...)``: distinct machines, positive parts.
Allocation = tuple[tuple[int, int], ...]


class MachineSelector(ABC):
    """Chooses the machine(s) a job of ``procs`` processors starts on now, or ``None``.

    Contract every implementation keeps: a returned allocation's parts sum to ``procs``, use
    distinct machines, and take no more than ``free[m]`` on machine ``m`` (so no machine ever
    exceeds its size); ``None`` exactly when no allowed allocation exists. The result is a pure
    function of the arguments (deterministic tie-breaks, documented by each class).

    ``may_split`` is ``False`` for selectors that only ever place a job on one machine.
    """

    key: ClassVar[str]
    may_split: ClassVar[bool] = False

    @abstractmethod
    def select(self, procs: int, free: Sequence[int], sizes: Sequence[int]) -> Allocation | None:
        """Allocation for a job of ``procs`` processors given ``free[m]`` usable now on machine ``m``
        of ``sizes[m]`` processors, or ``None`` when it cannot start now."""

    def can_ever_run(self, procs: int, sizes: Sequence[int]) -> bool:
        """Whether a job of ``procs`` processors fits the grid at all (every machine idle)."""
        return self.select(procs, sizes, sizes) is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
