"""What the compiled single-site loops share: the running jobs sorted by ``(expected_end, index)``
and the heap of their actual ends. (Part of :mod:`metasched.sim._single_kernel`; see its README.)"""

from __future__ import annotations

import numpy as np

import metasched._jit as _jit
from metasched._jit import drop_stale_cache, move, njit


@njit(cache=True, nogil=True)
def _run_insert(rt: np.ndarray, ri: np.ndarray, nr: int, t: float, o: int) -> None:
    """Insert ``(t, o)`` into the first ``nr`` sorted entries of ``rt``/``ri``."""
    if nr == 0 or rt[nr - 1] < t or (rt[nr - 1] == t and ri[nr - 1] < o):
        rt[nr] = t
        ri[nr] = o
        return
    lo, hi = 0, nr
    while lo < hi:
        mid = (lo + hi) >> 1
        if rt[mid] < t or (rt[mid] == t and ri[mid] < o):
            lo = mid + 1
        else:
            hi = mid
    move(rt, lo + 1, lo, nr - lo)
    move(ri, lo + 1, lo, nr - lo)
    rt[lo] = t
    ri[lo] = o


@njit(cache=True, nogil=True)
def _run_remove(rt: np.ndarray, ri: np.ndarray, nr: int, t: float, o: int) -> None:
    """Remove ``(t, o)`` from the first ``nr`` sorted entries of ``rt``/``ri``."""
    lo, hi = 0, nr
    while lo < hi:
        mid = (lo + hi) >> 1
        if rt[mid] < t or (rt[mid] == t and ri[mid] < o):
            lo = mid + 1
        else:
            hi = mid
    move(rt, lo, lo + 1, nr - lo - 1)
    move(ri, lo, lo + 1, nr - lo - 1)


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


drop_stale_cache(globals(), (_jit.__file__,))
