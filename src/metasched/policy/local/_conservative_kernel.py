"""Compiled inner loop of conservative backfilling: a pass over a queue, resumable.

The same algorithm as ``ConservativeBackfill._full_pass`` built on
:class:`~metasched.model.profile.Profile`, on flat arrays, compiled with numba (LLVM). The float
operations are the same, in the same order (``start + duration``, comparisons), so the plans are
bit-identical to the Python pass; ``tests/policy/local/test_conservative_kernel.py`` checks it
differentially.

Why compiled: a pass places every queued job in a profile that grows with the queue (two
breakpoints per job), so its cost is (queue length) x (steps walked per job), and at the loads
of seed 000's sweep a site holds thousands of copies.

Why resumable (:class:`PassState` + :func:`place`): a pass's starts are known as soon as no job
left in the queue can start now, which on a crowded site is long before its end; the
reservations of the jobs behind are placed only if someone asks for them. Stopping rule (exact):
before placing the job at position ``x``, let ``md`` be the shortest estimate among the jobs from
``x`` on that are no wider than the processors free at the start of the pass. If some step
before ``now + md`` has no processor free, or no processor is really free any more, no job from
``x`` on can start now: the profile only loses processors as jobs are placed, and a job starts
now only if it is that narrow and its whole window ``[now, now + estimate)`` has processors free.
(A zero-width job, which fits anywhere, disables the rule.)

Invariant (as the Python pass): a job never delays the reservation of any job ahead of it in the
queue, and no step ever has fewer than 0 processors free.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Returned by :func:`place` when a job is wider than the machine.
TOO_WIDE = -1
#: Returned when the profile never returns to enough processors (running jobs claim more than
#: the machine has): no job could ever be placed.
NO_END = -2


@njit(cache=True, nogil=True)
def base_profile(
    now: float,
    free_now: int,
    release_ends: np.ndarray,
    release_procs: np.ndarray,
    times: np.ndarray,
    free: np.ndarray,
    t_zero: np.ndarray,
) -> int:
    """``Profile.from_releases`` into ``times``/``free``: ``free_now`` processors free at ``now``
    and ``release_procs[k]`` more at ``release_ends[k]`` (at or before ``now``: at ``now``).
    Returns the number of steps; ``t_zero[0]`` is the first instant with no processor free
    (``inf``: none)."""
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
    t_zero[0] = np.inf
    for k in range(n):
        if free[k] < 1:
            t_zero[0] = times[k]
            break
    return n


@njit(cache=True, nogil=True)
def shortest_behind(
    queue: np.ndarray, procs: np.ndarray, durations: np.ndarray, free_now: int, out: np.ndarray
) -> None:
    """``out[x]``: the shortest estimate among the jobs at positions ``>= x`` no wider than
    ``free_now`` (``inf``: none; ``-inf``: a zero-width job is among them)."""
    best = np.inf
    for x in range(queue.shape[0] - 1, -1, -1):
        q = queue[x]
        p = procs[q]
        if p == 0:
            best = -np.inf
        elif p <= free_now and durations[q] < best:
            best = durations[q]
        out[x] = best
    out[queue.shape[0]] = np.inf


@njit(cache=True, nogil=True)
def _insert(times: np.ndarray, free: np.ndarray, n: int, at: int, t: float, f: int) -> None:
    for k in range(n, at, -1):
        times[k] = times[k - 1]
        free[k] = free[k - 1]
    times[at] = t
    free[at] = f


@njit(cache=True, nogil=True)
def _bisect(times: np.ndarray, n: int, t: float) -> int:
    """``bisect_right(times[:n], t) - 1``."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if t < times[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1


@njit(cache=True, nogil=True)
def place(
    capacity: int,
    now: float,
    times: np.ndarray,
    free: np.ndarray,
    ints: np.ndarray,
    t_zero: np.ndarray,
    first_free: np.ndarray,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    queue: np.ndarray,
    procs: np.ndarray,
    durations: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    until: int,
    shortest: np.ndarray,
) -> int:
    """Place the jobs at queue positions ``ints[1]`` up to ``until`` (exclusive) in the profile
    ``times[:ints[0]]``/``free[:ints[0]]``; ``ints[2]`` holds the processors really free and
    ``t_zero[0]`` the first instant of the profile with none free (see :func:`base_profile`). The jobs
    are slots ``queue[x]`` of ``procs``/``durations``; each placed slot gets its start in
    ``starts`` and in ``state`` 1 (starts now) or 0 (reserved). With ``shortest`` (from
    :func:`shortest_behind`; empty: never), stops early by the module's stopping rule. Updates
    ``ints``; returns 0, or ``TOO_WIDE``/``NO_END``.

    ``first_free[p]``: the first instant with ``p`` free found so far in this pass (``-inf``:
    none yet); ``shape_*``: an open-addressing table from (width, estimate) to the start of the
    last job of that shape (``shape_p`` -1: empty). Within a pass the profile only loses
    processors, so neither can be beaten: searches start from them (as in the Python pass).
    """
    n = ints[0]
    really_free = ints[2]
    mask = shape_p.shape[0] - 1
    stop_early = shortest.shape[0] > 0
    zero = t_zero[0]
    x = ints[1]
    while x < until:
        if stop_early:
            md = shortest[x]
            if md != -np.inf and (really_free <= 0 or md == np.inf or zero < now + md):
                break
        q = queue[x]
        p = procs[q]
        duration = durations[q]
        if p > capacity:
            ints[0] = n
            ints[1] = x
            return TOO_WIDE
        after = first_free[p]
        if after == -np.inf:
            after = now
        k = _bisect(times, n, after)
        while k < n and free[k] < p:
            k += 1
        if k < n and times[k] > after:
            after = times[k]
        first_free[p] = after
        h = (p * 1000003 + np.int64(duration * 64.0)) & mask
        while shape_p[h] != -1 and not (shape_p[h] == p and shape_d[h] == duration):
            h = (h + 1) & mask
        if shape_p[h] != -1 and shape_start[h] > after:
            after = shape_start[h]
        # Profile.place(p, duration, after)
        i = _bisect(times, n, after)
        if i < 0:
            i = 0
            after = times[0]
        start = 0.0
        end = 0.0
        j = 0
        while True:
            if i >= n:
                ints[0] = n
                ints[1] = x
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
                if free[k] < 1 and times[k] < zero:
                    zero = times[k]
        shape_p[h] = p
        shape_d[h] = duration
        shape_start[h] = start
        starts[q] = start
        if start <= now and p <= really_free:
            state[q] = 1
            really_free -= p
        else:
            state[q] = 0
        x += 1
    ints[0] = n
    ints[1] = x
    ints[2] = really_free
    t_zero[0] = zero
    return 0
