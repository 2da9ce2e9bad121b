"""Run-time estimates learned from the metaqueue's past runs, per (job kind, site).

A job's *kind* is its name without a trailing number (``sim-17`` -> ``sim``, ``render_003`` ->
``render``), or, for an unnamed job, the program of its command (``./bin/sim --n 3`` -> ``sim``):
jobs of one kind are assumed to take about the same time at one site.

The model is the rote learning of SmartNet (seed 002, section 2.2) as the mapping issue's run-time
estimator states it without a formula: per (kind, site) the geometric mean of the measured run
times (run times are positive, their errors multiplicative); a (kind, site) without runs borrows
the kind's estimate at another site times the two sites' median speed ratio over the kinds both
have run. ``error`` is the leave-one-out mean relative error |estimate - actual| / actual.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

_TRAILING_NUMBER = re.compile(r"[-_.]?\d+$")


def job_kind(name: str | None, command: str) -> str:
    """The kind of a job (see the module docstring); never empty."""
    if name:
        kind = _TRAILING_NUMBER.sub("", name)
        return kind or name
    words = command.split()
    return PurePath(words[0]).name if words else "?"


@dataclass(frozen=True, slots=True)
class KindSite:
    """What is known of one (kind, site): runs, the estimate (s) and its leave-one-out error (None: < 2 runs)."""

    kind: str
    site: str
    runs: int
    estimate_s: float
    error: float | None
    borrowed: bool = False


class Estimates:
    """Learned run times per (kind, site), from ``(kind, site, run_s)`` observations."""

    def __init__(self, runs: Iterable[tuple[str, str, float]] = ()) -> None:
        self.logs: dict[tuple[str, str], list[float]] = {}
        for kind, site, run_s in runs:
            if run_s > 0 and math.isfinite(run_s):
                self.logs.setdefault((kind, site), []).append(math.log(run_s))
        self._mean = {k: sum(v) / len(v) for k, v in self.logs.items()}
        self.sites = sorted({s for _, s in self.logs})
        self._cache: dict[tuple[str, str], float | None] = {}

    def __len__(self) -> int:
        return sum(len(v) for v in self.logs.values())

    def _ratio(self, a: str, b: str) -> float | None:
        """Median over kinds run at both sites of (time at ``a``) / (time at ``b``)."""
        logs = [self._mean[(k, a)] - self._mean[(k, s)] for (k, s) in self._mean if s == b and (k, a) in self._mean]
        return math.exp(statistics.median(logs)) if logs else None

    def estimate(self, kind: str, site: str) -> float | None:
        """Expected run time (s) of ``kind`` at ``site``; ``None`` when nothing is known."""
        key = (kind, site)
        if key in self._cache:
            return self._cache[key]
        out: float | None
        if key in self._mean:
            out = math.exp(self._mean[key])
        else:
            borrowed = []
            for other in self.sites:
                if other != site and (kind, other) in self._mean:
                    ratio = self._ratio(site, other)
                    if ratio is not None:
                        borrowed.append(math.log(ratio) + self._mean[(kind, other)])
            out = math.exp(sum(borrowed) / len(borrowed)) if borrowed else None
        self._cache[key] = out
        return out

    def table(self, sites: Sequence[str] = ()) -> list[KindSite]:
        """Every (kind, site) with runs, plus those of ``sites`` that can borrow; with their error."""
        rows = []
        kinds = sorted({k for k, _ in self.logs})
        for kind in kinds:
            for site in sorted({*self.sites, *sites}):
                logs = self.logs.get((kind, site), [])
                est = self.estimate(kind, site)
                if est is None:
                    continue
                err = None
                if len(logs) >= 2:
                    total = sum(logs)
                    errs = [abs(math.exp((total - x) / (len(logs) - 1)) - math.exp(x)) / math.exp(x) for x in logs]
                    err = sum(errs) / len(errs)
                rows.append(KindSite(kind, site, len(logs), est, err, borrowed=not logs))
        return rows
