"""Benchmark of the sabin2003 sweep: CPU seconds per simulation, and the full sweep extrapolated.

Each (trace, load, scheme) runs in this process, one after the other; CPU time
(``time.process_time``) is reported besides wall time because the machine is shared. The full
sweep is 2 traces x 6 load factors x 17 schemes; its CPU time is estimated from the measured
runs (per scheme, the mean over the measured loads) and divided by the worker count.

    PYTHONPATH=src python bench/bench_sabin.py --jobs 500 --load 1.0 --load 2.0
    PYTHONPATH=src python bench/bench_sabin.py --jobs 500 --reference   # compiled vs pure-Python plans
    PYTHONPATH=src python bench/bench_sabin.py --driver    # compiled event loop vs the Python driver
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from metasched.experiments import sabin2003 as exp
from metasched.sim._memory import keep_freed_memory
from metasched.workload import transforms
from metasched.workload.swf import read_swf

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("METASCHED_SHARED", REPO.parent / "shared"))
TRACES = {"CTC": "CTC-SP2-1996-3.1-cln.swf.gz", "SDSC": "SDSC-SP2-1998-4.2-cln.swf.gz"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--load", type=float, action="append")
    parser.add_argument("--scheme", action="append", help="default: greedy mr-easy cons-fcfs eff-load-k4")
    parser.add_argument("--trace", action="append", choices=sorted(TRACES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also run each simulation on the reference path (every site planned in pure Python) and compare",
    )
    parser.add_argument(
        "--driver",
        action="store_true",
        help="also run each simulation with the Python driver (kernel=False) and compare with the compiled loop",
    )
    args = parser.parse_args()
    loads = args.load or [1.0, 2.0]
    schemes = args.scheme or ["greedy", "mr-easy", "cons-fcfs", "eff-load-k4"]
    sites = exp.load_sites()
    per_scheme: dict[str, list[float]] = {s: [] for s in schemes}
    ref_head = f" {'ref_cpu_s':>9} {'speedup':>7}" if args.reference else ""
    ref_head += f" {'driver_cpu_s':>12} {'speedup':>7}" if args.driver else ""
    print(f"{'trace':6} {'load':>5} {'scheme':14} {'cpu_s':>8} {'wall_s':>8} {'plans':>8} {'jobs/cpu_s':>10}{ref_head}")
    keep_freed_memory()  # as the sweep's processes do (exp.run_sweep)
    for name in args.trace or ["CTC", "SDSC"]:
        w = read_swf(SHARED / "data" / "traces" / TRACES[name])
        data = exp.TraceData(name, transforms.first_n(w.jobs, args.jobs), w.max_procs, sites)
        # Untimed warm-up: importing numba and loading (or compiling) the kernels' cache.
        exp.warm_up({name: data}, sorted(set(schemes)), 1)
        for load in loads:
            for scheme in schemes:
                c0, w0 = time.process_time(), time.perf_counter()
                row = exp.run_task(exp.Task(name, load, scheme), data, 1)
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                per_scheme[scheme].append(cpu)
                ref = ""
                # Each other path must give the same row; its CPU seconds and ratio to this run's are shown.
                for wanted, path, kw, width in (
                    (args.reference, "the reference path", {"compiled": False}, 9),
                    (args.driver, "the Python driver", {"kernel": False}, 12),
                ):
                    if not wanted:
                        continue
                    c0 = time.process_time()
                    other = exp.run_task(exp.Task(name, load, scheme), data, 1, **kw)
                    other_cpu = time.process_time() - c0
                    if other != row:
                        raise SystemExit(f"{name} {load} {scheme}: {path} gives different results")
                    ref += f" {other_cpu:{width}.2f} {other_cpu / cpu:7.2f}"
                print(
                    f"{name:6} {load:5.1f} {scheme:14} {cpu:8.2f} {wall:8.2f} {row.get('plans', 0):8} "
                    f"{row['jobs'] / cpu:10.0f}{ref}",
                    flush=True,
                )
    mean = {s: sum(c) / len(c) for s, c in per_scheme.items()}
    easy = [mean[s] for s in ("greedy", "mr-easy") if s in mean]
    cons = [v for s, v in mean.items() if s not in ("greedy", "mr-easy", "single-easy", "single-cons")]
    if easy and cons:
        # Per (trace, load): greedy + MR + two single-site runs (costed like greedy) + 13 conservative runs.
        per_point = mean.get("greedy", easy[0]) * 3 + mean.get("mr-easy", easy[-1]) + 13 * sum(cons) / len(cons)
        est = 12 * per_point
        print(
            f"estimated full sweep (2 traces x 6 loads x 17 schemes, {args.jobs} jobs per copy): "
            f"{est:.0f} CPU s, {est / args.workers:.0f} s on {args.workers} workers"
        )


if __name__ == "__main__":
    main()
