"""Benchmark of seed 001's sweep (issue 4): the full ``ernemann2002`` sweep and one run per scenario.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_ernemann.py            # full sweep, 2 workers
    PYTHONPATH=src python bench/bench_ernemann.py --single   # only the per-scenario single runs

Prints wall time, the summed CPU time of the simulations (the wall time an idle 2-core machine
would need is about half of it plus the loading), and the load average (other processes on the
machine inflate the wall time, not the CPU time).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from metasched.experiments import ernemann2002 as exp
from metasched.model.job import Job


def single_runs(workloads: dict[str, list[Job]]) -> None:
    jobs = workloads["ctc1"]
    for config, scenario, mod, p in (
        ("m128", exp.LOCAL, 1, 0.0),
        ("m128", exp.SHARING, 2, 0.0),
        ("m128", exp.MULTISITE, 2, 0.25),
        ("m64", exp.LOCAL, 1, 0.0),
        ("m64", exp.SHARING, 2, 0.0),
        ("m64", exp.MULTISITE, 3, 0.25),
        ("m384", exp.LOCAL, 1, 0.0),
        ("m512", exp.SINGLE, 3, 0.0),
    ):
        sizes = exp.sizes_of(config)
        modified = exp.modify(jobs, sizes, mod)
        best = min(_timed(modified, sizes, scenario, p) for _ in range(3))
        print(f"  {config:5s} {scenario:12s} mod {mod} p={p:.2f}: {len(modified)} jobs, best of 3 {best:.3f} s CPU")


def _timed(jobs: list[Job], sizes: list[int], scenario: str, p: float) -> float:
    c0 = time.process_time()
    exp.simulate_run(jobs, sizes, scenario, p)
    return time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--single", action="store_true", help="only time one run per scenario")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    t0 = time.perf_counter()
    workloads = exp.load_workloads(exp.default_trace())
    t_load = time.perf_counter() - t0
    print(f"load trace + build 4 workloads of {exp.N_JOBS} jobs: {t_load:.1f} s")
    print("single runs (ctc1):")
    single_runs(workloads)
    if args.single:
        return
    load_before = os.getloadavg()[0]
    sims: list[int] = []
    t1 = time.perf_counter()
    rows = exp.run_sweep(workloads, workers=args.workers, on_plan=sims.append)
    wall = time.perf_counter() - t1
    seen = {}
    for r in rows:
        seen[(r["workload"], r["config"], r["scenario"], r["sim_s"])] = r["cpu_s"]
    cpu = sum(seen.values())
    print(
        f"full sweep: {len(rows)} rows, {sims[0]} distinct simulations, {args.workers} workers: wall {wall:.1f} s "
        f"(+ {t_load:.1f} s loading), simulation CPU {cpu:.1f} s (ideal 2-core wall {cpu / 2:.1f} s), "
        f"load average before/after {load_before:.1f}/{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
