"""Read (and write) time of every shared SWF trace: ``PYTHONPATH=src python bench/bench_swf.py``.

Prints, per trace: records, jobs kept, best-of-N wall and CPU seconds of ``read_swf`` (vectorised
engine) and ``read_swf_python`` (streaming reference engine), jobs/s, the memory the workload holds and the
peak traced memory of one ``read_swf``, and the time of ``write_swf`` to a temporary ``.swf``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from metasched.workload.swf import Workload, read_swf, read_swf_python, write_swf


def _shared() -> Path:
    env = os.environ.get("METASCHED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall and best CPU seconds over ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-python", action="store_true", help="skip the pure-Python engine")
    parser.add_argument("traces", nargs="*", type=Path)
    args = parser.parse_args()
    traces = args.traces or sorted((_shared() / "data" / "traces").glob("*.swf*"))
    if not traces:
        raise SystemExit(f"no traces found under {_shared()} (set METASCHED_SHARED)")
    print(
        f"{'trace':<32} {'records':>8} {'jobs':>8} {'fast wall':>9} {'fast cpu':>8} {'jobs/s':>9} "
        f"{'py wall':>8} {'py cpu':>7} {'held MB':>7} {'peak MB':>8} {'write s':>8}"
    )
    for path in traces:
        holder: list[Workload] = []
        wall, cpu = _best(lambda p=path, h=holder: h.append(read_swf(p)), args.repeat)
        w = holder[-1]
        holder.clear()
        py_wall = py_cpu = float("nan")
        if not args.no_python:
            py_wall, py_cpu = _best(lambda p=path: read_swf_python(p), 1)
        tracemalloc.start()
        again = read_swf(path)
        held, peak = (b / 2**20 for b in tracemalloc.get_traced_memory())
        tracemalloc.stop()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.swf"
            write_wall, _ = _best(lambda a=again, o=out: write_swf(o, a.jobs, header=a.header), 1)
        del again
        print(
            f"{path.name:<32} {w.records:>8} {len(w.jobs):>8} {wall:>9.2f} {cpu:>8.2f} {len(w.jobs) / cpu:>9,.0f} "
            f"{py_wall:>8.2f} {py_cpu:>7.2f} {held:>7.0f} {peak:>8.0f} {write_wall:>8.2f}"
        )


if __name__ == "__main__":
    main()
