"""The whole single-site EASY simulation in one compiled loop: a second implementation of
:func:`metasched.sim.replay.simulate` driving :class:`~metasched.policy.local.easy.EasyBackfill`
over an arrival-order queue. (Part of :mod:`metasched.sim._single_kernel`; see its README.)

Layout. Jobs are indexed in ``(submit_time, job_id)`` order, so the arrival-order queue is a
doubly linked list of indices (``nxt``/``prv``; ``-1`` ends it, ``head``/``tail`` in ``q``). The
running jobs are kept sorted by ``(expected_end, index)`` in ``rt``/``ri`` (the driver's
``running_by_end``; how ties of one expected end are ordered does not change a shadow time), and
their actual ends in a binary heap ``ht``/``hj``.

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
from metasched.sim._single_kernel.common import _pop, _push, _run_insert, _run_remove


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
    head = -1
    tail = -1
    queued = 0
    nr = 0  # running jobs
    nh = 0  # heap entries
    free = total
    # the hint: valid while no job ended since the full pass that left it
    hint = False
    h_shadow = 0.0
    h_extra = 0
    h_from = 0  # jobs submitted from this index on were not scanned yet
    s = 0  # next job to submit
    while s < n or nh > 0:
        t_submit = submit[s] if s < n else np.inf
        t_end = ht[0] if nh > 0 else np.inf
        now = t_submit if t_submit < t_end else t_end
        # -- ends --
        while nh > 0 and ht[0] == now:
            o = hj[0]
            _pop(ht, hj, nh)
            nh -= 1
            _run_remove(rt, ri, nr, exp_end[o], o)
            nr -= 1
            free += procs[o]
            hint = False
        # -- submissions (appended to the queue) --
        while s < n and submit[s] == now:
            if tail < 0:
                head = s
            else:
                nxt[tail] = s
                prv[s] = tail
            tail = s
            queued += 1
            s += 1
        if queued == 0 or free == 0:
            continue  # no job can start: the pass would start nothing and change nothing
        if hint and nr > 0 and rt[0] < now:
            hint = False  # a running job overran its estimate: the shadow time may have moved
        if hint:
            # only the jobs submitted since the last pass, with its shadow and extra
            shadow = h_shadow
            extra = h_extra
            j = h_from
            cand = j if j < s else -1
        else:
            # start head jobs while they fit
            j = head
            while j >= 0 and procs[j] <= free:
                nx = nxt[j]
                # start j (taken out of the queue below)
                free -= procs[j]
                start_time[j] = now
                end_time[j] = now + run_time[j]
                exp_end[j] = now + req_time[j]
                _run_insert(rt, ri, nr, exp_end[j], j)
                nr += 1
                _push(ht, hj, nh, end_time[j], j)
                nh += 1
                head = nx
                if nx >= 0:
                    prv[nx] = -1
                else:
                    tail = -1
                queued -= 1
                j = nx
            if j < 0:
                h_from = s
                continue  # the queue is empty: no hint (nothing is blocked)
            # the head's shadow time and extra processors (ends in the past count as now)
            need = procs[j]
            avail = free
            shadow = now
            i = 0
            while avail < need:
                t = rt[i] if rt[i] > now else now
                shadow = t
                avail += procs[ri[i]]
                i += 1
            while i < nr and (rt[i] if rt[i] > now else now) == shadow:
                avail += procs[ri[i]]
                i += 1
            extra = avail - need
            cand = nxt[j]
        # backfill the candidates, in queue order
        while cand >= 0 and free > 0:
            c = cand
            cand = nxt[c]
            p = procs[c]
            if p > free:
                continue
            if now + req_time[c] <= shadow:
                pass
            elif p <= extra:
                extra -= p
            else:
                continue
            free -= p
            start_time[c] = now
            end_time[c] = now + run_time[c]
            exp_end[c] = now + req_time[c]
            _run_insert(rt, ri, nr, exp_end[c], c)
            nr += 1
            _push(ht, hj, nh, end_time[c], c)
            nh += 1
            # unlink c
            a = prv[c]
            b = nxt[c]
            if a >= 0:
                nxt[a] = b
            else:
                head = b
            if b >= 0:
                prv[b] = a
            else:
                tail = a
            queued -= 1
        hint = True
        h_shadow = shadow
        h_extra = extra
        h_from = s


# (its loop holds the code of ``common``'s kernels: see :func:`~metasched._jit.drop_stale_cache`)
drop_stale_cache(globals(), (_common.__file__, _jit.__file__))
