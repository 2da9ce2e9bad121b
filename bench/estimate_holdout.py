"""Bench: run-time estimation error on held-out runs (issue 6, seed 002 section 2.2).

Synthetic observed runs of three task kinds on four machines (speeds 1, 2, 3.5, 8), with 15%
log-normal noise: ``matmul`` (truth 1e-9 n^3), ``sort`` (truth 2e-7 n log2 n) and ``sim`` (truth
3e-4 cells^1.3 steps). Three estimators: the exact formula given, an approximate formula given
(``n`` for sort, ``cells * steps`` for sim), and no formula (power-law interpolation only).
Trains on 75% of the runs, reports relative errors on the other 25%.

Run: PYTHONPATH=src python bench/estimate_holdout.py
"""

from __future__ import annotations

import math

import numpy as np

from metasched.model.estimate import Run, RuntimeEstimator, holdout_error

SPEEDS = {"m1": 1.0, "m2": 2.0, "m3": 3.5, "m4": 8.0}
TRUTH = {
    "matmul": lambda p: 1e-9 * p["n"] ** 3,
    "sort": lambda p: 2e-7 * p["n"] * math.log2(p["n"]),
    "sim": lambda p: 3e-4 * p["cells"] ** 1.3 * p["steps"],
}
EXACT = TRUTH
APPROX = {"matmul": lambda p: p["n"] ** 3, "sort": lambda p: p["n"], "sim": lambda p: p["cells"] * p["steps"]}


def runs(rng: np.random.Generator, per: int) -> list[Run]:
    out = []
    for kind in TRUTH:
        for mach, speed in SPEEDS.items():
            for _ in range(per):
                if kind == "sim":
                    p = {"cells": float(rng.uniform(100, 10_000)), "steps": float(rng.integers(10, 1000))}
                else:
                    p = {"n": float(rng.uniform(100, 5000) if kind == "matmul" else rng.uniform(1e4, 1e7))}
                out.append(Run(kind, mach, p, TRUTH[kind](p) / speed * rng.lognormal(0, 0.15)))
    return out


def make(formulas: dict | None):  # type: ignore[no-untyped-def,type-arg]
    def build() -> RuntimeEstimator:
        e = RuntimeEstimator()
        if formulas:
            for kind, f in formulas.items():
                for mach in SPEEDS:
                    e.set_formula(kind, mach, f)
        return e

    return build


def main() -> None:
    data = runs(np.random.default_rng(0), 40)
    print(f"{len(data)} runs, 25% held out")
    print("| estimator | train | test | mean rel. error | median | p90 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, formulas in (("exact formula", EXACT), ("approximate formula", APPROX), ("no formula", None)):
        err = holdout_error(make(formulas), data, 0.25, np.random.default_rng(1))
        print(f"| {name} | {err.n_train} | {err.n_test} | {err.mean:.3f} | {err.median:.3f} | {err.p90:.3f} |")


if __name__ == "__main__":
    main()
