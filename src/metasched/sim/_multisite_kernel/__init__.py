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

from typing import Any

import numpy as np

from metasched._jit import types
from metasched.model.job import Job
from metasched.model.site import Site
from metasched.policy.local._conservative_kernel import MEMO_SIZE as MEMO_SIZE
from metasched.sim._multisite_kernel.decisions import (
    _cannot_end_by as _cannot_end_by,
)
from metasched.sim._multisite_kernel.decisions import (
    _insert_copy as _insert_copy,
)
from metasched.sim._multisite_kernel.decisions import (
    _place_unless_too_late as _place_unless_too_late,
)
from metasched.sim._multisite_kernel.decisions import (
    _start_from_plan as _start_from_plan,
)
from metasched.sim._multisite_kernel.decisions import (
    _take_out_copy as _take_out_copy,
)
from metasched.sim._multisite_kernel.layout import (
    BUSY as BUSY,
)
from metasched.sim._multisite_kernel.layout import (
    CAP as CAP,
)
from metasched.sim._multisite_kernel.layout import (
    CUR_NONE as CUR_NONE,
)
from metasched.sim._multisite_kernel.layout import (
    CUR_ROW as CUR_ROW,
)
from metasched.sim._multisite_kernel.layout import (
    CUR_SPARE as CUR_SPARE,
)
from metasched.sim._multisite_kernel.layout import (
    CURRENT as CURRENT,
)
from metasched.sim._multisite_kernel.layout import (
    CUT_OK as CUT_OK,
)
from metasched.sim._multisite_kernel.layout import (
    DIRTY as DIRTY,
)
from metasched.sim._multisite_kernel.layout import (
    ERR_NEVER_RAN as ERR_NEVER_RAN,
)
from metasched.sim._multisite_kernel.layout import (
    ERR_NO_END as ERR_NO_END,
)
from metasched.sim._multisite_kernel.layout import (
    EV_CANCEL as EV_CANCEL,
)
from metasched.sim._multisite_kernel.layout import (
    EV_DENY as EV_DENY,
)
from metasched.sim._multisite_kernel.layout import (
    EV_END as EV_END,
)
from metasched.sim._multisite_kernel.layout import (
    EV_KILL as EV_KILL,
)
from metasched.sim._multisite_kernel.layout import (
    EV_START as EV_START,
)
from metasched.sim._multisite_kernel.layout import (
    EV_SUBMIT as EV_SUBMIT,
)
from metasched.sim._multisite_kernel.layout import (
    EVENTS as EVENTS,
)
from metasched.sim._multisite_kernel.layout import (
    EXT as EXT,
)
from metasched.sim._multisite_kernel.layout import (
    EXT_CAP as EXT_CAP,
)
from metasched.sim._multisite_kernel.layout import (
    EXT_N as EXT_N,
)
from metasched.sim._multisite_kernel.layout import (
    FREE as FREE,
)
from metasched.sim._multisite_kernel.layout import (
    FRESH as FRESH,
)
from metasched.sim._multisite_kernel.layout import (
    G_DENIALS as G_DENIALS,
)
from metasched.sim._multisite_kernel.layout import (
    G_ERROR as G_ERROR,
)
from metasched.sim._multisite_kernel.layout import (
    G_HEAP as G_HEAP,
)
from metasched.sim._multisite_kernel.layout import (
    G_KILLS as G_KILLS,
)
from metasched.sim._multisite_kernel.layout import (
    G_NLOG as G_NLOG,
)
from metasched.sim._multisite_kernel.layout import (
    G_PIDS as G_PIDS,
)
from metasched.sim._multisite_kernel.layout import (
    G_PLANS as G_PLANS,
)
from metasched.sim._multisite_kernel.layout import (
    G_SEQ as G_SEQ,
)
from metasched.sim._multisite_kernel.layout import (
    GF_NOW as GF_NOW,
)
from metasched.sim._multisite_kernel.layout import (
    GF_WASTED as GF_WASTED,
)
from metasched.sim._multisite_kernel.layout import (
    KERNEL_SOURCES as KERNEL_SOURCES,
)
from metasched.sim._multisite_kernel.layout import (
    N_G as N_G,
)
from metasched.sim._multisite_kernel.layout import (
    N_PINTS as N_PINTS,
)
from metasched.sim._multisite_kernel.layout import (
    N_SF as N_SF,
)
from metasched.sim._multisite_kernel.layout import (
    N_SI as N_SI,
)
from metasched.sim._multisite_kernel.layout import (
    NO_JOB as NO_JOB,
)
from metasched.sim._multisite_kernel.layout import (
    NO_TABLES as NO_TABLES,
)
from metasched.sim._multisite_kernel.layout import (
    NRUN as NRUN,
)
from metasched.sim._multisite_kernel.layout import (
    NSLOTS as NSLOTS,
)
from metasched.sim._multisite_kernel.layout import (
    PLAN_ID as PLAN_ID,
)
from metasched.sim._multisite_kernel.layout import (
    PLAN_N as PLAN_N,
)
from metasched.sim._multisite_kernel.layout import (
    PLAN_NSTARTS as PLAN_NSTARTS,
)
from metasched.sim._multisite_kernel.layout import (
    QCOUNT as QCOUNT,
)
from metasched.sim._multisite_kernel.layout import (
    QWORK as QWORK,
)
from metasched.sim._multisite_kernel.layout import (
    ROW as ROW,
)
from metasched.sim._multisite_kernel.layout import (
    RUN_PROCS as RUN_PROCS,
)
from metasched.sim._multisite_kernel.layout import (
    RWORK as RWORK,
)
from metasched.sim._multisite_kernel.layout import (
    SPARE as SPARE,
)
from metasched.sim._multisite_kernel.layout import (
    STOP as STOP,
)
from metasched.sim._multisite_kernel.layout import (
    STOP_UNKNOWN as STOP_UNKNOWN,
)
from metasched.sim._multisite_kernel.layout import (
    SWAP as SWAP,
)
from metasched.sim._multisite_kernel.layout import (
    TABLE as TABLE,
)
from metasched.sim._multisite_kernel.layout import (
    WITH_TABLES as WITH_TABLES,
)
from metasched.sim._multisite_kernel.loop import (
    run_loop as run_loop,
)
from metasched.sim._multisite_kernel.plans import (
    _cut_behind as _cut_behind,
)
from metasched.sim._multisite_kernel.plans import (
    _cut_row as _cut_row,
)
from metasched.sim._multisite_kernel.plans import (
    _cut_to as _cut_to,
)
from metasched.sim._multisite_kernel.plans import (
    _deferred_ahead as _deferred_ahead,
)
from metasched.sim._multisite_kernel.plans import (
    _early_stop_pass as _early_stop_pass,
)
from metasched.sim._multisite_kernel.plans import (
    _fit_within as _fit_within,
)
from metasched.sim._multisite_kernel.plans import (
    _place_row as _place_row,
)
from metasched.sim._multisite_kernel.plans import (
    _place_to as _place_to,
)
from metasched.sim._multisite_kernel.plans import (
    _plan as _plan,
)
from metasched.sim._multisite_kernel.plans import (
    _prefix_to as _prefix_to,
)
from metasched.sim._multisite_kernel.plans import (
    _retime_row as _retime_row,
)
from metasched.sim._multisite_kernel.queues import (
    _after_key as _after_key,
)
from metasched.sim._multisite_kernel.queues import (
    _build_queue as _build_queue,
)
from metasched.sim._multisite_kernel.queues import (
    _compact as _compact,
)
from metasched.sim._multisite_kernel.queues import (
    _copy_head as _copy_head,
)
from metasched.sim._multisite_kernel.queues import (
    _copy_row as _copy_row,
)
from metasched.sim._multisite_kernel.queues import (
    _drop_gone as _drop_gone,
)
from metasched.sim._multisite_kernel.queues import (
    _eq_insert as _eq_insert,
)
from metasched.sim._multisite_kernel.queues import (
    _grow_tables as _grow_tables,
)
from metasched.sim._multisite_kernel.queues import (
    _heap_pop as _heap_pop,
)
from metasched.sim._multisite_kernel.queues import (
    _heap_push as _heap_push,
)
from metasched.sim._multisite_kernel.queues import (
    _log as _log,
)
from metasched.sim._multisite_kernel.queues import (
    _min_width as _min_width,
)
from metasched.sim._multisite_kernel.queues import (
    _queue_add as _queue_add,
)
from metasched.sim._multisite_kernel.queues import (
    _queue_in as _queue_in,
)
from metasched.sim._multisite_kernel.queues import (
    _queue_remove as _queue_remove,
)
from metasched.sim._multisite_kernel.queues import (
    _release as _release,
)
from metasched.sim._multisite_kernel.queues import (
    _remove_copy as _remove_copy,
)
from metasched.sim._multisite_kernel.queues import (
    _sort_by_value as _sort_by_value,
)
from metasched.sim._multisite_kernel.replan import (
    _extend as _extend,
)
from metasched.sim._multisite_kernel.replan import (
    _new_pass as _new_pass,
)
from metasched.sim._multisite_kernel.replan import (
    _planned as _planned,
)
from metasched.sim._multisite_kernel.replan import (
    _revise as _revise,
)
from metasched.sim._multisite_kernel.replan import (
    _shrink as _shrink,
)
from metasched.sim._multisite_kernel.replan import (
    _swap_in as _swap_in,
)
from metasched.sim.multisite import JobColumns, MultiSiteResult

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
