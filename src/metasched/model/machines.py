"""Machine configurations of a grid: how many processors each site's machine has.

Source: seed 001 (Ernemann et al., "On Advantages of Grid Computing for Parallel Job Scheduling",
2002), Table 1. Every configuration has 512 processors in total; they differ in how the
processors are partitioned into machines (one machine per site).

Pure data: no behaviour beyond parsing and validation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MachineConfig:
    """A named list of machine sizes, one machine per site, in site order.

    Invariant: at least one machine, every size positive.
    """

    key: str
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.sizes:
            raise ValueError(f"machine configuration {self.key!r} has no machines")
        bad = [s for s in self.sizes if s <= 0]
        if bad:
            raise ValueError(f"machine configuration {self.key!r}: sizes must be positive, got {bad}")

    @property
    def total_procs(self) -> int:
        return sum(self.sizes)

    @property
    def max_size(self) -> int:
        return max(self.sizes)

    @property
    def n_sites(self) -> int:
        return len(self.sizes)

    def describe(self) -> str:
        """``"4x64 + 6x32 + 8x8"``: the sizes as Table 1 writes them (runs of equal sizes)."""
        runs: list[tuple[int, int]] = []
        for size in self.sizes:
            if runs and runs[-1][1] == size:
                runs[-1] = (runs[-1][0] + 1, size)
            else:
                runs.append((1, size))
        return " + ".join(f"{count}x{size}" for count, size in runs)


def _expand(*runs: tuple[int, int]) -> tuple[int, ...]:
    return tuple(size for count, size in runs for _ in range(count))


#: Seed 001, Table 1 (site order: larger machines first, as the table lists them).
CONFIGS: dict[str, MachineConfig] = {
    "m64": MachineConfig("m64", _expand((4, 64), (6, 32), (8, 8))),
    "m128": MachineConfig("m128", _expand((4, 128))),
    "m256": MachineConfig("m256", _expand((2, 256))),
    "m384": MachineConfig("m384", _expand((1, 384), (1, 64), (4, 16))),
    "m512": MachineConfig("m512", _expand((1, 512))),
}

_TERM = re.compile(r"^\s*(?:(\d+)\s*[x*]\s*)?(\d+)\s*$")


def parse_machines(spec: str) -> MachineConfig:
    """A configuration from a name of :data:`CONFIGS` or a user list of machine sizes.

    Lists are comma- or plus-separated terms, each ``SIZE`` or ``COUNTxSIZE``:
    ``"128,128,256"``, ``"4x64+6x32+8x8"``. The key of a user list is the spec without blanks.
    """
    name = spec.strip()
    if name in CONFIGS:
        return CONFIGS[name]
    terms = [t for t in re.split(r"[,+]", name) if t.strip()]
    if not terms:
        raise ValueError(f"empty machine configuration {spec!r}; give a name ({', '.join(CONFIGS)}) or sizes")
    sizes: list[int] = []
    for term in terms:
        match = _TERM.match(term)
        if match is None:
            raise ValueError(
                f"bad machine term {term.strip()!r} in {spec!r}: expected SIZE or COUNTxSIZE, "
                f"or a configuration name ({', '.join(CONFIGS)})"
            )
        count = int(match.group(1)) if match.group(1) is not None else 1
        if count <= 0:
            raise ValueError(f"bad machine term {term.strip()!r} in {spec!r}: count must be positive")
        sizes.extend([int(match.group(2))] * count)
    return MachineConfig("".join(name.split()), tuple(sizes))
