"""Decisions of the compiled multi-site loop: a job's projected start at a site for completion-time
site choice (``_start_from_plan``, ``_place_unless_too_late``, ``_cannot_end_by``), and the
kept pass of a site's queue as it is now, updated as copies are queued there (``_insert_copy``)
or cancelled (``_take_out_copy``) instead of a new pass each. (Part of
:mod:`metasched.sim._multisite_kernel`; see its README.)"""

from __future__ import annotations

import numpy as np

from metasched._jit import drop_stale_cache, njit
from metasched.policy.local._conservative_kernel import (
    _deferred_bound,
    first_fit,
    reserve,
)
from metasched.sim._multisite_kernel.layout import (
    CAP,
    CUR_ROW,
    CUT_OK,
    G_ERROR,
    KERNEL_SOURCES,
    NRUN,
    PLAN_ID,
    PLAN_NSTARTS,
    ROW,
    SPARE,
    STOP,
    STOP_UNKNOWN,
    SWAP,
    WITH_TABLES,
)
from metasched.sim._multisite_kernel.plans import (
    _cut_behind,
    _fit_within,
    _place_to,
    _prefix_to,
    _retime_row,
)
from metasched.sim._multisite_kernel.queues import (
    _copy_row,
    _drop_gone,
    _queue_in,
)


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


drop_stale_cache(globals(), KERNEL_SOURCES)
