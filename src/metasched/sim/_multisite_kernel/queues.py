"""Queues and copies of the compiled multi-site loop: the end-event heap, the event log, each
site's queue of copies (slots in arrival order, the count of waiting copies per width, the
efficacy order's sorted list), releasing a finished job's processors, building a pass's queue,
and copying or growing a plan row's arrays. (Part of :mod:`metasched.sim._multisite_kernel`; see
its README.)"""

from __future__ import annotations

import numpy as np

from metasched._jit import drop_stale_cache, move, njit
from metasched.policy.local._conservative_kernel import (
    GEN,
)
from metasched.sim._multisite_codes import (
    ORDER_EFFICACY,
)
from metasched.sim._multisite_kernel.layout import (
    BUSY,
    CAP,
    CUR_NONE,
    CURRENT,
    DIRTY,
    EXT,
    EXT_CAP,
    EXT_N,
    FREE,
    FRESH,
    G_HEAP,
    G_NLOG,
    G_PIDS,
    KERNEL_SOURCES,
    NRUN,
    NSLOTS,
    PLAN_ID,
    PLAN_N,
    PLAN_NSTARTS,
    QCOUNT,
    QWORK,
    RUN_PROCS,
    RWORK,
    TABLE,
)


@njit(cache=True, nogil=True)
def _log(lg: np.ndarray, lgt: np.ndarray, g: np.ndarray, now: float, kind: int, o: int, s: int) -> None:
    """Append ``(now, kind, job o, site s)`` to the log when one is kept (``lg`` not empty)."""
    if lg.shape[0] == 0:
        return
    k = g[G_NLOG]
    lg[k, 0] = kind
    lg[k, 1] = o
    lg[k, 2] = s
    lgt[k] = now
    g[G_NLOG] = k + 1


@njit(cache=True, nogil=True)
def _heap_push(ht: np.ndarray, hs: np.ndarray, hj: np.ndarray, g: np.ndarray, t: float, seq: int, o: int) -> None:
    """Push ``(t, seq, o)``; the heap is ordered by ``(t, seq)`` (``seq`` unique), as the
    driver's ``heapq`` of ``(end, seq, job_id, token)``."""
    i = g[G_HEAP]
    g[G_HEAP] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < t or (ht[p] == t and hs[p] < seq):
            break
        ht[i] = ht[p]
        hs[i] = hs[p]
        hj[i] = hj[p]
        i = p
    ht[i] = t
    hs[i] = seq
    hj[i] = o


@njit(cache=True, nogil=True)
def _heap_pop(ht: np.ndarray, hs: np.ndarray, hj: np.ndarray, g: np.ndarray) -> None:
    """Remove the smallest ``(t, seq)``."""
    n = g[G_HEAP] - 1
    g[G_HEAP] = n
    if n == 0:
        return
    t, seq, o = ht[n], hs[n], hj[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hs[c + 1] < hs[c])):
            c += 1
        if t < ht[c] or (t == ht[c] and seq < hs[c]):
            break
        ht[i] = ht[c]
        hs[i] = hs[c]
        hj[i] = hj[c]
        i = c
    ht[i] = t
    hs[i] = seq
    hj[i] = o


@njit(cache=True, nogil=True)
def _min_width(wc: np.ndarray, s: int, cap: int) -> int:
    """``SiteState.min_queued_width``: the narrowest queued width at ``s`` (``cap + 1``: none)."""
    for w in range(cap + 2):
        if wc[s, w] > 0:
            return w
    return cap + 1


@njit(cache=True, nogil=True)
def _queue_add(
    si: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    slot_of: np.ndarray,
    wc: np.ndarray,
    s: int,
    o: int,
    p: int,
) -> None:
    """Queue job ``o`` (width ``p``) last at ``s`` (arrival order = slot order)."""
    k = si[s, NSLOTS]
    slot_job[s, k] = o
    slot_alive[s, k] = 1
    slot_of[s, o] = k
    si[s, NSLOTS] = k + 1
    si[s, QCOUNT] += 1
    wc[s, p if p <= si[s, CAP] else si[s, CAP] + 1] += 1


@njit(cache=True, nogil=True)
def _queue_remove(
    si: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    slot_of: np.ndarray,
    wc: np.ndarray,
    s: int,
    o: int,
    p: int,
) -> None:
    """Take job ``o`` out of the queue of ``s``; compacts the slots (keeping their order) once
    the dead ones outnumber the live ones."""
    slot_alive[s, slot_of[s, o]] = 0
    si[s, QCOUNT] -= 1
    wc[s, p if p <= si[s, CAP] else si[s, CAP] + 1] -= 1
    n = si[s, NSLOTS]
    if n > 64 and 2 * si[s, QCOUNT] < n:
        m = 0
        for k in range(n):
            if slot_alive[s, k]:
                q = slot_job[s, k]
                slot_job[s, m] = q
                slot_alive[s, m] = 1
                slot_of[s, q] = m
                m += 1
        for k in range(m, n):
            slot_alive[s, k] = 0
        si[s, NSLOTS] = m


