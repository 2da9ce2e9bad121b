"""Benchmark of the two-level scheduler (seed 004, issue 5): one 5,000-job run per case and Ta.

Run from the repository root:

    PYTHONPATH=src python bench/bench_pasquali.py [--jobs 5000] [--repeat 3]

Prints, per (Ta, case), the best wall time and CPU time of one simulation (generation excluded),
the MS time per dispatch and the LS time per scheduling pass. Not a test: no assertion.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from metasched.sim.two_level import run_case
from metasched.workload.pasquali import PasqualiParams, generate_grid, generate_jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ta", type=float, nargs="*", default=[0.0, 5.0, 10.0, 15.0])
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {args.jobs} jobs, best of {args.repeat}")
    print(f"{'Ta':>4} {'case':>5} {'wall s':>7} {'cpu s':>6} {'MS us/job':>10} {'LS us/pass':>11} {'passes':>7}")
    for ta in args.ta:
        p = PasqualiParams(n_jobs=args.jobs, mean_interarrival_s=ta)
        grid = generate_grid(p, np.random.default_rng(1))
        jobs = generate_jobs(p, grid, np.random.default_rng(2))
        for case in ("ms", "ls", "none"):
            best_wall = best_cpu = float("inf")
            res = None
            for _ in range(args.repeat):
                w0, c0 = time.perf_counter(), time.process_time()
                res = run_case(case, jobs, grid, seed=3)
                best_wall = min(best_wall, time.perf_counter() - w0)
                best_cpu = min(best_cpu, time.process_time() - c0)
            assert res is not None
            ms_us = 1e6 * res.ms_seconds / max(res.ms_decisions, 1)
            ls_us = 1e6 * res.ls_seconds / max(res.ls_passes, 1)
            row = f"{ta:>4g} {case:>5} {best_wall:>7.2f} {best_cpu:>6.2f} {ms_us:>10.0f} {ls_us:>11.0f}"
            print(f"{row} {res.ls_passes:>7}")


if __name__ == "__main__":
    main()
