"""Benchmark of compiling the multi-site kernels from a cold numba cache: serial vs two processes.

Each measurement is a fresh Python process with its own empty ``NUMBA_CACHE_DIR`` (a cold cache, as
after an install or a change to a kernel's source) and the given ``NUMBA_OPT``; it compiles the event
loop and every kernel it calls either in that one process (``serial``: every share of
``COMPILE_STAGES``, then ``run_loop``) or as the sweep's warm-up does (``parallel``:
``compile_kernels``, a forked helper beside it). Then the same again with the cache now warm (loading
only). Wall seconds, and CPU seconds of the process and its helper.

    PYTHONPATH=src python bench/bench_compile.py                 # NUMBA_OPT 3 (metasched's default)
    PYTHONPATH=src python bench/bench_compile.py --opt 1 --opt 3 --repeat 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

PROBE = """
import resource, time
t = time.perf_counter()
from metasched.sim import _multisite_kernel as k
if MODE == "serial":
    for stage in k.COMPILE_STAGES:
        for share in stage:
            k.precompile(share)
    k.precompile(("run_loop",))
else:
    k.compile_kernels()
wall = time.perf_counter() - t
cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
          for f in ("ru_utime", "ru_stime"))
print(f"{wall:.2f} {cpu:.2f}")
"""


def _run(mode: str, opt: str, cache: str) -> tuple[float, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "NUMBA_OPT": opt}
    code = f"MODE = {mode!r}\n" + PROBE
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", action="append", help="NUMBA_OPT level(s); default 3")
    parser.add_argument("--repeat", type=int, default=1, help="alternating rounds (the machine drifts)")
    args = parser.parse_args()
    print("mode      opt  cold wall  cold CPU  warm wall")
    for _ in range(args.repeat):
        for opt in args.opt or ["3"]:
            for mode in ("serial", "parallel"):
                with tempfile.TemporaryDirectory() as cache:
                    cold = _run(mode, opt, cache)
                    warm = _run(mode, opt, cache)
                print(f"{mode:9} {opt:>3}  {cold[0]:8.1f}s {cold[1]:8.1f}s {warm[0]:9.2f}s")


if __name__ == "__main__":
    main()
