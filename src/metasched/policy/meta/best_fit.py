"""BestFit machine selection."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.meta.base import Allocation, MachineSelector, StartNow


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

    def place(self, question: StartNow) -> Allocation | None:
        procs, free = question.procs, question.free
        if not free or procs > max(free):
            return None
        # Fewest left over = smallest free count that still fits; ``index`` gives its lowest index.
        fit = min(f for f in free if f >= procs)
        return ((free.index(fit), procs),)
