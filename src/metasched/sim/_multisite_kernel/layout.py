"""The layout of the compiled multi-site loop's state: the columns of its per-site and global
arrays, its event and error codes, and the constants its kernels pass each other. (Part of
:mod:`metasched.sim._multisite_kernel`; see its README.)"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np

import metasched._jit as _jit
import metasched.policy.local._conservative_kernel as _conservative_kernel
import metasched.sim._multisite_codes as _codes
from metasched.policy.local._conservative_kernel import i64

#: The files the package's compiled code is built from: a kernel's cached code holds the code of
#: the kernels it calls in the other files and the constants it reads from them, so each kernel
#: module forgets its cache entries when any of them changed (:func:`~metasched._jit.drop_stale_cache`).
KERNEL_SOURCES = tuple(
    [
        str(Path(__file__).with_name(f"{part}.py"))
        for part in ("layout", "queues", "plans", "decisions", "replan", "loop")
    ]
    + [_conservative_kernel.__file__, _codes.__file__, _jit.__file__]
)

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
