"""Bench: the best search heuristic on the 12 Braun et al. instances (issue 6).

ILS (critical move/swap/ejection descent + kicks) started from the LP-relaxation rounding, BUDGET
seconds of wall clock per instance, 2 processes. Compares with Min-min, the LP lower bound and the
best published makespans we could source. Writes DIR/braun_makespans.csv and DIR/summary.md.

Run: PYTHONPATH=src python bench/mapping_braun.py --budget 60 --out /tmp/braun60
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from metasched.experiments.mapping import braun2001

#: Best published makespans we could source (Gogos et al., FGCS 2016, as quoted in the issue).
PUBLISHED = {"u_c_hihi.0": 7_358_942.8}


def main() -> None:
    ap = argparse.ArgumentParser()
    default = os.environ.get("METASCHED_SHARED", str(Path(__file__).resolve().parents[1] / ".." / "shared"))
    ap.add_argument("--shared", default=default)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("/tmp/braun-bench"))
    ap.add_argument("--instances", default="")
    args = ap.parse_args()
    etc_dir = Path(args.shared) / "data" / "etc"
    kw = {"instances": args.instances.split(",")} if args.instances else {}
    t0 = time.perf_counter()
    rows = braun2001(etc_dir, args.out, budget_s=args.budget, workers=args.workers, mappers=["min-min", "ils+lp"], **kw)
    print(f"wall {time.perf_counter() - t0:.0f} s, budget {args.budget:g} s per instance, {args.workers} workers")
    print("| instance | LP bound | Min-min | ILS+LP | ILS+LP / LP | published | ILS+LP / published |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    by = {(r["instance"], r["mapper"]): r for r in rows}
    for name in sorted({r["instance"] for r in rows}):
        best = by[(name, "ils+lp")]
        pub = PUBLISHED.get(name)
        print(
            f"| {name} | {best['lp_bound']:.1f} | {by[(name, 'min-min')]['makespan']:.1f} | {best['makespan']:.1f} "
            f"| {best['over_lp']:.4f} | {pub or '-'} | {best['makespan'] / pub if pub else float('nan'):.4f} |"
        )


if __name__ == "__main__":
    main()
