"""Workload transforms: pure functions from a list of jobs to a new list of jobs.

No function mutates its input. Selections (:func:`first_n`, :func:`time_window`) return the same
:class:`~metasched.model.Job` objects in a new list; every transform that changes a field returns new
``Job`` objects (``Job.copy``), so the caller's jobs are never changed. Inputs are expected in submit
order (as :func:`metasched.workload.swf.read_swf` returns them); outputs are in submit order, ties by
the order of the input.

Sources: load factor, seed 000 section 3 (Sabin et al., "Scheduling of parallel jobs in a
heterogeneous multi-site environment", JSSPP 2003): run times are multiplied by the factor and the
trace's duration is kept; round-robin site split and wide-job split, seed 001 section 4.2 (Hamscher
et al., "Evaluation of job-scheduling strategies for grid computing", Grid 2000), workload
modifications 1 and 2.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

from metasched.model import Job

__all__ = [
    "by_home_site",
    "first_n",
    "load_factor",
    "merge",
    "rebase",
    "scale_interarrival",
    "split_round_robin",
    "split_wide",
    "time_shift",
    "time_window",
]


def _submit_order(jobs: Iterable[Job]) -> list[Job]:
    return sorted(jobs, key=lambda j: j.submit_time)  # stable: ties keep input order


def first_n(jobs: Sequence[Job], n: int) -> list[Job]:
    """The first ``n`` jobs in submit order (ties in input order); all of them when fewer."""
    if n < 0:
        raise ValueError(f"first_n: n must be >= 0, got {n}")
    return _submit_order(jobs)[:n]


def time_window(jobs: Sequence[Job], start: float, end: float) -> list[Job]:
    """Jobs submitted in ``[start, end)``, in submit order. Submit times are not shifted (see
    :func:`rebase`)."""
    if end < start:
        raise ValueError(f"time_window: end {end} is before start {start}")
    return _submit_order(j for j in jobs if start <= j.submit_time < end)


def load_factor(jobs: Sequence[Job], f: float) -> list[Job]:
    """Multiply every run time and estimate by ``f``, keeping submit times (seed 000 section 3).

    The trace keeps its duration, so the offered load is multiplied by ``f``. Invariant: each job's
    work (processors x run time) is multiplied by ``f``; the estimate stays >= the run time when it
    was (both scale by the same factor), and stays > 0.
    """
    if not (f > 0 and math.isfinite(f)):
        raise ValueError(f"load_factor: f must be a positive finite number, got {f}")
    return [j.copy(run_time=j.run_time * f, requested_time=j.requested_time * f) for j in _submit_order(jobs)]


def scale_interarrival(jobs: Sequence[Job], f: float) -> list[Job]:
    """Multiply every gap between consecutive submits by ``f``; the first submit stays where it is.

    Computed as ``s0 + f * (s - s0)`` (no accumulated rounding). ``f < 1`` compresses the trace (more
    load), ``f > 1`` stretches it. Run times and estimates are unchanged.
    """
    if not (f >= 0 and math.isfinite(f)):
        raise ValueError(f"scale_interarrival: f must be a finite number >= 0, got {f}")
    ordered = _submit_order(jobs)
    if not ordered:
        return []
    s0 = ordered[0].submit_time
    return [j.copy(submit_time=s0 + f * (j.submit_time - s0)) for j in ordered]


def time_shift(jobs: Sequence[Job], dt: float) -> list[Job]:
    """Add ``dt`` to every submit time. Raises ``ValueError`` if a submit would become negative."""
    ordered = _submit_order(jobs)
    if ordered and ordered[0].submit_time + dt < 0:
        raise ValueError(f"time_shift by {dt} makes the first submit ({ordered[0].submit_time}) negative")
    return [j.copy(submit_time=j.submit_time + dt) for j in ordered]


def rebase(jobs: Sequence[Job]) -> list[Job]:
    """Shift the jobs so that the first submit is at 0."""
    ordered = _submit_order(jobs)
    if not ordered:
        return []
    return time_shift(ordered, -ordered[0].submit_time)


def merge(*job_lists: Sequence[Job]) -> list[Job]:
    """Merge several workloads into one, in submit order.

    Ties on the submit time go to the earlier list, then to the earlier job of the list. Job ids are
    renumbered 1..N in the merged order (the originals collide across traces); the original id is
    kept in ``attrs["source_id"]`` and ``preceding_job`` references are remapped within each list
    (to -1 when the referenced job is not in it). A job's ``home_site`` is kept when set (>= 0);
    when unknown (-1) it becomes the index of its list, so merging per-site traces gives a
    multi-site workload whose jobs remember where they were submitted.
    """
    keyed = [[(j.submit_time, k, i, j) for i, j in enumerate(_submit_order(jobs))] for k, jobs in enumerate(job_lists)]
    merged = list(heapq.merge(*keyed, key=lambda t: (t[0], t[1], t[2])))
    new_id: dict[tuple[int, int], int] = {}
    for n, (_, k, _, j) in enumerate(merged, start=1):
        new_id[(k, j.job_id)] = n
    out: list[Job] = []
    for n, (_, k, _, j) in enumerate(merged, start=1):
        copy = j.copy(
            job_id=n,
            home_site=j.home_site if j.home_site >= 0 else k,
            preceding_job=new_id.get((k, j.preceding_job), -1) if j.preceding_job >= 0 else j.preceding_job,
        )
        copy.attrs["source_id"] = j.job_id
        out.append(copy)
    return out


def split_round_robin(jobs: Sequence[Job], n_sites: int) -> list[Job]:
    """Assign job ``i`` (in submit order, ties in input order) to ``home_site = i % n_sites``.

    Seed 001 section 4.2: "the jobs from the real traces have been assigned in a round-robin fashion
    to the different sites". Any previous ``home_site`` is overwritten.
    """
    if n_sites <= 0:
        raise ValueError(f"split_round_robin: n_sites must be positive, got {n_sites}")
    return [j.copy(home_site=i % n_sites) for i, j in enumerate(_submit_order(jobs))]


def by_home_site(jobs: Sequence[Job]) -> dict[int, list[Job]]:
    """The jobs grouped by ``home_site`` (keys in increasing order, each list in submit order, the same
    Job objects). Jobs with an unknown home site are under key -1."""
    groups: dict[int, list[Job]] = {}
    for j in _submit_order(jobs):
        groups.setdefault(j.home_site, []).append(j)
    return dict(sorted(groups.items()))


def split_wide(jobs: Sequence[Job], part_size: int) -> list[Job]:
    """Split every job wider than ``part_size`` into ``ceil(width / part_size)`` parts.

    Seed 001 section 4.2, workload modifications 1 (parts of the local machine size) and 2 (parts of
    the largest machine size): "wide jobs are split up into several parts of the machine size". The
    parts are ``part_size`` wide except the last, which takes the remainder; they keep the submit
    time, run time, estimate, home site and other fields of the original. Invariants: the widths of
    the parts sum to the original width, so processors x run time is preserved exactly; no part is
    wider than ``part_size``; job ids stay unique: the first part keeps the original id, the others
    get fresh ids above the largest id of the input (in output order). Every part records the
    original id in ``attrs["parent_id"]``; jobs that fit are returned unchanged (the same objects).
    """
    if part_size <= 0:
        raise ValueError(f"split_wide: part_size must be positive, got {part_size}")
    ordered = _submit_order(jobs)
    next_id = max((j.job_id for j in ordered), default=0) + 1
    out: list[Job] = []
    for j in ordered:
        width = j.requested_procs
        if width <= part_size:
            out.append(j)
            continue
        n_parts = -(-width // part_size)
        for p in range(n_parts):
            size = part_size if p < n_parts - 1 else width - part_size * (n_parts - 1)
            part = j.copy(requested_procs=size, job_id=j.job_id if p == 0 else next_id)
            if p > 0:
                next_id += 1
            part.attrs["parent_id"] = j.job_id
            out.append(part)
    return out
