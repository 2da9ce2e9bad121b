"""Bench: greedy mappers' speed (issue 6). Min-min on a Braun 512 x 16 instance <= 5 ms; 10,000 x 1,000 <= 10 s.

Run: PYTHONPATH=src python bench/mapping_greedy.py [--shared DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from metasched.policy.mapping import REGISTRY, SEARCH_KEYS
from metasched.workload.etc import range_based, read_braun


def timeit(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    default = os.environ.get("METASCHED_SHARED", str(Path(__file__).resolve().parents[1] / ".." / "shared"))
    ap.add_argument("--shared", default=default)
    ap.add_argument("--big-tasks", type=int, default=10_000)
    ap.add_argument("--big-machines", type=int, default=1_000)
    args = ap.parse_args()
    braun = Path(args.shared) / "data" / "etc" / "u_c_hihi.0.gz"
    inst = read_braun(braun) if braun.is_file() else range_based(np.random.default_rng(0), 512, 16)
    print(f"instance {inst.name} {inst.etc.shape}")
    for key, cls in REGISTRY.items():
        if key in SEARCH_KEYS or key == "lp-rounding":
            continue
        mapper = cls()
        best, med = timeit(lambda m=mapper: m.map(inst.etc, inst.ready), 30)
        print(f"  {key:10s} best {best * 1e3:8.2f} ms  median {med * 1e3:8.2f} ms")
    big = range_based(np.random.default_rng(1), args.big_tasks, args.big_machines, consistency="i")
    print(f"instance range-based inconsistent {big.etc.shape}")
    for key in ("min-min", "max-min", "mct", "olb", "met", "sufferage"):
        t0 = time.perf_counter()
        REGISTRY[key]().map(big.etc, big.ready)
        print(f"  {key:10s} {time.perf_counter() - t0:8.2f} s")


if __name__ == "__main__":
    main()
