"""Where the CPU of a whole ``metasched simulate --scheduler easy --trace SDSC-SP2 --no-plot`` goes, step by
step in one process (the command's own steps, timed with ``time.process_time``; the interpreter's start-up before
this script's first line is not counted: ``python -c pass`` measures it).

    PYTHONPATH=src python bench/whole_breakdown.py [TRACE]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("METASCHED_SHARED", REPO.parent / "shared"))


def main() -> None:
    trace = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED / "data/traces/SDSC-SP2-1998-4.2-cln.swf.gz"
    steps: list[tuple[str, float]] = []
    c = time.process_time()

    def lap(name: str) -> None:
        nonlocal c
        now = time.process_time()
        steps.append((name, now - c))
        c = now

    import metasched.cli.main  # noqa: F401  (what `metasched` imports before it parses the command line)

    lap("import the CLI (its command table)")
    from metasched.policy.local import EasyBackfill
    from metasched.sim.metrics import per_job, summarise, write_jobs_csv, write_summary_json
    from metasched.sim.outputs import write_schedule_swf
    from metasched.sim.replay import simulate
    from metasched.workload.swf import read_swf

    workload = read_swf(trace)
    lap(f"import the command's modules, read_swf ({len(workload.jobs):,} jobs)")
    from metasched.sim._single_kernel.easy import easy_loop  # noqa: F401

    lap("import numba and the EASY kernel module")
    simulate(workload.jobs[:10], workload.max_procs, EasyBackfill())
    lap("load the compiled EASY loop from numba's cache")
    schedule = simulate(workload.jobs, workload.max_procs, EasyBackfill())
    lap("simulate (columns out of the Job objects, the loop)")
    out = Path(tempfile.mkdtemp())
    summary = summarise(schedule)
    write_jobs_csv(schedule, out / "jobs.csv")
    write_summary_json(summary, out / "summary.json")
    write_schedule_swf(out / "schedule.swf", schedule.jobs, schedule.start_time, schedule.end_time)
    per_job(schedule)
    lap("summary, jobs.csv, summary.json, schedule.swf")
    total = sum(t for _, t in steps)
    for name, t in steps:
        print(f"| {name} | {t:.2f} | {100 * t / total:.0f}% |")
    print(f"| total (after the interpreter's start) | {total:.2f} | |")


if __name__ == "__main__":
    main()
