"""The outcome of a simulation: when and where each job ran."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metasched.model.job import Job


@dataclass
class Schedule:
    """Per-job results, aligned with ``jobs`` (arrays of the same length).

    ``start_time``/``end_time`` are instants; ``site`` is the index of the site that ran the job
    (0 for single-site runs); ``procs`` the processors it held (its width there), ``run_time``
    the time it really ran there. ``total_procs`` is the processors of all sites together.
    """

    jobs: list[Job]
    start_time: np.ndarray
    end_time: np.ndarray
    site: np.ndarray
    procs: np.ndarray
    run_time: np.ndarray
    total_procs: int
    site_names: list[str] = field(default_factory=lambda: ["site0"])
    meta: dict[str, object] = field(default_factory=dict)

    @classmethod
    def empty(cls, jobs: list[Job], total_procs: int, site_names: list[str] | None = None) -> Schedule:
        n = len(jobs)
        return cls(
            jobs=jobs,
            start_time=np.full(n, np.nan),
            end_time=np.full(n, np.nan),
            site=np.full(n, -1, dtype=np.int64),
            procs=np.array([j.requested_procs for j in jobs], dtype=np.int64),
            run_time=np.array([j.run_time for j in jobs], dtype=float),
            total_procs=total_procs,
            site_names=site_names or ["site0"],
        )

    @property
    def submit_time(self) -> np.ndarray:
        return np.array([j.submit_time for j in self.jobs], dtype=float)

    @property
    def is_complete(self) -> bool:
        return bool(np.all(np.isfinite(self.start_time)))
