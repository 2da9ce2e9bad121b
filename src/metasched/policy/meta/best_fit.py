"""BestFit machine selection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metasched.policy.meta.base import Allocation, MachineSelector


class BestFit(MachineSelector):
    """The machine on which the job, started now, leaves the fewest free processors.

    Source: seed 001 section 3.2 (after Hamscher et al., 2000): "the machine is selected on which
    the job leaves the least number of free resources if started".

    Invariant: places the whole job on ONE machine with ``free[m] >= procs``; ``None`` when no
    machine has that many processors usable now (the driver then keeps the job in its central
    queue; see :mod:`metasched.sim.grid` for the reservation rule).
    Tie-break: among machines leaving equally few processors, the lowest machine index.
    """

    key: ClassVar[str] = "best-fit"

    def select(self, procs: int, free: Sequence[int], sizes: Sequence[int]) -> Allocation | None:
        best = -1
        best_left = 0
        for m, f in enumerate(free):
            left = f - procs
            if left >= 0 and (best < 0 or left < best_left):
                best, best_left = m, left
                if left == 0:
                    break
        return None if best < 0 else ((best, procs),)
