"""Shared by the peers' benchmark scripts (run with a Python that has the peer installed; see ../bench_userpath.py)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s() -> float:
    """CPU seconds (user + system, reaped children included) of this process and all its live descendants."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        cpu[pid] = sum(int(x) for x in fields[11:15]) / TICK
    me = os.getpid()
    total = 0.0
    for pid, c in cpu.items():
        p = pid
        while p > 1 and p != me:
            p = parent.get(p, 0)
        if p == me:
            total += c
    return total


def lattice(width: int = 32) -> list[tuple[str, list[str]]]:
    """The 1,024-job checkers lattice of tests/runtime/lattice.py: (name, dependencies) in a topological order."""
    widths = list(range(1, width + 1)) + list(range(width - 1, 0, -1))
    out: list[tuple[str, list[str]]] = []
    for level, w in enumerate(widths):
        for i in range(w):
            if level == 0:
                after: list[str] = []
            elif w > widths[level - 1]:
                after = [f"L{level - 1}_{j}" for j in (i - 1, i) if 0 <= j < widths[level - 1]]
            else:
                after = [f"L{level - 1}_{j}" for j in (i, i + 1)]
            out.append((f"L{level}_{i}", after))
    return out


def args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    return parser.parse_args()


def measure(
    peer: str, n: int, reps: int, noop: Callable[[int], None], lat: Callable[[], None], one: Callable[[], None]
) -> None:
    """Run and print the row: N no-op jobs, the lattice, and the idle submit-to-done of one job (median)."""
    one()  # warm
    c0, t0 = tree_cpu_s(), time.perf_counter()
    noop(n)
    noop_s, noop_cpu = time.perf_counter() - t0, tree_cpu_s() - c0
    t0 = time.perf_counter()
    lat()
    lat_s = time.perf_counter() - t0
    idle = []
    for _ in range(4 * reps):
        time.sleep(0.3)
        t0 = time.perf_counter()
        one()
        idle.append(1000 * (time.perf_counter() - t0))
    row: dict[str, Any] = {
        "peer": peer,
        "jobs_per_s": n / noop_s,
        "cpu_ms_per_job": 1000 * noop_cpu / n,
        "lattice_s": lat_s,
        "idle_ms": statistics.median(idle),
    }
    print(json.dumps(row), flush=True)
