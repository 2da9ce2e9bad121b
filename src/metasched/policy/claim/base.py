"""The claim-policy contract: which ready metaqueue jobs a placeholder gets when it asks for work.

A placeholder running at a site asks the metaqueue for work, declaring what it has free. The
metaqueue gathers the *ready* jobs (queued, every dependency done) into a snapshot and lets a
:class:`ClaimPolicy` choose. The policy is pure (house rule zero): snapshot and ``now`` in, chosen
job ids out; the store does the locking and the bookkeeping. A later issue plugs the papers'
heterogeneity-aware policies in here; the trace simulator can drive the same objects.

Ready jobs are :class:`metasched.model.Job` records: ``requested_procs`` = cpus,
``requested_time`` = the wall-time estimate in seconds (0 = none given), ``submit_time`` = the
submission instant, and ``attrs`` holds ``mem_mb`` (int) and ``licences`` (``{name: count}``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from metasched.model.job import Job


@dataclass(frozen=True, slots=True)
class FreeResources:
    """What one placeholder (or a batch of slots) can take on now.

    ``remaining_s`` is the placeholder's remaining wall time (``None`` = unbounded);
    ``licences`` are the licences the site can still hand out (a licence the site does not list
    is not available there).
    """

    cpus: int
    mem_mb: int = 0
    remaining_s: float | None = None
    licences: Mapping[str, int] = field(default_factory=dict)


class ClaimPolicy(ABC):
    """Chooses the ready jobs handed to one placeholder.

    Invariant every implementation keeps: the chosen jobs fit together in ``free`` (sum of
    cpus <= ``free.cpus``; sum of memory <= ``free.mem_mb`` when that is > 0; each licence within
    ``free.licences``), no job whose estimate exceeds ``free.remaining_s`` is chosen, at most
    ``limit`` jobs are chosen, and every chosen id is in ``ready``.
    """

    key: ClassVar[str]

    @abstractmethod
    def select(self, ready: Sequence[Job], site: str, free: FreeResources, now: float, limit: int = 1) -> list[int]:
        """The ``job_id``s of ``ready`` to hand over, in the order they should start."""


def fits(job: Job, cpus: int, mem_mb: int, remaining_s: float | None, licences: Mapping[str, int]) -> bool:
    """Whether ``job`` fits in the given free resources (helper shared by claim policies)."""
    if job.requested_procs > cpus:
        return False
    need_mem = int(job.attrs.get("mem_mb", 0) or 0)
    if mem_mb > 0 and need_mem > mem_mb:
        return False
    if remaining_s is not None and job.requested_time > 0 and job.requested_time > remaining_s:
        return False
    need_lic: Mapping[str, int] = job.attrs.get("licences") or {}
    return all(licences.get(name, 0) >= count for name, count in need_lic.items())
