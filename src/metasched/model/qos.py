"""What a job of seed 004 carries beyond SWF: deadline, licences, user class, estimate's benchmark.

Stored in ``job.attrs["qos"]`` as a :class:`JobQos`. ``job.requested_time`` is the estimate made
on a machine of benchmark ``JobQos.benchmark``; ``job.run_time`` is the true run time on that
machine. On a machine of benchmark ``b`` both scale by ``JobQos.benchmark / b``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from metasched.model.job import Job

QOS_KEY = "qos"


class UserClass(IntEnum):
    """Seed 004's user classes, in decreasing priority."""

    GOLD = 0
    SILVER = 1
    REGULAR = 2


@dataclass(frozen=True, slots=True)
class JobQos:
    """``deadline`` (an instant, ``None`` = no deadline), ``licences`` (bit mask of licence types),
    ``user_class`` and ``benchmark`` (power of the machine the estimate was made on, > 0)."""

    deadline: float | None
    licence_mask: int
    user_class: UserClass
    benchmark: float

    def __post_init__(self) -> None:
        if not self.benchmark > 0:
            raise ValueError(f"benchmark of the estimating machine must be positive, got {self.benchmark}")
        if self.licence_mask < 0:
            raise ValueError(f"licence mask must be >= 0, got {self.licence_mask}")

    @property
    def n_licences(self) -> int:
        return self.licence_mask.bit_count()

    @property
    def licences(self) -> tuple[int, ...]:
        mask, i, out = self.licence_mask, 0, []
        while mask:
            if mask & 1:
                out.append(i)
            mask >>= 1
            i += 1
        return tuple(out)


def qos_of(job: Job) -> JobQos:
    """The job's :class:`JobQos`, or a ``KeyError`` naming the job."""
    try:
        qos: JobQos = job.attrs[QOS_KEY]
    except KeyError:
        raise KeyError(f"job {job.job_id} has no attrs[{QOS_KEY!r}] (deadline/licences/user class)") from None
    return qos


def margin(job: Job) -> float | None:
    """Latest start minus submission: ``deadline - estimate - submit_time`` (None without deadline)."""
    qos = qos_of(job)
    if qos.deadline is None:
        return None
    return qos.deadline - job.requested_time - job.submit_time


def scaled_time(duration: float, job_benchmark: float, machine_benchmark: float) -> float:
    """A duration measured on a machine of ``job_benchmark`` power, on one of ``machine_benchmark``."""
    return duration * job_benchmark / machine_benchmark
