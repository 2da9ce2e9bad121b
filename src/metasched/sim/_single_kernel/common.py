"""What the compiled single-site loops share: the queue (a doubly linked list of job indices in
arrival order), the running jobs sorted by ``(expected_end, index)``, the heap of their actual
ends, and the loop's scalars in ``st`` (:data:`HEAD`, :data:`TAIL`, :data:`RUNNING`,
:data:`FREE`). (Part of :mod:`metasched.sim._single_kernel`; see its README.)"""

from __future__ import annotations

import numpy as np

import metasched._jit as _jit
from metasched._jit import drop_stale_cache, move, njit

#: columns of ``st``: the queue's first and last job (-1: empty), the running jobs (as many as
#: entries in the sorted list and in the heap), the free processors
HEAD, TAIL, RUNNING, FREE = range(4)


@njit(cache=True, nogil=True)
def _find(rt: np.ndarray, ri: np.ndarray, nr: int, t: float, o: int) -> int:
    """The position of ``(t, o)`` among the first ``nr`` sorted entries of ``rt``/``ri``."""
    lo, hi = 0, nr
    while lo < hi:
        mid = (lo + hi) >> 1
        if rt[mid] < t or (rt[mid] == t and ri[mid] < o):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _push(ht: np.ndarray, hj: np.ndarray, n: int, t: float, o: int) -> None:
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if ht[parent] <= t:
            break
        ht[i] = ht[parent]
        hj[i] = hj[parent]
        i = parent
    ht[i] = t
    hj[i] = o


@njit(cache=True, nogil=True)
def _pop(ht: np.ndarray, hj: np.ndarray, n: int) -> None:
    """Remove the root of the heap of ``n`` entries."""
    n -= 1
    t = ht[n]
    o = hj[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and ht[c + 1] < ht[c]:
            c += 1
        if ht[c] >= t:
            break
        ht[i] = ht[c]
        hj[i] = hj[c]
        i = c
    if n > 0:
        ht[i] = t
        hj[i] = o


@njit(cache=True, nogil=True)
def _finish_at(
    now: float, procs: np.ndarray, exp_end: np.ndarray, rt: np.ndarray, ri: np.ndarray, ht: np.ndarray,
    hj: np.ndarray, st: np.ndarray,
) -> bool:  # fmt: skip
    """Release every running job that ends at ``now``; whether any did."""
    ended = False
    while st[RUNNING] > 0 and ht[0] == now:
        o = hj[0]
        nr = st[RUNNING]
        _pop(ht, hj, nr)
        k = _find(rt, ri, nr, exp_end[o], o)
        move(rt, k, k + 1, nr - k - 1)
        move(ri, k, k + 1, nr - k - 1)
        st[RUNNING] = nr - 1
        st[FREE] += procs[o]
        ended = True
    return ended


@njit(cache=True, nogil=True)
def _append(o: int, nxt: np.ndarray, prv: np.ndarray, st: np.ndarray) -> None:
    """Queue job ``o`` last."""
    if st[TAIL] < 0:
        st[HEAD] = o
    else:
        nxt[st[TAIL]] = o
        prv[o] = st[TAIL]
    st[TAIL] = o


@njit(cache=True, nogil=True)
def _start(
    c: int, now: float, run_time: np.ndarray, req_time: np.ndarray, procs: np.ndarray, start_time: np.ndarray,
    end_time: np.ndarray, exp_end: np.ndarray, nxt: np.ndarray, prv: np.ndarray, rt: np.ndarray, ri: np.ndarray,
    ht: np.ndarray, hj: np.ndarray, st: np.ndarray,
) -> None:  # fmt: skip
    """Start queued job ``c`` now: out of the queue, among the running jobs (``now + requested_time``
    its expected end, ``now + run_time`` its end)."""
    start_time[c] = now
    end_time[c] = now + run_time[c]
    exp_end[c] = now + req_time[c]
    nr = st[RUNNING]
    k = _find(rt, ri, nr, exp_end[c], c)
    move(rt, k + 1, k, nr - k)
    move(ri, k + 1, k, nr - k)
    rt[k] = exp_end[c]
    ri[k] = c
    _push(ht, hj, nr, end_time[c], c)
    st[RUNNING] = nr + 1
    st[FREE] -= procs[c]
    a = prv[c]
    b = nxt[c]
    if a >= 0:
        nxt[a] = b
    else:
        st[HEAD] = b
    if b >= 0:
        prv[b] = a
    else:
        st[TAIL] = a


drop_stale_cache(globals(), (_jit.__file__,))
