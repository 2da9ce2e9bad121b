"""Where a sabin2003 sweep's wall time goes: its serial start, each worker's busy time, its tail.

Runs ``metasched experiment sabin2003`` (the same command line, after this script's options) with
each simulation's start, end and CPU seconds recorded by the worker that ran it, then prints: the
time from this process's start to the first simulation (the serial start: imports, traces read,
kernels loaded), each worker's busy time and last simulation, the time from the last simulation
to the end (the tail: figures, summary), the CPU seconds by scheme, and this process's own CPU
seconds besides its workers'. The sweep's outputs are the command's own (same files, same bytes).
The workers must be forked (Linux, as the sweep's pool is there): they inherit the timed ``_work``.

    METASCHED_SHARED=../shared python bench/sweep_timeline.py --log tl.jsonl -- --jobs 5000 --out DIR
"""

from __future__ import annotations

import time

T0 = time.time()  # before the imports: they are part of the serial start

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from metasched.experiments import sabin2003 as exp  # noqa: E402

_WORK = exp._work
_LOG: list[Path] = []  # set by main; the pool's workers are forked from it and inherit it


def timed(context: Any, task: exp.Task) -> dict[str, Any]:
    """The sweep's ``_work`` with the simulation's times recorded (module-level: the pool pickles
    it by name)."""
    a, c = time.time(), time.process_time()
    row = _WORK(context, task)
    record = {
        "pid": os.getpid(),
        "a": a - T0,
        "b": time.time() - T0,
        "cpu": time.process_time() - c,
        "task": [task.trace, task.load, task.scheme],
    }
    with _LOG[0].open("a") as fh:  # one short line per simulation: appends do not interleave
        fh.write(json.dumps(record) + "\n")
    return row


def report(log: Path, end: float, own_cpu: float, workers_cpu: float) -> None:
    tasks = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    if not tasks:
        print("no simulation ran")
        return
    first = min(t["a"] for t in tasks)
    last = max(t["b"] for t in tasks)
    total = sum(t["cpu"] for t in tasks)
    print(f"{len(tasks)} simulations; wall {end:.1f} s from this process's start")
    print(f"  serial start {first:.2f} s, simulations {last - first:.1f} s, tail {end - last:.2f} s")
    by_pid: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in tasks:
        by_pid[t["pid"]].append(t)
    for pid, ts in sorted(by_pid.items()):
        ts.sort(key=lambda t: t["a"])
        busy = sum(t["b"] - t["a"] for t in ts)
        print(
            f"  worker {pid}: {len(ts)} runs, busy {busy:.1f} s, CPU {sum(t['cpu'] for t in ts):.1f} s, "
            f"last ends at {ts[-1]['b']:.1f} s ({' '.join(map(str, ts[-1]['task']))})"
        )
    print(f"  simulations' CPU {total:.1f} s (/2 = {total / 2:.1f} s); this process {own_cpu:.1f} s, "
          f"its children {workers_cpu:.1f} s")  # fmt: skip
    by_scheme: dict[str, float] = defaultdict(float)
    for t in tasks:
        by_scheme[t["task"][2]] += t["cpu"]
    print("  CPU by scheme: " + ", ".join(
        f"{k} {v:.1f} s ({100 * v / total:.0f}%)" for k, v in sorted(by_scheme.items(), key=lambda kv: -kv[1])
    ))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="JSON lines, one per simulation (overwritten)")
    parser.add_argument("sweep", nargs=argparse.REMAINDER, help="-- then the sabin2003 command's options")
    args = parser.parse_args()
    sweep = args.sweep[1:] if args.sweep[:1] == ["--"] else args.sweep
    args.log.write_text("")
    _LOG.append(args.log)
    exp._work = timed  # the pool's workers are forked: they run this one
    from metasched.cli.main import main as cli

    sys.argv = ["metasched", "experiment", "sabin2003", *sweep]
    try:
        cli()
    except SystemExit as stop:
        if stop.code:
            raise
    end = time.time() - T0
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    report(args.log, end, own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime)


if __name__ == "__main__":
    main()
