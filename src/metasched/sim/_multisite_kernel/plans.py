"""Plans and profiles of the compiled multi-site loop: a site's pass over its queue (conservative
backfilling through :func:`~metasched.policy.local._conservative_kernel.place`, EASY as in
:class:`~metasched.policy.local.easy.EasyBackfill`), stopped early where nothing more can start
now, then placed further on demand (``_place_to``), and cut back to a queue position
(``_cut_to``, ``_cut_behind``, ``_prefix_to``) when a copy arrives or leaves. (Part of
:mod:`metasched.sim._multisite_kernel`; see its README.)"""

from __future__ import annotations

import numpy as np

from metasched._jit import drop_stale_cache, njit
from metasched.policy.local._conservative_kernel import (
    GEN,
    NO_END,
    ZERO,
    _advance,
    _resolve,
    base_profile,
    cut,
    first_fit,
    place,
    retime,
    shortest_behind,
)
from metasched.sim._multisite_codes import (
    LOCAL_CONSERVATIVE,
    ORDER_EFFICACY,
)
from metasched.sim._multisite_kernel.layout import (
    CAP,
    ERR_NO_END,
    FREE,
    G_ERROR,
    G_PIDS,
    G_PLANS,
    KERNEL_SOURCES,
    NRUN,
    PLAN_ID,
    PLAN_N,
    PLAN_NSTARTS,
    SPARE,
    STOP,
    STOP_UNKNOWN,
    SWAP,
    TABLE,
)
from metasched.sim._multisite_kernel.queues import (
    _after_key,
    _build_queue,
    _drop_gone,
)


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


drop_stale_cache(globals(), KERNEL_SOURCES)
