"""Re-planning in the compiled multi-site loop: the driver's plan cache (a site is planned again only
after it was touched), revised in place when only a few copies came or went since its pass
(``_revise``, ``_extend``, ``_shrink``), or swapped with the kept pass when that is the very plan
the driver makes next (``_swap_in``). (Part of :mod:`metasched.sim._multisite_kernel`; see its
README.)"""

from __future__ import annotations

import numpy as np

from metasched._jit import drop_stale_cache, njit
from metasched.sim._multisite_codes import (
    LOCAL_CONSERVATIVE,
    ORDER_EFFICACY,
)
from metasched.sim._multisite_kernel.layout import (
    CUR_ROW,
    CUR_SPARE,
    CURRENT,
    EXT,
    EXT_N,
    FREE,
    FRESH,
    G_PLANS,
    KERNEL_SOURCES,
    NO_JOB,
    PLAN_ID,
    PLAN_N,
    PLAN_NSTARTS,
    ROW,
    SPARE,
    STOP,
    STOP_UNKNOWN,
    SWAP,
)
from metasched.sim._multisite_kernel.plans import (
    _cut_to,
    _early_stop_pass,
    _plan,
    _retime_row,
)
from metasched.sim._multisite_kernel.queues import (
    _after_key,
    _queue_in,
)


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


drop_stale_cache(globals(), KERNEL_SOURCES)
