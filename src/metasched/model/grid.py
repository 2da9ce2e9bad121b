"""A grid of clusters of heterogeneous machines (seed 004, Pasquali et al. 2010, section 3).

A *machine* is one SMP node: a benchmark score (its computing power), a number of CPUs and the set
of licence types it can run. A *cluster* is the machines of one site plus its licence pool. A job
runs on ONE machine (space sharing: jobs share a machine's CPUs, never span machines).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metasched.model.licence import Licence


@dataclass(frozen=True, slots=True)
class Machine:
    """One machine: ``cpus`` processors, power ``benchmark`` (> 0), licence types it can run."""

    name: str
    cpus: int
    benchmark: float
    licences: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if self.cpus <= 0:
            raise ValueError(f"machine {self.name!r}: cpus must be positive, got {self.cpus}")
        if not self.benchmark > 0:
            raise ValueError(f"machine {self.name!r}: benchmark must be positive, got {self.benchmark}")

    @property
    def licence_mask(self) -> int:
        """The licence set as a bit mask (bit ``l`` set when licence ``l`` can run here)."""
        mask = 0
        for lic in self.licences:
            mask |= 1 << lic
        return mask


@dataclass(frozen=True, slots=True)
class Cluster:
    """The machines of one site and its licence pool (``licences[l]`` = licence type ``l``).

    ``power_order``: machine indices by decreasing benchmark, ties by index; the order in which
    the local scheduler looks for "the first eligible machine with the highest computing power".
    """

    name: str
    machines: tuple[Machine, ...]
    licences: tuple[Licence, ...] = ()
    power_order: tuple[int, ...] = field(init=False)
    licence_masks: tuple[int, ...] = field(init=False)
    licence_copies: tuple[int, ...] = field(init=False)
    machine_cpus: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        if not self.machines:
            raise ValueError(f"cluster {self.name!r} has no machine")
        n_lic = len(self.licences)
        for m in self.machines:
            bad = [lic for lic in m.licences if not 0 <= lic < n_lic]
            if bad:
                raise ValueError(f"cluster {self.name!r}: machine {m.name!r} runs unknown licence(s) {bad}")
        order = tuple(sorted(range(len(self.machines)), key=lambda i: (-self.machines[i].benchmark, i)))
        object.__setattr__(self, "power_order", order)
        object.__setattr__(self, "licence_masks", tuple(m.licence_mask for m in self.machines))
        object.__setattr__(self, "licence_copies", tuple(lic.copies for lic in self.licences))
        object.__setattr__(self, "machine_cpus", tuple(m.cpus for m in self.machines))

    @property
    def cpus(self) -> int:
        return sum(m.cpus for m in self.machines)

    @property
    def best_benchmark(self) -> float:
        """Benchmark of the most powerful machine (the LS Deadline heuristic's optimistic guess)."""
        return self.machines[self.power_order[0]].benchmark

    @property
    def power(self) -> float:
        """Sum over machines of CPUs x benchmark."""
        return sum(m.cpus * m.benchmark for m in self.machines)

    def can_host(self, cpus: int, licence_mask: int) -> bool:
        """True when some machine has ``cpus`` CPUs and runs every licence of ``licence_mask``,
        and the pool holds at least one copy of each of those licences."""
        for lic in mask_bits(licence_mask):
            if lic >= len(self.licences) or self.licences[lic].copies < 1:
                return False
        return any(m.cpus >= cpus and m.licence_mask & licence_mask == licence_mask for m in self.machines)


def mask_bits(mask: int) -> list[int]:
    """Indices of the bits set in ``mask``, lowest first (licence masks -> licence indices)."""
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out
