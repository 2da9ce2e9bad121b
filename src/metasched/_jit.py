"""numba's ``njit`` (and ``types``), for metasched's compiled kernels, with the optimisation level they are built at.

numba compiles a kernel the first time it is called (and caches it on disk, ``cache=True``), at
the LLVM optimisation level ``NUMBA_OPT`` (numba's default: 3). Measured on the kernels of
:mod:`metasched.policy.local._conservative_kernel` and :mod:`metasched.sim._multisite_kernel`
(BENCHMARKS.md, "Compile at -O1" and "Repeated shapes put off at once"): level 1 compiles them in
~37 s of CPU instead of ~47 s (level 2 is no cheaper to compile, level 0 runs ~10x slower), but
since the thirteenth session's kernels, level 3 runs seed 000's whole sweep ~7% faster (four
interleaved pairs of warm sweeps, every pair faster at 3), which outweighs its ~6 s of extra compile
wall time even from a cold cache. The results do not depend on it: LLVM does not reorder
floating-point operations at any level without fast-math, which the kernels never ask for, and
the kernels' tests compare them bit for bit with the Python reference.

So this module sets ``NUMBA_OPT=3`` as a default (numba's own, made explicit; it was 1 from the
eleventh session to the thirteenth), before numba is imported: a value already in the environment
wins, and where numba was imported before metasched, its configuration stands (only the compile
time and speed differ then). numba's on-disk cache does not record the level, so a cache written
at another level is used as it is (until a kernel's source changes).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

import numpy as np

os.environ.setdefault("NUMBA_OPT", "3")

from numba import njit, types  # (after the default above: numba reads it when imported)
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["drop_stale_cache", "move", "njit", "types"]


@intrinsic
def _move(typingctx: Any, arr: Any, dst: Any, src: Any, count: Any) -> Any:
    """``arr[dst:dst + count] = arr[src:src + count]`` for a contiguous 1-D array, the ranges
    allowed to overlap, as one ``memmove`` (callable from compiled code only). No bounds are
    checked: the caller keeps both ranges within the array and ``count >= 0``.

    Why: the profile kernels open room for a breakpoint by moving every step behind it one or two
    places. Written as an element loop, numba's index wrap-around test on each access keeps LLVM
    from turning it into a block move, and the loop took ~10% of the dearest simulations
    (BENCHMARKS.md, "Moves as memmove"); the moved values are the same."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"):
        return None
    if not all(isinstance(a, types.Integer) for a in (dst, src, count)):
        return None
    sig = types.none(arr, dst, src, count)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        itemsize = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        to = builder.gep(array.data, [args[1]])
        start = builder.gep(array.data, [args[2]])
        cgutils.raw_memmove(builder, to, start, args[3], itemsize)
        return context.get_dummy_value()

    return sig, codegen


#: :func:`_move` as the kernels call it (numba passes the typing context itself).
move = cast(Callable[[np.ndarray, int, int, int], None], _move)


def drop_stale_cache(module_globals: dict[str, Any], depends_on: Iterable[str]) -> bool:
    """Forget numba's on-disk cache entries of a module's kernels when a source file they are built
    from other than their own module changed; ``True`` when any was forgotten. Called by such a
    module after defining its kernels, with its ``globals()`` and the paths of those files.

    Why: numba keys a cached kernel by its own module's file only (modification time and size), yet
    a kernel's code holds the compiled code of the kernels it calls from other modules, and the
    constants it reads from them. After an edit of :mod:`metasched.policy.local._conservative_kernel`
    alone, :func:`metasched.sim._multisite_kernel.run_loop` was loaded from the cache with the old
    code (seen in the eighteenth session). So a digest of those files is kept beside the module's
    cache index files (``<module>.deps``); when it differs, the index files (``<module>.*.nbi``) are
    deleted, numba compiles the kernels again, and the new digest is written. Where the cache
    cannot be read or written, nothing is done (numba then behaves as without this guard)."""
    digest = hashlib.sha256()
    for source in sorted(depends_on):
        digest.update(Path(source).read_bytes())
    stamp_text = digest.hexdigest()
    stem = Path(str(module_globals["__file__"])).stem
    dropped = False
    dirs: set[str] = set()
    for value in list(module_globals.values()):
        cache = getattr(value, "_cache", None)
        where = getattr(cache, "_cache_path", None)
        func = getattr(value, "py_func", None)
        if isinstance(where, str) and getattr(func, "__module__", None) == module_globals["__name__"]:
            dirs.add(where)
    for cache_dir in dirs:
        stamp = Path(cache_dir) / f"{stem}.deps"
        try:
            if stamp.read_text() == stamp_text:
                continue
        except OSError:
            pass
        try:
            for index in Path(cache_dir).glob(f"{stem}.*.nbi"):
                index.unlink(missing_ok=True)
                dropped = True
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(stamp_text)
        except OSError:
            continue
    return dropped
