"""A reduced sabin2003 / ernemann2002 sweep through the runner, this tree against a baseline tree, alternated.

Each round runs the same command in the baseline checkout (its own ``.venv``) and in this one, one
after the other, and records the CPU seconds of the whole command (user + system of the child, so
another engineer's load on the shared machine changes it less than wall time) and its wall time.
The ratio is this tree's mean over the baseline's mean, measured in the same run.

    METASCHED_SHARED=/work/shared python bench/bench_experiment_vs.py --baseline /work/main --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

COMMANDS = {
    "sabin2003": ["sabin2003", "--jobs", "3000", "--load", "1.0", "--load", "2.0", "--figure", "4", "--figure", "8"],
    "ernemann2002": ["ernemann2002", "--jobs", "6000", "--configs", "m128;m512", "--overheads", "0,25"],
}


def run(tree: Path, args: list[str], out: Path, workers: int) -> tuple[float, float]:
    """CPU seconds (children's user + system) and wall seconds of one command in ``tree``."""
    exe = tree / ".venv" / "bin" / "metasched"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [str(exe), "experiment", *args, "--workers", str(workers), "--out", str(out)],
        check=True,
        cwd=tree,
        stdout=subprocess.DEVNULL,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout with its own .venv")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--experiment", action="append", choices=sorted(COMMANDS))
    args = parser.parse_args()
    os.environ.setdefault("METASCHED_SHARED", str(HERE.parent / "shared"))
    for name in args.experiment or sorted(COMMANDS):
        cpu: dict[str, list[float]] = {"baseline": [], "this": []}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for label, tree in (("baseline", args.baseline), ("this", HERE)):
                    c, w = run(tree, COMMANDS[name], Path(tmp) / f"{label}{r}", args.workers)
                    cpu[label].append(c)
                    print(f"{name} round {r + 1} {label:8} cpu {c:7.2f} s wall {w:7.2f} s", flush=True)
        base, this = (sum(v) / len(v) for v in (cpu["baseline"], cpu["this"]))
        print(f"{name}: mean CPU baseline {base:.2f} s, this tree {this:.2f} s, ratio {this / base:.3f}")


if __name__ == "__main__":
    main()
