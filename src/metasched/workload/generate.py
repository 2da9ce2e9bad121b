"""Seeded workload generators that need no data.

Determinism: every generator draws only ``random.Random(seed).random()`` and turns the uniform
numbers into its distributions itself (inverse CDFs). The standard library guarantees that
``random()`` gives the same sequence for the same seed across Python versions, which it does not
promise for ``randint``, ``choice``, ``expovariate`` and friends, nor NumPy across versions. So the same
arguments give identical jobs across Python versions (tested, with a pinned regression value); across
platforms too, up to the last bit of the C library's ``exp``/``log``, which rounding times to whole
seconds absorbs in practice.

All times are whole seconds (as in the archive's traces); job ids are 1..n in submit order; the
first job is submitted at 0 (resampled jobs keep the source's times, which may be fractional); every
job has ``1 <= requested_procs <= procs`` and ``0 <= run_time <= requested_time``, ``requested_time > 0``.
"""

from __future__ import annotations

import itertools
import math
import random
from bisect import bisect_left
from collections.abc import Sequence

from metasched.model import Job

__all__ = ["CTC_PROCS", "ctc_like", "synthetic"]


def _exp(u: float, mean: float) -> float:
    """Inverse CDF of the exponential distribution (``u`` in [0, 1))."""
    return -mean * math.log1p(-u)


def _log_uniform(u: float, lo: float, hi: float) -> float:
    return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))


def _bucket_width(rng: random.Random, procs: int, weights: Sequence[float], pow2: Sequence[float]) -> int:
    """A width in the power-of-two bucket ``[2^k, 2^(k+1))`` clipped to ``procs``: ``k`` is drawn with
    ``weights``; the width is ``2^k`` with probability ``pow2[k]``, else uniform over the rest of the
    bucket."""
    u = rng.random() * sum(weights)
    k = 0
    acc = weights[0]
    while u >= acc and k + 1 < len(weights):
        k += 1
        acc += weights[k]
    lo = 1 << k
    if lo >= procs:
        return procs
    hi = min((1 << (k + 1)) - 1, procs)
    if rng.random() < pow2[k] or hi == lo:
        return lo
    return lo + 1 + min(int(rng.random() * (hi - lo)), hi - lo - 1)


def synthetic(
    n_jobs: int,
    procs: int,
    *,
    seed: int,
    load: float = 0.8,
    min_run: float = 10.0,
    max_run: float = 86_400.0,
    serial_fraction: float = 0.25,
    pow2_fraction: float = 0.8,
    exact_fraction: float = 0.15,
    max_overestimate: float = 10.0,
) -> list[Job]:
    """A realistic-looking parallel workload for a machine of ``procs`` processors.

    Model (the usual features of the archive's logs, Feitelson's "Workload Modeling for Computer
    Systems Performance Evaluation", 2015, kept deliberately simple):

    * width: serial with probability ``serial_fraction``; otherwise a power-of-two bucket
      ``[2^k, 2^(k+1))``, ``k >= 1``, with weight ``1/k`` (narrow jobs dominate), and within it the power of
      two itself with probability ``pow2_fraction``, else a uniform width of the bucket;
    * run time: log-uniform on ``[min_run, max_run]``, whole seconds;
    * estimate: the run time exactly with probability ``exact_fraction``, else run x a factor
      log-uniform on ``[1, max_overestimate]``, rounded up, capped at ``max_run`` (>= run);
    * arrivals: Poisson, with the mean gap set so the offered load
      ``sum(procs x run) / (procs x n_jobs x mean_gap)`` equals ``load`` for the jobs drawn.

    This is the embedded default workload of ``metasched simulate`` when no trace is given.
    """
    if n_jobs < 0:
        raise ValueError(f"synthetic: n_jobs must be >= 0, got {n_jobs}")
    if procs <= 0:
        raise ValueError(f"synthetic: procs must be positive, got {procs}")
    if not load > 0:
        raise ValueError(f"synthetic: load must be positive, got {load}")
    if not 1 <= min_run <= max_run:
        raise ValueError(f"synthetic: need 1 <= min_run <= max_run, got {min_run}, {max_run}")
    if max_overestimate < 1:
        raise ValueError(f"synthetic: max_overestimate must be >= 1, got {max_overestimate}")
    rng = random.Random(seed)
    n_buckets = procs.bit_length()
    # Parallel jobs: buckets k >= 1 with weight 1/k (width 1 is the serial share alone).
    weights = [0.0 if (k == 0 and procs > 1) else 1.0 / max(k, 1) for k in range(n_buckets)]
    shapes: list[tuple[int, float, float]] = []
    area = 0.0
    for _ in range(n_jobs):
        width = 1 if rng.random() < serial_fraction else _bucket_width(rng, procs, weights, [pow2_fraction] * n_buckets)
        run = float(round(_log_uniform(rng.random(), min_run, max_run)))
        if rng.random() < exact_fraction:
            estimate = run
        else:
            estimate = float(min(max_run, math.ceil(run * _log_uniform(rng.random(), 1.0, max_overestimate))))
        shapes.append((width, run, max(estimate, run, 1.0)))
        area += width * run
    mean_gap = area / (procs * load * n_jobs) if n_jobs else 0.0
    jobs: list[Job] = []
    t = 0.0
    for i, (width, run, estimate) in enumerate(shapes):
        if i:
            t += _exp(rng.random(), mean_gap)
        jobs.append(Job(i + 1, float(round(t)), run, estimate, width))
    return jobs


