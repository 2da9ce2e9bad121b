"""Run-time estimates learned from the metaqueue's past runs, per (job kind, site).

A job's *kind* is its name without a trailing number (``sim-17`` -> ``sim``, ``render_003`` ->
``render``), or, for an unnamed job, the program of its command (``./bin/sim --n 3`` -> ``sim``):
jobs of one kind are assumed to take about the same time at one site.

The model is the rote learning of SmartNet (seed 002, section 2.2), learned by the mapping
issue's run-time estimator (:mod:`metasched.model.estimate`) without a formula: per (kind, site)
the geometric mean of the measured run times (run times are positive, their errors
multiplicative); a (kind, site) without runs borrows the kind's estimate at another site times the
two sites' median speed ratio over the runs of kinds both have run. ``error`` is the
leave-one-out mean relative error |estimate - actual| / actual.

Robust to outliers (a report may be wrong, or written by a hostile token holder): a run time that is
not finite, not positive or longer than :data:`MAX_RUN_S` is impossible and ignored; of the rest, a
(kind, site) learns only from runs within a factor :data:`OUTLIER_RATIO` of its runs' lower median.
Invariant: when a (kind, site)'s real runs lie within a factor ``OUTLIER_RATIO`` of each other and
outnumber the wrong ones, its estimate lies within the range of the real runs, however large or small
the wrong ones (one poisoned report cannot make a kind "never fit" a placeholder again).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from metasched.model.estimate import Run, RuntimeEstimator

_TRAILING_NUMBER = re.compile(r"[-_.]?\d+$")
#: Longest plausible run (s): a year. Longer is an impossible report (no batch system runs a job that long).
MAX_RUN_S = 366 * 86_400.0
#: A run more than this factor away from its (kind, site)'s lower median is an outlier, not learned from.
OUTLIER_RATIO = 100.0


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
    """Learned run times per (kind, site), from ``(kind, site, run_s)`` observations.

    The learning is the mapping issue's :class:`~metasched.model.estimate.RuntimeEstimator` (no
    formula, no parameters: the geometric mean, with cross-site borrowing); this class adds the
    metaqueue's vocabulary (kind, site), a cache, and the leave-one-out error of :meth:`table`.
    """

    def __init__(self, runs: Iterable[tuple[str, str, float]] = ()) -> None:
        self.learner = RuntimeEstimator()
        #: Every plausible run time (s) per (kind, site), outliers included; ``logs``: the logs of those learned.
        self.samples: dict[tuple[str, str], list[float]] = {}
        self.logs: dict[tuple[str, str], list[float]] = {}
        self._add(runs)

    def _add(self, runs: Iterable[tuple[str, str, float]]) -> None:
        touched: set[tuple[str, str]] = set()
        for kind, site, run_s in runs:
            if 0 < run_s <= MAX_RUN_S:  # (False for NaN)
                self.samples.setdefault((kind, site), []).append(float(run_s))
                touched.add((kind, site))
        for key in touched:
            learned = _inliers(self.samples[key])
            self.learner.runs[key] = [Run(key[0], key[1], {}, x) for x in learned]
            self.learner._fits.pop(key, None)
            self.logs[key] = [math.log(x) for x in learned]
        self.sites = sorted({s for _, s in self.logs})
        self._cache: dict[tuple[str, str], float | None] = {}

    def extended(self, runs: Iterable[tuple[str, str, float]]) -> Estimates:
        """These estimates with ``runs`` learned too, as a NEW object (this one is unchanged: snapshots
        built on it stay valid). Costs a copy of the lists (C speed) plus the new runs, not a re-learning
        of every run; same result as ``Estimates(old_runs + runs)``."""
        out = Estimates.__new__(Estimates)
        old = self.learner
        out.learner = RuntimeEstimator(
            ridge=old.ridge,
            formulas=dict(old.formulas),
            runs={k: list(v) for k, v in old.runs.items()},
            _fits=dict(old._fits),
        )
        out.samples = {k: list(v) for k, v in self.samples.items()}
        out.logs = {k: list(v) for k, v in self.logs.items()}
        out._add(runs)
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self.samples.values())

    def estimate(self, kind: str, site: str) -> float | None:
        """Expected run time (s) of ``kind`` at ``site``; ``None`` when nothing is known."""
        key = (kind, site)
        if key not in self._cache:
            try:
                self._cache[key] = self.learner.estimate(kind, site, {})
            except KeyError:
                self._cache[key] = None
        return self._cache[key]

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


def _inliers(samples: list[float]) -> list[float]:
    """The samples within a factor :data:`OUTLIER_RATIO` of their lower median (in their order).

    The lower median: of two samples the smaller decides, so a single huge report next to one real run
    is dropped (over-estimating a run keeps it off every placeholder; under-estimating costs one retry)."""
    ordered = sorted(samples)
    median = ordered[(len(ordered) - 1) // 2]
    return [x for x in samples if median / OUTLIER_RATIO <= x <= median * OUTLIER_RATIO]
