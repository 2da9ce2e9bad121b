"""Compiled inner loop of conservative backfilling: one whole pass over a queue.

The same algorithm as :meth:`ConservativeBackfill._full_pass
<metasched.policy.local.conservative.ConservativeBackfill>` built on
:class:`~metasched.model.profile.Profile`, on flat arrays and compiled with numba (LLVM): the
profile is a pair of arrays with room for every breakpoint the pass can add (two per job), and
each queued job is placed at its earliest fit in queue order. The float operations are the
same, in the same order (``start + duration``, comparisons), so the starts are bit-identical to
the Python pass; ``tests/policy/local/test_conservative_kernel.py`` checks it differentially.

Why compiled: a pass places every queued job in a profile that grows with the queue, so its cost
is (queue length) x (profile steps); at the loads of seed 000's sweep a site holds thousands of
copies and the pass ran at ~25 M profile steps per second in Python. The kernel does the same
walk at machine speed; what is left in Python per pass is building two arrays and the plan.

Invariant (as the Python pass): a job never delays the reservation of any job ahead of it in the
queue, and the profile never has fewer than 0 processors free.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Returned by :func:`conservative_pass` when a job is wider than the machine.
TOO_WIDE = -1
#: Returned when the profile never returns to enough processors (running jobs claim more than
#: the machine has): no job could ever be placed.
NO_END = -2


@njit(cache=True, nogil=True)
def _insert(times: np.ndarray, free: np.ndarray, n: int, at: int, t: float, f: int) -> None:
    for k in range(n, at, -1):
        times[k] = times[k - 1]
        free[k] = free[k - 1]
    times[at] = t
    free[at] = f


@njit(cache=True, nogil=True)
def conservative_pass(
    capacity: int,
    now: float,
    free_now: int,
    release_ends: np.ndarray,
    release_procs: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
) -> int:
    """Place the queue by conservative backfilling: the jobs are slots ``queue[0], queue[1],
    ...`` (queue order) of the per-slot arrays ``procs`` and ``durations``.

    The profile starts with ``free_now`` processors free at ``now`` and ``release_procs[k]`` more
    at ``release_ends[k]`` (an end at or before ``now`` counts as ``now``). Fills, for each slot
    of ``queue``, ``starts`` (the job's start) and ``state``: 1 when the job starts now (placed at
    ``now`` and fitting the processors really free, which an overrunning job may still hold), 0
    when it is reserved. Returns the number of profile steps at the end of the pass, or
    ``TOO_WIDE`` when a job needs more than ``capacity`` (``NO_END``: no end to the profile).
    """
    n_jobs = queue.shape[0]
    size = release_ends.shape[0] + 2 * n_jobs + 2
    times = np.empty(size, dtype=np.float64)
    free = np.empty(size, dtype=np.int64)
    # Profile.from_releases
    times[0] = now
    free[0] = free_now
    n = 1
    avail = free_now
    for r in np.argsort(release_ends, kind="mergesort"):
        end = release_ends[r]
        avail += release_procs[r]
        if end <= now:
            free[0] = avail
        elif end == times[n - 1]:
            free[n - 1] = avail
        else:
            times[n] = end
            free[n] = avail
            n += 1
    # Within a pass the profile only loses processors: the first instant with ``p`` free and the
    # start of the last job of the same shape only move later (as in the Python pass).
    first_free = np.full(capacity + 1, -np.inf)
    shape_fit: dict[tuple[int, float], float] = {}
    really_free = free_now
    for pos in range(n_jobs):
        q = queue[pos]
        p = procs[q]
        duration = durations[q]
        if p > capacity:
            return TOO_WIDE
        after = first_free[p]
        if after == -np.inf:
            after = now
        # bisect_right(times, after) - 1
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if after < times[mid]:
                hi = mid
            else:
                lo = mid + 1
        k = lo - 1
        while k < n and free[k] < p:
            k += 1
        if k < n and times[k] > after:
            after = times[k]
        first_free[p] = after
        shape = (p, duration)
        if shape in shape_fit:
            previous = shape_fit[shape]
            if previous > after:
                after = previous
        # Profile.place(p, duration, after)
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if after < times[mid]:
                hi = mid
            else:
                lo = mid + 1
        i = lo - 1
        if i < 0:
            i = 0
            after = times[0]
        start = 0.0
        end = 0.0
        j = 0
        while True:
            if i >= n:
                return NO_END
            if free[i] < p:
                i += 1
                continue
            start = times[i] if times[i] > after else after
            end = start + duration
            j = i + 1
            fits = True
            while j < n and times[j] < end:
                if free[j] < p:
                    fits = False
                    break
                j += 1
            if fits:
                break
            i = j + 1
        if duration > 0 and p != 0:
            if j == n or times[j] != end:
                _insert(times, free, n, j, end, free[j - 1])
                n += 1
            if times[i] != start:
                _insert(times, free, n, i + 1, start, free[i])
                n += 1
                i += 1
                j += 1
            for k in range(i, j):
                free[k] -= p
        shape_fit[shape] = start
        starts[q] = start
        if start <= now and p <= really_free:
            state[q] = 1
            really_free -= p
        else:
            state[q] = 0
    return n
