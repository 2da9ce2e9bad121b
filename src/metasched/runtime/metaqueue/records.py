"""Plain records of the metaqueue (no database imports: the placeholder agent loads only these)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


class StoreError(ValueError):
    """A request the metaqueue refuses (unknown job, unknown dependency, cycle, bad state...)."""


class NotFound(StoreError, LookupError):
    """A job that does not exist, or is not yours (the two are not told apart: HTTP 404 for both)."""


#: Dependency kinds, as ``sbatch --dependency``'s afterok, afterany and afternotok.
DEP_KINDS = ("ok", "any", "notok")


def dep_satisfied(kind: str, state: str) -> bool:
    """Whether a dependency of ``kind`` on a job in ``state`` lets the dependent run."""
    if kind == "any":
        return state in ("done", "failed", "cancelled", "dep_failed")
    if kind == "notok":
        return state in ("failed", "cancelled", "dep_failed")
    return state == "done"


def dep_violated(kind: str, state: str) -> bool:
    """Whether a dependency of ``kind`` on a job in ``state`` can never be met (the dependent never runs)."""
    if kind == "any":
        return False
    if kind == "notok":
        return state == "done"
    return state in ("failed", "cancelled", "dep_failed")


#: The owner of the jobs of the old single-token setup and of the embedded database (``--db``).
ADMIN = "admin"


@dataclass(slots=True)
class JobSpec:
    """A job as submitted. ``after`` names dependencies: names (of this batch or earlier jobs) or ids."""

    command: str
    name: str | None = None
    after: list[str] = field(default_factory=list)
    cpus: int = 1
    mem_mb: int = 0
    licences: dict[str, int] = field(default_factory=dict)
    time_s: float = 0.0
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)
    max_attempts: int = 3
    #: Wanted done within this many seconds of submission (``None``: no deadline).
    deadline_s: float | None = None
    #: gold, silver or regular (the two-level scheduler's user classes).
    user_class: str = "regular"
    #: Named numbers for the run-time formula of the job's kind (``metasched formula``), e.g. ``{"n": 1000}``.
    params: dict[str, float] = field(default_factory=dict)
    #: MPI ranks and nodes (a parallel job; ``cpus`` is then per task): ``tasks x cpus`` cpus over ``nodes`` nodes.
    tasks: int = 1
    nodes: int = 1
    #: The kind of some of the ``after`` references: ``any`` or ``notok`` (absent: ``ok``, as ``afterok``).
    after_kinds: dict[str, str] = field(default_factory=dict)

    @property
    def total_cpus(self) -> int:
        return self.tasks * self.cpus

    def validate(self) -> None:
        where = f"job {self.name!r}" if self.name else f"job {self.command!r}"
        if not self.command.strip():
            raise StoreError(f"{where}: empty command")
        if self.cpus < 1:
            raise StoreError(f"{where}: cpus must be >= 1, got {self.cpus}")
        if self.tasks < 1 or self.nodes < 1:
            raise StoreError(f"{where}: tasks and nodes must be >= 1, got tasks {self.tasks}, nodes {self.nodes}")
        if self.nodes > self.tasks:
            raise StoreError(f"{where}: {self.nodes} nodes for {self.tasks} task(s): at least one task per node")
        if self.mem_mb < 0 or self.time_s < 0:
            raise StoreError(f"{where}: mem and time must be >= 0")
        if self.max_attempts < 1:
            raise StoreError(f"{where}: max_attempts must be >= 1")
        if self.name is not None and (not self.name or self.name.isdigit()):
            raise StoreError(f"{where}: a job name must be non-empty and not all digits (digits mean job ids)")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise StoreError(f"{where}: deadline must be > 0 seconds after submission")
        if self.user_class not in ("gold", "silver", "regular"):
            raise StoreError(f"{where}: user class must be gold, silver or regular, got {self.user_class!r}")
        for key, value in self.params.items():
            if not key.isidentifier():
                raise StoreError(f"{where}: parameter name {key!r} must be an identifier (letters, digits, _)")
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise StoreError(f"{where}: parameter {key!r} must be a finite number, got {value!r}")
        for ref, kind in self.after_kinds.items():
            if kind not in DEP_KINDS or ref not in self.after:
                raise StoreError(f"{where}: bad dependency kind {kind!r} of {ref!r}: ok, any or notok")
        for lic, count in self.licences.items():
            if count < 1:
                raise StoreError(f"{where}: licence {lic!r} count must be >= 1")


@dataclass(slots=True)
class ClaimedJob:
    """What a placeholder gets: enough to run the job and to report on it."""

    job_id: int
    attempt: int
    name: str | None
    command: str
    cwd: str
    env: dict[str, str]
    cpus: int
    mem_mb: int
    time_s: float
    lease_until: float
    #: MPI ranks and nodes: a job with more than one of either is started through the site's launcher.
    tasks: int = 1
    nodes: int = 1

    @property
    def total_cpus(self) -> int:
        return self.tasks * self.cpus

    @property
    def is_parallel(self) -> bool:
        return self.tasks > 1 or self.nodes > 1

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class ClaimResult:
    """``action`` is ``"job"`` (``jobs`` non-empty), ``"wait"`` (work left, none ready for you) or ``"exit"``."""

    action: str
    jobs: list[ClaimedJob] = field(default_factory=list)
