"""numba's ``njit`` (and ``types``), for metasched's compiled kernels, with the optimisation level they are built at.

numba compiles a kernel the first time it is called (and caches it on disk, ``cache=True``), at
the LLVM optimisation level ``NUMBA_OPT`` (numba's default: 3). Measured on the kernels of
:mod:`metasched.policy.local._conservative_kernel` and :mod:`metasched.sim._multisite_kernel`
(BENCHMARKS.md, "Compile at -O1"): level 1 compiles them in ~37 s of CPU instead of ~47 s, and
runs them as fast (the same seconds per simulation within the machine's spread; level 2 is no
cheaper to compile, level 0 runs ~10x slower). The results do not depend on it: LLVM does not
reorder floating-point operations at any level without fast-math, which the kernels never ask
for, and the kernels' tests compare them bit for bit with the Python reference.

So this module sets ``NUMBA_OPT=1`` as a default, before numba is imported: a value already in
the environment wins, and where numba was imported before metasched, its configuration stands
(only the compile time differs then). numba's on-disk cache does not record the level, so a cache
written at another level is used as it is.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_OPT", "1")

from numba import njit, types  # (after the default above: numba reads it when imported)

__all__ = ["njit", "types"]
