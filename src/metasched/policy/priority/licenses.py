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
        n = len(queue.licence_mask)
        n_lic = len(queue.licence_total)
        if n == 0 or n_lic == 0:
            return np.zeros(n, dtype=float)
        out = np.zeros(n, dtype=float)
        rows = np.flatnonzero(queue.licence_mask)
        if rows.size == 0:
            return out
        total = queue.licence_total.astype(float)
        requests = queue.licence_requests.astype(float)
        rho = np.where(total > 0, requests / np.where(total > 0, total, 1.0), requests)
        critical = (rho > 1.0) | (total == 0)
        uses = ((queue.licence_mask[rows, None] >> np.arange(n_lic, dtype=np.int64)) & 1).astype(bool)
        d = max(int(uses[:, ~critical].any(axis=0).sum()), 1)
        weights = np.where(critical, d * rho, rho)
        out[rows] = self.weight * (uses @ weights)
        return out
