"""The Local Scheduler's Licences heuristic of seed 004."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.policy.meta.two_level_base import LsHeuristic, LsQueue


class LsLicences(LsHeuristic):
    """Favour jobs holding critical licences: ``W_L (sum_noncrit rho_l + d sum_crit rho_l)``.

    Source: seed 004 section 4, "Licenses" of the Local Scheduler. ``rho_l = requests_l /
    total_l``; licence ``l`` is critical when ``rho_l > 1``; ``d = max(|U_j noncritical(j)|, 1)``,
    the number of distinct non-critical licences requested by the queued jobs (at least 1), so one
    critical licence outweighs all non-critical ones. ``requests_l`` counts the cluster's queued
    and running jobs requesting ``l`` (the paper: "how many jobs are requesting the license");
    a licence with 0 copies has ``rho = inf`` and is treated as critical with ``rho = requests``.

    Invariant: 0 for jobs without licences; >= 0. Tie-break: none needed.
    """

    key: ClassVar[str] = "ls-licences"

    def __init__(self, *, weight: float = 1.0) -> None:
        if weight < 0:
            raise ValueError(f"licences weight must be >= 0, got {weight}")
        self.weight = weight

    def deltas(self, queue: LsQueue) -> np.ndarray:
        n = len(queue.submit)
        if n == 0 or len(queue.licence_total) == 0 or not queue.licence_queued.any():
            return np.zeros(n, dtype=float)
        total = queue.licence_total.astype(float)
        requests = queue.licence_requests.astype(float)
        rho = np.where(total > 0, requests / np.where(total > 0, total, 1.0), requests)
        critical = (rho > 1.0) | (total == 0)
        d = max(int(((queue.licence_queued > 0) & ~critical).sum()), 1)
        weights = np.where(critical, d * rho, rho)
        return self.weight * (queue.uses @ weights)