@njit(cache=True, nogil=True)
def _remove_copy(
    si: np.ndarray,
    sf: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    slot_of: np.ndarray,
    wc: np.ndarray,
    held: np.ndarray,
    est: np.ndarray,
    lg: np.ndarray,
    lgt: np.ndarray,
    g: np.ndarray,
    ext: np.ndarray,
    now: float,
    kind: int,
    o: int,
    s: int,
    p: int,
) -> None:
    """The driver's ``_remove_copy``: job ``o``'s copy (``p`` processors) leaves the queue of ``s``
    (``kind``: cancelled or denied), its queued work with it (0 once the queue is empty); the site is
    marked for a new pass and the event logged. The copy is listed for :func:`_revise` (``EXT``): a
    copy queued since the plan leaves the list instead (the plan never held it)."""
    _queue_remove(si, slot_job, slot_alive, slot_of, wc, s, o, p)
    sf[s, QWORK] -= p * est[s, o]
    if si[s, QCOUNT] == 0:
        sf[s, QWORK] = 0.0
    held[s, o] = 0
    si[s, FRESH] = 0
    si[s, CURRENT] = CUR_NONE
    if si[s, EXT]:
        m = si[s, EXT_N]
        a = 0
        while a < m and ext[s, a] != o:
            a += 1
        if a < m:
            for b in range(a, m - 1):
                ext[s, b] = ext[s, b + 1]
            si[s, EXT_N] = m - 1
        elif m < EXT_CAP:
            ext[s, m] = -1 - o
            si[s, EXT_N] = m + 1
        else:
            si[s, EXT] = 0
    si[s, DIRTY] = 1
    _log(lg, lgt, g, now, kind, o, s)


@njit(cache=True, nogil=True)
def _release(
    o: int,
    s: int,
    p: int,
    now: float,
    si: np.ndarray,
    sf: np.ndarray,
    est: np.ndarray,
    run_start: np.ndarray,
    run_list: np.ndarray,
    run_pos: np.ndarray,
    run_site: np.ndarray,
) -> None:
    """The driver's ``_release``: job ``o`` (``p`` processors) stops running at site ``s`` at ``now``
    (it ended or was killed): its processors, running work and busy time are accounted, it leaves the
    site's running list (the last entry takes its place) and the site is marked for a new pass."""
    si[s, FREE] += p
    si[s, RUN_PROCS] -= p
    sf[s, RWORK] -= p * (run_start[o] + est[s, o])
    last = si[s, NRUN] - 1
    moved = run_list[s, last]
    run_list[s, run_pos[o]] = moved
    run_pos[moved] = run_pos[o]
    si[s, NRUN] = last
    if last == 0:
        sf[s, RWORK] = 0.0
    sf[s, BUSY] += p * (now - run_start[o])
    run_site[o] = -1
    si[s, FRESH] = 0
    si[s, CURRENT] = CUR_NONE
    si[s, EXT] = 0
    si[s, DIRTY] = 1


@njit(cache=True, nogil=True)
def _build_queue(
    si: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    prim: np.ndarray,
    order: int,
    s: int,
    extra: int,
    extra_key: float,
    out: np.ndarray,
    eq: np.ndarray,
    eqn: np.ndarray,
    held: np.ndarray,
) -> int:
    """The queue of ``s`` (plus job ``extra``, not queued there yet, when ``extra >= 0``) in queue
    order into ``out``; returns its length. FCFS: the live slots in arrival order, ``extra``
    last. Efficacy: the order of ``Efficacy.rank`` (``QueueColumns.live_slots``): the jobs in
    arrival order stably sorted by ``prim``, kept as such in ``eq[s, :eqn[s]]`` (sorted by
    ``(prim, job)``, the job index being the arrival order; :func:`_eq_insert`), whose entries
    no longer queued are skipped here and dropped once they outnumber the live ones; ``extra``
    (the newest job) goes after every job of a key up to its own."""
    n = 0
    if order == ORDER_EFFICACY:
        m = eqn[s]
        k = 0
        if extra >= 0:
            while k < m:
                q = eq[s, k]
                if held[s, q] and prim[s, q] > extra_key:
                    break
                out[n] = q
                n += held[s, q]
                k += 1
            out[n] = extra
            n += 1
        # (each entry is written, and counted only if still queued: no branch to mispredict where
        # live and dropped entries alternate at random; ``out`` has room for every entry)
        while k < m:
            q = eq[s, k]
            out[n] = q
            n += held[s, q]
            k += 1
        live = n - 1 if extra >= 0 else n
        if m > 64 and 2 * live < m:
            c = 0
            for x in range(n):
                if out[x] != extra:
                    eq[s, c] = out[x]
                    c += 1
            eqn[s] = c
        return n
    for k in range(si[s, NSLOTS]):
        out[n] = slot_job[s, k]
        n += slot_alive[s, k]  # (written always, counted if live: see above)
    if extra >= 0:
        out[n] = extra
        n += 1
    return n


