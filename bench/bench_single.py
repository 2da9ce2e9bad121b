"""Single-site simulator against its peers (issue 38): in-process simulation CPU against the
100-line reference simulator (same jobs, schedules compared job by job), whole ``metasched
simulate`` processes against the reference's and pyss's, scale (SDSC-BLUE, a 90,000-core machine,
1,000,000 jobs: the exponent of time in jobs and the peak memory) and the compile time of a cold
first run. Every ratio is taken in one run, the systems alternated; CPU seconds, since the machine
is shared. Prints markdown tables (``bench/run`` puts them into BENCHMARKS.md).

    PYTHONPATH=src:. python bench/bench_single.py                      # every part
    PYTHONPATH=src:. python bench/bench_single.py --part inprocess --part whole
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from bench.peers import _simulators as harness  # noqa: E402

from metasched.model.job import Job  # noqa: E402
from metasched.policy.local import REGISTRY  # noqa: E402
from metasched.sim.replay import simulate  # noqa: E402
from metasched.workload import generate  # noqa: E402

TRACES = harness.SHARED / "data" / "traces"
SDSC = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"
CTC = TRACES / "CTC-SP2-1996-3.1-cln.swf.gz"
BLUE = TRACES / "SDSC-BLUE-2000-4.2-cln.swf.gz"
CACHE = Path(tempfile.gettempdir()) / "metasched-bench"
METASCHED = [sys.executable, "-m", "metasched"]


def workload(name: str, limit: int | None = None) -> tuple[list[Job], int]:
    if name.startswith("gen-"):  # gen-<procs>-<jobs>: the generated workload of `metasched simulate`
        _, procs, n = name.split("-")
        return generate.synthetic(int(n), int(procs), seed=1, load=0.8), int(procs)
    from tests.sim.traces import read_trace

    return read_trace({"SDSC-SP2": SDSC, "CTC-SP2": CTC, "SDSC-BLUE": BLUE}[name], limit)


def ours(jobs: list[Job], procs: int, key: str, repeat: int = 3) -> tuple[dict[int, float], float]:
    best = math.inf
    for _ in range(repeat):
        c0 = time.process_time()
        schedule = simulate(jobs, procs, REGISTRY[key]())
        best = min(best, time.process_time() - c0)
    return {j.job_id: float(s) for j, s in zip(schedule.jobs, schedule.start_time, strict=True)}, best


def part_inprocess() -> list[str]:
    rows = [
        "| workload | scheduler | jobs | metasched CPU s | reference CPU s | speed-up | same schedule |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    cases = [
        ("SDSC-SP2", "easy", None), ("CTC-SP2", "easy", None), ("gen-256-10000", "easy", None),
        ("SDSC-SP2", "conservative", 10_000), ("CTC-SP2", "conservative", 10_000),
        ("gen-256-10000", "conservative", None),
    ]  # fmt: skip
    for name, key, limit in cases:
        jobs, procs = workload(name, limit)
        simulate(jobs[:50], procs, REGISTRY[key]())  # (loads or compiles the kernels: untimed)
        mine, cpu = ours(jobs, procs, key)
        ref, ref_cpu = harness.reference_run(jobs, procs, key)
        mine2, cpu2 = ours(jobs, procs, key)  # (alternated: ours, reference, ours)
        same = "yes" if mine == ref == mine2 else f"NO ({sum(mine[k] != ref.get(k) for k in mine)} differ)"
        best = min(cpu, cpu2)
        rows.append(
            f"| {name} | {key} | {len(jobs):,} | {best:.3f} | {ref_cpu:.2f} | **{ref_cpu / best:.1f}x** | {same} |"
        )
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def part_whole(pyss: bool) -> list[str]:
    swf = harness.plain_swf(SDSC, CACHE)
    out = CACHE / "whole"
    ms = [*METASCHED, "simulate", "--scheduler", "easy", "--trace", str(SDSC), "--no-plot", "--out", str(out)]
    ref = harness.reference_process(swf, "easy", 128)
    harness.child_cpu(ms)  # (warm: numba's cache written)
    mine, theirs = [], []
    for _ in range(3):
        mine.append(harness.child_cpu(ms)[0])
        theirs.append(harness.child_cpu(ref)[0])
    rows = [
        "| whole process, EASY on SDSC-SP2 (54,044 jobs) | CPU s (best of 3, alternated) | ratio to the reference |",
        "| --- | ---: | ---: |",
        f"| `metasched simulate` (jobs.csv, summary.json, schedule.swf, summary.csv) | {min(mine):.2f} | "
        f"**{min(mine) / min(theirs):.2f}** |",
        f"| reference `ref_sim.py` (prints its means) | {min(theirs):.2f} | 1.00 |",
    ]
    plot = harness.child_cpu([*ms[:-3], "--plot", "--out", str(out)])[0]
    rows.append(f"| `metasched simulate` with the figure (the default) | {plot:.2f} | {plot / min(theirs):.2f} |")
    if pyss and harness.PYTHON2.exists():
        cpu = harness.child_cpu(harness.pyss_process(swf, "easy", 128))[0]
        rows.append(f"| pyss (Python 2.7 -O; a slightly different schedule) | {cpu:.1f} | {cpu / min(theirs):.1f} |")
    return rows


_SCALE = """
import json, resource, sys, time
sys.path[:0] = [{src!r}, {repo!r}]
from bench.bench_single import workload
from metasched.policy.local import REGISTRY
from metasched.sim.replay import simulate
jobs, procs = workload({name!r})
simulate(jobs[:50], procs, REGISTRY[{key!r}]())
c0 = time.process_time()
simulate(jobs, procs, REGISTRY[{key!r}]())
cpu = time.process_time() - c0
print(json.dumps({{"jobs": len(jobs), "procs": procs, "cpu": cpu,
                   "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def scale_run(name: str, key: str) -> dict[str, float]:
    code = _SCALE.format(src=str(REPO / "src"), repo=str(REPO), name=name, key=key)
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def part_scale(keys: list[str]) -> list[str]:
    rows = [
        "| workload | scheduler | jobs | processors | simulation CPU s | peak memory MB (process, reading included) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for key in keys:
        for name in ("SDSC-BLUE", "gen-90000-100000", "gen-256-250000", "gen-256-1000000"):
            r = scale_run(name, key)
            rows.append(f"| {name} | {key} | {r['jobs']:,} | {r['procs']:,} | {r['cpu']:.2f} | {r['rss']:.0f} |")
            print(rows[-1], file=sys.stderr, flush=True)
            if name == "gen-256-250000":
                quarter = r["cpu"]
            if name == "gen-256-1000000":
                exponent = math.log(r["cpu"] / quarter) / math.log(4)
                rows.append(f"| exponent of time in jobs (250k -> 1M) | {key} | | | **{exponent:.2f}** | |")
    return rows


def part_compile() -> list[str]:
    cache = Path(tempfile.mkdtemp(prefix="numba-cold-"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    out = CACHE / "demo"
    cmd = [*METASCHED, "simulate", "--out", str(out)]  # the README's first command
    try:
        cold = harness.child_cpu(cmd, env=env)[0]
        warm = min(harness.child_cpu(cmd, env=env)[0] for _ in range(2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return [
        "| `metasched simulate --out results/demo` (fcfs, easy, conservative; 10,000 generated jobs) | CPU s |",
        "| --- | ---: |",
        f"| first run, empty numba cache | {cold:.2f} |",
        f"| next runs (cache warm), best of 2 | {warm:.2f} |",
        f"| **spent compiling** (the difference) | **{cold - warm:.2f}** |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", action="append", choices=["inprocess", "whole", "scale", "compile"])
    parser.add_argument("--pyss", action="store_true", help="also run pyss in the whole-process table (~25 s)")
    parser.add_argument("--scale-schedulers", nargs="*", default=["easy", "conservative"])
    args = parser.parse_args()
    parts = args.part or ["inprocess", "whole", "scale", "compile"]
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}"
    print(f"<!-- bench_single: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {machine} -->")
    for part in parts:
        rows = {
            "inprocess": part_inprocess,
            "whole": lambda: part_whole(args.pyss),
            "scale": lambda: part_scale(args.scale_schedulers),
            "compile": part_compile,
        }[part]()
        print(f"\n<!-- part: {part} -->")
        print("\n".join(rows))
    resource.getrusage(resource.RUSAGE_SELF)


if __name__ == "__main__":
    main()
