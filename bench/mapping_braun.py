"""Bench: the best search mapper on the 12 Braun et al. instances (issues 6 and 37).

ILS started from the LP-relaxation rounding, a deterministic budget of ITERATIONS iterations per
instance (the rows do not depend on the machine; the seconds do and are reported beside them),
Min-min as the baseline of the same run. Target (issue 37): within 1% of the best-known makespan
on all 12 instances, certified against the LP lower bound, in at most 60 s per instance.

Run: PYTHONPATH=src python bench/mapping_braun.py [--iterations N] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from metasched.experiments.braun2001 import BEST, BEST_KNOWN, ITERATIONS, run


def main() -> None:
    ap = argparse.ArgumentParser()
    default = os.environ.get("METASCHED_SHARED", str(Path(__file__).resolve().parents[1] / ".." / "shared"))
    ap.add_argument("--shared", default=default)
    ap.add_argument("--iterations", type=int, default=ITERATIONS[BEST])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--instances", default="")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    etc_dir = Path(args.shared) / "data" / "etc"
    kw = {"instances": args.instances.split(",")} if args.instances else {}
    t0 = time.perf_counter()
    res = run(
        etc_dir,
        mappers=["min-min", BEST],
        iterations={BEST: args.iterations},
        workers=args.workers,
        seed=args.seed,
        **kw,
    )
    wall = time.perf_counter() - t0
    sec = {(r["instance"], r["mapper"]): r["seconds"] for r in res.seconds}
    by = {(r["instance"], r["mapper"]): r for r in res.rows}
    print(f"wall {wall:.0f} s, {args.iterations} iterations of {BEST} per instance, {args.workers} workers")
    print(f"| instance | LP bound | Min-min | {BEST} | {BEST} / LP | best known | s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    gaps = []
    for name in dict.fromkeys(r["instance"] for r in res.rows):
        best = by[(name, BEST)]
        gaps.append(100 * (best["over_lp"] - 1))
        known = f"{BEST_KNOWN[name]:,.1f}" if name in BEST_KNOWN else "-"
        print(
            f"| {name} | {best['lp_bound']:,.1f} | {by[(name, 'min-min')]['makespan']:,.1f} | {best['makespan']:,.1f} "
            f"| {best['over_lp']:.4f} | {known} | {sec[(name, BEST)]:.1f} |"
        )
    within = sum(g <= 1.0 for g in gaps)
    print(f"within 1% of the LP bound: {within} of {len(gaps)}; mean gap {sum(gaps) / len(gaps):.3f}%")


if __name__ == "__main__":
    main()