@njit(cache=True, nogil=True)
def _sort_by_value(v: np.ndarray, sites: np.ndarray, n: int) -> None:
    """Sort ``v[:n]``, with ``sites[:n]`` alongside, by (value, site), in place (a few entries)."""
    for a in range(1, n):
        vv = v[a]
        vs = sites[a]
        b = a - 1
        while b >= 0 and (v[b] > vv or (v[b] == vv and sites[b] > vs)):
            v[b + 1] = v[b]
            sites[b + 1] = sites[b]
            b -= 1
        v[b + 1] = vv
        sites[b + 1] = vs


@njit(cache=True, nogil=True)
def _after_key(prim: np.ndarray, s: int, jobs: np.ndarray, m: int, key: float) -> int:
    """The position, in ``jobs[:m]`` sorted by their key ``prim[s, job]``, after every job of a key
    up to ``key`` (a binary search): where a newer job of that key goes in the efficacy order."""
    lo, hi = 0, m
    while lo < hi:
        mid = (lo + hi) >> 1
        if prim[s, jobs[mid]] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _eq_insert(eq: np.ndarray, eqn: np.ndarray, prim: np.ndarray, s: int, o: int) -> None:
    """Insert job ``o``, the newest queued at ``s``, into the efficacy order ``eq[s]``: after
    every entry of a key up to ``prim[s, o]`` (entries no longer queued keep their place and
    key)."""
    m = eqn[s]
    lo = _after_key(prim, s, eq[s], m, prim[s, o])
    for k in range(m, lo, -1):
        eq[s, k] = eq[s, k - 1]
    eq[s, lo] = o
    eqn[s] = m + 1


@njit(cache=True, nogil=True)
def _copy_row(
    a: int,
    b: int,
    cap: int,
    si: np.ndarray,
    g: np.ndarray,
    pqueue: np.ndarray,
    pstarts: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    pnow: np.ndarray,
    ff: np.ndarray,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
    tables: bool,
) -> None:
    """Plan row ``b`` := plan row ``a`` (the parts in use; ``cap``: the site's processors), under a
    new plan id (so no stale entry of row ``b`` is taken for one of its jobs) and a generation of
    its shape tables above both rows' (``b``'s only ever increases: the entries of ``a``'s current
    one are copied under it, the rest left empty). Without ``tables`` the shape tables are left
    empty (search bounds only: no bound is always valid), for a caller that cuts the copy back at
    once (:func:`~metasched.policy.local._conservative_kernel.cut` empties them anyway). (The copy
    of a site's plan is never that site's next plan: the caller clears ``SWAP``.)"""
    gen_a = pints[a, GEN]
    gen = (gen_a if gen_a > pints[b, GEN] else pints[b, GEN]) + 1
    g[G_PIDS] += 1
    plan_id = g[G_PIDS]
    n = si[a, PLAN_N]
    ns = si[a, PLAN_NSTARTS]
    table = si[a, TABLE]
    si[b, PLAN_ID] = plan_id
    si[b, PLAN_N] = n
    si[b, PLAN_NSTARTS] = ns
    si[b, TABLE] = table
    for x in range(n):
        q = pqueue[a, x]
        pqueue[b, x] = q
        pid[b, q] = plan_id
        pstate[b, q] = pstate[a, q]
        pstart[b, q] = pstart[a, q]
        ppos[b, q] = x
    _copy_head(pstarts, a, b, ns)
    _copy_head(times, a, b, pints[a, 0])
    _copy_head(frees, a, b, pints[a, 0])
    _copy_head(pints, a, b, pints.shape[1])
    pints[b, GEN] = gen
    _copy_head(ptz, a, b, ptz.shape[1])
    pnow[b] = pnow[a]
    _copy_head(ff, a, b, 2 * (cap + 1))
    if tables:
        new = gen << 32
        for h in range(2 * table):
            key = shape_p[a, h]
            shape_p[b, h] = new | (key & 0xFFFFFFFF) if key >> 32 == gen_a else -1
        _copy_head(shape_d, a, b, 2 * table)
        _copy_head(shape_start, a, b, 4 * table)
    _copy_head(pdef, a, b, pints[a, 4])
    _copy_head(pbound, a, b, pints[a, 4])


