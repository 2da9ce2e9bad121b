"""The whole single-site conservative-backfilling simulation in one compiled loop: a second
implementation of :func:`metasched.sim.replay.simulate` driving
:class:`~metasched.policy.local.conservative.ConservativeBackfill` over an arrival-order queue.
(Part of :mod:`metasched.sim._single_kernel`; see its README.)

Each pass is the policy's full pass, as the reference states it: the profile (breakpoints
``times``, processors in use ``used`` on ``[times[k], times[k + 1])``, none after the last) holds
the running jobs until their expected ends (one already past its estimate holds nothing in it);
the queued jobs are placed in queue order, each at its earliest fit (the first breakpoint from
which every step before ``start + requested_time`` has room), and reserved there; a job placed at
``now`` starts if it fits the processors really free. The pass stops once no processor is really
free (no later job can start now; the reservations it would place behind are not kept from one
pass to the next, so nothing else depends on them).

Invariant: the start and end of every job are the Python driver's with ``ConservativeBackfill``,
bit for bit (the same float operations); jobs at least one processor wide.
"""

from __future__ import annotations

import numpy as np

import metasched._jit as _jit
import metasched.sim._single_kernel.common as _common
from metasched._jit import drop_stale_cache, move, njit
from metasched.sim._single_kernel.common import FREE, HEAD, RUNNING, _append, _finish_at, _start


@njit(cache=True, nogil=True)
def _earliest_fit(times: np.ndarray, used: np.ndarray, steps: int, total: int, p: int, d: float) -> int:
    """The first breakpoint ``k`` from which every step starting before ``times[k] + d`` has ``p``
    processors free (the last step, empty, always has)."""
    k = 0
    room = total - p
    while True:
        end = times[k] + d
        j = k
        while j < steps and times[j] < end and used[j] <= room:
            j += 1
        if j >= steps or times[j] >= end:
            return k
        k = j + 1


@njit(cache=True, nogil=True)
def _reserve(times: np.ndarray, used: np.ndarray, steps: int, k: int, p: int, end: float) -> int:
    """Hold ``p`` processors from breakpoint ``k`` to ``end``; the number of steps after."""
    j = k
    while j < steps and times[j] < end:
        j += 1
    if j >= steps or times[j] != end:  # a new breakpoint at ``end``, with the use of the step it splits
        move(times, j + 1, j, steps - j)
        move(used, j + 1, j, steps - j)
        times[j] = end
        used[j] = used[j - 1]
        steps += 1
    for m in range(k, j):
        used[m] += p
    return steps


@njit(cache=True, nogil=True)
def conservative_loop(
    submit: np.ndarray,
    run_time: np.ndarray,
    req_time: np.ndarray,
    procs: np.ndarray,
    total: int,
    start_time: np.ndarray,
    end_time: np.ndarray,
) -> None:
    """Simulate the jobs (sorted by ``(submit_time, job_id)``, each 1 to ``total`` processors wide)
    on ``total`` processors under conservative backfilling; fill ``start_time`` and ``end_time``."""
    n = submit.shape[0]
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    rt = np.zeros(n + 1, dtype=np.float64)
    ri = np.zeros(n + 1, dtype=np.int64)
    exp_end = np.zeros(n, dtype=np.float64)
    ht = np.zeros(n + 1, dtype=np.float64)
    hj = np.zeros(n + 1, dtype=np.int64)
    times = np.zeros(2 * n + 3, dtype=np.float64)
    used = np.zeros(2 * n + 3, dtype=np.int64)
    st = np.array([-1, -1, 0, total], dtype=np.int64)
    s = 0
    while s < n or st[RUNNING] > 0:
        t_submit = submit[s] if s < n else np.inf
        t_end = ht[0] if st[RUNNING] > 0 else np.inf
        now = t_submit if t_submit < t_end else t_end
        _finish_at(now, procs, exp_end, rt, ri, ht, hj, st)
        while s < n and submit[s] == now:
            _append(s, nxt, prv, st)
            s += 1
        if st[HEAD] < 0 or st[FREE] == 0:
            continue
        # the profile of the running jobs: ``now``, then each later expected end
        nr = st[RUNNING]
        steps = 1
        times[0] = now
        held = 0
        for i in range(nr):
            if rt[i] > now:
                held += procs[ri[i]]
        used[0] = held
        for i in range(nr):
            e = rt[i]
            if e <= now:
                continue
            if e != times[steps - 1]:
                times[steps] = e
                used[steps] = used[steps - 1]
                steps += 1
            used[steps - 1] -= procs[ri[i]]
        # place the queue in order
        j = st[HEAD]
        while j >= 0 and st[FREE] > 0:
            c = j
            j = nxt[c]
            p = procs[c]
            d = req_time[c]
            k = _earliest_fit(times, used, steps, total, p, d)
            start = times[k]
            steps = _reserve(times, used, steps, k, p, start + d)
            if start == now and p <= st[FREE]:
                _start(c, now, run_time, req_time, procs, start_time, end_time, exp_end, nxt, prv, rt, ri, ht, hj, st)


# (its loop holds the code of ``common``'s kernels: see :func:`~metasched._jit.drop_stale_cache`)
drop_stale_cache(globals(), (_common.__file__, _jit.__file__))
