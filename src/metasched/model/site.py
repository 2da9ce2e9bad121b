"""A site: one cluster (machine) and its batch system, as the schedulers see it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Site:
    """A homogeneous machine of ``procs`` processors.

    ``speed`` maps an application class to the run time of that class here relative to the
    reference machine (1.0 = as fast as the reference; 2.0 = twice as slow). Classes that are not
    listed run at ``default_speed``.
    """

    name: str
    procs: int
    speed: dict[int, float] = field(default_factory=dict)
    default_speed: float = 1.0

    def __post_init__(self) -> None:
        if self.procs <= 0:
            raise ValueError(f"site {self.name!r}: procs must be positive, got {self.procs}")

    def time_factor(self, app_class: int) -> float:
        """Run time here / run time on the reference machine, for ``app_class``."""
        return self.speed.get(app_class, self.default_speed)
