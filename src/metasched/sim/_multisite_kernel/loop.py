"""The event loop of the compiled multi-site driver (:func:`run_loop`): ends, then submissions, then
scheduling passes of the lowest dirty site until none is dirty, with the meta-schedulers'
decisions inline, statement for statement as :meth:`metasched.sim.multisite._Driver.run`. (Part
of :mod:`metasched.sim._multisite_kernel`; see its README.)"""

from __future__ import annotations

import numpy as np

from metasched._jit import drop_stale_cache, njit
from metasched.policy.local._conservative_kernel import (
    GEN,
    MEMO_SIZE,
    ZERO,
)
from metasched.sim._multisite_codes import (
    DECIDE_COMPLETION,
    DECIDE_SLOWER,
    DECIDE_SLOWER_NO_KILL,
    DECIDE_START,
    LOCAL_CONSERVATIVE,
    ORDER_EFFICACY,
    SELECT_COMPLETION,
)
from metasched.sim._multisite_kernel.decisions import (
    _insert_copy,
    _place_unless_too_late,
    _start_from_plan,
    _take_out_copy,
)
from metasched.sim._multisite_kernel.layout import (
    CAP,
    CUR_NONE,
    CUR_ROW,
    CUR_SPARE,
    CURRENT,
    CUT_OK,
    DIRTY,
    ERR_NEVER_RAN,
    EV_CANCEL,
    EV_DENY,
    EV_END,
    EV_KILL,
    EV_START,
    EV_SUBMIT,
    EXT,
    EXT_CAP,
    EXT_N,
    FREE,
    FRESH,
    G_DENIALS,
    G_ERROR,
    G_HEAP,
    G_KILLS,
    G_PIDS,
    G_PLANS,
    G_SEQ,
    GF_NOW,
    GF_WASTED,
    KERNEL_SOURCES,
    N_PINTS,
    N_SI,
    NO_TABLES,
    NRUN,
    PLAN_ID,
    PLAN_NSTARTS,
    QCOUNT,
    QWORK,
    ROW,
    RUN_PROCS,
    RWORK,
    SPARE,
    SWAP,
    WITH_TABLES,
)
from metasched.sim._multisite_kernel.plans import (
    _plan,
)
from metasched.sim._multisite_kernel.queues import (
    _copy_row,
    _eq_insert,
    _heap_pop,
    _heap_push,
    _log,
    _min_width,
    _queue_add,
    _queue_remove,
    _release,
    _remove_copy,
    _sort_by_value,
)
from metasched.sim._multisite_kernel.replan import (
    _new_pass,
)


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
                    if decide >= DECIDE_SLOWER:  # DECIDE_SLOWER or DECIDE_SLOWER_NO_KILL
                        mine_end = now + mine
                        for a in range(m):
                            if off_run[a] and (
                                decide == DECIDE_SLOWER_NO_KILL or mine_end >= off_start[a] + off_est[a]
                            ):
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
                        if off_run[a] or (decide >= DECIDE_SLOWER and off_est[a] < mine):
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


drop_stale_cache(globals(), KERNEL_SOURCES)