# --------------------------------------------------------------------------------------------- CTC

CTC_PROCS = 338
"""Processors of the CTC SP2 batch partition (the trace's ``MaxProcs``; the widest job uses 336)."""

# The numbers below were measured on the Parallel Workloads Archive's CTC-SP2-1996-3.1-cln trace
# (77,222 jobs, read with the normalisation of metasched.workload.swf, i.e. run <= estimate).
# Width: share of jobs in each power-of-two bucket [2^k, 2^(k+1)), k = 0..8, and the share of the
# bucket that is exactly the power of two. (42% serial, 83% powers of two in all.)
_CTC_BUCKETS = (0.4197, 0.0843, 0.1448, 0.1337, 0.1090, 0.0653, 0.0291, 0.0110, 0.0032)
_CTC_POW2_IN_BUCKET = (1.0, 0.848, 0.743, 0.574, 0.657, 0.701, 0.834, 0.773, 0.461)
# Run time (s): the 5%-quantiles q0, q0.05, ..., q1 (q0 = 0 raised to 1 s: log-interpolated).
_CTC_RUN_QUANTILES = (
    1,
    49,
    60,
    71,
    84,
    111,
    150,
    220,
    347,
    608,
    1101,
    2189,
    3539,
    5876,
    9465,
    14060,
    21600,
    31988,
    43839,
    57587,
    64800,
)
# Estimate: 9.3% of the jobs have estimate == run (most of them killed at their limit); the others
# ask for one of the round values users type, the smallest at least run x a factor drawn from the
# 5%-quantiles of the CTC estimate/run ratio (among jobs with a ratio > 1) and at most the 18 h limit.
_CTC_EXACT = 0.093
_CTC_RATIO_QUANTILES = (
    1.0, 1.11, 1.23, 1.38, 1.58, 1.81, 2.06, 2.46, 3.02, 3.72, 4.41, 5.17, 6.15, 7.79, 10.06, 13.71, 19.15,
    36.04, 100.0, 423.68, 64800.0,
)  # fmt: skip
_CTC_ROUND_ESTIMATES = (
    300,
    600,
    900,
    1200,
    1800,
    2700,
    3600,
    5400,
    7200,
    10800,
    14400,
    21600,
    28800,
    36000,
    43200,
    57600,
    64800,
)
_CTC_MAX_ESTIMATE = 64800
# Inter-arrival gap (s): 5%-quantiles; the top point (the trace's 164,472 s first gap is a start-up
# artefact) is set to 7,700 s so that the mean gap of the table is the trace's 379 s (77,222 jobs in
# 339 days).
_CTC_GAP_QUANTILES = (
    0, 1, 2, 4, 7, 11, 19, 30, 45, 63, 85, 112, 145, 186, 239, 310, 411, 566, 841, 1527, 7700
)  # fmt: skip


