"""Summary statistics of a workload (``metasched trace info``).

Definitions (times in seconds):

* ``span_s`` = last submit - first submit (the arrival span);
* ``offered_load`` = sum(processors x run time) / (machine processors x span_s): the fraction of the
  machine the jobs ask for while they arrive (``None`` when the span is 0);
* width histogram: power-of-two buckets ``(2^(k-1), 2^k]``, labelled ``"1"``, ``"2"``, ``"3-4"``,
  ``"5-8"``, ... so that the many power-of-two jobs sit at the top of their bucket;
* quantiles are nearest-rank: the smallest value with at least a fraction ``q`` of the values at or
  below it;
* a statistic of no jobs (the mean, a quantile, a fraction of an empty workload) is ``None``;
* estimate accuracy = run time / estimate per job (1 = exact); ``exact_fraction`` counts run ==
  estimate (which includes the jobs killed at their limit), ``overrun_fraction`` run > estimate
  (only possible when read with ``allow_overrun``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from metasched.model import Job
from metasched.workload.swf import Workload

__all__ = ["QUANTILES", "describe", "offered_load", "quantile", "width_bucket"]

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of already sorted values (``nan`` when empty)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return float(sorted_values[rank - 1])


def width_bucket(width: int) -> str:
    """Label of the power-of-two bucket ``(2^(k-1), 2^k]`` holding ``width`` (>= 1)."""
    if width <= 2:
        return str(width)
    top = 1 << (width - 1).bit_length()
    return f"{top // 2 + 1}-{top}"


def offered_load(jobs: Sequence[Job], procs: int) -> float | None:
    """sum(processors x run time) / (``procs`` x arrival span); None when the span is 0.

    To reach a target load ``L`` with :func:`metasched.workload.transforms.load_factor`, use the factor
    ``L / offered_load(jobs, procs)`` (it scales the work and keeps the span).
    """
    if not jobs or procs <= 0:
        return None
    span = max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs)
    if span <= 0:
        return None
    return math.fsum(j.requested_procs * j.run_time for j in jobs) / (procs * span)


def describe(workload: Workload | Sequence[Job], *, procs: int | None = None) -> dict[str, Any]:
    """A JSON-ready summary of ``workload`` (see the module docstring for the definitions).

    ``procs`` is the machine size for the offered load; by default the workload's ``max_procs``
    (or the widest job for a bare job list).
    """
    if isinstance(workload, Workload):
        jobs: Sequence[Job] = workload.jobs
        dropped = dict(workload.dropped)
        records = workload.records
        size = procs or workload.max_procs
        source = workload.source
    else:
        jobs = workload
        dropped = {}
        records = len(jobs)
        size = procs or max((j.requested_procs for j in jobs), default=0)
        source = ""
    n = len(jobs)
    submits = [j.submit_time for j in jobs]
    first = min(submits, default=math.nan)
    last = max(submits, default=math.nan)
    span = last - first if n else 0.0
    work = math.fsum(j.requested_procs * j.run_time for j in jobs)
    load = offered_load(jobs, size)

    widths: dict[str, int] = {}
    for j in sorted(jobs, key=lambda j: j.requested_procs):
        label = width_bucket(j.requested_procs)
        widths[label] = widths.get(label, 0) + 1
    runs = sorted(j.run_time for j in jobs)
    ests = sorted(j.requested_time for j in jobs)
    accuracy = sorted(j.run_time / j.requested_time for j in jobs if j.requested_time > 0)
    return _finite_or_none(
        {
            "source": source,
            "records": records,
            "jobs": n,
            "dropped": dropped,
            "procs": size,
            "first_submit": first,
            "last_submit": last,
            "span_s": span,
            "span_days": span / 86_400,
            "total_work": work,
            "offered_load": load,
            "serial_fraction": sum(1 for j in jobs if j.requested_procs == 1) / n if n else math.nan,
            "power_of_two_fraction": (
                sum(1 for j in jobs if j.requested_procs & (j.requested_procs - 1) == 0) / n if n else math.nan
            ),
            "widest": max((j.requested_procs for j in jobs), default=0),
            "width_histogram": widths,
            "run_time": {
                "mean": math.fsum(runs) / n if n else math.nan,
                "max": runs[-1] if runs else math.nan,
                **{f"p{round(q * 100)}": quantile(runs, q) for q in QUANTILES},
            },
            "requested_time": {
                "mean": math.fsum(ests) / n if n else math.nan,
                "max": ests[-1] if ests else math.nan,
                **{f"p{round(q * 100)}": quantile(ests, q) for q in QUANTILES},
            },
            "estimate_accuracy": {
                "mean": math.fsum(accuracy) / len(accuracy) if accuracy else math.nan,
                "median": quantile(accuracy, 0.5),
                "exact_fraction": sum(1 for j in jobs if j.run_time == j.requested_time) / n if n else math.nan,
                "overrun_fraction": sum(1 for j in jobs if j.run_time > j.requested_time) / n if n else math.nan,
            },
        }
    )


def _finite_or_none(value: Any) -> Any:
    """``value`` with every NaN replaced by None: the summary stays valid JSON (an empty workload has
    no first submit, no mean, no quantiles)."""
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
