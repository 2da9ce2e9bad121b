"""Simulation-core benchmark (issue 2): simulated jobs per second and peak memory.

For every shared trace and every local scheduler, one fresh subprocess reads the full trace
(not timed), then simulates it ``--repeat`` times and reports the best wall time and the best CPU time (other
work shares the machine: CPU time is the steadier figure) and the process's peak resident
memory (reading included). A naive baseline is measured in the
same run: the slow reference simulator of the tests (``tests/sim/reference.py``, recomputes
everything at every instant) against the fast one on the same prefix of SDSC-SP2.

    PYTHONPATH=src python bench/bench_sim.py                # everything, markdown table on stdout
    PYTHONPATH=src python bench/bench_sim.py --traces SDSC-SP2 CTC --schedulers easy --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from metasched.model.job import Job  # noqa: E402
from metasched.policy.local import REGISTRY  # noqa: E402
from metasched.sim.replay import simulate  # noqa: E402


def shared_dir() -> Path:
    env = os.environ.get("METASCHED_SHARED")
    return Path(env) if env else (REPO / ".." / "shared").resolve()


def read(path: Path, limit: int | None = None) -> tuple[list[Job], int]:
    from tests.sim.traces import read_trace

    return read_trace(path, limit)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_one(path: Path, key: str, repeat: int) -> dict[str, Any]:
    jobs, procs = read(path)
    rss_read = peak_rss_mb()
    best = best_cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        simulate(jobs, procs, REGISTRY[key]())
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return {
        "trace": path.name,
        "scheduler": key,
        "jobs": len(jobs),
        "procs": procs,
        "best_s": best,
        "jobs_per_s": len(jobs) / best,
        "cpu_s": best_cpu,
        "jobs_per_cpu_s": len(jobs) / best_cpu,
        "peak_rss_mb": peak_rss_mb(),
        "rss_after_read_mb": rss_read,
    }


def run_baseline(path: Path, key: str, n: int) -> dict[str, Any]:
    from tests.sim.reference import reference_schedule

    jobs, procs = read(path, n)
    t0 = time.process_time()
    reference_schedule(jobs, procs, key)
    t_ref = time.process_time() - t0
    t_fast = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        simulate(jobs, procs, REGISTRY[key]())
        t_fast = min(t_fast, time.process_time() - t0)
    return {
        "trace": path.name,
        "scheduler": key,
        "jobs": len(jobs),
        "ref_jobs_per_s": n / t_ref,
        "fast_jobs_per_s": n / t_fast,
    }


def in_subprocess(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True, env={**os.environ}
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", nargs="*", help="name prefixes of shared traces (default: all)")
    parser.add_argument("--schedulers", nargs="*", default=["easy", "fcfs", "conservative"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per trace and scheduler on SDSC-SP2 and CTC-SP2")
    parser.add_argument("--repeat-others", type=int, default=1, help="runs on the other traces")
    parser.add_argument(
        "--repeat-conservative", type=int, default=None, help="runs of conservative (default: as above)"
    )
    parser.add_argument("--baseline-jobs", type=int, default=5000)
    parser.add_argument("--baseline-jobs-conservative", type=int, default=2000)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("TRACE", "SCHEDULER"), help=argparse.SUPPRESS)
    parser.add_argument("--baseline", nargs=2, metavar=("TRACE", "SCHEDULER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(Path(args.one[0]), args.one[1], args.repeat)))
        return
    if args.baseline:
        print(json.dumps(run_baseline(Path(args.baseline[0]), args.baseline[1], args.baseline_jobs)))
        return
    paths = sorted((shared_dir() / "data" / "traces").glob("*.swf.gz"))
    if args.traces:
        paths = [p for p in paths if any(p.name.startswith(t) for t in args.traces)]
    if not paths:
        sys.exit(f"no shared traces found under {shared_dir()} (set METASCHED_SHARED)")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; best of {args.repeat} runs on SDSC-SP2 and CTC-SP2, "
        f"{args.repeat_others} on the others\n"
    )
    print("| trace | jobs | P | scheduler | best wall s | jobs/s (wall) | best CPU s | jobs/s (CPU) | peak RSS MB |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for key in args.schedulers:
        for path in paths:
            target = path.name.startswith(("SDSC-SP2", "CTC-SP2"))
            repeat = args.repeat if target else args.repeat_others
            if key == "conservative" and args.repeat_conservative is not None:
                repeat = args.repeat_conservative
            r = in_subprocess("--one", str(path), key, "--repeat", str(repeat))
            print(
                f"| {r['trace'].split('-cln')[0]} | {r['jobs']} | {r['procs']} | {key} | {r['best_s']:.2f} "
                f"| {r['jobs_per_s']:,.0f} | {r['cpu_s']:.2f} | {r['jobs_per_cpu_s']:,.0f} | {r['peak_rss_mb']:.0f} |",
                flush=True,
            )
    if args.no_baseline:
        return
    base = next((p for p in paths if p.name.startswith("SDSC-SP2")), paths[0])
    print(f"\nNaive baseline: the tests' reference simulator vs the fast one on the first jobs of {base.name}\n")
    print("| scheduler | jobs | reference jobs/s (CPU) | fast jobs/s (CPU) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for key in args.schedulers:
        n = args.baseline_jobs_conservative if key == "conservative" else args.baseline_jobs
        r = in_subprocess("--baseline", str(base), key, "--baseline-jobs", str(n))
        print(
            f"| {key} | {n} | {r['ref_jobs_per_s']:,.0f} | {r['fast_jobs_per_s']:,.0f} "
            f"| {r['fast_jobs_per_s'] / r['ref_jobs_per_s']:.0f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
