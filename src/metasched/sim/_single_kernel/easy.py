"""The whole single-site EASY simulation in one compiled loop: a second implementation of
:func:`metasched.sim.replay.simulate` driving :class:`~metasched.policy.local.easy.EasyBackfill`
over an arrival-order queue. (Part of :mod:`metasched.sim._single_kernel`; see its README.)

Layout (:mod:`~metasched.sim._single_kernel.common`). Jobs are indexed in ``(submit_time, job_id)``
order, so the arrival-order queue is a doubly linked list of indices (``nxt``/``prv``, its ends in
``st``). The running jobs are kept sorted by ``(expected_end, index)`` in ``rt``/``ri`` (the
driver's ``running_by_end``; how ties of one expected end are ordered does not change a shadow
time), and their actual ends in a binary heap ``ht``/``hj``.

Invariant: the start and end of every job are the Python driver's with ``EasyBackfill``, bit for
bit (the same float operations: ``now + run_time``, ``now + requested_time``). The pass is
:meth:`EasyBackfill._full_pass`; its hint (:meth:`EasyBackfill._scan_new`, only the jobs
submitted since) is used while no job ended since the last full pass and none overran, the
conditions under which the driver hands it back; any other pass is a full one (the same plan).
"""

from __future__ import annotations

import numpy as np

import metasched._jit as _jit
import metasched.sim._single_kernel.common as _common
from metasched._jit import drop_stale_cache, njit
from metasched.sim._single_kernel.common import FREE, HEAD, RUNNING, _append, _finish_at, _start


@njit(cache=True, nogil=True)
def easy_loop(
    submit: np.ndarray,
    run_time: np.ndarray,
    req_time: np.ndarray,
    procs: np.ndarray,
    total: int,
    start_time: np.ndarray,
    end_time: np.ndarray,
) -> None:
    """Simulate the jobs (sorted by ``(submit_time, job_id)``, each fitting the machine) on
    ``total`` processors under EASY backfilling; fill ``start_time`` and ``end_time``."""
    n = submit.shape[0]
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    rt = np.zeros(n + 1, dtype=np.float64)
    ri = np.zeros(n + 1, dtype=np.int64)
    exp_end = np.zeros(n, dtype=np.float64)
    ht = np.zeros(n + 1, dtype=np.float64)
    hj = np.zeros(n + 1, dtype=np.int64)
    st = np.array([-1, -1, 0, total], dtype=np.int64)
    # the hint: valid while no job ended since the full pass that left it
    hint = False
    h_shadow = 0.0
    h_extra = 0
    h_from = 0  # jobs submitted from this index on were not scanned yet
    s = 0  # next job to submit
    while s < n or st[RUNNING] > 0:
        t_submit = submit[s] if s < n else np.inf
        t_end = ht[0] if st[RUNNING] > 0 else np.inf
        now = t_submit if t_submit < t_end else t_end
        if _finish_at(now, procs, exp_end, rt, ri, ht, hj, st):
            hint = False
        while s < n and submit[s] == now:
            _append(s, nxt, prv, st)
            s += 1
        if st[HEAD] < 0 or st[FREE] == 0:
            continue  # no job can start: the pass would start nothing and change nothing
        if hint and st[RUNNING] > 0 and rt[0] < now:
            hint = False  # a running job overran its estimate: the shadow time may have moved
        if hint:
            # only the jobs submitted since the last pass, with its shadow and extra
            shadow = h_shadow
            extra = h_extra
            cand = h_from if h_from < s else -1
        else:
            # start head jobs while they fit
            j = st[HEAD]
            while j >= 0 and procs[j] <= st[FREE]:
                _start(j, now, run_time, req_time, procs, start_time, end_time, exp_end, nxt, prv, rt, ri, ht, hj, st)
                j = st[HEAD]
            if j < 0:
                h_from = s
                continue  # the queue is empty: no hint (nothing is blocked)
            # the head's shadow time and extra processors (ends in the past count as now)
            need = procs[j]
            avail = st[FREE]
            shadow = now
            i = 0
            while avail < need:
                shadow = rt[i] if rt[i] > now else now
                avail += procs[ri[i]]
                i += 1
            while i < st[RUNNING] and (rt[i] if rt[i] > now else now) == shadow:
                avail += procs[ri[i]]
                i += 1
            extra = avail - need
            cand = nxt[j]
        # backfill the candidates, in queue order
        while cand >= 0 and st[FREE] > 0:
            c = cand
            cand = nxt[c]
            p = procs[c]
            if p > st[FREE]:
                continue
            if now + req_time[c] > shadow:
                if p > extra:
                    continue
                extra -= p
            _start(c, now, run_time, req_time, procs, start_time, end_time, exp_end, nxt, prv, rt, ri, ht, hj, st)
        hint = True
        h_shadow = shadow
        h_extra = extra
        h_from = s


# (its loop holds the code of ``common``'s kernels: see :func:`~metasched._jit.drop_stale_cache`)
drop_stale_cache(globals(), (_common.__file__, _jit.__file__))
