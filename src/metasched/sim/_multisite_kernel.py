"""Compiled event loop of the multi-site driver: a second implementation of
:func:`metasched.sim.multisite.simulate_multisite`, over arrays, compiled with numba.

Source: the Python driver :class:`metasched.sim.multisite._Driver` (the reference; seed 000's
schemes). This module ports, statement for statement, its event loop (ends, then submissions,
then scheduling passes of the lowest dirty site until none is dirty), its plan cache (a site is
re-planned only after it was touched; a site answers other sites from its latest plan, placing
that plan's queue further when a job not placed yet is asked for), its instantaneous loads and
message counts, the meta-schedulers' decisions (start-based :class:`LeastLoad`/:class:`KReservations`,
:class:`CompletionTime`, :class:`CancelSlowerOnly`; site choice by load or by projected completion)
and the local schedulers' plans (conservative backfilling through the same kernel
:func:`~metasched.policy.local._conservative_kernel.place` as the Python path; EASY
backfilling ported from :class:`~metasched.policy.local.easy.EasyBackfill`), for the FCFS and
efficacy queue orders.

Invariant: for every input the Python driver accepts, the results are identical to its results,
bit for bit (start, end, site, run time, messages, attempts, copies per job; busy and wasted
processor-seconds, denials, kills, plans; and the event log, in order). Every float is computed
by the same operations in the same order as in the driver (the loads' running sums included),
so site choices and completion comparisons agree exactly. ``tests/sim/test_multisite_kernel.py``
checks it differentially (hypothesis, every supported scheme) and on hand-worked cases.

Layout. Jobs are indexed in ``(submit_time, job_id)`` order. Per (site, job): whether a copy is
queued there (``held``), its estimate ``est[s, o]`` and run time ``run[s, o]`` there (scaled,
transfer included), its queue-order key ``prim`` and its state in the site's latest plan
(``pid``: the plan it was queued at; ``pstate``: 0 reserved at ``pstart``, 1 placed to start
now (lazily), 3 not placed yet, 4 among the plan's starts, 5 in the plan with no reservation
(EASY); ``ppos``: its queue position). The plan arrays have two rows per site: ``si[s, ROW]``
holds its latest plan (the driver's plan cache), ``si[s, SPARE]`` the projections of
completion-time site choice and, while ``si[s, CURRENT]`` says so, a pass of the site's queue as
it is now, kept through the copies queued there, the copies cancelled there and the driver's
passes that start nothing there, so that the next projections read it instead of making a pass
each (:func:`_start_from_plan`, :func:`_insert_copy`, :func:`_take_out_copy`, :func:`_planned`);
the two rows trade places when that pass is the very plan the driver makes next (:func:`_swap_in`).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

import metasched._jit as _jit
import metasched.policy.local._conservative_kernel as _conservative_kernel
import metasched.sim._multisite_codes as _codes
from metasched._jit import drop_stale_cache, move, njit, types
from metasched.model.job import Job
from metasched.model.site import Site
from metasched.policy.local._conservative_kernel import (
    GEN,
    MEMO_SIZE,
    NO_END,
    ZERO,
    _advance,
    _deferred_bound,
    _resolve,
    base_profile,
    cut,
    first_fit,
    i64,
    place,
    reserve,
    retime,
    shortest_behind,
)
from metasched.sim._multisite_codes import (
    DECIDE_COMPLETION,
    DECIDE_SLOWER,
    DECIDE_START,
    LOCAL_CONSERVATIVE,
    ORDER_EFFICACY,
    SELECT_COMPLETION,
)
from metasched.sim.multisite import JobColumns, MultiSiteResult

# per-site int state (columns of ``si``)
FREE, RUN_PROCS, QCOUNT, NSLOTS, NRUN, PLAN_ID, FRESH, DIRTY, PLAN_N, PLAN_NSTARTS, TABLE, CAP = range(12)
ROW, SPARE, CURRENT, SWAP = range(12, 16)
EXT, EXT_N = range(16, 18)
N_SI = 18
# ``CURRENT``: which row holds a pass of the site's queue as it is now (see :func:`_insert_copy`);
# ``SWAP``: that row (the spare) is the very pass a re-plan now would make (see :func:`_swap_in`)
CUR_NONE, CUR_ROW, CUR_SPARE = range(3)
# ``EXT``: nothing changed at the site since its plan's pass but the ``EXT_N`` copies queued there
# since (listed in ``ext[s]`` as the job) or taken out of its queue (as ``-1 - job``), at most
# ``EXT_CAP``, see :func:`_revise`
EXT_CAP = 64
# a plan row's ints (``pints``): the six of ``place`` (steps, cursor, processors really free, head
# and tail of the deferred list, the generation of its shape tables ``GEN``: only ever increased, so
# no entry of an older one is read again), then ``STOP``: a queue position from which on no job can
# start at the row's instant (where its pass stopped early; ``STOP_UNKNOWN``: not known)
STOP = 6
N_PINTS = 7
STOP_UNKNOWN = i64(1 << 62)
# per-site float state (columns of ``sf``)
QWORK, RWORK, BUSY = range(3)
N_SF = 3
# globals (``g``)
G_PLANS, G_DENIALS, G_KILLS, G_SEQ, G_NLOG, G_PIDS, G_ERROR, G_HEAP = range(8)
N_G = 8
# ``gf``
GF_WASTED, GF_NOW = range(2)
# log event codes, as the driver's strings
EVENTS = ("submit", "start", "cancel", "deny", "kill", "end")
# (NumPy integers, see ``i64``: a literal code would give ``_log`` and ``_remove_copy`` one compiled
# copy per event kind)
EV_SUBMIT, EV_START, EV_CANCEL, EV_DENY, EV_KILL, EV_END = (i64(k) for k in range(6))
# error codes (``g[G_ERROR]``): states the driver treats as bugs
ERR_NO_END = 1
ERR_NEVER_RAN = 2
# constants passed to other kernels (not literals, see ``i64``)
NO_JOB = i64(-1)
CUT_OK = cast(bool, np.bool_(True))
WITH_TABLES = cast(bool, np.bool_(True))
NO_TABLES = cast(bool, np.bool_(False))


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
def _place_row(
    r: int,
    s: int,
    now: float,
    until: int,
    si: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
    shortest: np.ndarray,
    longest: np.ndarray,
    reach: float,
) -> int:
    """:func:`~metasched.policy.local._conservative_kernel.place` on plan row ``r`` (a pass at site
    ``s``, at ``now``) up to queue position ``until``: the row's arrays as ``place`` takes them
    (the shape tables' parts in use, the memo after the row's first float); its code."""
    table = si[r, TABLE]
    return place(
        si[s, CAP],
        now,
        times[r],
        frees[r],
        pints[r],
        ptz[r],
        ff[r],
        shape_p[r, : 2 * table],
        shape_d[r, : 2 * table],
        shape_start[r, : 4 * table],
        ptz[r, 1:],
        pqueue[r, : si[r, PLAN_N]],
        procs,
        est[s],
        pstart[r],
        pstate[r],
        until,
        shortest,
        longest,
        pdef[r],
        pbound[r],
        reach,
    )


@njit(cache=True, nogil=True)
def _cut_row(
    r: int,
    s: int,
    pos: int,
    si: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> None:
    """:func:`~metasched.policy.local._conservative_kernel.cut` of plan row ``r`` (site ``s``) back
    to the jobs ahead of queue position ``pos`` (the first instants of ``ff``, not its step
    hints)."""
    cut(
        times[r], frees[r], pints[r], ptz[r], ff[r, : si[s, CAP] + 1], ptz[r, 1:],
        pqueue[r, : si[r, PLAN_N]], procs, est[s], pstart[r], pstate[r], pdef[r], pbound[r], pos,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _deferred_ahead(
    r: int, pos: int, below: float, pints: np.ndarray, pdef: np.ndarray, pbound: np.ndarray
) -> tuple[float, int]:
    """Of plan row ``r``'s deferred jobs ahead of queue position ``pos``: the lowest bound
    (``inf``: none), and the position of the last one whose bound is below ``below`` (-1: none)."""
    low = np.inf
    last = -1
    for k in range(pints[r, 3], pints[r, 4]):
        x = pdef[r, k]
        if x < pos:
            b = pbound[r, k]
            if b < low:
                low = b
            if b < below:
                last = x
    return low, last


@njit(cache=True, nogil=True)
def _early_stop_pass(
    r: int,
    s: int,
    c: int,
    now: float,
    si: np.ndarray,
    g: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
    pstarts: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    shape_p: np.ndarray,
    shape_d: np.ndarray,
    shape_start: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> int:
    """Place plan row ``r`` (site ``s``, a conservative pass at ``now`` with its cursor at ``c``,
    ``pints[r, 2]`` processors really free) from ``c`` on with the early stop (``place``), note where
    it stopped (``STOP``) and list the jobs it starts, from ``c`` on, in ``pstarts[r]`` (state 4);
    returns how many. The longest estimates behind each position are clipped to the lowest bound
    still put off (none in a new pass): the horizon must not pass one (see :func:`_revise`)."""
    m = si[r, PLAN_N]
    queue = pqueue[r]
    # (with the one-processor minima in its second half: ``place``'s stronger stop)
    shortest = np.empty(2 * (m + 1), dtype=np.float64)
    longest = np.empty(m + 1, dtype=np.float64)
    shortest_behind(queue[c:m], procs, est[s], pints[r, 2], shortest[c:], longest[c:])
    lowest, _ = _deferred_ahead(r, m, -np.inf, pints, pdef, pbound)  # (every deferred job is ahead of ``m``)
    if lowest < np.inf:
        for x in range(c, m + 1):
            if longest[x] > lowest - now:
                longest[x] = lowest - now
    code = _place_row(
        r, s, now, m, si, procs, est, pqueue, pstate, pstart, times, frees, pints, ptz, ff, shape_p, shape_d,
        shape_start, pdef, pbound, shortest, longest, np.inf,
    )  # fmt: skip
    if code != 0:
        g[G_ERROR] = ERR_NO_END
    pints[r, STOP] = pints[r, 1]
    ns = 0
    for x in range(c, pints[r, 1]):
        q = queue[x]
        if pstate[r, q] == 1:
            pstate[r, q] = 4
            pstarts[r, ns] = q
            ns += 1
    return ns


@njit(cache=True, nogil=True)
def _plan(
    r: int,
    s: int,
    extra: int,
    extra_key: float,
    local: int,
    order: int,
    now: float,
    si: np.ndarray,
    g: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    prim: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    exp_end: np.ndarray,
    run_list: np.ndarray,
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
    scratch_f: np.ndarray,
    scratch_i: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
    eq: np.ndarray,
    eqn: np.ndarray,
    held: np.ndarray,
) -> None:
    """Site ``s``'s local plan now (with job ``extra`` queued last when ``extra >= 0``) into plan
    row ``r``: the pass of ``ConservativeBackfill._columnar`` (placed up to its early stop; the
    rest on demand by :func:`_place_to`) or ``EasyBackfill._full_pass``. Its starts, in queue
    order, get state 4 and are listed in ``pstarts[r]``; counts one plan."""
    g[G_PLANS] += 1
    g[G_PIDS] += 1
    pnow[r] = now
    plan_id = g[G_PIDS]
    si[r, PLAN_ID] = plan_id
    queue = pqueue[r]
    n = _build_queue(si, slot_job, slot_alive, prim, order, s, extra, extra_key, queue, eq, eqn, held)
    si[r, PLAN_N] = n
    for x in range(n):
        q = queue[x]
        pid[r, q] = plan_id
        pstate[r, q] = 3 if local == LOCAL_CONSERVATIVE else 5
        ppos[r, q] = x
    free_now = si[s, FREE]
    cap = si[s, CAP]
    m = si[s, NRUN]
    rel_end = scratch_f[:m]
    rel_procs = scratch_i[:m]
    for k in range(m):
        q = run_list[s, k]
        rel_end[k] = exp_end[q]
        rel_procs[k] = procs[q]
    durations = est[s]
    ns = 0
    if local == LOCAL_CONSERVATIVE:
        steps = base_profile(now, free_now, rel_end, rel_procs, times[r], frees[r], ptz[r])
        ptz[r, 1] = 0.0  # the memo emptied
        pints[r, 0] = steps
        pints[r, 1] = 0
        pints[r, 2] = free_now
        pints[r, 3] = 0
        pints[r, 4] = 0
        for p in range(cap + 1):
            ff[r, p] = -np.inf
        bits = 0
        v = 2 * n + 1
        while v > 0:
            bits += 1
            v >>= 1
        table = 1 << max(4, bits)
        si[r, TABLE] = table
        pints[r, GEN] += 1  # (the shape tables emptied)
        ns = _early_stop_pass(
            r, s, ZERO, now, si, g, procs, est, pqueue, pstarts, pstate, pstart, times, frees, pints, ptz, ff,
            shape_p, shape_d, shape_start, pdef, pbound,
        )  # fmt: skip
    else:
        free = free_now
        i = 0
        while i < n and procs[queue[i]] <= free:
            q = queue[i]
            pstate[r, q] = 4
            pstarts[r, ns] = q
            ns += 1
            free -= procs[q]
            i += 1
        if i < n:
            head = queue[i]
            # EasyBackfill._shadow: the result depends only on the multiset of releases.
            need = procs[head]
            new_end = np.empty(ns, dtype=np.float64)
            new_procs = np.empty(ns, dtype=np.int64)
            for k in range(ns):
                q = pstarts[r, k]
                new_end[k] = now + durations[q]
                new_procs[k] = procs[q]
            ro = np.argsort(rel_end, kind="mergesort")
            no = np.argsort(new_end, kind="mergesort")
            avail = free
            shadow = now
            a = 0
            b = 0
            while avail < need:
                t_run = rel_end[ro[a]] if a < m else np.inf
                t_new = new_end[no[b]] if b < ns else np.inf
                if t_run <= t_new:
                    if a >= m:
                        g[G_ERROR] = ERR_NO_END
                        return
                    shadow = t_run if t_run > now else now
                    avail += rel_procs[ro[a]]
                    a += 1
                else:
                    shadow = t_new
                    avail += new_procs[no[b]]
                    b += 1
            while a < m and (rel_end[ro[a]] if rel_end[ro[a]] > now else now) == shadow:
                avail += rel_procs[ro[a]]
                a += 1
            while b < ns and new_end[no[b]] == shadow:
                avail += new_procs[no[b]]
                b += 1
            extra_p = avail - need
            pstate[r, head] = 0
            pstart[r, head] = shadow
            for x in range(i + 1, n):
                if free == 0:
                    break
                q = queue[x]
                p = procs[q]
                if p > free:
                    continue
                if now + durations[q] <= shadow:
                    pstate[r, q] = 4
                    pstarts[r, ns] = q
                    ns += 1
                    free -= p
                elif p <= extra_p:
                    pstate[r, q] = 4
                    pstarts[r, ns] = q
                    ns += 1
                    free -= p
                    extra_p -= p
            # starts in queue order (the backfilled ones follow the head's prefix already)
    si[r, PLAN_NSTARTS] = ns


@njit(cache=True, nogil=True)
def _cannot_end_by(
    r: int,
    t: int,
    o: int,
    reach: float,
    procs: np.ndarray,
    est: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    pnow: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> bool:
    """Whether job ``o``, not placed yet in plan row ``r`` (site ``t``, state 3), surely has no
    window there ending before ``reach``: its first fit in the row's profile as it is, from the
    row's instant (from its bound if it was put off), ends at or after ``reach``.

    Exact. Such a fit is a lower bound of its start in the pass: the profile lacks only the
    windows of jobs ahead of ``o`` not placed yet (not looked at, or put off), so it has no fewer
    processors free than the one ``o`` is placed in; if ``o`` was put off, jobs behind it may be
    placed, but every such window ends by ``o``'s bound (see
    :func:`~metasched.policy.local._conservative_kernel.place`), so from the bound on that still
    holds. ``False`` (placing decides) when ``o`` is neither ahead of the cursor nor in the
    deferred list, or has no fit at all."""
    after = pnow[r]
    x = ppos[r, o]
    if x < pints[r, 1]:
        bound = _deferred_bound(pints[r], pdef[r], pbound[r], x)
        if bound != bound:
            return False  # (looked at and not put off: placing decides)
        if bound > after:
            after = bound
    d = est[t, o]
    start = first_fit(times[r], frees[r], pints[r, 0], after, procs[o], d)
    return start < np.inf and start + d >= reach


@njit(cache=True, nogil=True)
def _place_to(
    r: int,
    s: int,
    q: int,
    si: np.ndarray,
    g: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
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
    reach: float,
) -> None:
    """``_ColumnPass.place_slot``: place plan row ``r`` (a pass at site ``s``) up to and
    including job ``q``, at the pass's own instant ``pnow[r]`` (its profile starts there).
    With ``reach`` < ``inf``, ``q`` is placed only if its window may end before ``reach``
    (else it stays in state 3; see :func:`~metasched.policy.local._conservative_kernel.place`)."""
    # never stop early (empty bounds: an empty view of a row array, of the same type as the bounds
    # of :func:`_plan`, allocates nothing on this hot path; a global empty array would be read-only
    # to numba and give ``place`` a second compiled copy)
    never = pbound[r, :0]
    code = _place_row(
        r, s, pnow[r], ppos[r, q] + 1, si, procs, est, pqueue, pstate, pstart, times, frees, pints, ptz, ff,
        shape_p, shape_d, shape_start, pdef, pbound, never, never, reach,
    )  # fmt: skip
    if code != 0:
        g[G_ERROR] = ERR_NO_END


@njit(cache=True, nogil=True)
def _place_unless_too_late(
    r: int,
    t: int,
    o: int,
    reach: float,
    si: np.ndarray,
    g: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
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
) -> None:
    """:func:`_place_to` plan row ``r`` (site ``t``) up to job ``o`` (state 3 there) with ``reach``,
    unless :func:`_cannot_end_by` already shows that ``o``'s window cannot end before ``reach``:
    then ``o`` stays in state 3, which answers as placing would (placing leaves it there, or places
    it no earlier, where its window still ends at or after ``reach``)."""
    if not _cannot_end_by(r, t, o, reach, procs, est, ppos, times, frees, pints, pnow, pdef, pbound):
        _place_to(
            r, t, o, si, g, procs, est, pqueue, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff,
            shape_p, shape_d, shape_start, pdef, pbound, reach,
        )  # fmt: skip


@njit(cache=True, nogil=True)
def _retime_row(
    r: int, s: int, now: float, si: np.ndarray, pnow: np.ndarray, times: np.ndarray, pints: np.ndarray,
    ff: np.ndarray, pbound: np.ndarray,
) -> bool:  # fmt: skip
    """Site ``s``'s plan row ``r`` (its spare, or its plan in :func:`_revise`), a pass of its queue
    made at an earlier instant, made a pass at ``now``
    (:func:`~metasched.policy.local._conservative_kernel.retime`); ``False`` when it cannot be. The
    condition holds: the spare is kept only while no job queued there could start (each copy put
    into it was refused if it could start now, and a scheduling pass that found a job to start made
    a new plan), and nothing else changed at the site (for the plan, see :func:`_revise`). Any job
    placed in the row from then on gets its first fit from ``now`` (without this, a job placed
    later, behind a copy put in since, could get a start before ``now``). A retimed spare is no
    longer a pass made now (``SWAP`` cleared)."""
    if pnow[r] >= now:
        return True
    if not retime(times[r], pints[r], ff[r, : si[s, CAP] + 1], pbound[r], now):
        return False
    pnow[r] = now
    if r == si[s, SPARE]:
        si[s, SWAP] = 0
    return True


@njit(cache=True, nogil=True)
def _cut_to(
    r: int,
    s: int,
    at: int,
    first: int,
    si: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> None:
    """Plan row ``r`` (site ``s``): the windows from queue position ``at`` on are taken back
    (:func:`~metasched.policy.local._conservative_kernel.cut`; ``at`` = the queue's length: none),
    the jobs the row started from there on (running: their windows stay) leave its queue, so that a
    pass going on from the cut does not place them again, as do the jobs whose ``pid`` the caller
    cleared (all at or behind ``first``; the queue's length: none). The caller has checked that none
    of the started ones is still to start (:func:`_cut_behind`, :func:`_revise`). (The queue is
    compacted only from the first job that leaves it, and not at all when none does: most cuts.)"""
    queue = pqueue[r]
    placed = pints[r, 1]
    if at < si[r, PLAN_N]:
        _cut_row(r, s, at, si, procs, est, pqueue, pstate, pstart, times, frees, pints, ptz, ff, pdef, pbound)
    for x in range(at, placed):
        if pstate[r, queue[x]] == 4:
            pid[r, queue[x]] = -1
            if x < first:
                first = x
    if first < si[r, PLAN_N]:
        _drop_gone(r, first, si, pqueue, pid, ppos, pints, pdef, pbound)


@njit(cache=True, nogil=True)
def _cut_behind(
    r: int,
    s: int,
    pos: int,
    si: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    held: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
    cut_ok: bool,
) -> int:
    """Make plan row ``r`` (site ``s``) hold no window of a job queued at or behind position
    ``pos``. 0: it held none; 1: it held reservations there and they were taken back
    (:func:`~metasched.policy.local._conservative_kernel.cut`; only with ``cut_ok``, else
    nothing is changed); -1: a job there is still to start at the row's instant (state 4, still
    queued), which cannot be taken back (nothing changed). (A job the row started is running:
    its window is the one a pass now has for it.)"""
    found = 0
    for x in range(pos, pints[r, 1]):
        q = pqueue[r, x]
        st = pstate[r, q]
        if st == 4 and held[s, q]:
            return -1
        if st == 0 or st == 1:
            found = 1
    if found and cut_ok:
        si[s, SWAP] = 0
        pints[r, STOP] = STOP_UNKNOWN
        # (the jobs started from ``pos`` on leave the row's queue, as they left the site's)
        _cut_to(r, s, pos, si[r, PLAN_N], si, procs, est, pqueue, pid, pstate, pstart, ppos, times, frees, pints,
                ptz, ff, pdef, pbound)  # fmt: skip
    return found


@njit(cache=True, nogil=True)
def _prefix_to(
    r: int,
    s: int,
    key: float,
    order: int,
    cut_ok: bool,
    si: np.ndarray,
    prim: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    held: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> int:
    """The position a newer job of efficacy key ``key`` takes in plan row ``r``'s queue (site
    ``s``; FCFS: last), with the row holding no window of a job behind it (:func:`_cut_behind`,
    with ``cut_ok``): then the row's profile is the one a pass gives that job once the jobs ahead
    are placed (:func:`_fit_within` places them as far as needed). -1: the row cannot tell (a job
    behind is still to start at the row's instant); -2: jobs behind are placed and ``cut_ok`` is
    false (nothing taken back)."""
    n = si[r, PLAN_N]
    queue = pqueue[r]
    pos = _after_key(prim, s, queue, n, key) if order == ORDER_EFFICACY else n
    behind = _cut_behind(
        r, s, pos, si, procs, est, held, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, ff, pdef,
        pbound, cut_ok,
    )  # fmt: skip
    if behind < 0:
        return -1
    if behind > 0 and not cut_ok:
        return -2
    return pos


@njit(cache=True, nogil=True)
def _fit_within(
    r: int,
    s: int,
    pos: int,
    now: float,
    p: int,
    d: float,
    reach: float,
    si: np.ndarray,
    g: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    pqueue: np.ndarray,
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
) -> float:
    """The first fit from ``now`` of ``p`` processors for ``d`` in the profile a pass of site
    ``s`` gives the jobs ahead of queue position ``pos`` (read from plan row ``r``, which holds no
    window of a job at or behind ``pos``, see :func:`_prefix_to`), if that window ends before
    ``reach`` (``inf``: whatever its end); ``-inf`` when it does not (``inf``: the profile runs out
    first). The jobs ahead are placed only as far as that fit needs.

    Exact. The row's profile lacks only the windows of jobs ahead not placed: those not looked at
    yet, and the deferred ones, each starting at or after its bound, with every window placed
    behind a deferred job ending by its bound (see
    :func:`~metasched.policy.local._conservative_kernel.place`). So it has no fewer processors
    free than the exact profile and its first fit is a lower bound of the exact start: a window
    ending at or after ``reach`` there ends at or after it in the exact profile too (``-inf``).
    Once every job ahead was looked at, a fit whose window ends by the lowest bound of the
    deferred jobs ahead is free in the exact profile too, so it is the exact first fit (and the
    window, should the caller reserve it, keeps the deferred jobs' condition). Until then, rounds
    place more of the jobs ahead, with the fit's end ``e`` as the horizon: the jobs not looked at
    yet are looked at (``place``'s deferral, on demand with a reach twice as far from ``now`` as
    ``e``: a job with no fit starting before the horizon is put off with a bound); once all were,
    the deferred jobs are moved out to ``e``
    (:func:`~metasched.policy.local._conservative_kernel._advance`) and, every other round, those
    up to the last one whose bound is below ``e`` are placed, in queue order (``_resolve``).
    Rounds only add windows, so the fit only moves later (each round's search starts from the
    last fit), and each round looks at or places jobs or settles the fit: the rounds end.
    (Measured, BENCHMARKS.md, "Projections placed only as far as the fit needs": 21-33% fewer
    windows placed in the completion-time runs at load 2.0 than placing every job ahead.)"""
    start = first_fit(times[r], frees[r], pints[r, 0], now, p, d)
    advance = False  # (flipped every round, look rounds too: the advance and resolve rounds alternate)
    while True:
        if start == np.inf:
            return start  # (it runs out in a profile with no fewer processors free: so does the exact one)
        end = start + d
        if not end < reach:
            return -np.inf
        # (``last``: the position up to which a resolve round places the deferred jobs ahead)
        last = -1
        if pints[r, 1] >= pos:
            low, last = _deferred_ahead(r, pos, end, pints, pdef, pbound)
            if end <= low:
                return start
        advance = not advance
        if pints[r, 1] < pos:
            # (with a horizon twice as far from now as the fit's end: the fit moves later as the jobs
            # ahead are placed, and one near it leaves more jobs across it to place in later rounds)
            _place_to(
                r, s, pqueue[r, pos - 1], si, g, procs, est, pqueue, pstate, pstart, ppos, times, frees, pints, ptz,
                pnow, ff, shape_p, shape_d, shape_start, pdef, pbound, now + 2.0 * (end - now),
            )  # fmt: skip
            if g[G_ERROR] != 0:
                return np.inf
        else:
            n = pints[r, 0]
            queue = pqueue[r, : si[r, PLAN_N]]
            if advance:
                zero, _ = _advance(
                    times[r], frees[r], pints[r], ptz[r, 0], ptz[r, 1:], queue, procs, est[s], pstart[r],
                    pstate[r], pdef[r], pbound[r], pos, end,
                )  # fmt: skip
            else:
                table = si[r, TABLE]
                zero = _resolve(
                    times[r], frees[r], pints[r], ptz[r, 0], shape_p[r, : 2 * table], shape_d[r, : 2 * table],
                    shape_start[r, : 4 * table], queue, procs, est[s], pstart[r], pstate[r], pdef[r], pbound[r],
                    last + 1,
                )  # fmt: skip
            if pints[r, 0] == NO_END:
                pints[r, 0] = n
                g[G_ERROR] = ERR_NO_END
                return np.inf
            ptz[r, 0] = zero
        start = first_fit(times[r], frees[r], pints[r, 0], start, p, d)


@njit(cache=True, nogil=True)
def _start_from_plan(
    r: int,
    s: int,
    o: int,
    key: float,
    order: int,
    now: float,
    si: np.ndarray,
    g: np.ndarray,
    prim: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    exp_end: np.ndarray,
    run_list: np.ndarray,
    held: np.ndarray,
    pqueue: np.ndarray,
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
    cut_ok: bool,
    reach: float,
) -> float:
    """The start job ``o`` (efficacy key ``key`` there) would get in a conservative pass of site
    ``s`` now with it queued, read from plan row ``r``, a pass of the site's queue as it is (its
    latest plan while ``FRESH``, or the row ``CURRENT`` names); ``nan`` when that row cannot tell
    (then a projection pass is needed).

    Exact. While the queue and the running jobs are those of the row's pass (no end, no kill, no
    copy removed; a copy queued since is in the row, :func:`_insert_copy`; the row's own starts run
    exactly the windows it gave them), and no running job's expected end lies in ``(row's instant,
    now]``, every job the row placed starts after ``now`` and the profile from ``now`` on is the
    same, so a pass now would place the same jobs at the same starts (by induction over the queue:
    the same earliest fits). The jobs ahead of ``o`` in the queue with it are a prefix of the row's
    queue (the order's keys do not change); the row holds exactly that prefix once the windows of
    jobs behind it are taken back (:func:`_cut_behind`: only with ``cut_ok``, else ``-inf`` tells
    that a cut is needed; ``nan`` when it cannot be done). ``o``'s start is its first fit there,
    read by :func:`_fit_within`, which places the jobs ahead only as far as that fit needs (lazily,
    as any request would). With ``reach`` < ``inf`` (the copy counts only if its window ends
    before it), ``inf`` means that the window cannot end before ``reach``. (The driver
    refuses jobs that run longer than their estimates, so a running job never passes its expected
    end unseen; the check on expected ends only guards that argument.)"""
    then = pnow[r]
    for k in range(si[s, NRUN]):
        e = exp_end[run_list[s, k]]
        if then < e and e <= now:
            return np.nan
    if cut_ok and not _retime_row(r, s, now, si, pnow, times, pints, ff, pbound):
        return np.nan
    pos = _prefix_to(
        r, s, key, order, cut_ok, si, prim, procs, est, held, pqueue, pid, pstate, pstart, ppos, times, frees,
        pints, ptz, ff, pdef, pbound,
    )  # fmt: skip
    if pos == -1:
        return np.nan
    if pos == -2:
        return -np.inf
    start = _fit_within(
        r, s, pos, now, procs[o], est[s, o], reach, si, g, procs, est, pqueue, pstate, pstart, ppos, times,
        frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
    )  # fmt: skip
    if g[G_ERROR] != 0:
        return np.nan
    if start == -np.inf:
        return np.inf  # (its window cannot end before ``reach``)
    return start if start < np.inf else np.nan  # a profile that runs out: the pass reports it


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
def _insert_copy(
    r: int,
    s: int,
    o: int,
    now: float,
    order: int,
    si: np.ndarray,
    g: np.ndarray,
    prim: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    held: np.ndarray,
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
) -> bool:
    """Make plan row ``r``, a pass of site ``s``'s queue as it was (see :func:`_start_from_plan`),
    a pass of the queue with job ``o`` just queued there (key ``prim[s, o]``), without a new pass;
    ``False`` (row left unusable) when that cannot be done exactly.

    Exact, under the conditions of :func:`_start_from_plan`: the row is first retimed to ``now``
    (:func:`_retime_row`), the windows of jobs behind ``o``'s position are taken back
    (:func:`_cut_behind`), the jobs ahead are placed as far as ``o``'s fit needs
    (:func:`_fit_within`: a job ahead still deferred starts at or after ``o``'s window ends, the
    condition of deferred jobs); ``o`` is placed at its first fit from ``now`` (the start a pass
    now gives it) and the jobs behind it move back one position. Their placement is left
    lazy: a job behind ``o`` not placed yet was either never looked at or deferred with a bound, a
    first fit in a profile holding only windows of the jobs ahead of ``o`` and of running jobs,
    all of which a pass with ``o`` also holds for it (with ``o``'s window besides): it is still a
    lower bound of the job's start, and so are the pass's other search bounds (first instants
    with ``p`` free, starts of earlier jobs of the same shape) since the profile only loses
    processors. A copy that could start now seen from an older instant is refused (the driver
    re-plans the site now anyway). When nothing was taken back, the row may still be the pass a
    re-plan now makes (``SWAP``): the jobs behind ``o`` were deferred or behind the early stop,
    whose blocking windows all lie ahead of ``o``, so none of them can start now with ``o`` ahead
    either; ``o`` starts now (state 4, appended to the row's starts, still in queue order since
    none is behind it) when the row is a pass at ``now`` and ``o`` fits now."""
    made_now = pnow[r] == now
    if not _retime_row(r, s, now, si, pnow, times, pints, ff, pbound):
        return False
    pos = _prefix_to(
        r, s, prim[s, o], order, CUT_OK, si, prim, procs, est, held, pqueue, pid, pstate, pstart, ppos, times,
        frees, pints, ptz, ff, pdef, pbound,
    )  # fmt: skip
    if pos < 0:
        return False
    p = procs[o]
    start = _fit_within(
        r, s, pos, now, p, est[s, o], np.inf, si, g, procs, est, pqueue, pstate, pstart, ppos, times, frees, pints,
        ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
    )  # fmt: skip
    if start == np.inf:
        return False  # (the profile ran out, or the driver's error is set: the pass reports either)
    # (reserved at that fit: the first fit from it is itself)
    start = reserve(times[r], frees[r], pints[r], ptz[r], start, p, est[s, o])
    if start == np.inf or (start <= now and (not made_now or p > pints[r, 2])):
        return False  # (to start now, seen from an older instant: the driver re-plans here anyway)
    _queue_in(r, pos, o, si, pqueue, pid, ppos, pints)  # (the queue as the cut left it)
    for k in range(pints[r, 3], pints[r, 4]):
        if pdef[r, k] >= pos:
            pdef[r, k] += 1
    pints[r, 1] += 1
    pints[r, STOP] = STOP_UNKNOWN
    pstart[r, o] = start
    if start <= now:
        pstate[r, o] = 4
        pstarts[r, si[r, PLAN_NSTARTS]] = o
        si[r, PLAN_NSTARTS] += 1
        pints[r, 2] -= p
    else:
        pstate[r, o] = 0
    return True


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


@njit(cache=True, nogil=True)
def _take_out_copy(
    s: int,
    o: int,
    cur: int,
    si: np.ndarray,
    g: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    held: np.ndarray,
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
) -> bool:
    """Job ``o``'s copy has just left site ``s``'s queue (cancelled: it started elsewhere), whose
    current pass was in row ``cur`` (``CUR_ROW``/``CUR_SPARE``): make the spare a pass of the queue
    without it, keeping what was placed ahead of it (the driver's plan, a stale one other sites may
    still be answered from, is copied, not changed). ``False`` (spare left unusable) when that cannot
    be done exactly.

    Exact: a job's window never depends on jobs behind it, so the windows ahead of the copy stay;
    those from its position on are taken back (:func:`_cut_behind`; refused if a job there is still
    to start at the pass's instant, the copy included) and will be placed again on demand. If the
    copy held no window (not placed, or deferred), the profile is unchanged and so are the pass's
    search bounds; the deferred bounds behind it were first fits in a profile without its window
    (lower bounds still). The copy leaves the row's queue, the deferred list and the cursor move
    back by one behind it. The row keeps its instant (it is retimed when used, see
    :func:`_retime_row`)."""
    if cur == CUR_ROW:
        _copy_row(
            si[s, ROW], si[s, SPARE], si[s, CAP], si, g, pqueue, pstarts, pid, pstate, pstart, ppos, times, frees,
            pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound, WITH_TABLES,
        )  # fmt: skip
    r = si[s, SPARE]
    si[s, SWAP] = 0
    if pid[r, o] != si[r, PLAN_ID] or pstate[r, o] == 4:
        return False
    if _cut_behind(
        r, s, ppos[r, o], si, procs, est, held, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, ff,
        pdef, pbound, CUT_OK,
    ) < 0:  # fmt: skip
        return False
    pid[r, o] = -1
    _drop_gone(r, ppos[r, o], si, pqueue, pid, ppos, pints, pdef, pbound)
    return True


@njit(cache=True, nogil=True)
def _swap_in(s: int, now: float, si: np.ndarray, g: np.ndarray, pnow: np.ndarray) -> bool:
    """When site ``s``'s spare row holds a pass of its queue as it is at ``now`` (``CURRENT``),
    that row becomes its plan, counted as the pass it stands for (the driver re-plans here); the
    old plan's row becomes the spare. ``False``: nothing done, a pass is needed."""
    if si[s, CURRENT] != CUR_SPARE or not si[s, SWAP] or pnow[si[s, SPARE]] != now:
        return False
    r = si[s, SPARE]
    si[s, SPARE] = si[s, ROW]
    si[s, ROW] = r
    si[s, EXT] = 0
    g[G_PLANS] += 1
    return True


@njit(cache=True, nogil=True)
def _shrink(
    s: int,
    now: float,
    si: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    ext: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> bool:
    """:func:`_revise`'s copies taken out of site ``s``'s queue (the negative entries of ``ext[s]``):
    its plan (retimed to now) is cut back to the first of them that held a window (a start of the
    plan denied now included: its window is taken back as a reservation), and they leave its queue;
    ``True`` when the pass must go on from the cut: a window was taken back ahead of where the plan's
    pass stopped early (``STOP``).

    Exact. Ahead of that copy every window is the one a pass now gives (a job's window never depends
    on jobs behind it) and no job starts now (those that could were started, or denied: taken out).
    When the first window taken back lies at or behind the stop, the profile that stop was decided
    on is unchanged ahead of it and the early stop holds a pass no later than before
    (:func:`~metasched.policy.local._conservative_kernel.shortest_behind` over fewer jobs, with no
    more processors free), so nothing behind it can start now."""
    r = si[s, ROW]
    n = si[r, PLAN_N]
    first = n
    at = n  # the first position of a copy taken out that holds a window
    for a in range(si[s, EXT_N]):
        if ext[s, a] >= 0:
            continue
        c = -1 - ext[s, a]
        x = ppos[r, c]
        if x < first:
            first = x
        st = pstate[r, c]
        if st == 4:
            pstate[r, c] = 0  # its window (the plan's start, not taken) is taken back as a reservation
            st = 0
        if (st == 0 or st == 1) and x < at:
            at = x
        pid[r, c] = -1
    _cut_to(r, s, at, first, si, procs, est, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, ff, pdef,
            pbound)  # fmt: skip
    pints[r, 2] = si[s, FREE]
    return at < n and at < pints[r, STOP]


@njit(cache=True, nogil=True)
def _extend(
    s: int,
    now: float,
    order: int,
    go_on: bool,
    si: np.ndarray,
    prim: np.ndarray,
    held: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    ext: np.ndarray,
    pqueue: np.ndarray,
    pid: np.ndarray,
    pstate: np.ndarray,
    pstart: np.ndarray,
    ppos: np.ndarray,
    times: np.ndarray,
    frees: np.ndarray,
    pints: np.ndarray,
    ptz: np.ndarray,
    ff: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
) -> int:
    """:func:`_revise`'s copies queued at site ``s`` (the entries ``>= 0`` of ``ext[s]``, in the order
    they were queued) put into its plan (retimed to now, any copies taken out already gone), where
    the queue order puts them (last with FCFS; after every job of a key up to its own with efficacy,
    as the newest job). When none of them may start now and all go behind the pass's cursor (and
    the pass need not ``go_on`` for other reasons), they are not placed: 0. Otherwise the plan is
    cut back to the first of them if it lies ahead of the cursor (:func:`_cut_to`) and the pass is
    to go on from the cursor: 1. -1: not done exactly (the row may be left changed).

    Exact: no job of the plan's queue can start now (see :func:`_revise`). A copy cannot start now
    if fewer processors are really free than it needs, or if the profile, holding the windows of
    jobs ahead of it only (those placed so far), has a step with none free before the copy's window
    would end (the module's stopping rule of :mod:`~metasched.policy.local._conservative_kernel`;
    the caller refuses zero-width copies, which fit anywhere); windows placed later only take
    processors away. Behind the pass's cursor no job is placed (the deferred ones are ahead of it),
    so no placed window ignores a copy put there; jobs behind it move back one position. What the
    new pass would place up to its early stop is placed on demand instead, to the same starts."""
    r = si[s, ROW]
    k = si[s, EXT_N]
    free = pints[r, 2]
    zero = ptz[r, 0]
    for a in range(k):
        c = ext[s, a]
        if c >= 0 and procs[c] <= free and zero >= now + est[s, c]:
            go_on = True  # it may start now
    queue = pqueue[r]
    n = si[r, PLAN_N]
    placed = pints[r, 1]
    at = n  # the first position a copy goes to
    if order == ORDER_EFFICACY:
        for a in range(k):
            if ext[s, a] >= 0:
                pos = _after_key(prim, s, queue, n, prim[s, ext[s, a]])
                if pos < at:
                    at = pos
    if at < placed:
        for x in range(at, placed):
            if pstate[r, queue[x]] == 4 and held[s, queue[x]]:
                return -1  # (a start still to be taken: not handled)
        go_on = True
        _cut_to(r, s, at, n, si, procs, est, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, ff,
                pdef, pbound)  # fmt: skip
    elif not go_on and pints[r, 1] > pints[r, STOP]:
        # a copy refused for the windows placed (on demand) behind the early stop no longer has the
        # stop's reason: where the pass stopped is no longer a place from which on nothing can start
        # whatever is taken back behind it (see :func:`_shrink`)
        for a in range(k):
            if ext[s, a] >= 0 and procs[ext[s, a]] <= free:
                pints[r, STOP] = STOP_UNKNOWN
                break
    for a in range(k):
        c = ext[s, a]
        if c < 0:
            continue
        n = si[r, PLAN_N]
        pos = _after_key(prim, s, queue, n, prim[s, c]) if order == ORDER_EFFICACY else n
        if pos < pints[r, 1]:
            return -1
        _queue_in(r, pos, c, si, pqueue, pid, ppos, pints)
        pstate[r, c] = 3
    return 1 if go_on else 0


@njit(cache=True, nogil=True)
def _revise(
    s: int,
    now: float,
    order: int,
    si: np.ndarray,
    g: np.ndarray,
    prim: np.ndarray,
    held: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    ext: np.ndarray,
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
) -> bool:
    """The driver's new pass at site ``s`` (conservative), made from its plan when nothing changed
    there since that plan's pass but copies queued there or taken out of its queue (``EXT``: listed
    in ``ext[s]``, a copy taken out as ``-1 - job``), after every start of the plan was taken
    (started or denied): the plan is retimed to now, the copies taken out leave it
    (:func:`_shrink`), the copies queued go in (:func:`_extend`), and where either needs it the pass
    goes on with its early stop from the cut, as a pass does. Counted as the pass it stands for;
    ``False`` (the row may be left changed: the caller makes a new pass into it) when that cannot be
    done exactly.

    Exact: the jobs of the plan's queue could not start at its instant (those that could did: the
    pass's starts, now running, keep their windows as running jobs, or were denied: taken out) and
    cannot now (:func:`_retime_row`: the profile is the same from now on, and no job could start
    since the plan's instant: the site is re-planned, or found to fit nothing, at every instant it
    is touched). A job's window never depends on jobs behind it, so ahead of the first change
    every window is the one a pass now gives; the deferred jobs there keep their bounds (see
    ``cut``). A pass goes on from a cut as from its own cursor, except that the horizon (the instant
    before which the profile is exact, see
    :func:`~metasched.policy.local._conservative_kernel.place`) must not pass a deferred job's
    bound: the longest estimates behind each position are clipped to the lowest bound (a nearer
    horizon only defers less, the same starts; :func:`_early_stop_pass`). A pass that stops early
    ahead of the cut starts nothing behind it (the stopping rule is exact), so going on from there
    finds the starts a pass now finds."""
    if not si[s, EXT] or si[s, EXT_N] == 0:
        return False
    r = si[s, ROW]
    plan_id = si[r, PLAN_ID]
    k = si[s, EXT_N]
    for a in range(si[r, PLAN_NSTARTS]):
        if held[s, pstarts[r, a]]:
            return False  # a start of the plan not taken yet
    removed = False
    queued = False
    for a in range(k):
        c = ext[s, a]
        if c >= 0:
            queued = True
            if procs[c] == 0:
                return False
            continue
        c = -1 - c
        removed = True
        if pid[r, c] != plan_id or (pstate[r, c] == 4 and pnow[r] != now):
            return False  # (a start of the plan taken back from a later instant: not handled)
    if not _retime_row(r, s, now, si, pnow, times, pints, ff, pbound):
        return False
    go_on = False
    if removed:
        go_on = _shrink(s, now, si, procs, est, ext, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, ff,
                        pdef, pbound)  # fmt: skip
    if queued:
        code = _extend(
            s, now, order, go_on, si, prim, held, procs, est, ext, pqueue, pid, pstate, pstart, ppos, times, frees,
            pints, ptz, ff, pdef, pbound,
        )  # fmt: skip
        if code < 0:
            return False
        go_on = code == 1
    ns = 0
    if go_on:
        pints[r, 2] = si[s, FREE]
        ns = _early_stop_pass(
            r, s, pints[r, 1], now, si, g, procs, est, pqueue, pstarts, pstate, pstart, times, frees, pints, ptz, ff,
            shape_p, shape_d, shape_start, pdef, pbound,
        )  # fmt: skip
    si[r, PLAN_NSTARTS] = ns
    si[s, EXT_N] = 0
    g[G_PLANS] += 1
    return True


@njit(cache=True, nogil=True)
def _planned(s: int, si: np.ndarray) -> None:
    """After the driver's new pass at site ``s`` (in its plan row): that pass is the site's current
    one, unless the spare is current and the pass starts no job. Then the spare stays current,
    with the placements made in it since (projections read it, while a new pass is placed only
    as far as its starts are known): a pass that starts nothing changes neither the queue nor the
    running jobs, so the spare is still a pass of them. (A pass that starts jobs while the spare
    is current does happen: a spare made now by a projection, holding jobs that start now, then
    cut by a copy put in ahead of them.) The plan is then open to :func:`_revise` (``EXT``)."""
    if si[s, CURRENT] != CUR_SPARE or si[si[s, ROW], PLAN_NSTARTS] > 0:
        si[s, CURRENT] = CUR_ROW
    si[s, EXT] = 1
    si[s, EXT_N] = 0


@njit(cache=True, nogil=True)
def _new_pass(
    s: int,
    now: float,
    local: int,
    order: int,
    si: np.ndarray,
    g: np.ndarray,
    slot_job: np.ndarray,
    slot_alive: np.ndarray,
    prim: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    exp_end: np.ndarray,
    run_list: np.ndarray,
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
    scratch_f: np.ndarray,
    scratch_i: np.ndarray,
    pdef: np.ndarray,
    pbound: np.ndarray,
    eq: np.ndarray,
    eqn: np.ndarray,
    held: np.ndarray,
    ext: np.ndarray,
) -> None:
    """The driver's new pass at site ``s`` (it was touched since its plan), into its plan row
    ``si[s, ROW]``, then ``FRESH``: the spare when it is that very pass (:func:`_swap_in`), else
    the plan revised when only copies were queued there or left its queue (:func:`_revise`,
    conservative only, when that is exact), else a pass (:func:`_plan`); each counted as one."""
    if _swap_in(s, now, si, g, pnow):
        si[s, CURRENT] = CUR_ROW
    else:
        if local != LOCAL_CONSERVATIVE or not _revise(
            s, now, order, si, g, prim, held, procs, est, ext, pqueue, pstarts, pid, pstate, pstart, ppos, times,
            frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
        ):  # fmt: skip
            _plan(
                si[s, ROW], s, NO_JOB, 0.0, local, order, now, si, g, slot_job, slot_alive, prim, procs, est,
                exp_end, run_list, pqueue, pstarts, pid, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff,
                shape_p, shape_d, shape_start, scratch_f, scratch_i, pdef, pbound, eq, eqn, held,
            )  # fmt: skip
        _planned(s, si)
    si[s, FRESH] = 1


@njit(cache=True, nogil=True)
def run_loop(
    submit: np.ndarray,
    procs: np.ndarray,
    est: np.ndarray,
    run: np.ndarray,
    site_procs: np.ndarray,
    k_sites: int,
    selection: int,
    decide: int,
    local: int,
    order: int,
    start_time: np.ndarray,
    end_time: np.ndarray,
    site_of: np.ndarray,
    run_time: np.ndarray,
    n_copies: np.ndarray,
    messages: np.ndarray,
    attempts: np.ndarray,
    sf: np.ndarray,
    g: np.ndarray,
    gf: np.ndarray,
    lg: np.ndarray,
    lgt: np.ndarray,
) -> None:
    """Run the jobs (``submit`` sorted with their ``(submit_time, job_id)``; ``est``/``run``
    ``[site, job]`` scaled to each site, transfer included) to completion under the scheme given
    by ``k_sites``, ``selection``, ``decide``, ``local`` and ``order``: ``_Driver.run``. Fills
    the per-job outputs, ``sf[:, BUSY]``, ``g`` (plans, denials, kills) and ``gf[GF_WASTED]``;
    ``g[G_ERROR]`` non-zero when the driver would have raised. With ``lg`` not empty, logs every
    event as ``(kind, job, site)`` rows with their instants in ``lgt``."""
    n = submit.shape[0]
    S = site_procs.shape[0]
    max_cap = 0
    for s in range(S):
        if site_procs[s] > max_cap:
            max_cap = site_procs[s]
    si = np.zeros((2 * S, N_SI), dtype=np.int64)
    for s in range(S):
        si[s, CAP] = site_procs[s]
        si[s, FREE] = site_procs[s]
        si[s, ROW] = s
        si[s, SPARE] = S + s
    held = np.zeros((S, n), dtype=np.int8)
    ext = np.zeros((S, EXT_CAP), dtype=np.int64)
    prim = np.zeros((S, n), dtype=np.float64)
    slot_job = np.zeros((S, n + 1), dtype=np.int64)
    slot_alive = np.zeros((S, n + 1), dtype=np.int8)
    slot_of = np.zeros((S, n), dtype=np.int64)
    wc = np.zeros((S, max_cap + 2), dtype=np.int64)
    run_list = np.zeros((S, n), dtype=np.int64)
    run_pos = np.zeros(n, dtype=np.int64)
    run_site = np.full(n, -1, dtype=np.int64)
    run_start = np.zeros(n, dtype=np.float64)
    run_token = np.zeros(n, dtype=np.int64)
    exp_end = np.zeros(n, dtype=np.float64)
    pqueue = np.zeros((2 * S, n + 1), dtype=np.int64)
    pstarts = np.zeros((2 * S, n + 1), dtype=np.int64)
    pid = np.full((2 * S, n), -1, dtype=np.int64)
    pstate = np.full((2 * S, n), 2, dtype=np.int8)
    pstart = np.zeros((2 * S, n), dtype=np.float64)
    ppos = np.zeros((2 * S, n), dtype=np.int64)
    steps_cap = 3 * n + 4
    times = np.zeros((2 * S, steps_cap), dtype=np.float64)
    frees = np.zeros((2 * S, steps_cap), dtype=np.int64)
    pints = np.zeros((2 * S, N_PINTS), dtype=np.int64)
    pints[:, GEN] = 1  # (above the -1 of every empty slot of ``shape_p``)
    # a plan row's floats: the first instant with none free, then the pass's memo (see ``place``)
    ptz = np.zeros((2 * S, 1 + MEMO_SIZE), dtype=np.float64)
    pnow = np.zeros(2 * S, dtype=np.float64)
    # a plan row's first instant with ``p`` free, then the step hints (see ``place``)
    ff = np.zeros((2 * S, 2 * (max_cap + 1)), dtype=np.float64)
    bits = 0
    v = 2 * (n + 1) + 1
    while v > 0:
        bits += 1
        v >>= 1
    tmax = 1 << max(4, bits)
    shape_p = np.full((2 * S, 2 * tmax), -1, dtype=np.int64)
    shape_d = np.zeros((2 * S, 2 * tmax), dtype=np.float64)
    shape_start = np.zeros((2 * S, 4 * tmax), dtype=np.float64)  # (twice the table: the step hints)
    pdef = np.zeros((2 * S, n + 1), dtype=np.int64)
    eq = np.zeros((S, n), dtype=np.int64)
    eqn = np.zeros(S, dtype=np.int64)
    pbound = np.zeros((2 * S, n + 1), dtype=np.float64)
    scratch_f = np.zeros(n + 1, dtype=np.float64)
    scratch_i = np.zeros(n + 1, dtype=np.int64)
    ht = np.zeros(n * S + 1, dtype=np.float64)
    hs = np.zeros(n * S + 1, dtype=np.int64)
    hj = np.zeros(n * S + 1, dtype=np.int64)
    views_v = np.zeros(S, dtype=np.float64)
    views_s = np.zeros(S, dtype=np.int64)
    elig = np.zeros(S, dtype=np.int64)
    chosen = np.zeros(S, dtype=np.int64)
    off_site = np.zeros(S, dtype=np.int64)
    off_est = np.zeros(S, dtype=np.float64)
    off_start = np.zeros(S, dtype=np.float64)
    off_run = np.zeros(S, dtype=np.int8)
    projected = np.zeros(S, dtype=np.int8)
    best_v = np.zeros(S, dtype=np.float64)
    best_s = np.zeros(S, dtype=np.int64)
    # a pass of each site's queue as it is now is kept only where projections read it
    track = local == LOCAL_CONSERVATIVE and selection == SELECT_COMPLETION and k_sites < S

    nxt = ZERO  # (not a literal, see ``i64``)
    while nxt < n or g[G_HEAP] > 0:
        t_submit = submit[nxt] if nxt < n else np.inf
        t_end = ht[0] if g[G_HEAP] > 0 else np.inf
        now = t_submit if t_submit < t_end else t_end
        gf[GF_NOW] = now
        # -- ends --
        while g[G_HEAP] > 0 and ht[0] == now:
            o = hj[0]
            token = hs[0]
            _heap_pop(ht, hs, hj, g)
            if run_site[o] < 0 or run_token[o] != token:
                continue  # the end of a killed copy
            # _release(o, "end")
            s = run_site[o]
            p = procs[o]
            _release(o, s, p, now, si, sf, est, run_start, run_list, run_pos, run_site)
            _log(lg, lgt, g, now, EV_END, o, s)
            end_time[o] = now
            for t in range(S):
                if held[t, o]:
                    _remove_copy(
                        si, sf, slot_job, slot_alive, slot_of, wc, held, est, lg, lgt, g, ext, now, EV_CANCEL, o, t, p
                    )
                    messages[o] += 1
        # -- submissions --
        while nxt < n and submit[nxt] == now:
            o = nxt
            nxt += 1
            p = procs[o]
            ne = ZERO
            fastest = np.inf
            for s in range(S):
                if p <= site_procs[s]:
                    elig[ne] = s
                    ne += 1
                    if est[s, o] < fastest:
                        fastest = est[s, o]
            want = selection == SELECT_COMPLETION and k_sites < ne
            if want:
                # projections fastest site first (the copy's estimate there, then the index):
                # the k best come early, so the later ones are placed only as far as they matter
                for a in range(ne):
                    views_v[a] = est[elig[a], o]
                _sort_by_value(views_v, elig, ne)
            for t in range(S):
                projected[t] = 0
            for e in range(ne):
                s = elig[e]
                views_s[e] = s
                key = -(fastest / est[s, o])  # the copy's efficacy key there, for a projection
                projected[s] = 0
                start = np.nan
                # Only the k best (completion, site) are kept: once k are known, a site's
                # projection matters only if it beats the k-th best so far (strictly, or
                # equal with a lower index), and is placed only that far (reach); otherwise
                # it is not among the k (inf).
                reach = np.inf
                if want and e >= k_sites:
                    for a in range(e):
                        best_v[a] = views_v[a]
                        best_s[a] = views_s[a]
                    _sort_by_value(best_v, best_s, e)
                    kth_v = best_v[k_sites - 1]
                    kth_s = best_s[k_sites - 1]
                    reach = kth_v if s > kth_s else np.nextafter(kth_v, np.inf)
                if want and local == LOCAL_CONSERVATIVE and si[s, CURRENT] != CUR_NONE:
                    spare = si[s, CURRENT] == CUR_SPARE
                    r = si[s, SPARE] if spare else si[s, ROW]
                    start = _start_from_plan(
                        r, s, o, key, order, now, si, g, prim, procs, est,
                        exp_end, run_list, held, pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff,
                        shape_p, shape_d, shape_start, pdef, pbound, spare, reach,
                    )  # fmt: skip
                    if start == -np.inf:
                        # the site's plan holds jobs behind the copy: a copy of it is cut back instead
                        _copy_row(
                            si[s, ROW], si[s, SPARE], si[s, CAP], si, g, pqueue, pstarts, pid, pstate, pstart, ppos,
                            times, frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                            NO_TABLES,
                        )  # fmt: skip
                        si[s, CURRENT] = CUR_SPARE
                        si[s, SWAP] = 0
                        start = _start_from_plan(
                            si[s, SPARE], s, o, key, order, now, si, g, prim, procs, est, exp_end, run_list, held,
                            pqueue, pid, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff, shape_p, shape_d,
                            shape_start, pdef, pbound, CUT_OK, reach,
                        )  # fmt: skip
                if want and start == start:
                    # the projection read from the site's plan: counted as the pass it stands for
                    g[G_PLANS] += 1
                    g[G_PIDS] += 1
                    views_v[e] = start + est[s, o]
                elif want:
                    # _projected_completion(s, copy): a pass with the copy queued last, in the site's
                    # spare row (kept as its current pass if the copy is queued there, below)
                    if si[s, CURRENT] == CUR_SPARE:
                        si[s, CURRENT] = CUR_NONE
                    r = si[s, SPARE]
                    projected[s] = 1
                    _plan(
                        r, s, o, key, local, order, now, si, g, slot_job, slot_alive, prim,
                        procs, est, exp_end, run_list, pqueue, pstarts, pid, pstate, pstart, ppos, times, frees,
                        pints, ptz, pnow, ff, shape_p, shape_d, shape_start, scratch_f, scratch_i, pdef, pbound,
                        eq, eqn, held,
                    )  # fmt: skip
                    st = pstate[r, o]
                    if st == 3:
                        # (left unplaced when its first fit in the pass as it is already ends at or
                        # after the reach: its value is then inf instead of a start + estimate at or
                        # past the reach, not among the k best either way)
                        _place_unless_too_late(
                            r, s, o, reach, si, g, procs, est, pqueue, pstate, pstart, ppos, times, frees, pints,
                            ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                        )  # fmt: skip
                        st = pstate[r, o]
                    if st == 4:
                        start = now
                    elif st == 0:
                        start = pstart[r, o]
                    elif st == 3 and reach < np.inf:
                        start = np.inf
                    else:
                        # the driver's fallback (a conservative projection) is never needed by
                        # the schemes this loop supports: refuse rather than guess
                        g[G_ERROR] = ERR_NEVER_RAN
                        return
                    views_v[e] = start + est[s, o]
                else:
                    views_v[e] = (sf[s, QWORK] + sf[s, RWORK] - now * si[s, RUN_PROCS]) / site_procs[s]
            # choose: sort by (value, index), keep the first k
            _sort_by_value(views_v, views_s, ne)
            nc = k_sites if k_sites < ne else ne
            for c in range(nc):
                chosen[c] = views_s[c]
            if want:
                messages[o] += 2 * ne
            best = np.inf
            for c in range(nc):
                if est[chosen[c], o] < best:
                    best = est[chosen[c], o]
            # sorted(chosen)
            for a in range(1, nc):
                vs = chosen[a]
                b = a - 1
                while b >= 0 and chosen[b] > vs:
                    chosen[b + 1] = chosen[b]
                    b -= 1
                chosen[b + 1] = vs
            for c in range(nc):
                s = chosen[c]
                prim[s, o] = -(best / est[s, o])
                _queue_add(si, slot_job, slot_alive, slot_of, wc, s, o, p)
                if order == ORDER_EFFICACY:
                    _eq_insert(eq, eqn, prim, s, o)
                sf[s, QWORK] += p * est[s, o]
                held[s, o] = 1
                if si[s, EXT]:
                    if si[s, EXT_N] < EXT_CAP:
                        ext[s, si[s, EXT_N]] = o
                        si[s, EXT_N] += 1
                    else:
                        si[s, EXT] = 0
                si[s, FRESH] = 0
                si[s, DIRTY] = 1
                _log(lg, lgt, g, now, EV_SUBMIT, o, s)
                # the site's current pass, for the next projections: the projection's own pass if
                # it had the copy where it now is and placed it, or the copy put into the one kept
                cur = si[s, CURRENT]
                si[s, CURRENT] = CUR_NONE
                r = si[s, SPARE]
                if not track:
                    continue
                if projected[s] and prim[s, o] == -(fastest / est[s, o]) and (pstate[r, o] == 0 or pstate[r, o] == 4):
                    si[s, CURRENT] = CUR_SPARE
                    si[s, SWAP] = 1
                elif cur != CUR_NONE:
                    if cur == CUR_ROW:
                        si[s, SWAP] = 0
                        _copy_row(
                            si[s, ROW], r, si[s, CAP], si, g, pqueue, pstarts, pid, pstate, pstart, ppos, times, frees,
                            pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound, WITH_TABLES,
                        )  # fmt: skip
                    if _insert_copy(
                        r, s, o, now, order, si, g, prim, procs, est, held, pqueue, pstarts, pid, pstate, pstart, ppos,
                        times, frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                    ):  # fmt: skip
                        si[s, CURRENT] = CUR_SPARE
            n_copies[o] = nc
        # -- scheduling passes --
        while True:
            s = -1
            for t in range(S):
                if si[t, DIRTY]:
                    s = t
                    break
            if s < 0:
                break
            si[s, DIRTY] = 0
            # _process(s)
            if si[s, QCOUNT] == 0 or _min_width(wc, s, si[s, CAP]) > si[s, FREE]:
                continue
            if not si[s, FRESH]:
                _new_pass(
                    s, now, local, order, si, g, slot_job, slot_alive, prim, procs, est, exp_end, run_list, pqueue,
                    pstarts, pid, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff, shape_p, shape_d,
                    shape_start, scratch_f, scratch_i, pdef, pbound, eq, eqn, held, ext,
                )  # fmt: skip
            rs = si[s, ROW]
            denied = False
            for x in range(si[rs, PLAN_NSTARTS]):
                o = pstarts[rs, x]
                if not held[s, o]:
                    continue
                p = procs[o]
                m = 0
                # a copy at a site looked at already completes before this one would: this one
                # does not start, whatever the sites after it answer (both completion rules)
                settled = False
                for t in range(S):
                    if t == s or not held[t, o]:
                        continue
                    # _expected_start(t, o). Placing a plan further is lazy work with no other
                    # effect, so it is skipped where the answer cannot change the decision: a
                    # start-based meta-scheduler never reads it, a copy no faster than this one
                    # cannot complete before it (its start is not before now), nothing changes a
                    # decision already settled, and a copy whose window cannot end before this
                    # one's completion is left unplaced (reach; its answer inf then changes
                    # nothing), nor is it placed at all when its first fit in the plan as it is
                    # already shows that (:func:`_place_unless_too_late`; placed, its start would
                    # be no earlier). Placed, it would be reserved (state 0): a job behind the early
                    # stop cannot start at the plan's instant; the re-plan below is decided as if
                    # it had been.
                    wanted = decide != DECIDE_START and est[t, o] < est[s, o] and not settled
                    rt = si[t, ROW]
                    in_plan = pid[rt, o] == si[rt, PLAN_ID]
                    if in_plan and pstate[rt, o] == 3 and wanted:
                        _place_unless_too_late(
                            rt, t, o, now + est[s, o], si, g, procs, est, pqueue, pstate, pstart, ppos, times,
                            frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                        )  # fmt: skip
                    st = pstate[rt, o]
                    if not (in_plan and (st == 4 or st == 0 or st == 3)) and not si[t, FRESH]:
                        _new_pass(
                            t, now, local, order, si, g, slot_job, slot_alive, prim, procs, est, exp_end, run_list,
                            pqueue, pstarts, pid, pstate, pstart, ppos, times, frees, pints, ptz, pnow, ff, shape_p,
                            shape_d, shape_start, scratch_f, scratch_i, pdef, pbound, eq, eqn, held, ext,
                        )  # fmt: skip
                        rt = si[t, ROW]
                    in_plan = pid[rt, o] == si[rt, PLAN_ID]
                    if in_plan and pstate[rt, o] == 3 and wanted:
                        _place_unless_too_late(
                            rt, t, o, now + est[s, o], si, g, procs, est, pqueue, pstate, pstart, ppos, times,
                            frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                        )  # fmt: skip
                    if in_plan and pstate[rt, o] == 4:
                        at = now
                    elif in_plan and pstate[rt, o] == 0:
                        at = pstart[rt, o]
                        if not at > now:
                            at = now
                    else:
                        at = np.inf
                    if at + est[t, o] < now + est[s, o]:
                        settled = True  # (the comparisons below make it ``start_it = False``)
                    off_site[m] = t
                    off_est[m] = est[t, o]
                    off_start[m] = at
                    off_run[m] = 0
                    m += 1
                if run_site[o] >= 0:
                    r = run_site[o]
                    off_site[m] = r
                    off_est[m] = est[r, o]
                    off_start[m] = run_start[o]
                    off_run[m] = 1
                    m += 1
                attempts[o] += 1
                messages[o] += 2 * m
                mine = est[s, o]
                start_it = True
                if m > 0:
                    if decide == DECIDE_SLOWER:
                        mine_end = now + mine
                        for a in range(m):
                            if off_run[a] and mine_end >= off_start[a] + off_est[a]:
                                start_it = False
                        if start_it:
                            best_c = np.inf
                            for a in range(m):
                                if not off_run[a]:
                                    c_end = off_start[a] + off_est[a]
                                    if c_end < best_c:
                                        best_c = c_end
                            if mine_end > best_c:
                                start_it = False
                    else:
                        for a in range(m):
                            if off_run[a]:
                                start_it = False
                        if start_it and decide == DECIDE_COMPLETION:
                            best_c = np.inf
                            for a in range(m):
                                c_end = off_start[a] + off_est[a]
                                if c_end < best_c:
                                    best_c = c_end
                            if not now + mine <= best_c:
                                start_it = False
                if start_it:
                    messages[o] += m
                    if run_site[o] >= 0:
                        # _kill(o): _release(o, "kill")
                        r = run_site[o]
                        _release(o, r, p, now, si, sf, est, run_start, run_list, run_pos, run_site)
                        _log(lg, lgt, g, now, EV_KILL, o, r)
                        g[G_KILLS] += 1
                        gf[GF_WASTED] += p * (now - run_start[o])
                    # _start(o, s)
                    _queue_remove(si, slot_job, slot_alive, slot_of, wc, s, o, p)
                    si[s, FREE] -= p
                    held[s, o] = 0
                    sf[s, QWORK] -= p * mine
                    if si[s, QCOUNT] == 0:
                        sf[s, QWORK] = 0.0
                    sf[s, RWORK] += p * (now + mine)
                    si[s, RUN_PROCS] += p
                    g[G_SEQ] += 1
                    seq = g[G_SEQ]
                    run_site[o] = s
                    run_start[o] = now
                    run_token[o] = seq
                    exp_end[o] = now + mine
                    k = si[s, NRUN]
                    run_list[s, k] = o
                    run_pos[o] = k
                    si[s, NRUN] = k + 1
                    _heap_push(ht, hs, hj, g, now + run[s, o], seq, o)
                    start_time[o] = now
                    site_of[o] = s
                    run_time[o] = run[s, o]
                    _log(lg, lgt, g, now, EV_START, o, s)
                    for a in range(m):
                        t = off_site[a]
                        if off_run[a] or (decide == DECIDE_SLOWER and off_est[a] < mine):
                            continue
                        cur = si[t, CURRENT]
                        _remove_copy(
                            si, sf, slot_job, slot_alive, slot_of, wc, held, est, lg, lgt, g, ext, now, EV_CANCEL, o,
                            t, p,
                        )  # fmt: skip
                        if track and cur != CUR_NONE and _take_out_copy(
                            t, o, cur, si, g, procs, est, held, pqueue, pstarts, pid, pstate, pstart, ppos, times,
                            frees, pints, ptz, pnow, ff, shape_p, shape_d, shape_start, pdef, pbound,
                        ):  # fmt: skip
                            si[t, CURRENT] = CUR_SPARE
                else:
                    _remove_copy(
                        si, sf, slot_job, slot_alive, slot_of, wc, held, est, lg, lgt, g, ext, now, EV_DENY, o, s, p
                    )
                    g[G_DENIALS] += 1
                    denied = True
            if not denied:
                si[s, DIRTY] = 0
        if g[G_ERROR] != 0:
            return
    for o in range(n):
        if not np.isfinite(end_time[o]):
            g[G_ERROR] = ERR_NEVER_RAN
            return


# ---------------------------------------------------------------------------- compiling in parallel


def _arrays(names: str, dtype: types.Type, ndim: int) -> dict[str, tuple[types.Type, int]]:
    return dict.fromkeys(names.split(), (dtype, ndim))


# The arrays :func:`run_loop` hands its kernels, by parameter name: (dtype, dimensions). All are
# C-contiguous, writable and aligned (allocated by ``run_loop`` or :func:`run_compiled`).
_ARRAYS = {
    **_arrays(
        "si ext slot_job slot_of wc run_list pqueue pstarts pid ppos frees pints shape_p pdef eq lg", types.int64, 2
    ),
    **_arrays("held slot_alive pstate", types.int8, 2),
    **_arrays("prim est run pstart times ptz ff shape_d shape_start pbound sf", types.float64, 2),
    **_arrays("procs site_procs run_pos run_site eqn scratch_i hs hj g site_of n_copies messages", types.int64, 1),
    **_arrays("attempts out jobs sites", types.int64, 1),
    **_arrays("submit run_start exp_end pnow scratch_f ht start_time end_time run_time gf lgt v", types.float64, 1),
}
_SCALARS = {"int": types.int64, "float": types.float64, "bool": types.boolean}

#: Which process compiles which kernels, in two stages (:func:`compile_kernels`): per stage, the
#: helper's share, then this process's. A share's callees are in it or in an earlier stage, except
#: ``_revise``, which the helper compiles first in stage 2 and this process needs only after
#: ``_plan`` (if it is late, this process compiles it too: the same code, only time is lost).
#: Balanced on compile times measured (BENCHMARKS.md, "Compiling in parallel"); :func:`run_loop`
#: itself comes last, in this process.
COMPILE_STAGES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("_place_to",),
        (
            "_heap_pop",
            "_heap_push",
            "_log",
            "_release",
            "_remove_copy",
            "_queue_add",
            "_queue_remove",
            "_min_width",
            "_sort_by_value",
            "_eq_insert",
            "_build_queue",
            "_copy_row",
            "_retime_row",
            "_queue_in",
            "_swap_in",
            "_planned",
            "_cut_behind",
            "_deferred_ahead",
            "_cannot_end_by",
            "_early_stop_pass",
        ),
    ),
    (
        (
            "_revise",
            "_prefix_to",
            "_fit_within",
            "_start_from_plan",
            "_place_unless_too_late",
            "_insert_copy",
            "_take_out_copy",
        ),
        ("_plan", "_new_pass"),
    ),
)


def kernel_signature(name: str) -> tuple[types.Type, ...]:
    """The argument types :func:`run_loop` calls kernel ``name`` of this module with, from its
    parameters' names and annotations (``int``, ``float``, ``bool``; arrays by :data:`_ARRAYS`).
    ``tests/sim/test_multisite_kernel.py`` checks they are the ones numba compiles for the loop."""
    fn = globals()[name].py_func
    sig: list[types.Type] = []
    for param, hint in fn.__annotations__.items():
        if param == "return":
            continue
        if hint == "np.ndarray":
            dtype, ndim = _ARRAYS[param]
            sig.append(types.Array(dtype, ndim, "C"))
        else:
            sig.append(_SCALARS[hint])
    return tuple(sig)


def precompile(names: tuple[str, ...]) -> None:
    """Compile the kernels ``names`` of this module for :func:`run_loop`'s argument types (or load
    them from numba's on-disk cache), with their callees."""
    for name in names:
        globals()[name].compile(kernel_signature(name))


def in_cache(name: str) -> bool:
    """Whether numba's on-disk cache holds kernel ``name`` of this module for :func:`run_loop`'s
    argument types (read from the cache's index as numba reads it: that entry is loaded, not
    compiled, when the kernel is). ``False`` when it cannot tell (numba's cache internals are not
    public: they are only read, and any failure means "compile")."""
    kernel = globals()[name]
    try:
        cache = kernel._cache
        key = cache._index_key(kernel_signature(name), kernel.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return False


def _compile_helper(ready: Any, go: Any) -> None:
    (first, _), (second, _) = COMPILE_STAGES
    precompile(first)
    ready.set()
    go.wait()
    precompile(second)


def compile_kernels() -> None:
    """Compile the event loop and every kernel it calls, or load them from numba's on-disk cache,
    on two cores: a forked helper compiles its shares of :data:`COMPILE_STAGES` (writing them to
    the cache) while this process compiles its own; each stage starts when the shares it needs
    are done; this process then compiles :func:`run_loop`, loading the helper's kernels from the
    cache. Cold cache: ~37 s of compiling in 26-29 s of wall time (BENCHMARKS.md); a warm one: each
    kernel loaded. Where processes are not forked, or the helper fails, this process compiles what
    it misses itself (numba checks the cache before compiling: the same kernels either way).

    When the cache holds the loop itself (:func:`in_cache`), only the loop is loaded: its entry
    holds the code of every kernel it calls (~0.6 s, where loading each kernel's own entry as well
    took ~1.5 s of the sweep's serial start)."""
    import multiprocessing as mp

    if in_cache("run_loop"):
        precompile(("run_loop",))
        return

    (_, mine_first), (_, mine_second) = COMPILE_STAGES
    helper = None
    if "fork" in mp.get_all_start_methods():
        ctx = mp.get_context("fork")
        ready, go = ctx.Event(), ctx.Event()
        helper = ctx.Process(target=_compile_helper, args=(ready, go), daemon=True)
        helper.start()
    try:
        precompile(mine_first)
        if helper is not None:
            go.set()
            while not ready.wait(0.05) and helper.is_alive():
                pass
        precompile(mine_second)
        if helper is not None:
            helper.join()
    finally:
        if helper is not None and helper.is_alive():
            helper.terminate()
    precompile(("run_loop",))


def run_compiled(
    jobs: list[Job] | JobColumns, sites: list[Site], scheme: tuple[int, int, int, int, int], *, log: bool = False
) -> MultiSiteResult:
    """:func:`run_loop` on ``jobs`` (already checked by the driver's input checks; ``Job`` objects
    or their columns) over ``sites`` under ``scheme`` (:func:`~metasched.sim.multisite.kernel_scheme`),
    as a :class:`~metasched.sim.multisite.MultiSiteResult` aligned with ``jobs``. The scaled times
    are computed by the driver's formula (``site_copy``): ``time * factor + transfer``."""
    k, selection, decide, local, order = scheme
    table = jobs if isinstance(jobs, JobColumns) else JobColumns.from_jobs(jobs)
    n = len(table)
    n_sites = len(sites)
    # job order (submit_time, job_id): a stable sort by id, then by submit time
    all_submit = table.submit_time
    perm = np.lexsort((table.job_id, all_submit))
    submit = all_submit[perm]
    procs = table.requested_procs[perm]
    run_time = table.run_time[perm]
    req_time = table.requested_time[perm]
    home = table.home_site[perm]
    size = table.transfer_s[perm]
    kinds, kind_of = np.unique(table.app_class[perm], return_inverse=True)
    est = np.empty((n_sites, n), dtype=np.float64)
    run = np.empty((n_sites, n), dtype=np.float64)
    best = np.full(n, np.inf)
    # the driver's formula (``site_copy``), elementwise with the same float operations:
    # ``time * factor + transfer`` (transfer 0.0 at home or with no home)
    for s, site in enumerate(sites):
        factor = np.array([site.time_factor(c) for c in kinds.tolist()], dtype=np.float64)[kind_of]
        transfer = np.where((home >= 0) & (home != s), size, 0.0)
        own = run_time * factor
        run[s] = own + transfer
        est[s] = req_time * factor + transfer
        best = np.where((procs <= site.procs) & (own < best), own, best)
    site_procs = np.array([site.procs for site in sites], dtype=np.int64)
    start_time = np.full(n, np.nan)
    end_time = np.full(n, np.nan)
    site_of = np.full(n, -1, dtype=np.int64)
    run_time = np.full(n, np.nan)
    n_copies = np.zeros(n, dtype=np.int64)
    messages = np.zeros(n, dtype=np.int64)
    attempts = np.zeros(n, dtype=np.int64)
    sf = np.zeros((n_sites, N_SF), dtype=np.float64)
    g = np.zeros(N_G, dtype=np.int64)
    gf = np.zeros(2, dtype=np.float64)
    cap = n * (4 * n_sites + 2) + 16 if log else 0
    lg = np.zeros((cap, 3), dtype=np.int64)
    lgt = np.zeros(cap, dtype=np.float64)
    run_loop(
        submit, procs, est, run, site_procs, k, selection, decide, local, order,
        start_time, end_time, site_of, run_time, n_copies, messages, attempts, sf, g, gf, lg, lgt,
    )  # fmt: skip
    if g[G_ERROR] == ERR_NO_END:
        raise ValueError("the running jobs hold more processors than a site has")
    if g[G_ERROR] != 0:
        missing = [int(table.job_id[perm[o]]) for o in np.flatnonzero(~np.isfinite(end_time))[:5]]
        raise AssertionError(f"compiled event loop: jobs never ran: {missing}")
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)

    def back(a: np.ndarray) -> np.ndarray:
        return a[inv]

    events = None
    if log:
        ordered_ids = table.job_id[perm].tolist()
        events = [
            (float(t), EVENTS[kind], ordered_ids[o], int(s))
            for t, (kind, o, s) in zip(lgt[: g[G_NLOG]].tolist(), lg[: g[G_NLOG]].tolist(), strict=True)
        ]
    return MultiSiteResult(
        table=table,
        source_jobs=None if isinstance(jobs, JobColumns) else list(jobs),
        sites=list(sites),
        start_time=back(start_time),
        end_time=back(end_time),
        site=back(site_of),
        procs=table.requested_procs.astype(np.int64),
        run_time=back(run_time),
        best_run_time=back(best),
        copies=back(n_copies),
        messages=back(messages),
        attempts=back(attempts),
        busy_proc_s=sf[:, BUSY].copy(),
        denials=int(g[G_DENIALS]),
        kills=int(g[G_KILLS]),
        wasted_proc_s=float(gf[GF_WASTED]),
        plans=int(g[G_PLANS]),
        log=events,
    )


# (its kernels hold the conservative kernels' code, ``move`` and the scheme codes: see
# :func:`~metasched._jit.drop_stale_cache`)
drop_stale_cache(globals(), (_conservative_kernel.__file__, _codes.__file__, _jit.__file__))
