"""Benchmark of ``metasched simulate --sites`` against the same policy inside its paper's experiment.

Baseline (measured in the same run): ``sabin2003.run_task`` for the scheme ``greedy`` (least-load,
K=1, EASY, FCFS) on a trace's first ``N/4`` jobs copied to its four sites (``N`` jobs in all).
Ours: (1) :func:`metasched.sim.gridsim.simulate_platform` on exactly those ``N`` jobs over the
``sabin2003`` preset (the same run through the user's path); (2) the whole command
``metasched simulate --sites three.toml --trace T --jobs N --policy least-load`` (three sites,
reading the trace, homes, kinds, every output but the Gantt chart), in a subprocess, wall time;
(3) the same command with ``gantt.png``. The whole command is timed as the CPU seconds of its process
(user + system, ``getrusage`` of the child: the machine is shared, wall time is not a figure), the
in-process runs as CPU seconds too (``time.process_time``).

    PYTHONPATH=src python bench/bench_grid.py --jobs 50000
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("METASCHED_SHARED", REPO.parent / "shared"))
TRACE = SHARED / "data" / "traces" / "CTC-SP2-1996-3.1-cln.swf.gz"


def best_of(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def child_cpu(cmd: list[str], env: dict[str, str], repeat: int) -> float:
    """Best CPU seconds (user + system) of ``cmd`` run as a child process."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=900)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from metasched.experiments import sabin2003 as exp
    from metasched.model.platform_file import load_preset, to_toml
    from metasched.sim.gridsim import simulate_platform
    from metasched.workload.swf import read_swf_head

    base, procs = read_swf_head(TRACE, args.jobs // 4)
    data = exp.TraceData("CTC", base, procs, load_preset("sabin2003"))
    task = exp.Task("CTC", 1.0, "greedy")
    jobs = exp.draw_workload(data.copies, n_benchmarks=4, load=1.0, seed=1)
    plat = load_preset("sabin2003").with_procs(procs)
    exp.run_task(task, data, 1)  # warm (compiled loop loaded from its cache)
    simulate_platform(jobs, plat, "least-load")
    t_exp = best_of(lambda: exp.run_task(task, data, 1), args.repeat)
    t_ours = best_of(lambda: simulate_platform(jobs, plat, "least-load"), args.repeat)
    print(
        f"{len(jobs)} jobs, 4 sites of {procs}: experiment run_task {t_exp:.3f} CPU s, "
        f"simulate_platform {t_ours:.3f} CPU s, ratio {t_ours / t_exp:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        sites = Path(tmp) / "three.toml"
        three = replace(plat, name="three", sites=plat.sites[:3])  # origin2000, sp-wn66, t3e900
        sites.write_text(to_toml(three))
        cmd = [
            sys.executable,
            "-m",
            "metasched",
            "simulate",
            "--sites",
            str(sites),
            "--trace",
            str(TRACE),
            "--jobs",
            str(args.jobs),
            "--policy",
            "least-load",
            "--home",
            "round-robin",
            "--out",
            str(Path(tmp) / "o"),
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        for label, extra in (
            ("--no-gantt --no-plot", ["--no-gantt", "--no-plot"]),
            ("without gantt", ["--no-gantt"]),
            ("with gantt (the default)", []),
        ):
            t = child_cpu(cmd + extra, env, args.repeat)
            print(
                f"metasched simulate --sites (3 sites, {args.jobs} jobs, least-load) {label}: {t:.2f} CPU s, "
                f"ratio to the experiment's run {t / t_exp:.2f}"
            )
        t = child_cpu([sys.executable, "-c", "import numpy, numba"], env, args.repeat)
        print(f"python -c 'import numpy, numba' (the floor of any run on the compiled loop): {t:.2f} CPU s")


if __name__ == "__main__":
    main()