@njit(cache=True, nogil=True)
def _copy_head(arr: np.ndarray, a: int, b: int, k: int) -> None:
    """``arr[b, :k] = arr[a, :k]`` (rows ``a`` != ``b``, ``k`` <= the row's length), as one block
    move on the array seen flat: numba's slice assignment compiles to general broadcasting code
    (several seconds of compile time for a plain copy), and an element loop is not turned into a
    block copy (see :func:`~metasched._jit.move`)."""
    width = arr.shape[1]
    move(arr.reshape(arr.size), b * width, a * width, k)


@njit(cache=True, nogil=True)
def _grow_tables(r: int, n: int, si: np.ndarray, pints: np.ndarray) -> None:
    """Plan row ``r``'s queue now holds ``n`` jobs. Its shape tables (search bounds only) were sized
    for the queue of the row's pass: with more jobs than that they could fill up (an open-addressing
    table that is full has no empty slot to stop a search), so they grow, cleared (no bound is always
    valid)."""
    table = si[r, TABLE]
    if 2 * n + 1 > table:
        while 2 * n + 1 > table:
            table <<= 1
        si[r, TABLE] = table
        pints[r, GEN] += 1


@njit(cache=True, nogil=True)
def _queue_in(
    r: int, pos: int, o: int, si: np.ndarray, pqueue: np.ndarray, pid: np.ndarray, ppos: np.ndarray,
    pints: np.ndarray,
) -> None:  # fmt: skip
    """Job ``o`` enters plan row ``r``'s queue at position ``pos`` (the jobs from there on move back
    one), in the row's plan (``pid``); the shape tables grow if needed (:func:`_grow_tables`). Its
    state, and the row's cursor and deferred list, are the caller's."""
    n = si[r, PLAN_N]
    queue = pqueue[r]
    for x in range(n, pos, -1):
        q = queue[x - 1]
        queue[x] = q
        ppos[r, q] = x
    queue[pos] = o
    ppos[r, o] = pos
    pid[r, o] = si[r, PLAN_ID]
    si[r, PLAN_N] = n + 1
    _grow_tables(r, n + 1, si, pints)


@njit(cache=True, nogil=True)
def _compact(queue: np.ndarray, pid_r: np.ndarray, ppos_r: np.ndarray, plan_id: int, lo: int, hi: int, w: int) -> int:
    """Move the jobs at ``queue[lo:hi]`` still in plan ``plan_id`` (``pid_r``: a plan row's ``pid``)
    to ``queue[w:]``, in order (``w <= lo``), their positions in ``ppos_r``; returns the position
    after the last one moved."""
    for x in range(lo, hi):
        q = queue[x]
        if pid_r[q] == plan_id:
            queue[w] = q
            ppos_r[q] = w
            w += 1
    return w


@njit(cache=True, nogil=True)
def _drop_gone(
    r: int,
    first: int,
    si: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    ppos: np.ndarray,
    pints: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> None:
    """The jobs of plan row ``r``'s queue no longer in its plan (``pid`` cleared by the caller), all
    at or behind position ``first``, leave the queue; those behind move up, and the deferred list
    (the gone ones leave it) and the cursor follow. The caller has taken back any window they held."""
    plan_id = si[r, PLAN_ID]
    n = si[r, PLAN_N]
    queue = pqueue[r]
    # the deferred list by job while positions change
    for d in range(pints[r, 3], pints[r, 4]):
        pdef[r, d] = queue[pdef[r, d]]
    cursor = pints[r, 1]
    # ahead of the cursor, then behind it: the cursor follows the jobs kept ahead of it (one loop
    # testing each position against the cursor was dearer)
    mid = cursor if cursor > first else first
    if mid > n:
        mid = n
    w = _compact(queue, pid[r], ppos[r], plan_id, first, mid, first)
    new_cursor = w if cursor > first else cursor
    w = _compact(queue, pid[r], ppos[r], plan_id, mid, n, w)
    si[r, PLAN_N] = w
    pints[r, 1] = new_cursor
    w = pints[r, 3]
    for d in range(pints[r, 3], pints[r, 4]):
        q = pdef[r, d]
        if pid[r, q] == plan_id:
            pdef[r, w] = ppos[r, q]
            pbound[r, w] = pbound[r, d]
            w += 1
    pints[r, 4] = w


drop_stale_cache(globals(), KERNEL_SOURCES)