def _from_quantiles(u: float, table: Sequence[float]) -> float:
    """Inverse CDF through equally spaced quantiles, interpolated linearly in log(1 + x)."""
    pos = u * (len(table) - 1)
    i = min(int(pos), len(table) - 2)
    frac = pos - i
    a, b = math.log1p(table[i]), math.log1p(table[i + 1])
    return math.expm1(a + frac * (b - a))


def _ctc_parametric(n_jobs: int, rng: random.Random) -> list[tuple[int, float, float, float]]:
    out = []
    for _ in range(n_jobs):
        width = _bucket_width(rng, CTC_PROCS, _CTC_BUCKETS, _CTC_POW2_IN_BUCKET)
        run = float(max(1, round(_from_quantiles(rng.random(), _CTC_RUN_QUANTILES))))
        if rng.random() < _CTC_EXACT:
            estimate = run
        else:
            wanted = run * _from_quantiles(rng.random(), _CTC_RATIO_QUANTILES)
            k = bisect_left(_CTC_ROUND_ESTIMATES, wanted)
            estimate = float(_CTC_ROUND_ESTIMATES[k] if k < len(_CTC_ROUND_ESTIMATES) else _CTC_MAX_ESTIMATE)
            estimate = max(estimate, run)
        gap = float(round(_from_quantiles(rng.random(), _CTC_GAP_QUANTILES)))
        out.append((width, run, estimate, gap))
    return out


def ctc_like(n_jobs: int, *, seed: int, source_jobs: Sequence[Job] | None = None, joint: bool = True) -> list[Job]:
    """A synthetic CTC-like workload "with the same width and run-time distributions" (seed 001,
    Hamscher et al. 2000, section 4.2: the *ctcsyn* set, 10,000 jobs "very similar to the CTC data").

    With ``source_jobs`` (the real CTC jobs, in submit order) the jobs are resampled empirically:
    each job's (width, run time, estimate) is that of a uniformly drawn source job (``joint=True``,
    which keeps the marginal distributions and their correlation), or its width and its (run,
    estimate) pair are drawn from two independent source jobs (``joint=False``); the inter-arrival
    gaps are drawn from the source's gaps. Without data, a built-in approximation of CTC is used: the
    width, run-time, estimate and inter-arrival tables above (measured on the archive's
    CTC-SP2-1996-3.1-cln trace; see the comments at the tables). The daily and weekly arrival cycles
    and user sessions are not modelled: gaps are independent draws. Widths never exceed
    :data:`CTC_PROCS`.
    """
    if n_jobs < 0:
        raise ValueError(f"ctc_like: n_jobs must be >= 0, got {n_jobs}")
    rng = random.Random(seed)
    draws: list[tuple[int, float, float, float]]
    if source_jobs is None:
        draws = _ctc_parametric(n_jobs, rng)
    else:
        src = sorted(source_jobs, key=lambda j: j.submit_time)
        if not src:
            raise ValueError("ctc_like: source_jobs is empty")
        gaps = [b.submit_time - a.submit_time for a, b in itertools.pairwise(src)] or [0.0]
        m = len(src)
        draws = []
        for _ in range(n_jobs):
            shape = src[int(rng.random() * m)]
            timing = shape if joint else src[int(rng.random() * m)]
            gap = gaps[int(rng.random() * len(gaps))]
            draws.append((shape.requested_procs, timing.run_time, timing.requested_time, gap))
    jobs: list[Job] = []
    t = 0.0
    for i, (width, run, estimate, gap) in enumerate(draws):
        if i:
            t += gap
        jobs.append(Job(i + 1, t, run, max(estimate, 1.0), width))
    return jobs
