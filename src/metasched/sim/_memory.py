"""Memory setting for processes that run many simulations one after the other.

Each run of the compiled multi-site loop (:func:`metasched.sim._multisite_kernel.run_loop`)
allocates its tables afresh, ~56 MB for 4 x 5,000 jobs, much of it in blocks of 1 to 17 MB, and
frees them when it returns. glibc's ``malloc`` serves blocks above its mmap threshold (128 KB to
32 MB, adjusted as it goes) with fresh pages from the kernel and gives them back on ``free``; the
next run then takes a page fault for every 4 KB page it touches (~14,000 a run, ~30 ms of system
time: ~6 of the ~240 CPU seconds of seed 000's sweep). :func:`keep_freed_memory` makes ``malloc``
serve blocks up to 32 MB from its heap and keep freed memory there, so the next run reuses the
same pages (measured in BENCHMARKS.md, "Freed memory kept"). The results do not depend on it.

The cost: memory freed by the process stays mapped to it (no more than the peak it reached: a
sweep worker's peak is its dearest run's tables), which suits a worker that does nothing but
simulate. Where ``mallopt`` is not there (not Linux, or a C library other than glibc), nothing is
changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# ``mallopt`` parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap (glibc's largest mmap threshold on 64-bit systems).
LARGEST_FROM_HEAP = 32 << 20
#: Free memory at the top of the heap kept before any is given back to the kernel.
KEPT = 1 << 30


def keep_freed_memory() -> bool:
    """Make this process's ``malloc`` (and that of processes it forks from now on) serve blocks up
    to :data:`LARGEST_FROM_HEAP` from its heap and keep up to :data:`KEPT` of freed memory there;
    ``True`` when set, ``False`` where ``mallopt`` is not available (nothing changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # (mallopt returns 1 on success, 0 on error)
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_FROM_HEAP)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT))
